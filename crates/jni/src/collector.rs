//! One map task's native collector: the records Java hands over in batches go into sluice's
//! own map-side [`Collector`] (sort, combine, spill under the task's `io.sort.mb`), and at the
//! end its runs are merged per partition into Hadoop's `file.out`.
//!
//! ```text
//!  batch (partition, key, value)* ─► key to sortable form ─► Collector ─(budget full)─► spill file
//!  flush ─► Collector::finish ─► merge_partition per partition ─► key back ─► IFileWriter
//! ```
//!
//! Memory: every byte the collector, its spill writers and the final merge hold is reserved
//! from one [`MemoryPool`] of the job's `mapreduce.task.io.sort.mb`, as sluice's own tasks do.

use std::sync::Arc;

use sluice_api::{Counter, Emit, ExecError, JobStatus, Reducer, Values};
use sluice_format::Codec;
use sluice_mapside::{Collector, CollectorSpec, MapCombine};
use sluice_shuffle::{merge_partition, LocalSpills, MergeSpec, Resources, SPILL_BLOCK};
use sluice_sort::{KeyOrder, SortedCursor};
use sluice_spill::{MemoryPool, SpillDir};

use crate::error::JniError;
use crate::ifile::{IFileWriter, IndexEntry};
use crate::keys::KeyKind;
use sluice_io::OutputCodec;

/// Keys are compared as unsigned bytes once they are in sortable form (see `keys`).
static ORDER: KeyOrder = KeyOrder::Bytes;

/// Bytes of a record header in a batch: partition, key length, value length (big-endian).
const RECORD_HEADER: usize = 12;

/// A combiner that sums the values of a key, as Hadoop's `IntSumReducer` (4-byte
/// `IntWritable`s) and `LongSumReducer` (8-byte `LongWritable`s) do, with Java's wrap-around.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SumCombiner {
    /// `IntWritable` values.
    Int,
    /// `LongWritable` values.
    Long,
}

impl SumCombiner {
    /// The combiner the Java side numbered `code` (0: none).
    pub fn from_code(code: i32) -> Result<Option<SumCombiner>, JniError> {
        match code {
            0 => Ok(None),
            1 => Ok(Some(SumCombiner::Int)),
            2 => Ok(Some(SumCombiner::Long)),
            _ => Err(JniError::Config(format!("unknown combiner code {code}"))),
        }
    }

    /// Adds one serialised value to `sum`.
    fn add(self, sum: i64, value: &[u8]) -> Result<i64, ExecError> {
        let bad = || ExecError::user(format!("a combined value has {} bytes", value.len()));
        Ok(match self {
            SumCombiner::Int => {
                let v = i32::from_be_bytes(value.try_into().map_err(|_| bad())?);
                // Java int arithmetic: the sum wraps at 32 bits (and so stays an i32).
                i64::from(int_sum(sum)?.wrapping_add(v))
            }
            SumCombiner::Long => {
                sum.wrapping_add(i64::from_be_bytes(value.try_into().map_err(|_| bad())?))
            }
        })
    }

    /// The serialised sum.
    fn encode(self, sum: i64, out: &mut Vec<u8>) -> Result<(), ExecError> {
        out.clear();
        match self {
            SumCombiner::Int => out.extend_from_slice(&int_sum(sum)?.to_be_bytes()),
            SumCombiner::Long => out.extend_from_slice(&sum.to_be_bytes()),
        }
        Ok(())
    }
}

/// An `Int` sum, which [`SumCombiner::add`] keeps within `i32`.
fn int_sum(sum: i64) -> Result<i32, ExecError> {
    i32::try_from(sum).map_err(|_| ExecError::user(format!("an int sum out of range: {sum}")))
}

/// The combiner as sluice's collector runs it over each spill.
struct SumReducer {
    kind: SumCombiner,
    value: Vec<u8>,
}

impl Reducer for SumReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let mut sum = 0i64;
        while let Some(value) = values.next_value()? {
            sum = self.kind.add(sum, value)?;
        }
        self.kind.encode(sum, &mut self.value)?;
        out.emit(key, &self.value)
    }
}

