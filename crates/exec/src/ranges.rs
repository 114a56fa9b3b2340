//! A large partition of the last stage reduced as key ranges on threads of their own.
//!
//! When a stage's reducer keeps no state across keys (`Stage::independent_keys`), ranges of
//! keys reduced apart and joined in key order give the bytes one reducer would. The task cuts
//! its partition at sampled keys (`sluice_shuffle::split_points`), merges through disk first
//! if its spill files are more than each range can read at once, then runs range 0 on its own
//! thread, straight into the part file, and every other range on a thread of its own with its
//! own reducer, into a buffer that is appended to the part file once the ranges before it are
//! in. A range's buffer stays in memory within its share of the task's and goes to a scratch
//! file beyond it. The task still writes one part file through the committer; a failure of
//! any range stops the others and fails the task with nothing committed.
//!
//! ```text
//!  partition ─► split_points ─► prepare_partition ─┬─ range 0: merge_range ─► reducer ─► part file
//!                                                  ├─ range 1: merge_range ─► reducer ─► buffer ─┐
//!                                                  └─ range 2: ...                     ─► buffer ─┤
//!                                                          appended in order, then committed ◄──┘
//! ```

use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_api::{CounterValues, Emit, ExecError, Job, Stage, TaskContext};
use sluice_io::JobCommitter;
use sluice_shuffle::policy::READER_COST;
use sluice_shuffle::{
    merge_range, prepare_partition, KeyRange, MergeSpec, Resources, Run, RunKind,
};
use sluice_spill::{MemoryReservation, ScratchFile, SpillError};

use crate::part_file::{LineFormat, TextOutput};
use crate::reduce::ReduceInput;
use crate::shared::Shared;

/// What one range read: records and groups.
#[derive(Debug, Default, Clone, Copy)]
struct RangeCounts {
    records: u64,
    groups: u64,
}

/// Reduces `partition` (`ctx.task`) of the last stage as the key ranges that `points` cut it
/// into, on `points.len() + 1` threads (this one included), into one part file.
///
/// # Errors
/// The first range's error (one that is not the others' stopping), or the job's cancellation.
pub(crate) fn reduce_ranges(
    ctx: &TaskContext,
    runs: &[Run],
    stage: &Stage,
    committer: &dyn JobCommitter,
    job: &Job,
    res: &Shared,
    points: &[Vec<u8>],
) -> Result<(), ExecError> {
    let partition = ctx.task;
    let status = res.runs.status();
    let write_chunk = res.runs.write_chunk();
    let ranges = points.len() + 1;
    // Each range has an equal share of the task's memory beside the part file's writer: at
    // most half for the readers of its spill files (passes through disk first if they need
    // more), the rest for its output while it waits for the ranges before it.
    let range_share = res.task_share.saturating_sub(2 * write_chunk) / ranges;
    let spec = MergeSpec::of(stage);
    let sources = prepare_partition(
        runs,
        partition,
        spec,
        res.task_share.saturating_sub(2 * write_chunk),
        range_share / 2,
        &res.runs,
    )?;
    let stored = sources
        .iter()
        .filter(|run| run.kind() == RunKind::Stored)
        .count();
    let buffer = range_share.saturating_sub(stored.saturating_mul(READER_COST));
    let mut out = TextOutput::create(
        committer,
        &job.part_names.name(false, partition),
        ctx.attempt,
        &job.output,
        job.output_codec,
        job.lazy_output,
        write_chunk,
    )?;
    let format = out.format().cloned().ok_or_else(|| {
        ExecError::Config("a SequenceFile part file cannot be written as key ranges".into())
    })?;
    let range = |i: usize| KeyRange {
        from: i.checked_sub(1).map(|j| points[j].as_slice()),
        to: points.get(i).map(Vec::as_slice),
    };
    let stop = AtomicBool::new(false);
    let mut failure = Failure::default();
    let mut totals = RangeCounts::default();
    std::thread::scope(|scope| {
        let (sources, stop) = (&sources, &stop);
        let others: Vec<_> = (1..ranges)
            .map(|i| {
                let format = format.clone();
                scope.spawn(move || {
                    let mut output = RangeOutput::new(format, buffer, write_chunk, &res.runs);
                    let result =
                        reduce_range(ctx, sources, stage, range(i), res, stop, &mut output);
                    if result.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    result.map(|counts| (counts, output))
                })
            })
            .collect();
        match reduce_range(ctx, sources, stage, range(0), res, stop, &mut out) {
            Ok(counts) => totals.add(counts),
            Err(e) => {
                stop.store(true, Ordering::Relaxed);
                failure.note(e);
            }
        }
        // In key order: each range's output follows the ranges before it.
        for other in others {
            let (counts, output) = match other.join() {
                Ok(Ok(done)) => done,
                Ok(Err(e)) => {
                    failure.note(e);
                    continue;
                }
                Err(panic) => std::panic::resume_unwind(panic),
            };
            totals.add(counts);
            if failure.0.is_none() {
                if let Err(e) = output.append_to(&mut out) {
                    stop.store(true, Ordering::Relaxed);
                    failure.note(e);
                }
            }
        }
    });
    // As a whole task does: a stop the job's cancellation caused is reported as that.
    res.runs.check_cancelled()?;
    if let Some(e) = failure.0 {
        return Err(e);
    }
    let (records, bytes) = out.finish()?;
    let counted = CounterValues {
        output_records: records,
        output_bytes: bytes,
        reduce_input_groups: totals.groups,
        reduce_input_records: totals.records,
        reduce_ranges: u64::try_from(ranges).unwrap_or(u64::MAX),
        ..CounterValues::default()
    };
    status.count(ctx, &counted);
    Ok(())
}

