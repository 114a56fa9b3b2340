//! The coordinator: plans a job, hands its tasks to workers, and commits its output.
//!
//! ```text
//!  connect + hello (cluster secret) ─► set up the output ─► plan the splits
//!   ─► Start (spec, inputs, staging, job secret), the job's files
//!   ─► JobReady (shuffle address) ─► Peers
//!   ─► map tasks, each worker kept busy with as many as it has threads
//!   ─► per stage: Flush (held-back pushes) ─► Seal
//!       ─► reduce tasks (each reads its partition from every worker) ─► Release
//!   ─► commit ─► End
//! ```
//!
//! A failed attempt is retried (on another worker when there is one) up to the job's
//! attempts. A worker lost is not a failure of its tasks; what it held is made again on the
//! others, the cheapest way that is still possible:
//!
//! * **in place**, while the lineage of what it held is still kept: a map task's output (its
//!   split is always there to read again), and a first stage's partitions, finished or not
//!   (their input, the map outputs, is kept until the stage ends). A loss in a later stage
//!   costs nothing when the worker owned none of the stage's unfinished partitions, nor a
//!   finished one whose output the next stage reads.
//! * **by starting the job again** from its map phase on the workers left otherwise: a lost
//!   partition of stage `k > 1` needs stage `k`'s input, made by stage `k - 1`'s tasks from
//!   their own input, let go (`Release`) once they had read it — and that input went partly
//!   with the same worker, back to the map outputs. Keeping every stage's input and outputs
//!   until the job ends would let only the lost lineage run again, but it would hold all the
//!   job's intermediate data at once (memory first, then disk) on every worker for every job,
//!   to save work only when a worker is lost late in a job of several stages; a job that starts
//!   again costs the time of its first try, only then. The try's workers drop it (`End`) and
//!   its staging area is aborted with the part files it holds; the next try runs under a job
//!   id (`JOB_2`, ...), a staging area (made afresh) and a shuffle secret of its own, so
//!   nothing of the first try reaches it and the output is committed once. Each new try
//!   follows a worker lost (or, rarely, a holder that could not be reached), so a job is tried
//!   at most as many times as it has workers.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sluice_api::{
    AttemptCounters, AttemptFailure, CounterValues, ExecError, Job, JobConfig, JobReport,
    JobStatus, Phase, PhaseTiming, TaskContext, UserCounters,
};
use sluice_exec::{InputPlan, JobOutput};
use sluice_io::{Location, MapSplit};
use sluice_net::Secret;
use sluice_spec::JobSpec;

use crate::link::{connect, Link, LinkReader, LinkWriter, Net};
use crate::protocol::{
    InputFile, InputRange, JobStart, ShippedEntry, ShuffleStats, ToCoordinator, ToWorker,
    PROTOCOL_VERSION,
};
use crate::shipping;
use crate::ClusterError;

/// Times in a row a stage's input may fail to be completed, with no worker lost, before the
/// job fails with the worker's reason (a full disk fails the same way every time); tasks whose
/// output could not be had run again between tries, as Hadoop reruns a map whose output
/// cannot be fetched.
const MAX_FAILED_SEALS: usize = 4;

/// How long the coordinator waits to reach a worker.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a worker may take to set a job up (a streaming job's files, its stores).
const START_TIMEOUT: Duration = Duration::from_secs(300);
/// How long workers may take to clean up after the job.
const END_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a worker of a running job may stay silent before it is taken for lost, unless the
/// job says otherwise ([`ClusterJob::worker_timeout`]). A worker reports its job's progress
/// about once a second, so a minute of silence means its process is stopped or hung, or its
/// host or the network between is down: a connection to a host that died without a word
/// stays open for hours.
pub const DEFAULT_WORKER_TIMEOUT: Duration = Duration::from_secs(60);

/// The workers a job runs on, by address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerList {
    /// `host:port` of each worker, as given.
    pub workers: Vec<String>,
}

impl WorkerList {
    /// Parses `h1:7070,h2:7070` (commas, no spaces needed).
    ///
    /// # Errors
    /// An empty list, an entry without a port, or one given twice (a worker runs one job at
    /// a time: the second connection would wait for the first until it timed out).
    pub fn parse(text: &str) -> Result<WorkerList, String> {
        let workers: Vec<String> = text
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if workers.is_empty() {
            return Err("no workers: expected HOST:PORT[,HOST:PORT...]".into());
        }
        for w in &workers {
            match w.rsplit_once(':') {
                Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {}
                _ => return Err(format!("worker {w:?}: expected HOST:PORT")),
            }
        }
        for (i, w) in workers.iter().enumerate() {
            if workers[..i].contains(w) {
                return Err(format!("worker {w} is listed twice"));
            }
        }
        Ok(WorkerList { workers })
    }
}

/// A job for the workers: its description, the job built from it here, and how it runs.
pub struct ClusterJob<'a> {
    /// What each worker builds the job from.
    pub spec: &'a JobSpec,
    /// The job, built here from `spec`: its stages and split order plan the tasks.
    pub job: &'a Job,
    /// Its inputs, output, stores and attempts (memory and threads are each worker's own).
    pub config: &'a JobConfig,
    /// Its store settings (`-D` keys), which workers read over their own site files.
    pub defines: Vec<(String, String)>,
    /// Its id: for a streaming job the spec's; workers name its directories after it.
    pub job_id: String,
    /// How long a worker may stay silent before it is taken for lost and its work goes to
    /// the others ([`DEFAULT_WORKER_TIMEOUT`] unless the user says).
    pub worker_timeout: Duration,
}

/// What one worker did for a job.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkerSummary {
    /// The worker's address, as given.
    pub worker: String,
    /// Its host name.
    pub host: String,
    /// The YARN container it ran in, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// Task attempts it ran to success: map tasks, then reduce tasks.
    pub map_tasks: usize,
    /// Reduce task attempts it ran to success.
    pub reduce_tasks: usize,
    /// Attempts that failed on it.
    pub failed_attempts: usize,
    /// Its counters.
    pub counters: CounterValues,
    /// What its shuffle did, and its local disk traffic during the job.
    pub shuffle: ShuffleStats,
    /// Its memory budget for the job's buffers, in bytes.
    pub memory_budget: u64,
    /// The most bytes the job reserved at once from that budget (as on one machine: what
    /// tasks hold outside their buffers counted throughout); 0 for a worker lost before the
    /// end, which did not say.
    pub peak_memory_reserved: u64,
    /// Its process's peak resident set size during the job, where the worker could tell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
}

/// A cluster job's report: the job's, and each worker's part.
///
/// In `report`, `threads` and `memory_budget` are the sums of the workers'; each worker
/// reserves only from its own budget, so `peak_memory_reserved` is the largest of the
/// workers' peaks (compare each worker's with its own budget in `workers`), and
/// `forced_memory` is not reported (0).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ClusterReport {
    /// As a job on one machine reports it, with the sums and the largest peak described
    /// above.
    #[serde(flatten)]
    pub report: JobReport,
    /// Per worker.
    pub workers: Vec<WorkerSummary>,
}

/// A new job id: `job_<seconds>_<random>`, as Hadoop's have a time and a number.
pub fn new_job_id() -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let nonce = Secret::generate()
        .map(|s| s.to_hex()[..8].to_string())
        .unwrap_or_else(|_| format!("{:08x}", std::process::id()));
    format!("job_{seconds}_{nonce}")
}

/// Runs `job` on `workers`, which must know `secret`; reports progress through `status`.
///
/// # Errors
/// A worker cannot be reached or does not authenticate; the job cannot be set up on one; a
/// task fails its last attempt; every worker is lost (or the job was tried once per worker);
/// the output cannot be committed. Nothing is then visible at the output, and the workers
/// drop what the job left.
pub fn run_on_workers(
    job: ClusterJob<'_>,
    workers: &WorkerList,
    secret: &Secret,
    status: Arc<JobStatus>,
) -> Result<ClusterReport, ClusterError> {
    let started = Instant::now();
    status.enter(Phase::Planning, 0);
    let net = Net::new()?;
    let mut links = Vec::new();
    // A worker that cannot be reached (or is busy) is left out, as long as one can be: the
    // job runs on those there are (a secret the workers do not share fails at every one of
    // them). All are greeted at once, so that one that does not answer delays the job by
    // one timeout, not one per such worker.
    let mut unreachable = Vec::new();
    // Two names of one worker (`localhost:7070,127.0.0.1:7070`) are greeted once: the second
    // hello would find the worker busy with this very job.
    let mut seen: Vec<(SocketAddr, &str)> = Vec::new();
    let mut names = Vec::new();
    for name in &workers.workers {
        let addr = resolve(name).ok();
        if let Some((addr, first)) = addr.and_then(|a| seen.iter().find(|(s, _)| *s == a)) {
            status.note(format!(
                "worker {name} is {first} named again (both are {addr}); it is used once"
            ));
            continue;
        }
        if let Some(addr) = addr {
            seen.push((addr, name));
        }
        names.push(name);
    }
    let greeted: Vec<Result<(Link, WorkerState), ClusterError>> = std::thread::scope(|scope| {
        let greeting: Vec<_> = names
            .iter()
            .map(|name| scope.spawn(|| hello(&net, name, secret)))
            .collect();
        greeting
            .into_iter()
            .map(|g| {
                g.join().unwrap_or_else(|_| {
                    Err(ClusterError::Setup("greeting a worker panicked".into()))
                })
            })
            .collect()
    });
    for result in greeted {
        match result {
            Ok(link) => links.push(link),
            Err(e) => unreachable.push(e),
        }
    }
    if links.is_empty() {
        let first = unreachable.into_iter().next();
        return Err(first.unwrap_or_else(|| ClusterError::Setup("no workers were given".into())));
    }
    for e in &unreachable {
        status.note(left_out(e));
    }
    run_linked(job, links, None, status, started, None)
}

