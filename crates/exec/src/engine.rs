//! Runs a [`Job`] on one machine: plan, map, reduce stage by stage, commit.

use std::sync::Arc;
use std::time::Instant;

use sluice_api::{
    ExecError, Job, JobConfig, JobReport, JobStatus, Phase, PhaseTiming, Stage, TaskContext,
};
use sluice_io::{JobCommitter, Storage};
use sluice_shuffle::{
    merge_early, merge_memory_early, LocalSpills, MergeSpec, Resources, RunCatalog, SPILL_BLOCK,
};
use sluice_spill::{MemoryPool, SpillDir};

use crate::commit::JobOutput;
use crate::map::{map_task, MapTask};
use crate::plan::{spill_parent, InputPlan, MemoryPlan};
use crate::reduce::{reduce_task, ReduceTarget};
use crate::shared::Shared;
use crate::tasks::{run_tasks, with_attempts};

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
    let memory = MemoryPlan::new(config.memory, config.threads, job.memory_per_task)?;
    memory.check_partitions(job)?;
    let started = Instant::now();
    status.enter(Phase::Planning, 0);
    let output = JobOutput::set_up(&config.stores, &config.output)?;
    let storage = &config.stores;
    let input = InputPlan::new(job, config, storage)?;
    status.set_input_bytes_total(input.bytes());

    let spills = LocalSpills::new(
        SpillDir::create_in(&spill_parent(config))?.with_write_chunk(memory.write_chunk),
        config.spill_codec,
        SPILL_BLOCK,
    );
    let res = Shared {
        runs: Resources::new(
            MemoryPool::new(memory.pool),
            memory.held_runs,
            Box::new(spills),
            memory.write_chunk,
            memory.sort_buckets,
            Arc::clone(&status),
        ),
        task_share: memory.task_share,
        table_block: memory.table_block,
    };
    let mut phases = Vec::new();

    let phase_start = Instant::now();
    let mut runs = map_phase(job, config, &input, storage, &res, &*output.committer)?;
    phases.push(timing("map", phase_start));

    for (index, stage) in job.stages.iter().enumerate() {
        let phase_start = Instant::now();
        let stage_runs = runs.take().map(RunCatalog::into_runs).unwrap_or_default();
        runs = reduce_stage(
            job,
            config,
            index,
            stage,
            stage_runs,
            &res,
            &*output.committer,
        )?;
        let name = if index == 0 {
            "reduce".to_string()
        } else {
            format!("reduce-{}", index + 1)
        };
        phases.push(timing(&name, phase_start));
    }

    let phase_start = Instant::now();
    status.enter(Phase::Commit, 1);
    let output = output.commit()?;
    phases.push(timing("commit", phase_start));
    status.enter(Phase::Done, 0);

    Ok(JobReport {
        job: job.name.clone(),
        output,
        input_files: input.files.len(),
        splits: input.splits.len(),
        reducers: job.stages.last().map_or(0, |s| s.partitions),
        threads: config.threads,
        memory_budget: config.memory,
        peak_memory_reserved: res.runs.pool().peak() + (config.memory - memory.pool),
        forced_memory: res.runs.pool().forced_bytes(),
        counters: status.counters.snapshot(),
        user_counters: status.user_counters(),
        phases,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Runs every map task; returns the first stage's runs (`None` for a map-only job, whose tasks
/// wrote the part files).
fn map_phase(
    job: &Job,
    config: &JobConfig,
    input: &InputPlan,
    storage: &dyn Storage,
    res: &Shared,
    committer: &dyn JobCommitter,
) -> Result<Option<RunCatalog>, ExecError> {
    let status = res.runs.status();
    status.enter(Phase::Map, input.splits.len() as u64);
    let catalog = job.stages.first().map(|_| RunCatalog::new());
    run_tasks(config.threads, input.splits.len(), status, |i| {
        let split = input.splits[i];
        let file = &input.files[split.file];
        let name = || {
            format!(
                "map task {i} ({}, bytes {}..{})",
                file.location(),
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
        with_attempts(config.map_attempts, status, name, context, |ctx| {
            let task = MapTask {
                task: i,
                attempt: ctx.attempt,
                split,
                file,
                storage,
            };
            map_task(&task, job, res, catalog.as_ref(), committer)
        })?;
        // Not part of the task: its runs are in the catalog now, and a retry would add them
        // twice.
        match (catalog.as_ref(), job.stages.first()) {
            (Some(catalog), Some(stage)) => {
                let spec = MergeSpec::of(stage);
                merge_early(catalog, spec, res.task_share, &res.runs)?;
                merge_memory_early(catalog, spec, &res.runs)
            }
            _ => Ok(()),
        }
    })?;
    let _ = res.runs.drop_spare_buffers();
    Ok(catalog)
}

/// Runs the reduce tasks of stage `index` over its input `runs`; returns the next stage's runs
/// (`None` after the last stage, whose tasks wrote the part files).
fn reduce_stage(
    job: &Job,
    config: &JobConfig,
    index: usize,
    stage: &Stage,
    runs: Vec<sluice_shuffle::Run>,
    res: &Shared,
    committer: &dyn JobCommitter,
) -> Result<Option<RunCatalog>, ExecError> {
    let status = res.runs.status();
    let next_stage = job.stages.get(index + 1);
    let next_catalog = next_stage.map(|_| RunCatalog::new());
    status.enter(Phase::Reduce, stage.partitions as u64);
    let target = match (next_stage, &next_catalog) {
        (Some(next), Some(catalog)) => ReduceTarget::Stage(next, catalog),
        _ => ReduceTarget::Files(committer),
    };
    run_tasks(config.threads, stage.partitions, status, |p| {
        let name = || format!("reduce task {p} of stage {}", index + 1);
        let context = |attempt| TaskContext {
            is_map: false,
            task: p,
            attempt,
            stage: index + 1,
        };
        with_attempts(config.reduce_attempts, status, name, context, |ctx| {
            reduce_task(ctx, &runs, stage, &target, job, res)
        })
    })?;
    let _ = res.runs.drop_spare_buffers();
    Ok(next_catalog)
}

fn timing(phase: &str, start: Instant) -> PhaseTiming {
    PhaseTiming {
        phase: phase.to_string(),
        seconds: start.elapsed().as_secs_f64(),
    }
}