/// A combiner outside native code (the job's Java combiner), called once per batch of whole
/// key groups.
pub trait BatchCombiner: Send {
    /// Combines `batch`, records of `int keyLength, int valueLength, key, value` (big-endian
    /// lengths; keys and values serialised as the job serialises them) sorted by key, whole
    /// groups only, and returns the combined records in the same form and order.
    ///
    /// # Errors
    /// The combiner failed.
    fn combine(&mut self, batch: &[u8]) -> Result<&[u8], JniError>;
}

/// Bytes of whole key groups handed to a [`BatchCombiner`] at once: about 1 MB (a larger group
/// goes whole).
const COMBINE_BATCH: usize = 1 << 20;

/// The job's own combiner as the collector runs it: each partition's sorted records in batches
/// of whole groups, keys turned back into their serialised form, one call per batch.
struct BatchingCombiner {
    key: KeyKind,
    inner: Box<dyn BatchCombiner>,
    batch: Vec<u8>,
    serialised: Vec<u8>,
    /// The sortable key of the batch's last record.
    last: Vec<u8>,
    sortable: Vec<u8>,
}

impl BatchingCombiner {
    fn new(key: KeyKind, inner: Box<dyn BatchCombiner>) -> BatchingCombiner {
        BatchingCombiner {
            key,
            inner,
            batch: Vec::with_capacity(COMBINE_BATCH),
            serialised: Vec::new(),
            last: Vec::new(),
            sortable: Vec::new(),
        }
    }

    /// Combines the batch and emits what comes back, in sortable form.
    fn flush(&mut self, out: &mut dyn Emit) -> Result<(), ExecError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        let combined = self
            .inner
            .combine(&self.batch)
            .map_err(|e| ExecError::user(e.to_string()))?;
        let mut at = 0;
        while at < combined.len() {
            let field = |i: usize| {
                combined.get(i..i + 4).and_then(|b| {
                    usize::try_from(i32::from_be_bytes([b[0], b[1], b[2], b[3]])).ok()
                })
            };
            let (Some(klen), Some(vlen)) = (field(at), field(at + 4)) else {
                return Err(ExecError::user(format!(
                    "the combiner's output is malformed at byte {at}"
                )));
            };
            let (key, value) = match (
                combined.get(at + 8..at + 8 + klen),
                combined.get(at + 8 + klen..at + 8 + klen + vlen),
            ) {
                (Some(k), Some(v)) => (k, v),
                _ => {
                    return Err(ExecError::user(format!(
                        "the combiner's output is cut short at byte {at}"
                    )))
                }
            };
            self.key
                .to_sortable(key, &mut self.sortable)
                .map_err(|e| ExecError::user(format!("a key the combiner emitted: {e}")))?;
            out.emit(&self.sortable, value)?;
            at += 8 + klen + vlen;
        }
        self.batch.clear();
        Ok(())
    }
}

impl Reducer for BatchingCombiner {
    /// One group alone (the collector calls [`Reducer::run`], which batches groups).
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        while let Some(value) = values.next_value()? {
            self.append(key, value)?;
        }
        self.flush(out)
    }

    fn run(
        &mut self,
        input: &mut dyn sluice_api::SortedInput,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        self.batch.clear();
        while input.advance()? {
            let key = input.key();
            let new_group = self.batch.is_empty() || key != self.last.as_slice();
            if new_group {
                // A batch ends only between groups: the combiner sees each group whole.
                if self.batch.len() >= COMBINE_BATCH {
                    self.flush(out)?;
                }
                self.last.clear();
                self.last.extend_from_slice(key);
            }
            let value = input.value();
            self.append(key, value)?;
        }
        self.flush(out)
    }
}

impl BatchingCombiner {
    /// Appends a record (its key in sortable form) to the batch, the key serialised again.
    fn append(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        self.serialised.clear();
        self.key
            .to_serialised(key, &mut self.serialised)
            .map_err(|e| ExecError::user(e.to_string()))?;
        let too_long = || ExecError::user("a record too long for Java's combiner".to_string());
        let klen = i32::try_from(self.serialised.len()).map_err(|_| too_long())?;
        let vlen = i32::try_from(value.len()).map_err(|_| too_long())?;
        self.batch.extend_from_slice(&klen.to_be_bytes());
        self.batch.extend_from_slice(&vlen.to_be_bytes());
        self.batch.extend_from_slice(&self.serialised);
        self.batch.extend_from_slice(value);
        Ok(())
    }
}