/// Workers that connected after the job started (greeted), to join it: on YARN, the
/// replacements of lost containers.
pub(crate) type Joiners = mpsc::Receiver<(Link, WorkerState)>;

/// How long a worker joining a running job may take to set it up.
const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `job` on the workers at the ends of `links` (greeted already), reading the input
/// `input` planned (`None`: planned here).
pub(crate) fn run_linked(
    job: ClusterJob<'_>,
    links: Vec<(Link, WorkerState)>,
    joiners: Option<Joiners>,
    status: Arc<JobStatus>,
    started: Instant,
    input: Option<InputPlan>,
) -> Result<ClusterReport, ClusterError> {
    let first = set_up_output(&job)?;
    let (location, staging) = (first.location().to_string(), staging_of(&first)?);
    let mut output = Some(first);
    let input = match input {
        Some(input) => input,
        None => InputPlan::located(job.job, job.config, &job.config.stores)?,
    };
    status.set_input_bytes_total(input.bytes());
    let working_dir = std::env::current_dir()
        .map_err(|e| ClusterError::Setup(format!("cannot read the current directory: {e}")))?;
    let named = job
        .spec
        .local_files()
        .map_err(|e| ClusterError::Setup(format!("cannot read the job's command line: {e}")))?;
    let files = shipping::list(&named)?;
    let mut start = JobStart {
        job_id: job.job_id.clone(),
        spec: job.spec.clone(),
        defines: job.defines.clone(),
        inputs: input
            .files
            .iter()
            .map(|f| InputFile::new(f.location(), f.status.len))
            .collect(),
        output: absolute(&location, &working_dir),
        staging: absolute(&staging, &working_dir),
        working_dir: working_dir.display().to_string(),
        spill_codec: job.config.spill_codec.to_string(),
        reduce_split_bytes: job.config.reduce_split_bytes,
        job_secret: Secret::generate()?.to_hex(),
        files: files.iter().map(|(entry, _)| entry.clone()).collect(),
    };
    let mut run = Run::start(links, &start, &files, &status, job.worker_timeout)?;
    run.joiners = joiners;
    // Each try but the first follows a worker lost (or a holder that could not be reached),
    // so as many tries as workers are enough, and the retries end.
    let tries = run.workers.len();
    let mut tried = 1;
    let result = loop {
        let stage = match run.run(&job, &input, &status) {
            Ok(Outcome::Done(phases)) => break Ok(phases),
            Ok(Outcome::Restart { stage }) => stage,
            Err(e) => break Err(e),
        };
        let left = run.alive().len();
        let stages = job.job.stages.len();
        let retried = tried < tries && left > 0 && !status.is_cancelled();
        status.attempt_failed(AttemptFailure {
            attempt: TaskContext {
                is_map: false,
                task: 0,
                attempt: tried - 1,
                stage,
            },
            task: format!("job {}", job.job_id),
            error: if retried {
                format!(
                    "a worker was lost in stage {stage} of {stages}, and with it input that only \
                     the stages before could make again: the job runs again from its map phase \
                     on the {left} worker(s) left"
                )
            } else {
                format!(
                    "a worker was lost in stage {stage} of {stages}, and with it input that only \
                     the stages before could make again"
                )
            },
            attempts: tries,
            retried,
        });
        if !retried {
            break Err(ClusterError::WorkerLost {
                worker: run
                    .last_lost
                    .map_or_else(|| "a worker".into(), |w| run.workers[w].label()),
                reason: format!(
                    "during stage {stage} of {stages}, after {tried} tries of the job \
                     ({left} worker(s) left)"
                ),
            });
        }
        // The workers drop the try, and its part files go with its staging area: the next
        // try starts from nothing, under a job id, a staging area and a secret of its own,
        // so nothing a worker of this try still sends can reach it.
        let stale = run.end();
        // Aborted as it drops, before the next is set up where it was.
        output = None;
        let next = match set_up_output(&job) {
            Ok(next) => output.insert(next),
            Err(e) => break Err(e),
        };
        tried += 1;
        start.job_id = format!("{}_{tried}", job.job_id);
        start.staging = match staging_of(next) {
            Ok(staging) => absolute(&staging, &working_dir),
            Err(e) => break Err(e),
        };
        start.job_secret = match Secret::generate() {
            Ok(secret) => secret.to_hex(),
            Err(e) => break Err(e.into()),
        };
        if let Err(e) = run.restart(&start, &files, &stale, &status) {
            break Err(e);
        }
    };
    let result = result.and_then(|phases| {
        let phase_start = Instant::now();
        status.enter(Phase::Commit, 1);
        let output = output
            .take()
            .ok_or_else(|| ClusterError::Setup("the job's output was not set up".into()))?;
        let location = output.commit().map_err(ExecError::from)?;
        let mut phases = phases;
        phases.push(timing("commit", phase_start));
        Ok((location, phases))
    });
    // Whatever happened, the workers drop the job; a failure to reach them is not the job's.
    run.end();
    let (location, phases) = result?;
    status.enter(Phase::Done, 0);
    let mut counters = CounterValues::default();
    let mut user_counters = UserCounters::new();
    for w in &run.workers {
        counters.add(&w.counters);
        for (group, names) in &w.user_counters {
            let into = user_counters.entry(group.clone()).or_default();
            for (name, value) in names {
                *into.entry(name.clone()).or_default() += value;
            }
        }
    }
    let report = JobReport {
        job: job.job.name.clone(),
        output: location,
        input_files: input.files.len(),
        splits: input.splits.len(),
        reducers: job.job.stages.last().map_or(0, |s| s.partitions),
        threads: run.workers.iter().map(|w| w.threads).sum(),
        memory_budget: run
            .workers
            .iter()
            .map(|w| usize::try_from(w.memory).unwrap_or(usize::MAX))
            .fold(0usize, usize::saturating_add),
        peak_memory_reserved: run
            .workers
            .iter()
            .map(|w| usize::try_from(w.peak_memory_reserved).unwrap_or(usize::MAX))
            .max()
            .unwrap_or(0),
        forced_memory: 0,
        counters,
        user_counters,
        phases,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    let workers = run
        .workers
        .iter()
        .map(|w| WorkerSummary {
            worker: w.name.clone(),
            host: w.host.clone(),
            container: w.container.clone(),
            map_tasks: w.map_tasks,
            reduce_tasks: w.reduce_tasks,
            failed_attempts: w.failed,
            counters: w.counters.clone(),
            shuffle: w.shuffle,
            memory_budget: w.memory,
            peak_memory_reserved: w.peak_memory_reserved,
            peak_rss_bytes: w.peak_rss_bytes,
        })
        .collect();
    Ok(ClusterReport { report, workers })
}

/// The job's output, set up: its committer, with a staging area of its own.
fn set_up_output(job: &ClusterJob<'_>) -> Result<JobOutput, ClusterError> {
    Ok(
        JobOutput::set_up_for(job.job, &job.config.stores, &job.config.output)
            .map_err(ExecError::from)?,
    )
}

/// `location` as workers get it: a relative local path made absolute from `working_dir` (a
/// worker may run in another directory, and a part file must not land anywhere else).
/// Inputs keep the names the job gives them (a job may see them: an inverted index, a
/// streaming program's `mapreduce_map_input_file`); a relative one is opened where the job
/// was submitted, or fails naming itself.
fn absolute(location: &str, working_dir: &std::path::Path) -> String {
    match Location::parse(location) {
        Ok(parsed) => match parsed.as_local_path() {
            Some(path) if path.is_relative() => {
                Location::from_path(working_dir.join(path)).to_string()
            }
            _ => location.to_string(),
        },
        Err(_) => location.to_string(),
    }
}

/// Where `output`'s committer stages part files, for workers to attach to.
fn staging_of(output: &JobOutput) -> Result<String, ClusterError> {
    output
        .committer()
        .staging()
        .map(|s| s.to_string())
        .ok_or_else(|| {
            ClusterError::Setup(format!(
                "the output {} cannot be written by workers (an S3 output at the bucket's \
                 root has no place beside it for their manifests; HDFS, S3 and shared local \
                 directories otherwise can)",
                output.location()
            ))
        })
}

/// Reads what worker `index` says, for the coordinator's loop, until its connection ends.
fn spawn_reader(index: usize, mut reader: LinkReader, send: mpsc::Sender<Received>) {
    std::thread::spawn(move || loop {
        let event = reader.recv::<ToCoordinator>();
        let last = !matches!(event, Ok(Some(_)));
        if send.send((index, event)).is_err() || last {
            return;
        }
    });
}

/// How the console hears of a worker left out of the job.
fn left_out(e: &ClusterError) -> String {
    format!("left out of the job: {e}")
}

/// Connects to worker `name` and exchanges hellos.
fn hello(net: &Net, name: &str, secret: &Secret) -> Result<(Link, WorkerState), ClusterError> {
    let addr = resolve(name)?;
    let link = connect(net.handle(), addr, secret, CONNECT_TIMEOUT).map_err(|e| {
        ClusterError::WorkerLost {
            worker: name.to_string(),
            reason: format!("cannot connect: {e}"),
        }
    })?;
    greet(link, name)
}

/// Exchanges hellos with the worker at the end of `link`, which messages call `name`.
pub(crate) fn greet(mut link: Link, name: &str) -> Result<(Link, WorkerState), ClusterError> {
    link.send(&ToWorker::Hello {
        version: PROTOCOL_VERSION,
    })?;
    match link.recv_within::<ToCoordinator>(CONNECT_TIMEOUT)? {
        Some(ToCoordinator::Hello {
            version,
            host,
            threads,
            memory,
            container,
        }) if version == PROTOCOL_VERSION => Ok((
            link,
            WorkerState {
                name: name.to_string(),
                host,
                container,
                threads: threads.max(1),
                memory,
                running: 0,
                map_tasks: 0,
                reduce_tasks: 0,
                failed: 0,
                counters: CounterValues::default(),
                user_counters: UserCounters::new(),
                shuffle: ShuffleStats::default(),
                peak_memory_reserved: 0,
                peak_rss_bytes: None,
            },
        )),
        Some(ToCoordinator::Busy { coordinator }) => Err(ClusterError::Worker {
            worker: name.to_string(),
            error: format!(
                "it is busy with a job of coordinator {coordinator} (a worker runs one job at a \
                 time)"
            ),
        }),
        Some(ToCoordinator::Hello { version, .. }) => Err(ClusterError::Protocol {
            peer: name.to_string(),
            reason: format!(
                "speaks protocol version {version}, this coordinator {PROTOCOL_VERSION}"
            ),
        }),
        other => Err(ClusterError::Protocol {
            peer: name.to_string(),
            reason: format!("expected hello, got {other:?}"),
        }),
    }
}

fn resolve(name: &str) -> Result<SocketAddr, ClusterError> {
    name.to_socket_addrs()
        .map_err(|e| ClusterError::WorkerLost {
            worker: name.to_string(),
            reason: format!("cannot resolve: {e}"),
        })?
        .next()
        .ok_or_else(|| ClusterError::WorkerLost {
            worker: name.to_string(),
            reason: "resolves to no address".into(),
        })
}

/// What the coordinator knows of a worker.
pub(crate) struct WorkerState {
    name: String,
    host: String,
    /// Its YARN container, if it runs in one.
    container: Option<String>,
    threads: usize,
    memory: u64,
    /// Attempts running on it now.
    running: usize,
    map_tasks: usize,
    reduce_tasks: usize,
    failed: usize,
    counters: CounterValues,
    user_counters: UserCounters,
    shuffle: ShuffleStats,
    /// Said by the worker when the job ended.
    peak_memory_reserved: u64,
    peak_rss_bytes: Option<u64>,
}

impl WorkerState {
    fn label(&self) -> String {
        match &self.container {
            Some(container) => format!("{} ({}, {container})", self.host, self.name),
            None => format!("{} ({})", self.host, self.name),
        }
    }
}

/// A message from worker `.0`, or its connection's end (`None`) or failure.
type Received = (usize, Result<Option<ToCoordinator>, ClusterError>);

/// A job running on its workers.
struct Run {
    workers: Vec<WorkerState>,
    /// `gone[w]`: worker `w`'s connection ended; nothing more comes from it.
    gone: Vec<bool>,
    /// When each worker was last heard from.
    heard: Vec<Instant>,
    /// Notes of the workers' tasks that came while no job status was at hand, for the next
    /// time one is.
    held_notes: Vec<String>,
    /// How long a worker may stay silent before it is taken for lost.
    worker_timeout: Duration,
    /// The worker whose loss was seen last.
    last_lost: Option<usize>,
    /// Each worker's shuffle address for the job.
    shuffles: Vec<String>,
    /// The owner of each partition, by stage (1-based).
    owners: std::collections::HashMap<usize, Vec<usize>>,
    writers: Vec<LinkWriter>,
    events: mpsc::Receiver<Received>,
    /// Where the workers' readers send what they hear (for those that join later).
    sender: mpsc::Sender<Received>,
    /// Workers waiting to join the running job.
    joiners: Option<Joiners>,
    /// The job as the workers were last started with it, and its shipped files: what a
    /// joining worker is started with.
    start: JobStart,
    files: Vec<(ShippedEntry, PathBuf)>,
}

/// One task of a phase: what to send for an attempt, and how messages name it.
struct PhaseTask {
    name: String,
    message: Box<dyn Fn(usize) -> ToWorker>,
}

/// A phase's tasks and what became of them, kept across the passes a lost worker costs.
struct PhaseState {
    /// 0 for the map phase, else the reduce stage.
    stage: usize,
    tasks: Vec<PhaseTask>,
    /// Attempts a task may fail.
    attempts: usize,
    /// The next attempt number of each task: unique over all passes.
    next_attempt: Vec<usize>,
    /// Failed attempts of each task (a worker lost is no failure of its tasks).
    failures: Vec<usize>,
    /// The worker each task last failed on.
    failed_on: Vec<Option<usize>>,
    /// Where each running task runs.
    running: std::collections::HashMap<usize, usize>,
    /// The worker each finished task finished on: it holds the task's output.
    done_on: Vec<Option<usize>>,
    /// Whether each task's finish counts in the job's progress (once, however often it runs).
    counted: Vec<bool>,
    /// What the attempt that finished each task counted: the job keeps it, should the worker
    /// it ran on be lost and the task's output not be needed again.
    kept: Vec<AttemptCounters>,
    /// The hosts holding each task's input (map tasks on HDFS), to run it near its data.
    hosts: Vec<Vec<String>>,
}

impl PhaseState {
    fn new(stage: usize, tasks: Vec<PhaseTask>, attempts: usize) -> Self {
        let n = tasks.len();
        PhaseState {
            stage,
            tasks,
            attempts,
            next_attempt: vec![0; n],
            failures: vec![0; n],
            failed_on: vec![None; n],
            running: std::collections::HashMap::new(),
            done_on: vec![None; n],
            counted: vec![false; n],
            kept: vec![AttemptCounters::default(); n],
            hosts: Vec::new(),
        }
    }

    /// Task `task` must run again: its output went with a lost worker. The job's progress,
    /// showing a later phase, still counts it done.
    fn redo(&mut self, task: usize) {
        self.done_on[task] = None;
    }

    /// Task `task` of the phase the job's progress shows must run again: the progress counts
    /// it once more only when it is done again.
    fn redo_shown(&mut self, task: usize, status: &JobStatus) {
        self.redo(task);
        if std::mem::replace(&mut self.counted[task], false) {
            status.task_undone();
        }
    }

    /// What the tasks finished on worker `w` counted.
    fn counted_on(&self, w: usize) -> AttemptCounters {
        let mut total = AttemptCounters::default();
        for (task, on) in self.done_on.iter().enumerate() {
            if *on == Some(w) {
                total.add(&self.kept[task]);
            }
        }
        total
    }

    /// The tasks not finished.
    fn unfinished(&self) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|t| self.done_on[*t].is_none())
            .collect()
    }
}

