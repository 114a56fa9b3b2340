//! Running jobs on many machines: `--cluster workers=HOST:PORT,...`, and `sluice worker`.
//!
//! Workers are started by something else (systemd, a container, a test harness) with
//! `sluice worker --listen ADDR:PORT --secret-file FILE`; a job given `--cluster
//! workers=...` and the same secret runs its tasks on them, and commits its output from
//! here. The secret is a file only its owner can read (`sluice secret FILE` makes one).

use std::io::Write as _;
use std::net::{SocketAddr, ToSocketAddrs};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use sluice_api::JobStatus;
use sluice_cluster::{
    ClusterJob, ClusterReport, Worker, WorkerList, WorkerSettings, WorkerStop, YarnSettings,
};
use sluice_io::OwnedDir;
use sluice_net::Secret;

use crate::size::human_bytes;
use crate::{default_threads, parse_size_arg, thread_count};

/// Where a job runs, when not on this machine alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ClusterTarget {
    /// Workers started by something else, by address.
    Workers(WorkerList),
    /// Workers YARN starts for the job, this many.
    Yarn(usize),
}

/// Workers a YARN job asks for when `--cluster yarn` does not say.
const DEFAULT_YARN_WORKERS: usize = 2;

/// Parses `--cluster`: `workers=HOST:PORT,...`, `yarn` or `yarn:N`.
pub(crate) fn parse_cluster(text: &str) -> Result<ClusterTarget, String> {
    if text == "yarn" {
        return Ok(ClusterTarget::Yarn(DEFAULT_YARN_WORKERS));
    }
    if let Some(n) = text.strip_prefix("yarn:") {
        return match n.parse::<usize>() {
            Ok(n) if n > 0 => Ok(ClusterTarget::Yarn(n)),
            _ => Err(format!(
                "--cluster {text}: expected yarn:N with N at least 1"
            )),
        };
    }
    match text.split_once('=') {
        Some(("workers", list)) => WorkerList::parse(list).map(ClusterTarget::Workers),
        _ => Err(format!(
            "--cluster {text}: expected workers=HOST:PORT[,HOST:PORT...], yarn or yarn:N"
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

/// `--listen`'s address: an IP address and port, or a host name and port, resolved to its
/// first address (as `--cluster workers=` resolves names).
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let mut addrs = text
        .to_socket_addrs()
        .map_err(|e| format!("{text}: expected ADDR:PORT or HOST:PORT: {e}"))?;
    addrs
        .next()
        .ok_or_else(|| format!("{text}: the name resolves to no address"))
}

/// `sluice worker`'s options.
#[derive(Args)]
pub(crate) struct WorkerArgs {
    /// The address to listen on for coordinators, e.g. 10.0.0.5:7070 or a host name that
    /// resolves to this machine, localhost:7070 (no default: a worker listens only where it is
    /// told to). Each job's shuffle listens on the address the coordinator reached, at a port
    /// of its own.
    #[arg(
        long,
        value_name = "ADDR:PORT",
        value_parser = listen_address,
        required_unless_present = "connect",
        conflicts_with = "connect"
    )]
    listen: Option<SocketAddr>,
    /// Instead of listening, connect to the coordinator at HOST:PORT, work for its job, and
    /// exit (how workers start in YARN containers).
    #[arg(long, value_name = "HOST:PORT")]
    connect: Option<String>,
    /// The cluster's secret (a file readable by its owner only) [default: $SLUICE_SECRET_FILE].
    #[arg(long)]
    secret_file: Option<PathBuf>,
    /// Directory for the files of the jobs this worker runs: spills and received runs (unless
    /// --spill-dirs), streaming programs' work directories and logs (a local disk)
    /// [default: sluice-worker-PORT in the system's temporary directory].
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// Directory for streaming programs' stderr logs, named by task attempt; those of a failed
    /// job stay there (on YARN: the container's log directory) [default: in each job's
    /// directory in the scratch directory].
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Directories for the jobs' spill files, one per local disk, used in turn, passing over
    /// a disk with less than 1 GiB left while another has more (as Hadoop's local
    /// directories; on YARN: the container's LOCAL_DIRS) [default: the scratch directory].
    #[arg(long, value_name = "DIR,...", value_delimiter = ',')]
    spill_dirs: Vec<PathBuf>,
    /// Memory budget of a job's buffers on this worker, e.g. 4GiB.
    #[arg(long, short = 'm', default_value = "1GiB", value_parser = parse_size_arg)]
    memory: u64,
    /// Tasks run at once [default: number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Ports each job's shuffle may listen on, FIRST-LAST (e.g. 7100-7199, one per job at a
    /// time; for a firewall) [default: a port the system picks].
    #[arg(long, value_name = "FIRST-LAST")]
    shuffle_ports: Option<sluice_cluster::PortRange>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Runs `sluice worker`: until the process is stopped (`--listen`), or until the
/// coordinator is done with it (`--connect`).
pub(crate) fn run_worker(args: &WorkerArgs) -> Result<()> {
    let secret = read_secret(args.secret_file.as_deref())?;
    let memory = usize::try_from(args.memory).context("--memory is too large")?;
    let threads = args.threads.unwrap_or_else(default_threads);
    let port = args.listen.map_or(0, |a| a.port());
    // A worker's own scratch directory stays locked while it runs (see `default_scratch`).
    let (scratch, _scratch_lock, abandoned) = match &args.scratch {
        Some(scratch) => (scratch.clone(), None, Vec::new()),
        None => default_scratch(port)?,
    };
    // Jobs move the worker into the directory they were submitted from: a relative scratch
    // directory is the one under the directory the worker started in.
    let scratch = std::path::absolute(&scratch)
        .with_context(|| format!("--scratch {}", scratch.display()))?;
    let stop = WorkerStop::new();
    let mut settings =
        WorkerSettings::new(scratch.clone(), memory, threads, secret).with_stop(stop.clone());
    if let Some(ports) = args.shuffle_ports {
        settings = settings.with_shuffle_ports(ports);
    }
    // A job removes the logs of its attempts from the log directory when it succeeds: a
    // directory two workers share would lose one's logs to the other's job. Locked for as
    // long as this worker runs.
    let _log_dir_lock = match &args.log_dir {
        Some(dir) => {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .with_context(|| format!("--log-dir: cannot create {}", dir.display()))?;
            let lock = match OwnedDir::lock(dir) {
                Ok(lock) => lock,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => bail!(
                    "--log-dir {}: another worker uses it; give each worker a log directory \
                     of its own",
                    dir.display()
                ),
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("--log-dir: cannot lock {}", dir.display()))
                }
            };
            settings = settings.with_log_dir(dir.clone());
            Some(lock)
        }
        None => None,
    };
    // Checked now rather than at each job's start.
    for dir in &args.spill_dirs {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--spill-dirs: cannot create {}", dir.display()))?;
    }
    settings = settings.with_spill_dirs(args.spill_dirs.clone());
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
    for dir in &abandoned {
        log(&format!(
            "removed {}, left by a worker that is no longer running",
            dir.display()
        ));
    }
    stop_on_signal(&stop, Arc::clone(&log))?;
    // The default scratch directory is this worker's to remove once empty; one given is not.
    let remove_scratch = || {
        if args.scratch.is_none() {
            let _ = std::fs::remove_dir(&scratch);
        }
    };
    if let Some(coordinator) = &args.connect {
        let addr = coordinator
            .to_socket_addrs()
            .with_context(|| format!("--connect {coordinator}"))?
            .next()
            .with_context(|| format!("--connect {coordinator}: resolves to no address"))?;
        let result = Worker::connect(addr, settings, stores, log);
        remove_scratch();
        return match result {
            Err(sluice_cluster::ClusterError::Stopped) => Ok(()),
            result => {
                result.with_context(|| format!("working for the coordinator at {coordinator}"))
            }
        };
    }
    let Some(listen) = args.listen else {
        bail!("give --listen ADDR:PORT or --connect HOST:PORT");
    };
    let worker = Worker::bind(listen, settings, stores, Arc::clone(&log))
        .with_context(|| format!("cannot start a worker on {listen}"))?;
    log(&format!(
        "listening on {} ({threads} threads, {} per job, scratch {})",
        worker.local_addr().unwrap_or(listen),
        human_bytes(args.memory),
        scratch.display()
    ));
    let served = worker.serve();
    // The job directories are gone with the worker's sessions; the scratch directory itself
    // goes once nothing is left in it.
    drop(worker);
    remove_scratch();
    served.context("the worker stopped")?;
    log("stopped");
    Ok(())
}

