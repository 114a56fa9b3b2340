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
use sluice_io::{
    discover_inputs, plan_splits, FixedRecordReader, InputFile, IoError, LineReader, OutputCodec,
    OutputCommitter, Split,
};
use sluice_sort::{KeyOrder, Merger, RecordBuffer, SortedCursor};
use sluice_spill::{MemoryPool, MemoryReservation, SpillDir};

use crate::api::{
    decode_count, encode_count, Combine, Emit, LineSource, MapInput, MapperFactory, Partitioner,
    ReducerFactory, TaskContext,
};
use crate::collector::{Collector, SPILL_BLOCK};
use crate::counters::UserCounters;
use crate::counters::{AttemptFailure, CounterValues, JobStatus, Phase};
use crate::output::{OutputFormat, PartNames, TextOutput};
use crate::shuffle::{merge_window, MemRunBuilder, MemRunQuota, Run, RunSink, ShuffleStore};
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
    /// How this stage's keys are sorted (default: unsigned bytes).
    pub order: KeyOrder,
}

/// A complete job: a mapper and zero or more reduce stages. With no stage the job is map-only
/// and every map task writes its own part file.
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
    /// How the part files are named.
    pub part_names: PartNames,
    /// In which order map tasks are numbered.
    pub split_order: SplitOrder,
    /// Create a part file only for a task that writes a record (Hadoop's `-lazyOutput`).
    pub lazy_output: bool,
    /// How part files are compressed (Hadoop's output codec; the file name gets its
    /// extension). Default: not at all.
    pub output_codec: OutputCodec,
    /// How the input files are cut into records.
    pub input: InputFormat,
    /// Memory each running task holds outside the pool for as long as it runs (a streaming
    /// program's shared-memory rings), in bytes. It is taken off the budget once per worker
    /// thread before the pool is made, so that buffers and this memory together stay within
    /// the budget. Default 0.
    pub memory_per_task: usize,
}

impl Job {
    /// A job with the default output conventions: `part-r-NNNNN`/`part-m-NNNNN` files, map
    /// tasks in input order, an empty part file for a task without output.
    pub fn new(
        name: impl Into<String>,
        mapper: MapperFactory,
        stages: Vec<Stage>,
        output: OutputFormat,
    ) -> Job {
        Job {
            name: name.into(),
            mapper,
            stages,
            output,
            part_names: PartNames::Typed,
            split_order: SplitOrder::Input,
            lazy_output: false,
            output_codec: OutputCodec::None,
            input: InputFormat::Lines,
            memory_per_task: 0,
        }
    }
}

/// In which order the splits become map tasks `0, 1, ...` — which decides the part file
/// numbers of a map-only job and the order in which equal keys of different tasks meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SplitOrder {
    /// Input order: files sorted by path, each file's splits in file order.
    #[default]
    Input,
    /// Largest split first, ties in input order: Hadoop's `JobSubmitter` order.
    LargestFirst,
}

/// How the input files are cut into the records a mapper sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// Lines, as Hadoop's `TextInputFormat` reads them: the record is the line without its
    /// terminator, its offset the line's first byte.
    #[default]
    Lines,
    /// Records of a fixed number of bytes, as Hadoop's `TeraInputFormat` reads its 100-byte
    /// rows: a file ending inside a record is an error.
    FixedLength(usize),
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
    /// Partitions of the last stage, each written by a reduce task to a part file; 0 for a
    /// map-only job (whose map tasks write the part files).
    pub reducers: usize,
    /// Worker threads.
    pub threads: usize,
    /// The memory budget in bytes.
    pub memory_budget: usize,
    /// The most bytes reserved from the budget at once, counting what the tasks hold outside
    /// their buffers ([`Job::memory_per_task`] for every thread) as reserved throughout.
    pub peak_memory_reserved: usize,
    /// Bytes reserved beyond the budget for records larger than it (normally 0).
    pub forced_memory: usize,
    /// Hadoop-style counters.
    pub counters: CounterValues,
    /// Counters the job's own code reported, by group and name.
    pub user_counters: UserCounters,
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
    /// Allocation unit of hash-mode collectors' tables.
    pub(crate) collector_block: usize,
    /// Chunk size of file writers (each holds two): a small, fixed share of a task's memory.
    pub(crate) write_chunk: usize,
    /// Storage buckets of sort-mode record buffers (see [`RecordBuffer::with_buckets`]).
    pub(crate) sort_buckets: usize,
    /// Record buffers of finished tasks, emptied but with their memory and its reservation,
    /// for the next task on any thread: a task then writes into memory that is already
    /// mapped instead of faulting in fresh pages (measured: about 3 GB of page faults in a
    /// 10 GB sort). Emptied at the end of each phase so that the memory returns to the pool.
    pub(crate) spare_buffers: Mutex<Vec<(RecordBuffer, MemoryReservation)>>,
    pub(crate) status: Arc<JobStatus>,
}

