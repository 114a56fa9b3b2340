//! A worker: runs the tasks a coordinator gives it, and serves its tasks' runs to the other
//! workers of the job.
//!
//! A worker listens on the address it is given (never all interfaces unless told so) and
//! admits only a coordinator that proves it knows the cluster's secret. It runs one job at a
//! time: for the job it builds the job from its spec, opens its spill directory under the
//! scratch directory, attaches to the output's committer, and opens a shuffle listener of the
//! job's own (admitting only the job's secret). When the job ends — or the coordinator's
//! connection drops — its tasks are cancelled and everything it left is removed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use sluice_api::{ExecError, JobStatus, TaskContext};
use sluice_exec::{HostSettings, MapAttempt, TaskHost};
use sluice_format::Codec;
use sluice_io::{FileStatus, JobCommitter, Location, Split, StoredInput, Stores};
use sluice_net::{Listener, Secret};
use sluice_shuffle::Run;
use sluice_spec::{BuiltJob, JobSpec};
use tokio::runtime::Handle;
use tokio::task::AbortHandle;

use crate::link::{Link, LinkWriter, Net};
use crate::protocol::{JobStart, TaskRef, ToCoordinator, ToWorker, PROTOCOL_VERSION};
use crate::shuffle::{serve_fetch, RemoteRun};
use crate::ClusterError;

/// How a worker runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct WorkerSettings {
    /// The address to listen on for coordinators.
    pub listen: SocketAddr,
    /// Where jobs' spill files go (a local disk); each job gets a directory of its own.
    pub scratch: PathBuf,
    /// Memory budget of each job's buffers on this worker, in bytes.
    pub memory: usize,
    /// Tasks run at once.
    pub threads: usize,
    /// The secret coordinators must know.
    pub secret: Secret,
}

impl WorkerSettings {
    /// A worker listening on `listen`, spilling under `scratch`, with `threads` tasks at once
    /// within `memory` bytes, admitting coordinators that know `secret`.
    pub fn new(
        listen: SocketAddr,
        scratch: PathBuf,
        memory: usize,
        threads: usize,
        secret: Secret,
    ) -> WorkerSettings {
        WorkerSettings {
            listen,
            scratch,
            memory,
            threads,
            secret,
        }
    }
}

/// Makes a job's stores from its settings (`-D` keys) and its name: the front end's, which
/// knows which remote stores are built in.
pub type StoresFactory = dyn Fn(&[(String, String)], &str) -> Result<Stores, String> + Send + Sync;

/// Where a worker reports what happens (a line each): a coordinator connected, a job started
/// or ended, a task failed, a peer was refused.
pub type Log = dyn Fn(&str) + Send + Sync;

/// A worker, listening.
pub struct Worker {
    settings: WorkerSettings,
    net: Net,
    listener: Listener,
    stores: Arc<StoresFactory>,
    log: Arc<Log>,
}

impl Worker {
    /// Binds the worker's address and creates its scratch directory.
    ///
    /// # Errors
    /// The address cannot be bound; the scratch directory cannot be created.
    pub fn bind(
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
        let net = Net::new()?;
        let listener = net
            .handle()
            .block_on(Listener::bind(settings.listen, settings.secret.clone()))?;
        Ok(Worker {
            settings,
            net,
            listener,
            stores,
            log,
        })
    }

    /// The address coordinators connect to.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener.local_addr()
    }

    /// Serves coordinators, one at a time, until the process ends.
    ///
    /// # Errors
    /// Only if the listener itself fails; a coordinator's failure ends its session, not the
    /// worker.
    pub fn serve(&self) -> Result<(), ClusterError> {
        loop {
            let conn = match self.net.handle().block_on(self.listener.accept()) {
                Ok(conn) => conn,
                Err(e) => {
                    (self.log)(&format!("refused a connection: {e}"));
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                }
            };
            let peer = conn.peer();
            (self.log)(&format!("coordinator {peer} connected"));
            let link = Link::new(self.net.handle().clone(), conn);
            match self.session(link) {
                Ok(()) => (self.log)(&format!("coordinator {peer} left")),
                Err(e) => (self.log)(&format!("coordinator {peer}: {e}")),
            }
        }
    }

    /// One coordinator's session: its jobs, one after another, until it disconnects.
    fn session(&self, link: Link) -> Result<(), ClusterError> {
        let peer = link.peer().to_string();
        let (mut reader, writer) = link.split();
        let writer = Arc::new(Mutex::new(writer));
        match reader.recv::<ToWorker>()? {
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
        })?;
        let mut session = Session {
            worker: self,
            writer,
            job: None,
            tasks: Vec::new(),
        };
        let result = session.run(&mut reader);
        session.end_job();
        result
    }
}

