//! Sorted runs, cut into partitions, and the two ways they are written and read.
//!
//! A run is the sorted output of one collector flush (or of a merge). A merge reads runs
//! through [`RunSource`] — a run held in memory ([`MemRun`]) or a local spill file today, a
//! segment fetched from another machine or a Hadoop IFile later — and writes them through
//! [`RunSink`]; a [`SpillTarget`] makes the sinks of runs that leave memory.

use std::fmt::Debug;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use std::cmp::Ordering;

use sluice_api::ExecError;
use sluice_format::{record, Codec};
use sluice_sort::{BytesCursor, CursorError, KeyOrder, SortedCursor};
use sluice_spill::{
    MemoryPool, MemoryReservation, ScratchFile, ScratchReader, SegmentReader, SpillDir, SpillFile,
    SpillWriter,
};

use crate::encoded::{MemoryImage, MARK_EVERY};
use crate::quota::QuotaReservation;

/// Where a run's records are: what the merge policy needs to know about a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// In memory: cheap to read, any number at once.
    Memory,
    /// Out of memory (a spill file): reading it holds a block buffer per open partition.
    Stored,
}

/// A sorted run that a merge can read one partition at a time.
pub trait RunSource: Send + Sync + Debug {
    /// Where the records are.
    fn kind(&self) -> RunKind;
    /// Whether the run has records for `partition`.
    fn has_records(&self, partition: usize) -> bool;
    /// Bytes the run's records take (encoded; compressed for a spill file).
    fn bytes(&self) -> u64;
    /// A cursor over `partition`'s records, in key order.
    ///
    /// # Errors
    /// The run cannot be read (an unreadable file).
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError>;
    /// Bytes `partition`'s records take encoded (`varint klen, varint vlen, key, value`), where
    /// the run knows without reading them: what a copy of the partition in memory takes.
    fn partition_bytes(&self, _partition: usize) -> Option<u64> {
        None
    }
    /// A cursor over `partition`'s records from the first whose key is not less than `key` in
    /// `order` (the order the run was sorted in): where a merge of the keys from `key` on
    /// enters the run. The default opens the partition and skips the records before `key`;
    /// a source that can find the place faster (a spill file, by its blocks) does.
    ///
    /// # Errors
    /// The run cannot be read.
    fn open_at(
        &self,
        partition: usize,
        key: &[u8],
        order: &KeyOrder,
    ) -> Result<RunCursor, ExecError> {
        let cursor = self.open(partition)?;
        Ok(RunCursor::Other(Box::new(Entered::new(
            cursor, key, order,
        )?)))
    }
    /// Up to `count` of `partition`'s keys, in order, spread about evenly over its bytes, where
    /// the run can tell without reading all of them: what a reduce task cuts its partition into
    /// key ranges by. Keys longer than [`MAX_CUT_KEY`](crate::MAX_CUT_KEY) are left out, not
    /// copied. The default knows none.
    ///
    /// # Errors
    /// The run cannot be read.
    fn sample_keys(&self, _partition: usize, _count: usize) -> Result<Vec<Vec<u8>>, ExecError> {
        Ok(Vec::new())
    }
    /// The run as it is held in memory, as one buffer of encoded records (a [`MemRun`]): what
    /// [`DumpedRun::write`] writes out as it is, and what a shuffle sends without decoding
    /// (see [`MemoryImage::partition`]); `None` for a run held any other way.
    fn memory_image(&self) -> Option<MemoryImage<'_>> {
        None
    }
}

/// A cursor entered at a key: the records before it skipped, the first one not before it
/// held for the first `advance` (see [`RunSource::open_at`]).
struct Entered<C> {
    inner: C,
    held: bool,
}

impl<C: SortedCursor> Entered<C> {
    fn new(mut inner: C, key: &[u8], order: &KeyOrder) -> Result<Entered<C>, ExecError> {
        while inner.advance()? {
            if order.compare(inner.key(), key) != Ordering::Less {
                return Ok(Entered { inner, held: true });
            }
        }
        Ok(Entered { inner, held: false })
    }
}

impl<C: SortedCursor> SortedCursor for Entered<C> {
    fn advance(&mut self) -> Result<bool, CursorError> {
        if self.held {
            self.held = false;
            return Ok(true);
        }
        self.inner.advance()
    }
    fn key(&self) -> &[u8] {
        self.inner.key()
    }
    fn value(&self) -> &[u8] {
        self.inner.value()
    }
}

/// A run, shared by the tasks that read it.
pub type Run = Arc<dyn RunSource>;

/// A cursor over one partition of a run. The two local kinds are variants, so that a merge of
/// local runs calls no function through a pointer per record; any other source is boxed.
pub enum RunCursor {
    /// A partition of a [`MemRun`].
    Memory(BytesCursor<MemSlice>),
    /// A segment of a spill file.
    Disk(Box<SegmentReader>),
    /// Any other source's cursor.
    Other(Box<dyn SortedCursor + Send>),
}

impl SortedCursor for RunCursor {
    #[inline]
    fn advance(&mut self) -> Result<bool, CursorError> {
        match self {
            RunCursor::Memory(c) => c.advance(),
            RunCursor::Disk(c) => Ok(c.advance()?),
            RunCursor::Other(c) => c.advance(),
        }
    }
    fn key(&self) -> &[u8] {
        match self {
            RunCursor::Memory(c) => c.key(),
            RunCursor::Disk(c) => c.key(),
            RunCursor::Other(c) => c.key(),
        }
    }
    fn value(&self) -> &[u8] {
        match self {
            RunCursor::Memory(c) => c.value(),
            RunCursor::Disk(c) => c.value(),
            RunCursor::Other(c) => c.value(),
        }
    }
}

