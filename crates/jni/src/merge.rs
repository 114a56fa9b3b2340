//! One reduce task's native merge, the reduce side of the plugin (Hadoop-A's "levitated
//! merge"): Hadoop's fetchers keep fetching, checking and decompressing map outputs as they
//! always do, but each segment goes into native memory (or a native spill file when the budget
//! is full) instead of the Java heap and Hadoop's on-disk merges, and the reducer reads one
//! merged stream, about 1 MB per JNI call, the next batch merged while Java consumes the
//! current one.
//!
//! ```text
//!  fetcher: IFile bytes ─► SegmentBuilder (parse, key to sortable, order check) ─► run
//!  commit ──────────────► RunCatalog (in commit order)
//!  finish ──────────────► merge thread: merge_partition ─► key back ─► batches ─► Java
//! ```
//!
//! When every segment fits in the budget no byte of intermediate data touches the reducer's
//! disk; what does is counted ([`MergeReport::disk_bytes`]).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use sluice_api::{Counter, ExecError, JobStatus};
use sluice_format::Codec;
use sluice_hadoop::writable::{WritableError, WritableReader};
use sluice_shuffle::{
    merge_partition, LocalSpills, MemRunBuilder, MergeSpec, Resources, RunCatalog, RunWriter,
    SPILL_BLOCK,
};
use sluice_sort::{KeyOrder, SortedCursor};
use sluice_spill::{MemoryReservation, SpillDir};

use crate::error::JniError;
use crate::keys::KeyKind;

/// Keys are compared as unsigned bytes once they are in sortable form (see `keys`).
static ORDER: KeyOrder = KeyOrder::Bytes;

/// Bytes of a batch handed to Java: about 1 MB (a larger record travels alone).
pub const BATCH: usize = 1 << 20;

/// Batches merged ahead of the one Java reads.
const AHEAD: usize = 2;

/// What a reduce task's merge is given.
#[derive(Debug, Clone)]
pub struct MergeSettings {
    /// How the job's keys compare.
    pub key: KeyKind,
    /// Native memory the merge may hold: the job's shuffle buffer.
    pub budget: usize,
    /// The directory the merge's private spill directory is made in.
    pub spill_parent: String,
}

/// What a finished shuffle holds, reported to Java when the merge starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MergeReport {
    /// Map output segments committed.
    pub segments: u64,
    /// Records in them.
    pub records: u64,
    /// Segments kept in memory.
    pub segments_in_memory: u64,
    /// Bytes written to local disk: segments that did not fit, and merge passes (each byte
    /// written is read back once).
    pub disk_bytes: u64,
    /// Records written to local disk, counted as Hadoop counts the reduce side's spilled
    /// records: once per write.
    pub disk_records: u64,
    /// Most bytes of the budget held at once.
    pub peak_memory: u64,
}

/// What every segment of a merge shares.
struct Shared {
    key: KeyKind,
    budget: usize,
    resources: Resources,
    catalog: RunCatalog,
    /// Segments committed: the next one's place in the merge order.
    committed: AtomicUsize,
    records: AtomicU64,
    in_memory: AtomicU64,
    segment_disk_bytes: AtomicU64,
    segment_disk_records: AtomicU64,
}

/// The records of one map output segment, as a fetcher hands them over.
pub struct SegmentBuilder {
    shared: Arc<Shared>,
    writer: Box<dyn RunWriter>,
    in_memory: bool,
    parser: IFileParser,
    sortable: Vec<u8>,
    last: Vec<u8>,
    records: u64,
}

impl SegmentBuilder {
    /// Takes the next bytes of the segment's (checked, decompressed) IFile stream.
    ///
    /// # Errors
    /// The bytes are not IFile records, a key is malformed or out of order, or the spill
    /// file failed.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), JniError> {
        let SegmentBuilder {
            shared,
            writer,
            parser,
            sortable,
            last,
            records,
            ..
        } = self;
        parser.feed(bytes, |key, value| {
            shared.key.to_sortable(key, sortable)?;
            if *records > 0 && sortable.as_slice() < last.as_slice() {
                return Err(JniError::Segment(format!(
                    "record {records} of a map output is out of order for the job's comparator"
                )));
            }
            last.clear();
            last.extend_from_slice(sortable);
            writer.write(0, sortable, value)?;
            *records += 1;
            Ok(())
        })
    }
}

/// A reduce task's merge.
pub struct NativeMerge {
    shared: Arc<Shared>,
    output: Mutex<Option<Output>>,
}

