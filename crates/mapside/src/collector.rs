//! The map-side output collector.
//!
//! # Algorithm
//!
//! 1. Each pair, with the partition its producer assigned, is appended to the task's store — a
//!    [`RecordBuffer`] (sort mode) or, for jobs whose combiner sums counts, a hash table from key
//!    to running count (hash mode), which collapses repeated keys as they arrive instead of
//!    sorting every occurrence.
//! 2. Before the store allocates, the bytes are reserved from the job's [`MemoryPool`], within
//!    the task's share of the budget.
//! 3. When the reservation cannot grow, the store is *flushed*: sorted by (partition, key),
//!    passed through the combiner, and written as a spill file; its memory goes back to the pool.
//! 4. When the task ends, the rest is flushed into an in-memory run if the budget's share for
//!    held runs allows, else into one more spill file.
//!
//! ```text
//!  collect(p, k, v) ─► store ──(full)──► sort ─► combine ─► spill file
//!                                     └─(task end)─► sort ─► combine ─► memory run | spill file
//! ```

use std::sync::Arc;

use sluice_api::{
    decode_count, encode_count, CountSink, CounterValues, Emit, ExecError, Partitioner, Reducer,
    TaskContext,
};
use sluice_shuffle::{MemRunBuilder, Resources, Run, RunSink};
use sluice_sort::{CountTable, CursorError, KeyOrder, RecordBuffer, ShortKey, SortedCursor};
use sluice_spill::MemoryReservation;

/// Bytes per distinct key of the vector a hash table is sorted through when it is flushed.
const HASH_SORT_ENTRY: usize = 40;

enum Store {
    Sort {
        buffer: RecordBuffer,
        combiner: Option<Box<dyn Reducer>>,
    },
    Hash {
        table: CountTable,
        /// Short keys waiting to be counted a batch at a time ([`CountTable::add_batch`]).
        batch: Vec<(ShortKey, u64)>,
        missing: Vec<usize>,
    },
}

/// Keys counted per batch.
const BATCH: usize = 64;

/// Bytes a hash-mode collector reserves ahead of its inserts (see `Collector::credit`).
const HASH_CREDIT: usize = 64 * 1024;

/// How a collector combines what it collects.
pub enum MapCombine {
    /// Not at all: every record is sorted and written.
    None,
    /// Values are counts (see [`encode_count`]) summed per key in a hash table; the
    /// partitioner assigns each distinct key its partition when the table is flushed.
    SumCounts(Arc<dyn Partitioner>),
    /// A combiner runs over each partition's sorted records before they are written.
    Reducer(Box<dyn Reducer>),
}

/// What one collector collects for: the stage's partitions, key order and combining.
pub struct CollectorSpec<'a> {
    /// Partitions of the runs written.
    pub partitions: usize,
    /// How keys are sorted.
    pub order: &'a KeyOrder,
    /// How records are combined.
    pub combine: MapCombine,
}

/// Collects one task's output for one stage.
pub struct Collector<'a> {
    res: &'a Resources,
    partitions: usize,
    order: &'a KeyOrder,
    /// Assigns partitions to the keys of a count table (hash mode only).
    count_partitioner: Option<Arc<dyn Partitioner>>,
    store: Store,
    reservation: MemoryReservation,
    /// Bytes of `reservation` taken ahead and not used yet (hash mode only): most inserts of
    /// a new key then need no trip to the shared pool.
    credit: usize,
    /// Most bytes this collector may hold: its task's share of the budget.
    limit: usize,
    runs: Vec<Run>,
    combine_input: u64,
    combine_output: u64,
    /// Spill files written, their records and bytes, and memory runs kept: counted for the
    /// job only when the task finishes, so that a failed attempt counts nothing.
    spilled: (u64, u64, u64),
    memory_runs: u64,
    /// The task attempt whose output this is, if the job's driver keeps each attempt's
    /// counts (see [`Collector::counting_for`]).
    attempt: Option<TaskContext>,
}

