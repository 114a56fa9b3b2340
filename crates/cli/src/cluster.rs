//! Running jobs on many machines: `--cluster workers=HOST:PORT,...`, and `sluice worker`.
//!
//! Workers are started by something else (systemd, a container, a test harness) with
//! `sluice worker --listen ADDR:PORT --secret-file FILE`; a job given `--cluster
//! workers=...` and the same secret runs its tasks on them, and commits its output from
//! here. The secret is a file only its owner can read (`sluice secret FILE` makes one).

use std::io::Write as _;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use sluice_api::JobStatus;
use sluice_cluster::{ClusterJob, ClusterReport, Worker, WorkerList, WorkerSettings};
use sluice_net::Secret;

use crate::size::human_bytes;
use crate::{at_least_one, default_threads, parse_size_arg};

/// Where a job runs, when not on this machine alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClusterTarget {
    /// Workers started by something else, by address.
    Workers(WorkerList),
}

/// Parses `--cluster`: `workers=HOST:PORT,...`.
pub(crate) fn parse_cluster(text: &str) -> Result<ClusterTarget, String> {
    match text.split_once('=') {
        Some(("workers", list)) => WorkerList::parse(list).map(ClusterTarget::Workers),
        _ if text == "yarn" => Err(
            "--cluster yarn is not available in this build yet; start workers with `sluice \
             worker` and give --cluster workers=HOST:PORT,..."
                .into(),
        ),
        _ => Err(format!(
            "--cluster {text}: expected workers=HOST:PORT[,HOST:PORT...]"
        )),
    }
}

/// The environment variable naming the cluster's secret file when `--secret-file` is not
/// given.
pub(crate) const SECRET_ENV: &str = "SLUICE_SECRET_FILE";

/// The cluster's secret: from `path`, else from the file `SLUICE_SECRET_FILE` names.
pub(crate) fn read_secret(path: Option<&Path>) -> Result<Secret> {
    let path = match path {
        Some(path) => path.to_path_buf(),
        None => match std::env::var_os(SECRET_ENV) {
            Some(path) if !path.is_empty() => PathBuf::from(path),
            _ => bail!(
                "the cluster's secret is needed: give --secret-file FILE or set {SECRET_ENV} \
                 (`sluice secret FILE` makes one; give the workers the same file)"
            ),
        },
    };
    Secret::read_file(&path).with_context(|| format!("cannot read the secret {}", path.display()))
}

/// `sluice secret FILE`: writes a new secret, readable by its owner only.
pub(crate) fn write_secret(path: &Path) -> Result<()> {
    let secret = Secret::generate().context("cannot make a secret")?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create {} (it must not exist)", path.display()))?;
    writeln!(file, "{}", secret.to_hex())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// `sluice worker`'s options.
#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// The address to listen on, e.g. 10.0.0.5:7070 (no default: a worker listens only where
    /// it is told to). Coordinators connect here; each job's shuffle listens on the same
    /// address's host at a port of its own.
    #[arg(long)]
    listen: SocketAddr,
    /// The cluster's secret (a file readable by its owner only) [default: $SLUICE_SECRET_FILE].
    #[arg(long)]
    secret_file: Option<PathBuf>,
    /// Directory for the spill files of the jobs this worker runs (a local disk) [default: the
    /// system's temporary directory].
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Memory budget of a job's buffers on this worker, e.g. 4GiB.
    #[arg(long, short = 'm', default_value = "1GiB", value_parser = parse_size_arg)]
    memory: u64,
    /// Tasks run at once [default: number of cores].
    #[arg(long, short = 't', value_parser = at_least_one)]
    threads: Option<usize>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Runs `sluice worker` until the process is stopped.
pub(crate) fn run_worker(args: &WorkerArgs) -> Result<()> {
    let secret = read_secret(args.secret_file.as_deref())?;
    let memory = usize::try_from(args.memory).context("--memory is too large")?;
    let threads = args.threads.unwrap_or_else(default_threads);
    let scratch = args.scratch.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("sluice-worker-{}", args.listen.port()))
    });
    let settings = WorkerSettings::new(args.listen, scratch.clone(), memory, threads, secret);
    let stores: Arc<sluice_cluster::StoresFactory> = Arc::new(|defines, job| {
        let config = crate::stores::store_config(defines).map_err(|e| format!("{e:#}"))?;
        Ok(crate::stores::stores(&config, job))
    });
    let quiet = args.quiet;
    let log: Arc<sluice_cluster::Log> = Arc::new(move |line: &str| {
        if !quiet {
            eprintln!(
                "{} sluice worker: {line}",
                chrono::Local::now().format("%y/%m/%d %H:%M:%S")
            );
        }
    });
    let worker = Worker::bind(settings, stores, Arc::clone(&log))
        .with_context(|| format!("cannot start a worker on {}", args.listen))?;
    log(&format!(
        "listening on {} ({threads} threads, {} per job, scratch {})",
        worker.local_addr(),
        human_bytes(args.memory),
        scratch.display()
    ));
    worker.serve().context("the worker stopped")?;
    Ok(())
}

/// Runs `job` on `target`'s workers, with the secret from `secret_file` (else
/// `SLUICE_SECRET_FILE`).
pub(crate) fn run_on(
    target: &ClusterTarget,
    secret_file: Option<&Path>,
    job: ClusterJob<'_>,
    status: Arc<JobStatus>,
) -> Result<ClusterReport> {
    let ClusterTarget::Workers(workers) = target;
    let secret = read_secret(secret_file)?;
    Ok(sluice_cluster::run_on_workers(
        job, workers, &secret, status,
    )?)
}

/// Prints each worker's part of a job.
pub(crate) fn print_workers(report: &ClusterReport) {
    for w in &report.workers {
        let s = &w.shuffle;
        eprintln!(
            "  worker {} ({}): map tasks={} reduce tasks={} failed attempts={} input={} \
             pushed={} received={} (to disk {}) pulled={} disk read={} written={}",
            w.host,
            w.worker,
            w.map_tasks,
            w.reduce_tasks,
            w.failed_attempts,
            human_bytes(w.counters.map_input_bytes),
            human_bytes(s.pushed_bytes),
            human_bytes(s.received_bytes),
            human_bytes(s.received_to_disk_bytes),
            human_bytes(s.pulled_bytes),
            human_bytes(s.disk_read_bytes),
            human_bytes(s.disk_write_bytes),
        );
    }
}