/// The merged stream, once the merge has started.
struct Output {
    batches: Receiver<Message>,
    spare: SyncSender<Vec<u8>>,
    /// A batch Java's buffer was too small for, kept for the next call.
    held: Option<Vec<u8>>,
    ended: bool,
    thread: Option<JoinHandle<()>>,
    /// The batches' memory, outside the budget's runs.
    _batches: MemoryReservation,
}

/// What the merge thread sends.
enum Message {
    Batch(Vec<u8>),
    End,
    Failed(String),
}

impl NativeMerge {
    /// A merge with `settings`; its spill directory is created.
    ///
    /// # Errors
    /// The budget is zero, or the spill directory cannot be created.
    pub fn new(settings: MergeSettings) -> Result<NativeMerge, JniError> {
        if settings.budget == 0 {
            return Err(JniError::Config("a merge needs a memory budget".into()));
        }
        let write_chunk = 64 * 1024;
        let pool = sluice_spill::MemoryPool::new(settings.budget);
        let spills = LocalSpills::new(
            SpillDir::create_in(std::path::Path::new(&settings.spill_parent))
                .map_err(ExecError::from)?
                .with_write_chunk(write_chunk)
                .with_pool(pool.clone()),
            Codec::Lz4,
            SPILL_BLOCK,
        );
        // Three quarters of the budget hold segments; the rest is for the readers and
        // writers of spill files and the final merge.
        let held = settings.budget / 4 * 3;
        let resources = Resources::new(
            pool,
            held,
            Box::new(spills),
            write_chunk,
            1,
            Arc::new(JobStatus::default()),
        );
        Ok(NativeMerge {
            shared: Arc::new(Shared {
                key: settings.key,
                budget: settings.budget,
                resources,
                catalog: RunCatalog::new(),
                committed: AtomicUsize::new(0),
                records: AtomicU64::new(0),
                in_memory: AtomicU64::new(0),
                segment_disk_bytes: AtomicU64::new(0),
                segment_disk_records: AtomicU64::new(0),
            }),
            output: Mutex::new(None),
        })
    }

    /// Starts a segment whose IFile stream holds `raw_length` bytes: in memory if the budget
    /// has room for it, else in a spill file.
    ///
    /// # Errors
    /// The spill file cannot be created.
    pub fn begin_segment(&self, raw_length: u64) -> Result<Box<SegmentBuilder>, JniError> {
        let res = &self.shared.resources;
        let reserved = usize::try_from(raw_length)
            .ok()
            .and_then(|bytes| res.quota().try_reserve(bytes).map(|r| (bytes, r)));
        let (writer, in_memory): (Box<dyn RunWriter>, bool) = match reserved {
            Some((bytes, reservation)) => {
                (Box::new(MemRunBuilder::new(1, bytes, reservation)), true)
            }
            None => (res.create_spill(1)?, false),
        };
        Ok(Box::new(SegmentBuilder {
            shared: Arc::clone(&self.shared),
            writer,
            in_memory,
            parser: IFileParser::default(),
            sortable: Vec::new(),
            last: Vec::new(),
            records: 0,
        }))
    }

    /// Adds a fully fed segment to the merge, after those committed before it.
    ///
    /// # Errors
    /// The segment's stream did not end with IFile's end marker, or its spill file failed.
    pub fn commit(&self, segment: SegmentBuilder) -> Result<(), JniError> {
        if !segment.parser.ended() {
            return Err(JniError::Segment(
                "a map output ended without IFile's end marker".into(),
            ));
        }
        let run = segment.writer.finish()?;
        let shared = &self.shared;
        if segment.in_memory {
            shared.in_memory.fetch_add(1, Ordering::Relaxed);
        } else {
            shared
                .segment_disk_bytes
                .fetch_add(run.bytes(), Ordering::Relaxed);
            shared
                .segment_disk_records
                .fetch_add(segment.records, Ordering::Relaxed);
        }
        shared.records.fetch_add(segment.records, Ordering::Relaxed);
        let place = shared.committed.fetch_add(1, Ordering::Relaxed);
        shared.catalog.add(place, vec![run]);
        Ok(())
    }

