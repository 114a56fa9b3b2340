//! A reduce task: one partition's runs merged within the task's memory, through the stage's
//! reducer into the next stage's collector or a part file.

use std::sync::Arc;

use sluice_api::{Counter, ExecError, Job, JobStatus, Stage, TaskContext};
use sluice_io::JobCommitter;
use sluice_shuffle::{merge_partition, MergeSpec, Run, RunCatalog};
use sluice_sort::{CursorError, SortedCursor};

use crate::part_file::TextOutput;
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
struct ReduceInput<C> {
    merge: C,
    res_status: Arc<JobStatus>,
    records: u64,
    groups: u64,
    last_key: Vec<u8>,
}

impl<C: SortedCursor> SortedCursor for ReduceInput<C> {
    fn advance(&mut self) -> Result<bool, CursorError> {
        if !self.merge.advance()? {
            return Ok(false);
        }
        self.records += 1;
        if self.records.is_multiple_of(CHECK_EVERY) && self.res_status.is_cancelled() {
            return Err(CursorError::Cancelled);
        }
        let key = self.merge.key();
        if self.records == 1 || key != self.last_key.as_slice() {
            self.groups += 1;
            self.last_key.clear();
            self.last_key.extend_from_slice(key);
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
    let status = res.runs.status();
    let counters = &status.counters;
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
    let mut input = ReduceInput {
        merge,
        res_status: Arc::clone(status),
        records: 0,
        groups: 0,
        last_key: Vec::new(),
    };
    let mut reducer = (stage.reducer)(ctx);
    let result = reducer.run(&mut input, &mut sink);
    // A reducer that hands its input to something else (a streaming program's feeder) may
    // report the cancellation its input raised as a failure of its own: say what it was.
    res.runs.check_cancelled()?;
    result?;
    sink.finish(partition, store, counters)?;
    counters.add(Counter::ReduceInputGroups, input.groups);
    counters.add(Counter::ReduceInputRecords, input.records);
    Ok(())
}
