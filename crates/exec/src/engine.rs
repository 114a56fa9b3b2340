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

use sluice_api::{
    AttemptFailure, Combine, Counters, Emit, ExecError, InputFormat, Job, JobConfig, JobReport,
    JobStatus, LineSource, MapInput, Phase, PhaseTiming, SplitOrder, Stage, TaskContext,
};
use sluice_io::{
    discover_inputs, plan_splits, FixedRecordReader, InputFile, IoError, LineReader,
    OutputCommitter, Split,
};
use sluice_mapside::{Collector, CollectorSpec, MapCombine, PartitioningCollector};
use sluice_shuffle::{
    merge_early, merge_memory_early, merge_partition, LocalSpills, MergeSpec, Resources, Run,
    RunCatalog, SORT_BLOCK, SPILL_BLOCK,
};
use sluice_sort::{CursorError, SortedCursor};
use sluice_spill::{MemoryPool, SpillDir};

use crate::part_file::TextOutput;

/// What the driver's tasks share: the shuffle's resources, and the memory each running task may
/// hold.
struct Shared {
    runs: Resources,
    /// Bytes each running task may hold.
    task_share: usize,
    /// Allocation unit of counting collectors' tables.
    table_block: usize,
}

impl Shared {
    /// A collector for `stage`'s input, allowed `limit` bytes, for the task of `ctx`.
    fn collector<'a>(
        &'a self,
        stage: &'a Stage,
        limit: usize,
        ctx: &TaskContext,
    ) -> PartitioningCollector<'a> {
        let combine = match &stage.combine {
            Combine::None => MapCombine::None,
            Combine::SumCounts => MapCombine::SumCounts(Arc::clone(&stage.partitioner)),
            Combine::Reducer(factory) => MapCombine::Reducer(factory(ctx)),
        };
        let spec = CollectorSpec {
            partitions: stage.partitions,
            order: &stage.order,
            combine,
        };
        PartitioningCollector::new(
            Collector::new(&self.runs, spec, limit, self.table_block),
            Arc::clone(&stage.partitioner),
        )
    }
}