    /// Starts merging what was committed, on a thread of its own that merges batches ahead of
    /// [`NativeMerge::next_batch`]; reports what the shuffle brought.
    ///
    /// # Errors
    /// The merge was started already, or its thread cannot start.
    pub fn finish(&self) -> Result<MergeReport, JniError> {
        let mut output = self.lock();
        if output.is_some() {
            return Err(JniError::Config("the merge was started already".into()));
        }
        let shared = &self.shared;
        let runs = shared.catalog.take_runs();
        let (batches_in, batches) = sync_channel(AHEAD);
        let (spare, spares) = sync_channel(AHEAD + 1);
        let reservation = shared.resources.reserve_or_force((AHEAD + 2) * BATCH);
        let producer = Arc::clone(shared);
        let thread = std::thread::Builder::new()
            .name("sluice-merge".into())
            .spawn(move || produce(&producer, runs, &batches_in, &spares))
            .map_err(|e| JniError::Config(format!("cannot start the merge thread: {e}")))?;
        *output = Some(Output {
            batches,
            spare,
            held: None,
            ended: false,
            thread: Some(thread),
            _batches: reservation,
        });
        Ok(self.report())
    }

    /// What the merge holds and has written so far.
    pub fn report(&self) -> MergeReport {
        let shared = &self.shared;
        let counters = &shared.resources.status().counters;
        MergeReport {
            segments: shared.committed.load(Ordering::Relaxed) as u64,
            records: shared.records.load(Ordering::Relaxed),
            segments_in_memory: shared.in_memory.load(Ordering::Relaxed),
            disk_bytes: shared.segment_disk_bytes.load(Ordering::Relaxed)
                + counters.get(Counter::SpilledBytes),
            disk_records: shared.segment_disk_records.load(Ordering::Relaxed)
                + counters.get(Counter::SpilledRecords),
            peak_memory: shared.resources.pool().peak() as u64,
        }
    }

    /// Hands the next merged batch to `copy` if it holds at most `capacity` bytes, and returns
    /// its length; 0 when the stream has ended; minus the batch's length, keeping it for the
    /// next call, if it is larger than `capacity`. A batch is records of `int keyLength, int
    /// valueLength, key, value` (big-endian), keys serialised as the job serialises them.
    ///
    /// # Errors
    /// The merge was not started, or it failed.
    pub fn next_batch(
        &self,
        capacity: usize,
        copy: impl FnOnce(&[u8]) -> Result<(), JniError>,
    ) -> Result<i64, JniError> {
        let mut guard = self.lock();
        let output = guard
            .as_mut()
            .ok_or_else(|| JniError::Config("the merge was not started".into()))?;
        let batch = match output.held.take() {
            Some(batch) => batch,
            None if output.ended => return Ok(0),
            None => match output.batches.recv() {
                Ok(Message::Batch(batch)) => batch,
                Ok(Message::End) => {
                    output.ended = true;
                    return Ok(0);
                }
                Ok(Message::Failed(message)) => return Err(JniError::Segment(message)),
                Err(_) => {
                    return Err(JniError::Segment(
                        "the merge thread ended before the stream did".into(),
                    ))
                }
            },
        };
        let length =
            i64::try_from(batch.len()).map_err(|_| JniError::Config("a huge batch".into()))?;
        if batch.len() > capacity {
            output.held = Some(batch);
            return Ok(-length);
        }
        copy(&batch)?;
        // The merge thread reuses the batch's memory; if it has enough spares, it is freed.
        let _ = output.spare.try_send(batch);
        Ok(length)
    }

    fn lock(&self) -> MutexGuard<'_, Option<Output>> {
        self.output.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for NativeMerge {
    fn drop(&mut self) {
        // Dropping the receiver stops the merge thread at its next batch; it is waited for so
        // that its spill files are closed before the directory goes.
        let output = self.lock().take();
        if let Some(mut output) = output {
            let thread = output.thread.take();
            drop(output);
            if let Some(thread) = thread {
                let _ = thread.join();
            }
        }
    }
}

/// The merge thread: merges every run into batches until the stream ends, Java stops
/// reading, or the merge fails (sent as a message, a panic included).
fn produce(
    shared: &Shared,
    runs: Vec<sluice_shuffle::Run>,
    out: &SyncSender<Message>,
    spares: &Receiver<Vec<u8>>,
) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        merge_into_batches(shared, &runs, out, spares)
    }));
    let message = match outcome {
        Ok(Ok(())) => Message::End,
        Ok(Err(e)) => Message::Failed(e.to_string()),
        Err(payload) => Message::Failed(format!(
            "sluice: the merge thread panicked: {}",
            crate::entry::panic_text(payload.as_ref())
        )),
    };
    let _ = out.send(message);
}

