//! Runs a [`Job`]: plan, map, reduce stage by stage, commit.
//!
//! # Memory
//!
//! The budget (`--memory`) is split once, up front:
//!
//! * half may be held by sorted runs kept in memory between stages ([`MemRunQuota`]);
//! * the other half is shared equally by the worker threads: each running task (its collector,
//!   or its merge readers and output buffer) stays within its share and flushes or merges in
//!   passes to stay there.
//!
//! Every large buffer is reserved from the one [`MemoryPool`] before it is allocated; what is not
//! counted is small and fixed per thread (the input line buffer, a spill write buffer).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Serialize;
use sluice_format::Codec;
use sluice_io::{discover_inputs, plan_splits, InputFile, LineReader, OutputCommitter, Split};
use sluice_sort::{Merger, SortedCursor};
use sluice_spill::{MemoryPool, SpillDir};

use crate::api::{Combine, Emit, MapInput, MapperFactory, Partitioner, ReducerFactory};
use crate::collector::{Collector, SPILL_BLOCK};
use crate::counters::{CounterValues, JobStatus, Phase};
use crate::group::for_each_group;
use crate::output::{OutputFormat, TextOutput, OUTPUT_BUFFER};
use crate::shuffle::{merge_window, MemRunQuota, Run, ShuffleStore};
use crate::{Counters, ExecError, JobConfig};

/// A reduce stage: its input is grouped by key and reduced; its output feeds the next stage, or
/// the job's output files if it is the last.
#[derive(Clone)]
pub struct Stage {
    /// Makes the reducer of each partition.
    pub reducer: ReducerFactory,
    /// How this stage's input is combined on the producing side.
    pub combine: Combine,
    /// Assigns keys to partitions.
    pub partitioner: Arc<dyn Partitioner>,
    /// Number of partitions (reduce tasks, part files of the last stage).
    pub partitions: usize,
}

/// A complete job: a mapper and zero or more reduce stages. With no stage the job is map-only
/// and every map task writes its own `part-m-NNNNN`.
#[derive(Clone)]
pub struct Job {
    /// Name for messages and reports.
    pub name: String,
    /// Makes the mapper of each map task.
    pub mapper: MapperFactory,
    /// Reduce stages, in order.
    pub stages: Vec<Stage>,
    /// How the final pairs are written.
    pub output: OutputFormat,
}

/// Wall time of one phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseTiming {
    /// `map`, `reduce` (or `reduce-2`, ... for later stages), `commit`.
    pub phase: String,
    /// Seconds spent.
    pub seconds: f64,
}

/// What a finished job reports.
#[derive(Debug, Clone, Serialize)]
pub struct JobReport {
    /// The job's name.
    pub job: String,
    /// The committed output directory.
    pub output: PathBuf,
    /// Input files read.
    pub input_files: usize,
    /// Map tasks run.
    pub splits: usize,
    /// Partitions of the last stage (part files).
    pub reducers: usize,
    /// Worker threads.
    pub threads: usize,
    /// The memory budget in bytes.
    pub memory_budget: usize,
    /// The most bytes reserved from the budget at once.
    pub peak_memory_reserved: usize,
    /// Bytes reserved beyond the budget for records larger than it (normally 0).
    pub forced_memory: usize,
    /// Hadoop-style counters.
    pub counters: CounterValues,
    /// Time per phase.
    pub phases: Vec<PhaseTiming>,
    /// Total wall time in seconds.
    pub wall_seconds: f64,
}

/// What every task of a job shares.
pub(crate) struct Resources {
    pub(crate) pool: MemoryPool,
    pub(crate) quota: Arc<MemRunQuota>,
    pub(crate) spill_dir: SpillDir,
    pub(crate) codec: Codec,
    /// Bytes each running task may hold.
    pub(crate) task_share: usize,
    /// Allocation unit of map-side record buffers.
    pub(crate) collector_block: usize,
    pub(crate) status: Arc<JobStatus>,
}