impl<'a> Collector<'a> {
    /// A collector allowed to hold up to `limit` bytes of the pool; `table_block` is the
    /// allocation unit of a count table.
    pub fn new(
        res: &'a Resources,
        spec: CollectorSpec<'a>,
        limit: usize,
        table_block: usize,
    ) -> Collector<'a> {
        // The spill file writer's two chunks come out of the same share.
        let limit = limit.saturating_sub(2 * res.write_chunk()).max(1);
        let (store, reservation, count_partitioner) = match spec.combine {
            MapCombine::SumCounts(partitioner) => (
                Store::Hash {
                    table: CountTable::new(table_block),
                    batch: Vec::with_capacity(BATCH),
                    missing: Vec::with_capacity(BATCH),
                },
                res.pool().empty_reservation(),
                Some(partitioner),
            ),
            MapCombine::None => {
                let (buffer, reservation) = res.record_buffer(spec.partitions, limit);
                let store = Store::Sort {
                    buffer,
                    combiner: None,
                };
                (store, reservation, None)
            }
            MapCombine::Reducer(combiner) => {
                let (buffer, reservation) = res.record_buffer(spec.partitions, limit);
                let store = Store::Sort {
                    buffer,
                    combiner: Some(combiner),
                };
                (store, reservation, None)
            }
        };
        Collector {
            res,
            partitions: spec.partitions,
            order: spec.order,
            count_partitioner,
            store,
            reservation,
            credit: 0,
            limit,
            runs: Vec::new(),
            combine_input: 0,
            combine_output: 0,
            spilled: (0, 0, 0),
            memory_runs: 0,
            attempt: None,
        }
    }

    /// Counts what this collector did for task attempt `attempt` too, not only for the job
    /// (see `JobStatus::count`).
    pub fn counting_for(mut self, attempt: TaskContext) -> Self {
        self.attempt = Some(attempt);
        self
    }

    /// Makes sure `need` more bytes are reserved, flushing the store first if the share or the
    /// pool is exhausted. A single record larger than everything available is let through as a
    /// forced reservation rather than failing the job.
    fn reserve(&mut self, need: impl Fn(&Store) -> usize) -> Result<(), ExecError> {
        loop {
            let bytes = need(&self.store);
            if bytes <= self.credit {
                self.credit -= bytes;
                return Ok(());
            }
            let short = bytes - self.credit;
            let ahead = match self.store {
                Store::Hash { .. } => HASH_CREDIT,
                Store::Sort { .. } => 0,
            };
            let size = self.reservation.size();
            if size + short + ahead <= self.limit && self.reservation.try_grow(short + ahead) {
                self.credit = ahead;
                return Ok(());
            }
            if size + short <= self.limit && self.reservation.try_grow(short) {
                self.credit = 0;
                return Ok(());
            }
            if self.is_empty() {
                // Emptied, but holding blocks too small for this record: give them back first.
                if let Store::Sort { buffer, .. } = &mut self.store {
                    if buffer.memory() > 0 {
                        buffer.clear();
                        self.reservation.free();
                        self.credit = 0;
                        continue;
                    }
                }
                // Other tasks' spare buffers may hold what this one needs.
                if self.res.drop_spare_buffers() {
                    continue;
                }
                self.reservation.grow_forced(short);
                self.credit = 0;
                return Ok(());
            }
            if size + short <= self.limit {
                // Within its share, refused only because others hold more than theirs: spare
                // buffers, or memory forced beyond the budget (a line longer than the budget).
                // Flushing would not help (it would spill a record at a time); the share is
                // this task's, and what it takes beyond the budget is counted as forced.
                if self.res.drop_spare_buffers() {
                    continue;
                }
                self.reservation.grow_forced(short);
                self.credit = 0;
                return Ok(());
            }
            self.flush_to_disk()?;
        }
    }

    fn is_empty(&self) -> bool {
        match &self.store {
            Store::Sort { buffer, .. } => buffer.is_empty(),
            Store::Hash { table, batch, .. } => table.is_empty() && batch.is_empty(),
        }
    }

    /// Bytes the encoded run of the current store will take at most.
    fn encoded_estimate(&self) -> usize {
        match &self.store {
            Store::Sort { buffer, .. } => buffer.record_bytes() + 10 * buffer.len(),
            Store::Hash { table, .. } => table.key_bytes() + table.len() * (10 + 8),
        }
    }

    /// Sorts the store and writes it, combined, to `sink`; then empties the store. Returns the
    /// records written.
    fn write_sorted(&mut self, sink: &mut dyn RunSink) -> Result<u64, ExecError> {
        let partitions = self.partitions;
        let order = self.order;
        let mut written = 0;
        match &mut self.store {
            Store::Sort { buffer, combiner } => {
                buffer.sort_in(order);
                match combiner {
                    None => {
                        for (p, key, value) in buffer.iter() {
                            sink.write(p as usize, key, value)?;
                        }
                        written = buffer.len() as u64;
                    }
                    Some(combiner) => {
                        // The combiner runs over each partition's records on their own, as in
                        // Hadoop, and its output stays in that partition.
                        self.combine_input += buffer.len() as u64;
                        let mut records = buffer.iter().peekable();
                        while let Some(&(partition, _, _)) = records.peek() {
                            let mut cursor = PartitionCursor {
                                records: &mut records,
                                partition,
                                current: (&[], &[]),
                            };
                            let mut out = PartitionedEmit {
                                sink: &mut *sink,
                                partition: partition as usize,
                                order,
                                last_key: None,
                                records: 0,
                            };
                            combiner.run(&mut cursor, &mut out)?;
                            self.combine_output += out.records;
                            written += out.records;
                            // Whatever the combiner did not read of its partition is skipped.
                            while records.next_if(|r| r.0 == partition).is_some() {}
                        }
                    }
                }
                if self.reservation.size() > self.limit {
                    // A record larger than the share took the blocks past it (forced): give
                    // them back now rather than hold them for the rest of the task.
                    buffer.clear();
                    self.reservation.free();
                    self.credit = 0;
                } else {
                    // Keep the blocks (and their reservation) for the task's next records.
                    buffer.reset();
                }
                return Ok(written);
            }
            Store::Hash { table, .. } => {
                let Some(partitioner) = &self.count_partitioner else {
                    return Err(ExecError::Config(
                        "a count table without a partitioner".into(),
                    ));
                };
                let mut entries = table.sorted(|key| partitioner.partition(key, partitions));
                if let KeyOrder::Custom(_) = order {
                    let compare = |a: &(usize, &[u8], u64), b: &(usize, &[u8], u64)| {
                        a.0.cmp(&b.0).then_with(|| order.compare(a.1, b.1))
                    };
                    if order.is_total() {
                        entries.sort_by(compare);
                    } else {
                        sluice_sort::sort_tolerant_by(&mut entries, compare);
                    }
                }
                for &(p, key, count) in &entries {
                    sink.write(p, key, &encode_count(count))?;
                }
                written = entries.len() as u64;
                self.combine_output += written;
                drop(entries);
                table.clear();
            }
        }
        self.reservation.free();
        self.credit = 0;
        Ok(written)
    }

    fn flush_to_disk(&mut self) -> Result<(), ExecError> {
        self.count_batch()?;
        if self.is_empty() {
            return Ok(());
        }
        // The run keeps its partition table reserved while it lives; a record larger than a
        // spill block gets a block of its own, which the writer counts (see
        // `SpillDir::with_pool`).
        let mut writer = self.res.create_spill(self.partitions)?;
        let records = self.write_sorted(&mut *writer)?;
        let run = writer.finish()?;
        self.spilled.0 += 1;
        self.spilled.1 += records;
        self.spilled.2 += run.bytes();
        self.runs.push(run);
        Ok(())
    }

    /// Flushes what is left (into memory if the budget allows) and returns the task's runs,
    /// oldest first.
    ///
    /// # Errors
    /// Writing a run failed.
    pub fn finish(mut self) -> Result<Vec<Run>, ExecError> {
        self.count_batch()?;
        if !self.is_empty() {
            let estimate = self.encoded_estimate();
            match self.res.quota().try_reserve(estimate) {
                Some(reservation) => {
                    let mut builder = MemRunBuilder::new(self.partitions, estimate, reservation);
                    self.write_sorted(&mut builder)?;
                    self.runs.push(Arc::new(builder.finish()));
                    self.memory_runs += 1;
                }
                None => self.flush_to_disk()?,
            }
        }
        if let Store::Sort { buffer, .. } = &mut self.store {
            // Emptied by the last write: its memory serves the next task, unless a forced
            // reservation took it past the limit.
            if self.reservation.size() > self.limit {
                buffer.clear();
                self.reservation.free();
            }
            let buffer = std::mem::replace(buffer, RecordBuffer::new(1));
            let reservation =
                std::mem::replace(&mut self.reservation, self.res.pool().empty_reservation());
            self.res.offer_record_buffer(buffer, reservation);
        }
        let counted = CounterValues {
            combine_input_records: self.combine_input,
            combine_output_records: self.combine_output,
            spilled_runs: self.spilled.0,
            spilled_records: self.spilled.1,
            spilled_bytes: self.spilled.2,
            memory_runs: self.memory_runs,
            ..CounterValues::default()
        };
        let status = self.res.status();
        match &self.attempt {
            Some(attempt) => status.count(attempt, &counted),
            None => status.counters.add_values(&counted),
        }
        Ok(std::mem::take(&mut self.runs))
    }
}

