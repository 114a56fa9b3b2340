//! Moving one task's output between workers: pushed by the worker that ran the task to the
//! workers that own its partitions, or pulled by an owner from the task's worker when a push
//! did not arrive.
//!
//! A task's output is one or more sorted runs. A transfer sends the records of some of their
//! partitions, run by run, so that each run arrives sorted and becomes a run of the receiver's
//! (in memory when its share for held runs has room, else a local spill file). One transfer
//! may carry several tasks' outputs, one after the other: a push batches the small outputs
//! bound for one worker, so that many small tasks cost one transfer, not one each.
//!
//! ```text
//!  'T' {"task":N}            task N's output follows (its runs, up to the next 'T' or 'E')
//!  'R' {"bytes":N}           a run begins; its records to follow take N bytes encoded
//!  'D' partition records...  whole records of one partition (u32 big-endian partition)
//!  'P' partition piece       part of a record too large for a frame; its last part comes in
//!                            the next 'D' frame of the same partition
//!  'E' {"records":N}         the end: the count the receiver checks
//!  'X' reason                the sender cannot send
//! ```
//!
//! The flow is credit-based: the receiver grants frames (`'C'` and a big-endian `u32`),
//! [`WINDOW`] of them first, and more as it has taken them in; a sender out of credit waits.
//! So a receiver whose disk is slow, or whose merge lags, slows its senders down frame by
//! frame, and never holds more than a window of frames in flight per transfer.
//!
//! Every transfer is answered with 'A' once the receiver holds the runs (or 'X'); only then
//! does a pushing sender count the partitions as delivered. The answer is also what ends a
//! transfer cleanly: the sender reads the credit it was granted and never used on its way to
//! it, so neither end closes a connection with bytes unread, which would reset it and could
//! lose the end of what was sent. A receiver keeps the first copy of a task's
//! partition it gets and drops later ones (a task run again after its worker was lost pushes
//! again), so the merge sees every record once.

use std::collections::BTreeSet;
use std::sync::{Arc, RwLock};

use serde::{Deserialize, Serialize};
use sluice_api::ExecError;
use sluice_exec::TaskHost;
use sluice_format::record;
use sluice_shuffle::{EncodedPartition, Run, RunCursor, RunKind, RunSource, RunWriter};
use sluice_sort::{BytesCursor, KeyOrder, SortedCursor};

use crate::link::Link;
use crate::ClusterError;

/// Bytes of records a data frame carries, about.
pub const FRAME_TARGET: usize = 1 << 20;

const TASK: u8 = b'T';
const RUN: u8 = b'R';
const DATA: u8 = b'D';
const PIECE: u8 = b'P';
const END: u8 = b'E';
const FAILED: u8 = b'X';
const ACK: u8 = b'A';
const CREDIT: u8 = b'C';

/// Frames a sender may have in flight before the receiver grants more.
pub const WINDOW: u32 = 8;

#[derive(Serialize, Deserialize)]
struct TaskHeader {
    task: usize,
}

#[derive(Serialize, Deserialize)]
struct RunHeader {
    bytes: u64,
}

#[derive(Serialize, Deserialize)]
struct EndFrame {
    records: u64,
}

/// The sending end of a transfer: frames go out as the receiver's credit allows.
struct Sender<'a> {
    link: &'a mut Link,
    credit: u64,
}

impl Sender<'_> {
    fn send_parts(&mut self, parts: &[&[u8]]) -> Result<(), ClusterError> {
        while self.credit == 0 {
            let peer = self.link.peer().to_string();
            // A receiver that grants nothing within the link's stall limit is stuck: the
            // transfer fails (a push is then pulled instead).
            let Some(frame) = self.link.recv_frame()? else {
                return Err(ClusterError::Protocol {
                    peer,
                    reason: "closed the connection in the middle of a transfer".into(),
                });
            };
            match frame.split_first() {
                Some((&CREDIT, grant)) => self.credit += u64::from(read_credit(grant, &peer)?),
                Some((&FAILED, reason)) => {
                    return Err(ClusterError::Protocol {
                        peer,
                        reason: format!(
                            "stopped the transfer: {}",
                            String::from_utf8_lossy(reason)
                        ),
                    })
                }
                _ => {
                    return Err(ClusterError::Protocol {
                        peer,
                        reason: "answered with something else than credit".into(),
                    })
                }
            }
        }
        self.credit -= 1;
        self.link.send_parts(parts)
    }
}