impl RangeCounts {
    fn add(&mut self, other: RangeCounts) {
        self.records += other.records;
        self.groups += other.groups;
    }
}

/// The error a split task reports: the first range's that is not a stop another range's
/// failure caused.
#[derive(Default)]
struct Failure(Option<ExecError>);

impl Failure {
    fn note(&mut self, error: ExecError) {
        let replace = match &self.0 {
            None => true,
            Some(ExecError::Cancelled) => !matches!(error, ExecError::Cancelled),
            Some(_) => false,
        };
        if replace {
            self.0 = Some(error);
        }
    }
}

/// Merges and reduces one key range of the partition into `out` with a reducer of its own.
fn reduce_range(
    ctx: &TaskContext,
    sources: &[Run],
    stage: &Stage,
    range: KeyRange<'_>,
    res: &Shared,
    stop: &AtomicBool,
    out: &mut dyn Emit,
) -> Result<RangeCounts, ExecError> {
    let merge = merge_range(sources, ctx.task, MergeSpec::of(stage), range, &res.runs)?;
    let mut input = ReduceInput::new(merge, &res.runs, Some(stop));
    let mut reducer = (stage.reducer)(ctx);
    reducer.run(&mut input, out)?;
    Ok(RangeCounts {
        records: input.records,
        groups: input.groups,
    })
}

/// Memory a range's output buffer grows by at a time.
const GROW: usize = 1 << 20;

/// A range's output, formatted as the part file's records, waiting for the ranges before it:
/// in memory reserved from the pool up to `limit` bytes, then in a scratch file.
struct RangeOutput<'a> {
    format: LineFormat,
    res: &'a Resources,
    limit: usize,
    memory: Vec<u8>,
    /// What `memory`'s capacity takes from the pool.
    reservation: MemoryReservation,
    /// The scratch file once the output outgrew memory; everything after goes there.
    file: Option<(BufWriter<ScratchFile>, MemoryReservation)>,
    chunk: usize,
    records: u64,
    bytes: u64,
}

impl<'a> RangeOutput<'a> {
    fn new(format: LineFormat, limit: usize, chunk: usize, res: &'a Resources) -> Self {
        RangeOutput {
            format,
            res,
            limit,
            memory: Vec::new(),
            reservation: res.pool().empty_reservation(),
            file: None,
            chunk,
            records: 0,
            bytes: 0,
        }
    }

    /// Makes room for `len` more bytes in memory; `false` if the output must go to disk.
    fn room(&mut self, len: usize) -> bool {
        let needed = self.memory.len().saturating_add(len);
        if needed <= self.memory.capacity() {
            return true;
        }
        if needed > self.limit {
            return false;
        }
        let grow = needed
            .saturating_sub(self.reservation.size())
            .max(GROW)
            .min(self.limit - self.reservation.size());
        if !self.reservation.try_grow(grow) {
            return false;
        }
        self.memory
            .reserve_exact(self.reservation.size() - self.memory.len());
        // The allocator may give more than asked: the pool counts all of it.
        if self.memory.capacity() > self.reservation.size() {
            self.reservation
                .grow_forced(self.memory.capacity() - self.reservation.size());
        }
        true
    }

    /// Moves what is in memory to a new scratch file, where the rest of the output goes.
    fn move_to_disk(&mut self) -> Result<(), ExecError> {
        let file = self.res.spills().scratch_file()?;
        let chunk = self.res.reserve_or_force(self.chunk);
        let mut writer = BufWriter::with_capacity(self.chunk, file);
        writer
            .write_all(&self.memory)
            .map_err(|source| scratch_error(writer.get_ref(), source))?;
        self.memory = Vec::new();
        self.reservation.free();
        self.file = Some((writer, chunk));
        Ok(())
    }

    /// Appends the output to `out` and counts it there.
    fn append_to(self, out: &mut TextOutput<'_>) -> Result<(), ExecError> {
        if let Some((mut writer, _chunk)) = self.file {
            writer
                .flush()
                .map_err(|source| scratch_error(writer.get_ref(), source))?;
            let (mut file, _) = writer.into_parts();
            file.file()
                .seek(SeekFrom::Start(0))
                .map_err(|source| scratch_error(&file, source))?;
            let mut buffer = vec![0; self.chunk.max(1)];
            loop {
                let n = file
                    .file()
                    .read(&mut buffer)
                    .map_err(|source| scratch_error(&file, source))?;
                if n == 0 {
                    break;
                }
                out.append(&buffer[..n])?;
            }
        }
        out.append(&self.memory)?;
        out.count_appended(self.records, self.bytes);
        Ok(())
    }
}

fn scratch_error(file: &ScratchFile, source: std::io::Error) -> ExecError {
    ExecError::Spill(SpillError::Io {
        path: file.path().to_path_buf(),
        source,
    })
}

impl Emit for RangeOutput<'_> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        if self.file.is_none() && !self.room(self.format.len(key, value)) {
            self.move_to_disk()?;
        }
        let written = match &mut self.file {
            Some((writer, _)) => self
                .format
                .put(writer, key, value)
                .map_err(|source| scratch_error(writer.get_ref(), source))?,
            // Cannot fail: writing to a vector.
            None => self
                .format
                .put(&mut self.memory, key, value)
                .map_err(|e| ExecError::Config(format!("formatting a record: {e}")))?,
        };
        self.records += 1;
        self.bytes = self
            .bytes
            .saturating_add(u64::try_from(written).unwrap_or(u64::MAX));
        Ok(())
    }
}
