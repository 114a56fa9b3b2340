//! The tasks of one job that run in one process: what the local driver and a cluster worker
//! share.
//!
//! The local driver runs every task of a job in one [`TaskHost`]; a cluster worker runs the
//! tasks a coordinator gives it in its own, takes the runs they make (and those other workers
//! push to it) as the input of the partitions it reduces ([`TaskHost::add_runs`]), and keeps
//! them in memory or spill files as the budget allows ([`TaskHost::run_writer`]). Either way a
//! task is wired the same: a map task reads a split into the first stage's collectors, a
//! reduce task merges a partition's runs into the next stage's collectors or a part file.
//!
//! ```text
//!  run_map(split) ─────────► runs of stage 1 ──┐     (each stage's input in this process)
//!  run_map_runs(split) ──► runs ─► add_runs ───┤
//!  run_reduce(s, p, runs) ─► runs of stage s+1 ┤
//!                              seal(s) ──► Vec<Run> ──► run_reduce ... ; release(s)
//! ```

use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use sluice_api::{ExecError, Job, JobStatus, Stage, TaskContext, DEFAULT_REDUCE_SPLIT_BYTES};
use sluice_format::Codec;
use sluice_io::{JobCommitter, MapSplit, Storage, StoredInput};
use sluice_shuffle::{
    merge_early, merge_memory_early, DumpedRun, LocalSpills, MemRunBuilder, MergeSpec, Reclaim,
    Resources, Run, RunCatalog, RunSink, RunWriter, SPILL_BLOCK,
};
use sluice_sort::SortedCursor;
use sluice_spill::{MemoryPool, SpillDir};

use crate::map::{map_task, MapTask};
use crate::plan::MemoryPlan;
use crate::reduce::{reduce_task, ReduceTarget};
use crate::shared::Shared;

/// How a process hosts a job's tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostSettings {
    /// The memory budget of every buffer of the job's tasks in this process, in bytes.
    pub memory: usize,
    /// Tasks that run at once.
    pub threads: usize,
    /// Transfers served to other processes at once (a cluster worker's shuffle); each holds
    /// a running task's share of memory. 0 in a process that serves none.
    pub serving: usize,
    /// Where the job's private spill directories are created: one on each local disk, the
    /// spill files spread over them in turn. Never empty.
    pub spill_parents: Vec<PathBuf>,
    /// Compression of spill files.
    pub spill_codec: Codec,
    /// From how many bytes a partition of a job's last stage is split into key ranges
    /// reduced on several threads, when its stage allows it (see
    /// [`JobConfig::reduce_split_bytes`](sluice_api::JobConfig::reduce_split_bytes)); `None`
    /// never splits.
    pub reduce_split_bytes: Option<u64>,
}

impl HostSettings {
    /// Settings of `threads` tasks at once within `memory` bytes, spilling under
    /// `spill_parent` with lz4, serving nothing, and splitting partitions of
    /// [`DEFAULT_REDUCE_SPLIT_BYTES`] or more.
    pub fn new(memory: usize, threads: usize, spill_parent: PathBuf) -> HostSettings {
        HostSettings {
            memory,
            threads,
            serving: 0,
            spill_parents: vec![spill_parent],
            spill_codec: Codec::Lz4,
            reduce_split_bytes: Some(DEFAULT_REDUCE_SPLIT_BYTES),
        }
    }

    /// The same, serving `serving` transfers at once.
    pub fn with_serving(mut self, serving: usize) -> HostSettings {
        self.serving = serving;
        self
    }

    /// The same, spilling in `parents` (one per local disk) instead; none changes nothing.
    pub fn with_spill_parents(mut self, parents: Vec<PathBuf>) -> HostSettings {
        if !parents.is_empty() {
            self.spill_parents = parents;
        }
        self
    }

    /// The same, spilling with `codec`.
    pub fn with_spill_codec(mut self, codec: Codec) -> HostSettings {
        self.spill_codec = codec;
        self
    }

    /// The same, splitting partitions of `bytes` or more (`None`: never).
    pub fn with_reduce_split_bytes(mut self, bytes: Option<u64>) -> HostSettings {
        self.reduce_split_bytes = bytes;
        self
    }
}