/// Block size of sort-mode record buffers: small enough that every storage bucket can have a
/// partly filled one, large enough that allocations are rare.
pub(crate) const SORT_BLOCK: usize = 64 * 1024;

impl Resources {
    /// A record buffer for a collector of `partitions` partitions allowed `limit` bytes: a spare
    /// one (with its reservation) if one fits, else a new, empty one.
    pub(crate) fn record_buffer(
        &self,
        partitions: usize,
        limit: usize,
    ) -> (RecordBuffer, MemoryReservation) {
        let mut spares = self.spare_buffers.lock().unwrap_or_else(|p| p.into_inner());
        let fits = spares.iter().rposition(|(buffer, reservation)| {
            buffer.has_layout(SORT_BLOCK, partitions, self.sort_buckets)
                && reservation.size() <= limit
        });
        match fits {
            Some(i) => spares.swap_remove(i),
            None => (
                RecordBuffer::with_buckets(SORT_BLOCK, partitions, self.sort_buckets),
                self.pool.empty_reservation(),
            ),
        }
    }

    /// Keeps an emptied record buffer and its reservation for the next task.
    pub(crate) fn offer_record_buffer(&self, buffer: RecordBuffer, reservation: MemoryReservation) {
        if buffer.is_empty() {
            let mut spares = self.spare_buffers.lock().unwrap_or_else(|p| p.into_inner());
            spares.push((buffer, reservation));
        }
    }

    /// Frees the spare record buffers (at the end of a phase, or when memory is short);
    /// returns whether there were any.
    pub(crate) fn drop_spare_buffers(&self) -> bool {
        let spares =
            std::mem::take(&mut *self.spare_buffers.lock().unwrap_or_else(|p| p.into_inner()));
        !spares.is_empty()
    }