/// Runs `job` as configured, reporting progress through `status`.
///
/// # Example
///
/// Lengths of the lines of a file, counted:
///
/// ```
/// use std::sync::Arc;
/// use sluice_api::{Combine, Emit, ExecError, Job, JobConfig, JobStatus, Mapper, Stage};
///
/// struct LineLength;
/// impl Mapper for LineLength {
///     fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
///         out.emit_count(line.len().to_string().as_bytes(), 1)
///     }
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("in.txt"), "ab\ncd\nefg\n")?;
/// let job = Job::new("line lengths", |_| LineLength).with_stage(
///     Stage::new(1, |_| sluice_jobs_sum::Sum).with_combine(Combine::SumCounts),
/// );
/// # mod sluice_jobs_sum {
/// #     use sluice_api::{decode_count, Emit, ExecError, Reducer, Values};
/// #     pub struct Sum;
/// #     impl Reducer for Sum {
/// #         fn reduce(&mut self, key: &[u8], values: &mut Values<'_>, out: &mut dyn Emit)
/// #             -> Result<(), ExecError> {
/// #             let mut total = 0;
/// #             while let Some(v) = values.next_value()? { total += decode_count(v)?; }
/// #             out.emit(key, total.to_string().as_bytes())
/// #         }
/// #     }
/// # }
/// let config = JobConfig::new(vec![dir.path().join("in.txt")], dir.path().join("out"));
/// let report = sluice_exec::run_job(&job, &config, Arc::new(JobStatus::default()))?;
/// assert_eq!(report.counters.map_input_records, 3);
/// let counts = std::fs::read_to_string(dir.path().join("out/part-r-00000"))?;
/// assert_eq!(counts, "2\t2\n3\t1\n");
/// # Ok(())
/// # }
/// ```
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
    let buffer_budget = buffer_budget(job, config)?;
    let started = Instant::now();
    status.enter(Phase::Planning, 0);
    let committer = OutputCommitter::create(&config.output)?;
    let (files, mut splits) = match config.planned.as_deref() {
        Some(plan) => (plan.files.clone(), plan.splits.clone()),
        None => {
            let files = discover_inputs(&config.inputs)?;
            let splits = plan_splits(&files, config.split_size);
            (files, splits)
        }
    };
    if job.split_order == SplitOrder::LargestFirst {
        splits.sort_by_key(|s| std::cmp::Reverse(s.len));
    }
    status
        .input_bytes_total
        .store(files.iter().map(|f| f.len).sum(), Ordering::Relaxed);

    let spill_parent = match &config.spill_parent {
        Some(dir) => dir.clone(),
        None => parent_dir(committer.final_dir()),
    };
    let pool = MemoryPool::new(buffer_budget);
    let held_cap = buffer_budget / 2;
    let task_share = (buffer_budget - held_cap) / config.threads;
    let write_chunk = (task_share / 16).clamp(64 * 1024, sluice_io::DIRECT_CHUNK);
    let spills = LocalSpills::new(
        SpillDir::create_in(&spill_parent)?.with_write_chunk(write_chunk),
        config.spill_codec,
        SPILL_BLOCK,
    );
    let res = Shared {
        runs: Resources::new(
            pool,
            held_cap,
            Box::new(spills),
            write_chunk,
            // At most a sixteenth of a task's share in partly filled blocks.
            (task_share / (16 * SORT_BLOCK)).clamp(1, 256),
            Arc::clone(&status),
        ),
        task_share,
        table_block: (task_share / 8).clamp(64 * 1024, 1 << 20),
    };
    let mut phases = Vec::new();

    // Map.
    let phase_start = Instant::now();
    status.enter(Phase::Map, splits.len() as u64);
    let first_store = job.stages.first().map(|_| RunCatalog::new());
    run_tasks(config.threads, splits.len(), &status, |i| {
        let split = splits[i];
        let file = &files[split.file];
        let name = || {
            format!(
                "map task {i} ({}, bytes {}..{})",
                file.path.display(),
                split.start,
                split.start + split.len
            )
        };
        let context = |attempt| TaskContext {
            is_map: true,
            task: i,
            attempt,
            stage: 1,
        };
        with_attempts(config.map_attempts, &status, name, context, |ctx| {
            let task = MapTask {
                task: i,
                attempt: ctx.attempt,
                split,
                file,
            };
            map_task(&task, job, &res, first_store.as_ref(), &committer)
        })?;
        // Not part of the task: its runs are in the store now, and a retry would add them
        // twice.
        match (first_store.as_ref(), job.stages.first()) {
            (Some(store), Some(stage)) => {
                let spec = MergeSpec::of(stage);
                merge_early(store, spec, res.task_share, &res.runs)?;
                merge_memory_early(store, spec, &res.runs)
            }
            _ => Ok(()),
        }
    })?;
    let _ = res.runs.drop_spare_buffers();
    phases.push(timing("map", phase_start));

    // Reduce stages.
    let mut input = first_store;
    for (index, stage) in job.stages.iter().enumerate() {
        let phase_start = Instant::now();
        let next_stage = job.stages.get(index + 1);
        let next_store = next_stage.map(|_| RunCatalog::new());
        let runs = input.take().map(RunCatalog::into_runs).unwrap_or_default();
        status.enter(Phase::Reduce, stage.partitions as u64);
        let target = match (next_stage, &next_store) {
            (Some(next), Some(store)) => ReduceTarget::Stage(next, store),
            _ => ReduceTarget::Files(&committer),
        };
        run_tasks(config.threads, stage.partitions, &status, |p| {
            let name = || format!("reduce task {p} of stage {}", index + 1);
            let context = |attempt| TaskContext {
                is_map: false,
                task: p,
                attempt,
                stage: index + 1,
            };
            with_attempts(config.reduce_attempts, &status, name, context, |ctx| {
                reduce_task(ctx, &runs, stage, &target, job, &res)
            })
        })?;
        let _ = res.runs.drop_spare_buffers();
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
        reducers: job.stages.last().map_or(0, |s| s.partitions),
        threads: config.threads,
        memory_budget: config.memory,
        peak_memory_reserved: res.runs.pool().peak() + (config.memory - buffer_budget),
        forced_memory: res.runs.pool().forced_bytes(),
        counters: status.counters.snapshot(),
        user_counters: status.user_counters(),
        phases,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// The part of the budget left for the pool (the tasks' buffers) once every worker thread's
/// task has its [`Job::memory_per_task`].
///
/// # Errors
/// [`ExecError::Config`] when that leaves less than [`MIN_MEMORY`](sluice_api::MIN_MEMORY).
fn buffer_budget(job: &Job, config: &JobConfig) -> Result<usize, ExecError> {
    let held_by_tasks = job.memory_per_task.saturating_mul(config.threads);
    config
        .memory
        .checked_sub(held_by_tasks)
        .filter(|&left| left >= sluice_api::MIN_MEMORY)
        .ok_or_else(|| {
            ExecError::Config(format!(
                "a memory budget of {} bytes is too small for {} running tasks that each hold \
                 {} bytes outside their buffers (a streaming program's shared-memory rings): \
                 at least {} bytes must be left for buffers; raise the budget, or lower the \
                 threads or the ring size",
                config.memory,
                config.threads,
                job.memory_per_task,
                sluice_api::MIN_MEMORY
            ))
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
pub fn run_tasks(
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

/// Runs one task up to `attempts` times until it succeeds. A failed attempt's output is
/// discarded by the attempt itself (its collector deletes its spill files when dropped, a part
/// file is recreated) and so are its counters (tasks count them when they finish; user counters
/// wait in the job status until their attempt succeeds); the job status records each failed
/// attempt for the front end.
fn with_attempts(
    attempts: usize,
    status: &JobStatus,
    name: impl Fn() -> String,
    context: impl Fn(usize) -> TaskContext,
    mut run: impl FnMut(&TaskContext) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    let mut attempt = 0;
    loop {
        let ctx = context(attempt);
        let result = run(&ctx);
        if result.is_ok() {
            status.commit_attempt(&ctx);
        } else {
            status.discard_attempt(&ctx);
        }
        // The front end hears of every failed attempt (a cancelled one is no failure).
        if let Err(e) = &result {
            if !matches!(e, ExecError::Cancelled) {
                status.attempt_failed(AttemptFailure {
                    attempt: ctx,
                    task: name(),
                    error: e.chain(),
                    attempts,
                    retried: attempt + 1 < attempts && e.is_retryable() && !status.is_cancelled(),
                });
            }
        }
        match result {
            Ok(()) => return Ok(()),
            Err(e) if attempt + 1 < attempts && e.is_retryable() && !status.is_cancelled() => {
                attempt += 1;
            }
            Err(e) if attempts > 1 && e.is_retryable() => {
                return Err(e.in_task(format!("{} (failed {attempts} attempts)", name())));
            }
            Err(e) => return Err(e.in_task(name())),
        }
    }
}

/// Counts what a mapper emits, then passes it on.
struct CountingEmit<E> {
    inner: E,
    records: u64,
    bytes: u64,
}

impl<E: Emit> Emit for CountingEmit<E> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        self.records += 1;
        self.bytes += (key.len() + value.len()) as u64;
        self.inner.emit(key, value)
    }

    fn emit_count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError> {
        self.records += 1;
        self.bytes += (key.len() + std::mem::size_of::<u64>()) as u64;
        self.inner.emit_count(key, count)
    }

    fn emit_counts(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        let key_bytes: usize = spans.iter().map(|&(start, end)| end - start).sum();
        self.records += spans.len() as u64;
        self.bytes += (key_bytes + spans.len() * std::mem::size_of::<u64>()) as u64;
        self.inner.emit_counts(text, spans, count)
    }
}

/// Where a task's output goes.
enum TaskSink<'a> {
    Collect(PartitioningCollector<'a>),
    Text(TextOutput),
}

impl Emit for TaskSink<'_> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        match self {
            TaskSink::Collect(c) => c.emit(key, value),
            TaskSink::Text(t) => t.emit(key, value),
        }
    }

    fn emit_count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError> {
        match self {
            TaskSink::Collect(c) => c.emit_count(key, count),
            TaskSink::Text(t) => t.emit_count(key, count),
        }
    }

    fn emit_counts(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        match self {
            TaskSink::Collect(c) => c.emit_counts(text, spans, count),
            TaskSink::Text(t) => t.emit_counts(text, spans, count),
        }
    }
}