impl RunSource for SpillFile {
    fn kind(&self) -> RunKind {
        RunKind::Stored
    }
    fn has_records(&self, partition: usize) -> bool {
        self.records(partition) > 0
    }
    fn bytes(&self) -> u64 {
        SpillFile::bytes(self)
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        Ok(RunCursor::Disk(Box::new(self.open_segment(partition)?)))
    }
    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        Some(self.segment(partition).map_or(0, |s| s.raw_len))
    }
    fn open_at(
        &self,
        partition: usize,
        key: &[u8],
        order: &KeyOrder,
    ) -> Result<RunCursor, ExecError> {
        let compare = |a: &[u8], b: &[u8]| order.compare(a, b);
        Ok(RunCursor::Disk(Box::new(
            self.open_segment_at(partition, key, &compare)?,
        )))
    }
    fn sample_keys(&self, partition: usize, count: usize) -> Result<Vec<Vec<u8>>, ExecError> {
        Ok(SpillFile::sample_keys(
            self,
            partition,
            count,
            crate::MAX_CUT_KEY,
        )?)
    }
}

/// Bytes of the partition table a spill file keeps in memory for as long as it lives: a
/// segment per partition of its stage.
pub fn spill_table_bytes(partitions: usize) -> usize {
    partitions.saturating_mul(std::mem::size_of::<sluice_spill::Segment>())
}

/// A run with a reservation it holds for as long as it lives: a spill file's partition table
/// (see [`spill_table_bytes`]), which with many partitions and many runs is no small memory.
#[derive(Debug)]
pub struct ReservedRun {
    run: Run,
    _reservation: MemoryReservation,
}

impl ReservedRun {
    /// `run`, holding `reservation` until it is dropped.
    pub fn wrap(run: Run, reservation: MemoryReservation) -> Run {
        Arc::new(ReservedRun {
            run,
            _reservation: reservation,
        })
    }
}

impl RunSource for ReservedRun {
    fn kind(&self) -> RunKind {
        self.run.kind()
    }
    fn has_records(&self, partition: usize) -> bool {
        self.run.has_records(partition)
    }
    fn bytes(&self) -> u64 {
        self.run.bytes()
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        self.run.open(partition)
    }
    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        self.run.partition_bytes(partition)
    }
    fn open_at(
        &self,
        partition: usize,
        key: &[u8],
        order: &KeyOrder,
    ) -> Result<RunCursor, ExecError> {
        self.run.open_at(partition, key, order)
    }
    fn sample_keys(&self, partition: usize, count: usize) -> Result<Vec<Vec<u8>>, ExecError> {
        self.run.sample_keys(partition, count)
    }
}

/// A sorted run held in memory: records encoded back to back, partition after partition. Its
/// bytes stay reserved from the budget's share for held runs until the last reader drops it.
#[derive(Debug)]
pub struct MemRun {
    data: Arc<MemRunData>,
}

#[derive(Debug)]
struct MemRunData {
    bytes: Vec<u8>,
    partitions: Vec<Range<usize>>,
    /// Records of each partition.
    records: Vec<u64>,
    /// Offsets in `bytes` where a record starts, ascending: every partition's first record,
    /// and one about every [`MARK_EVERY`] bytes after it (see [`EncodedPartition`](crate::EncodedPartition)).
    marks: Vec<usize>,
    _reservation: QuotaReservation,
}

impl RunSource for MemRun {
    fn kind(&self) -> RunKind {
        RunKind::Memory
    }
    fn has_records(&self, partition: usize) -> bool {
        self.data
            .partitions
            .get(partition)
            .is_some_and(|r| !r.is_empty())
    }
    fn bytes(&self) -> u64 {
        // A Vec's length always fits in u64 on the platforms sluice builds for.
        u64::try_from(self.data.bytes.len()).unwrap_or(u64::MAX)
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        Ok(RunCursor::Memory(BytesCursor::new(MemSlice {
            run: Arc::clone(&self.data),
            partition,
            from: 0,
        })))
    }
    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        let len = self.data.partitions.get(partition).map_or(0, |r| r.len());
        Some(u64::try_from(len).unwrap_or(u64::MAX))
    }
    /// Scans the partition's records from its start to the first not before `key`: they are
    /// in memory, and a scan decodes only their lengths and compares keys.
    fn open_at(
        &self,
        partition: usize,
        key: &[u8],
        order: &KeyOrder,
    ) -> Result<RunCursor, ExecError> {
        let bytes = self.data.partition(partition);
        let mut from = 0;
        while from < bytes.len() {
            let span = record::decode(bytes, from)?;
            let record_key = &bytes[span.key_start..span.key_start + span.key_len];
            if order.compare(record_key, key) != Ordering::Less {
                break;
            }
            from = span.next;
        }
        Ok(RunCursor::Memory(BytesCursor::new(MemSlice {
            run: Arc::clone(&self.data),
            partition,
            from,
        })))
    }
    /// The keys of the first records at or after `i / count` of the partition's bytes.
    fn sample_keys(&self, partition: usize, count: usize) -> Result<Vec<Vec<u8>>, ExecError> {
        let bytes = self.data.partition(partition);
        let mut keys = Vec::new();
        let mut next_sample = 0;
        let mut at = 0;
        while at < bytes.len() && next_sample < count {
            let span = record::decode(bytes, at)?;
            if at >= next_sample.saturating_mul(bytes.len()) / count {
                if span.key_len <= crate::MAX_CUT_KEY {
                    keys.push(bytes[span.key_start..span.key_start + span.key_len].to_vec());
                }
                next_sample += 1;
                // Several samples may fall on one long record: the next one is after it.
                while next_sample < count && next_sample.saturating_mul(bytes.len()) / count <= at {
                    next_sample += 1;
                }
            }
            at = span.next;
        }
        Ok(keys)
    }
    fn memory_image(&self) -> Option<MemoryImage<'_>> {
        let data = &self.data;
        Some(MemoryImage {
            bytes: &data.bytes,
            partitions: &data.partitions,
            records: &data.records,
            marks: &data.marks,
        })
    }
}