    /// Reserves `bytes` from the pool, freeing the spare record buffers first if the pool is
    /// short, and beyond the budget (a *forced* reservation, reported) only if that is not
    /// enough.
    fn reserve_or_force(&self, bytes: usize) -> MemoryReservation {
        if let Some(reservation) = self.pool.try_reserve(bytes) {
            return reservation;
        }
        if self.drop_spare_buffers() {
            if let Some(reservation) = self.pool.try_reserve(bytes) {
                return reservation;
            }
        }
        self.pool.reserve_forced(bytes)
    }

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
    let res = Resources {
        quota: MemRunQuota::new(pool.clone(), held_cap),
        pool,
        spill_dir: SpillDir::create_in(&spill_parent)?.with_write_chunk(write_chunk),
        codec: config.spill_codec,
        task_share,
        collector_block: (task_share / 8).clamp(64 * 1024, 1 << 20),
        write_chunk,
        // At most a sixteenth of a task's share in partly filled blocks.
        sort_buckets: (task_share / (16 * SORT_BLOCK)).clamp(1, 256),
        spare_buffers: Mutex::new(Vec::new()),
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
                merge_early(store, stage, &res)?;
                merge_memory_early(store, stage, &res)
            }
            _ => Ok(()),
        }
    })?;
    let _ = res.drop_spare_buffers();
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
        let _ = res.drop_spare_buffers();
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
        peak_memory_reserved: res.pool.peak() + (config.memory - buffer_budget),
        forced_memory: res.pool.forced_bytes(),
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
/// [`ExecError::Config`] when that leaves less than [`MIN_MEMORY`](crate::MIN_MEMORY).
fn buffer_budget(job: &Job, config: &JobConfig) -> Result<usize, ExecError> {
    let held_by_tasks = job.memory_per_task.saturating_mul(config.threads);
    config
        .memory
        .checked_sub(held_by_tasks)
        .filter(|&left| left >= crate::MIN_MEMORY)
        .ok_or_else(|| {
            ExecError::Config(format!(
                "a memory budget of {} bytes is too small for {} running tasks that each hold \
                 {} bytes outside their buffers (a streaming program's shared-memory rings): \
                 at least {} bytes must be left for buffers; raise the budget, or lower the \
                 threads or the ring size",
                config.memory,
                config.threads,
                job.memory_per_task,
                crate::MIN_MEMORY
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
pub(crate) fn run_tasks(
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
    res: &'a Resources,
    records: u64,
    published_bytes: u64,
}

impl SplitLines<'_> {
    fn publish(&mut self) {
        let consumed = self.reader.bytes_consumed();
        let counters = &self.res.status.counters;
        Counters::add(&counters.map_input_bytes, consumed - self.published_bytes);
        self.published_bytes = consumed;
    }
}

impl LineSource for SplitLines<'_> {
    fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, ExecError> {
        if self.records % CHECK_EVERY == CHECK_EVERY - 1 {
            self.res.check_cancelled()?;
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
    res: &Resources,
    store: Option<&ShuffleStore>,
    committer: &OutputCommitter,
) -> Result<(), ExecError> {
    let counters = &res.status.counters;
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
        Some(stage) => TaskSink::Collect(Collector::new(res, stage, res.task_share, ctx)),
        None => TaskSink::Text(TextOutput::create(
            committer,
            &job.part_names.name(true, t.task),
            &job.output,
            job.output_codec,
            job.lazy_output,
            res.write_chunk,
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

/// Merges spill files of finished map tasks while other map tasks still run, when they have
/// piled up (see [`ShuffleStore::take_merge_window`]): the work is done while the input is
/// still being read, and the reduce tasks start with fewer runs to merge.
fn merge_early(store: &ShuffleStore, stage: &Stage, res: &Resources) -> Result<(), ExecError> {
    let fan_in = (res.task_share / READER_COST).max(2);
    let Some(window) = store.take_merge_window(fan_in) else {
        return Ok(());
    };
    let place = (window[0].0, window[0].1);
    let runs: Vec<Run> = window.into_iter().map(|(_, _, run)| run).collect();
    let merged = merge_to_spill(&runs, 0..stage.partitions, stage, fan_in, res);
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

/// Memory runs merged at once by [`merge_memory_early`]; a merge starts when the finished
/// tasks hold twice as many.
const MEMORY_MERGE_WIDTH: usize = 8;

/// Merges the memory runs of finished map tasks while other map tasks still run, summing the
/// counts of equal keys, when the stage's combiner sums counts ([`Combine::SumCounts`]).
///
/// Each task of a word count holds a run of the same ~10^5 distinct words; merging eight into
/// one frees the memory of seven, so later tasks keep their output in memory instead of
/// spilling it, and the reduce tasks (only one, by default) have far fewer records to merge
/// after the last map task, when only they can run. The merged run stays in memory if the
/// budget's share for held runs allows, else it becomes a spill file.
fn merge_memory_early(
    store: &ShuffleStore,
    stage: &Stage,
    res: &Resources,
) -> Result<(), ExecError> {
    if !matches!(stage.combine, Combine::SumCounts) {
        return Ok(());
    }
    let Some(window) = store.take_memory_window(MEMORY_MERGE_WIDTH) else {
        return Ok(());
    };
    let place = (window[0].0, window[0].1);
    let runs: Vec<Run> = window.into_iter().map(|(_, _, run)| run).collect();
    let merged = merge_summing(&runs, stage, res);
    drop(runs);
    match merged {
        Ok(run) => {
            store.end_merge(place, Some(run));
            Ok(())
        }
        Err(e) => {
            store.end_merge(place, None);
            Err(e.in_task("merge of memory runs during the map phase"))
        }
    }
}

/// Merges `runs` (oldest first, all partitions) into one run, writing one record per distinct
/// key with the sum of its counts: into memory if the held-runs share allows (the output is no
/// larger than the input), else into a spill file.
fn merge_summing(runs: &[Run], stage: &Stage, res: &Resources) -> Result<Run, ExecError> {
    let bytes: u64 = runs.iter().map(Run::bytes).sum();
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    match res.quota.try_reserve(bytes) {
        Some(reservation) => {
            let mut builder = MemRunBuilder::new(stage.partitions, bytes, reservation);
            let records = write_merged(runs, 0..stage.partitions, stage, &mut builder, res)?;
            count_combined(stage, res, records);
            Counters::add(&res.status.counters.memory_runs, 1);
            Ok(Run::Memory(Arc::new(builder.finish())))
        }
        None => merge_to_spill(runs, 0..stage.partitions, stage, MEMORY_MERGE_WIDTH, res),
    }
}

/// Writes the merge of the `selected` partitions of `runs` to `sink`; returns the records read
/// and written. When the stage's combiner sums counts, byte-equal keys are summed into one
/// record, as Hadoop runs the combiner over merged spills: later merges and the reducer then
/// read each key about once per merged run instead of once per map task.
fn write_merged(
    runs: &[Run],
    selected: std::ops::Range<usize>,
    stage: &Stage,
    sink: &mut dyn RunSink,
    res: &Resources,
) -> Result<(u64, u64), ExecError> {
    let summing = matches!(stage.combine, Combine::SumCounts);
    let (mut input, mut output) = (0, 0);
    let mut key = Vec::new();
    for partition in selected {
        res.check_cancelled()?;
        let cursors = runs
            .iter()
            .filter(|run| run.has_records(partition))
            .map(|run| run.open(partition))
            .collect::<Result<Vec<_>, _>>()?;
        let mut merge = Merger::with_order(cursors, stage.order.clone());
        if !summing {
            while merge.advance()? {
                sink.write(partition, merge.key(), merge.value())?;
                input += 1;
            }
            output = input;
            continue;
        }
        let mut sum: Option<u64> = None;
        while merge.advance()? {
            input += 1;
            let count = decode_count(merge.value())?;
            match sum {
                Some(total) if merge.key() == key.as_slice() => {
                    sum = Some(total.wrapping_add(count));
                    continue;
                }
                Some(total) => {
                    sink.write(partition, &key, &encode_count(total))?;
                    output += 1;
                }
                None => {}
            }
            key.clear();
            key.extend_from_slice(merge.key());
            sum = Some(count);
        }
        if let Some(total) = sum {
            sink.write(partition, &key, &encode_count(total))?;
            output += 1;
        }
    }
    Ok((input, output))
}

/// Counts the records a merge gave to and took from the summing combiner.
fn count_combined(stage: &Stage, res: &Resources, (input, output): (u64, u64)) {
    if matches!(stage.combine, Combine::SumCounts) {
        let counters = &res.status.counters;
        Counters::add(&counters.combine_input_records, input);
        Counters::add(&counters.combine_output_records, output);
    }
}

/// Merges the `selected` partitions of `runs` (oldest first) into one new spill file of
/// `partitions` partitions, holding at most `fan_in` readers' memory; counts are summed when
/// the stage's combiner sums them (see [`write_merged`]).
fn merge_to_spill(
    runs: &[Run],
    selected: std::ops::Range<usize>,
    stage: &Stage,
    fan_in: usize,
    res: &Resources,
) -> Result<Run, ExecError> {
    let _readers = res.reserve_or_force(fan_in * READER_COST + 2 * res.write_chunk);
    let mut writer = res
        .spill_dir
        .create_writer(stage.partitions, res.codec, SPILL_BLOCK)?;
    let records = write_merged(runs, selected, stage, &mut writer, res)?;
    count_combined(stage, res, records);
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
    fn advance(&mut self) -> Result<bool, sluice_format::FormatError> {
        if !self.merge.advance()? {
            return Ok(false);
        }
        self.records += 1;
        if self.records % CHECK_EVERY == 0 && self.res_status.is_cancelled() {
            // Reported as cancellation by the task once the reducer returns.
            return Err(sluice_format::FormatError::Io {
                source_name: "reduce input".into(),
                error: std::io::Error::new(std::io::ErrorKind::Interrupted, "job cancelled"),
            });
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
    res: &Resources,
) -> Result<(), ExecError> {
    let partition = ctx.task;
    let counters = &res.status.counters;
    let (reader_share, mut sink, store) = match target {
        ReduceTarget::Stage(next, store) => (
            res.task_share / 2,
            TaskSink::Collect(Collector::new(res, next, res.task_share / 2, *ctx)),
            Some(*store),
        ),
        ReduceTarget::Files(committer) => (
            res.task_share.saturating_sub(2 * res.write_chunk),
            TaskSink::Text(TextOutput::create(
                committer,
                &job.part_names.name(false, partition),
                &job.output,
                job.output_codec,
                job.lazy_output,
                res.write_chunk,
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
    let sources = limit_fan_in(sources, partition, stage, fan_in, res)?;
    let disk_readers = sources.iter().filter(|r| r.is_disk()).count();
    let _readers = res.reserve_or_force(disk_readers * READER_COST);
    let cursors = sources
        .iter()
        .map(|r| r.open(partition))
        .collect::<Result<Vec<_>, _>>()?;
    let mut input = ReduceInput {
        merge: Merger::with_order(cursors, stage.order.clone()),
        res_status: Arc::clone(&res.status),
        records: 0,
        groups: 0,
        last_key: Vec::new(),
    };
    let mut reducer = (stage.reducer)(ctx);
    let result = reducer.run(&mut input, &mut sink);
    // `ReduceInput` reports a cancelled job as a read error; say what it was.
    res.check_cancelled()?;
    result?;
    sink.finish(partition, store, counters)?;
    Counters::add(&counters.reduce_input_groups, input.groups);
    Counters::add(&counters.reduce_input_records, input.records);
    Ok(())
}

/// Merges runs of `partition` through disk until at most `fan_in` spill files remain, so that
/// the final merge can hold one block of each in its share of the budget. Each pass merges a
/// window chosen by [`merge_window`] into one spill file that takes its place.
fn limit_fan_in(
    mut sources: Vec<Run>,
    partition: usize,
    stage: &Stage,
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
            stage,
            fan_in,
            res,
        )?;
        sources.splice(window, [merged]);
    }
}