impl TaskSink<'_> {
    /// Finishes the output of task `task`: hands runs to `store`, or flushes the part file.
    fn finish(
        self,
        task: usize,
        store: Option<&RunCatalog>,
        counters: &Counters,
    ) -> Result<(), ExecError> {
        match (self, store) {
            (TaskSink::Collect(c), Some(store)) => store.add(task, c.into_inner().finish()?),
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

/// One attempt of one map task.
struct MapTask<'a> {
    task: usize,
    attempt: usize,
    split: Split,
    file: &'a InputFile,
}

/// Reads a split's records in the job's [`InputFormat`].
enum SplitReader {
    Lines(LineReader),
    Fixed(FixedRecordReader),
}

impl SplitReader {
    fn open(format: InputFormat, file: &InputFile, split: &Split) -> Result<Self, IoError> {
        Ok(match format {
            InputFormat::Lines => SplitReader::Lines(LineReader::open(file, split)?),
            // Fixed-length rows are a sort's input, read once and usually larger than memory.
            InputFormat::FixedLength(len) => SplitReader::Fixed(
                FixedRecordReader::open(file, split, len)?.drop_consumed_pages(file),
            ),
        })
    }

    fn next(&mut self) -> Result<Option<(u64, &[u8])>, IoError> {
        match self {
            SplitReader::Lines(reader) => reader.next_line(),
            SplitReader::Fixed(reader) => reader.next_record(),
        }
    }

    fn bytes_consumed(&self) -> u64 {
        match self {
            SplitReader::Lines(reader) => reader.bytes_consumed(),
            SplitReader::Fixed(reader) => reader.bytes_consumed(),
        }
    }
}

/// A split's records, counted, with progress published and cancellation checked as they are
/// read.
struct SplitLines<'a> {
    reader: SplitReader,
    res: &'a Shared,
    records: u64,
    published_bytes: u64,
}