/// The scratch directory of a worker started without `--scratch`: `sluice-worker-PORT` in the
/// system's temporary directory, made for this user only, so that the next worker on the same
/// port removes what a killed one left there. Workers on no fixed port get one each,
/// `sluice-worker-pidPID`, locked for as long as the worker runs (the lock returned): the next
/// such worker removes those whose worker is gone, however it died, scratch and all (the
/// directories removed are returned, for the log).
fn default_scratch(port: u16) -> Result<(PathBuf, Option<OwnedDir>, Vec<PathBuf>)> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    const OWN_PREFIX: &str = "sluice-worker-pid";
    let (name, abandoned) = match port {
        0 => (
            format!("{OWN_PREFIX}{}", std::process::id()),
            sluice_io::remove_abandoned(&std::env::temp_dir(), OWN_PREFIX.as_ref()),
        ),
        port => (format!("sluice-worker-{port}"), Vec::new()),
    };
    let dir = std::env::temp_dir().join(name);
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
    }
    // Another user's directory of that name (a worker of theirs on the same port of another
    // address) is not ours to use.
    let meta = std::fs::symlink_metadata(&dir)
        .with_context(|| format!("cannot read {}", dir.display()))?;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() {
        bail!(
            "{} is not a directory of this user's; give the worker a scratch directory with --scratch",
            dir.display()
        );
    }
    let lock = match port {
        0 => Some(OwnedDir::lock(&dir).with_context(|| format!("cannot lock {}", dir.display()))?),
        _ => None,
    };
    Ok((dir, lock, abandoned))
}