fn merge_into_batches(
    shared: &Shared,
    runs: &[sluice_shuffle::Run],
    out: &SyncSender<Message>,
    spares: &Receiver<Vec<u8>>,
) -> Result<(), JniError> {
    let spec = MergeSpec {
        partitions: 1,
        order: &ORDER,
        sum_counts: false,
    };
    let readers = (shared.budget / 4).max(1 << 20);
    let mut merge = merge_partition(runs, 0, spec, readers, &shared.resources)?;
    let mut batch = Vec::with_capacity(BATCH);
    let mut key = Vec::new();
    while merge.advance().map_err(ExecError::from)? {
        key.clear();
        shared.key.to_serialised(merge.key(), &mut key)?;
        let value = merge.value();
        let too_long = |what: &str, len: usize| {
            JniError::Segment(format!(
                "a merged {what} of {len} bytes is too long for Java"
            ))
        };
        let klen = i32::try_from(key.len()).map_err(|_| too_long("key", key.len()))?;
        let vlen = i32::try_from(value.len()).map_err(|_| too_long("value", value.len()))?;
        let need = 8 + key.len() + value.len();
        if !batch.is_empty() && batch.len() + need > BATCH {
            let full = std::mem::replace(&mut batch, next_buffer(spares));
            if out.send(Message::Batch(full)).is_err() {
                // Java stopped reading (the task failed or was killed): nothing more to do.
                return Ok(());
            }
        }
        batch.extend_from_slice(&klen.to_be_bytes());
        batch.extend_from_slice(&vlen.to_be_bytes());
        batch.extend_from_slice(&key);
        batch.extend_from_slice(value);
    }
    if !batch.is_empty() {
        let _ = out.send(Message::Batch(batch));
    }
    Ok(())
}

/// An empty batch buffer: one Java has finished with, or a new one.
fn next_buffer(spares: &Receiver<Vec<u8>>) -> Vec<u8> {
    match spares.try_recv() {
        Ok(mut buffer) => {
            buffer.clear();
            buffer
        }
        Err(TryRecvError::Empty | TryRecvError::Disconnected) => Vec::with_capacity(BATCH),
    }
}

/// Reads IFile records (`vint keyLength, vint valueLength, key, value`, ended by two vints of
/// -1) from a stream that arrives in chunks cut anywhere.
#[derive(Debug, Default)]
pub struct IFileParser {
    /// The start of a record cut by the end of the last chunk.
    pending: Vec<u8>,
    ended: bool,
    /// Bytes taken before the current chunk, for error offsets.
    offset: u64,
}

/// A record header, as far as the bytes at hand go.
enum Header {
    /// More bytes are needed to know.
    Incomplete,
    /// The end marker, of this many bytes.
    End(usize),
    /// A record: header bytes, key length, value length.
    Record(usize, usize, usize),
}

fn header(bytes: &[u8], offset: u64) -> Result<Header, JniError> {
    let mut reader = WritableReader::new(bytes);
    let lengths = reader
        .read_vint()
        .and_then(|k| reader.read_vint().map(|v| (k, v)));
    let (klen, vlen) = match lengths {
        Ok(lengths) => lengths,
        Err(WritableError::Truncated { .. }) => return Ok(Header::Incomplete),
        Err(e) => return Err(JniError::Segment(format!("at byte {offset}: {e}"))),
    };
    if (klen, vlen) == (-1, -1) {
        return Ok(Header::End(reader.position()));
    }
    match (usize::try_from(klen), usize::try_from(vlen)) {
        (Ok(k), Ok(v)) => Ok(Header::Record(reader.position(), k, v)),
        _ => Err(JniError::Segment(format!(
            "a record at byte {offset} has lengths {klen} and {vlen}"
        ))),
    }
}

