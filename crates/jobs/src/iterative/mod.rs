//! Iterative jobs: PageRank, connected components and k-means, each run as a chain of
//! MapReduce jobs in one process.
//!
//! Every iteration is an ordinary [`Job`] run by the local driver ([`sluice_exec::run_job`]):
//! the engine's planning, memory budget, spills, shuffle and committer are the same as for any
//! other job. What the iteration driver adds ([`Scratch`]) is where the iterations' data lives:
//! each iteration's output is committed to a private scratch directory on a local disk (beside
//! the spill files), which the next iteration reads as its input; the user's output location
//! is written once, by a last job that turns the final state into the result, through the
//! usual committer (`_SUCCESS` and all). The scratch directory is removed when the run ends,
//! failed or not.
//!
//! A convergence test needs one number per iteration (PageRank's L1 change, the labels that
//! changed, the centres' moves). Reducers add their partition's share into a [`Tally`] slot
//! when their task succeeds, so a retried attempt replaces its share rather than adding it
//! twice, and the driver sums the slots in partition order (the same sum every run).

mod components;
mod generate;
mod kmeans;
mod pagerank;
mod parse;

pub use components::connected_components;
pub use generate::{rmat_edges, GraphShape, PointsShape, PointsWriter, RmatEdges};
pub use kmeans::{kmeans, KmeansSettings};
pub use pagerank::{pagerank, PageRankSettings, DAMPING};

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;
use sluice_api::{
    Emit, ExecError, Job, JobConfig, JobReport, JobStatus, PhaseTiming, Reducer, SortedInput,
    TaskContext, Values,
};
use sluice_io::{IoError, Location, Storage};

/// How an iterative job runs, beyond the engine's own settings.
#[derive(Debug, Clone)]
pub struct IterativeConfig {
    /// Inputs, the final output, memory, threads, stores: as for any job. Every iteration and
    /// the final job run with these settings (and so within its memory budget), one at a time.
    pub job: JobConfig,
    /// Partitions (part files) of the final output.
    pub reducers: usize,
    /// The most iterations run; the result is that of the last one run if the convergence
    /// test has not passed by then.
    pub max_iterations: usize,
}

/// One iteration, as the progress lines and the report show it.
#[derive(Debug, Clone, Serialize)]
pub struct IterationStep {
    /// From 1.
    pub iteration: usize,
    /// The number the convergence test looks at: PageRank's L1 change of the ranks, the
    /// count of labels that changed, the largest distance a centre moved.
    pub delta: f64,
    /// Whether the test passed at this iteration.
    pub converged: bool,
    /// Wall time of the iteration's job.
    pub seconds: f64,
}

/// What an iterative job reports.
#[derive(Debug, Clone, Serialize)]
pub struct IterativeReport {
    /// `pagerank`, `connected-components` or `kmeans`.
    pub algorithm: String,
    /// Iterations run.
    pub iterations: usize,
    /// Whether the convergence test passed (else the iteration limit stopped the run).
    pub converged: bool,
    /// Every iteration, in order.
    pub steps: Vec<IterationStep>,
    /// The whole run as one job's report: the output and settings of the last job (the one
    /// that wrote the output); input files of the user's input; map tasks, counters and time
    /// per phase of all the run's jobs added up (they share one status); the run's peak
    /// memory and wall time.
    pub output: JobReport,
    /// Wall time of the whole run.
    pub wall_seconds: f64,
}

/// Receives each iteration as it ends (the command line prints it).
pub type Progress<'a> = &'a mut dyn FnMut(&str, &IterationStep);

/// The iterations' private directory and the jobs run in it.
pub(crate) struct Scratch<'a> {
    dir: tempfile::TempDir,
    config: &'a IterativeConfig,
    status: Arc<JobStatus>,
    jobs: usize,
    started: Instant,
    /// The most memory any job of the run reserved at once.
    peak: usize,
    /// Input files of the first job (the user's input).
    input_files: Option<usize>,
    /// Map tasks of the jobs so far.
    splits: usize,
    /// Time per phase of the jobs so far, added up by phase.
    phases: Vec<PhaseTiming>,
}