/// Makes `SIGTERM` and Ctrl-C stop the worker cleanly (see [`WorkerStop`]); another one while
/// it winds down (a task that does not notice it is cancelled) exits at once. A worker started
/// with `SIGHUP` or `SIGINT` ignored (`nohup`) keeps ignoring them.
fn stop_on_signal(stop: &WorkerStop, log: Arc<sluice_cluster::Log>) -> Result<()> {
    let stop = stop.clone();
    let first = std::sync::OnceLock::<std::time::Instant>::new();
    crate::on_interrupt(move || {
        let now = std::time::Instant::now();
        match first.get() {
            // The same signal delivered twice (see `cancel_on_ctrl_c`).
            Some(at) if now.duration_since(*at) < crate::SAME_INTERRUPT => {}
            Some(_) => {
                log("asked again to stop; exiting now");
                std::process::exit(i32::from(crate::streaming::INTERRUPTED));
            }
            None => {
                let _ = first.set(now);
                log("stopping: a running job is ended and its files removed");
                stop.stop();
            }
        }
    })
    .context("cannot install the signal handler")
}

/// How long a worker of a running job may stay silent before it is taken for lost:
/// `SLUICE_WORKER_TIMEOUT` (seconds), else [`sluice_cluster::DEFAULT_WORKER_TIMEOUT`].
pub(crate) fn worker_timeout() -> Result<std::time::Duration> {
    let Some(value) = std::env::var_os("SLUICE_WORKER_TIMEOUT") else {
        return Ok(sluice_cluster::DEFAULT_WORKER_TIMEOUT);
    };
    value
        .to_str()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&seconds| seconds > 0)
        .map(std::time::Duration::from_secs)
        .with_context(|| {
            format!(
                "SLUICE_WORKER_TIMEOUT={}: expected a whole number of seconds, at least 1",
                value.to_string_lossy()
            )
        })
}