impl IFileParser {
    /// Whether the end marker was read.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Takes the next chunk of the stream, calling `record` for each complete record.
    ///
    /// # Errors
    /// The bytes are not IFile records, bytes follow the end marker, or `record` failed.
    pub fn feed(
        &mut self,
        chunk: &[u8],
        mut record: impl FnMut(&[u8], &[u8]) -> Result<(), JniError>,
    ) -> Result<(), JniError> {
        let mut at = 0;
        if self.ended && !chunk.is_empty() {
            return Err(self.after_end());
        }
        // First the record the last chunk cut, completed from this one's first bytes.
        while !self.pending.is_empty() {
            match header(&self.pending, self.offset)? {
                Header::Incomplete => {
                    let Some(&byte) = chunk.get(at) else {
                        return Ok(());
                    };
                    self.pending.push(byte);
                    at += 1;
                }
                Header::End(_) => {
                    self.pending.clear();
                    self.ended = true;
                    if at < chunk.len() {
                        return Err(self.after_end());
                    }
                    return Ok(());
                }
                Header::Record(head, k, v) => {
                    let total = head + k + v;
                    let take = (total - self.pending.len()).min(chunk.len() - at);
                    self.pending.extend_from_slice(&chunk[at..at + take]);
                    at += take;
                    if self.pending.len() < total {
                        return Ok(());
                    }
                    record(
                        &self.pending[head..head + k],
                        &self.pending[head + k..total],
                    )?;
                    self.offset += total as u64;
                    self.pending.clear();
                }
            }
        }
        // Then the records that lie whole in this chunk.
        let offset_before = self.offset - at as u64;
        loop {
            let rest = &chunk[at..];
            if rest.is_empty() {
                return Ok(());
            }
            let here = offset_before + at as u64;
            match header(rest, here)? {
                Header::Incomplete => break,
                Header::End(len) => {
                    self.ended = true;
                    self.offset = here + len as u64;
                    if len < rest.len() {
                        return Err(self.after_end());
                    }
                    return Ok(());
                }
                Header::Record(head, k, v) => {
                    let total = head + k + v;
                    if rest.len() < total {
                        break;
                    }
                    record(&rest[head..head + k], &rest[head + k..total])?;
                    at += total;
                    self.offset = offset_before + at as u64;
                }
            }
        }
        self.offset = offset_before + at as u64;
        self.pending.extend_from_slice(&chunk[at..]);
        Ok(())
    }

    fn after_end(&self) -> JniError {
        JniError::Segment(format!(
            "bytes follow IFile's end marker at byte {}",
            self.offset
        ))
    }
}

#[cfg(test)]
mod tests {
    use sluice_hadoop::writable::{write_text, write_vint};

    use super::*;

    /// An IFile stream of `records`.
    fn ifile(records: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (k, v) in records {
            write_vint(&mut out, i32::try_from(k.len()).unwrap());
            write_vint(&mut out, i32::try_from(v.len()).unwrap());
            out.extend_from_slice(k);
            out.extend_from_slice(v);
        }
        out.extend_from_slice(&[0xff, 0xff]);
        out
    }

    fn text_key(word: &str) -> Vec<u8> {
        let mut key = Vec::new();
        write_text(&mut key, word.as_bytes()).unwrap();
        key
    }

    /// The records of `stream` fed in chunks of `size` bytes.
    fn parse_in_chunks(stream: &[u8], size: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut parser = IFileParser::default();
        let mut got = Vec::new();
        for chunk in stream.chunks(size) {
            parser
                .feed(chunk, |k, v| {
                    got.push((k.to_vec(), v.to_vec()));
                    Ok(())
                })
                .unwrap();
        }
        assert!(parser.ended());
        got
    }

    #[test]
    fn records_cut_anywhere_are_read_whole() {
        let records: Vec<(Vec<u8>, Vec<u8>)> = (0..300)
            .map(|i| (vec![b'k'; i % 40], vec![b'v'; (i * 37) % 400]))
            .collect();
        let stream = ifile(&records);
        for size in [1, 2, 3, 7, 64, 1000, stream.len()] {
            assert_eq!(parse_in_chunks(&stream, size), records, "chunks of {size}");
        }
    }

    #[test]
    fn malformed_streams_are_errors() {
        let mut parser = IFileParser::default();
        // A negative key length that is not the end marker.
        let err = parser.feed(&[0xff, 0x01], |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("lengths -1 and 1"), "{err}");
        // Bytes after the end marker.
        let mut parser = IFileParser::default();
        let err = parser
            .feed(&[0x01, 0x00, b'a', 0xff, 0xff, 0x00], |_, _| Ok(()))
            .unwrap_err();
        assert!(
            err.to_string().contains("follow IFile's end marker"),
            "{err}"
        );
        // Cut before the end marker.
        let mut parser = IFileParser::default();
        parser.feed(&[0x01, 0x00], |_, _| Ok(())).unwrap();
        assert!(!parser.ended());
    }