/// One attempt of one map task, as a host runs it.
#[derive(Debug, Clone, Copy)]
pub struct MapAttempt<'a> {
    /// The task's number (its split's place in the job's plan).
    pub task: usize,
    /// The attempt's number, distinct among the task's attempts.
    pub attempt: usize,
    /// The byte ranges the task reads.
    pub split: &'a MapSplit,
    /// The job's input files, which the split's ranges index.
    pub files: &'a [StoredInput],
}

/// The tasks of one job that run in this process, and the runs they leave.
pub struct TaskHost {
    pub(crate) shared: Shared,
    /// The input of each stage that this process's tasks produced.
    stages: Vec<StageRuns>,
    memory: MemoryPlan,
    budget: usize,
}

/// One stage's input in this process: collected while its tasks run, then sealed.
struct StageRuns {
    catalog: RunCatalog,
    sealed: Mutex<Sealing>,
}

enum Sealing {
    /// Tasks may add runs (beside those of an earlier sealing, when the stage was reopened).
    Open(Vec<Run>),
    /// Complete: the runs, for reduce tasks and for serving.
    Sealed(Arc<Vec<Run>>),
    /// Read and let go.
    Released,
}

impl TaskHost {
    /// A host for `job`'s tasks, with its spill directory created.
    ///
    /// # Errors
    /// [`ExecError::Config`] for a budget too small for the threads, or a stage with more
    /// partitions than a task's share can track; the spill directory cannot be created.
    pub fn new(
        job: &Job,
        settings: &HostSettings,
        status: Arc<JobStatus>,
    ) -> Result<TaskHost, ExecError> {
        let memory = TaskHost::plan(job, settings)?;
        let pool = MemoryPool::new(memory.pool);
        let mut dirs = settings
            .spill_parents
            .iter()
            .map(|parent| {
                Ok(SpillDir::create_in(parent)?
                    .with_write_chunk(memory.write_chunk)
                    .with_pool(pool.clone()))
            })
            .collect::<Result<Vec<_>, ExecError>>()?;
        if dirs.is_empty() {
            return Err(ExecError::Config("no spill directory".to_string()));
        }
        let first = dirs.remove(0);
        let spills =
            LocalSpills::new(first, settings.spill_codec, SPILL_BLOCK).with_more_dirs(dirs);
        let shared = Shared {
            runs: Resources::new(
                pool,
                memory.held_runs,
                Box::new(spills),
                memory.write_chunk,
                memory.sort_buckets,
                status,
            ),
            task_share: memory.task_share,
            table_block: memory.table_block,
            threads: settings.threads.max(1),
            reduce_split_bytes: settings.reduce_split_bytes,
            running_reduces: AtomicUsize::new(0),
        };
        let stages = job
            .stages
            .iter()
            .map(|_| StageRuns {
                catalog: RunCatalog::new(),
                sealed: Mutex::new(Sealing::Open(Vec::new())),
            })
            .collect();
        Ok(TaskHost {
            shared,
            stages,
            memory,
            budget: settings.memory,
        })
    }

    /// Checks that `job` can run under `settings` (a budget large enough for the threads, a
    /// stage's partitions within what a task's share can track), without creating anything:
    /// what [`TaskHost::new`] checks first.
    ///
    /// # Errors
    /// As [`TaskHost::new`]'s configuration errors.
    pub fn check(job: &Job, settings: &HostSettings) -> Result<(), ExecError> {
        TaskHost::plan(job, settings).map(drop)
    }

    fn plan(job: &Job, settings: &HostSettings) -> Result<MemoryPlan, ExecError> {
        if job.stages.iter().any(|s| s.partitions == 0) {
            return Err(ExecError::Config(
                "a stage needs at least 1 partition".into(),
            ));
        }
        let shares = settings.threads.max(1).saturating_add(settings.serving);
        let memory = MemoryPlan::new(settings.memory, shares, job.memory_per_task)?;
        memory.check_partitions(job)?;
        Ok(memory)
    }

    /// The job's live status: counters, cancellation.
    pub fn status(&self) -> &Arc<JobStatus> {
        self.shared.runs.status()
    }

    /// The most memory reserved at once, counting what tasks hold outside the pool.
    pub fn peak_memory_reserved(&self) -> usize {
        self.shared.runs.pool().peak() + (self.budget - self.memory.pool)
    }