/// Runs `job` on `target`'s workers, with the secret from `secret_file` (else
/// `SLUICE_SECRET_FILE`; a YARN job without either makes a secret of its own).
pub(crate) fn run_on(
    target: &ClusterTarget,
    secret_file: Option<&Path>,
    job: ClusterJob<'_>,
    memory: u64,
    threads: usize,
    status: Arc<JobStatus>,
) -> Result<ClusterReport> {
    match target {
        ClusterTarget::Workers(workers) => {
            let secret = read_secret(secret_file)?;
            Ok(sluice_cluster::run_on_workers(
                job, workers, &secret, status,
            )?)
        }
        ClusterTarget::Yarn(workers) => {
            run_on_yarn(*workers, secret_file, job, memory, threads, status)
        }
    }
}

/// Runs `job` on `workers` workers in YARN containers.
fn run_on_yarn(
    workers: usize,
    secret_file: Option<&Path>,
    job: ClusterJob<'_>,
    memory: u64,
    threads: usize,
    status: Arc<JobStatus>,
) -> Result<ClusterReport> {
    let setting = |key: &str| {
        job.defines
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim().to_string())
    };
    // The job's own secret unless the user keeps one: YARN starts the workers for this job
    // alone and hands them the file privately.
    let own_secret = match secret_file.map(Path::to_path_buf).or_else(|| {
        std::env::var_os(SECRET_ENV)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }) {
        Some(path) => SecretFile::Given(path),
        None => SecretFile::made()?,
    };
    let secret = read_secret(Some(own_secret.path()))?;
    let listen = coordinator_address(setting("sluice.coordinator.address").as_deref())?;
    let shuffle_ports = setting("sluice.shuffle.ports")
        .map(|v| {
            v.parse::<sluice_cluster::PortRange>()
                .map_err(|e| anyhow::anyhow!("-D sluice.shuffle.ports={e}"))
        })
        .transpose()?;
    let wait = match setting("sluice.yarn.wait.seconds") {
        Some(v) => Duration::from_secs(
            v.parse()
                .with_context(|| format!("-D sluice.yarn.wait.seconds={v}: expected seconds"))?,
        ),
        None => Duration::from_secs(300),
    };
    let yarn = YarnSettings {
        java: java()?,
        classpath: yarn_classpath()?,
        binary: std::env::current_exe().context("cannot find the sluice binary to ship")?,
        secret_file: own_secret.path().to_path_buf(),
        workers,
        worker_memory: memory,
        container_mb: sluice_cluster::container_mb(memory, threads, job.job.memory_per_task as u64),
        threads,
        queue: setting("mapreduce.job.queuename"),
        name: format!("sluice {}", job.job.name),
        listen,
        wait,
        shuffle_ports,
    };
    Ok(sluice_cluster::run_on_yarn(job, &yarn, &secret, status)?)
}

/// A secret file: the user's, or one made for a job and removed (with its directory) after it.
enum SecretFile {
    Given(PathBuf),
    Made {
        _dir: tempfile::TempDir,
        path: PathBuf,
    },
}

impl SecretFile {
    fn made() -> Result<SecretFile> {
        let dir = tempfile::Builder::new()
            .prefix("sluice-secret-")
            .tempdir()
            .context("cannot make a directory for the job's secret")?;
        let path = dir.path().join("secret");
        write_secret(&path)?;
        Ok(SecretFile::Made { _dir: dir, path })
    }

    fn path(&self) -> &Path {
        match self {
            SecretFile::Given(path) | SecretFile::Made { path, .. } => path,
        }
    }
}