/// What the task's settings are.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Reduce tasks (partitions).
    pub partitions: usize,
    /// How keys compare.
    pub key: KeyKind,
    /// The combiner, if the job has one that runs natively (see also `NativeCollector::new`'s
    /// combiner called back).
    pub combiner: Option<SumCombiner>,
    /// `mapreduce.task.io.sort.mb`, in bytes.
    pub budget: usize,
    /// `mapreduce.map.combine.minspills`: the combiner also runs over the final merge when
    /// there are at least this many runs, as Hadoop's does.
    pub min_spills_for_combine: usize,
    /// The directory sluice's spill directory is made in.
    pub spill_parent: String,
}

/// What a flush reports: the index entries and the counters Hadoop's `MapOutputBuffer` keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushReport {
    /// One entry per partition.
    pub index: Vec<IndexEntry>,
    /// `SPILLED_RECORDS`.
    pub spilled_records: u64,
    /// `COMBINE_INPUT_RECORDS`.
    pub combine_input: u64,
    /// `COMBINE_OUTPUT_RECORDS`.
    pub combine_output: u64,
    /// Runs the collector made (spill files and the last run).
    pub runs: u64,
    /// Most bytes the pool held at once.
    pub peak_memory: u64,
}

/// One map task's native collector.
pub struct NativeCollector {
    settings: Settings,
    /// Borrows `resources`: declared first so that it is dropped first.
    collector: Option<Collector<'static>>,
    resources: Box<Resources>,
    sortable: Vec<u8>,
    collected: u64,
    /// The job's own combiner runs, called back per batch.
    calls_back: bool,
}

impl NativeCollector {
    /// A collector for a task with `settings`; its spill directory is created. `callback` is
    /// the job's own combiner, run over each spill in batches, when `settings` has no native
    /// one (it is not run over the final merge: a combiner may run any number of times).
    ///
    /// # Errors
    /// The spill directory cannot be created, or two combiners were given.
    pub fn new(
        settings: Settings,
        callback: Option<Box<dyn BatchCombiner>>,
    ) -> Result<Box<NativeCollector>, JniError> {
        if settings.combiner.is_some() && callback.is_some() {
            return Err(JniError::Config(
                "a native combiner and a combiner called back".into(),
            ));
        }
        if settings.partitions == 0 || settings.budget == 0 {
            return Err(JniError::Config(format!(
                "{} partitions and {} bytes of sort buffer cannot collect",
                settings.partitions, settings.budget
            )));
        }
        let write_chunk = 64 * 1024;
        let pool = MemoryPool::new(settings.budget);
        let spills = LocalSpills::new(
            SpillDir::create_in(std::path::Path::new(&settings.spill_parent))
                .map_err(ExecError::from)?
                .with_write_chunk(write_chunk)
                .with_pool(pool.clone()),
            Codec::Lz4,
            SPILL_BLOCK,
        );
        let buckets = (settings.budget / (16 * sluice_shuffle::SORT_BLOCK)).clamp(1, 256);
        let resources = Box::new(Resources::new(
            pool,
            settings.budget,
            Box::new(spills),
            write_chunk,
            buckets,
            Arc::new(JobStatus::default()),
        ));
        // SAFETY: the reference points into the heap allocation of `resources`, which never
        // moves (a `Box`) and lives as long as the returned value; the collector that holds the
        // reference is dropped before it (field order, and `finish_output` takes it first).
        // Its `'static` lifetime never escapes this struct.
        let res: &'static Resources = unsafe { &*(&*resources as *const Resources) };
        let calls_back = callback.is_some();
        let combine = match (settings.combiner, callback) {
            (Some(kind), _) => MapCombine::Reducer(Box::new(SumReducer {
                kind,
                value: Vec::with_capacity(8),
            })),
            (None, Some(inner)) => {
                MapCombine::Reducer(Box::new(BatchingCombiner::new(settings.key, inner)))
            }
            (None, None) => MapCombine::None,
        };
        let spec = CollectorSpec {
            partitions: settings.partitions,
            order: &ORDER,
            combine,
        };
        let collector = Collector::new(res, spec, settings.budget, 64 * 1024);
        Ok(Box::new(NativeCollector {
            settings,
            collector: Some(collector),
            resources,
            sortable: Vec::new(),
            collected: 0,
            calls_back,
        }))
    }