/// A coordinator's session on this worker.
struct Session<'a> {
    worker: &'a Worker,
    writer: Arc<Mutex<LinkWriter>>,
    job: Option<Arc<RunningJob>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Session<'_> {
    fn run(&mut self, reader: &mut crate::link::LinkReader) -> Result<(), ClusterError> {
        while let Some(message) = reader.recv::<ToWorker>()? {
            self.tasks.retain(|t| !t.is_finished());
            match message {
                ToWorker::Start(start) => {
                    if self.job.is_some() {
                        self.send(&ToCoordinator::JobFailed {
                            error: "a job is running on this worker already".into(),
                        })?;
                        continue;
                    }
                    let id = start.job_id.clone();
                    match RunningJob::start(self.worker, *start) {
                        Ok(job) => {
                            (self.worker.log)(&format!("job {id} started"));
                            let shuffle = job.shuffle_addr.to_string();
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
                        .map(|p| {
                            p.parse::<SocketAddr>().map_err(|e| ClusterError::Protocol {
                                peer: "coordinator".into(),
                                reason: format!("bad peer address {p:?}: {e}"),
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    if me >= addrs.len() {
                        return Err(ClusterError::Protocol {
                            peer: "coordinator".into(),
                            reason: format!("worker {me} of {}", addrs.len()),
                        });
                    }
                    *lock(&job.peers) = Some((addrs, me));
                }
                ToWorker::Map {
                    task,
                    attempt,
                    file,
                    start,
                    len,
                } => {
                    let job = self.job()?;
                    let split = Split { file, start, len };
                    let task_ref = TaskRef {
                        stage: 0,
                        task,
                        attempt,
                    };
                    self.spawn(job, task_ref, move |job| job.run_map(task, attempt, split));
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
                    self.spawn(job, task_ref, move |job| {
                        job.run_reduce(stage, partition, attempt)
                    });
                }
                ToWorker::Seal { stage } => {
                    let job = self.job()?;
                    match stage.checked_sub(1).map(|s| job.host.seal(s)) {
                        Some(Ok(_)) => self.send(&ToCoordinator::Sealed { stage })?,
                        Some(Err(e)) => {
                            self.send(&ToCoordinator::JobFailed { error: e.chain() })?
                        }
                        None => self.send(&ToCoordinator::JobFailed {
                            error: "stages are numbered from 1".into(),
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
                    if let (Some(job), Some(index)) = (&self.job, stage.checked_sub(1)) {
                        job.host.release(index);
                    }
                }
                ToWorker::End => {
                    self.end_job();
                    self.send(&ToCoordinator::Ended)?;
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
        run: impl FnOnce(&RunningJob) -> Result<(), ExecError> + Send + 'static,
    ) {
        let writer = Arc::clone(&self.writer);
        let log = Arc::clone(&self.worker.log);
        let handle = std::thread::spawn(move || {
            let ctx = TaskContext {
                is_map: task.stage == 0,
                task: task.task,
                attempt: task.attempt,
                stage: task.stage.max(1),
            };
            let result = run(&job);
            let status = job.host.status();
            match &result {
                Ok(()) => status.commit_attempt(&ctx),
                Err(_) => status.discard_attempt(&ctx),
            }
            // The totals are read under the writer's lock, so that the coordinator never
            // sees an older total after a newer one.
            let mut writer = lock(&writer);
            let message = match result {
                Ok(()) => ToCoordinator::Done {
                    task,
                    counters: status.counters.snapshot(),
                    user_counters: status.user_counters(),
                },
                Err(e) => {
                    if !matches!(e, ExecError::Cancelled) {
                        log(&format!(
                            "job {}: task {task:?} failed: {}",
                            job.id,
                            e.chain()
                        ));
                    }
                    ToCoordinator::Failed {
                        task,
                        retryable: e.is_retryable(),
                        error: e.chain(),
                    }
                }
            };
            if let Err(e) = writer.send(&message) {
                log(&format!("cannot report task {task:?}: {e}"));
            }
        });
        self.tasks.push(handle);
    }

    /// Cancels the running job's tasks, waits for them, and removes what the job left.
    fn end_job(&mut self) {
        if let Some(job) = &self.job {
            job.host.status().cancel();
        }
        for task in self.tasks.drain(..) {
            let _ = task.join();
        }
        if let Some(job) = self.job.take() {
            let id = job.id.clone();
            job.stop_serving();
            // The last reference goes when the serving threads finish their streams.
            drop(job);
            (self.worker.log)(&format!("job {id} ended"));
        }
    }
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
    /// Every worker's shuffle address, and this worker's number.
    peers: Mutex<Option<(Vec<SocketAddr>, usize)>>,
    shuffle_addr: SocketAddr,
    accept: Mutex<Option<AbortHandle>>,
    dir: PathBuf,
}

impl RunningJob {
    fn start(worker: &Worker, start: JobStart) -> Result<Arc<RunningJob>, ClusterError> {
        let setup = |what: &str, e: &dyn std::fmt::Display| {
            ClusterError::Setup(format!("job {}: {what}: {e}", start.job_id))
        };
        if !is_plain_id(&start.job_id) {
            return Err(setup("a job id that is not a plain name", &start.job_id));
        }
        let stores = (worker.stores)(&start.defines, &start.job_id)
            .map_err(|e| setup("cannot connect to the job's stores", &e))?;
        // The job's relative paths are the submitter's: its tasks run where it was submitted
        // (one job at a time runs on a worker, so the process's directory is the job's).
        let working_dir = match &start.spec {
            JobSpec::Streaming(spec) => spec.working_dir.clone(),
            _ => PathBuf::from(&start.working_dir),
        };
        std::env::set_current_dir(&working_dir).map_err(|e| {
            setup(
                &format!(
                    "cannot enter {}, the directory the job was submitted from (give \
                     absolute paths, on a file system every worker mounts at the same place)",
                    working_dir.display()
                ),
                &e,
            )
        })?;
        let status = Arc::new(JobStatus::default());
        let built = start
            .spec
            .build_in(&stores, Arc::clone(&status))
            .map_err(|e| setup("cannot build the job", &e))?;
        let codec: Codec = start
            .spill_codec
            .parse()
            .map_err(|e| setup("bad spill codec", &e))?;
        let dir = worker.settings.scratch.join(&start.job_id);
        std::fs::create_dir_all(&dir)
            .map_err(|e| setup(&format!("cannot create {}", dir.display()), &e))?;
        let settings =
            HostSettings::new(worker.settings.memory, worker.settings.threads, dir.clone())
                .with_serving(worker.settings.threads)
                .with_spill_codec(codec);
        let cleanup = DirGuard(Some(dir.clone()));
        let host = TaskHost::new(built.job(), &settings, status)?;
        let output = Location::parse(&start.output).map_err(|e| setup("bad output", &e))?;
        let staging = Location::parse(&start.staging).map_err(|e| setup("bad staging", &e))?;
        let committer = stores
            .attach_committer(&output, &staging)
            .map_err(|e| setup("cannot attach to the job's output", &e))?;
        let inputs = start
            .inputs
            .iter()
            .map(|f| {
                Location::parse(&f.location)
                    .map(|location| StoredInput::new(FileStatus::file(location, f.len)))
                    .map_err(|e| setup("bad input", &e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let secret =
            Arc::new(Secret::from_hex(&start.job_secret).map_err(|e| setup("bad job secret", &e))?);
        let handle = worker.net.handle().clone();
        let shuffle_bind = SocketAddr::new(worker.local_addr().ip(), 0);
        let listener = handle.block_on(Listener::bind(shuffle_bind, (*secret).clone()))?;
        let shuffle_addr = listener.local_addr();
        let mut cleanup = cleanup;
        let job = Arc::new(RunningJob {
            id: start.job_id,
            built,
            host,
            stores,
            committer,
            inputs,
            secret,
            handle: handle.clone(),
            peers: Mutex::new(None),
            shuffle_addr,
            accept: Mutex::new(None),
            dir: cleanup.0.take().unwrap_or_default(),
        });
        let accept = handle.spawn(accept_fetches(
            listener,
            Arc::downgrade(&job),
            worker.settings.threads.max(1),
            Arc::clone(&worker.log),
        ));
        *lock(&job.accept) = Some(accept.abort_handle());
        Ok(job)
    }

    fn stop_serving(&self) {
        if let Some(accept) = lock(&self.accept).take() {
            accept.abort();
        }
    }

    fn run_map(&self, task: usize, attempt: usize, split: Split) -> Result<(), ExecError> {
        let file = self.inputs.get(split.file).ok_or_else(|| {
            ExecError::Config(format!(
                "map task {task} reads input file {} of {}",
                split.file,
                self.inputs.len()
            ))
        })?;
        let attempt = MapAttempt {
            task,
            attempt,
            split,
            file,
        };
        self.host
            .run_map(self.built.job(), attempt, &self.stores, &*self.committer)
    }

    fn run_reduce(&self, stage: usize, partition: usize, attempt: usize) -> Result<(), ExecError> {
        let (peers, me) = lock(&self.peers)
            .clone()
            .ok_or_else(|| ExecError::Config("a reduce task before the job's peers".into()))?;
        let index = stage
            .checked_sub(1)
            .ok_or_else(|| ExecError::Config("stages are numbered from 1".into()))?;
        // Every worker's runs in worker order, wherever the task runs: equal keys meet in the
        // same order on any worker.
        let mut runs: Vec<Run> = Vec::new();
        for (i, addr) in peers.iter().enumerate() {
            if i == me {
                runs.extend(self.host.seal(index)?.iter().cloned());
            } else {
                runs.push(Arc::new(RemoteRun {
                    worker: format!("{i} ({addr})"),
                    addr: *addr,
                    secret: Arc::clone(&self.secret),
                    handle: self.handle.clone(),
                    job_id: self.id.clone(),
                    stage,
                }));
            }
        }
        let ctx = TaskContext {
            is_map: false,
            task: partition,
            attempt,
            stage,
        };
        self.host
            .run_reduce(self.built.job(), &ctx, &runs, &*self.committer)
    }
}

impl Drop for RunningJob {
    fn drop(&mut self) {
        self.stop_serving();
        if let BuiltJob::Streaming(streaming) = &self.built {
            streaming.cleanup(false);
        }
        // The spill directory inside is the host's, removed with it; this is its parent.
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes a directory unless disarmed (`.0.take()`).
struct DirGuard(Option<PathBuf>);

impl Drop for DirGuard {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Accepts the job's fetches and serves each on a blocking thread, `slots` at once.
async fn accept_fetches(listener: Listener, job: Weak<RunningJob>, slots: usize, log: Arc<Log>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(slots));
    loop {
        let conn = match listener.accept().await {
            Ok(conn) => conn,
            Err(e) => {
                log(&format!("shuffle: refused a connection: {e}"));
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Some(job) = job.upgrade() else { return };
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let handle = Handle::current();
        let log = Arc::clone(&log);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let link = Link::new(handle, conn);
            let peer = link.peer();
            if let Err(e) = serve_fetch(link, &job.id, job.built.job(), &job.host) {
                log(&format!("job {}: serving {peer} failed: {e}", job.id));
            }
        });
    }
}

/// Whether `id` can name a directory: letters, digits, `_`, `-` and `.`, not only dots.
fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id.chars().any(|c| c != '.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
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