    /// Bytes reservations took beyond the budget because a single record needed them.
    pub fn forced_memory(&self) -> usize {
        self.shared.runs.pool().forced_bytes()
    }

    /// Frees the buffers finished tasks left for the next ones, at the end of a phase.
    pub fn end_phase(&self) {
        let _ = self.shared.runs.drop_spare_buffers();
    }

    /// Stage `index` (0-based), while its tasks may still add runs.
    fn collecting(&self, index: usize) -> Result<&RunCatalog, ExecError> {
        let stage = self.stage(index)?;
        if !matches!(*lock(&stage.sealed), Sealing::Open(_)) {
            return Err(ExecError::Config(format!(
                "stage {} takes no more runs: its input was sealed",
                index + 1
            )));
        }
        Ok(&stage.catalog)
    }

    fn stage(&self, index: usize) -> Result<&StageRuns, ExecError> {
        self.stages.get(index).ok_or_else(|| {
            ExecError::Config(format!(
                "stage {} of a job of {} stage(s)",
                index + 1,
                self.stages.len()
            ))
        })
    }

    /// Runs one attempt of a map task: its split through the mapper into the first stage's
    /// collectors (or, for a map-only job, a part file of `committer`). When it succeeds, its
    /// runs join this host's, and runs that have piled up are merged while other tasks run.
    ///
    /// # Errors
    /// The task's error; a failed attempt leaves no run and counts nothing.
    pub fn run_map(
        &self,
        job: &Job,
        attempt: MapAttempt<'_>,
        storage: &dyn Storage,
        committer: &dyn JobCommitter,
    ) -> Result<(), ExecError> {
        let task = MapTask {
            task: attempt.task,
            attempt: attempt.attempt,
            split: attempt.split,
            files: attempt.files,
            storage,
        };
        let Some(stage) = job.stages.first() else {
            return map_task(&task, job, &self.shared, None, committer);
        };
        let catalog = self.collecting(0)?;
        map_task(&task, job, &self.shared, Some(catalog), committer)?;
        // Not part of the task: its runs are in the catalog now, and a retry would add them
        // twice.
        self.merge_piled_up(catalog, MergeSpec::of(stage))
    }

    /// Runs one attempt of a map task as [`TaskHost::run_map`] does, but returns its runs
    /// (of the first stage's input) instead of keeping them: for a process that ships them
    /// elsewhere, and adds them with [`TaskHost::add_runs`] where they belong. A map-only
    /// job's task writes its part file and returns no run.
    ///
    /// # Errors
    /// As [`TaskHost::run_map`].
    pub fn run_map_runs(
        &self,
        job: &Job,
        attempt: MapAttempt<'_>,
        storage: &dyn Storage,
        committer: &dyn JobCommitter,
    ) -> Result<Vec<Run>, ExecError> {
        let task = MapTask {
            task: attempt.task,
            attempt: attempt.attempt,
            split: attempt.split,
            files: attempt.files,
            storage,
        };
        if job.stages.is_empty() {
            map_task(&task, job, &self.shared, None, committer)?;
            return Ok(Vec::new());
        }
        let own = RunCatalog::new();
        map_task(&task, job, &self.shared, Some(&own), committer)?;
        Ok(own.into_runs())
    }

    /// Runs one attempt of a reduce task as [`TaskHost::run_reduce`] does, but returns the
    /// runs it makes for the next stage instead of keeping them (see
    /// [`TaskHost::run_map_runs`]); a task of the last stage writes its part file and returns
    /// no run.
    ///
    /// # Errors
    /// As [`TaskHost::run_reduce`].
    pub fn run_reduce_runs(
        &self,
        job: &Job,
        ctx: &TaskContext,
        runs: &[Run],
        committer: &dyn JobCommitter,
    ) -> Result<Vec<Run>, ExecError> {
        let (index, stage) = reduce_stage(job, ctx)?;
        let own = RunCatalog::new();
        let target = match job.stages.get(index + 1) {
            Some(next) => ReduceTarget::Stage(next, &own),
            None => ReduceTarget::Files(committer),
        };
        reduce_task(ctx, runs, stage, &target, job, &self.shared)?;
        Ok(own.into_runs())
    }