    /// Takes a batch of records, each a 12-byte header (partition, key length, value length,
    /// big-endian 32-bit) followed by the serialised key and value.
    ///
    /// # Errors
    /// The batch is malformed, a key is malformed, or a spill failed.
    pub fn collect_batch(&mut self, batch: &[u8]) -> Result<(), JniError> {
        let collector = self
            .collector
            .as_mut()
            .ok_or_else(|| JniError::Config("the collector was flushed already".into()))?;
        let mut at = 0usize;
        while at < batch.len() {
            let malformed = |reason: &str| JniError::Batch {
                offset: at,
                reason: reason.to_string(),
            };
            let header = batch
                .get(at..at + RECORD_HEADER)
                .ok_or_else(|| malformed("truncated header"))?;
            let field = |i: usize| {
                let bytes = [header[i], header[i + 1], header[i + 2], header[i + 3]];
                usize::try_from(i32::from_be_bytes(bytes)).ok()
            };
            let (partition, klen, vlen) = match (field(0), field(4), field(8)) {
                (Some(p), Some(k), Some(v)) => (p, k, v),
                _ => return Err(malformed("a negative field")),
            };
            if partition >= self.settings.partitions {
                return Err(malformed("partition out of range"));
            }
            let key_start = at + RECORD_HEADER;
            let value_start = key_start + klen;
            let end = value_start + vlen;
            let (key, value) = match (
                batch.get(key_start..value_start),
                batch.get(value_start..end),
            ) {
                (Some(k), Some(v)) => (k, v),
                _ => return Err(malformed("a record longer than the batch")),
            };
            self.settings.key.to_sortable(key, &mut self.sortable)?;
            let partition = u32::try_from(partition).map_err(|_| malformed("partition"))?;
            collector.collect(partition, &self.sortable, value)?;
            self.collected += 1;
            at = end;
        }
        Ok(())
    }

    /// Sorts and combines what is left, merges every run into `file.out` at `path` (one IFile
    /// segment per partition, compressed with `codec`) and reports the index and counters.
    ///
    /// # Errors
    /// A spill, the merge or writing the file failed.
    pub fn finish_output(
        &mut self,
        path: &str,
        codec: OutputCodec,
    ) -> Result<FlushReport, JniError> {
        let collector = self
            .collector
            .take()
            .ok_or_else(|| JniError::Config("the collector was flushed already".into()))?;
        let runs = collector.finish()?;
        let res = &*self.resources;
        // The collector's emptied buffer was kept for a next task; there is none.
        res.drop_spare_buffers();
        let counters = &res.status().counters;
        let mut combine_input = counters.get(Counter::CombineInputRecords);
        let mut combine_output = counters.get(Counter::CombineOutputRecords);
        // Every record went into exactly one run, after the combiner if there is one.
        let run_records = if self.settings.combiner.is_some() || self.calls_back {
            combine_output
        } else {
            self.collected
        };
        let combine_final = self
            .settings
            .combiner
            .filter(|_| runs.len() >= self.settings.min_spills_for_combine.max(1));
        let spec = MergeSpec {
            partitions: self.settings.partitions,
            order: &ORDER,
            sum_counts: false,
        };
        let mut writer = IFileWriter::create(path, codec)?;
        let mut index = Vec::with_capacity(self.settings.partitions);
        let mut serialised = Vec::new();
        let mut value = Vec::new();
        let mut pending: Option<(Vec<u8>, i64)> = None;
        for partition in 0..self.settings.partitions {
            let mut merge = merge_partition(&runs, partition, spec, self.settings.budget, res)?;
            while merge.advance().map_err(ExecError::from)? {
                let key = merge.key();
                match combine_final {
                    None => {
                        serialised.clear();
                        self.settings.key.to_serialised(key, &mut serialised)?;
                        writer.append(&serialised, merge.value())?;
                    }
                    Some(kind) => {
                        combine_input += 1;
                        if let Some((pending_key, sum)) = &mut pending {
                            if pending_key.as_slice() == key {
                                *sum = kind.add(*sum, merge.value())?;
                                continue;
                            }
                        }
                        if let Some((done, sum)) = pending.take() {
                            self.write_sum(
                                &mut writer,
                                kind,
                                &done,
                                sum,
                                &mut serialised,
                                &mut value,
                            )?;
                            combine_output += 1;
                        }
                        pending = Some((key.to_vec(), kind.add(0, merge.value())?));
                    }
                }
            }
            if let (Some(kind), Some((done, sum))) = (combine_final, pending.take()) {
                self.write_sum(&mut writer, kind, &done, sum, &mut serialised, &mut value)?;
                combine_output += 1;
            }
            index.push(writer.end_segment()?);
        }
        let written = writer.records();
        writer.finish()?;
        // Hadoop counts each spill's records, and the final file's again when it merged
        // several spills (a single spill is renamed into place).
        let spilled_records = if runs.len() > 1 {
            run_records + written
        } else {
            written
        };
        Ok(FlushReport {
            index,
            spilled_records,
            combine_input,
            combine_output,
            runs: runs.len() as u64,
            peak_memory: res.pool().peak() as u64,
        })
    }

