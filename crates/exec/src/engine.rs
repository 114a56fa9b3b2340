//! Runs a [`Job`] on one machine: plan, map, reduce stage by stage, commit.

use std::sync::Arc;
use std::time::Instant;

use sluice_api::{
    ExecError, Job, JobConfig, JobReport, JobStatus, Phase, PhaseTiming, Stage, TaskContext,
};
use sluice_io::{JobCommitter, Storage};

use crate::commit::JobOutput;
use crate::host::{HostSettings, MapAttempt, TaskHost};
use crate::plan::{spill_parent, spill_parents, InputPlan};
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
    let started = Instant::now();
    status.enter(Phase::Planning, 0);
    let settings = HostSettings::new(config.memory, config.threads, spill_parent(config))
        .with_spill_parents(spill_parents(config))
        .with_spill_codec(config.spill_codec)
        .with_reduce_split_bytes(config.reduce_split_bytes);
    // A job that cannot run is refused before its output is touched; the spill directory
    // comes after the output's set-up, which makes the output's parent (where spills go by
    // default).
    TaskHost::check(job, &settings)?;
    let output = JobOutput::set_up_for(job, &config.stores, &config.output)?;
    let host = TaskHost::new(job, &settings, Arc::clone(&status))?;
    let storage = &config.stores;
    let input = InputPlan::new(job, config, storage)?;
    status.set_input_bytes_total(input.bytes());
    let mut phases = Vec::new();

    let phase_start = Instant::now();
    map_phase(job, config, &input, storage, &host, &*output.committer)?;
    phases.push(timing("map", phase_start));

    for (index, stage) in job.stages.iter().enumerate() {
        let phase_start = Instant::now();
        reduce_stage(job, config, index, stage, &host, &*output.committer)?;
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
        peak_memory_reserved: host.peak_memory_reserved(),
        forced_memory: host.forced_memory(),
        counters: status.counters.snapshot(),
        user_counters: status.user_counters(),
        phases,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Checks, before any of the job's work, that its places can be written: the output set up
/// (its staging directory made, then removed) and a spill directory made (and removed) where
/// the job's spills go. [`run_job`] does the same as it starts; work that comes before the
/// job (TeraSort's sampling of its input) calls this first, so that a read-only, full or
/// missing place is reported before that work rather than after it.
///
/// # Errors
/// As [`JobOutput::set_up`] ([`IoError::OutputExists`](sluice_io::IoError::OutputExists),
/// [`IoError::CreateOutput`](sluice_io::IoError::CreateOutput), ...); a spill directory that
/// cannot be made ([`SpillError::CreateDir`](sluice_spill::SpillError::CreateDir)).
pub fn check_places(config: &JobConfig) -> Result<(), ExecError> {
    let output = JobOutput::set_up(&config.stores, &config.output)?;
    let spills: Result<Vec<_>, _> = spill_parents(config)
        .iter()
        .map(|parent| sluice_spill::SpillDir::create_in(parent))
        .collect();
    // Dropping the output aborts it: its staging directory goes, nothing is left.
    drop(output);
    spills.map(drop).map_err(ExecError::from)
}

/// Runs every map task; their runs are the host's first stage's input (a map-only job's
/// tasks write the part files).
fn map_phase(
    job: &Job,
    config: &JobConfig,
    input: &InputPlan,
    storage: &dyn Storage,
    host: &TaskHost,
    committer: &dyn JobCommitter,
) -> Result<(), ExecError> {
    let status = host.status();
    status.enter(Phase::Map, input.splits.len() as u64);
    run_tasks(config.threads, input.splits.len(), status, |i| {
        let split = &input.splits[i];
        let name = || format!("map task {i} ({})", input.describe(split));
        let context = |attempt| TaskContext {
            is_map: true,
            task: i,
            attempt,
            stage: 1,
        };
        with_attempts(config.map_attempts, status, name, context, |ctx| {
            let attempt = MapAttempt {
                task: i,
                attempt: ctx.attempt,
                split,
                files: &input.files,
            };
            host.run_map(job, attempt, storage, committer)
        })
    })?;
    host.end_phase();
    Ok(())
}

/// Runs the reduce tasks of stage `index` over the host's runs of its input; their output is
/// the next stage's input, or the part files after the last stage.
fn reduce_stage(
    job: &Job,
    config: &JobConfig,
    index: usize,
    stage: &Stage,
    host: &TaskHost,
    committer: &dyn JobCommitter,
) -> Result<(), ExecError> {
    let status = host.status();
    let runs = host.seal(index)?;
    status.enter(Phase::Reduce, stage.partitions as u64);
    let result = run_tasks(config.threads, stage.partitions, status, |p| {
        let name = || format!("reduce task {p} of stage {}", index + 1);
        let context = |attempt| TaskContext {
            is_map: false,
            task: p,
            attempt,
            stage: index + 1,
        };
        with_attempts(config.reduce_attempts, status, name, context, |ctx| {
            host.run_reduce(job, ctx, &runs, committer)
        })
    });
    // The stage's runs are read: their memory and files go now, not with the host.
    drop(runs);
    host.release(index);
    result?;
    host.end_phase();
    Ok(())
}

fn timing(phase: &str, start: Instant) -> PhaseTiming {
    PhaseTiming {
        phase: phase.to_string(),
        seconds: start.elapsed().as_secs_f64(),
    }
}