/// Where the coordinator listens for YARN's workers: `-D sluice.coordinator.address=HOST[:PORT]`,
/// else this host's name's address (an address the cluster's nodes reach), any port. The
/// workers are told to connect to it, so a wildcard (`0.0.0.0`, `::`) is refused: it names no
/// host a worker could reach.
fn coordinator_address(given: Option<&str>) -> Result<SocketAddr> {
    if let Some(text) = given {
        let with_port = if text.contains(':')
            && !text.starts_with('[')
            && text.parse::<std::net::Ipv6Addr>().is_ok()
        {
            format!("[{text}]:0")
        } else if text.contains(':') {
            text.to_string()
        } else {
            format!("{text}:0")
        };
        let addr = with_port
            .to_socket_addrs()
            .with_context(|| format!("-D sluice.coordinator.address={text}"))?
            .next()
            .with_context(|| format!("-D sluice.coordinator.address={text}: no address"))?;
        if addr.ip().is_unspecified() {
            anyhow::bail!(
                "-D sluice.coordinator.address={text}: the workers connect to this address, \
                 and a wildcard names no host they can reach; give this host's name or one of \
                 its addresses on the cluster's network"
            );
        }
        return Ok(addr);
    }
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let addrs: Vec<SocketAddr> = (host.as_str(), 0)
        .to_socket_addrs()
        .map(Iterator::collect)
        .unwrap_or_default();
    Ok(addrs
        .iter()
        .find(|a| a.is_ipv4() && !a.ip().is_loopback())
        .or_else(|| addrs.first())
        .copied()
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0))))
}

/// The `java` to run YARN's submitter: `$JAVA_HOME/bin/java`, else the one on `PATH`.
fn java() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        let java = PathBuf::from(home).join("bin/java");
        if java.exists() {
            return Ok(java);
        }
    }
    Ok(PathBuf::from("java"))
}

