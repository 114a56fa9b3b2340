//! Workers in YARN containers.
//!
//! No maintained Rust client speaks YARN's protocols, so a small Java program does the YARN
//! part (`org.sluice.yarn.Submit`, with its application master `AppMaster`, in
//! `sluice-yarn.jar`): it stages the sluice binary (once per content, as a public resource the
//! node managers cache) and the cluster secret (private to the application), submits the
//! application, and reports its states as JSON lines on its standard output. The master only
//! brokers containers: each runs `sluice worker --connect COORDINATOR`, which connects back to
//! this process, proves it knows the secret, and works for the job. Everything else — the
//! plan, the tasks, the shuffle, the commit — is the same as with started workers.
//!
//! ```text
//!  sluice (coordinator) ──spawn──► java Submit ──► ResourceManager ──► AppMaster
//!      ▲   ▲ JSON lines on stdout; stdin closed = kill                     │ containers
//!      │   └───────────────────────────────────────────────────────────────┘
//!      └──── sluice worker --connect (authenticated) ◄── NodeManagers
//! ```

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sluice_api::{JobStatus, Phase};
use sluice_net::{Listener, Secret};

use crate::coordinator::{greet, run_linked, ClusterJob, ClusterReport};
use crate::link::{Link, Net};
use crate::ClusterError;

/// How to reach YARN and what to ask it for.
#[derive(Debug, Clone)]
pub struct YarnSettings {
    /// The `java` to run the submitter with.
    pub java: PathBuf,
    /// Its class path: Hadoop's client classes and configuration (`hadoop classpath`), and
    /// `sluice-yarn.jar`.
    pub classpath: String,
    /// The sluice binary the containers run.
    pub binary: PathBuf,
    /// The cluster secret's file, staged privately for the containers.
    pub secret_file: PathBuf,
    /// Workers (containers) to run.
    pub workers: usize,
    /// Each worker's memory budget, in bytes (`sluice worker --memory`).
    pub worker_memory: u64,
    /// Memory each container is asked for, in MiB: the budget and what a worker holds
    /// outside it.
    pub container_mb: u64,
    /// Tasks each worker runs at once, and the cores its container is asked for.
    pub threads: usize,
    /// The YARN queue (`None`: the default).
    pub queue: Option<String>,
    /// The application's name.
    pub name: String,
    /// Where this process listens for its workers: an address the cluster's nodes reach.
    pub listen: SocketAddr,
    /// How long to wait for every worker to connect.
    pub wait: Duration,
    /// The ports the workers' shuffles may listen on (`sluice worker --shuffle-ports`).
    pub shuffle_ports: Option<crate::PortRange>,
}

/// Memory a container needs beyond a worker's budget, in MiB: the binary, thread stacks,
/// the transport's buffers, and what each running task holds outside the budget.
pub fn container_mb(budget: u64, threads: usize, per_task: u64) -> u64 {
    let outside = (budget / 8).max(256 << 20) + per_task.saturating_mul(threads as u64);
    budget.saturating_add(outside).div_ceil(1 << 20)
}

