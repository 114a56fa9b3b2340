//! A reduce task: one partition's runs merged within the task's memory, through the stage's
//! reducer into the next stage's collector or a part file.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sluice_api::{CounterValues, ExecError, Job, JobStatus, OutputFormat, Stage, TaskContext};
use sluice_io::JobCommitter;
use sluice_shuffle::{
    merge_partition, partition_size, split_points, MergeSpec, Resources, Run, RunCatalog,
};
use sluice_sort::{CursorError, SortedCursor};
use sluice_spill::BufferAccount;

use crate::part_file::TextOutput;
use crate::ranges::reduce_ranges;
use crate::shared::Shared;
use crate::sink::{TaskSink, CHECK_EVERY};

/// Where a reduce stage's output goes.
pub(crate) enum ReduceTarget<'a> {
    /// Into the collectors of the next stage.
    Stage(&'a Stage, &'a RunCatalog),
    /// Into part files.
    Files(&'a dyn JobCommitter),
}

/// A reduce task's merged input: counts records and groups (runs of byte-equal keys) and checks
/// for cancellation as it is read.
pub(crate) struct ReduceInput<'a, C> {
    pub(crate) merge: C,
    pub(crate) res_status: Arc<JobStatus>,
    /// Set when another key range of the same task failed: this one stops too.
    pub(crate) stop: Option<&'a AtomicBool>,
    pub(crate) records: u64,
    pub(crate) groups: u64,
    /// The current group's key, to tell where the next group starts.
    group: GroupKey,
}

/// The key of the group a reduce input is in.
struct GroupKey {
    key: Vec<u8>,
    /// What `key` holds beyond a usual key (a 100 MB line sorted whole), counted in the job's
    /// pool.
    memory: BufferAccount,
}

/// Keys up to this long are held for grouping without being counted in the pool; a longer
/// one is counted while it is held, and its buffer is let go once a key this short follows.
const USUAL_KEY: usize = 64 * 1024;

impl<'a, C> ReduceInput<'a, C> {
    /// The input `merge` gives a reducer; stops when the job is cancelled or `stop` is set.
    pub(crate) fn new(merge: C, res: &Resources, stop: Option<&'a AtomicBool>) -> Self {
        ReduceInput {
            merge,
            res_status: Arc::clone(res.status()),
            stop,
            records: 0,
            groups: 0,
            group: GroupKey {
                key: Vec::new(),
                memory: BufferAccount::new(res.pool(), USUAL_KEY),
            },
        }
    }
}

impl GroupKey {
    /// Holds `key`, the key of a new group.
    fn hold(&mut self, key: &[u8]) {
        self.key.clear();
        if self.key.capacity() > USUAL_KEY && key.len() <= USUAL_KEY {
            // Let a huge key's buffer go.
            self.key = Vec::new();
        }
        if key.len() > USUAL_KEY.max(self.key.capacity()) {
            // Counted before it is copied, and held exactly.
            self.memory.update(key.len());
            self.key.reserve_exact(key.len());
        }
        self.key.extend_from_slice(key);
        if self.memory.counted() > 0 || self.key.capacity() > USUAL_KEY {
            self.memory.update(self.key.capacity());
        }
    }
}

impl<C: SortedCursor> SortedCursor for ReduceInput<'_, C> {
    fn advance(&mut self) -> Result<bool, CursorError> {
        if !self.merge.advance()? {
            return Ok(false);
        }
        self.records += 1;
        if self.records.is_multiple_of(CHECK_EVERY)
            && (self.res_status.is_cancelled()
                || self.stop.is_some_and(|stop| stop.load(Ordering::Relaxed)))
        {
            return Err(CursorError::Cancelled);
        }
        let key = self.merge.key();
        if self.records == 1 || key != self.group.key.as_slice() {
            self.groups += 1;
            self.group.hold(key);
        }
        Ok(true)
    }
    fn key(&self) -> &[u8] {
        self.merge.key()
    }
    fn value(&self) -> &[u8] {
        self.merge.value()
    }
}

pub(crate) fn reduce_task(
    ctx: &TaskContext,
    runs: &[Run],
    stage: &Stage,
    target: &ReduceTarget<'_>,
    job: &Job,
    res: &Shared,
) -> Result<(), ExecError> {
    let partition = ctx.task;
    // Only tasks of large partitions count as keeping a thread busy: a small one ends soon
    // and leaves its thread to the ranges of a large one.
    let large = res
        .reduce_split_bytes
        .is_some_and(|threshold| partition_size(runs, partition) >= threshold);
    let running = large.then(|| res.reduce_started());
    // Ranges join formatted text; a SequenceFile's records are laid out by its one writer.
    let text = !matches!(job.output, OutputFormat::SequenceFile(_));
    if let (ReduceTarget::Files(committer), Some(running), true) = (target, &running, text) {
        if let Some(points) = split_plan(partition, runs, stage, res, running.others())? {
            return reduce_ranges(ctx, runs, stage, *committer, job, res, &points);
        }
    }
    let status = res.runs.status();
    let write_chunk = res.runs.write_chunk();
    let (reader_share, mut sink, store) = match target {
        ReduceTarget::Stage(next, store) => (
            res.task_share / 2,
            TaskSink::Collect(res.collector(next, res.task_share / 2, ctx)),
            Some(*store),
        ),
        ReduceTarget::Files(committer) => (
            res.task_share.saturating_sub(2 * write_chunk),
            TaskSink::Text(TextOutput::create(
                *committer,
                &job.part_names.name(false, partition),
                ctx.attempt,
                &job.output,
                job.output_codec,
                job.lazy_output,
                write_chunk,
            )?),
            None,
        ),
    };
    let merge = merge_partition(
        runs,
        partition,
        MergeSpec::of(stage),
        reader_share,
        &res.runs,
    )?;
    let mut input = ReduceInput::new(merge, &res.runs, None);
    let mut reducer = (stage.reducer)(ctx);
    let result = reducer.run(&mut input, &mut sink);
    // A reducer that hands its input to something else (a streaming program's feeder) may
    // report the cancellation its input raised as a failure of its own: say what it was.
    res.runs.check_cancelled()?;
    result?;
    sink.finish(partition, store, status, ctx)?;
    let read = CounterValues {
        reduce_input_groups: input.groups,
        reduce_input_records: input.records,
        ..CounterValues::default()
    };
    status.count(ctx, &read);
    Ok(())
}

/// Where to cut `partition` of the last stage, a large one, into key ranges reduced at once,
/// if that is allowed and there are threads for it: the stage's reducer keeps no state across
/// keys, and the threads the `others` running tasks of large partitions leave are at least
/// two. `None` reduces it whole.
fn split_plan(
    partition: usize,
    runs: &[Run],
    stage: &Stage,
    res: &Shared,
    others: usize,
) -> Result<Option<Vec<Vec<u8>>>, ExecError> {
    let ranges = res.threads.saturating_sub(others).max(1);
    if !stage.independent_keys || ranges < 2 {
        return Ok(None);
    }
    let points = split_points(runs, partition, &stage.order, ranges)?;
    Ok((!points.is_empty()).then_some(points))
}