    fn write_sum(
        &self,
        writer: &mut IFileWriter,
        kind: SumCombiner,
        key: &[u8],
        sum: i64,
        serialised: &mut Vec<u8>,
        value: &mut Vec<u8>,
    ) -> Result<(), JniError> {
        serialised.clear();
        self.settings.key.to_serialised(key, serialised)?;
        kind.encode(sum, value)?;
        writer.append(serialised, value)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use sluice_hadoop::writable::{write_text, WritableReader};

    use super::*;

    fn record(batch: &mut Vec<u8>, partition: i32, key: &[u8], value: &[u8]) {
        batch.extend(partition.to_be_bytes());
        batch.extend(i32::try_from(key.len()).unwrap().to_be_bytes());
        batch.extend(i32::try_from(value.len()).unwrap().to_be_bytes());
        batch.extend(key);
        batch.extend(value);
    }

    /// Reads `file.out` back by its index, checking each segment's end marker and CRC32:
    /// per partition, the (key, value) records in file order.
    fn read_ifile(bytes: &[u8], index: &[IndexEntry]) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
        let mut offset = 0;
        index
            .iter()
            .map(|entry| {
                assert_eq!(entry.start, offset, "segments follow each other");
                offset += entry.part_length;
                let start = usize::try_from(entry.start).unwrap();
                let raw = usize::try_from(entry.raw_length).unwrap();
                let segment = &bytes[start..start + raw];
                let crc = &bytes[start + raw..start + raw + 4];
                assert_eq!(crc32fast::hash(segment).to_be_bytes(), crc);
                let mut reader = WritableReader::new(segment);
                let mut records = Vec::new();
                loop {
                    let klen = reader.read_vint().unwrap();
                    let vlen = reader.read_vint().unwrap();
                    if (klen, vlen) == (-1, -1) {
                        break;
                    }
                    let key = reader
                        .read_raw("key", usize::try_from(klen).unwrap())
                        .unwrap();
                    let value = reader
                        .read_raw("value", usize::try_from(vlen).unwrap())
                        .unwrap();
                    records.push((key.to_vec(), value.to_vec()));
                }
                assert!(reader.remaining().is_empty(), "bytes after the end marker");
                records
            })
            .collect()
    }

    fn settings(dir: &std::path::Path, key: KeyKind, combiner: Option<SumCombiner>) -> Settings {
        Settings {
            partitions: 3,
            key,
            combiner,
            budget: 1 << 20,
            min_spills_for_combine: 3,
            spill_parent: dir.to_str().unwrap().to_string(),
        }
    }