/// The submitter and its application, seen from here.
struct Submitter {
    child: Child,
    stdin: Option<ChildStdin>,
    events: mpsc::Receiver<serde_json::Value>,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Submitter {
    fn start(yarn: &YarnSettings, coordinator: SocketAddr) -> Result<Submitter, ClusterError> {
        let mut command = Command::new(&yarn.java);
        command
            .arg("-cp")
            .arg(&yarn.classpath)
            .arg("org.sluice.yarn.Submit")
            .arg("--name")
            .arg(&yarn.name)
            .arg("--binary")
            .arg(&yarn.binary)
            .arg("--secret-file")
            .arg(&yarn.secret_file)
            .arg("--workers")
            .arg(yarn.workers.to_string())
            .arg("--worker-memory-mb")
            .arg(yarn.container_mb.to_string())
            .arg("--worker-vcores")
            .arg(yarn.threads.to_string());
        if let Some(queue) = &yarn.queue {
            command.arg("--queue").arg(queue);
        }
        let mut worker_args = vec![
            "--connect".to_string(),
            coordinator.to_string(),
            "--memory".to_string(),
            yarn.worker_memory.to_string(),
            "--threads".to_string(),
            yarn.threads.to_string(),
        ];
        if let Some(ports) = yarn.shuffle_ports {
            worker_args.extend(["--shuffle-ports".to_string(), ports.to_string()]);
        }
        for arg in worker_args {
            command.arg("--worker-arg").arg(arg);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                ClusterError::Setup(format!(
                    "cannot start {} for the YARN submitter: {e}",
                    yarn.java.display()
                ))
            })?;
        let stdin = child.stdin.take();
        let (send, events) = mpsc::channel();
        if let Some(stdout) = child.stdout.take() {
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line) {
                        if send.send(event).is_err() {
                            break;
                        }
                    }
                }
            });
        }
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut err) = child.stderr.take() {
            let kept = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = err.read_to_string(&mut text);
                let mut kept = kept.lock().unwrap_or_else(|e| e.into_inner());
                kept.extend(text.lines().map(str::to_string));
            });
        }
        Ok(Submitter {
            child,
            stdin,
            events,
            stderr,
        })
    }

    /// The application's last words: a `finished` or `error` event's text.
    fn ended(&self, event: &serde_json::Value) -> Option<String> {
        match event.get("event").and_then(|e| e.as_str()) {
            Some("finished") => Some(format!(
                "the YARN application ended {} ({}){}",
                event.get("state").and_then(|v| v.as_str()).unwrap_or("?"),
                event
                    .get("final_status")
                    .and_then(|v| v.as_str())
                    .unwrap_or("?"),
                event
                    .get("diagnostics")
                    .and_then(|v| v.as_str())
                    .filter(|d| !d.is_empty())
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default()
            )),
            Some("error") => Some(format!(
                "the YARN submitter failed: {}",
                event.get("message").and_then(|v| v.as_str()).unwrap_or("?")
            )),
            _ => None,
        }
    }

    /// From now on, tells the user (through `status`'s notes) what YARN did to the workers'
    /// containers, until the submitter exits.
    fn relay_container_events(&mut self, status: Arc<JobStatus>) {
        let events = std::mem::replace(&mut self.events, mpsc::channel().1);
        std::thread::spawn(move || {
            for event in events {
                if let Some(note) = container_note(&event) {
                    status.note(note);
                }
            }
        });
    }

    /// The submitter's stderr, last lines.
    fn stderr_tail(&self) -> String {
        let lines = self.stderr.lock().unwrap_or_else(|e| e.into_inner());
        let start = lines.len().saturating_sub(10);
        lines[start..].join("\n")
    }

    /// Waits up to `timeout` for the submitter to exit on its own (the application ended),
    /// then kills the application by closing the submitter's input, and waits for that.
    fn finish(mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `job` on workers YARN starts for it; the same as [`crate::run_on_workers`] once they
/// have connected.
///
/// # Errors
/// The submitter cannot start, the application fails or the workers do not all connect
/// within [`YarnSettings::wait`]; then as [`crate::run_on_workers`]. The application is
/// killed if it is still running when the job fails.
pub fn run_on_yarn(
    job: ClusterJob<'_>,
    yarn: &YarnSettings,
    secret: &Secret,
    status: Arc<JobStatus>,
) -> Result<ClusterReport, ClusterError> {
    let started = Instant::now();
    status.enter(Phase::Planning, 0);
    let net = Net::new()?;
    let listener = net
        .handle()
        .block_on(Listener::bind(yarn.listen, secret.clone()))?;
    let submitter = Submitter::start(yarn, listener.local_addr())?;
    let mut submitter = submitter;
    let links = match wait_for_workers(&net, &listener, &submitter, yarn, &status) {
        Ok(links) => links,
        Err(e) => {
            submitter.finish(Duration::ZERO);
            return Err(e);
        }
    };
    submitter.relay_container_events(Arc::clone(&status));
    // Containers started later (replacements of lost ones) join the running job.
    let (joined, joiners) = std::sync::mpsc::channel();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let accepting = {
        let stop = Arc::clone(&stop);
        let handle = net.handle().clone();
        std::thread::spawn(move || accept_joiners(&handle, &listener, &joined, &stop))
    };
    let result = run_linked(job, links, Some(joiners), Arc::clone(&status), started);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = accepting.join();
    // The workers exit once the job is over; the application then ends by itself.
    submitter.finish(if result.is_ok() {
        Duration::from_secs(60)
    } else {
        Duration::ZERO
    });
    result
}

/// What the user is told of a container event the application master relayed (see
/// `EventLog` in `sluice-yarn.jar`): why a worker's container ended, or could not start. A
/// container that ended well, or started, goes unsaid.
fn container_note(event: &serde_json::Value) -> Option<String> {
    let field = |name: &str| event.get(name).and_then(|v| v.as_str()).unwrap_or("");
    let container = field("container");
    let node = field("node");
    let then = if field("replaced") == "true" {
        "; a replacement is asked for"
    } else {
        ""
    };
    let diagnostics = match field("diagnostics") {
        "" => String::new(),
        text => format!(": {text}"),
    };
    match field("event") {
        "container_ended" if field("exit_status") != "0" => Some(format!(
            "YARN: container {container} on {node} ended with exit status {}{diagnostics}{then}",
            field("exit_status")
        )),
        "container_not_started" => Some(format!(
            "YARN: container {container} on {node} could not start{diagnostics}{then}"
        )),
        _ => None,
    }
}

/// Accepts and greets workers that connect once the job runs, and hands them to the
/// coordinator through `joined`, until `stop` (or the coordinator is gone). A worker that
/// does not greet properly is dropped.
fn accept_joiners(
    handle: &tokio::runtime::Handle,
    listener: &Listener,
    joined: &std::sync::mpsc::Sender<(Link, crate::coordinator::WorkerState)>,
    stop: &std::sync::atomic::AtomicBool,
) {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let accepted = handle.block_on(async {
            tokio::time::timeout(Duration::from_millis(200), listener.accept()).await
        });
        let Ok(Ok(conn)) = accepted else {
            continue;
        };
        let name = conn.peer().to_string();
        let link = Link::new(handle.clone(), conn);
        if let Ok(greeted) = greet(link, &name) {
            if joined.send(greeted).is_err() {
                return;
            }
        }
    }
}