/// A [`MemRun`]'s bytes written as they are to a scratch file: a copy out of memory that costs
/// one sequential write and no encoding, for a run read rarely if ever (a cluster worker's copy
/// of a task output that was pushed already). A partition is read back in chunks of
/// 1 MiB (more for a record larger than that, given back once it is passed), into memory
/// reserved from the pool for as long as its cursor lives.
#[derive(Debug)]
pub struct DumpedRun {
    file: ScratchFile,
    partitions: Vec<Range<usize>>,
    bytes: u64,
    pool: MemoryPool,
}

/// Bytes of a [`DumpedRun`]'s partition read at a time.
pub(crate) const READ_BACK_CHUNK: usize = 1 << 20;

impl DumpedRun {
    /// Writes `run` to `file` if `run` is held in memory as one buffer; `None` if it is not.
    /// Partitions read later reserve their buffers from `pool`.
    ///
    /// # Errors
    /// The file cannot be written.
    pub fn write(
        run: &dyn RunSource,
        mut file: ScratchFile,
        pool: &MemoryPool,
    ) -> Option<Result<Run, ExecError>> {
        let MemoryImage {
            bytes, partitions, ..
        } = run.memory_image()?;
        Some(match file.append(bytes) {
            Ok(()) => Ok(Arc::new(DumpedRun {
                file,
                partitions: partitions.to_vec(),
                bytes: u64::try_from(bytes.len()).unwrap_or(u64::MAX),
                pool: pool.clone(),
            })),
            Err(e) => Err(e.into()),
        })
    }

    fn range(&self, partition: usize) -> Range<usize> {
        self.partitions.get(partition).cloned().unwrap_or(0..0)
    }
}

impl RunSource for DumpedRun {
    fn kind(&self) -> RunKind {
        RunKind::Stored
    }
    fn has_records(&self, partition: usize) -> bool {
        !self.range(partition).is_empty()
    }
    fn bytes(&self) -> u64 {
        self.bytes
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        let range = self.range(partition);
        let as_u64 = |at: usize| u64::try_from(at).unwrap_or(u64::MAX);
        Ok(RunCursor::Other(Box::new(ReadBack {
            file: self.file.reader()?,
            at: as_u64(range.start),
            end: as_u64(range.end),
            buf: Vec::new(),
            next: 0,
            span: None,
            reservation: self.pool.empty_reservation(),
        })))
    }
    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        u64::try_from(self.range(partition).len()).ok()
    }
}

/// A partition of a [`DumpedRun`] read back chunk by chunk, with the memory it holds.
struct ReadBack {
    file: ScratchReader,
    /// Where in the file the bytes not read yet start, and where the partition ends.
    at: u64,
    end: u64,
    /// Bytes read and not yet passed; the next record starts at `next`.
    buf: Vec<u8>,
    next: usize,
    /// The current record.
    span: Option<record::RecordSpan>,
    reservation: MemoryReservation,
}

impl ReadBack {
    /// Reads the next chunk after what `buf` holds, dropping the records passed.
    fn refill(&mut self) -> Result<(), CursorError> {
        self.buf.drain(..self.next);
        self.next = 0;
        self.span = None;
        let left = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let n = left.min(READ_BACK_CHUNK);
        let held = self.buf.len();
        let need = held + n;
        // Room for a chunk and a quarter (a record cut by the chunk's end), never more than
        // what is left of the partition; for a record larger than that, twice the room each
        // time it is outgrown (read in once, not copied a chunk at a time). Reserved exactly:
        // Vec's own doubling would hold two chunks for a record cut in two. Once a large
        // record has been passed, its memory goes back.
        let room = held
            .saturating_add(left)
            .min(READ_BACK_CHUNK + READ_BACK_CHUNK / 4);
        let target = if need <= room {
            room
        } else {
            need.max(self.buf.capacity().saturating_mul(2))
                .min(held.saturating_add(left))
        };
        if self.buf.capacity() > target.saturating_mul(2) {
            self.buf.shrink_to(target);
        }
        if self.buf.capacity() < need {
            self.buf.reserve_exact(target - held);
        }
        self.buf.resize(held + n, 0);
        if self.buf.capacity() > self.reservation.size() {
            let more = self.buf.capacity() - self.reservation.size();
            if !self.reservation.try_grow(more) {
                // A record larger than the budget's room must still be read whole.
                self.reservation.grow_forced(more);
            }
        } else {
            self.reservation
                .shrink(self.reservation.size() - self.buf.capacity());
        }
        self.file
            .read_exact_at(&mut self.buf[held..], self.at)
            .map_err(|e| CursorError::Source(Box::new(e)))?;
        self.at += u64::try_from(n).unwrap_or(u64::MAX);
        Ok(())
    }
}

impl SortedCursor for ReadBack {
    fn advance(&mut self) -> Result<bool, CursorError> {
        loop {
            if self.next < self.buf.len() {
                match record::decode(&self.buf, self.next) {
                    Ok(span) => {
                        self.next = span.next;
                        self.span = Some(span);
                        return Ok(true);
                    }
                    // A record cut by the chunk's end: read on, unless the partition ended.
                    Err(_) if self.at < self.end => {}
                    Err(e) => return Err(e.into()),
                }
            } else if self.at >= self.end {
                self.span = None;
                return Ok(false);
            }
            self.refill()?;
        }
    }
    fn key(&self) -> &[u8] {
        self.span
            .as_ref()
            .and_then(|s| self.buf.get(s.key_start..s.key_start + s.key_len))
            .unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.span
            .as_ref()
            .and_then(|s| {
                let start = s.key_start + s.key_len;
                self.buf.get(start..start + s.value_len)
            })
            .unwrap_or_default()
    }
}