impl Collector<'_> {
    /// Whether the store is a count table (the stage's combiner sums counts).
    fn is_hash(&self) -> bool {
        matches!(self.store, Store::Hash { .. })
    }

    /// Adds a short key to the batch waiting for the count table, counting the batch when it
    /// is full.
    #[inline]
    fn push_short(&mut self, key: ShortKey, count: u64) -> Result<(), ExecError> {
        if let Store::Hash { batch, .. } = &mut self.store {
            batch.push((key, count));
            if batch.len() >= BATCH {
                return self.count_batch();
            }
        }
        Ok(())
    }

    /// Counts the batched short keys: those already in the table in one pass, then the new
    /// ones one by one, each reserving its memory first (which may flush the table to disk).
    fn count_batch(&mut self) -> Result<(), ExecError> {
        let Store::Hash {
            table,
            batch,
            missing,
        } = &mut self.store
        else {
            return Ok(());
        };
        if batch.is_empty() {
            return Ok(());
        }
        missing.clear();
        table.add_batch(batch, missing);
        let (batch_keys, new_keys) = (std::mem::take(batch), std::mem::take(missing));
        for &i in &new_keys {
            let (key, count) = batch_keys[i];
            self.add_count(key.bytes(), count)?;
        }
        if let Store::Hash { batch, missing, .. } = &mut self.store {
            // Hand the buffers back so that batches never allocate.
            *batch = batch_keys;
            batch.clear();
            *missing = new_keys;
        }
        Ok(())
    }

    /// Adds `count` to `key` in the table, inserting the key (after reserving) if it is new.
    fn add_count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError> {
        if let Store::Hash { table, .. } = &mut self.store {
            if table.add_existing(key, count) {
                return Ok(());
            }
        }
        self.reserve(|store| match store {
            Store::Hash { table, .. } => table.memory_for_insert(key.len()) + HASH_SORT_ENTRY,
            Store::Sort { .. } => 0,
        })?;
        if let Store::Hash { table, .. } = &mut self.store {
            table.insert_new(key, count)?;
        }
        Ok(())
    }
}

