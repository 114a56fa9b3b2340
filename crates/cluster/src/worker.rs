//! A worker: runs the tasks a coordinator gives it, and serves its tasks' runs to the other
//! workers of the job.
//!
//! A worker listens on the address it is given (never all interfaces unless told so) and
//! admits only a coordinator that proves it knows the cluster's secret. It runs one job at a
//! time: for the job it builds the job from its spec, opens its spill directory under the
//! scratch directory, attaches to the output's committer, and opens a shuffle listener of the
//! job's own (admitting only the job's secret). When the job ends — or the coordinator's
//! connection drops — its tasks are cancelled and everything it left is removed. A worker
//! killed outright removes nothing: the next worker started on its scratch directory does
//! (see `scratch`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use sluice_api::{AttemptCounters, ExecError, JobStatus, OutputFormat, TaskContext};
use sluice_exec::{HostSettings, MapAttempt, TaskHost};
use sluice_format::Codec;
use sluice_io::{
    DiscardingCommitter, FileStatus, JobCommitter, Location, MapSplit, Split, StoredInput, Stores,
};
use sluice_net::{Listener, NetError, Secret};
use sluice_shuffle::{Reclaim, Run, RunKind};
use sluice_spec::{BuiltJob, JobSpec};
use sluice_streaming::ShippedFiles;
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::busy::BusyClock;
use crate::link::{connect, Link, LinkWriter, Net};
use crate::protocol::{
    JobStart, PushedTask, ShuffleRequest, ShuffleStats, TaskRef, ToCoordinator, ToWorker,
    PROTOCOL_VERSION,
};
use crate::scratch::{self, is_plain_id, JobDir};
use crate::segments::{self, Only, TaskOutput};
use crate::shipping::Incoming;
use crate::turns::PushTurns;
use crate::ClusterError;

/// Bytes of a task's output to push from which its thread is counted free while it pushes
/// (about 30 ms at 1 Gbit/s).
const FREE_WHILE_PUSHING: u64 = 4 << 20;

/// Bytes of a task's output for one worker below which it is held back and pushed in a batch
/// with other small outputs for that worker: a push costs a request and a round trip to
/// acknowledge it, as much as sending some 10 KB at 1 Gbit/s over a 0.1 ms link, and each
/// push is a run of the receiver's to track.
const SMALL_PUSH: u64 = 64 << 10;

/// Pushes of one task's output that go at once, each to its own owner, on a thread of its
/// own. With three or four workers a task pushes to every other worker at once; in a large
/// cluster the rest wait for one of these threads, so that a worker does not open a
/// connection to every other worker per task (each owner serves only as many shuffle
/// connections at once as it has threads).
const PUSHES_AT_ONCE: usize = 8;

/// Bytes of held-back outputs for one worker at which they are pushed, without waiting for
/// the end of the stage's tasks.
const BATCH_BYTES: u64 = 1 << 20;

/// Held-back outputs for one worker at which they are pushed, however small.
const BATCH_OUTPUTS: usize = 256;

/// How long a busy worker waits for the hello of a coordinator it turns away.
const TURN_AWAY_TIMEOUT: Duration = Duration::from_secs(5);
/// How many coordinators may be waited on at once to be told this worker is busy; beyond
/// them a connection is closed at once, so that a peer reconnecting in a loop cannot make the
/// worker start a thread per attempt.
const MOST_TURNED_AWAY_AT_ONCE: usize = 16;

/// How long a worker waits to connect to another.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a shuffle connection waits for its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How a worker runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct WorkerSettings {
    /// Where jobs' spill files go (a local disk); each job gets a directory of its own.
    pub scratch: PathBuf,
    /// Memory budget of each job's buffers on this worker, in bytes.
    pub memory: usize,
    /// Tasks run at once.
    pub threads: usize,
    /// The secret coordinators must know.
    pub secret: Secret,
    /// The ports a job's shuffle may listen on (`None`: one the system picks).
    pub shuffle_ports: Option<PortRange>,
    /// Asks the worker to stop (see [`WorkerStop`]).
    pub stop: WorkerStop,
    /// Where streaming programs' logs go (`None`: in each job's scratch directory); the
    /// logs of a failed job are kept there.
    pub log_dir: Option<PathBuf>,
    /// Directories on the local disks where jobs' spill files go, spread over them in turn
    /// (empty: in each job's directory in `scratch`).
    pub spill_dirs: Vec<PathBuf>,
}

impl WorkerSettings {
    /// A worker spilling under `scratch`, with `threads` tasks at once within `memory` bytes,
    /// working for coordinators that know `secret`. A relative `scratch` is taken from the
    /// current directory now: a job moves the worker into the directory it was submitted from.
    pub fn new(scratch: PathBuf, memory: usize, threads: usize, secret: Secret) -> WorkerSettings {
        WorkerSettings {
            scratch: std::path::absolute(&scratch).unwrap_or(scratch),
            memory,
            threads,
            secret,
            shuffle_ports: None,
            stop: WorkerStop::new(),
            log_dir: None,
            spill_dirs: Vec::new(),
        }
    }

    /// The same, stopping when `stop` is triggered (by a signal handler, say).
    pub fn with_stop(mut self, stop: WorkerStop) -> WorkerSettings {
        self.stop = stop;
        self
    }

    /// The same, its streaming programs' logs in `dir` (made if need be), beside whatever
    /// else is there: a job removes only its own logs (named by its attempts).
    pub fn with_log_dir(mut self, dir: PathBuf) -> WorkerSettings {
        self.log_dir = Some(std::path::absolute(&dir).unwrap_or(dir));
        self
    }

    /// The same, its jobs' spill files spread over `dirs` (one per local disk; relative ones
    /// taken from the current directory now).
    pub fn with_spill_dirs(mut self, dirs: Vec<PathBuf>) -> WorkerSettings {
        self.spill_dirs = dirs
            .into_iter()
            .map(|dir| std::path::absolute(&dir).unwrap_or(dir))
            .collect();
        self
    }

    /// The same, its jobs' shuffles listening on a port of `ports` (for a firewall).
    pub fn with_shuffle_ports(mut self, ports: PortRange) -> WorkerSettings {
        self.shuffle_ports = Some(ports);
        self
    }
}

/// Asks a worker to stop, as a service manager does with `SIGTERM`: the worker stops
/// accepting coordinators, ends the session it serves as if its coordinator had left (the
/// job's tasks are cancelled, their programs stopped and its files removed; the coordinator
/// takes the worker for lost and runs its work elsewhere), and [`Worker::serve`] or
/// [`Worker::connect`] returns. Clones stop the same worker.
#[derive(Debug, Clone)]
pub struct WorkerStop {
    stopped: Arc<tokio::sync::watch::Sender<bool>>,
}

impl WorkerStop {
    /// A stop not yet asked for.
    pub fn new() -> WorkerStop {
        WorkerStop {
            stopped: Arc::new(tokio::sync::watch::Sender::new(false)),
        }
    }

    /// Asks the worker to stop; it does so within about a second, or once its running tasks
    /// have noticed they are cancelled.
    pub fn stop(&self) {
        self.stopped.send_replace(true);
    }

    /// Whether the worker was asked to stop.
    pub fn is_stopped(&self) -> bool {
        *self.stopped.borrow()
    }

    /// Completes once the worker is asked to stop.
    pub(crate) async fn requested(&self) {
        let mut seen = self.stopped.subscribe();
        // An error means the sender is gone, which cannot be while `self` holds it.
        let _ = seen.wait_for(|stopped| *stopped).await;
    }
}

impl Default for WorkerStop {
    fn default() -> WorkerStop {
        WorkerStop::new()
    }
}

/// Ports from `first` to `last`, both included: where a worker's jobs' shuffles may listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortRange {
    first: u16,
    last: u16,
}

impl PortRange {
    /// The ports from `first` to `last`.
    ///
    /// # Errors
    /// A message if the range is empty or holds port 0 (which asks the system for one).
    pub fn new(first: u16, last: u16) -> Result<PortRange, String> {
        if first == 0 || last < first {
            return Err(format!(
                "{first}-{last}: expected FIRST-LAST with 0 < FIRST <= LAST"
            ));
        }
        Ok(PortRange { first, last })
    }

    /// The ports, in order.
    pub fn ports(&self) -> std::ops::RangeInclusive<u16> {
        self.first..=self.last
    }
}

impl std::str::FromStr for PortRange {
    type Err = String;

    /// `FIRST-LAST` (`7100-7199`), or one port.
    fn from_str(text: &str) -> Result<PortRange, String> {
        let port = |t: &str| {
            t.trim()
                .parse::<u16>()
                .map_err(|e| format!("{text}: {t:?} is not a port: {e}"))
        };
        match text.split_once('-') {
            Some((first, last)) => PortRange::new(port(first)?, port(last)?),
            None => {
                let only = port(text)?;
                PortRange::new(only, only)
            }
        }
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.first, self.last)
    }
}

/// Makes a job's stores from its settings (`-D` keys) and its name: the front end's, which
/// knows which remote stores are built in.
pub type StoresFactory = dyn Fn(&[(String, String)], &str) -> Result<Stores, String> + Send + Sync;

/// Where a worker reports what happens (a line each): a coordinator connected, a job started
/// or ended, a task failed, a peer was refused.
pub type Log = dyn Fn(&str) + Send + Sync;