/// The submitter's class path: `HADOOP_CONF_DIR`, Hadoop's client jars
/// (`SLUICE_YARN_CLASSPATH`, else what `hadoop classpath` prints), and `sluice-yarn.jar`.
fn yarn_classpath() -> Result<String> {
    let mut parts = Vec::new();
    if let Some(conf) = std::env::var_os("HADOOP_CONF_DIR").filter(|c| !c.is_empty()) {
        parts.push(PathBuf::from(conf).display().to_string());
    }
    let hadoop = match std::env::var("SLUICE_YARN_CLASSPATH") {
        Ok(cp) if !cp.is_empty() => cp,
        _ => {
            let out = std::process::Command::new("hadoop")
                .arg("classpath")
                .output()
                .context(
                    "--cluster yarn needs Hadoop's client classes: put the `hadoop` command on \
                     PATH, or set SLUICE_YARN_CLASSPATH",
                )?;
            if !out.status.success() {
                bail!(
                    "`hadoop classpath` failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };
    parts.push(hadoop);
    parts.push(yarn_jar()?.display().to_string());
    Ok(parts.join(":"))
}

/// `sluice-yarn.jar`: `SLUICE_YARN_JAR`, else beside the binary (`../share/sluice/`, the
/// same directory, or a build tree's `target/yarn/`).
fn yarn_jar() -> Result<PathBuf> {
    if let Some(jar) = std::env::var_os("SLUICE_YARN_JAR").filter(|j| !j.is_empty()) {
        return Ok(PathBuf::from(jar));
    }
    let exe = std::env::current_exe().context("cannot find the sluice binary")?;
    let dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    let candidates = [
        dir.join("../share/sluice/sluice-yarn.jar"),
        dir.join("sluice-yarn.jar"),
        dir.join("../yarn/sluice-yarn.jar"),
        dir.join("../../yarn/sluice-yarn.jar"),
    ];
    candidates
        .iter()
        .find(|c| c.exists())
        .cloned()
        .with_context(|| {
            format!(
                "--cluster yarn needs sluice-yarn.jar (`make yarn` builds it): set \
                 SLUICE_YARN_JAR, or put it in {}",
                dir.join("../share/sluice").display()
            )
        })
}

/// Prints each worker's part of a job.
pub(crate) fn print_workers(report: &ClusterReport) {
    for w in &report.workers {
        crate::progress::say_more(&worker_line(w));
    }
}

/// One worker's part of a job, on one line: `worker HOST (ADDRESS): map tasks=...`.
pub(crate) fn worker_line(w: &sluice_cluster::WorkerSummary) -> String {
    let s = &w.shuffle;
    format!(
        "worker {} ({}{}): map tasks={} reduce tasks={} failed attempts={} input={} \
         pushed={} in {} pushes ({} outputs batched) over {} connections, pushing for {} \
         received={} (to disk {}), receiving for {} pulled={} kept for pulls moved to disk={} \
         disk read={} written={} \
         memory budget={} peak reserved={} peak resident={}",
        w.host,
        w.worker,
        w.container
            .as_ref()
            .map_or_else(String::new, |c| format!(", {c}")),
        w.map_tasks,
        w.reduce_tasks,
        w.failed_attempts,
        human_bytes(w.counters.map_input_bytes),
        human_bytes(s.pushed_bytes),
        s.pushes,
        s.batched_outputs,
        s.push_connections,
        seconds(s.pushing_micros),
        human_bytes(s.received_bytes),
        human_bytes(s.received_to_disk_bytes),
        seconds(s.receiving_micros),
        human_bytes(s.pulled_bytes),
        human_bytes(s.kept_to_disk_bytes),
        human_bytes(s.disk_read_bytes),
        human_bytes(s.disk_write_bytes),
        human_bytes(w.memory_budget),
        human_bytes(w.peak_memory_reserved),
        w.peak_rss_bytes
            .map_or_else(|| "unknown".to_string(), human_bytes),
    )
}

/// Microseconds as seconds, to the hundredth, as the job's phases are printed: `2.05 s`.
fn seconds(micros: u64) -> String {
    format!(
        "{}.{:02} s",
        micros / 1_000_000,
        micros % 1_000_000 / 10_000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_times_are_printed_as_the_phases_are() {
        assert_eq!(seconds(0), "0.00 s");
        assert_eq!(seconds(2_059_999), "2.05 s");
        assert_eq!(seconds(61_000_000), "61.00 s");
    }

    #[test]
    fn the_coordinator_address_names_a_host_the_workers_can_reach() {
        let addr = coordinator_address(Some("127.0.0.1:7077")).unwrap();
        assert_eq!(addr, SocketAddr::from(([127, 0, 0, 1], 7077)));
        // No port: any.
        assert_eq!(coordinator_address(Some("127.0.0.1")).unwrap().port(), 0);
        assert_eq!(
            coordinator_address(Some("::1")).unwrap(),
            "[::1]:0".parse().unwrap()
        );
        for wildcard in ["0.0.0.0", "0.0.0.0:7077", "::", "[::]:7077"] {
            let err = coordinator_address(Some(wildcard)).unwrap_err().to_string();
            assert!(err.contains("wildcard"), "{wildcard}: {err}");
        }
        assert!(coordinator_address(Some("no such host.invalid")).is_err());
        // Unset: this host's name's address, never a wildcard.
        assert!(!coordinator_address(None).unwrap().ip().is_unspecified());
    }

    /// `--listen` takes an address or a host name, resolved (localhost to loopback), and says
    /// what is wrong with anything else.
    #[test]
    fn a_worker_listens_at_an_address_or_a_host_name() {
        assert_eq!(
            listen_address("10.0.0.5:7070").unwrap(),
            "10.0.0.5:7070".parse::<SocketAddr>().unwrap()
        );
        let local = listen_address("localhost:7070").unwrap();
        assert!(local.ip().is_loopback() && local.port() == 7070, "{local}");
        assert!(listen_address("localhost").is_err());
        assert!(listen_address("no such host.invalid:1").is_err());
    }
}