impl Collector<'_> {
    /// Whether the collector sums counts in a table ([`MapCombine::SumCounts`]): it then
    /// takes keys with [`Collector::collect_count`] and assigns their partitions itself.
    pub fn counts_keys(&self) -> bool {
        self.is_hash()
    }

    /// Takes one record of `partition`, which must be below the spec's partition count. A
    /// counting collector decodes the value as a count (see [`encode_count`]) and ignores
    /// `partition` (its partitioner gives the same).
    ///
    /// # Errors
    /// Writing a spill failed, a count is malformed, or the partition is out of range.
    pub fn collect(&mut self, partition: u32, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        if self.is_hash() {
            return self.collect_count(key, decode_count(value)?);
        }
        if usize::try_from(partition).map_or(true, |p| p >= self.partitions) {
            return Err(ExecError::user(format!(
                "partition {partition} is out of range: the stage has {} partitions",
                self.partitions
            )));
        }
        self.reserve(|store| match store {
            Store::Sort { buffer, .. } => buffer.memory_for_push(partition, key, value.len()),
            Store::Hash { .. } => 0,
        })?;
        if let Store::Sort { buffer, .. } = &mut self.store {
            buffer.push(partition, key, value)?;
        }
        Ok(())
    }

    /// Adds `count` to `key` in a counting collector.
    ///
    /// # Errors
    /// Writing a spill failed, or the collector does not count keys.
    pub fn collect_count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError> {
        if !self.is_hash() {
            return Err(ExecError::Config(
                "counted keys given to a collector that does not count".into(),
            ));
        }
        self.combine_input += 1;
        match ShortKey::new(key) {
            Some(short) => self.push_short(short, count),
            None => self.add_count(key, count),
        }
    }

    /// Adds `count` to each key `text[start..end]` of `spans` in a counting collector: the
    /// words of a line counted in one loop, each short key read from `text` with one load.
    ///
    /// # Errors
    /// As for [`Collector::collect_count`].
    ///
    /// # Panics
    /// If a span is not a range inside `text`.
    pub fn collect_counts(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        if !self.is_hash() {
            return Err(ExecError::Config(
                "counted keys given to a collector that does not count".into(),
            ));
        }
        for &(start, end) in spans {
            self.combine_input += 1;
            match ShortKey::from_text(text, start, end) {
                Some(short) => self.push_short(short, count)?,
                None => self.add_count(&text[start..end], count)?,
            }
        }
        Ok(())
    }
}