    /// Word counts through a 1 MiB budget (many spills, combined on each and in the final
    /// merge) come out as one record per word, in Text order, with the counts a map of the
    /// input gives.
    #[test]
    fn word_counts_spill_and_merge_into_sorted_segments() {
        let dir = tempfile::tempdir().unwrap();
        let mut collector = NativeCollector::new(
            settings(dir.path(), KeyKind::Text, Some(SumCombiner::Int)),
            None,
        )
        .unwrap();
        let mut expected: Vec<BTreeMap<Vec<u8>, i32>> = vec![BTreeMap::new(); 3];
        let mut batch = Vec::new();
        let mut key = Vec::new();
        for i in 0..200_000u32 {
            let word = format!("w{}", (i * 7919) % 5003).into_bytes();
            let partition = (word.iter().map(|&b| u32::from(b)).sum::<u32>() % 3) as usize;
            *expected[partition].entry(word.clone()).or_default() += 1;
            key.clear();
            write_text(&mut key, &word).unwrap();
            record(
                &mut batch,
                i32::try_from(partition).unwrap(),
                &key,
                &1i32.to_be_bytes(),
            );
            if batch.len() > 64 * 1024 {
                collector.collect_batch(&batch).unwrap();
                batch.clear();
            }
        }
        collector.collect_batch(&batch).unwrap();
        let out = dir.path().join("file.out");
        let report = collector
            .finish_output(out.to_str().unwrap(), OutputCodec::None)
            .unwrap();
        assert!(
            report.runs >= 3,
            "expected several spills, got {} runs",
            report.runs
        );
        let segments = read_ifile(&std::fs::read(&out).unwrap(), &report.index);
        for (partition, records) in segments.iter().enumerate() {
            let want: Vec<(Vec<u8>, Vec<u8>)> = expected[partition]
                .iter()
                .map(|(word, n)| {
                    let mut key = Vec::new();
                    write_text(&mut key, word).unwrap();
                    (key, n.to_be_bytes().to_vec())
                })
                .collect();
            assert_eq!(records, &want, "partition {partition}");
        }
        let written: u64 = expected.iter().map(|m| m.len() as u64).sum();
        // As Hadoop counts: every combined record is spilled (in a spill, then again in the
        // final file); the final merge combines every spilled record once more.
        assert_eq!(report.combine_output, report.spilled_records);
        let in_spills = report.spilled_records - written;
        assert_eq!(report.combine_input, 200_000 + in_spills);
        assert!(report.peak_memory <= 1 << 20);
    }