    /// Adds `runs` of task `task` to stage `index`'s input here (runs that came from another
    /// process, or this process's own), then merges runs that have piled up, as after a map
    /// task.
    ///
    /// # Errors
    /// A stage the job does not have or that is sealed; an early merge failed.
    pub fn add_runs(
        &self,
        job: &Job,
        index: usize,
        task: usize,
        runs: Vec<Run>,
    ) -> Result<(), ExecError> {
        let catalog = self.collecting(index)?;
        let stage = job.stages.get(index).ok_or_else(|| {
            ExecError::Config(format!(
                "stage {} of a job of {} stage(s)",
                index + 1,
                job.stages.len()
            ))
        })?;
        catalog.add(task, runs);
        self.merge_piled_up(catalog, MergeSpec::of(stage))
    }

    /// Merges the runs that have piled up in `catalog`, window after window until none is
    /// due. Only one merge runs at a time: a task that finishes while another thread merges
    /// skips its turn, so the merging thread goes on with what piled up meanwhile rather than
    /// leaving it all to the reduce tasks.
    fn merge_piled_up(&self, catalog: &RunCatalog, spec: MergeSpec<'_>) -> Result<(), ExecError> {
        let res = &self.shared.runs;
        while merge_early(catalog, spec, self.shared.task_share, res)?
            || merge_memory_early(catalog, spec, res)?
        {}
        Ok(())
    }

    /// A writer of a run of `partitions` partitions whose records take `bytes` encoded: in
    /// memory when the share for held runs has room, else a spill file.
    ///
    /// # Errors
    /// The spill file cannot be created.
    pub fn run_writer(
        &self,
        partitions: usize,
        bytes: u64,
    ) -> Result<Box<dyn RunWriter>, ExecError> {
        let quota = usize::try_from(bytes).ok().and_then(|bytes| {
            self.shared
                .runs
                .quota()
                .try_reserve(bytes)
                .map(|r| (bytes, r))
        });
        match quota {
            Some((bytes, reservation)) => {
                Ok(Box::new(MemRunBuilder::new(partitions, bytes, reservation)))
            }
            None => self.shared.runs.create_spill(partitions),
        }
    }

    /// Asks `reclaimer` to move runs it holds out of memory whenever a run would otherwise
    /// not fit in the share for held runs (see [`Reclaim`]). Only the first one set is kept.
    pub fn set_reclaimer(&self, reclaimer: Weak<dyn Reclaim>) {
        self.shared.runs.quota().set_reclaimer(reclaimer);
    }

    /// A copy of `partitions` of `run` (a run of `count` partitions) in a run of its own: in
    /// memory when the share for held runs has room, else in a spill file. What a process
    /// keeps of a run whose other partitions go elsewhere, so that the rest can be let go.
    ///
    /// # Errors
    /// `run` cannot be read, or the copy cannot be written.
    pub fn copy_partitions(
        &self,
        run: &Run,
        count: usize,
        partitions: &[usize],
    ) -> Result<Run, ExecError> {
        let bytes: u64 = partitions
            .iter()
            .map(|p| run.partition_bytes(*p).unwrap_or_else(|| run.bytes()))
            .sum();
        let mut writer = self.run_writer(count, bytes)?;
        copy_records(run, partitions, &mut *writer)?;
        writer.finish()
    }

    /// A copy of every partition of `run` (of `count` partitions) on disk: what a process
    /// keeps of a run it may have to serve later but need not hold in memory. A run in memory
    /// is written as it is ([`DumpedRun`]: one write, no encoding); another is copied into a
    /// spill file.
    ///
    /// # Errors
    /// `run` cannot be read, or the file cannot be written.
    pub fn store_run(&self, run: &Run, count: usize) -> Result<Run, ExecError> {
        if run.memory_image().is_some() {
            let file = self.shared.runs.spills().scratch_file()?;
            if let Some(dumped) = DumpedRun::write(&**run, file, self.shared.runs.pool()) {
                return dumped;
            }
        }
        let mut writer = self.shared.runs.create_spill(count)?;
        let all: Vec<usize> = (0..count).collect();
        copy_records(run, &all, &mut *writer)?;
        writer.finish()
    }