/// A collector behind [`Emit`]: each pair gets its partition from the stage's partitioner, then
/// goes to the collector; counted keys go straight to a counting collector.
pub struct PartitioningCollector<'a> {
    collector: Collector<'a>,
    partitioner: Arc<dyn Partitioner>,
}

impl<'a> PartitioningCollector<'a> {
    /// `collector`, fed with partitions from `partitioner`.
    pub fn new(collector: Collector<'a>, partitioner: Arc<dyn Partitioner>) -> Self {
        PartitioningCollector {
            collector,
            partitioner,
        }
    }

    /// The collector, to finish it.
    pub fn into_inner(self) -> Collector<'a> {
        self.collector
    }

    /// The key's partition; [`Collector::collect`] checks that it is in range.
    fn partition(&self, key: &[u8]) -> Result<u32, ExecError> {
        let partitions = self.collector.partitions;
        let partition = self.partitioner.partition(key, partitions);
        u32::try_from(partition).map_err(|_| {
            ExecError::user(format!(
                "the partitioner returned partition {partition} of {partitions}"
            ))
        })
    }
}

impl Emit for PartitioningCollector<'_> {
    #[inline]
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        if self.collector.is_hash() {
            return self.collector.collect_count(key, decode_count(value)?);
        }
        let partition = self.partition(key)?;
        self.collector.collect(partition, key, value)
    }

    fn counted(&mut self) -> Option<&mut dyn CountSink> {
        if self.collector.is_hash() {
            Some(self)
        } else {
            None
        }
    }
}

impl CountSink for PartitioningCollector<'_> {
    #[inline]
    fn count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError> {
        self.collector.collect_count(key, count)
    }

    fn count_spans(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        self.collector.collect_counts(text, spans, count)
    }
}

/// Sends a combiner's output for one partition to a run sink, checking that it stays sorted: a
/// run out of order would silently break the merge.
struct PartitionedEmit<'s> {
    sink: &'s mut dyn RunSink,
    partition: usize,
    order: &'s KeyOrder,
    last_key: Option<Vec<u8>>,
    records: u64,
}

impl Emit for PartitionedEmit<'_> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        match &mut self.last_key {
            Some(last) => {
                // Under an order that is not total, a correctly sorted run may still hold two
                // neighbours that compare out of order: only a total order can be checked.
                if self.order.is_total()
                    && self.order.compare(last, key) == std::cmp::Ordering::Greater
                {
                    return Err(ExecError::user(format!(
                        "the combiner's output is not sorted: key {:?} came after {:?}; a \
                         combiner must emit its keys in the order it received them",
                        String::from_utf8_lossy(key),
                        String::from_utf8_lossy(last)
                    )));
                }
                last.clear();
                last.extend_from_slice(key);
            }
            None => self.last_key = Some(key.to_vec()),
        }
        self.records += 1;
        self.sink.write(self.partition, key, value)
    }
}

/// A [`SortedCursor`] over the records of one partition of a sorted [`RecordBuffer`]; it stops
/// before the first record of the next partition.
struct PartitionCursor<'r, 'b, I: Iterator<Item = (u32, &'b [u8], &'b [u8])>> {
    records: &'r mut std::iter::Peekable<I>,
    partition: u32,
    current: (&'b [u8], &'b [u8]),
}

impl<'b, I: Iterator<Item = (u32, &'b [u8], &'b [u8])>> SortedCursor
    for PartitionCursor<'_, 'b, I>
{
    fn advance(&mut self) -> Result<bool, CursorError> {
        let partition = self.partition;
        match self.records.next_if(|r| r.0 == partition) {
            Some((_, key, value)) => {
                self.current = (key, value);
                Ok(true)
            }
            None => Ok(false),
        }
    }
    fn key(&self) -> &[u8] {
        self.current.0
    }
    fn value(&self) -> &[u8] {
        self.current.1
    }
}