/// How a try of the job ended.
#[derive(Debug)]
enum Outcome {
    /// Every stage is done: the phases' timings.
    Done(Vec<PhaseTiming>),
    /// A worker lost took input of stage `stage` (1-based) that only the stages before it
    /// could make again, and they have let theirs go: the job must start again.
    Restart {
        /// The stage.
        stage: usize,
    },
}

/// What the next message from the workers is.
enum Event {
    /// Worker `.0` said `.1`.
    Message(usize, ToCoordinator),
    /// Worker `.0`'s connection ended, for the reason `.1`.
    Lost(usize, String),
}

impl Run {
    /// Starts the job on every worker and tells each the others' shuffle addresses.
    fn start(
        links: Vec<(Link, WorkerState)>,
        start: &JobStart,
        files: &[(ShippedEntry, PathBuf)],
        status: &JobStatus,
        worker_timeout: Duration,
    ) -> Result<Run, ClusterError> {
        let mut workers = Vec::new();
        let mut readers = Vec::new();
        let mut writers = Vec::new();
        let mut shuffles = Vec::new();
        let mut lost = Vec::new();
        let mut refused = Vec::new();
        for (mut link, state) in links {
            let ready = link
                .send(&ToWorker::Start(Box::new(start.clone())))
                .and_then(|()| shipping::send(files, &mut |frame| link.send_parts(&[frame])))
                .and_then(|()| link.recv_within::<ToCoordinator>(START_TIMEOUT));
            match ready {
                Ok(Some(ToCoordinator::JobReady { shuffle })) => shuffles.push(shuffle),
                // A worker that cannot set the job up (its scratch disk full, its shuffle
                // ports taken) is left out, as one gone is; the job fails only if every
                // worker refuses it, with the first one's reason.
                Ok(Some(ToCoordinator::JobFailed { error })) => {
                    refused.push(ClusterError::Worker {
                        worker: state.label(),
                        error,
                    });
                    continue;
                }
                // Gone before the job started: the job runs on the others.
                Ok(None) | Err(ClusterError::Net(_)) => {
                    lost.push(ClusterError::WorkerLost {
                        worker: state.label(),
                        reason: "it went away as the job started".into(),
                    });
                    continue;
                }
                Ok(Some(other)) => {
                    return Err(ClusterError::Protocol {
                        peer: state.label(),
                        reason: format!("expected the job to be ready, got {other:?}"),
                    })
                }
                Err(e) => return Err(e),
            }
            let (reader, writer) = link.split();
            readers.push(reader);
            writers.push(writer);
            workers.push(state);
        }
        let (send, events) = mpsc::channel();
        for (index, reader) in readers.into_iter().enumerate() {
            spawn_reader(index, reader, send.clone());
        }
        if workers.is_empty() {
            return Err(refused
                .into_iter()
                .chain(lost)
                .next()
                .unwrap_or_else(|| ClusterError::Setup("no workers were given".into())));
        }
        for e in refused.iter().chain(&lost) {
            status.note(left_out(e));
        }
        let run = Run {
            gone: vec![false; workers.len()],
            heard: vec![Instant::now(); workers.len()],
            held_notes: Vec::new(),
            worker_timeout,
            last_lost: None,
            shuffles,
            owners: std::collections::HashMap::new(),
            workers,
            writers,
            events,
            sender: send,
            joiners: None,
            start: start.clone(),
            files: files.to_vec(),
        };
        Ok(run)
    }