impl MemRunData {
    /// The encoded records of `partition` (none for a partition out of range).
    fn partition(&self, partition: usize) -> &[u8] {
        match self.partitions.get(partition) {
            Some(range) => &self.bytes[range.clone()],
            None => &[],
        }
    }
}

/// One partition of a [`MemRun`], from a record on, shareable between threads.
#[derive(Debug)]
pub struct MemSlice {
    run: Arc<MemRunData>,
    partition: usize,
    /// Where in the partition's bytes the slice starts (a record's first byte).
    from: usize,
}

impl AsRef<[u8]> for MemSlice {
    fn as_ref(&self) -> &[u8] {
        self.run
            .partition(self.partition)
            .get(self.from..)
            .unwrap_or_default()
    }
}

/// Where the sorted records of a flush or a merge go.
pub trait RunSink {
    /// Appends a record; partitions arrive in increasing order, keys sorted within each.
    ///
    /// # Errors
    /// The destination failed (a full disk).
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError>;

    /// Appends records encoded back to back (`varint klen, varint vlen, key, value`, as a run
    /// in memory holds them and a shuffle frame carries them), checking that they are whole;
    /// returns how many there were. The default writes them one by one; a sink that stores
    /// records encoded copies them at once.
    ///
    /// # Errors
    /// A record is malformed or cut short, or the destination failed. The records before a
    /// malformed one may have been written (by the default; a memory run checks them all
    /// first and writes none): a caller drops the run on an error.
    fn write_encoded(&mut self, partition: usize, encoded: &[u8]) -> Result<u64, ExecError> {
        let mut records = 0u64;
        let mut cursor = BytesCursor::new(encoded);
        while cursor.advance()? {
            self.write(partition, cursor.key(), cursor.value())?;
            records += 1;
        }
        Ok(records)
    }
}

/// A [`RunSink`] that becomes a [`Run`] when finished.
pub trait RunWriter: RunSink + Send {
    /// Completes the run.
    ///
    /// # Errors
    /// The destination failed.
    fn finish(self: Box<Self>) -> Result<Run, ExecError>;
}

/// Makes the writers of runs that leave memory: spill files on local disk today.
pub trait SpillTarget: Send + Sync {
    /// Starts a run of `partitions` partitions.
    ///
    /// # Errors
    /// The run cannot be created (no space, no permission).
    fn create(&self, partitions: usize) -> Result<Box<dyn RunWriter>, ExecError>;

    /// A scratch file beside the runs, removed when dropped: for bytes a task keeps out of
    /// memory for a while. The default has none.
    ///
    /// # Errors
    /// The file cannot be created, or the target keeps no scratch files.
    fn scratch_file(&self) -> Result<ScratchFile, ExecError> {
        Err(ExecError::Config(
            "the job's spill target keeps no scratch files".into(),
        ))
    }
}

/// Room a spill directory's disk should have left for the next file to go there, when the
/// job has several: more than most spill files take (a task's share of a budget of a few
/// GiB), little against a disk.
const ROOM_WANTED: u64 = 1 << 30;

/// Spill files in a job's private directory, removed with it; or in several, one per local
/// disk, each new file in the next directory in turn (as Hadoop spreads its spills over its
/// local directories), so that the disks share the writes and reads.
#[derive(Debug)]
pub struct LocalSpills {
    /// Never empty.
    dirs: Vec<SpillDir>,
    /// Where the next file goes (modulo the number of directories).
    next: AtomicUsize,
    codec: Codec,
    block_size: usize,
}

impl LocalSpills {
    /// Spill files in `dir`, compressed with `codec`, in blocks of `block_size` bytes.
    pub fn new(dir: SpillDir, codec: Codec, block_size: usize) -> LocalSpills {
        LocalSpills {
            dirs: vec![dir],
            next: AtomicUsize::new(0),
            codec,
            block_size,
        }
    }

    /// The same, spreading its files over `more` directories too.
    #[must_use]
    pub fn with_more_dirs(mut self, more: Vec<SpillDir>) -> LocalSpills {
        self.dirs.extend(more);
        self
    }

    /// The directory of the next file: the next in turn, passing over those whose disk has
    /// less than [`ROOM_WANTED`] left while another has more (as Hadoop's local directory
    /// allocator passes over full disks); when none has, the one with the most room.
    fn next_dir(&self) -> &SpillDir {
        let count = self.dirs.len();
        let turn = self.next.fetch_add(1, AtomicOrdering::Relaxed);
        if count == 1 {
            return &self.dirs[0];
        }
        // A disk that does not say how full it is is taken to have room.
        let room = |dir: &SpillDir| dir.available_bytes().unwrap_or(u64::MAX);
        let in_turn = (0..count).map(|k| &self.dirs[(turn + k) % count]);
        let roomy = in_turn.clone().find(|dir| room(dir) >= ROOM_WANTED);
        roomy
            .or_else(|| in_turn.max_by_key(|dir| room(dir)))
            .unwrap_or(&self.dirs[turn % count])
    }
}

impl SpillTarget for LocalSpills {
    fn create(&self, partitions: usize) -> Result<Box<dyn RunWriter>, ExecError> {
        Ok(Box::new(self.next_dir().create_writer(
            partitions,
            self.codec,
            self.block_size,
        )?))
    }

    fn scratch_file(&self) -> Result<ScratchFile, ExecError> {
        Ok(self.next_dir().scratch_file()?)
    }
}