/// A worker: listening for coordinators ([`Worker::bind`], [`Worker::serve`]), or connecting
/// to one for a single job ([`Worker::connect`], as in a YARN container).
pub struct Worker {
    settings: WorkerSettings,
    net: Net,
    listener: Option<Listener>,
    stores: Arc<StoresFactory>,
    log: Arc<Log>,
}

impl Worker {
    /// A worker listening on `listen` (only where it is told to), with its scratch directory
    /// created.
    ///
    /// # Errors
    /// The address cannot be bound; the scratch directory cannot be created.
    pub fn bind(
        listen: SocketAddr,
        settings: WorkerSettings,
        stores: Arc<StoresFactory>,
        log: Arc<Log>,
    ) -> Result<Worker, ClusterError> {
        let mut worker = Worker::new(settings, stores, log)?;
        let listener = worker
            .net
            .handle()
            .block_on(Listener::bind(listen, worker.settings.secret.clone()))?;
        worker.listener = Some(listener);
        Ok(worker)
    }

    fn new(
        settings: WorkerSettings,
        stores: Arc<StoresFactory>,
        log: Arc<Log>,
    ) -> Result<Worker, ClusterError> {
        std::fs::create_dir_all(&settings.scratch).map_err(|e| {
            ClusterError::Setup(format!(
                "cannot create the scratch directory {}: {e}",
                settings.scratch.display()
            ))
        })?;
        // What workers killed on this scratch directory left behind (a live worker's
        // directories are locked, and kept).
        let stale_jobs = scratch::remove_stale(&settings.scratch);
        let stale_streaming = sluice_streaming::remove_stale_scratch(&settings.scratch);
        for dir in stale_jobs.into_iter().chain(stale_streaming) {
            log(&format!(
                "removed {}, left by a worker that is no longer running",
                dir.display()
            ));
        }
        Ok(Worker {
            settings,
            net: Net::new()?,
            listener: None,
            stores,
            log,
        })
    }

    /// Connects to the coordinator at `coordinator` and works for it until it is done with
    /// this worker (the job is over, or its connection ends).
    ///
    /// # Errors
    /// The coordinator cannot be reached or does not know the secret; the session failed;
    /// [`ClusterError::Stopped`] when the worker was stopped ([`WorkerStop`]) first.
    pub fn connect(
        coordinator: SocketAddr,
        settings: WorkerSettings,
        stores: Arc<StoresFactory>,
        log: Arc<Log>,
    ) -> Result<(), ClusterError> {
        let worker = Worker::new(settings, stores, log)?;
        let link = crate::link::connect(
            worker.net.handle(),
            coordinator,
            &worker.settings.secret,
            CONNECT_TIMEOUT,
        )?;
        (worker.log)(&format!("connected to coordinator {coordinator}"));
        worker.session(link)
    }

    /// The address coordinators connect to (`None` for a worker that connects itself).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.as_ref().map(Listener::local_addr)
    }

    /// Serves coordinators, one at a time, until it is stopped ([`WorkerStop`]); peers refused
    /// for not knowing the secret are logged. A coordinator that comes while another is served is
    /// told at once that this worker is busy.
    ///
    /// # Errors
    /// [`ClusterError::Setup`] for a worker that does not listen; the listener failed.
    pub fn serve(&self) -> Result<(), ClusterError> {
        let Some(listener) = &self.listener else {
            return Err(ClusterError::Setup("this worker does not listen".into()));
        };
        let mut refused = 0;
        let turning_away = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            // The coordinator served, and its session's thread.
            let mut serving: Option<(String, std::thread::ScopedJoinHandle<'_, ()>)> = None;
            let stop = &self.settings.stop;
            while !stop.is_stopped() {
                let accepted = self.net.handle().block_on(async {
                    let accept = tokio::time::timeout(Duration::from_secs(1), listener.accept());
                    tokio::select! {
                        biased;
                        () = stop.requested() => None,
                        accepted = accept => Some(accepted),
                    }
                });
                refused = log_refusals(listener, refused, &*self.log, "");
                let conn = match accepted {
                    None | Some(Err(_)) => continue,
                    Some(Ok(Ok(conn))) => conn,
                    Some(Ok(Err(e))) => return Err(ClusterError::Net(e)),
                };
                let peer = conn.peer().to_string();
                let link = Link::new(self.net.handle().clone(), conn);
                if let Some((coordinator, session)) = &serving {
                    if !session.is_finished() {
                        if turning_away.fetch_add(1, Ordering::AcqRel) >= MOST_TURNED_AWAY_AT_ONCE {
                            turning_away.fetch_sub(1, Ordering::AcqRel);
                            (self.log)(&format!(
                                "coordinator {peer} turned away at once (connection closed): \
                                 busy with a job of coordinator {coordinator}, and \
                                 {MOST_TURNED_AWAY_AT_ONCE} others are being turned away"
                            ));
                            continue;
                        }
                        let coordinator = coordinator.clone();
                        let turning_away = &turning_away;
                        scope.spawn(move || {
                            self.turn_away(link, &peer, &coordinator);
                            turning_away.fetch_sub(1, Ordering::AcqRel);
                        });
                        continue;
                    }
                }
                if let Some((_, session)) = serving.take() {
                    let _ = session.join();
                }
                (self.log)(&format!("coordinator {peer} connected"));
                let session = scope.spawn({
                    let peer = peer.clone();
                    move || match self.session(link) {
                        Ok(()) => (self.log)(&format!("coordinator {peer} left")),
                        Err(e) => (self.log)(&format!("coordinator {peer}: {e}")),
                    }
                });
                serving = Some((peer, session));
            }
            // Stopped: the session ends on its own (see `WorkerStop`), and the scope waits
            // for it.
            Ok(())
        })
    }

    /// Answers the hello of coordinator `peer` with [`ToCoordinator::Busy`]: this worker
    /// works for `coordinator`.
    fn turn_away(&self, mut link: Link, peer: &str, coordinator: &str) {
        (self.log)(&format!(
            "coordinator {peer} turned away: busy with a job of coordinator {coordinator}"
        ));
        if let Ok(Some(ToWorker::Hello { .. })) = link.recv_within::<ToWorker>(TURN_AWAY_TIMEOUT) {
            let _ = link.send(&ToCoordinator::Busy {
                coordinator: coordinator.to_string(),
            });
        }
    }

    /// One coordinator's session: its jobs, one after another, until it disconnects.
    fn session(&self, link: Link) -> Result<(), ClusterError> {
        let peer = link.peer().to_string();
        // Other workers reach this one's shuffle where the coordinator reached it.
        let shuffle_ip = link.local_addr().ip();
        let (mut reader, writer) = link.split();
        let writer = Arc::new(Mutex::new(writer));
        match reader.recv_unless_stopped::<ToWorker>(&self.settings.stop)? {
            Some(ToWorker::Hello { version }) if version == PROTOCOL_VERSION => {}
            Some(ToWorker::Hello { version }) => {
                return Err(ClusterError::Protocol {
                    peer,
                    reason: format!(
                        "speaks protocol version {version}, this worker {PROTOCOL_VERSION}"
                    ),
                })
            }
            other => {
                return Err(ClusterError::Protocol {
                    peer,
                    reason: format!("expected hello, got {other:?}"),
                })
            }
        }
        lock(&writer).send(&ToCoordinator::Hello {
            version: PROTOCOL_VERSION,
            host: host_name(),
            threads: self.settings.threads,
            memory: u64::try_from(self.settings.memory).unwrap_or(u64::MAX),
            container: std::env::var("CONTAINER_ID").ok(),
        })?;
        let progress = Progress::start(Arc::clone(&writer));
        let mut session = Session {
            worker: self,
            shuffle_ip,
            writer,
            job: None,
            tasks: Vec::new(),
            progress: &progress,
        };
        let result = session.run(&mut reader);
        session.end_job();
        progress.stop();
        result
    }
}

/// A coordinator's session on this worker.
struct Session<'a> {
    worker: &'a Worker,
    /// Where the job's shuffle listens: the address the coordinator reached this worker at.
    shuffle_ip: std::net::IpAddr,
    writer: Arc<Mutex<LinkWriter>>,
    job: Option<Arc<RunningJob>>,
    tasks: Vec<JoinHandle<()>>,
    progress: &'a Progress,
}