impl SplitLines<'_> {
    fn publish(&mut self) {
        let consumed = self.reader.bytes_consumed();
        let counters = &self.res.runs.status().counters;
        Counters::add(&counters.map_input_bytes, consumed - self.published_bytes);
        self.published_bytes = consumed;
    }
}

impl LineSource for SplitLines<'_> {
    fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, ExecError> {
        if self.records % CHECK_EVERY == CHECK_EVERY - 1 {
            self.res.runs.check_cancelled()?;
            self.publish();
        }
        let line = self.reader.next()?;
        if line.is_some() {
            self.records += 1;
        }
        Ok(line)
    }
}

fn map_task(
    t: &MapTask<'_>,
    job: &Job,
    res: &Shared,
    store: Option<&RunCatalog>,
    committer: &OutputCommitter,
) -> Result<(), ExecError> {
    let counters = &res.runs.status().counters;
    let mut input = SplitLines {
        reader: SplitReader::open(job.input, t.file, &t.split)?,
        res,
        records: 0,
        published_bytes: 0,
    };
    let mut mapper = (job.mapper)(&MapInput {
        task: t.task,
        attempt: t.attempt,
        file_index: t.split.file,
        path: t.file.path.clone(),
        start: t.split.start,
        length: t.split.len,
    });
    let ctx = TaskContext {
        is_map: true,
        task: t.task,
        attempt: t.attempt,
        stage: 1,
    };
    let sink = match job.stages.first() {
        Some(stage) => TaskSink::Collect(res.collector(stage, res.task_share, &ctx)),
        None => TaskSink::Text(TextOutput::create(
            committer,
            &job.part_names.name(true, t.task),
            &job.output,
            job.output_codec,
            job.lazy_output,
            res.runs.write_chunk(),
        )?),
    };
    let mut out = CountingEmit {
        inner: sink,
        records: 0,
        bytes: 0,
    };
    let ran = mapper.run(&mut input, &mut out);
    let (out_records, out_bytes) = (out.records, out.bytes);
    if let Err(e) = ran.and_then(|()| out.inner.finish(t.task, store, counters)) {
        // The input bytes shown as progress were not read by a successful attempt.
        Counters::sub(&counters.map_input_bytes, input.published_bytes);
        return Err(e);
    }
    input.publish();
    Counters::add(&counters.map_input_records, input.records);
    Counters::add(&counters.map_output_records, out_records);
    Counters::add(&counters.map_output_bytes, out_bytes);
    Counters::add(&counters.map_tasks, 1);
    Ok(())
}

/// Where a reduce stage's output goes.
enum ReduceTarget<'a> {
    /// Into the collectors of the next stage.
    Stage(&'a Stage, &'a RunCatalog),
    /// Into part files.
    Files(&'a OutputCommitter),
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
        if self.records % CHECK_EVERY == 0 && self.res_status.is_cancelled() {
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

fn reduce_task(
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
                committer,
                &job.part_names.name(false, partition),
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
    Counters::add(&counters.reduce_input_groups, input.groups);
    Counters::add(&counters.reduce_input_records, input.records);
    Ok(())
}