impl Resources {
    fn check_cancelled(&self) -> Result<(), ExecError> {
        if self.status.is_cancelled() {
            Err(ExecError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// Memory one open spill-file reader needs: a raw and a compressed block.
const READER_COST: usize = 2 * SPILL_BLOCK + 8 * 1024;

/// Runs `job` as configured, reporting progress through `status`.
///
/// # Errors
/// Any failure ends the job; the output directory is then not created (the temporary directory
/// and the spill files are removed).
pub fn run_job(
    job: &Job,
    config: &JobConfig,
    status: Arc<JobStatus>,
) -> Result<JobReport, ExecError> {
    config.validate()?;
    if job.stages.iter().any(|s| s.partitions == 0) {
        return Err(ExecError::Config(
            "a stage needs at least 1 partition".into(),
        ));
    }
    let started = Instant::now();
    status.enter(Phase::Planning, 0);
    let committer = OutputCommitter::create(&config.output)?;
    let files = discover_inputs(&config.inputs)?;
    let splits = plan_splits(&files, config.split_size);
    status
        .input_bytes_total
        .store(files.iter().map(|f| f.len).sum(), Ordering::Relaxed);

    let spill_parent = match &config.spill_parent {
        Some(dir) => dir.clone(),
        None => parent_dir(committer.final_dir()),
    };
    let pool = MemoryPool::new(config.memory);
    let held_cap = config.memory / 2;
    let task_share = (config.memory - held_cap) / config.threads;
    let res = Resources {
        quota: MemRunQuota::new(pool.clone(), held_cap),
        pool,
        spill_dir: SpillDir::create_in(&spill_parent)?,
        codec: config.spill_codec,
        task_share,
        collector_block: (task_share / 8).clamp(64 * 1024, 1 << 20),
        status: Arc::clone(&status),
    };
    let mut phases = Vec::new();

    // Map.
    let phase_start = Instant::now();
    status.enter(Phase::Map, splits.len() as u64);
    let first_store = job.stages.first().map(|_| ShuffleStore::new());
    run_tasks(config.threads, splits.len(), &status, |i| {
        let split = splits[i];
        let file = &files[split.file];
        map_task(i, split, file, job, &res, first_store.as_ref(), &committer).map_err(|e| {
            e.in_task(format!(
                "map task {i} ({}, bytes {}..{})",
                file.path.display(),
                split.start,
                split.start + split.len
            ))
        })
    })?;
    phases.push(timing("map", phase_start));

    // Reduce stages.
    let mut input = first_store;
    for (index, stage) in job.stages.iter().enumerate() {
        let phase_start = Instant::now();
        let next_stage = job.stages.get(index + 1);
        let next_store = next_stage.map(|_| ShuffleStore::new());
        let runs = input
            .take()
            .map(ShuffleStore::into_runs)
            .unwrap_or_default();
        status.enter(Phase::Reduce, stage.partitions as u64);
        let target = match (next_stage, &next_store) {
            (Some(next), Some(store)) => ReduceTarget::Stage(next, store),
            _ => ReduceTarget::Files(&committer, job.output),
        };
        run_tasks(config.threads, stage.partitions, &status, |p| {
            reduce_task(p, &runs, stage, &target, &res)
                .map_err(|e| e.in_task(format!("reduce task {p} of stage {}", index + 1)))
        })?;
        drop(runs);
        let name = if index == 0 {
            "reduce".to_string()
        } else {
            format!("reduce-{}", index + 1)
        };
        phases.push(timing(&name, phase_start));
        input = next_store;
    }

    let phase_start = Instant::now();
    status.enter(Phase::Commit, 1);
    let output = committer.commit()?;
    phases.push(timing("commit", phase_start));
    status.enter(Phase::Done, 0);

    Ok(JobReport {
        job: job.name.clone(),
        output,
        input_files: files.len(),
        splits: splits.len(),
        reducers: job.stages.last().map_or(splits.len(), |s| s.partitions),
        threads: config.threads,
        memory_budget: config.memory,
        peak_memory_reserved: res.pool.peak(),
        forced_memory: res.pool.forced_bytes(),
        counters: status.counters.snapshot(),
        phases,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

fn timing(phase: &str, start: Instant) -> PhaseTiming {
    PhaseTiming {
        phase: phase.to_string(),
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// Runs tasks `0..count` on `threads` threads, each thread taking the next task when it is done.
/// The first error cancels the remaining tasks and is returned.
fn run_tasks(
    threads: usize,
    count: usize,
    status: &JobStatus,
    task: impl Fn(usize) -> Result<(), ExecError> + Sync,
) -> Result<(), ExecError> {
    let next = AtomicUsize::new(0);
    let first_error = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(count) {
            scope.spawn(|| loop {
                if status.is_cancelled() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                match task(i) {
                    Ok(()) => status.task_done(),
                    Err(e) => {
                        if !matches!(e, ExecError::Cancelled) {
                            let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                            slot.get_or_insert(e);
                        }
                        status.cancel();
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    if status.is_cancelled() {
        return Err(ExecError::Cancelled);
    }
    Ok(())
}

/// Counts what a mapper emits, then passes it on.
struct CountingEmit<'e> {
    inner: &'e mut dyn Emit,
    records: u64,
    bytes: u64,
}

impl Emit for CountingEmit<'_> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        self.records += 1;
        self.bytes += (key.len() + value.len()) as u64;
        self.inner.emit(key, value)
    }
}

/// Where a task's output goes.
enum TaskSink<'a> {
    Collect(Collector<'a>),
    Text(TextOutput),
}

impl Emit for TaskSink<'_> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        match self {
            TaskSink::Collect(c) => c.emit(key, value),
            TaskSink::Text(t) => t.emit(key, value),
        }
    }
}

impl TaskSink<'_> {
    /// Finishes the output of task `task`: hands runs to `store`, or flushes the part file.
    fn finish(
        self,
        task: usize,
        store: Option<&ShuffleStore>,
        counters: &Counters,
    ) -> Result<(), ExecError> {
        match (self, store) {
            (TaskSink::Collect(c), Some(store)) => store.add(task, c.finish()?),
            (TaskSink::Text(t), _) => {
                let (records, bytes) = t.finish()?;
                Counters::add(&counters.output_records, records);
                Counters::add(&counters.output_bytes, bytes);
            }
            (TaskSink::Collect(_), None) => {
                return Err(ExecError::Config(
                    "collector without a shuffle store".into(),
                ))
            }
        }
        Ok(())
    }
}

/// How often (in records) a task publishes progress and checks for cancellation.
const CHECK_EVERY: u64 = 4096;

fn map_task(
    task: usize,
    split: Split,
    file: &InputFile,
    job: &Job,
    res: &Resources,
    store: Option<&ShuffleStore>,
    committer: &OutputCommitter,
) -> Result<(), ExecError> {
    let counters = &res.status.counters;
    let mut reader = LineReader::open(file, &split)?;
    let mut mapper = (job.mapper)(&MapInput {
        task,
        file_index: split.file,
        path: file.path.clone(),
    });
    let mut sink = match job.stages.first() {
        Some(stage) => TaskSink::Collect(Collector::new(res, stage, res.task_share)),
        None => TaskSink::Text(TextOutput::create(
            committer,
            &format!("part-m-{task:05}"),
            job.output,
        )?),
    };
    let mut out = CountingEmit {
        inner: &mut sink,
        records: 0,
        bytes: 0,
    };
    let mut records = 0u64;
    let mut published_bytes = 0u64;
    while let Some((offset, line)) = reader.next_line()? {
        mapper
            .map(offset, line, &mut out)
            .map_err(|e| e.in_task(format!("record at byte {offset}")))?;
        records += 1;
        if records % CHECK_EVERY == 0 {
            res.check_cancelled()?;
            let consumed = reader.bytes_consumed();
            Counters::add(&counters.map_input_bytes, consumed - published_bytes);
            published_bytes = consumed;
        }
    }
    mapper.finish(&mut out)?;
    let (out_records, out_bytes) = (out.records, out.bytes);
    Counters::add(
        &counters.map_input_bytes,
        reader.bytes_consumed() - published_bytes,
    );
    Counters::add(&counters.map_input_records, records);
    Counters::add(&counters.map_output_records, out_records);
    Counters::add(&counters.map_output_bytes, out_bytes);
    Counters::add(&counters.map_tasks, 1);
    sink.finish(task, store, counters)?;
    match (store, job.stages.first()) {
        (Some(store), Some(stage)) => merge_early(store, stage.partitions, res),
        _ => Ok(()),
    }
}

/// Merges spill files of finished map tasks while other map tasks still run, when they have
/// piled up (see [`ShuffleStore::take_merge_window`]): the work is done while the input is
/// still being read, and the reduce tasks start with fewer runs to merge.
fn merge_early(store: &ShuffleStore, partitions: usize, res: &Resources) -> Result<(), ExecError> {
    let fan_in = (res.task_share / READER_COST).max(2);
    let Some(window) = store.take_merge_window(fan_in) else {
        return Ok(());
    };
    let place = (window[0].0, window[0].1);
    let runs: Vec<Run> = window.into_iter().map(|(_, _, run)| run).collect();
    let merged = merge_to_spill(&runs, 0..partitions, partitions, fan_in, res);
    drop(runs);
    match merged {
        Ok(run) => {
            store.end_merge(place, Some(run));
            Ok(())
        }
        Err(e) => {
            store.end_merge(place, None);
            Err(e.in_task("merge of spill files during the map phase"))
        }
    }
}

/// Merges the `selected` partitions of `runs` (oldest first) into one new spill file of
/// `partitions` partitions, holding at most `fan_in` readers' memory.
fn merge_to_spill(
    runs: &[Run],
    selected: std::ops::Range<usize>,
    partitions: usize,
    fan_in: usize,
    res: &Resources,
) -> Result<Run, ExecError> {
    let _readers = res
        .pool
        .try_reserve(fan_in * READER_COST)
        .unwrap_or_else(|| res.pool.reserve_forced(fan_in * READER_COST));
    let mut writer = res
        .spill_dir
        .create_writer(partitions, res.codec, SPILL_BLOCK)?;
    for partition in selected {
        res.check_cancelled()?;
        let cursors = runs
            .iter()
            .filter(|run| run.has_records(partition))
            .map(|run| run.open(partition))
            .collect::<Result<Vec<_>, _>>()?;
        let mut merge = Merger::new(cursors);
        while merge.advance()? {
            writer.write(partition, merge.key(), merge.value())?;
        }
    }
    let file = writer.finish()?;
    let counters = &res.status.counters;
    Counters::add(&counters.merge_passes, 1);
    Counters::add(&counters.spilled_runs, 1);
    Counters::add(&counters.spilled_records, file.total_records());
    Counters::add(&counters.spilled_bytes, file.bytes());
    Ok(Run::Disk(Arc::new(file)))
}

/// Where a reduce stage's output goes.
enum ReduceTarget<'a> {
    /// Into the collectors of the next stage.
    Stage(&'a Stage, &'a ShuffleStore),
    /// Into part files.
    Files(&'a OutputCommitter, OutputFormat),
}

fn reduce_task(
    partition: usize,
    runs: &[Run],
    stage: &Stage,
    target: &ReduceTarget<'_>,
    res: &Resources,
) -> Result<(), ExecError> {
    let counters = &res.status.counters;
    let (reader_share, mut sink, store) = match target {
        ReduceTarget::Stage(next, store) => (
            res.task_share / 2,
            TaskSink::Collect(Collector::new(res, next, res.task_share / 2)),
            Some(*store),
        ),
        ReduceTarget::Files(committer, format) => (
            res.task_share.saturating_sub(OUTPUT_BUFFER),
            TaskSink::Text(TextOutput::create(
                committer,
                &format!("part-r-{partition:05}"),
                *format,
            )?),
            None,
        ),
    };
    let fan_in = (reader_share / READER_COST).max(2);
    let sources: Vec<Run> = runs
        .iter()
        .filter(|r| r.has_records(partition))
        .cloned()
        .collect();
    let sources = limit_fan_in(sources, partition, stage.partitions, fan_in, res)?;
    let disk_readers = sources.iter().filter(|r| r.is_disk()).count();
    let _readers = res
        .pool
        .try_reserve(disk_readers * READER_COST)
        .unwrap_or_else(|| res.pool.reserve_forced(disk_readers * READER_COST));
    let cursors = sources
        .iter()
        .map(|r| r.open(partition))
        .collect::<Result<Vec<_>, _>>()?;
    let mut merge = Merger::new(cursors);
    let mut reducer = (stage.reducer)();
    let mut since_check = 0u64;
    let (groups, records) = for_each_group(&mut merge, |key, values| {
        since_check += 1;
        if since_check % CHECK_EVERY == 0 {
            res.check_cancelled()?;
        }
        reducer.reduce(key, values, &mut sink)
    })?;
    Counters::add(&counters.reduce_input_groups, groups);
    Counters::add(&counters.reduce_input_records, records);
    sink.finish(partition, store, counters)
}

/// Merges runs of `partition` through disk until at most `fan_in` spill files remain, so that
/// the final merge can hold one block of each in its share of the budget. Each pass merges a
/// window chosen by [`merge_window`] into one spill file that takes its place.
fn limit_fan_in(
    mut sources: Vec<Run>,
    partition: usize,
    partitions: usize,
    fan_in: usize,
    res: &Resources,
) -> Result<Vec<Run>, ExecError> {
    loop {
        let refs: Vec<&Run> = sources.iter().collect();
        let Some(window) = merge_window(&refs, fan_in, fan_in + 1) else {
            return Ok(sources);
        };
        let merged = merge_to_spill(
            &sources[window.clone()],
            partition..partition + 1,
            partitions,
            fan_in,
            res,
        )?;
        sources.splice(window, [merged]);
    }
}