/// Sends the running job's counters to the coordinator about once a second.
struct Progress {
    job: Arc<Mutex<Option<Arc<JobStatus>>>>,
    /// Dropped to stop the thread at once (it waits on the other end between reports).
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    fn start(writer: Arc<Mutex<LinkWriter>>) -> Progress {
        let job: Arc<Mutex<Option<Arc<JobStatus>>>> = Arc::new(Mutex::new(None));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let seen = Arc::clone(&job);
        // Waits `pause`; whether to go on (the session has not ended meanwhile).
        let wait = move |pause: Duration| {
            matches!(
                stopped.recv_timeout(pause),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout)
            )
        };
        let thread = std::thread::spawn(move || {
            while wait(Duration::from_millis(250)) {
                let Some(status) = lock(&seen).clone() else {
                    continue;
                };
                if status.is_cancelled() {
                    continue;
                }
                // Read under the writer's lock, as a task's totals are: never an older total
                // after a newer one.
                let mut writer = lock(&writer);
                let message = ToCoordinator::Progress {
                    counters: status.counters.snapshot(),
                    user_counters: status.user_counters(),
                    notes: status.take_notes().into_iter().map(|n| n.text).collect(),
                };
                if writer.send(&message).is_err() {
                    return;
                }
                drop(writer);
                if !wait(Duration::from_millis(750)) {
                    return;
                }
            }
        });
        Progress {
            job,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Reports `status` from now on (`None`: nothing).
    fn follow(&self, status: Option<Arc<JobStatus>>) {
        *lock(&self.job) = status;
    }

    fn stop(mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Session<'_> {
    fn run(&mut self, reader: &mut crate::link::LinkReader) -> Result<(), ClusterError> {
        let stop = &self.worker.settings.stop;
        while let Some(message) = reader.recv_unless_stopped::<ToWorker>(stop)? {
            self.tasks.retain(|t| !t.is_finished());
            match message {
                ToWorker::Start(start) => {
                    let mut start = *start;
                    let mut files = Incoming::new(reader, std::mem::take(&mut start.files));
                    if self.job.is_some() {
                        files.drain()?;
                        self.send(&ToCoordinator::JobFailed {
                            error: "a job is running on this worker already".into(),
                        })?;
                        continue;
                    }
                    let id = start.job_id.clone();
                    let started =
                        RunningJob::start(self.worker, start, self.shuffle_ip, &mut files);
                    // Whatever happened, the connection reads on after the files.
                    files.drain()?;
                    match started {
                        Ok(job) => {
                            let shuffle = job.shuffle_addr.to_string();
                            (self.worker.log)(&format!("job {id} started (shuffle at {shuffle})"));
                            self.progress.follow(Some(Arc::clone(job.host.status())));
                            self.job = Some(job);
                            self.send(&ToCoordinator::JobReady { shuffle })?;
                        }
                        Err(e) => {
                            (self.worker.log)(&format!("job {id} cannot start: {e}"));
                            self.send(&ToCoordinator::JobFailed {
                                error: error_chain(&e),
                            })?;
                        }
                    }
                }
                ToWorker::Peers { peers, me } => {
                    let job = self.job()?;
                    let addrs = peers
                        .iter()
                        .map(|p| match p {
                            Some(p) => p.parse::<SocketAddr>().map(Some).map_err(|e| {
                                ClusterError::Protocol {
                                    peer: "coordinator".into(),
                                    reason: format!("bad peer address {p:?}: {e}"),
                                }
                            }),
                            None => Ok(None),
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    if me >= addrs.len() {
                        return Err(ClusterError::Protocol {
                            peer: "coordinator".into(),
                            reason: format!("worker {me} of {}", addrs.len()),
                        });
                    }
                    *lock(&job.peers) = Peers { addrs, me };
                }
                ToWorker::Owners { stage, owners } => {
                    let job = self.job()?;
                    lock(&job.owners).insert(stage, Arc::new(owners));
                }
                ToWorker::Map {
                    task,
                    attempt,
                    ranges,
                    combined,
                } => {
                    let job = self.job()?;
                    let parts: Vec<Split> = ranges
                        .iter()
                        .map(|r| Split {
                            file: r.file,
                            start: r.start,
                            len: r.len,
                        })
                        .collect();
                    let split = match (combined, parts.as_slice()) {
                        (false, [one]) => MapSplit::File(*one),
                        _ => MapSplit::Combined {
                            parts,
                            hosts: Vec::new(),
                        },
                    };
                    let task_ref = TaskRef {
                        stage: 0,
                        task,
                        attempt,
                    };
                    let log = Arc::clone(&self.worker.log);
                    self.spawn(job, task_ref, move |job, ran| {
                        job.run_map(task, attempt, split, &*log, ran)
                    });
                }
                ToWorker::Reduce {
                    stage,
                    partition,
                    attempt,
                } => {
                    let job = self.job()?;
                    let task_ref = TaskRef {
                        stage,
                        task: partition,
                        attempt,
                    };
                    let log = Arc::clone(&self.worker.log);
                    self.spawn(job, task_ref, move |job, ran| {
                        job.run_reduce(stage, partition, attempt, &*log, ran)
                    });
                }
                ToWorker::Flush { stage } => {
                    let job = self.job()?;
                    job.flush(stage, &*self.worker.log);
                    self.send(&ToCoordinator::Flushed { stage })?;
                }
                ToWorker::Seal { stage, holders } => {
                    let job = self.job()?;
                    match job.seal(stage, &holders, &*self.worker.log) {
                        Ok(Sealing {
                            missing,
                            why,
                            out_of_room,
                        }) => {
                            if missing.is_empty() {
                                (self.worker.log)(&format!("job {}: stage {stage} sealed", job.id));
                            }
                            self.send(&ToCoordinator::Sealed {
                                stage,
                                missing,
                                why,
                                out_of_room,
                            })?;
                        }
                        Err(e) => self.send(&ToCoordinator::JobFailed {
                            error: error_chain(&e),
                        })?,
                    }
                }
                ToWorker::Reopen { stage } => {
                    let job = self.job()?;
                    let reopened = stage
                        .checked_sub(1)
                        .ok_or_else(|| ExecError::Config("stages are numbered from 1".into()))
                        .and_then(|s| job.host.reopen(s));
                    if let Err(e) = reopened {
                        self.send(&ToCoordinator::JobFailed { error: e.chain() })?;
                    }
                }
                ToWorker::Release { stage } => {
                    if let Some(job) = &self.job {
                        job.release(stage);
                    }
                }
                ToWorker::End => {
                    let ended = self.end_job();
                    self.send(&ToCoordinator::Ended {
                        shuffle: ended.shuffle,
                        peak_memory_reserved: ended.peak_memory_reserved,
                        peak_rss_bytes: ended.peak_rss_bytes,
                    })?;
                }
                ToWorker::Hello { .. } => {
                    return Err(ClusterError::Protocol {
                        peer: "coordinator".into(),
                        reason: "said hello twice".into(),
                    })
                }
            }
        }
        Ok(())
    }

    fn job(&self) -> Result<Arc<RunningJob>, ClusterError> {
        self.job.clone().ok_or_else(|| ClusterError::Protocol {
            peer: "coordinator".into(),
            reason: "sent a task before starting a job".into(),
        })
    }

    fn send(&self, message: &ToCoordinator) -> Result<(), ClusterError> {
        lock(&self.writer).send(message)
    }

    /// Runs a task attempt on a thread of its own and reports how it went.
    fn spawn(
        &mut self,
        job: Arc<RunningJob>,
        task: TaskRef,
        run: impl FnOnce(&RunningJob, &dyn Fn()) -> Result<(), ExecError> + Send + 'static,
    ) {
        let writer = Arc::clone(&self.writer);
        let log = Arc::clone(&self.worker.log);
        let stop = self.worker.settings.stop.clone();
        let handle = std::thread::spawn(move || {
            let ctx = TaskContext {
                is_map: task.stage == 0,
                task: task.task,
                attempt: task.attempt,
                stage: task.stage.max(1),
            };
            // Once the output is computed, the coordinator may start another task while this
            // one pushes it: the link carries one task's output while the next one computes.
            let ran = || {
                if let Err(e) = lock(&writer).send(&ToCoordinator::Ran { task }) {
                    log(&format!("cannot report {task}: {e}"));
                }
            };
            let result = run(&job, &ran);
            if stop.is_stopped() {
                // A stopping worker's tasks end cancelled; that is no failure of theirs, and
                // the coordinator, finding the worker gone, runs them again elsewhere.
                return;
            }
            let status = job.host.status();
            let counted = match &result {
                Ok(()) => status.commit_attempt(&ctx),
                Err(_) => {
                    status.discard_attempt(&ctx);
                    AttemptCounters::default()
                }
            };
            // The totals are read under the writer's lock, so that the coordinator never
            // sees an older total after a newer one.
            let mut writer = lock(&writer);
            let message = match result {
                Ok(()) => ToCoordinator::Done {
                    task,
                    counters: status.counters.snapshot(),
                    user_counters: status.user_counters(),
                    task_counters: Box::new(counted.counters),
                    task_user_counters: counted.user_counters,
                },
                Err(e) => {
                    if !matches!(e, ExecError::Cancelled) {
                        job.keep_logs.store(true, Ordering::Relaxed);
                        log(&format!("job {}: {task} failed: {}", job.id, e.chain()));
                    }
                    ToCoordinator::Failed {
                        task,
                        retryable: e.is_retryable(),
                        error: e.chain(),
                    }
                }
            };
            if let Err(e) = writer.send(&message) {
                log(&format!("cannot report {task}: {e}"));
            }
        });
        self.tasks.push(handle);
    }

    /// Cancels the running job's tasks, waits for them, and removes what the job left;
    /// returns what its shuffle did and the memory it took.
    fn end_job(&mut self) -> Ended {
        if let Some(job) = &self.job {
            job.host.status().cancel();
        }
        for task in self.tasks.drain(..) {
            let _ = task.join();
        }
        self.progress.follow(None);
        let Some(job) = self.job.take() else {
            return Ended::default();
        };
        let id = job.id.clone();
        job.stop_serving();
        let ended = Ended {
            shuffle: job.stats(),
            peak_memory_reserved: u64::try_from(job.host.peak_memory_reserved())
                .unwrap_or(u64::MAX),
            peak_rss_bytes: peak_rss_bytes(),
        };
        // The last reference goes when the serving threads finish their transfers.
        drop(job);
        (self.worker.log)(&format!("job {id} ended"));
        ended
    }
}

/// What a worker tells of a job that ended (see [`ToCoordinator::Ended`]).
#[derive(Debug, Default)]
struct Ended {
    shuffle: ShuffleStats,
    peak_memory_reserved: u64,
    peak_rss_bytes: Option<u64>,
}

/// A job on this worker.
struct RunningJob {
    id: String,
    built: BuiltJob,
    host: TaskHost,
    stores: Stores,
    committer: Box<dyn JobCommitter>,
    inputs: Vec<StoredInput>,
    secret: Arc<Secret>,
    handle: Handle,
    peers: Mutex<Peers>,
    /// The owner of each partition, by stage (1-based).
    owners: Mutex<HashMap<usize, Arc<Vec<usize>>>>,
    /// The output of the tasks this worker ran, by (stage it is input of, task): what
    /// owners pull when a push did not arrive. Once pushed, a copy in memory moves to disk
    /// when memory is short (see [`Reclaim`]): it is read only if something fails.
    outputs: Mutex<HashMap<(usize, usize), Vec<Run>>>,
    /// This worker's own partitions of the outputs in `outputs`, as its input of the stage
    /// sees them (one view per run): moved to a smaller run when the whole output leaves
    /// memory. Weak: a view merged away early no longer needs it.
    own_views: Mutex<HashMap<(usize, usize), OwnViews>>,
    /// The partitions of each (stage, task) this worker holds a copy of.
    received: Mutex<HashMap<(usize, usize), BTreeSet<usize>>>,
    counts: Counts,
    /// `/proc/self/io` when the job started.
    io_start: (u64, u64),
    shuffle_addr: SocketAddr,
    accept: Mutex<Option<AbortHandle>>,
    /// Connections to other workers' shuffles kept from earlier pushes, by address.
    idle: Mutex<HashMap<SocketAddr, Vec<Link>>>,
    /// Small outputs held back to be pushed together, by (stage, owner).
    held: Mutex<HashMap<(usize, usize), Batch>>,
    /// Pushes to each owner take turns.
    push_turns: PushTurns,
    /// Tasks the worker runs at once.
    threads: usize,
    /// Whether a streaming job's program logs stay on this machine when the job ends: one
    /// of its tasks failed here (the job's error names the log), or `sluice.keep.logs=true`.
    keep_logs: AtomicBool,
    /// Where the worker reports (that logs were kept).
    log: Arc<Log>,
    /// Dropped with the job: connections kept open to its shuffle stop waiting for their next
    /// request then, rather than wait on the network runtime as it shuts down.
    ended: tokio::sync::watch::Sender<()>,
    /// The job's directory (the host's spill directory is inside): removed, then unlocked,
    /// when the job is dropped. Last, so that it goes after everything that writes in it.
    _dir: JobDir,
}

/// A worker's own partitions of one task output, one view per run (see
/// `RunningJob::own_views`).
type OwnViews = Vec<Weak<Only>>;

/// Small task outputs for one worker, held back to be pushed in one transfer.
#[derive(Debug, Default)]
struct Batch {
    outputs: Vec<HeldOutput>,
    bytes: u64,
}

/// Some partitions of a task's output, to push.
#[derive(Debug, Clone)]
struct HeldOutput {
    task: usize,
    partitions: Vec<usize>,
    runs: Vec<Run>,
}

impl HeldOutput {
    fn as_sent(&self) -> TaskOutput<'_> {
        TaskOutput {
            task: self.task,
            runs: &self.runs,
            partitions: &self.partitions,
        }
    }
}

/// The shuffle addresses of the job's workers (`None`: lost), and this worker's number.
#[derive(Debug, Clone, Default)]
struct Peers {
    addrs: Vec<Option<SocketAddr>>,
    me: usize,
}

/// What the shuffle did, counted as it happens.
#[derive(Debug, Default)]
struct Counts {
    pushed_bytes: AtomicU64,
    failed_pushes: AtomicU64,
    pushes: AtomicU64,
    batched_outputs: AtomicU64,
    push_connections: AtomicU64,
    received_bytes: AtomicU64,
    received_to_disk_bytes: AtomicU64,
    kept_to_disk_bytes: AtomicU64,
    pulled_bytes: AtomicU64,
    /// Time during which at least one push to another worker was under way.
    pushing: BusyClock,
    /// Time during which at least one push from another worker was being received.
    receiving: BusyClock,
}

impl RunningJob {
    fn start(
        worker: &Worker,
        start: JobStart,
        shuffle_ip: std::net::IpAddr,
        files: &mut Incoming<'_>,
    ) -> Result<Arc<RunningJob>, ClusterError> {
        let mut start = start;
        let job_id = start.job_id.clone();
        let setup = |what: &str, e: &dyn std::fmt::Display| {
            ClusterError::Setup(format!("job {job_id}: {what}: {e}"))
        };
        if !is_plain_id(&start.job_id) {
            return Err(setup("a job id that is not a plain name", &start.job_id));
        }
        // Removed (by its drop) if the job fails to start.
        let dir = JobDir::create(&worker.settings.scratch, &start.job_id).map_err(|e| {
            setup(
                &format!(
                    "cannot make a directory in {}",
                    worker.settings.scratch.display()
                ),
                &e,
            )
        })?;
        // The files the job's command line names are used from their copies here, whether
        // or not this machine shares the submitter's disk: the job runs alike on both.
        let shipped = if files.is_empty() {
            ShippedFiles::default()
        } else {
            files.receive(&dir.path().join("shipped"))?
        };
        // Local locations came absolute; the process's directory matters to a streaming job
        // only (one job at a time runs on a worker, so it is the job's): its programs are
        // looked for where it was submitted, when this machine has that directory, and
        // in a directory of its own otherwise.
        let working_dir = match &mut start.spec {
            JobSpec::Streaming(spec) => {
                spec.shipped = shipped;
                // The programs' directories and logs go on the worker's scratch disk too.
                spec.scratch_root = Some(worker.settings.scratch.clone());
                spec.log_root.clone_from(&worker.settings.log_dir);
                if !spec.working_dir.is_dir() {
                    let own = dir.path().join("submitted");
                    std::fs::create_dir_all(&own)
                        .map_err(|e| setup(&format!("cannot create {}", own.display()), &e))?;
                    spec.working_dir = own;
                }
                Some(spec.working_dir.clone())
            }
            _ => None,
        };
        let working_dir = working_dir.unwrap_or_else(|| PathBuf::from(&start.working_dir));
        // A built-in job whose directory this machine lacks runs in the worker's scratch
        // directory (not in whichever directory the last job left it in).
        if let Err(e) = std::env::set_current_dir(&working_dir) {
            if matches!(start.spec, JobSpec::Streaming(_)) {
                return Err(setup(
                    &format!("cannot enter {}", working_dir.display()),
                    &e,
                ));
            }
            let _ = std::env::set_current_dir(&worker.settings.scratch);
        }
        let stores = (worker.stores)(&start.defines, &start.job_id)
            .map_err(|e| setup("cannot connect to the job's stores", &e))?;
        reset_peak_rss();
        let status = Arc::new(JobStatus::default());
        let built = start
            .spec
            .build_for_worker(&stores, Arc::clone(&status))
            .map_err(|e| setup("cannot build the job", &e))?;
        let codec: Codec = start
            .spill_codec
            .parse()
            .map_err(|e| setup("bad spill codec", &e))?;
        let settings = HostSettings::new(
            worker.settings.memory,
            worker.settings.threads,
            dir.path().to_path_buf(),
        )
        .with_spill_parents(worker.settings.spill_dirs.clone())
        .with_serving(worker.settings.threads)
        .with_spill_codec(codec)
        .with_reduce_split_bytes(start.reduce_split_bytes);
        let host = TaskHost::new(built.job(), &settings, status)?;
        let output = Location::parse(&start.output).map_err(|e| setup("bad output", &e))?;
        let staging = Location::parse(&start.staging).map_err(|e| setup("bad staging", &e))?;
        let committer: Box<dyn JobCommitter> = if built.job().output == OutputFormat::Discard {
            // The records go nowhere: nothing to attach to, and the coordinator writes
            // `_SUCCESS` (the task side refuses nothing the tasks ask of it).
            Box::new(DiscardingCommitter::for_tasks(output))
        } else {
            stores
                .attach_committer(&output, &staging)
                .map_err(|e| setup("cannot attach to the job's output", &e))?
        };
        let inputs = start
            .inputs
            .iter()
            .map(|f| {
                f.location()
                    .map(|location| StoredInput::new(FileStatus::file(location, f.len)))
                    .map_err(|e| setup("bad input", &e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let secret =
            Arc::new(Secret::from_hex(&start.job_secret).map_err(|e| setup("bad job secret", &e))?);
        let keep_logs = match &built {
            BuiltJob::Streaming(streaming) => streaming
                .conf
                .get_bool("sluice.keep.logs", false)
                .unwrap_or(false),
            _ => false,
        };
        let handle = worker.net.handle().clone();
        let listener = bind_shuffle(&handle, shuffle_ip, worker.settings.shuffle_ports, &secret)?;
        let shuffle_addr = listener.local_addr();
        let job = Arc::new(RunningJob {
            id: start.job_id,
            built,
            host,
            stores,
            committer,
            inputs,
            secret,
            handle: handle.clone(),
            peers: Mutex::new(Peers::default()),
            owners: Mutex::new(HashMap::new()),
            outputs: Mutex::new(HashMap::new()),
            own_views: Mutex::new(HashMap::new()),
            received: Mutex::new(HashMap::new()),
            counts: Counts::default(),
            io_start: process_io(),
            shuffle_addr,
            accept: Mutex::new(None),
            idle: Mutex::new(HashMap::new()),
            held: Mutex::new(HashMap::new()),
            push_turns: PushTurns::default(),
            threads: worker.settings.threads.max(1),
            keep_logs: AtomicBool::new(keep_logs),
            log: Arc::clone(&worker.log),
            ended: tokio::sync::watch::Sender::new(()),
            _dir: dir,
        });
        let accept = handle.spawn(accept_shuffles(
            listener,
            Arc::downgrade(&job),
            worker.settings.threads.max(1),
            Arc::clone(&worker.log),
        ));
        *lock(&job.accept) = Some(accept.abort_handle());
        let reclaimer: Weak<dyn Reclaim> = Arc::downgrade(&job) as Weak<dyn Reclaim>;
        job.host.set_reclaimer(reclaimer);
        Ok(job)
    }

    fn stop_serving(&self) {
        if let Some(accept) = lock(&self.accept).take() {
            accept.abort();
        }
    }

    fn run_map(
        &self,
        task: usize,
        attempt: usize,
        split: MapSplit,
        log: &Log,
        ran: &dyn Fn(),
    ) -> Result<(), ExecError> {
        if let Some(part) = split.parts().iter().find(|p| p.file >= self.inputs.len()) {
            return Err(ExecError::Config(format!(
                "map task {task} reads input file {} of {}",
                part.file,
                self.inputs.len()
            )));
        }
        let attempt = MapAttempt {
            task,
            attempt,
            split: &split,
            files: &self.inputs,
        };
        let job = self.built.job();
        let runs = self
            .host
            .run_map_runs(job, attempt, &self.stores, &*self.committer)?;
        if job.stages.is_empty() {
            return Ok(());
        }
        self.deliver(1, task, runs, log, ran)
    }

    fn run_reduce(
        &self,
        stage: usize,
        partition: usize,
        attempt: usize,
        log: &Log,
        ran: &dyn Fn(),
    ) -> Result<(), ExecError> {
        let index = stage
            .checked_sub(1)
            .ok_or_else(|| ExecError::Config("stages are numbered from 1".into()))?;
        let runs = self.host.seal(index)?;
        let ctx = TaskContext {
            is_map: false,
            task: partition,
            attempt,
            stage,
        };
        let job = self.built.job();
        let out = self
            .host
            .run_reduce_runs(job, &ctx, &runs, &*self.committer)?;
        if stage >= job.stages.len() {
            return Ok(());
        }
        self.deliver(stage + 1, partition, out, log, ran)
    }

    /// Keeps task `task`'s output `runs` (input of `stage`) for pulls, takes this worker's
    /// own partitions of it, and pushes the others' to their owners: at once when large,
    /// held back to go with others when small (see [`SMALL_PUSH`]; what is held goes when a
    /// batch is full, or at the latest when the coordinator asks for a flush before sealing
    /// the stage). A push that fails is logged: its owner pulls the partitions when the
    /// stage is sealed. Calls `ran` first when there is much to push: the task's thread is
    /// then free for another.
    fn deliver(
        &self,
        stage: usize,
        task: usize,
        runs: Vec<Run>,
        log: &Log,
        ran: &dyn Fn(),
    ) -> Result<(), ExecError> {
        lock(&self.outputs).insert((stage, task), runs.clone());
        let owners = lock(&self.owners).get(&stage).cloned().ok_or_else(|| {
            ExecError::Config(format!(
                "no owners of stage {stage}'s partitions were given"
            ))
        })?;
        let peers = lock(&self.peers).clone();
        let mut by_owner: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (partition, owner) in owners.iter().enumerate() {
            by_owner.entry(*owner).or_default().push(partition);
        }
        let mut to_push: Vec<(usize, Vec<HeldOutput>)> = Vec::new();
        let mut pushing = 0u64;
        for (owner, partitions) in by_owner {
            if owner == peers.me {
                let views = self.accept(stage, task, &partitions, runs.clone())?;
                let views = views.iter().map(Arc::downgrade).collect();
                lock(&self.own_views).insert((stage, task), views);
                continue;
            }
            // Even an empty output is sent (in a batch): the owner then knows it has it,
            // and need not ask for it when sealing.
            let bytes = bytes_of(&runs, &partitions);
            let output = HeldOutput {
                task,
                partitions,
                runs: runs.clone(),
            };
            if bytes < SMALL_PUSH {
                if let Some(full) = self.hold(stage, owner, output, bytes) {
                    to_push.push((owner, full));
                }
            } else {
                pushing += bytes;
                to_push.push((owner, vec![output]));
            }
        }
        // A small output is pushed before the next task would get going: saying so costs
        // the coordinator a message per task for nothing.
        if pushing >= FREE_WHILE_PUSHING {
            ran();
        }
        // Owners from the next after this worker on, round the ring: the workers of a large
        // cluster, each pushing to a few owners at a time, start on different owners.
        let me = peers.me;
        to_push.sort_by_key(|(owner, _)| (*owner <= me, *owner));
        // To each owner one push at a time, oldest first; to different owners at once, on up
        // to `PUSHES_AT_ONCE` threads (see `turns`).
        self.push_turns
            .push_all(&to_push, PUSHES_AT_ONCE, |owner, outputs| {
                self.push_to(stage, owner, outputs, log)
            });
        Ok(())
    }

    /// The number of partitions of stage `stage` (1-based).
    fn partitions_of(&self, stage: usize) -> Result<usize, ExecError> {
        stage
            .checked_sub(1)
            .and_then(|i| self.built.job().stages.get(i))
            .map(|s| s.partitions)
            .ok_or_else(|| ExecError::Config(format!("the job has no stage {stage}")))
    }

    /// Holds `output` (`bytes` of it) back for `owner`; returns the batch for `owner` if
    /// that made it full (it is then no longer held).
    fn hold(
        &self,
        stage: usize,
        owner: usize,
        output: HeldOutput,
        bytes: u64,
    ) -> Option<Vec<HeldOutput>> {
        let mut held = lock(&self.held);
        let batch = held.entry((stage, owner)).or_default();
        batch.outputs.push(output);
        batch.bytes += bytes;
        if batch.bytes >= BATCH_BYTES || batch.outputs.len() >= BATCH_OUTPUTS {
            held.remove(&(stage, owner)).map(|b| b.outputs)
        } else {
            None
        }
    }

    /// Pushes what is held back for stage `stage`'s owners, a batch per owner, as many at
    /// once as the worker has task threads.
    fn flush(&self, stage: usize, log: &Log) {
        let batches: Vec<(usize, Vec<HeldOutput>)> = {
            let mut held = lock(&self.held);
            let owners: Vec<usize> = held
                .keys()
                .filter(|(s, _)| *s == stage)
                .map(|(_, owner)| *owner)
                .collect();
            owners
                .into_iter()
                .filter_map(|owner| held.remove(&(stage, owner)).map(|b| (owner, b.outputs)))
                .collect()
        };
        for group in batches.chunks(self.threads) {
            std::thread::scope(|scope| {
                for (owner, outputs) in group {
                    scope.spawn(move || self.push_to(stage, *owner, outputs, log));
                }
            });
        }
    }

    /// Pushes `outputs` of stage `stage` to worker `owner`, counting it; a failure is logged
    /// (the owner pulls what did not arrive when it seals the stage).
    fn push_to(&self, stage: usize, owner: usize, outputs: &[HeldOutput], log: &Log) {
        // A lost owner's partitions have another owner by now, who pulls them. The peers as
        // they are now, not as they were when the push was queued: a push waits its turn
        // behind others to the same owner, and the owner may have been lost meanwhile.
        let current = lock(&self.peers).addrs.get(owner).copied().flatten();
        let Some(addr) = current else {
            return;
        };
        if outputs.len() > 1 {
            let batched = u64::try_from(outputs.len()).unwrap_or(u64::MAX);
            self.counts
                .batched_outputs
                .fetch_add(batched, Ordering::Relaxed);
        }
        let pushing = self.counts.pushing.enter();
        let pushed = self.push(addr, stage, outputs);
        drop(pushing);
        match pushed {
            Ok(bytes) => {
                self.counts.pushed_bytes.fetch_add(bytes, Ordering::Relaxed);
            }
            Err(e) => {
                self.counts.failed_pushes.fetch_add(1, Ordering::Relaxed);
                // The job is ending (interrupted, or failed elsewhere): its shuffle has closed,
                // nothing will be pulled, and the note would only mislead.
                if self.host.status().is_cancelled() {
                    return;
                }
                let tasks: Vec<String> = outputs.iter().map(|o| o.task.to_string()).collect();
                log(&format!(
                    "job {}: pushing the output of task {} to worker {owner} ({addr}) \
                     failed; it will be pulled: {e}",
                    self.id,
                    tasks.join(", ")
                ));
            }
        }
    }

    /// Pushes `outputs` to the worker at `addr` in one transfer; returns the bytes sent. A
    /// connection kept from an earlier push there is used first; if that fails (the receiver
    /// may have closed it meanwhile), the push is made again on a new one: a receiver keeps
    /// the first copy of a task's partition, so a repeat is harmless.
    fn push(
        &self,
        addr: SocketAddr,
        stage: usize,
        outputs: &[HeldOutput],
    ) -> Result<u64, ClusterError> {
        self.counts.pushes.fetch_add(1, Ordering::Relaxed);
        let kept = lock(&self.idle).get_mut(&addr).and_then(Vec::pop);
        if let Some(link) = kept {
            match self.push_on(link, addr, stage, outputs) {
                Ok(bytes) => return Ok(bytes),
                // The owner was lost while the push stalled: trying again would only wait
                // for it once more.
                Err(e) if !lock(&self.peers).addrs.contains(&Some(addr)) => return Err(e),
                Err(_) => {}
            }
        }
        let link = connect(&self.handle, addr, &self.secret, CONNECT_TIMEOUT)?;
        self.counts.push_connections.fetch_add(1, Ordering::Relaxed);
        self.push_on(link, addr, stage, outputs)
    }

    /// [`RunningJob::push`] over `link`, kept afterwards for the next push to `addr`.
    fn push_on(
        &self,
        mut link: Link,
        addr: SocketAddr,
        stage: usize,
        outputs: &[HeldOutput],
    ) -> Result<u64, ClusterError> {
        link.send(&ShuffleRequest::Push {
            job_id: self.id.clone(),
            stage,
            tasks: outputs
                .iter()
                .map(|o| PushedTask {
                    task: o.task,
                    partitions: o.partitions.clone(),
                })
                .collect(),
        })?;
        let sent: Vec<TaskOutput<'_>> = outputs.iter().map(HeldOutput::as_sent).collect();
        segments::send(&mut link, &sent)?;
        segments::acknowledged(&mut link)?;
        let mut idle = lock(&self.idle);
        let kept = idle.entry(addr).or_default();
        // As many as may push there at once: one per task thread.
        if kept.len() < self.threads {
            kept.push(link);
        }
        Ok(outputs
            .iter()
            .map(|o| bytes_of(&o.runs, &o.partitions))
            .sum())
    }

    /// Takes `runs`, a copy of task `task`'s `partitions` of stage `stage`, into this
    /// worker's input of the stage: only the partitions it has no copy of yet. Returns the
    /// views of `runs` taken (one per run, in order; none if nothing was new).
    fn accept(
        &self,
        stage: usize,
        task: usize,
        partitions: &[usize],
        runs: Vec<Run>,
    ) -> Result<Vec<Arc<Only>>, ExecError> {
        let new: BTreeSet<usize> = {
            let mut received = lock(&self.received);
            let have = received.entry((stage, task)).or_default();
            let new: BTreeSet<usize> = partitions
                .iter()
                .copied()
                .filter(|p| !have.contains(p))
                .collect();
            have.extend(new.iter().copied());
            new
        };
        if new.is_empty() {
            return Ok(Vec::new());
        }
        let new = Arc::new(new);
        let index = stage
            .checked_sub(1)
            .ok_or_else(|| ExecError::Config("stages are numbered from 1".into()))?;
        let views: Vec<Arc<Only>> = runs
            .into_iter()
            .map(|run| Only::view(run, Arc::clone(&new)))
            .collect();
        let runs = views.iter().map(|v| Arc::clone(v) as Run).collect();
        self.host.add_runs(self.built.job(), index, task, runs)?;
        Ok(views)
    }

    /// Serves one connection to the job's shuffle listener: a push to take in, or a pull
    /// to answer.
    fn serve_shuffle(&self, link: &mut Link, request: ShuffleRequest) -> Result<(), ClusterError> {
        let peer = link.peer().to_string();
        let (job_id, stage) = match &request {
            ShuffleRequest::Push { job_id, stage, .. }
            | ShuffleRequest::Pull { job_id, stage, .. } => (job_id, *stage),
        };
        if *job_id != self.id {
            let reason = format!("asks for job {job_id}, this listener is job {}'s", self.id);
            segments::refuse(link, &reason);
            return Err(ClusterError::Protocol { peer, reason });
        }
        let Some(partitions) = stage
            .checked_sub(1)
            .and_then(|i| self.built.job().stages.get(i))
            .map(|s| s.partitions)
        else {
            let reason = format!("asks for stage {stage}, which the job does not have");
            segments::refuse(link, &reason);
            return Err(ClusterError::Protocol { peer, reason });
        };
        match request {
            ShuffleRequest::Push { tasks, .. } => {
                let receiving = self.counts.receiving.enter();
                let received = segments::receive(link, &self.host, partitions);
                drop(receiving);
                let received = received?;
                let announced = tasks.iter().map(|t| t.task);
                if !received.iter().map(|r| r.task).eq(announced) {
                    let reason = "sent other tasks than it announced".to_string();
                    segments::refuse(link, &reason);
                    return Err(ClusterError::Protocol { peer, reason });
                }
                for (output, pushed) in received.into_iter().zip(&tasks) {
                    let sent = &pushed.partitions;
                    let bytes = bytes_of(&output.runs, sent);
                    let to_disk: u64 = output
                        .runs
                        .iter()
                        .filter(|r| r.kind() == RunKind::Stored)
                        .map(|r| bytes_of(std::slice::from_ref(r), sent))
                        .sum();
                    if let Err(e) = self.accept(stage, output.task, sent, output.runs) {
                        segments::refuse(link, &e.chain());
                        return Err(ClusterError::Exec(e));
                    }
                    self.counts
                        .received_bytes
                        .fetch_add(bytes, Ordering::Relaxed);
                    self.counts
                        .received_to_disk_bytes
                        .fetch_add(to_disk, Ordering::Relaxed);
                }
                segments::acknowledge(link)
            }
            ShuffleRequest::Pull {
                task,
                partitions: wanted,
                ..
            } => {
                let runs = lock(&self.outputs).get(&(stage, task)).cloned();
                match runs {
                    Some(runs) => {
                        let output = TaskOutput {
                            task,
                            runs: &runs,
                            partitions: &wanted,
                        };
                        segments::send(link, &[output])?;
                        // The puller's word that it has it all: the credit it granted
                        // and this end never needed is read before the connection is
                        // reused or closed (closing on unread bytes resets it, and the
                        // puller could lose the end of what was sent).
                        segments::acknowledged(link)
                    }
                    None => {
                        let reason = format!("holds no output of task {task} for stage {stage}");
                        segments::refuse(link, &reason);
                        Err(ClusterError::Protocol { peer, reason })
                    }
                }
            }
        }
    }

    /// Fetches what this worker lacks of its partitions of stage `stage` from the workers
    /// holding each task's output, then seals the stage. Returns the tasks whose output
    /// could not be had (the stage is then not sealed), and why the first could not.
    fn seal(
        &self,
        stage: usize,
        holders: &[Option<usize>],
        log: &Log,
    ) -> Result<Sealing, ClusterError> {
        let index = stage
            .checked_sub(1)
            .ok_or_else(|| ClusterError::Setup("stages are numbered from 1".into()))?;
        let owners = lock(&self.owners).get(&stage).cloned().unwrap_or_default();
        let peers = lock(&self.peers).clone();
        let owned: Vec<usize> = (0..owners.len())
            .filter(|p| owners[*p] == peers.me)
            .collect();
        let mut missing = Vec::new();
        let mut why = None;
        let mut out_of_room = false;
        for (task, holder) in holders.iter().enumerate() {
            let gaps: Vec<usize> = {
                let received = lock(&self.received);
                let have = received.get(&(stage, task));
                owned
                    .iter()
                    .copied()
                    .filter(|p| !have.is_some_and(|h| h.contains(p)))
                    .collect()
            };
            if gaps.is_empty() {
                continue;
            }
            let own = lock(&self.outputs).get(&(stage, task)).cloned();
            let pulled = match (holder, own) {
                (Some(h), Some(runs)) if *h == peers.me => Ok(runs),
                (Some(h), _) => match peers.addrs.get(*h).copied().flatten() {
                    Some(addr) if *h != peers.me => self.pull(addr, stage, task, &gaps),
                    _ => Err(ClusterError::Setup(format!("worker {h} is gone"))),
                },
                (None, _) => Err(ClusterError::Setup("its worker was lost".into())),
            };
            match pulled {
                Ok(runs) => {
                    self.counts
                        .pulled_bytes
                        .fetch_add(bytes_of(&runs, &gaps), Ordering::Relaxed);
                    self.accept(stage, task, &gaps, runs)?;
                }
                Err(e) => {
                    let reason = format!(
                        "cannot have task {task}'s output for stage {stage}: {}",
                        error_chain(&e)
                    );
                    log(&format!("job {}: {reason}", self.id));
                    why.get_or_insert(reason);
                    missing.push(task);
                    out_of_room |= is_out_of_room(&e);
                }
            }
        }
        if missing.is_empty() {
            self.host.seal(index)?;
        }
        Ok(Sealing {
            missing,
            why,
            out_of_room,
        })
    }

    /// Pulls `partitions` of task `task`'s output for stage `stage` from `addr`.
    fn pull(
        &self,
        addr: SocketAddr,
        stage: usize,
        task: usize,
        partitions: &[usize],
    ) -> Result<Vec<Run>, ClusterError> {
        let count = stage
            .checked_sub(1)
            .and_then(|i| self.built.job().stages.get(i))
            .map_or(0, |s| s.partitions);
        let mut link = connect(&self.handle, addr, &self.secret, CONNECT_TIMEOUT)?;
        link.send(&ShuffleRequest::Pull {
            job_id: self.id.clone(),
            stage,
            task,
            partitions: partitions.to_vec(),
        })?;
        let received = segments::receive(&mut link, &self.host, count)?;
        segments::acknowledge(&mut link)?;
        match <[_; 1]>::try_from(received) {
            Ok([output]) if output.task == task => Ok(output.runs),
            _ => Err(ClusterError::Protocol {
                peer: addr.to_string(),
                reason: format!("answered a pull of task {task}'s output with another"),
            }),
        }
    }

    /// Lets go of stage `stage`'s input, and of the outputs kept for it.
    fn release(&self, stage: usize) {
        lock(&self.outputs).retain(|(s, _), _| *s != stage);
        lock(&self.own_views).retain(|(s, _), _| *s != stage);
        lock(&self.received).retain(|(s, _), _| *s != stage);
        lock(&self.held).retain(|(s, _), _| *s != stage);
        if let Some(index) = stage.checked_sub(1) {
            self.host.release(index);
        }
    }

    /// What the shuffle did so far, with the process's disk traffic since the job started.
    fn stats(&self) -> ShuffleStats {
        let (read, write) = process_io();
        let c = &self.counts;
        ShuffleStats {
            pushed_bytes: c.pushed_bytes.load(Ordering::Relaxed),
            failed_pushes: c.failed_pushes.load(Ordering::Relaxed),
            pushes: c.pushes.load(Ordering::Relaxed),
            batched_outputs: c.batched_outputs.load(Ordering::Relaxed),
            push_connections: c.push_connections.load(Ordering::Relaxed),
            received_bytes: c.received_bytes.load(Ordering::Relaxed),
            received_to_disk_bytes: c.received_to_disk_bytes.load(Ordering::Relaxed),
            kept_to_disk_bytes: c.kept_to_disk_bytes.load(Ordering::Relaxed),
            pulled_bytes: c.pulled_bytes.load(Ordering::Relaxed),
            pushing_micros: micros(c.pushing.total()),
            receiving_micros: micros(c.receiving.total()),
            disk_read_bytes: read.saturating_sub(self.io_start.0),
            disk_write_bytes: write.saturating_sub(self.io_start.1),
        }
    }
}

/// What a worker's seal of a stage's input found.
struct Sealing {
    /// Tasks whose output it lacks.
    missing: Vec<usize>,
    /// Why the first of them could not be had.
    why: Option<String>,
    /// Whether some could not be had for want of room on this worker's own disk.
    out_of_room: bool,
}

/// Whether `error` comes from a full disk (or quota) here: no other worker's fault, and no
/// use trying again on this one.
fn is_out_of_room(error: &ClusterError) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            ) {
                return true;
            }
        }
        cause = e.source();
    }
    false
}

/// `duration` in whole microseconds (saturating: a worker would have to run for 500,000
/// years to reach the limit).
fn micros(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// The copies of task outputs a worker keeps for pulls are the first runs to leave memory when
/// it is short: once pushed, they are read only if a push or a worker failed, while the runs
/// of the partitions the worker reduces are read by its reduce tasks, from memory if they fit.
///
/// A task's output that leaves memory is written to disk as it is; the worker's own
/// partitions of it, which its input of the stage shows through a view of the whole output,
/// are copied back into memory in a run of their own once the whole output's memory is free.
impl Reclaim for RunningJob {
    fn reclaim(&self, bytes: usize) -> usize {
        let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
        let picked = self.reclaimable(bytes);
        let mut freed = 0u64;
        for (key, i, run, view) in picked {
            let bytes = run.bytes();
            // A copy that cannot be written stays in memory; the caller goes to disk instead.
            match self.move_to_disk(key, i, run, view.as_deref()) {
                Ok(true) => freed = freed.saturating_add(bytes),
                Ok(false) => {}
                Err(_) => break,
            }
        }
        usize::try_from(freed).unwrap_or(usize::MAX)
    }
}

/// A kept output's run to move out of memory: its place in `outputs`, the run, and the view of
/// it that this worker's input of the stage reads its own partitions through (if any).
type Reclaimable = ((usize, usize), usize, Run, Option<Arc<Only>>);

impl RunningJob {
    /// Kept runs in memory that nothing but `outputs` and this worker's own view hold (not
    /// being pushed or pulled), oldest first, until they make `bytes`. A thread holding the
    /// map is not waited for: it may be the caller.
    fn reclaimable(&self, bytes: u64) -> Vec<Reclaimable> {
        let Ok(outputs) = self.outputs.try_lock() else {
            return Vec::new();
        };
        let Ok(views) = self.own_views.try_lock() else {
            return Vec::new();
        };
        let mut keys: Vec<&(usize, usize)> = outputs.keys().collect();
        keys.sort_unstable();
        let mut picked = Vec::new();
        let mut total = 0u64;
        for key in keys {
            for (i, run) in outputs[key].iter().enumerate() {
                if total >= bytes {
                    return picked;
                }
                if run.kind() != RunKind::Memory {
                    continue;
                }
                let view = views
                    .get(key)
                    .and_then(|v| v.get(i))
                    .and_then(Weak::upgrade)
                    .filter(|v| v.shows(run));
                let holders = 1 + usize::from(view.is_some());
                if Arc::strong_count(run) == holders {
                    total = total.saturating_add(run.bytes());
                    picked.push((*key, i, Arc::clone(run), view));
                }
            }
        }
        picked
    }

    /// Writes kept run `run` (the `i`th of output `key`) to disk and keeps that copy instead;
    /// points `view` (this worker's own partitions of it) at a copy of its own. Returns
    /// whether the run was replaced (it was not if it changed meanwhile).
    fn move_to_disk(
        &self,
        key: (usize, usize),
        i: usize,
        run: Run,
        view: Option<&Only>,
    ) -> Result<bool, ExecError> {
        let count = self.partitions_of(key.0)?;
        let stored = self.host.store_run(&run, count)?;
        {
            let mut outputs = lock(&self.outputs);
            let Some(slot) = outputs.get_mut(&key).and_then(|runs| runs.get_mut(i)) else {
                return Ok(false);
            };
            if !Arc::ptr_eq(slot, &run) {
                return Ok(false);
            }
            *slot = Arc::clone(&stored);
        }
        self.counts
            .kept_to_disk_bytes
            .fetch_add(run.bytes(), Ordering::Relaxed);
        if let Some(view) = view {
            // The view reads the disk copy while the memory is let go, then a copy of just
            // its partitions: in memory, as the share for held runs now has room for it.
            view.replace(Arc::clone(&stored));
            drop(run);
            let own: Vec<usize> = view.partitions().iter().copied().collect();
            if let Ok(copy) = self.host.copy_partitions(&stored, count, &own) {
                if copy.kind() == RunKind::Memory {
                    view.replace(copy);
                }
            }
        }
        Ok(true)
    }
}

/// Encoded bytes of `partitions` of `runs`, as far as the runs know.
fn bytes_of(runs: &[Run], partitions: &[usize]) -> u64 {
    runs.iter()
        .flat_map(|r| {
            partitions
                .iter()
                .map(move |p| r.partition_bytes(*p).unwrap_or(0))
        })
        .sum()
}

/// This process's peak resident set size (`VmHWM` of `/proc/self/status`), if known.
fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Starts this process's peak resident set size afresh from its current size, so that the
/// peak read when a job ends is the job's (`/proc/self/clear_refs`, Linux 4.0 on). Where
/// that is refused the peak stays the process's since it started.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The bytes this process read from and wrote to storage (`/proc/self/io`), or zeros where
/// that is not available.
fn process_io() -> (u64, u64) {
    let Ok(text) = std::fs::read_to_string("/proc/self/io") else {
        return (0, 0);
    };
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("read_bytes:"), field("write_bytes:"))
}

impl Drop for RunningJob {
    fn drop(&mut self) {
        self.stop_serving();
        if let BuiltJob::Streaming(streaming) = &self.built {
            if let Some(kept) = streaming.cleanup(self.keep_logs.load(Ordering::Relaxed)) {
                (self.log)(&format!(
                    "job {}: the programs' logs are kept in {}",
                    self.id,
                    kept.display()
                ));
            }
        }
        // The job's directory goes with its field, `dir`.
    }
}

/// Accepts the job's shuffle connections and serves each on a blocking thread, `slots` at
/// once.
/// A listener for a job's shuffle at `ip`: on a port the system picks, or on the first free
/// one of `ports`.
fn bind_shuffle(
    handle: &Handle,
    ip: std::net::IpAddr,
    ports: Option<PortRange>,
    secret: &Secret,
) -> Result<Listener, ClusterError> {
    let Some(range) = ports else {
        let any = SocketAddr::new(ip, 0);
        return Ok(handle.block_on(Listener::bind(any, secret.clone()))?);
    };
    for port in range.ports() {
        match handle.block_on(Listener::bind(SocketAddr::new(ip, port), secret.clone())) {
            Ok(listener) => return Ok(listener),
            // In use (another job, another program): the next one.
            Err(NetError::Bind { cause, .. }) if cause.kind() == std::io::ErrorKind::AddrInUse => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(ClusterError::Setup(format!(
        "no port of {range} (--shuffle-ports) is free on {ip} for the job's shuffle"
    )))
}

async fn accept_shuffles(listener: Listener, job: Weak<RunningJob>, slots: usize, log: Arc<Log>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(slots));
    let mut refused = 0;
    loop {
        let accepted = tokio::time::timeout(Duration::from_secs(1), listener.accept()).await;
        refused = log_refusals(&listener, refused, &*log, "shuffle: ");
        let conn = match accepted {
            Err(_) => continue,
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                log(&format!("shuffle: the listener failed: {e}"));
                return;
            }
        };
        if job.strong_count() == 0 {
            return;
        }
        let (handle, job, slots, log) = (
            Handle::current(),
            Weak::clone(&job),
            Arc::clone(&slots),
            Arc::clone(&log),
        );
        tokio::task::spawn_blocking(move || serve_connection(&handle, conn, &job, &slots, &*log));
    }
}

/// Serves the requests that come over one connection to a job's shuffle, one after another
/// (a pushing worker keeps its connection for its next push), each while holding one of the
/// listener's `slots`; until the peer closes it, stays idle for [`REQUEST_TIMEOUT`], or the
/// job ends (the job is not kept alive by an idle connection).
fn serve_connection(
    handle: &Handle,
    conn: sluice_net::Connection,
    job: &Weak<RunningJob>,
    slots: &Arc<tokio::sync::Semaphore>,
    log: &Log,
) {
    let mut link = Link::new(handle.clone(), conn);
    let peer = link.peer();
    let Some(mut ended) = job.upgrade().map(|job| job.ended.subscribe()) else {
        return;
    };
    let mut first = true;
    loop {
        let job_ended = async {
            // Only closed, when the job is dropped: nothing is ever sent.
            let _ = ended.changed().await;
        };
        let request = match link.recv_within_unless::<ShuffleRequest>(REQUEST_TIMEOUT, job_ended) {
            Ok(Some(request)) => request,
            // Closed, or idle: a kept connection's end is no failure.
            Ok(None) => return,
            Err(e) => {
                if first {
                    if let Some(job) = job.upgrade() {
                        log(&format!("job {}: shuffle with {peer} failed: {e}", job.id));
                    }
                }
                return;
            }
        };
        first = false;
        let Ok(_permit) = handle.block_on(Arc::clone(slots).acquire_owned()) else {
            return;
        };
        let Some(job) = job.upgrade() else { return };
        if let Err(e) = job.serve_shuffle(&mut link, request) {
            log(&format!("job {}: shuffle with {peer} failed: {e}", job.id));
            return;
        }
    }
}

/// Logs the peers `listener` refused since it had refused `before`; returns how many it has
/// refused now.
fn log_refusals(listener: &Listener, before: u64, log: &Log, prefix: &str) -> u64 {
    let now = listener.rejected();
    if now > before {
        let reasons = listener.rejections();
        let new = usize::try_from(now - before).unwrap_or(usize::MAX);
        for reason in reasons.iter().skip(reasons.len().saturating_sub(new)) {
            log(&format!("{prefix}refused a peer: {reason}"));
        }
    }
    now
}

/// This machine's name, as the coordinator shows it.
pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn port_ranges_are_first_to_last_and_never_port_0() {
        let range: PortRange = "7100-7102".parse().unwrap();
        assert_eq!(range.ports().collect::<Vec<_>>(), [7100, 7101, 7102]);
        assert_eq!(range.to_string(), "7100-7102");
        let one: PortRange = "7100".parse().unwrap();
        assert_eq!(one.ports().count(), 1);
        for bad in ["0-10", "20-10", "x-10", "7100-", "70000", ""] {
            assert!(bad.parse::<PortRange>().is_err(), "{bad}");
        }
    }

    /// A peer that reconnects in a loop while the worker is busy: at most
    /// [`MOST_TURNED_AWAY_AT_ONCE`] connections wait for their hello (a thread each); the ones
    /// beyond are closed at once and logged, and once the waiting ones are gone, a coordinator
    /// is told again that the worker is busy.
    #[test]
    fn a_busy_worker_waits_on_a_bounded_number_of_coordinators_to_turn_away() {
        let scratch = tempfile::tempdir().unwrap();
        let secret = Secret::generate().unwrap();
        let stop = WorkerStop::new();
        let settings = WorkerSettings::new(scratch.path().join("w"), 64 << 20, 1, secret.clone())
            .with_stop(stop.clone());
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let log: Arc<Log> = {
            let lines = Arc::clone(&lines);
            Arc::new(move |line: &str| lock(&lines).push(line.to_string()))
        };
        let stores: Arc<StoresFactory> = Arc::new(|_: &[(String, String)], _: &str| {
            Err("this test reads no storage".to_string())
        });
        let listen: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let worker = Worker::bind(listen, settings, stores, log).unwrap();
        let addr = worker.local_addr().unwrap();
        let client = Net::new().unwrap();
        let connect = || {
            crate::link::connect(client.handle(), addr, &secret, Duration::from_secs(5)).unwrap()
        };
        let count = |what: &str| lock(&lines).iter().filter(|l| l.contains(what)).count();
        let wait_for = |what: &str, n: usize| {
            let deadline = Instant::now() + Duration::from_secs(10);
            while count(what) < n && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            assert_eq!(count(what), n, "{what}: {:?}", lock(&lines));
        };
        /// Stops the worker however the test ends, so that a failed assertion fails the test
        /// rather than leaving it waiting for the serving thread.
        struct StopOnDrop(WorkerStop);
        impl Drop for StopOnDrop {
            fn drop(&mut self) {
                self.0.stop();
            }
        }
        std::thread::scope(|scope| {
            let served = scope.spawn(|| worker.serve());
            let _stop_anyway = StopOnDrop(stop.clone());
            // The coordinator the worker works for.
            let mut first = connect();
            first
                .send(&ToWorker::Hello {
                    version: PROTOCOL_VERSION,
                })
                .unwrap();
            let hello = first.recv_within::<ToCoordinator>(Duration::from_secs(5));
            assert!(
                matches!(hello, Ok(Some(ToCoordinator::Hello { .. }))),
                "{hello:?}"
            );

            // Connections that never say hello: each is waited on, up to the bound.
            let silent: Vec<Link> = (0..MOST_TURNED_AWAY_AT_ONCE).map(|_| connect()).collect();
            wait_for("turned away: busy", MOST_TURNED_AWAY_AT_ONCE);
            for _ in 0..3 {
                let mut extra = connect();
                let started = Instant::now();
                let answer = extra.recv_within::<ToCoordinator>(TURN_AWAY_TIMEOUT);
                assert!(matches!(answer, Ok(None)), "{answer:?}");
                assert!(
                    started.elapsed() < TURN_AWAY_TIMEOUT / 2,
                    "the connection beyond the bound was held {:?}",
                    started.elapsed()
                );
            }
            wait_for("turned away at once", 3);

            // The silent ones leave; a coordinator that says hello is told why it cannot have
            // this worker (the threads of the silent ones may take a moment to end).
            drop(silent);
            let deadline = Instant::now() + Duration::from_secs(10);
            let busy = loop {
                let mut next = connect();
                next.send(&ToWorker::Hello {
                    version: PROTOCOL_VERSION,
                })
                .unwrap();
                match next.recv_within::<ToCoordinator>(TURN_AWAY_TIMEOUT) {
                    Ok(Some(ToCoordinator::Busy { .. })) => break true,
                    _ if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                    _ => break false,
                }
            };
            assert!(busy, "never told busy: {:?}", lock(&lines));

            stop.stop();
            drop(first);
            assert!(served.join().unwrap().is_ok());
        });
    }

    #[test]
    fn a_shuffle_takes_the_first_free_port_of_its_range_and_says_when_none_is() {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let handle = runtime.handle().clone();
        let ip: std::net::IpAddr = [127, 0, 0, 1].into();
        let secret = Secret::generate().unwrap();
        // Two ports the system picks, held by others: a range of one of them is full.
        let taken = std::net::TcpListener::bind((ip, 0)).unwrap();
        let port = taken.local_addr().unwrap().port();
        let range = PortRange::new(port, port).unwrap();
        let Err(error) = bind_shuffle(&handle, ip, Some(range), &secret) else {
            panic!("bound the only port of the range, which another program holds");
        };
        assert!(error.to_string().contains("--shuffle-ports"), "{error}");
        drop(taken);
        let listener = bind_shuffle(&handle, ip, Some(range), &secret).unwrap();
        assert_eq!(listener.local_addr().port(), port);
    }
}