    fn merge(dir: &std::path::Path, budget: usize) -> NativeMerge {
        NativeMerge::new(MergeSettings {
            key: KeyKind::Text,
            budget,
            spill_parent: dir.to_str().unwrap().to_string(),
        })
        .unwrap()
    }

    /// Every batch of a started merge, parsed back into (key, value) records.
    fn read_all(merge: &NativeMerge, capacity: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let mut capacity = capacity;
        loop {
            let mut bytes = Vec::new();
            let n = merge
                .next_batch(capacity, |b| {
                    bytes.extend_from_slice(b);
                    Ok(())
                })
                .unwrap();
            if n == 0 {
                return out;
            }
            if n < 0 {
                capacity = usize::try_from(-n).unwrap();
                continue;
            }
            let mut at = 0;
            while at < bytes.len() {
                let int = |at: usize| {
                    usize::try_from(i32::from_be_bytes(bytes[at..at + 4].try_into().unwrap()))
                        .unwrap()
                };
                let (k, v) = (int(at), int(at + 4));
                out.push((
                    bytes[at + 8..at + 8 + k].to_vec(),
                    bytes[at + 8 + k..at + 8 + k + v].to_vec(),
                ));
                at += 8 + k + v;
            }
        }
    }

    /// Segments of sorted words, some kept in memory and some spilled (a budget too small for
    /// all), merge into every record in Text order, values of a key in commit order.
    #[test]
    fn segments_merge_into_one_sorted_stream_in_memory_and_on_disk() {
        for (budget, expect_disk) in [(64 << 20, false), (256 << 10, true)] {
            let dir = tempfile::tempdir().unwrap();
            let merge = merge(dir.path(), budget);
            let mut want = Vec::new();
            for segment in 0..12u32 {
                let mut words: Vec<String> = (0..3000u32)
                    .map(|i| format!("w{}", (i * 7919 + segment * 13) % 2003))
                    .collect();
                words.sort();
                let records: Vec<(Vec<u8>, Vec<u8>)> = words
                    .iter()
                    .map(|w| (text_key(w), segment.to_be_bytes().to_vec()))
                    .collect();
                want.extend(records.iter().cloned());
                let stream = ifile(&records);
                let mut builder = merge.begin_segment(stream.len() as u64).unwrap();
                for chunk in stream.chunks(10_000) {
                    builder.feed(chunk).unwrap();
                }
                merge.commit(*builder).unwrap();
            }
            // Stable by key: equal keys keep commit (segment) order.
            want.sort_by(|a, b| a.0[1..].cmp(&b.0[1..]));
            let report = merge.finish().unwrap();
            assert_eq!(report.segments, 12);
            assert_eq!(report.records, 36_000);
            assert_eq!(report.disk_bytes > 0, expect_disk, "{report:?}");
            assert_eq!(report.disk_records > 0, expect_disk, "{report:?}");
            assert_eq!(report.segments_in_memory == 12, !expect_disk, "{report:?}");
            let got = read_all(&merge, 4096);
            assert_eq!(got.len(), want.len());
            assert!(got == want, "budget {budget}: merged stream differs");
        }
    }

    #[test]
    fn an_unsorted_segment_or_one_without_its_end_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let merge = merge(dir.path(), 1 << 20);
        let stream = ifile(&[(text_key("b"), vec![]), (text_key("a"), vec![])]);
        let mut builder = merge.begin_segment(stream.len() as u64).unwrap();
        let err = builder.feed(&stream).unwrap_err();
        assert!(err.to_string().contains("out of order"), "{err}");
        let builder = merge.begin_segment(10).unwrap();
        let err = merge.commit(*builder).unwrap_err();
        assert!(err.to_string().contains("end marker"), "{err}");
    }

    /// A merge dropped while its stream is half read stops its thread and removes its files.
    #[test]
    fn a_merge_dropped_mid_stream_stops_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let merge = merge(dir.path(), 64 << 10);
        for segment in 0..4u8 {
            let records: Vec<(Vec<u8>, Vec<u8>)> = (0..20_000u32)
                .map(|i| (text_key(&format!("{i:08}")), vec![segment; 30]))
                .collect();
            let stream = ifile(&records);
            let mut builder = merge.begin_segment(stream.len() as u64).unwrap();
            builder.feed(&stream).unwrap();
            merge.commit(*builder).unwrap();
        }
        merge.finish().unwrap();
        assert!(merge.next_batch(BATCH, |_| Ok(())).unwrap() > 0);
        drop(merge);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