impl RunSink for SpillWriter {
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        Ok(SpillWriter::write(self, partition, key, value)?)
    }
}

impl RunWriter for SpillWriter {
    fn finish(self: Box<Self>) -> Result<Run, ExecError> {
        Ok(Arc::new(SpillWriter::finish(*self)?))
    }
}

/// Builds a [`MemRun`].
#[derive(Debug)]
pub struct MemRunBuilder {
    bytes: Vec<u8>,
    partitions: Vec<Range<usize>>,
    records: Vec<u64>,
    /// See [`MemRunData::marks`].
    marks: Vec<usize>,
    reservation: QuotaReservation,
}

/// Bytes of a partition table entry: its range and its record count.
const TABLE_ENTRY: usize = std::mem::size_of::<Range<usize>>() + std::mem::size_of::<u64>();

/// Marks a run of `bytes` bytes and `partitions` partitions may note, at most.
fn marks_for(bytes: usize, partitions: usize) -> usize {
    (bytes / MARK_EVERY).saturating_add(partitions)
}

impl MemRunBuilder {
    /// A builder of `partitions` partitions whose `capacity` bytes were reserved by
    /// `reservation`. The builder reserves its partition table and marks on top of them
    /// (forced if the budget is short: they cannot be left out), and grows the reservation
    /// before its bytes outgrow `capacity` (a combiner may emit more than the estimate it was
    /// built for).
    pub fn new(partitions: usize, capacity: usize, mut reservation: QuotaReservation) -> Self {
        let marks = marks_for(capacity, partitions);
        let table = partitions
            .saturating_mul(TABLE_ENTRY)
            .saturating_add(marks.saturating_mul(std::mem::size_of::<usize>()));
        let held = capacity.saturating_add(table);
        if held > reservation.size() {
            reservation.grow(held - reservation.size());
        }
        MemRunBuilder {
            bytes: Vec::with_capacity(capacity),
            partitions: vec![0..0; partitions],
            records: vec![0; partitions],
            marks: Vec::with_capacity(marks),
            reservation,
        }
    }

    /// Bytes the builder holds: its records' buffer, its partition table and its marks.
    fn held(&self) -> usize {
        self.bytes
            .capacity()
            .saturating_add(self.partitions.capacity() * TABLE_ENTRY)
            .saturating_add(self.marks.capacity() * std::mem::size_of::<usize>())
    }

    /// Makes room for `need` more bytes (reserved first), growing by doubling so that a long
    /// run of small records does not reserve once per record.
    fn make_room(&mut self, need: usize) {
        let spare = self.bytes.capacity() - self.bytes.len();
        if need <= spare {
            return;
        }
        let grow = need.max(self.bytes.capacity());
        let more_marks = marks_for(grow, 0).saturating_add(1);
        self.reservation
            .grow(grow.saturating_add(more_marks.saturating_mul(std::mem::size_of::<usize>())));
        self.bytes.reserve_exact(grow + spare);
        self.marks.reserve_exact(more_marks);
    }

    fn check_partition(&self, partition: usize) -> Result<(), ExecError> {
        if partition < self.partitions.len() {
            return Ok(());
        }
        Err(ExecError::Config(format!(
            "partition {partition} written to a run of {} partitions",
            self.partitions.len()
        )))
    }

    /// Appends records to `partition` (checked) with `append`, which returns how many it
    /// appended or fails having appended nothing. Notes a mark where they start if they are
    /// the partition's first or start [`MARK_EVERY`] bytes or more past the last mark.
    fn append<E>(
        &mut self,
        partition: usize,
        append: impl FnOnce(&mut Vec<u8>) -> Result<u64, E>,
    ) -> Result<u64, E> {
        let start = self.bytes.len();
        let records = append(&mut self.bytes)?;
        let end = self.bytes.len();
        if end == start {
            return Ok(records);
        }
        let range = &mut self.partitions[partition];
        let first = range.start == range.end;
        if first {
            *range = start..end;
        } else {
            range.end = end;
        }
        if first || self.marks.last().is_none_or(|&m| start - m >= MARK_EVERY) {
            self.marks.push(start);
        }
        self.records[partition] += records;
        Ok(records)
    }

    /// The run, its reservation shrunk to what it holds.
    pub fn finish(mut self) -> MemRun {
        self.bytes.shrink_to_fit();
        self.marks.shrink_to_fit();
        let held = self.held();
        self.reservation
            .shrink(self.reservation.size().saturating_sub(held));
        MemRun {
            data: Arc::new(MemRunData {
                bytes: self.bytes,
                partitions: self.partitions,
                records: self.records,
                marks: self.marks,
                _reservation: self.reservation,
            }),
        }
    }
}

impl RunWriter for MemRunBuilder {
    fn finish(self: Box<Self>) -> Result<Run, ExecError> {
        Ok(Arc::new(MemRunBuilder::finish(*self)))
    }
}