fn read_credit(grant: &[u8], peer: &str) -> Result<u32, ClusterError> {
    <[u8; 4]>::try_from(grant)
        .map(u32::from_be_bytes)
        .map_err(|_| ClusterError::Protocol {
            peer: peer.to_string(),
            reason: format!("a credit frame of {} bytes", grant.len()),
        })
}

/// Grants `frames` more frames to the sender at the other end of `link`.
fn grant(link: &mut Link, frames: u32) -> Result<(), ClusterError> {
    link.send_parts(&[&[CREDIT], &frames.to_be_bytes()])
}

/// Some partitions of one task's output, to send.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskOutput<'a> {
    /// The task that made the runs.
    pub task: usize,
    /// The task's output.
    pub runs: &'a [Run],
    /// The partitions to send, ascending.
    pub partitions: &'a [usize],
}

/// One task's output as received: runs holding only what was sent.
#[derive(Debug)]
pub(crate) struct ReceivedOutput {
    /// The task that made the runs.
    pub task: usize,
    /// The runs, in the sender's order.
    pub runs: Vec<Run>,
}

/// Sends `outputs`, each task's partitions of every one of its runs, as the receiver's
/// credit allows; returns the records sent.
pub(crate) fn send(link: &mut Link, outputs: &[TaskOutput<'_>]) -> Result<u64, ClusterError> {
    let mut sender = Sender { link, credit: 0 };
    let link = &mut sender;
    let mut records = 0u64;
    let mut frame = Vec::with_capacity(FRAME_TARGET + 1024);
    for output in outputs {
        link.send_parts(&[&[TASK], &json(&TaskHeader { task: output.task })?])?;
        records += send_runs(link, output.runs, output.partitions, &mut frame)?;
    }
    link.send_parts(&[&[END], &json(&EndFrame { records })?])?;
    Ok(records)
}

/// Sends `partitions` (ascending) of every run of `runs`, in `frame`-sized data frames;
/// returns the records sent.
fn send_runs(
    link: &mut Sender<'_>,
    runs: &[Run],
    partitions: &[usize],
    frame: &mut Vec<u8>,
) -> Result<u64, ClusterError> {
    let mut records = 0u64;
    for run in runs {
        let wanted: Vec<usize> = partitions
            .iter()
            .copied()
            .filter(|p| run.has_records(*p))
            .collect();
        let bytes: u64 = wanted
            .iter()
            .map(|p| run.partition_bytes(*p).unwrap_or(0))
            .sum();
        link.send_parts(&[&[RUN], &json(&RunHeader { bytes })?])?;
        // A run in memory holds its records encoded as a frame carries them: they go as
        // they are, straight from the run's buffer.
        let image = run.memory_image();
        for p in wanted {
            let tag = u32::try_from(p)
                .map_err(|_| ClusterError::Setup(format!("partition {p} does not fit a frame")))?
                .to_be_bytes();
            if let Some(encoded) = image.and_then(|image| image.partition(p)) {
                send_encoded(link, tag, &encoded)?;
                records += encoded.records;
                continue;
            }
            let mut cursor = run.open(p).map_err(ClusterError::Exec)?;
            start(frame, DATA, tag);
            while cursor
                .advance()
                .map_err(|e| ClusterError::Exec(ExecError::from(e)))?
            {
                let (key, value) = (cursor.key(), cursor.value());
                let len = record::encoded_len(key.len(), value.len());
                if frame.len() > 5 && frame.len() + len > FRAME_TARGET {
                    link.send_parts(&[frame])?;
                    start(frame, DATA, tag);
                }
                record::encode(frame, key, value)
                    .map_err(|e| ClusterError::Exec(ExecError::from(e)))?;
                records += 1;
                if frame.len() > FRAME_TARGET {
                    // One record larger than a frame: all but its last part as pieces.
                    let encoded = frame.split_off(5);
                    let mut rest = &encoded[..];
                    while rest.len() > FRAME_TARGET {
                        let (piece, tail) = rest.split_at(FRAME_TARGET);
                        link.send_parts(&[&[PIECE], &tag, piece])?;
                        rest = tail;
                    }
                    link.send_parts(&[&[DATA], &tag, rest])?;
                    start(frame, DATA, tag);
                }
            }
            if frame.len() > 5 {
                link.send_parts(&[frame])?;
            }
        }
    }
    Ok(records)
}

/// Sends a partition of a run in memory (`tag` its number) in data frames of up to
/// [`FRAME_TARGET`] bytes cut between records, each straight from the run's buffer; a record
/// larger than a frame goes in pieces.
fn send_encoded(
    link: &mut Sender<'_>,
    tag: [u8; 4],
    encoded: &EncodedPartition<'_>,
) -> Result<(), ClusterError> {
    for chunk in encoded.chunks(FRAME_TARGET) {
        let mut rest = chunk.map_err(|e| ClusterError::Exec(e.into()))?;
        // One record larger than a frame: all but its last part as pieces.
        while rest.len() > FRAME_TARGET {
            let (piece, tail) = rest.split_at(FRAME_TARGET);
            link.send_parts(&[&[PIECE], &tag, piece])?;
            rest = tail;
        }
        link.send_parts(&[&[DATA], &tag, rest])?;
    }
    Ok(())
}

fn start(frame: &mut Vec<u8>, tag: u8, partition: [u8; 4]) {
    frame.clear();
    frame.push(tag);
    frame.extend_from_slice(&partition);
}

/// Tells the sender why its transfer cannot be served.
pub(crate) fn refuse(link: &mut Link, reason: &str) {
    let _ = link.send_parts(&[&[FAILED], reason.as_bytes()]);
}

/// Acknowledges a transfer: the receiver holds the runs.
pub(crate) fn acknowledge(link: &mut Link) -> Result<(), ClusterError> {
    link.send_parts(&[&[ACK]])
}

/// Waits for a transfer's acknowledgement, reading the credit granted and not used.
pub(crate) fn acknowledged(link: &mut Link) -> Result<(), ClusterError> {
    let peer = link.peer().to_string();
    // Credit the receiver granted for frames never sent comes first.
    let mut answer = link.recv_frame()?;
    while answer.as_ref().and_then(|f| f.first()) == Some(&CREDIT) {
        answer = link.recv_frame()?;
    }
    match answer {
        Some(frame) if frame.first() == Some(&ACK) => Ok(()),
        Some(frame) if frame.first() == Some(&FAILED) => Err(ClusterError::Protocol {
            peer,
            reason: format!(
                "refused the transfer: {}",
                String::from_utf8_lossy(&frame[1..])
            ),
        }),
        Some(_) => Err(ClusterError::Protocol {
            peer,
            reason: "answered a transfer with something else than an acknowledgement".into(),
        }),
        None => Err(ClusterError::Protocol {
            peer,
            reason: "closed the connection before acknowledging the transfer".into(),
        }),
    }
}

/// Receives a transfer of tasks' runs of a stage of `partitions` partitions into `host`'s
/// memory or spill files. Returns each task's runs (each holding only what was sent), in
/// the order sent.
pub(crate) fn receive(
    link: &mut Link,
    host: &TaskHost,
    partitions: usize,
) -> Result<Vec<ReceivedOutput>, ClusterError> {
    let peer = link.peer().to_string();
    let bad = |reason: String| ClusterError::Protocol {
        peer: peer.clone(),
        reason,
    };
    let mut outputs: Vec<ReceivedOutput> = Vec::new();
    let mut writer: Option<Box<dyn RunWriter>> = None;
    let mut last_partition = 0usize;
    let mut pieces: Vec<u8> = Vec::new();
    let mut records = 0u64;
    grant(link, WINDOW)?;
    let mut taken = 0u32;
    loop {
        let Some(frame) = link.recv_frame()? else {
            return Err(bad("the transfer ended before its end frame".into()));
        };
        // Half a window taken in: that much more may come.
        taken += 1;
        if taken == WINDOW / 2 {
            grant(link, taken)?;
            taken = 0;
        }
        let Some((&tag, body)) = frame.split_first() else {
            return Err(bad("an empty frame".into()));
        };
        match tag {
            TASK => {
                finish_run(&mut writer, &mut outputs)?;
                if !pieces.is_empty() {
                    return Err(bad("a record cut short by the next task".into()));
                }
                let header: TaskHeader = serde_json::from_slice(body)
                    .map_err(|e| bad(format!("a bad task header: {e}")))?;
                outputs.push(ReceivedOutput {
                    task: header.task,
                    runs: Vec::new(),
                });
            }
            RUN => {
                if outputs.is_empty() {
                    return Err(bad("a run before its task".into()));
                }
                finish_run(&mut writer, &mut outputs)?;
                if !pieces.is_empty() {
                    return Err(bad("a record cut short by the next run".into()));
                }
                let header: RunHeader = serde_json::from_slice(body)
                    .map_err(|e| bad(format!("a bad run header: {e}")))?;
                writer = Some(
                    host.run_writer(partitions, header.bytes)
                        .map_err(ClusterError::Exec)?,
                );
                last_partition = 0;
            }
            DATA | PIECE => {
                let Some(w) = writer.as_mut() else {
                    return Err(bad("records before a run header".into()));
                };
                let (partition, data) = match body.split_first_chunk::<4>() {
                    Some((p, data)) => (u32::from_be_bytes(*p), data),
                    None => return Err(bad("a data frame without its partition".into())),
                };
                let partition = usize::try_from(partition).unwrap_or(usize::MAX);
                if partition >= partitions || partition < last_partition {
                    return Err(bad(format!(
                        "partition {partition} out of order or range (of {partitions})"
                    )));
                }
                last_partition = partition;
                if tag == PIECE {
                    pieces.extend_from_slice(data);
                    continue;
                }
                let joined;
                let chunk = if pieces.is_empty() {
                    data
                } else {
                    let mut whole = std::mem::take(&mut pieces);
                    whole.extend_from_slice(data);
                    joined = whole;
                    &joined[..]
                };
                records += w.write_encoded(partition, chunk).map_err(|e| match e {
                    ExecError::Format(e) => bad(format!("a corrupt record: {e}")),
                    e => ClusterError::Exec(e),
                })?;
            }
            END => {
                let end: EndFrame = serde_json::from_slice(body)
                    .map_err(|e| bad(format!("a bad end frame: {e}")))?;
                if end.records != records || !pieces.is_empty() {
                    return Err(bad(format!(
                        "{} records sent, {records} received",
                        end.records
                    )));
                }
                finish_run(&mut writer, &mut outputs)?;
                return Ok(outputs);
            }
            FAILED => {
                return Err(bad(format!(
                    "cannot send: {}",
                    String::from_utf8_lossy(body)
                )))
            }
            other => return Err(bad(format!("a frame of unknown kind {other:#04x}"))),
        }
    }
}

/// Adds the run `writer` was writing, if any, to the last task's runs.
fn finish_run(
    writer: &mut Option<Box<dyn RunWriter>>,
    outputs: &mut [ReceivedOutput],
) -> Result<(), ClusterError> {
    if let (Some(w), Some(output)) = (writer.take(), outputs.last_mut()) {
        output.runs.push(w.finish().map_err(ClusterError::Exec)?);
    }
    Ok(())
}

/// A run seen through a set of its partitions: a worker keeps, of each copy of a task's
/// output it gets, only the partitions it had no copy of.
///
/// What it shows may be swapped for another run with the same records in those partitions
/// ([`Only::replace`]): a worker that moves a task's whole output out of memory keeps its own
/// partitions in a smaller run. Cursors opened before a swap read on from the run they opened.
#[derive(Debug)]
pub(crate) struct Only {
    run: RwLock<Run>,
    partitions: Arc<BTreeSet<usize>>,
}

impl Only {
    /// `run`, showing only `partitions` (until [`Only::replace`]d).
    pub(crate) fn view(run: Run, partitions: Arc<BTreeSet<usize>>) -> Arc<Only> {
        Arc::new(Only {
            run: RwLock::new(run),
            partitions,
        })
    }

    /// The partitions shown.
    pub(crate) fn partitions(&self) -> &BTreeSet<usize> {
        &self.partitions
    }

    /// Whether the run shown is `run`.
    pub(crate) fn shows(&self, run: &Run) -> bool {
        Arc::ptr_eq(&self.inner(), run)
    }

    /// Shows `run` from now on; it must hold the same records in the partitions shown.
    pub(crate) fn replace(&self, run: Run) {
        *self.run.write().unwrap_or_else(|p| p.into_inner()) = run;
    }

    fn inner(&self) -> Run {
        Arc::clone(&self.run.read().unwrap_or_else(|p| p.into_inner()))
    }
}

impl RunSource for Only {
    fn kind(&self) -> RunKind {
        self.inner().kind()
    }
    fn has_records(&self, partition: usize) -> bool {
        self.partitions.contains(&partition) && self.inner().has_records(partition)
    }
    fn bytes(&self) -> u64 {
        self.inner().bytes()
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        if self.partitions.contains(&partition) {
            self.inner().open(partition)
        } else {
            Ok(RunCursor::Other(Box::new(BytesCursor::new(
                Vec::<u8>::new(),
            ))))
        }
    }
    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        if self.partitions.contains(&partition) {
            self.inner().partition_bytes(partition)
        } else {
            Some(0)
        }
    }
    fn open_at(
        &self,
        partition: usize,
        key: &[u8],
        order: &KeyOrder,
    ) -> Result<RunCursor, ExecError> {
        if self.partitions.contains(&partition) {
            self.inner().open_at(partition, key, order)
        } else {
            self.open(partition)
        }
    }
    fn sample_keys(&self, partition: usize, count: usize) -> Result<Vec<Vec<u8>>, ExecError> {
        if self.partitions.contains(&partition) {
            self.inner().sample_keys(partition, count)
        } else {
            Ok(Vec::new())
        }
    }
}