    /// `LongWritable.DecreasingComparator` keys, no combiner: every record kept, largest key
    /// first.
    #[test]
    fn decreasing_long_keys_come_out_largest_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut collector =
            NativeCollector::new(settings(dir.path(), KeyKind::LongDecreasing, None), None)
                .unwrap();
        let keys: Vec<i64> = (0..50_000i64).map(|i| (i * 7_777) % 1_001 - 500).collect();
        let mut batch = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let partition = i32::try_from(i % 3).unwrap();
            record(&mut batch, partition, &k.to_be_bytes(), b"v");
        }
        collector.collect_batch(&batch).unwrap();
        let out = dir.path().join("file.out");
        let report = collector
            .finish_output(out.to_str().unwrap(), OutputCodec::None)
            .unwrap();
        let segments = read_ifile(&std::fs::read(&out).unwrap(), &report.index);
        for (partition, records) in segments.iter().enumerate() {
            let mut want: Vec<i64> = keys
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 3 == partition)
                .map(|(_, &k)| k)
                .collect();
            want.sort_by(|a, b| b.cmp(a));
            let got: Vec<i64> = records
                .iter()
                .map(|(k, _)| i64::from_be_bytes(k.as_slice().try_into().unwrap()))
                .collect();
            assert_eq!(got, want, "partition {partition}");
        }
        assert_eq!(report.combine_input, 0);
    }

    /// Sums 4-byte int values per key, as a Java `IntSumReducer` would, and records the keys
    /// of each call.
    struct SumInJava {
        output: Vec<u8>,
        calls: Arc<std::sync::Mutex<Vec<Vec<Vec<u8>>>>>,
    }

    impl BatchCombiner for SumInJava {
        fn combine(&mut self, batch: &[u8]) -> Result<&[u8], JniError> {
            let mut sums: Vec<(Vec<u8>, i32)> = Vec::new();
            let mut at = 0;
            while at < batch.len() {
                let int = |i: usize| i32::from_be_bytes(batch[i..i + 4].try_into().unwrap());
                let (k, v) = (
                    usize::try_from(int(at)).unwrap(),
                    usize::try_from(int(at + 4)).unwrap(),
                );
                let key = batch[at + 8..at + 8 + k].to_vec();
                let value = int(at + 8 + k);
                assert_eq!(v, 4);
                match sums.last_mut() {
                    Some((last, sum)) if *last == key => *sum += value,
                    _ => sums.push((key, value)),
                }
                at += 8 + k + v;
            }
            self.calls
                .lock()
                .unwrap()
                .push(sums.iter().map(|(k, _)| k.clone()).collect());
            self.output.clear();
            for (key, sum) in &sums {
                self.output
                    .extend_from_slice(&i32::try_from(key.len()).unwrap().to_be_bytes());
                self.output.extend_from_slice(&4i32.to_be_bytes());
                self.output.extend_from_slice(key);
                self.output.extend_from_slice(&sum.to_be_bytes());
            }
            Ok(&self.output)
        }
    }

    /// A combiner called back: batches of about 1 MB that never cut a group, keys in their
    /// serialised form both ways, counts as a map of the input gives.
    #[test]
    fn a_combiner_called_back_sees_whole_groups_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut config = settings(dir.path(), KeyKind::Text, None);
        // One spill: every group is in it whole.
        config.budget = 64 << 20;
        let mut collector = NativeCollector::new(
            config,
            Some(Box::new(SumInJava {
                output: Vec::new(),
                calls: Arc::clone(&calls),
            })),
        )
        .unwrap();
        let mut expected: Vec<BTreeMap<Vec<u8>, i32>> = vec![BTreeMap::new(); 3];
        let mut batch = Vec::new();
        let mut key = Vec::new();
        // Few keys, many values each: groups larger than a batch's worth of small groups.
        for i in 0..300_000u32 {
            let word = format!("key{}", (i * 7919) % 97).into_bytes();
            let partition = (word.iter().map(|&b| u32::from(b)).sum::<u32>() % 3) as usize;
            *expected[partition].entry(word.clone()).or_default() += 2;
            key.clear();
            write_text(&mut key, &word).unwrap();
            record(
                &mut batch,
                i32::try_from(partition).unwrap(),
                &key,
                &2i32.to_be_bytes(),
            );
        }
        collector.collect_batch(&batch).unwrap();
        let out = dir.path().join("file.out");
        let report = collector
            .finish_output(out.to_str().unwrap(), OutputCodec::None)
            .unwrap();
        let segments = read_ifile(&std::fs::read(&out).unwrap(), &report.index);
        for (partition, records) in segments.iter().enumerate() {
            let want: Vec<(Vec<u8>, Vec<u8>)> = expected[partition]
                .iter()
                .map(|(word, n)| {
                    let mut key = Vec::new();
                    write_text(&mut key, word).unwrap();
                    (key, n.to_be_bytes().to_vec())
                })
                .collect();
            assert_eq!(records, &want, "partition {partition}");
        }
        let calls = calls.lock().unwrap();
        assert!(calls.len() >= 3, "{} calls", calls.len());
        // No key is in two calls: each group went whole to one call.
        let mut seen = std::collections::BTreeSet::new();
        for keys in calls.iter() {
            for key in keys {
                assert!(seen.insert(key.clone()), "a group was cut between calls");
            }
        }
        assert_eq!(report.combine_input, 300_000);
        assert_eq!(report.combine_output, seen.len() as u64);
    }

    #[test]
    fn malformed_batches_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut collector =
            NativeCollector::new(settings(dir.path(), KeyKind::Int, None), None).unwrap();
        let mut batch = Vec::new();
        record(&mut batch, 3, &[0, 0, 0, 1], b"");
        assert!(matches!(
            collector.collect_batch(&batch),
            Err(JniError::Batch { .. })
        ));
        let mut batch = Vec::new();
        record(&mut batch, 0, &[0, 0, 1], b"");
        assert!(matches!(
            collector.collect_batch(&batch),
            Err(JniError::Key(_))
        ));
        assert!(matches!(
            collector.collect_batch(&[0, 0, 0]),
            Err(JniError::Batch { .. })
        ));
    }
}