    /// Sends `message` to `worker`. A connection that fails is not an error here: its
    /// reading end reports the worker lost, and whoever waits for the worker handles that.
    fn send(&mut self, worker: usize, message: &ToWorker) -> Result<(), ClusterError> {
        match self.writers[worker].send(message) {
            Err(ClusterError::Net(_)) | Ok(()) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The map phase, then each stage; returns the phases' timings, or that the job must
    /// start again.
    ///
    /// A worker lost during the map phase costs the map tasks it ran or held the output of,
    /// which run again on the others. One lost during the first stage costs the map tasks
    /// whose output it held (the stage's input is reopened on the others and they run again
    /// there), then the partitions it owned run on the others: those not finished, and, when
    /// a stage follows, the finished ones too (their output went with it). A worker lost
    /// during a later stage that owned none of the stage's partitions (or only finished
    /// partitions of the last stage) costs nothing; one that owned others took input that
    /// only the earlier stages could make again, and they have let theirs go: the try ends
    /// with [`Outcome::Restart`].
    fn run(
        &mut self,
        job: &ClusterJob<'_>,
        input: &InputPlan,
        status: &Arc<JobStatus>,
    ) -> Result<Outcome, ClusterError> {
        let mut phases = Vec::new();
        let phase_start = Instant::now();
        let maps: Vec<PhaseTask> = input
            .splits
            .iter()
            .enumerate()
            .map(|(task, split)| {
                let ranges: Vec<InputRange> = split
                    .parts()
                    .iter()
                    .map(|p| InputRange {
                        file: p.file,
                        start: p.start,
                        len: p.len,
                    })
                    .collect();
                let combined = matches!(split, MapSplit::Combined { .. });
                PhaseTask {
                    name: format!("map task {task} ({})", input.describe(split)),
                    message: Box::new(move |attempt| ToWorker::Map {
                        task,
                        attempt,
                        ranges: ranges.clone(),
                        combined,
                    }),
                }
            })
            .collect();
        let mut maps_phase = PhaseState::new(0, maps, job.config.map_attempts);
        maps_phase.hosts = input
            .splits
            .iter()
            .map(|split| split.hosts(&input.files).to_vec())
            .collect();
        let stages = &job.job.stages;
        self.send_peers()?;
        if let Some(first) = stages.first() {
            self.assign_owners(1, first.partitions)?;
        }
        status.enter(Phase::Map, maps_phase.tasks.len() as u64);
        let all: Vec<usize> = (0..maps_phase.tasks.len()).collect();
        self.phase(&mut maps_phase, all, status)?;
        phases.push(timing("map", phase_start));

        // The tasks that made each stage's input: the map tasks, then each stage's reduce
        // tasks.
        let mut producers = vec![maps_phase];
        for (index, stage) in stages.iter().enumerate() {
            let phase_start = Instant::now();
            let number = index + 1;
            if let Some(next) = stages.get(index + 1) {
                self.assign_owners(number + 1, next.partitions)?;
            }
            let reduces: Vec<PhaseTask> = (0..stage.partitions)
                .map(|partition| PhaseTask {
                    name: format!("reduce task {partition} of stage {number}"),
                    message: Box::new(move |attempt| ToWorker::Reduce {
                        stage: number,
                        partition,
                        attempt,
                    }),
                })
                .collect();
            let mut reduce_phase = PhaseState::new(number, reduces, job.config.reduce_attempts);
            status.enter(Phase::Reduce, reduce_phase.tasks.len() as u64);
            let mut todo: Vec<usize> = (0..reduce_phase.tasks.len()).collect();
            let mut sealed_before = false;
            let mut seal = true;
            loop {
                if seal {
                    if !self.complete_input(number, &mut producers, sealed_before, status)? {
                        return Ok(Outcome::Restart { stage: number });
                    }
                    sealed_before = true;
                }
                let owners = self.owners.get(&number).cloned().unwrap_or_default();
                if !self.phase(&mut reduce_phase, todo, status)? {
                    break;
                }
                let redo = orphaned(
                    &owners,
                    &self.gone,
                    &reduce_phase.done_on,
                    number == stages.len(),
                );
                if redo.is_empty() {
                    // What the lost worker held of this stage is not needed: the stage's
                    // input is still sealed on the owners of its other partitions.
                    seal = false;
                } else if number == 1 {
                    // The stage's input is made whole again on the partitions' new owners
                    // (map tasks are rerun from the job's input), then they run there.
                    for p in &redo {
                        reduce_phase.redo_shown(*p, status);
                    }
                    seal = true;
                } else {
                    return Ok(Outcome::Restart { stage: number });
                }
                todo = reduce_phase.unfinished();
            }
            producers.push(reduce_phase);
            for w in self.alive() {
                self.send(w, &ToWorker::Release { stage: number })?;
            }
            let name = if index == 0 {
                "reduce".to_string()
            } else {
                format!("reduce-{number}")
            };
            phases.push(timing(&name, phase_start));
        }
        // The workers lost count the tasks they finished in every phase, now that which of
        // those were made again elsewhere is known.
        let lost: Vec<usize> = (0..self.workers.len()).filter(|w| self.gone[*w]).collect();
        let finished: Vec<&PhaseState> = producers.iter().collect();
        for w in lost {
            self.keep_counts_of(w, &finished);
        }
        self.publish_counters(status);
        Ok(Outcome::Done(phases))
    }

    /// Makes stage `stage`'s input whole on every worker left and seals it: each worker
    /// pulls what did not arrive of its partitions; tasks whose output is gone with a lost
    /// worker run again (stage 1 only: the map tasks), then the stage is sealed again.
    /// Returns whether it is sealed: `false` when a later stage's input went with a worker
    /// (the tasks that made it read input released by now).
    fn complete_input(
        &mut self,
        stage: usize,
        producers: &mut [PhaseState],
        sealed_before: bool,
        status: &Arc<JobStatus>,
    ) -> Result<bool, ClusterError> {
        let mut reopen = sealed_before;
        // Rounds in which some worker could not have some task's output though no worker was
        // lost: a worker whose disk is full fails the same way each time.
        let mut failed_rounds = 0;
        loop {
            if reopen {
                for w in self.alive() {
                    self.send(w, &ToWorker::Reopen { stage })?;
                }
            }
            reopen = true;
            // Small outputs held back to be pushed together go first, so that no worker
            // pulls what is about to arrive.
            let lost_flushing = self.flush(stage, status)?;
            let made_by = &producers[stage - 1];
            let holders: Vec<Option<usize>> = made_by
                .done_on
                .iter()
                .map(|w| w.filter(|w| !self.gone[*w]))
                .collect();
            let (missing, why, lost) = self.seal(stage, holders, status)?;
            let lost = lost || lost_flushing;
            if missing.is_empty() && !lost {
                return Ok(true);
            }
            if missing.is_empty() {
                continue;
            }
            if !lost {
                failed_rounds += 1;
                if failed_rounds >= MAX_FAILED_SEALS {
                    return Err(why.unwrap_or_else(|| {
                        ClusterError::Setup(format!("stage {stage}'s input cannot be completed"))
                    }));
                }
            }
            if stage > 1 {
                return Ok(false);
            }
            // Workers that had all they needed sealed the stage: it takes the runs again.
            for w in self.alive() {
                self.send(w, &ToWorker::Reopen { stage })?;
            }
            reopen = false;
            let again: Vec<usize> = missing.into_iter().collect();
            let maps = &mut producers[0];
            for task in &again {
                // The progress shows the reduce phase: the map tasks stay counted.
                maps.redo(*task);
            }
            self.phase(maps, again, status)?;
        }
    }

    /// Gives each partition of stage `stage` an owner among the workers left, round robin,
    /// and tells every worker.
    fn assign_owners(&mut self, stage: usize, partitions: usize) -> Result<(), ClusterError> {
        let alive = self.alive();
        if alive.is_empty() {
            return Err(ClusterError::Setup("every worker was lost".into()));
        }
        let owners: Vec<usize> = (0..partitions).map(|p| alive[p % alive.len()]).collect();
        self.owners.insert(stage, owners);
        self.send_owners(stage)
    }

    fn send_owners(&mut self, stage: usize) -> Result<(), ClusterError> {
        let owners = self.owners.get(&stage).cloned().unwrap_or_default();
        for w in self.alive() {
            self.send(
                w,
                &ToWorker::Owners {
                    stage,
                    owners: owners.clone(),
                },
            )?;
        }
        Ok(())
    }

    /// After losing worker `lost`: its partitions go to the others, round robin, and every
    /// worker left hears of the new owners and peers.
    fn reassign(&mut self, lost: usize) -> Result<(), ClusterError> {
        let alive = self.alive();
        if alive.is_empty() {
            return Err(ClusterError::Setup("every worker was lost".into()));
        }
        let stages: Vec<usize> = self.owners.keys().copied().collect();
        for stage in stages {
            if let Some(owners) = self.owners.get_mut(&stage) {
                let mut next = 0;
                for owner in owners.iter_mut() {
                    if *owner == lost {
                        *owner = alive[next % alive.len()];
                        next += 1;
                    }
                }
            }
            self.send_owners(stage)?;
        }
        self.send_peers()
    }

    /// The workers still in the job.
    fn alive(&self) -> Vec<usize> {
        (0..self.workers.len()).filter(|w| !self.gone[*w]).collect()
    }

    /// Tells every worker still in the job the shuffle addresses of all of them.
    fn send_peers(&mut self) -> Result<(), ClusterError> {
        let peers: Vec<Option<String>> = (0..self.workers.len())
            .map(|w| (!self.gone[w]).then(|| self.shuffles[w].clone()))
            .collect();
        for me in self.alive() {
            self.send(
                me,
                &ToWorker::Peers {
                    peers: peers.clone(),
                    me,
                },
            )?;
        }
        Ok(())
    }

    /// Asks every worker still in the job to push what it holds back of stage `stage`'s
    /// input, and waits until they have; returns whether a worker was lost meanwhile (its
    /// partitions then have new owners).
    fn flush(&mut self, stage: usize, status: &JobStatus) -> Result<bool, ClusterError> {
        let alive = self.alive();
        for &w in &alive {
            self.send(w, &ToWorker::Flush { stage })?;
        }
        let mut waiting: BTreeSet<usize> = alive.into_iter().collect();
        let mut lost = false;
        while !waiting.is_empty() {
            match self.next_event(None)? {
                Event::Message(w, ToCoordinator::Flushed { stage: s })
                    if s == stage && waiting.contains(&w) =>
                {
                    waiting.remove(&w);
                }
                Event::Message(w, other) => return Err(self.unexpected(w, &other)),
                Event::Lost(w, reason) => {
                    status.note(self.lost(w, &reason));
                    waiting.remove(&w);
                    lost = true;
                    self.reassign(w)?;
                }
            }
        }
        Ok(lost)
    }

    /// Asks every worker still in the job to complete and seal stage `stage`'s input;
    /// returns the tasks whose output some worker could not have (with the first worker that
    /// could not and why), and whether a worker was lost meanwhile (its partitions then have
    /// new owners, who must be asked again).
    fn seal(
        &mut self,
        stage: usize,
        holders: Vec<Option<usize>>,
        status: &JobStatus,
    ) -> Result<(BTreeSet<usize>, Option<ClusterError>, bool), ClusterError> {
        let alive = self.alive();
        for &w in &alive {
            self.send(
                w,
                &ToWorker::Seal {
                    stage,
                    holders: holders.clone(),
                },
            )?;
        }
        let mut waiting: BTreeSet<usize> = alive.into_iter().collect();
        let mut missing = BTreeSet::new();
        let mut first_why = None;
        let mut lost = false;
        while !waiting.is_empty() {
            match self.next_event(None)? {
                Event::Message(
                    w,
                    ToCoordinator::Sealed {
                        stage: s,
                        missing: m,
                        why,
                        out_of_room,
                    },
                ) if s == stage && waiting.contains(&w) => {
                    waiting.remove(&w);
                    if out_of_room && self.alive().len() > 1 {
                        // Its disk is full: no use asking it again. Its partitions go to the
                        // others, as a lost worker's do.
                        let reason = why.unwrap_or_else(|| "its disk is full".into());
                        status.note(self.retire(w, &format!("it has no room: {reason}")));
                        lost = true;
                        self.reassign(w)?;
                        continue;
                    }
                    if !m.is_empty() && first_why.is_none() {
                        first_why = Some(ClusterError::Worker {
                            worker: self.workers[w].label(),
                            error: why.unwrap_or_else(|| {
                                format!("cannot have the output of task(s) {m:?}")
                            }),
                        });
                    }
                    missing.extend(m);
                }
                Event::Message(w, other) => return Err(self.unexpected(w, &other)),
                Event::Lost(w, reason) => {
                    status.note(self.lost(w, &reason));
                    waiting.remove(&w);
                    lost = true;
                    self.reassign(w)?;
                }
            }
        }
        Ok((missing, first_why, lost))
    }

    /// Runs `todo` of a phase's tasks, keeping every worker as busy as it has threads.
    /// Returns whether a worker was lost during a reduce stage, once the attempts still
    /// running have ended (the caller recovers); a worker lost during the map phase is
    /// recovered here.
    fn phase(
        &mut self,
        phase: &mut PhaseState,
        todo: Vec<usize>,
        status: &Arc<JobStatus>,
    ) -> Result<bool, ClusterError> {
        let mut pending: VecDeque<usize> = todo.into();
        let mut lost = false;
        let mut deliveries = Deliveries::default();
        loop {
            // Once a worker is lost, nothing more starts: the caller recovers first.
            if !lost {
                while let Some((at, task, w)) = self.next_placement(phase, &pending) {
                    pending.remove(at);
                    let attempt = phase.next_attempt[task];
                    phase.next_attempt[task] += 1;
                    let message = (phase.tasks[task].message)(attempt);
                    self.send(w, &message)?;
                    self.workers[w].running += 1;
                    phase.running.insert(task, w);
                }
            }
            if phase.running.is_empty() && (pending.is_empty() || lost) {
                return Ok(lost);
            }
            if phase.running.is_empty() && self.alive().is_empty() {
                return Err(ClusterError::Setup("every worker was lost".into()));
            }
            match self.next_event(Some(status))? {
                Event::Message(w, ToCoordinator::Ran { task })
                    if task.stage == phase.stage && phase.running.get(&task.task) == Some(&w) =>
                {
                    if deliveries.ran(task.task, w, self.workers[w].threads) {
                        let worker = &mut self.workers[w];
                        worker.running = worker.running.saturating_sub(1);
                    }
                }
                Event::Message(
                    w,
                    ToCoordinator::Done {
                        task,
                        counters,
                        user_counters,
                        task_counters,
                        task_user_counters,
                    },
                ) if task.stage == phase.stage && phase.running.get(&task.task) == Some(&w) => {
                    phase.running.remove(&task.task);
                    phase.done_on[task.task] = Some(w);
                    phase.kept[task.task] = AttemptCounters {
                        counters: *task_counters,
                        user_counters: task_user_counters,
                    };
                    let first_time = !std::mem::replace(&mut phase.counted[task.task], true);
                    let worker = &mut self.workers[w];
                    worker.running = worker
                        .running
                        .saturating_sub(deliveries.ended(task.task).threads_freed());
                    if phase.stage == 0 {
                        worker.map_tasks += 1;
                    } else {
                        worker.reduce_tasks += 1;
                    }
                    worker.counters = counters;
                    worker.user_counters = user_counters;
                    if first_time {
                        status.task_done();
                    }
                    self.publish_counters(status);
                }
                Event::Message(
                    w,
                    ToCoordinator::Failed {
                        task,
                        error,
                        retryable,
                    },
                ) if task.stage == phase.stage && phase.running.get(&task.task) == Some(&w) => {
                    phase.running.remove(&task.task);
                    let worker = &mut self.workers[w];
                    worker.running = worker
                        .running
                        .saturating_sub(deliveries.ended(task.task).threads_freed());
                    worker.failed += 1;
                    let label = worker.label();
                    let index = task.task;
                    if lost {
                        // Reading from the lost worker fails the reduce tasks that ran: not
                        // their fault, and not counted against their attempts.
                        pending.push_back(index);
                        continue;
                    }
                    phase.failures[index] += 1;
                    let name = &phase.tasks[index].name;
                    let retried = retryable
                        && phase.failures[index] < phase.attempts
                        && !status.is_cancelled();
                    if error != ExecError::Cancelled.to_string() {
                        status.attempt_failed(AttemptFailure {
                            attempt: TaskContext {
                                is_map: phase.stage == 0,
                                task: index,
                                attempt: task.attempt,
                                stage: phase.stage.max(1),
                            },
                            task: format!("{name} on {label}"),
                            error: error.clone(),
                            attempts: phase.attempts,
                            retried,
                        });
                    }
                    if retried {
                        phase.failed_on[index] = Some(w);
                        pending.push_back(index);
                    } else {
                        status.cancel();
                        let tried = if phase.attempts > 1 && retryable {
                            format!(" (failed {} attempts)", phase.attempts)
                        } else {
                            String::new()
                        };
                        return Err(ClusterError::Exec(
                            ExecError::user(format!("on worker {label}: {error}"))
                                .in_task(format!("{name}{tried}")),
                        ));
                    }
                }
                Event::Message(w, other) => return Err(self.unexpected(w, &other)),
                Event::Lost(w, reason) => {
                    if self.alive().is_empty() {
                        return Err(ClusterError::WorkerLost {
                            worker: self.workers[w].label(),
                            reason: format!("{reason}; no worker is left"),
                        });
                    }
                    status.note(self.lost(w, &reason));
                    // What ran there runs again elsewhere.
                    let ran: Vec<usize> = phase
                        .running
                        .iter()
                        .filter(|(_, on)| **on == w)
                        .map(|(task, _)| *task)
                        .collect();
                    for task in ran {
                        phase.running.remove(&task);
                        deliveries.ended(task);
                        pending.push_back(task);
                    }
                    // The map tasks it finished made input for the partitions it owned, and
                    // their share of it went with it: they run again now, beside the map
                    // tasks still to run, rather than once the stage's input turns out
                    // incomplete after the map phase.
                    let owned = self.owners.get(&1).is_some_and(|o| o.contains(&w));
                    if phase.stage == 0 && owned {
                        for task in 0..phase.done_on.len() {
                            if phase.done_on[task] == Some(w) {
                                phase.redo_shown(task, status);
                                pending.push_back(task);
                            }
                        }
                    }
                    // Of its counts, the job keeps those of its finished tasks whose output
                    // is not made again (for now: of this phase; the job's end sees to the
                    // phases before).
                    self.keep_counts_of(w, &[phase]);
                    self.workers[w].running = 0;
                    self.publish_counters(status);
                    self.reassign(w)?;
                    if phase.stage > 0 {
                        lost = true;
                    }
                }
            }
        }
    }

    /// How the console hears of worker `w` lost for `reason`: a note, not a failed attempt of
    /// any task (what ran there is done again, and a task's attempts are not used up).
    fn lost(&self, w: usize, reason: &str) -> String {
        format!(
            "worker {} lost: {reason}; its work is done again on the others",
            self.workers[w].label()
        )
    }

    /// Lost worker `w` counts what its tasks finished in `phases` counted, and nothing else:
    /// its running tasks, and its finished ones whose output is made again, count where they
    /// run again, and the merges it ran for its partitions are run again by their new owners.
    fn keep_counts_of(&mut self, w: usize, phases: &[&PhaseState]) {
        let mut kept = AttemptCounters::default();
        for phase in phases {
            kept.add(&phase.counted_on(w));
        }
        let worker = &mut self.workers[w];
        worker.counters = kept.counters;
        worker.user_counters = kept.user_counters;
    }

    /// The job's counters: the sum of the workers' latest totals.
    fn publish_counters(&self, status: &JobStatus) {
        let mut total = CounterValues::default();
        for worker in &self.workers {
            total.add(&worker.counters);
        }
        status.counters.store_values(&total);
    }

    /// The first of `pending`'s tasks that can start now, with its place in `pending` and
    /// its worker: a map task on any worker with a free thread, a reduce task on the worker
    /// that owns its partition (which holds the partition's input).
    fn next_placement(
        &self,
        phase: &PhaseState,
        pending: &VecDeque<usize>,
    ) -> Option<(usize, usize, usize)> {
        if phase.stage == 0 {
            // A free worker on a host holding a pending task's block takes that task (the
            // first such, in plan order); otherwise the first pending task goes to any.
            let local = pending.iter().enumerate().find_map(|(at, &task)| {
                let hosts = phase.hosts.get(task)?;
                let w = (0..self.workers.len()).find(|&w| {
                    self.is_free(w)
                        && Some(w) != phase.failed_on[task]
                        && hosts.iter().any(|h| host_matches(h, &self.workers[w].host))
                })?;
                Some((at, task, w))
            });
            if local.is_some() {
                return local;
            }
            let task = *pending.front()?;
            return self
                .free_worker(phase.failed_on[task])
                .map(|w| (0, task, w));
        }
        let owners = self.owners.get(&phase.stage)?;
        pending.iter().enumerate().find_map(|(at, &task)| {
            let w = *owners.get(task)?;
            self.is_free(w).then_some((at, task, w))
        })
    }

    /// Whether worker `w` is in the job and has a free thread.
    fn is_free(&self, w: usize) -> bool {
        !self.gone[w] && self.workers[w].running < self.workers[w].threads
    }

    /// A worker still in the job with a free thread, preferring one other than `avoid`
    /// (where the task failed last), and the least busy.
    fn free_worker(&self, avoid: Option<usize>) -> Option<usize> {
        let free =
            |w: &usize| !self.gone[*w] && self.workers[*w].running < self.workers[*w].threads;
        let by_load = |w: &usize| {
            let s = &self.workers[*w];
            (s.running * 1024) / s.threads
        };
        let others = (0..self.workers.len())
            .filter(|w| Some(*w) != avoid)
            .filter(free)
            .min_by_key(by_load);
        match others {
            Some(w) => Some(w),
            // Only the worker it failed on is free: wait for another unless it is the only one.
            None if self.alive().len() == 1 => avoid.filter(|w| free(w)),
            None => None,
        }
    }

    /// The next thing a worker said, or the end of its connection. A cancelled job is an
    /// error; so is a worker that cannot run the job.
    fn next_event(&mut self, status: Option<&Arc<JobStatus>>) -> Result<Event, ClusterError> {
        loop {
            if status.is_some_and(|s| s.is_cancelled()) {
                return Err(ClusterError::Exec(ExecError::Cancelled));
            }
            self.admit_joiners(status)?;
            let (w, message) = match next_or_silent(&self.events, || self.silent_worker()) {
                Polled::Event(event) => event,
                Polled::Silent(w) => return Ok(self.take_silent_for_lost(w)),
                Polled::Quiet => continue,
                Polled::Disconnected => {
                    return Err(ClusterError::Setup("every worker connection ended".into()))
                }
            };
            if self.gone[w] {
                continue;
            }
            self.heard[w] = Instant::now();
            if let Ok(Some(ToCoordinator::Progress {
                counters,
                user_counters,
                notes,
            })) = message
            {
                self.workers[w].counters = counters;
                self.workers[w].user_counters = user_counters;
                let label = self.workers[w].label();
                self.held_notes.extend(
                    notes
                        .into_iter()
                        .map(|note| format!("worker {label}: {note}")),
                );
                if let Some(status) = status {
                    self.publish_counters(status);
                    for note in self.held_notes.drain(..) {
                        status.task_note(note);
                    }
                }
                continue;
            }
            return match message {
                Ok(Some(ToCoordinator::JobFailed { error })) => Err(ClusterError::Worker {
                    worker: self.workers[w].label(),
                    error,
                }),
                Ok(Some(message)) => Ok(Event::Message(w, message)),
                Ok(None) => {
                    self.gone[w] = true;
                    self.last_lost = Some(w);
                    Ok(Event::Lost(w, "it closed the connection".into()))
                }
                Err(e) => {
                    self.gone[w] = true;
                    self.last_lost = Some(w);
                    Ok(Event::Lost(w, e.to_string()))
                }
            };
        }
    }

    /// A worker of the job not heard from for longer than the worker timeout.
    fn silent_worker(&self) -> Option<usize> {
        (0..self.workers.len())
            .find(|&w| !self.gone[w] && self.heard[w].elapsed() > self.worker_timeout)
    }

    /// Leaves worker `w`, still running, out of the job for `reason`, as if lost: its
    /// connection is shut, so that it ends the job and cleans up after it. Returns the note
    /// for the console.
    fn retire(&mut self, w: usize, reason: &str) -> String {
        self.gone[w] = true;
        self.last_lost = Some(w);
        let _ = self.writers[w].shutdown();
        format!(
            "worker {} left out: {reason}; its work is done again on the others",
            self.workers[w].label()
        )
    }

    /// Takes silent worker `w` for lost: its connection is shut, so that should it wake, it
    /// ends the job rather than go on with work that has gone to the others.
    fn take_silent_for_lost(&mut self, w: usize) -> Event {
        self.gone[w] = true;
        self.last_lost = Some(w);
        let _ = self.writers[w].shutdown();
        Event::Lost(
            w,
            format!(
                "nothing heard from it for {} s (its process stopped or hung, or its host or \
                 the network down)",
                self.worker_timeout.as_secs()
            ),
        )
    }

    /// Starts the job on the workers waiting to join it, and makes them part of it: they
    /// take tasks from now on (and partitions, should another worker be lost). One that
    /// cannot start the job is left out, as a worker gone before the start is.
    fn admit_joiners(&mut self, status: Option<&Arc<JobStatus>>) -> Result<(), ClusterError> {
        let arrived: Vec<(Link, WorkerState)> = match &self.joiners {
            Some(joiners) => joiners.try_iter().collect(),
            None => return Ok(()),
        };
        for (link, state) in arrived {
            let label = state.label();
            match self.admit(link, state) {
                Ok(()) => {}
                Err(ClusterError::Net(e)) => {
                    if let Some(status) = status {
                        status.note(left_out(&ClusterError::WorkerLost {
                            worker: label,
                            reason: format!("it went away as it joined the job: {e}"),
                        }));
                    }
                }
                Err(e @ ClusterError::Worker { .. }) | Err(e @ ClusterError::Protocol { .. }) => {
                    if let Some(status) = status {
                        status.note(left_out(&e));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Starts the job on the worker at the end of `link` and adds it to the run.
    fn admit(&mut self, mut link: Link, state: WorkerState) -> Result<(), ClusterError> {
        link.send(&ToWorker::Start(Box::new(self.start.clone())))?;
        shipping::send(&self.files, &mut |frame| link.send_parts(&[frame]))?;
        let shuffle = loop {
            match link.recv_within::<ToCoordinator>(JOIN_TIMEOUT)? {
                Some(ToCoordinator::JobReady { shuffle }) => break shuffle,
                Some(ToCoordinator::Progress { .. }) => {}
                Some(ToCoordinator::JobFailed { error }) => {
                    return Err(ClusterError::Worker {
                        worker: state.label(),
                        error,
                    })
                }
                other => {
                    return Err(ClusterError::Protocol {
                        peer: state.label(),
                        reason: format!("expected the job to be ready, got {other:?}"),
                    })
                }
            }
        };
        let (reader, writer) = link.split();
        let w = self.workers.len();
        spawn_reader(w, reader, self.sender.clone());
        self.workers.push(state);
        self.writers.push(writer);
        self.gone.push(false);
        self.heard.push(Instant::now());
        self.shuffles.push(shuffle);
        self.send_peers()?;
        let mut tables: Vec<(usize, Vec<usize>)> = self
            .owners
            .iter()
            .map(|(stage, owners)| (*stage, owners.clone()))
            .collect();
        tables.sort();
        for (stage, owners) in tables {
            self.send(w, &ToWorker::Owners { stage, owners })?;
        }
        Ok(())
    }

    fn unexpected(&self, w: usize, message: &ToCoordinator) -> ClusterError {
        ClusterError::Protocol {
            peer: self.workers[w].label(),
            reason: format!("unexpected message {message:?}"),
        }
    }

    /// Tells every worker the job is over and waits (a while) for them to clean up; returns
    /// those still in the job that did not say they had.
    fn end(&mut self) -> Vec<usize> {
        let mut waiting = BTreeSet::new();
        for w in 0..self.workers.len() {
            if !self.gone[w] && self.send(w, &ToWorker::End).is_ok() {
                waiting.insert(w);
            }
        }
        let deadline = Instant::now() + END_TIMEOUT;
        while !waiting.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok((
                    w,
                    Ok(Some(ToCoordinator::Ended {
                        shuffle,
                        peak_memory_reserved,
                        peak_rss_bytes,
                    })),
                )) if waiting.remove(&w) => {
                    let worker = &mut self.workers[w];
                    worker.shuffle = shuffle;
                    worker.peak_memory_reserved = peak_memory_reserved;
                    worker.peak_rss_bytes = peak_rss_bytes;
                }
                Ok((_, Ok(Some(_)))) => {}
                // A connection that ended has nothing more to say.
                Ok((w, _)) => {
                    self.gone[w] = true;
                    waiting.remove(&w);
                }
                Err(_) => break,
            }
        }
        waiting.into_iter().collect()
    }

    /// Starts the job again as `start` on the workers left, after [`Run::end`] (`stale`: the
    /// workers that did not say they had dropped the last try, left out now): each sets it
    /// up afresh, and the coordinator forgets what it knew of the last try. A worker that
    /// cannot set the new try up is left out, as at the job's start.
    fn restart(
        &mut self,
        start: &JobStart,
        files: &[(ShippedEntry, PathBuf)],
        stale: &[usize],
        status: &JobStatus,
    ) -> Result<(), ClusterError> {
        for &w in stale {
            self.gone[w] = true;
        }
        // Workers joining from now on join this try.
        self.start = start.clone();
        let mut waiting = BTreeSet::new();
        for w in self.alive() {
            let writer = &mut self.writers[w];
            let sent = writer
                .send(&ToWorker::Start(Box::new(start.clone())))
                .and_then(|()| shipping::send(files, &mut |frame| writer.send_frame(frame)));
            // A connection that failed is reported lost by its reading end.
            match sent {
                Ok(()) | Err(ClusterError::Net(_)) => {}
                Err(e) => return Err(e),
            }
            waiting.insert(w);
        }
        let deadline = Instant::now() + START_TIMEOUT;
        // The first refusal, the job's error should every worker refuse.
        let mut refused = None;
        while !waiting.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let (w, message) = match self.events.recv_timeout(left) {
                Ok(event) => event,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    return Err(ClusterError::Setup(format!(
                        "{} worker(s) did not set the job up again within {}s",
                        waiting.len(),
                        START_TIMEOUT.as_secs()
                    )))
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(ClusterError::Setup("every worker connection ended".into()))
                }
            };
            self.heard[w] = Instant::now();
            if !waiting.contains(&w) {
                continue;
            }
            match message {
                Ok(Some(ToCoordinator::JobReady { shuffle })) => {
                    self.shuffles[w] = shuffle;
                    waiting.remove(&w);
                }
                Ok(Some(ToCoordinator::Progress { notes, .. })) => {
                    // Its counters are the last try's; what its tasks said still reaches the
                    // console.
                    let label = self.workers[w].label();
                    for note in notes {
                        status.task_note(format!("worker {label}: {note}"));
                    }
                }
                Ok(Some(ToCoordinator::JobFailed { error })) => {
                    let refusal = ClusterError::Worker {
                        worker: self.workers[w].label(),
                        error,
                    };
                    status.note(left_out(&refusal));
                    refused.get_or_insert(refusal);
                    self.gone[w] = true;
                    waiting.remove(&w);
                }
                Ok(Some(other)) => return Err(self.unexpected(w, &other)),
                Ok(None) | Err(_) => {
                    self.gone[w] = true;
                    waiting.remove(&w);
                }
            }
        }
        if self.alive().is_empty() {
            return Err(
                refused.unwrap_or_else(|| ClusterError::Setup("every worker was lost".into()))
            );
        }
        self.owners.clear();
        for worker in &mut self.workers {
            // The workers count the new try from zero.
            worker.running = 0;
            worker.counters = CounterValues::default();
            worker.user_counters = UserCounters::new();
        }
        Ok(())
    }
}

/// The partitions of a stage that must run again once workers are `gone`: those not
/// finished whose owner (`owners[p]`, where the partition's input is) is gone, and, unless
/// the stage is the `last` (whose finished partitions are committed), those finished on a
/// worker gone (`done_on[p]`), whose output — the next stage's input — went with it.
fn orphaned(owners: &[usize], gone: &[bool], done_on: &[Option<usize>], last: bool) -> Vec<usize> {
    let is_gone = |w: usize| gone.get(w).copied().unwrap_or(false);
    (0..owners.len())
        .filter(|&p| match done_on.get(p).copied().flatten() {
            None => is_gone(owners[p]),
            Some(on) => !last && is_gone(on),
        })
        .collect()
}

/// Whether a block's host (as the name node names it: a host name, or an address) is the
/// worker's host, by name or by the name's first label.
fn host_matches(block_host: &str, worker_host: &str) -> bool {
    if block_host.eq_ignore_ascii_case(worker_host) {
        return true;
    }
    let is_address = |h: &str| h.parse::<std::net::IpAddr>().is_ok();
    if is_address(block_host) || is_address(worker_host) {
        return false;
    }
    let short = |h: &str| h.split('.').next().unwrap_or(h).to_ascii_lowercase();
    short(block_host) == short(worker_host)
}

fn timing(phase: &str, start: Instant) -> PhaseTiming {
    PhaseTiming {
        phase: phase.to_string(),
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The running tasks of a phase that said their output is computed (`Ran`). Up to as many
/// of a worker's as it has threads are *delivering*: their threads count as free, so another
/// task starts there while they push. The others wait, in the order they said it, and one
/// becomes delivering when a delivering task of its worker ends. (More outputs in delivery
/// would only queue for the worker's links. A waiting task's thread used to stay busy until
/// its own output was delivered, which came late: the links then went idle while the next
/// tasks computed; docs/BENCHMARKS.md, "Pushes that take turns".)
#[derive(Debug, Default)]
struct Deliveries {
    /// Delivering tasks and their workers.
    delivering: BTreeMap<usize, usize>,
    /// Waiting tasks and their workers, oldest first.
    waiting: VecDeque<(usize, usize)>,
}

/// What a task's end meant for its worker's threads ([`Deliveries::ended`]).
#[derive(Debug, PartialEq, Eq)]
struct Ended {
    /// Whether the task was delivering (its thread was counted free already).
    was_delivering: bool,
    /// The waiting task that became delivering in its place.
    admitted: Option<usize>,
}

impl Ended {
    /// The worker's threads counted free by the task's end: its own unless it was
    /// delivering, and the admitted task's.
    fn threads_freed(&self) -> usize {
        usize::from(!self.was_delivering) + usize::from(self.admitted.is_some())
    }
}

impl Deliveries {
    /// Task `task` of worker `w` (which has `threads`) said it ran; true if its thread now
    /// counts as free (it delivers), false if it waits or had said so before.
    fn ran(&mut self, task: usize, w: usize, threads: usize) -> bool {
        if self.delivering.contains_key(&task) || self.waiting.iter().any(|(t, _)| *t == task) {
            return false;
        }
        let on_w = self.delivering.values().filter(|x| **x == w).count();
        if on_w < threads {
            self.delivering.insert(task, w);
            true
        } else {
            self.waiting.push_back((task, w));
            false
        }
    }

    /// Task `task` ended (done, failed, or gone with its worker).
    fn ended(&mut self, task: usize) -> Ended {
        self.waiting.retain(|(t, _)| *t != task);
        let Some(w) = self.delivering.remove(&task) else {
            return Ended {
                was_delivering: false,
                admitted: None,
            };
        };
        let admitted = self
            .waiting
            .iter()
            .position(|(_, x)| *x == w)
            .and_then(|i| self.waiting.remove(i))
            .map(|(next, _)| {
                self.delivering.insert(next, w);
                next
            });
        Ended {
            was_delivering: true,
            admitted,
        }
    }
}

/// What [`next_or_silent`] found.
#[derive(Debug, PartialEq, Eq)]
enum Polled<T, L> {
    /// The next event in the queue.
    Event(T),
    /// What `silent` found, the queue being empty.
    Silent(L),
    /// Nothing within [`EVENT_WAIT`].
    Quiet,
    /// Every sender is gone.
    Disconnected,
}

/// How long [`next_or_silent`] waits for an event.
const EVENT_WAIT: Duration = Duration::from_millis(200);

/// The next event of `events`, waiting up to [`EVENT_WAIT`]; but first, when the queue is
/// empty, what `silent` finds (a worker not heard from for too long). Asked each time the
/// queue is empty rather than only after a quiet spell: with many workers reporting, events
/// may never pause for long. Never asked while events wait, so that a worker's waiting
/// message counts as hearing from it.
fn next_or_silent<T, L>(
    events: &mpsc::Receiver<T>,
    silent: impl FnOnce() -> Option<L>,
) -> Polled<T, L> {
    match events.try_recv() {
        Ok(event) => return Polled::Event(event),
        Err(mpsc::TryRecvError::Disconnected) => return Polled::Disconnected,
        Err(mpsc::TryRecvError::Empty) => {}
    }
    if let Some(lost) = silent() {
        return Polled::Silent(lost);
    }
    match events.recv_timeout(EVENT_WAIT) {
        Ok(event) => Polled::Event(event),
        Err(mpsc::RecvTimeoutError::Timeout) => Polled::Quiet,
        Err(mpsc::RecvTimeoutError::Disconnected) => Polled::Disconnected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Events that never pause for [`EVENT_WAIT`] (many workers reporting) do not hide a
    /// silent worker: it is found within a few events.
    #[test]
    fn a_silent_worker_is_found_among_steady_events() {
        let (send, events) = mpsc::channel::<u32>();
        let sender = std::thread::spawn(move || {
            for n in 0..300 {
                if send.send(n).is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let mut found = None;
        for polls in 0..200 {
            match next_or_silent(&events, || Some("worker 1")) {
                Polled::Silent(lost) => {
                    found = Some((polls, lost));
                    break;
                }
                Polled::Event(_) | Polled::Quiet => {}
                Polled::Disconnected => break,
            }
        }
        drop(events);
        let _ = sender.join();
        let (polls, lost) = found.expect("the silent worker was never found");
        assert_eq!(lost, "worker 1");
        assert!(polls < 100, "found only after {polls} events");
    }

    /// A waiting event is taken before silence is asked about: it may be the silent
    /// worker's own.
    #[test]
    fn waiting_events_come_before_silence() {
        let (send, events) = mpsc::channel::<u32>();
        send.send(7).unwrap();
        let mut asked = false;
        let polled = next_or_silent(&events, || {
            asked = true;
            Some(())
        });
        assert_eq!(polled, Polled::Event(7));
        assert!(!asked);
        assert_eq!(next_or_silent(&events, || Some(())), Polled::Silent(()));
        drop(send);
        assert_eq!(next_or_silent(&events, || None::<()>), Polled::Disconnected);
    }

    #[test]
    fn block_hosts_match_workers_by_name_or_short_name_never_by_address_prefix() {
        assert!(host_matches("dn1.example.org", "dn1.example.org"));
        assert!(host_matches("DN1.example.org", "dn1"));
        assert!(host_matches("dn1", "dn1.cluster.local"));
        assert!(!host_matches("dn1.example.org", "dn2.example.org"));
        assert!(host_matches("10.0.0.1", "10.0.0.1"));
        assert!(!host_matches("10.0.0.1", "10.0.0.2"));
        assert!(!host_matches("10.0.0.1", "10"));
    }

    #[test]
    fn partitions_run_again_where_their_input_or_output_went_with_a_worker() {
        // Worker 1 is gone. Partition 0 finished on worker 0; 1 finished on worker 1; 2 and
        // 3 did not finish, 2 owned by worker 1 and 3 by worker 2; 4 finished on worker 2,
        // though owned by worker 1 when the phase began (it moved before it ran).
        let owners = [0, 1, 1, 2, 1];
        let gone = [false, true, false];
        let done_on = [Some(0), Some(1), None, None, Some(2)];
        // Last stage: the finished partitions are committed; 2 lost its input.
        assert_eq!(orphaned(&owners, &gone, &done_on, true), vec![2]);
        // A stage follows: 1's output, the next stage's input, went with worker 1.
        assert_eq!(orphaned(&owners, &gone, &done_on, false), vec![1, 2]);
        // No worker gone: nothing runs again.
        assert!(orphaned(&owners, &[false; 3], &done_on, false).is_empty());
    }

    #[test]
    fn a_worker_delivers_as_many_outputs_at_once_as_it_has_threads_and_the_rest_wait_their_turn() {
        let mut d = Deliveries::default();
        // Worker 0 has 2 threads: tasks 1 and 2 deliver, 3 and 4 wait; worker 1's task 5 is
        // not held back by worker 0's.
        assert!(d.ran(1, 0, 2));
        assert!(d.ran(2, 0, 2));
        assert!(!d.ran(3, 0, 2));
        assert!(!d.ran(4, 0, 2));
        assert!(d.ran(5, 1, 2));
        // Said twice (a repeated message): no second thread.
        assert!(!d.ran(1, 0, 2));
        assert!(!d.ran(3, 0, 2));
        // Task 2 ends: task 3, the oldest waiting on worker 0, delivers in its place, one
        // thread freed (task 2's was free already).
        let e = d.ended(2);
        assert_eq!(
            e,
            Ended {
                was_delivering: true,
                admitted: Some(3)
            }
        );
        assert_eq!(e.threads_freed(), 1);
        // Task 4 ends while waiting: its own thread is freed, nothing admitted.
        let e = d.ended(4);
        assert_eq!(e.threads_freed(), 1);
        assert_eq!(e.admitted, None);
        // A task that never said it ran frees its thread; nothing waits on worker 1.
        assert_eq!(d.ended(9).threads_freed(), 1);
        assert_eq!(d.ended(5).threads_freed(), 0);
        // Tasks 1 and 3 end: no one left to admit.
        assert_eq!(d.ended(1).threads_freed(), 0);
        assert_eq!(d.ended(3).threads_freed(), 0);
        assert!(d.delivering.is_empty() && d.waiting.is_empty());
    }

    #[test]
    fn a_workers_threads_are_never_counted_free_twice() {
        // Random runs of ran/ended over 3 workers: every thread freed was taken by a task
        // that had not yet freed its own, so that a worker's count never goes below zero.
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            usize::try_from(seed % n).unwrap()
        };
        for _ in 0..200 {
            let mut d = Deliveries::default();
            let mut running: Vec<usize> = vec![0; 3];
            let mut live: Vec<(usize, usize)> = Vec::new();
            for task in 0..40 {
                let w = next(3);
                running[w] += 1;
                live.push((task, w));
                for _ in 0..next(3) {
                    if live.is_empty() {
                        break;
                    }
                    let (t, w) = live[next(live.len() as u64)];
                    if next(2) == 0 {
                        if d.ran(t, w, 2) {
                            running[w] = running[w].checked_sub(1).unwrap();
                        }
                    } else {
                        live.retain(|(x, _)| *x != t);
                        let freed = d.ended(t).threads_freed();
                        running[w] = running[w].checked_sub(freed).unwrap();
                    }
                }
                for w in 0..3 {
                    let delivering = d.delivering.values().filter(|x| **x == w).count();
                    assert!(delivering <= 2, "worker {w}: {d:?}");
                }
            }
            for (t, w) in live {
                let freed = d.ended(t).threads_freed();
                running[w] = running[w].checked_sub(freed).unwrap();
            }
            assert_eq!(running, vec![0, 0, 0], "every thread came back once");
        }
    }

    #[test]
    fn worker_lists_need_a_port_on_every_entry_and_no_entry_twice() {
        assert_eq!(
            WorkerList::parse("h1:7070, h2:7071,").unwrap().workers,
            vec!["h1:7070".to_string(), "h2:7071".to_string()]
        );
        assert!(WorkerList::parse("").is_err());
        assert!(WorkerList::parse("h1").is_err());
        assert!(WorkerList::parse("h1:x").is_err());
        assert!(WorkerList::parse(":7070").is_err());
        let twice = WorkerList::parse("h1:7070,h2:7070,h1:7070").unwrap_err();
        assert!(twice.contains("h1:7070 is listed twice"), "{twice}");
        assert!(WorkerList::parse("h1:7070,h1:7071").is_ok());
    }

    #[test]
    fn job_ids_are_plain_and_distinct() {
        let (a, b) = (new_job_id(), new_job_id());
        assert_ne!(a, b);
        assert!(a.starts_with("job_"));
        assert!(a.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
    }
}