impl<'a> Scratch<'a> {
    /// Checks `config` and makes the scratch directory where spills would go
    /// ([`sluice_exec::spill_parent`]). The final output is refused here if it exists,
    /// before any iteration runs.
    pub(crate) fn new(
        config: &'a IterativeConfig,
        status: Arc<JobStatus>,
    ) -> Result<Scratch<'a>, ExecError> {
        config.job.validate()?;
        if config.max_iterations == 0 {
            return Err(ExecError::Config(
                "the iteration limit must be at least 1".into(),
            ));
        }
        let output = &config.job.output;
        if config.job.stores.status(output)?.is_some() {
            return Err(IoError::OutputExists {
                path: PathBuf::from(output.to_string()),
            }
            .into());
        }
        let parent = sluice_exec::spill_parent(&config.job);
        let io = |e: std::io::Error| {
            ExecError::Io(IoError::Write {
                path: parent.clone(),
                source: e,
            })
        };
        std::fs::create_dir_all(&parent).map_err(io)?;
        let dir = tempfile::Builder::new()
            .prefix(".sluice-iterations-")
            .tempdir_in(&parent)
            .map_err(io)?;
        Ok(Scratch {
            dir,
            config,
            status,
            jobs: 0,
            started: Instant::now(),
            peak: 0,
            input_files: None,
            splits: 0,
            phases: Vec::new(),
        })
    }

    /// Runs `job` on `inputs` (the user's when `None`) into a new scratch directory, and
    /// returns that directory.
    fn run_into_scratch(
        &mut self,
        job: &Job,
        inputs: Option<Vec<Location>>,
    ) -> Result<(PathBuf, JobReport), ExecError> {
        self.jobs += 1;
        let out = self
            .dir
            .path()
            .join(format!("{:04}-{}", self.jobs, job.name));
        let mut config = self.config.job.clone();
        if let Some(inputs) = inputs {
            config.inputs = inputs;
            config.planned = None;
        }
        config.output = Location::from_path(&out);
        let report = sluice_exec::run_job(job, &config, Arc::clone(&self.status))?;
        self.account(&report);
        Ok((out, report))
    }

    /// Adds a job's report to the run's.
    fn account(&mut self, report: &JobReport) {
        self.peak = self.peak.max(report.peak_memory_reserved);
        self.input_files.get_or_insert(report.input_files);
        self.splits = self.splits.saturating_add(report.splits);
        for timing in &report.phases {
            match self.phases.iter_mut().find(|p| p.phase == timing.phase) {
                Some(sum) => sum.seconds += timing.seconds,
                None => self.phases.push(timing.clone()),
            }
        }
    }

    /// Runs `job` on `inputs` into a new scratch directory, and returns that directory.
    pub(crate) fn run(
        &mut self,
        job: &Job,
        inputs: Vec<Location>,
    ) -> Result<(PathBuf, JobReport), ExecError> {
        self.run_into_scratch(job, Some(inputs))
    }

    /// Runs `job` on the user's inputs into a new scratch directory.
    pub(crate) fn run_on_input(&mut self, job: &Job) -> Result<(PathBuf, JobReport), ExecError> {
        self.run_into_scratch(job, None)
    }

    /// Runs the final `job` on `input` (a scratch directory) into the user's output.
    pub(crate) fn finish(
        self,
        job: &Job,
        input: &std::path::Path,
        algorithm: &str,
        steps: Vec<IterationStep>,
        converged: bool,
    ) -> Result<IterativeReport, ExecError> {
        let mut config = self.config.job.clone();
        config.inputs = vec![Location::from_path(input)];
        config.planned = None;
        let mut output = sluice_exec::run_job(job, &config, Arc::clone(&self.status))?;
        let mut run = self;
        run.account(&output);
        let wall_seconds = run.started.elapsed().as_secs_f64();
        output.peak_memory_reserved = run.peak;
        output.input_files = run.input_files.unwrap_or(output.input_files);
        output.splits = run.splits;
        output.phases = run.phases;
        output.wall_seconds = wall_seconds;
        Ok(IterativeReport {
            algorithm: algorithm.to_string(),
            iterations: steps.len(),
            converged,
            steps,
            output,
            wall_seconds,
        })
    }

    /// Partitions of an iteration's stage: enough to keep every thread busy.
    pub(crate) fn partitions(&self) -> usize {
        self.config.reducers.max(self.config.job.threads)
    }

    /// The status every job of the run reports to.
    pub(crate) fn status(&self) -> &JobStatus {
        &self.status
    }
}

/// Removes a scratch directory an iteration no longer needs (the one before the latest).
pub(crate) fn discard(dir: &std::path::Path) {
    // Its space is only reclaimed early; the whole scratch directory goes at the end anyway.
    let _ = std::fs::remove_dir_all(dir);
}

/// Per-partition shares of an iteration's aggregate (see the module's documentation).
pub(crate) struct Tally<T> {
    slots: Mutex<Vec<Option<T>>>,
}

impl<T: Clone + Send + 'static> Tally<T> {
    pub(crate) fn new(partitions: usize) -> Arc<Tally<T>> {
        Arc::new(Tally {
            slots: Mutex::new(vec![None; partitions]),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Option<T>>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The shares of the partitions that reported, in partition order.
    pub(crate) fn shares(&self) -> Vec<T> {
        self.lock().iter().flatten().cloned().collect()
    }

    fn set(&self, task: usize, share: T) {
        if let Some(slot) = self.lock().get_mut(task) {
            *slot = Some(share);
        }
    }
}

/// A reducer whose share of an aggregate is recorded when its task's input is all reduced.
pub(crate) trait Tallied: Reducer {
    /// The share.
    type Share: Clone + Send + 'static;
    /// This reducer's share so far.
    fn share(&self) -> Self::Share;
}

/// Runs a [`Tallied`] reducer and records its share in slot `task` of `tally` once its
/// input has all been reduced.
pub(crate) struct Tallying<R: Tallied> {
    pub(crate) inner: R,
    pub(crate) tally: Arc<Tally<R::Share>>,
    pub(crate) task: usize,
}

impl<R: Tallied> Tallying<R> {
    pub(crate) fn new(inner: R, tally: &Arc<Tally<R::Share>>, ctx: &TaskContext) -> Self {
        Tallying {
            inner,
            tally: Arc::clone(tally),
            task: ctx.task,
        }
    }
}

impl<R: Tallied> Reducer for Tallying<R> {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        self.inner.reduce(key, values, out)
    }

    fn run(&mut self, input: &mut dyn SortedInput, out: &mut dyn Emit) -> Result<(), ExecError> {
        self.inner.run(input, out)?;
        self.tally.set(self.task, self.inner.share());
        Ok(())
    }
}

/// The step record of iteration `iteration` that took since `started`.
pub(crate) fn step(
    iteration: usize,
    delta: f64,
    converged: bool,
    started: Instant,
) -> IterationStep {
    IterationStep {
        iteration,
        delta,
        converged,
        seconds: started.elapsed().as_secs_f64(),
    }
}