impl RunSink for MemRunBuilder {
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        self.check_partition(partition)?;
        // A record the format cannot hold is refused by `encode` below, before anything grows.
        let encodable = u32::try_from(key.len()).is_ok() && u32::try_from(value.len()).is_ok();
        if encodable {
            self.make_room(record::encoded_len(key.len(), value.len()));
        }
        self.append(partition, |bytes| {
            record::encode(bytes, key, value).map(|()| 1)
        })?;
        Ok(())
    }

    fn write_encoded(&mut self, partition: usize, encoded: &[u8]) -> Result<u64, ExecError> {
        // Checked whole before anything is copied: a malformed record leaves the run as it was.
        let mut records = 0u64;
        let mut at = 0;
        while at < encoded.len() {
            at = record::decode(encoded, at)?.next;
            records += 1;
        }
        self.check_partition(partition)?;
        self.make_room(encoded.len());
        self.append(partition, |bytes| {
            bytes.extend_from_slice(encoded);
            Ok::<_, ExecError>(records)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quota::MemRunQuota;
    use sluice_spill::MemoryPool;

    #[test]
    fn a_memory_run_reserves_its_table_and_what_it_outgrows() {
        let pool = MemoryPool::new(1 << 20);
        let quota = MemRunQuota::new(pool.clone(), 1 << 20);
        let reservation = quota.try_reserve(0).expect("an empty reservation");
        // Built for 0 bytes: every record outgrows the estimate.
        let mut builder = MemRunBuilder::new(4, 0, reservation);
        // The partition table, and a mark for each partition's start.
        let table = 4 * TABLE_ENTRY;
        let mark = std::mem::size_of::<usize>();
        assert_eq!(pool.used(), table + 4 * mark);
        let mut expected = 0;
        for i in 0..1000u32 {
            let key = i.to_be_bytes();
            builder.write(1, &key, b"value").expect("write");
            expected += 1 + 1 + key.len() + 5;
            assert!(
                pool.used() >= table + expected,
                "{} bytes reserved for {expected} bytes of records",
                pool.used()
            );
        }
        let run = builder.finish();
        // One mark: the 7,000 bytes of records are all partition 1's.
        assert_eq!(run.data.marks, [0]);
        assert_eq!(
            pool.used(),
            table + mark + expected,
            "not shrunk to what it holds"
        );
        assert_eq!(pool.forced_bytes(), 0);
        let mut cursor = run.open(1).expect("open");
        let mut read = 0u32;
        while cursor.advance().expect("advance") {
            assert_eq!(cursor.key(), read.to_be_bytes());
            read += 1;
        }
        assert_eq!(read, 1000);
        drop(cursor);
        drop(run);
        assert_eq!(pool.used(), 0);
    }

    #[test]
    fn encoded_records_written_at_once_make_the_run_written_one_by_one() {
        let pool = MemoryPool::new(1 << 30);
        let quota = MemRunQuota::new(pool.clone(), 1 << 30);
        let records: Vec<(usize, Vec<u8>, Vec<u8>)> = (0..3000u32)
            .map(|i| {
                let value = vec![b'x'; (i % 200) as usize];
                (
                    usize::from(i >= 1000) + usize::from(i >= 2500),
                    i.to_be_bytes().to_vec(),
                    value,
                )
            })
            .collect();
        let mut one_by_one = MemRunBuilder::new(3, 0, quota.try_reserve(0).expect("room"));
        for (p, k, v) in &records {
            one_by_one.write(*p, k, v).unwrap();
        }
        // The same records encoded per partition, handed over in pieces of whole records.
        let mut at_once = MemRunBuilder::new(3, 16, quota.try_reserve(16).expect("room"));
        for p in 0..3 {
            let mut encoded = Vec::new();
            let mut count = 0;
            for (_, k, v) in records.iter().filter(|r| r.0 == p) {
                record::encode(&mut encoded, k, v).unwrap();
                count += 1;
                if count % 97 == 0 {
                    assert_eq!(at_once.write_encoded(p, &encoded).unwrap(), 97);
                    encoded.clear();
                }
            }
            at_once.write_encoded(p, &encoded).unwrap();
        }
        // A record cut short is refused, and nothing of what came with it is kept.
        let mut cut = Vec::new();
        record::encode(&mut cut, b"k", b"whole").unwrap();
        record::encode(&mut cut, b"k", b"cut short").unwrap();
        cut.pop();
        assert!(at_once.write_encoded(2, &cut).is_err());
        let (a, b) = (one_by_one.finish(), at_once.finish());
        for p in 0..3 {
            let (a, b) = (
                a.memory_image().unwrap().partition(p).unwrap(),
                b.memory_image().unwrap().partition(p).unwrap(),
            );
            let want = records.iter().filter(|r| r.0 == p).count() as u64;
            assert_eq!((a.records, b.records), (want, want), "partition {p}");
        }
        let (a, b) = (a.memory_image().unwrap(), b.memory_image().unwrap());
        assert_eq!(
            a.partitions, b.partitions,
            "the partitions lie at the same places"
        );
        assert_eq!(a.bytes, b.bytes, "the same bytes");
    }

    /// A run notes a record start at each partition's first record and about every
    /// `MARK_EVERY` bytes, and its partitions are cut at those marks into chunks that hold
    /// every record once.
    #[test]
    fn a_memory_run_is_sent_in_chunks_cut_at_its_marks() {
        let pool = MemoryPool::new(1 << 30);
        let quota = MemRunQuota::new(pool.clone(), 1 << 30);
        let mut builder = MemRunBuilder::new(3, 1 << 20, quota.try_reserve(1 << 20).unwrap());
        // Partition 0: 20,000 records of 102 bytes; 1: none; 2: three.
        let mut expected: [Vec<u8>; 3] = Default::default();
        for i in 0..20_003u32 {
            let p = if i < 20_000 { 0 } else { 2 };
            let (key, value) = (i.to_be_bytes(), [b'v'; 96]);
            builder.write(p, &key, &value).unwrap();
            record::encode(&mut expected[p], &key, &value).unwrap();
        }
        let run = builder.finish();
        let marks = &run.data.marks;
        // Partition 0: its start and one at the first record `MARK_EVERY` bytes or more past
        // the last mark; partition 2: its start.
        let every = MARK_EVERY.div_ceil(102);
        assert_eq!(marks.len(), 1 + 19_999 / every + 1, "{marks:?}");
        assert!(marks
            .windows(2)
            .all(|w| w[1] - w[0] >= MARK_EVERY || w[1] == 2_040_000));
        let max = 1 << 20;
        for (p, want) in expected.iter().enumerate() {
            let encoded = run.memory_image().unwrap().partition(p).unwrap();
            let records = [20_000, 0, 3][p];
            assert_eq!(encoded.records, records, "partition {p}");
            let chunks: Vec<&[u8]> = encoded.chunks(max).map(Result::unwrap).collect();
            assert_eq!(chunks.concat(), *want, "partition {p}");
            // Cut at the last mark within reach: every chunk but the last a mark's spacing
            // short of `max` at most.
            let cut = chunks.len().saturating_sub(1);
            assert!(
                chunks[..cut]
                    .iter()
                    .all(|c| c.len() <= max && c.len() > max - MARK_EVERY - 102),
                "partition {p}: {:?}",
                chunks.iter().map(|c| c.len()).collect::<Vec<_>>()
            );
        }
        assert!(run.memory_image().unwrap().partition(3).is_none());
    }

    #[test]
    fn a_memory_run_leaves_keys_too_long_to_cut_at_out_of_its_samples() {
        let pool = MemoryPool::new(1 << 30);
        let quota = MemRunQuota::new(pool.clone(), 1 << 30);
        let mut builder = MemRunBuilder::new(1, 0, quota.try_reserve(0).expect("room"));
        let long = vec![b'b'; crate::MAX_CUT_KEY + 1];
        for key in [&b"a"[..], &long, b"c", b"d"] {
            builder.write(0, key, b"").expect("write");
        }
        let run = builder.finish();
        let keys = run.sample_keys(0, 4).expect("sample");
        assert!(
            keys.iter().all(|k| k.len() <= crate::MAX_CUT_KEY),
            "{}",
            keys.len()
        );
        assert!(keys.contains(&b"c".to_vec()), "{keys:?}");
    }

    #[test]
    fn a_reserved_run_holds_its_reservation_until_dropped() {
        let pool = MemoryPool::new(1000);
        let quota = MemRunQuota::new(pool.clone(), 1000);
        let mut builder = MemRunBuilder::new(1, 16, quota.try_reserve(16).expect("room"));
        builder.write(0, b"k", b"v").expect("write");
        let inner: Run = Arc::new(builder.finish());
        let held = pool.used();
        let run = ReservedRun::wrap(inner, pool.try_reserve(100).expect("room"));
        assert_eq!(pool.used(), held + 100);
        assert!(run.has_records(0));
        assert_eq!(run.kind(), RunKind::Memory);
        drop(run);
        assert_eq!(pool.used(), 0);
    }

    /// (key, value) pairs in order.
    type Records = Vec<(Vec<u8>, Vec<u8>)>;

    /// Every record of `run`'s partition `p`.
    fn records(run: &dyn RunSource, p: usize) -> Records {
        let mut cursor = run.open(p).expect("open");
        let mut out = Vec::new();
        while cursor.advance().expect("advance") {
            out.push((cursor.key().to_vec(), cursor.value().to_vec()));
        }
        out
    }

    /// A run of 4 partitions: 300 records in partition 0, none in 1, 500 in 2 and 1 in 3.
    fn sample_run(quota: &Arc<MemRunQuota>) -> (MemRun, Vec<Records>) {
        let mut expected = vec![Vec::new(); 4];
        let mut builder = MemRunBuilder::new(4, 0, quota.try_reserve(0).expect("room"));
        for (p, n) in [(0usize, 300u32), (2, 500), (3, 1)] {
            for i in 0..n {
                let key = format!("key {i:05} of {p}").into_bytes();
                let value = vec![b'v'; (i % 7) as usize];
                builder.write(p, &key, &value).expect("write");
                expected[p].push((key, value));
            }
        }
        (builder.finish(), expected)
    }

    /// Spill files and scratch files go to the directories in turn, and each reads back
    /// what was written to it.
    #[test]
    fn spills_spread_over_their_directories_in_turn() {
        let disks = [(); 3].map(|()| tempfile::tempdir().expect("tempdir"));
        let dir = |i: usize| SpillDir::create_in(disks[i].path()).expect("spill dir");
        let spills =
            LocalSpills::new(dir(0), Codec::Lz4, 4096).with_more_dirs(vec![dir(1), dir(2)]);
        let mut runs = Vec::new();
        for n in 0..6u32 {
            let mut writer = spills.create(2).expect("writer");
            let key = format!("key {n}").into_bytes();
            writer.write(1, &key, b"value").expect("write");
            runs.push((writer.finish().expect("finish"), key));
        }
        let scratch: Vec<ScratchFile> = (0..3)
            .map(|_| spills.scratch_file().expect("scratch"))
            .collect();
        // Each disk's spill directory holds two of the runs and one scratch file.
        for disk in &disks {
            let spill_dirs: Vec<_> = std::fs::read_dir(disk.path())
                .expect("list")
                .map(|e| e.expect("entry").path())
                .collect();
            assert_eq!(spill_dirs.len(), 1, "{spill_dirs:?}");
            let mut names: Vec<String> = std::fs::read_dir(&spill_dirs[0])
                .expect("list")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.') && n != "lock")
                .collect();
            names.sort();
            let runs = names.iter().filter(|n| n.ends_with(".spill")).count();
            let scratch = names.iter().filter(|n| n.ends_with(".tmp")).count();
            assert_eq!((runs, scratch), (2, 1), "{names:?}");
        }
        for (run, key) in &runs {
            assert_eq!(records(&**run, 0), Vec::new());
            assert_eq!(records(&**run, 1), vec![(key.clone(), b"value".to_vec())]);
        }
        drop(scratch);
    }

    #[test]
    fn a_memory_run_dumped_to_a_file_reads_back_the_same_and_frees_its_memory() {
        let dir = tempfile::tempdir().expect("tempdir");
        let spills = SpillDir::create_in(dir.path()).expect("spill dir");
        let pool = MemoryPool::new(1 << 20);
        let quota = MemRunQuota::new(pool.clone(), 1 << 20);
        let (run, expected) = sample_run(&quota);
        let bytes = run.bytes();
        let file = spills.scratch_file().expect("scratch file");
        let dumped = DumpedRun::write(&run, file, &pool)
            .expect("a memory run has an image")
            .expect("written");
        drop(run);
        assert_eq!(pool.used(), 0, "the memory run's bytes are free");
        assert_eq!(dumped.kind(), RunKind::Stored);
        assert_eq!(dumped.bytes(), bytes);
        for (p, want) in expected.iter().enumerate() {
            assert_eq!(dumped.has_records(p), !want.is_empty(), "partition {p}");
            assert_eq!(&records(&*dumped, p), want, "partition {p}");
        }
        // A partition read back holds what it read in the pool while its cursor lives.
        let mut cursor = dumped.open(2).expect("open");
        assert!(cursor.advance().expect("advance"));
        assert!(pool.used() as u64 >= dumped.partition_bytes(2).expect("known"));
        drop(cursor);
        assert_eq!(pool.used(), 0);
        // A run that is not one buffer in memory has no image to dump.
        let again = spills.scratch_file().expect("scratch file");
        assert!(DumpedRun::write(&*dumped, again, &pool).is_none());
    }

    /// A memory run of `partitions` partitions holding `records` (partition, key, value, in
    /// order), dumped to a scratch file, and the pool its cursors reserve from.
    struct Dumped {
        _dir: tempfile::TempDir,
        _spills: SpillDir,
        pool: MemoryPool,
        run: Run,
    }

    fn dumped(partitions: usize, records: &[(usize, Vec<u8>, Vec<u8>)]) -> Dumped {
        let dir = tempfile::tempdir().expect("tempdir");
        let spills = SpillDir::create_in(dir.path()).expect("spill dir");
        let pool = MemoryPool::new(64 << 20);
        let quota = MemRunQuota::new(pool.clone(), 64 << 20);
        let mut builder = MemRunBuilder::new(partitions, 0, quota.try_reserve(0).expect("room"));
        for (p, key, value) in records {
            builder.write(*p, key, value).expect("write");
        }
        let file = spills.scratch_file().expect("scratch file");
        let run = DumpedRun::write(&builder.finish(), file, &pool)
            .expect("an image")
            .expect("written");
        Dumped {
            _dir: dir,
            _spills: spills,
            pool,
            run,
        }
    }

    #[test]
    fn a_small_dumped_partition_holds_no_more_memory_than_its_bytes() {
        let Dumped { pool, run, .. } = &dumped(
            2,
            &[
                (0, b"a".to_vec(), b"1".to_vec()),
                (0, b"b".to_vec(), b"2".to_vec()),
                (1, b"c".to_vec(), vec![7u8; 5000]),
            ],
        );
        let mut cursor = run.open(0).expect("open");
        assert!(cursor.advance().expect("advance"));
        assert_eq!((cursor.key(), cursor.value()), (&b"a"[..], &b"1"[..]));
        let bytes = run.partition_bytes(0).expect("known");
        assert!(
            pool.used() as u64 <= bytes,
            "{} bytes held for a partition of {bytes}",
            pool.used()
        );
    }

    /// A partition many chunks long, with records cut by the chunks' ends and one larger
    /// than a chunk, reads back the same, holding about a chunk (or the large record).
    #[test]
    fn a_dumped_partition_reads_back_chunk_by_chunk() {
        let records: Vec<(usize, Vec<u8>, Vec<u8>)> = (0..40_000u32)
            .map(|i| {
                // Values of 0 to 199 bytes, and one of 3 chunks in the middle.
                let len = if i == 20_000 {
                    3 * READ_BACK_CHUNK
                } else {
                    (i % 200) as usize
                };
                (
                    1,
                    format!("{i:08}").into_bytes(),
                    vec![(i % 251) as u8; len],
                )
            })
            .collect();
        let Dumped {
            _dir,
            _spills,
            pool,
            run: dumped,
        } = dumped(2, &records);
        let bytes = dumped.partition_bytes(1).expect("known");
        assert!(bytes > 6 * READ_BACK_CHUNK as u64, "{bytes}");
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            records.into_iter().map(|(_, k, v)| (k, v)).collect();
        let mut cursor = dumped.open(1).expect("open");
        let (mut most, mut after_the_big_one) = (0, 0);
        for (i, (key, value)) in expected.iter().enumerate() {
            assert!(cursor.advance().expect("advance"), "record {i}");
            assert_eq!(cursor.key(), &key[..], "record {i}");
            assert_eq!(cursor.value(), &value[..], "record {i}");
            most = most.max(pool.used());
            if i > 35_000 {
                after_the_big_one = after_the_big_one.max(pool.used());
            }
        }
        assert!(!cursor.advance().expect("end"));
        assert!(
            most <= 5 * READ_BACK_CHUNK,
            "{most} bytes held for a partition of {bytes}"
        );
        assert!(
            after_the_big_one <= 2 * READ_BACK_CHUNK,
            "{after_the_big_one} bytes still held two chunks after the record of 3 chunks"
        );
        drop(cursor);
        assert_eq!(pool.used(), 0);
        // The cursor reads on after the run and its file's name are gone.
        let mut cursor = dumped.open(1).expect("open");
        drop(dumped);
        assert!(cursor.advance().expect("advance"));
        assert_eq!(cursor.key(), b"00000000");
    }
}