/// Accepts workers until `yarn.workers` have connected and said hello.
fn wait_for_workers(
    net: &Net,
    listener: &Listener,
    submitter: &Submitter,
    yarn: &YarnSettings,
    status: &JobStatus,
) -> Result<Vec<(Link, crate::coordinator::WorkerState)>, ClusterError> {
    let deadline = Instant::now() + yarn.wait;
    let mut links = Vec::new();
    while links.len() < yarn.workers {
        if status.is_cancelled() {
            return Err(ClusterError::Exec(sluice_api::ExecError::Cancelled));
        }
        while let Ok(event) = submitter.events.try_recv() {
            if let Some(note) = container_note(&event) {
                status.note(note);
            }
            if let Some(end) = submitter.ended(&event) {
                let tail = submitter.stderr_tail();
                return Err(ClusterError::Setup(if tail.is_empty() {
                    end
                } else {
                    format!("{end}\n{tail}")
                }));
            }
        }
        if Instant::now() > deadline {
            return Err(ClusterError::Setup(format!(
                "{} of {} workers connected within {} s; is the cluster busy, or does it not \
                 reach {}?",
                links.len(),
                yarn.workers,
                yarn.wait.as_secs(),
                listener.local_addr()
            )));
        }
        let accepted = net.handle().block_on(async {
            tokio::time::timeout(Duration::from_millis(200), listener.accept()).await
        });
        if let Ok(conn) = accepted {
            let conn = conn?;
            let name = conn.peer().to_string();
            let link = Link::new(net.handle().clone(), conn);
            links.push(greet(link, &name)?);
        }
    }
    Ok(links)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::container_note;

    #[test]
    fn container_events_say_why_a_worker_went_and_nothing_else() {
        let ended = serde_json::json!({
            "event": "container_ended", "container": "container_1_0001_01_000002",
            "node": "n1:45454", "exit_status": "137",
            "diagnostics": "Container killed on request. Exit code is 137",
            "replaced": "true"
        });
        assert_eq!(
            container_note(&ended).unwrap(),
            "YARN: container container_1_0001_01_000002 on n1:45454 ended with exit status \
             137: Container killed on request. Exit code is 137; a replacement is asked for"
        );
        let failed = serde_json::json!({
            "event": "container_not_started", "container": "c3", "node": "n2:1",
            "diagnostics": "", "replaced": "false"
        });
        assert_eq!(
            container_note(&failed).unwrap(),
            "YARN: container c3 on n2:1 could not start"
        );
        for quiet in [
            serde_json::json!({"event": "container_ended", "container": "c", "exit_status": "0"}),
            serde_json::json!({"event": "container_started", "container": "c", "node": "n"}),
            serde_json::json!({"event": "state", "state": "RUNNING"}),
        ] {
            assert_eq!(container_note(&quiet), None, "{quiet}");
        }
    }
}