    /// Ends stage `index`'s input in this process: no task adds runs to it any more. Returns
    /// its runs, in task order; sealing twice returns the same runs.
    ///
    /// # Errors
    /// [`ExecError::Config`] for a stage the job does not have, or one released already.
    pub fn seal(&self, index: usize) -> Result<Arc<Vec<Run>>, ExecError> {
        let stage = self.stage(index)?;
        let mut sealing = lock(&stage.sealed);
        match &mut *sealing {
            Sealing::Open(earlier) => {
                let mut runs = std::mem::take(earlier);
                runs.extend(stage.catalog.take_runs());
                let runs = Arc::new(runs);
                *sealing = Sealing::Sealed(Arc::clone(&runs));
                Ok(runs)
            }
            Sealing::Sealed(runs) => Ok(Arc::clone(runs)),
            Sealing::Released => Err(ExecError::Config(format!(
                "stage {}'s input was read and released already",
                index + 1
            ))),
        }
    }

    /// Opens sealed stage `index` to more runs: another process's tasks whose runs were
    /// lost are run again here. The runs it had stay, ahead of the new ones, and the next
    /// [`TaskHost::seal`] returns them all.
    ///
    /// # Errors
    /// [`ExecError::Config`] for a stage the job does not have, or one released already.
    pub fn reopen(&self, index: usize) -> Result<(), ExecError> {
        let stage = self.stage(index)?;
        let mut sealing = lock(&stage.sealed);
        match std::mem::replace(&mut *sealing, Sealing::Released) {
            Sealing::Sealed(runs) => {
                *sealing = Sealing::Open(Arc::unwrap_or_clone(runs));
                Ok(())
            }
            Sealing::Open(earlier) => {
                *sealing = Sealing::Open(earlier);
                Ok(())
            }
            Sealing::Released => Err(ExecError::Config(format!(
                "stage {}'s input was read and released already",
                index + 1
            ))),
        }
    }

    /// Lets go of stage `index`'s runs once they are read: memory runs return their memory
    /// and spill files are deleted when the last reader is done with them.
    pub fn release(&self, index: usize) {
        if let Ok(stage) = self.stage(index) {
            *lock(&stage.sealed) = Sealing::Released;
        }
    }

    /// Runs one attempt of the reduce task of `partition` of stage `index` (0-based) over
    /// `runs` (every run of the stage's input with records for it, from wherever they are):
    /// merged within the task's memory, through the stage's reducer into the next stage's
    /// collectors in this process, or into a part file of `committer` after the last stage.
    ///
    /// # Errors
    /// The task's error; a failed attempt leaves no run and counts nothing.
    pub fn run_reduce(
        &self,
        job: &Job,
        ctx: &TaskContext,
        runs: &[Run],
        committer: &dyn JobCommitter,
    ) -> Result<(), ExecError> {
        let (index, stage) = reduce_stage(job, ctx)?;
        let target = match job.stages.get(index + 1) {
            Some(next) => ReduceTarget::Stage(next, self.collecting(index + 1)?),
            None => ReduceTarget::Files(committer),
        };
        reduce_task(ctx, runs, stage, &target, job, &self.shared)
    }
}

/// The stage a reduce task's context names: its index (0-based) and the stage.
fn reduce_stage<'a>(job: &'a Job, ctx: &TaskContext) -> Result<(usize, &'a Stage), ExecError> {
    let index = ctx
        .stage
        .checked_sub(1)
        .ok_or_else(|| ExecError::Config("reduce stages are numbered from 1".to_string()))?;
    let stage = job.stages.get(index).ok_or_else(|| {
        ExecError::Config(format!(
            "stage {} of a job of {} stage(s)",
            ctx.stage,
            job.stages.len()
        ))
    })?;
    Ok((index, stage))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// Writes `partitions` (increasing) of `run` to `sink`, record by record.
fn copy_records(run: &Run, partitions: &[usize], sink: &mut dyn RunSink) -> Result<(), ExecError> {
    for &partition in partitions {
        if !run.has_records(partition) {
            continue;
        }
        let mut cursor = run.open(partition)?;
        while cursor.advance()? {
            sink.write(partition, cursor.key(), cursor.value())?;
        }
    }
    Ok(())
}