fn json<T: Serialize>(value: &T) -> Result<Vec<u8>, ClusterError> {
    serde_json::to_vec(value).map_err(|e| ClusterError::Setup(format!("cannot serialise: {e}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::BTreeMap;
    use std::sync::Arc;
    use std::time::Duration;

    use sluice_api::{Emit, ExecError, Job, JobStatus, Mapper, Reducer, Stage, Values};
    use sluice_exec::{HostSettings, TaskHost};

    use sluice_shuffle::{MemRunBuilder, MemRunQuota, Run, RunSink};
    use sluice_sort::SortedCursor;
    use sluice_spill::MemoryPool;

    use super::*;
    use crate::link::testing::pair;
    use crate::link::{Link, Net};

    struct Nothing;
    impl Mapper for Nothing {
        fn map(&mut self, _: u64, _: &[u8], _: &mut dyn Emit) -> Result<(), ExecError> {
            Ok(())
        }
    }
    impl Reducer for Nothing {
        fn reduce(
            &mut self,
            _: &[u8],
            _: &mut Values<'_>,
            _: &mut dyn Emit,
        ) -> Result<(), ExecError> {
            Ok(())
        }
    }

    const PARTITIONS: usize = 4;

    fn host(dir: &std::path::Path) -> TaskHost {
        let job = Job::new("t", |_| Nothing).with_stage(Stage::new(PARTITIONS, |_| Nothing));
        let settings = HostSettings::new(64 << 20, 1, dir.to_path_buf());
        TaskHost::new(&job, &settings, Arc::new(JobStatus::default())).unwrap()
    }

    /// A memory run holding `records` (partition, key, value), sorted by the caller.
    fn run(records: &[(usize, Vec<u8>, Vec<u8>)]) -> Run {
        let quota = MemRunQuota::new(MemoryPool::new(1 << 30), 1 << 30);
        let bytes: usize = records.iter().map(|(_, k, v)| k.len() + v.len() + 20).sum();
        let mut builder = MemRunBuilder::new(PARTITIONS, bytes, quota.try_reserve(bytes).unwrap());
        for (p, k, v) in records {
            builder.write(*p, k, v).unwrap();
        }
        Arc::new(builder.finish())
    }

    /// Records by partition: (key, value) pairs in run order.
    type Contents = BTreeMap<usize, Vec<(Vec<u8>, Vec<u8>)>>;

    /// Every record of every run, by partition, in run order.
    fn contents(runs: &[Run]) -> Contents {
        let mut all = BTreeMap::new();
        for p in 0..PARTITIONS {
            for run in runs {
                if !run.has_records(p) {
                    continue;
                }
                let mut cursor = run.open(p).unwrap();
                while cursor.advance().unwrap() {
                    all.entry(p)
                        .or_insert_with(Vec::new)
                        .push((cursor.key().to_vec(), cursor.value().to_vec()));
                }
            }
        }
        all
    }

    /// What a worker's sending side does: sends, then waits for the answer.
    fn send_acknowledged(link: &mut Link, outputs: &[TaskOutput<'_>]) -> u64 {
        let records = send(link, outputs).unwrap();
        acknowledged(link).unwrap();
        records
    }

    /// What a worker's receiving side does: receives, then answers.
    fn receive_acknowledging(
        link: &mut Link,
        host: &TaskHost,
        partitions: usize,
    ) -> Vec<ReceivedOutput> {
        let got = receive(link, host, partitions).unwrap();
        acknowledge(link).unwrap();
        got
    }

    #[test]
    fn runs_arrive_whole_even_with_records_larger_than_a_frame() {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path());
        let net = Net::new().unwrap();
        let big = vec![7u8; 2 * FRAME_TARGET + 123];
        let first = run(&[
            (0, b"a".to_vec(), b"1".to_vec()),
            (1, b"b".to_vec(), big.clone()),
            (1, b"c".to_vec(), Vec::new()),
            (3, b"d".to_vec(), b"4".to_vec()),
        ]);
        let second = run(&[
            (1, b"a".to_vec(), b"x".to_vec()),
            (2, Vec::new(), b"y".to_vec()),
        ]);
        let runs = vec![first, second];
        let (mut sender, mut receiver) = pair(&net);
        let wanted = [1usize, 2, 3];
        let sent = std::thread::scope(|s| {
            let output = TaskOutput {
                task: 7,
                runs: &runs,
                partitions: &wanted,
            };
            let sending = s.spawn(move || send_acknowledged(&mut sender, &[output]));
            let got = receive_acknowledging(&mut receiver, &host, PARTITIONS);
            (sending.join().unwrap(), got)
        });
        let (records, mut got) = sent;
        assert_eq!(records, 5);
        assert_eq!(got.len(), 1, "one task sent");
        assert_eq!(got[0].task, 7);
        let got = got.remove(0).runs;
        assert_eq!(got.len(), 2, "one run received per run sent");
        let mut expected = contents(&runs);
        expected.remove(&0);
        assert_eq!(contents(&got), expected);
        assert_eq!(contents(&got)[&1][0].1.len(), big.len());
    }

    #[test]
    fn a_partition_of_many_frames_arrives_record_for_record_with_a_huge_one_among_them() {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path());
        let net = Net::new().unwrap();
        // Partition 1: small records over several frames, a record larger than a frame after
        // them (what was gathered goes first), then small ones again; partition 2: records
        // whose sizes vary, so that frames end at different places.
        let mut records = Vec::new();
        for i in 0..40_000u32 {
            records.push((1, format!("a{i:08}").into_bytes(), vec![b'v'; 60]));
        }
        records.push((1, b"b".to_vec(), vec![3u8; FRAME_TARGET + FRAME_TARGET / 2]));
        for i in 0..10_000u32 {
            records.push((1, format!("c{i:08}").into_bytes(), i.to_be_bytes().to_vec()));
        }
        for i in 0..20_000usize {
            records.push((2, format!("d{i:08}").into_bytes(), vec![b'w'; i % 300]));
        }
        let runs = vec![run(&records)];
        let (mut sender, mut receiver) = pair(&net);
        let wanted = [1usize, 2];
        let (sent, got) = std::thread::scope(|s| {
            let output = TaskOutput {
                task: 3,
                runs: &runs,
                partitions: &wanted,
            };
            let sending = s.spawn(move || send_acknowledged(&mut sender, &[output]));
            let got = receive_acknowledging(&mut receiver, &host, PARTITIONS);
            (sending.join().unwrap(), got)
        });
        assert_eq!(sent, 70_001);
        let mut expected: Contents = BTreeMap::new();
        for (p, k, v) in records {
            expected.entry(p).or_default().push((k, v));
        }
        assert_eq!(contents(&got[0].runs), expected);
    }

    #[test]
    fn a_batch_of_tasks_arrives_as_each_task_s_runs() {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path());
        let net = Net::new().unwrap();
        let first = vec![run(&[
            (0, b"a".to_vec(), b"1".to_vec()),
            (2, b"b".to_vec(), b"2".to_vec()),
        ])];
        let empty: Vec<Run> = vec![run(&[])];
        let third = vec![
            run(&[(2, b"c".to_vec(), b"3".to_vec())]),
            run(&[(3, b"d".to_vec(), b"4".to_vec())]),
        ];
        let (mut sender, mut receiver) = pair(&net);
        let wanted = [2usize, 3];
        let outputs = [
            TaskOutput {
                task: 4,
                runs: &first,
                partitions: &wanted,
            },
            TaskOutput {
                task: 9,
                runs: &empty,
                partitions: &wanted,
            },
            TaskOutput {
                task: 1,
                runs: &third,
                partitions: &wanted,
            },
        ];
        let (records, got) = std::thread::scope(|s| {
            let sending = s.spawn(move || send_acknowledged(&mut sender, &outputs));
            let got = receive_acknowledging(&mut receiver, &host, PARTITIONS);
            (sending.join().unwrap(), got)
        });
        assert_eq!(records, 3);
        let tasks: Vec<usize> = got.iter().map(|o| o.task).collect();
        assert_eq!(tasks, [4, 9, 1]);
        let b = (b"b".to_vec(), b"2".to_vec());
        assert_eq!(contents(&got[0].runs), BTreeMap::from([(2, vec![b])]));
        assert_eq!(contents(&got[1].runs), BTreeMap::new());
        let c = (b"c".to_vec(), b"3".to_vec());
        let d = (b"d".to_vec(), b"4".to_vec());
        assert_eq!(
            contents(&got[2].runs),
            BTreeMap::from([(2, vec![c]), (3, vec![d])])
        );
        assert_eq!(got[2].runs.len(), 2, "the third task's two runs stay two");
    }

    #[test]
    fn a_sender_sends_no_more_frames_than_it_was_granted() {
        let net = Net::new().unwrap();
        let records: Vec<(usize, Vec<u8>, Vec<u8>)> = (0..6u8)
            .map(|i| (1, vec![i], vec![i; FRAME_TARGET / 2 + 10]))
            .collect();
        let runs = vec![run(&records)];
        let (mut sender, mut receiver) = pair(&net);
        std::thread::scope(|s| {
            let output = TaskOutput {
                task: 0,
                runs: &runs,
                partitions: &[1],
            };
            let sending = s.spawn(move || send_acknowledged(&mut sender, &[output]));
            grant(&mut receiver, 2).unwrap();
            let wait = Duration::from_millis(300);
            for _ in 0..2 {
                assert!(receiver.recv_frame_within(wait).unwrap().is_some());
            }
            assert!(
                receiver.recv_frame_within(wait).is_err(),
                "a frame came without credit"
            );
            grant(&mut receiver, 100).unwrap();
            let mut frames = 2;
            loop {
                let frame = receiver
                    .recv_frame_within(Duration::from_secs(5))
                    .unwrap()
                    .unwrap();
                frames += 1;
                if frame[0] == END {
                    break;
                }
            }
            // A task header, a run header, a data frame per record (each over half a
            // frame), the end.
            assert_eq!(frames, 1 + 1 + 6 + 1);
            acknowledge(&mut receiver).unwrap();
            assert_eq!(sending.join().unwrap(), 6);
        });
    }

    #[test]
    fn a_transfer_cut_short_is_an_error_not_a_shorter_run() {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path());
        let net = Net::new().unwrap();
        let (mut sender, mut receiver) = pair(&net);
        sender.send_parts(&[&[TASK], br#"{"task":0}"#]).unwrap();
        sender.send_parts(&[&[RUN], br#"{"bytes":10}"#]).unwrap();
        let mut frame = vec![DATA, 0, 0, 0, 1];
        record::encode(&mut frame, b"k", b"v").unwrap();
        sender.send_parts(&[&frame]).unwrap();
        drop(sender);
        let err = receive(&mut receiver, &host, PARTITIONS).unwrap_err();
        assert!(err.to_string().contains("before its end frame"), "{err}");
    }

    #[test]
    fn counts_partitions_and_unknown_frames_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path());
        let net = Net::new().unwrap();
        let task = [&[TASK][..], br#"{"task":0}"#].concat();
        let run = [&[RUN][..], br#"{"bytes":0}"#].concat();
        let cases: Vec<(Vec<Vec<u8>>, &str)> = vec![
            (vec![vec![DATA, 0, 0, 0, 0]], "before a run header"),
            (vec![run.clone()], "a run before its task"),
            (
                vec![task.clone(), run.clone(), vec![DATA, 0, 0, 0, 9]],
                "out of order or range",
            ),
            (
                vec![
                    task.clone(),
                    run.clone(),
                    [&[END][..], br#"{"records":3}"#].concat(),
                ],
                "3 records sent, 0 received",
            ),
            (
                vec![
                    task.clone(),
                    run.clone(),
                    vec![PIECE, 0, 0, 0, 1, 0, 0],
                    task.clone(),
                ],
                "cut short by the next task",
            ),
            (vec![vec![b'?']], "unknown kind"),
            (
                vec![[&[FAILED][..], b"no such task"].concat()],
                "no such task",
            ),
        ];
        for (frames, expected) in cases {
            let (mut sender, mut receiver) = pair(&net);
            for frame in &frames {
                sender.send_parts(&[frame]).unwrap();
            }
            let err = receive(&mut receiver, &host, PARTITIONS).unwrap_err();
            assert!(err.to_string().contains(expected), "{expected}: {err}");
        }
    }

    #[test]
    fn only_shows_its_partitions() {
        let inner = run(&[
            (0, b"a".to_vec(), b"1".to_vec()),
            (2, b"b".to_vec(), b"2".to_vec()),
        ]);
        let only: Run = Only::view(inner, Arc::new([2usize].into_iter().collect()));
        assert!(!only.has_records(0));
        assert!(only.has_records(2));
        assert_eq!(only.partition_bytes(0), Some(0));
        assert!(!only.open(0).unwrap().advance().unwrap());
        let mut c = only.open(2).unwrap();
        assert!(c.advance().unwrap());
        assert_eq!((c.key(), c.value()), (&b"b"[..], &b"2"[..]));
    }

    /// A view swapped to another run with the same records in its partitions shows the same;
    /// a cursor opened before the swap reads on from the run it opened.
    #[test]
    fn a_view_swapped_to_a_copy_reads_the_same() {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path());
        let whole = run(&[
            (0, b"a".to_vec(), b"1".to_vec()),
            (2, b"b".to_vec(), b"2".to_vec()),
            (2, b"c".to_vec(), b"3".to_vec()),
        ]);
        let view = Only::view(Arc::clone(&whole), Arc::new([2usize].into_iter().collect()));
        let shown: Run = Arc::clone(&view) as Run;
        let before = contents(std::slice::from_ref(&shown));
        let mut early = shown.open(2).unwrap();
        assert!(view.shows(&whole));
        let stored = host.store_run(&whole, PARTITIONS).unwrap();
        assert_eq!(stored.kind(), RunKind::Stored);
        view.replace(Arc::clone(&stored));
        assert!(view.shows(&stored) && !view.shows(&whole));
        assert_eq!(contents(std::slice::from_ref(&shown)), before);
        let copy = host.copy_partitions(&stored, PARTITIONS, &[2]).unwrap();
        assert_eq!(copy.kind(), RunKind::Memory);
        view.replace(copy);
        drop(whole);
        assert_eq!(contents(std::slice::from_ref(&shown)), before);
        assert!(!shown.has_records(0));
        let mut read = Vec::new();
        while early.advance().unwrap() {
            read.push(early.key().to_vec());
        }
        assert_eq!(read, vec![b"b".to_vec(), b"c".to_vec()]);
    }

    /// A task's output kept on disk (moved out of memory) is served to a pull as it was.
    #[test]
    fn an_output_moved_to_disk_is_sent_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let host = host(dir.path());
        let net = Net::new().unwrap();
        let records: Vec<(usize, Vec<u8>, Vec<u8>)> = (0..2_000u32)
            .map(|i| {
                let p = (i % 4) as usize;
                (
                    p,
                    format!("{p}-{i:06}").into_bytes(),
                    vec![b'x'; (i % 13) as usize],
                )
            })
            .collect();
        let mut sorted = records.clone();
        sorted.sort();
        let memory = run(&sorted);
        let stored = host.store_run(&memory, PARTITIONS).unwrap();
        assert_eq!(stored.kind(), RunKind::Stored);
        let runs = vec![stored];
        let wanted = [0usize, 3];
        let (mut sender, mut receiver) = pair(&net);
        let got = std::thread::scope(|s| {
            let output = TaskOutput {
                task: 2,
                runs: &runs,
                partitions: &wanted,
            };
            let sending = s.spawn(move || send_acknowledged(&mut sender, &[output]));
            let got = receive_acknowledging(&mut receiver, &host, PARTITIONS);
            sending.join().unwrap();
            got
        });
        let mut expected = contents(std::slice::from_ref(&memory));
        expected.retain(|p, _| wanted.contains(p));
        assert_eq!(expected.values().map(Vec::len).sum::<usize>(), 1_000);
        assert_eq!(contents(&got[0].runs), expected);
    }
}
