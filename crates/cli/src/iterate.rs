//! `sluice run pagerank|connected-components|kmeans`: the iterative jobs, on this machine.
//!
//! Each iteration is a job of the local driver; its progress is one line on stderr per
//! iteration, and the summary is the whole run's (the user's input files; map tasks, counters
//! and phase times of all its jobs added up; the output the last job wrote) with the
//! iteration count and whether the run converged.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use sluice_api::{JobConfig, JobStatus};
use sluice_format::Codec;
use sluice_jobs::{IterationStep, IterativeConfig, IterativeReport};

use crate::{progress, stores, CommonArgs, UsageError};

/// Options of `sluice run pagerank`.
#[derive(Args)]
pub(crate) struct PageRankArgs {
    /// Stop when an iteration changes the ranks by less than this, summed over all vertices
    /// (L1 norm).
    #[arg(long, default_value_t = 1e-6, value_parser = non_negative)]
    tolerance: f64,
    /// The most iterations to run.
    #[arg(long, default_value_t = 30, value_parser = crate::at_least_one)]
    iterations: usize,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

/// Options of `sluice run connected-components`.
#[derive(Args)]
pub(crate) struct ComponentsArgs {
    /// The most iterations to run (a component needs its diameter plus one).
    #[arg(long, default_value_t = 100, value_parser = crate::at_least_one)]
    iterations: usize,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

/// Options of `sluice run kmeans`.
#[derive(Args)]
pub(crate) struct KmeansArgs {
    /// Number of clusters; the first this many points are the initial centres.
    #[arg(long, short = 'k', value_parser = crate::at_least_one)]
    clusters: usize,
    /// Stop when no centre moves this far (Euclidean distance) in an iteration.
    #[arg(long, default_value_t = 1e-4, value_parser = non_negative)]
    tolerance: f64,
    /// The most iterations to run.
    #[arg(long, default_value_t = 20, value_parser = crate::at_least_one)]
    iterations: usize,
    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

fn non_negative(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(x) if x >= 0.0 && x.is_finite() => Ok(x),
        _ => Err(format!("expected a number of at least 0, got {text:?}")),
    }
}

/// The iterative job's settings from the common options; the cluster is refused.
fn iterative_config(args: &CommonArgs, iterations: usize, name: &str) -> Result<IterativeConfig> {
    if args.cluster.is_some() {
        return Err(UsageError(format!(
            "--cluster: {name} runs on this machine only (its iterations keep their state on the \
             local disk between jobs)"
        ))
        .into());
    }
    args.check()?;
    let memory = usize::try_from(args.memory()?).context("--memory is too large")?;
    let store_config = stores::store_config(&args.define)?;
    let inputs = stores::resolve_all("--input", &args.inputs(), &store_config)?;
    let output = stores::resolve("--output", &args.output, &store_config)?;
    let mut job = JobConfig::new(inputs, output)
        .with_stores(stores::stores(&store_config, name))
        .with_memory(memory)
        .with_threads(args.threads()?)
        .with_spill_codec(args.spill_codec.unwrap_or(Codec::Lz4))
        .with_reduce_split_bytes(args.reduce_split.0);
    if let Some(size) = args.split_size {
        job = job.with_fixed_split_size(size);
    }
    job = job.with_spill_parents(args.spill_dir.clone());
    Ok(IterativeConfig {
        job,
        reducers: args.reducers()?,
        max_iterations: iterations,
    })
}

/// What the convergence measure is called on the progress lines.
fn measure(algorithm: &str, delta: f64) -> String {
    match algorithm {
        "pagerank" => format!("L1 change {delta:.3e}"),
        "connected-components" => format!("{delta} label(s) changed"),
        _ => format!("largest centre move {delta:.3e}"),
    }
}

/// Runs one of the iterative jobs with the progress lines and summary.
fn run(
    args: &CommonArgs,
    name: &str,
    go: impl FnOnce(
        Arc<JobStatus>,
        sluice_jobs::Progress<'_>,
    ) -> Result<IterativeReport, sluice_api::ExecError>,
) -> Result<()> {
    let status = Arc::new(JobStatus::default());
    crate::cancel_on_ctrl_c(&status)?;
    let quiet = args.quiet;
    let mut print = |algorithm: &str, step: &IterationStep| {
        if !quiet {
            eprintln!(
                "sluice: {algorithm} iteration {}: {}{} ({:.2} s)",
                step.iteration,
                measure(algorithm, step.delta),
                if step.converged { ", converged" } else { "" },
                step.seconds
            );
        }
    };
    let report = go(status, &mut print)
        .with_context(|| format!("job {name} failed; no output was written"))?;
    if let Some(path) = &args.report {
        let mut json = serde_json::to_value(&report).context("cannot serialise the report")?;
        if let (Some(obj), Some(rss)) = (json.as_object_mut(), progress::peak_rss_bytes()) {
            obj.insert("peak_rss_bytes".into(), rss.into());
        }
        let text = serde_json::to_string_pretty(&json).context("cannot serialise the report")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write report {}", path.display()))?;
    }
    if !quiet {
        progress::print_summary(&report.output);
        eprintln!(
            "sluice: {name}: {} iteration(s), {} in {:.2} s",
            report.iterations,
            if report.converged {
                "converged"
            } else {
                "stopped at the iteration limit without converging"
            },
            report.wall_seconds
        );
    }
    Ok(())
}

/// `sluice run pagerank`.
pub(crate) fn pagerank(args: &PageRankArgs) -> Result<()> {
    let config = iterative_config(&args.common, args.iterations, "pagerank")?;
    let settings = sluice_jobs::PageRankSettings {
        tolerance: args.tolerance,
    };
    run(&args.common, "pagerank", |status, progress| {
        sluice_jobs::pagerank(&config, settings, status, progress)
    })
}

/// `sluice run connected-components`.
pub(crate) fn connected_components(args: &ComponentsArgs) -> Result<()> {
    let config = iterative_config(&args.common, args.iterations, "connected-components")?;
    run(&args.common, "connected-components", |status, progress| {
        sluice_jobs::connected_components(&config, status, progress)
    })
}

/// `sluice run kmeans`.
pub(crate) fn kmeans(args: &KmeansArgs) -> Result<()> {
    if args.clusters == 0 {
        bail!("--clusters must be at least 1");
    }
    let config = iterative_config(&args.common, args.iterations, "kmeans")?;
    let settings = sluice_jobs::KmeansSettings {
        clusters: args.clusters,
        tolerance: args.tolerance,
    };
    run(&args.common, "kmeans", |status, progress| {
        sluice_jobs::kmeans(&config, settings, status, progress)
    })
}
