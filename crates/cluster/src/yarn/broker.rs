//! The job's YARN application, driven from here.
//!
//! `sluice-yarn.jar`'s `Submit` runs as a child process: it stages the files, submits the
//! application and is its master (an unmanaged one, in its own JVM). It decides nothing. It
//! reports what YARN does as JSON lines on its stdout ([`Event`]) and follows the commands
//! this module writes on its stdin ([`Command`]). [`Fleet`] holds every decision: how many
//! containers to ask for and where, what to start in each, when a failed one is replaced,
//! and how the application ends. The protocol is in `yarn/README.md`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command as Process, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sluice_api::JobStatus;

use super::YarnSettings;
use crate::ClusterError;

/// What `Submit` reports, one JSON object per line. Values are strings, as `Submit` writes
/// them; events this build does not know are skipped.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub(crate) enum Event {
    /// The ResourceManager accepted the application.
    Submitted { application: String },
    /// The application's YARN state changed.
    State { state: String },
    /// The master registered: the largest container the cluster gives.
    Registered {
        max_memory_mb: String,
        max_vcores: String,
    },
    /// A container was allocated for a request: launch or release it.
    Allocated {
        container: String,
        #[serde(default)]
        node: String,
    },
    /// A launched container's command started.
    ContainerStarted { container: String },
    /// A launched container could not start.
    ContainerNotStarted {
        container: String,
        #[serde(default)]
        node: String,
        #[serde(default)]
        diagnostics: String,
    },
    /// A container ended (its command exited, or YARN took it away).
    ContainerEnded {
        container: String,
        #[serde(default)]
        node: String,
        exit_status: String,
        #[serde(default)]
        diagnostics: String,
    },
    /// The application ended: the last event.
    Finished {
        state: String,
        final_status: String,
        #[serde(default)]
        diagnostics: String,
    },
    /// `Submit` failed (it kills the application, then reports it finished).
    Error { message: String },
}

/// What `Submit` is told to do, one JSON object per line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub(crate) enum Command {
    /// Ask for one container, preferably on one of `nodes`.
    Request {
        memory_mb: u64,
        vcores: usize,
        nodes: Vec<String>,
    },
    /// Run `./sluice ARGS` in an allocated container.
    Launch {
        container: String,
        args: Vec<String>,
    },
    /// Give an allocated container back.
    Release { container: String },
    /// Unregister: the application ends with `final_status`.
    Finish {
        final_status: String,
        diagnostics: String,
    },
    /// Kill the application.
    Kill,
}

/// The workers a job wants from YARN.
#[derive(Debug, Clone)]
pub(crate) struct FleetPlan {
    /// Workers to keep running.
    pub workers: usize,
    /// Each container's memory, MiB.
    pub memory_mb: u64,
    /// Each container's virtual cores.
    pub vcores: usize,
    /// Failed containers replaced; one more fails the fleet.
    pub max_failures: usize,
    /// The hosts to ask for first (those holding the input); empty for anywhere.
    pub nodes: Vec<String>,
    /// What a container runs: `./sluice ARGS`.
    pub args: Vec<String>,
}

/// The containers of a job, and every decision about them.
#[derive(Debug)]
pub(crate) struct Fleet {
    plan: FleetPlan,
    /// Launched containers not yet ended, and their nodes.
    live: BTreeMap<String, String>,
    /// Requests not yet answered.
    outstanding: usize,
    /// What each failed container said.
    failures: Vec<String>,
    /// Whether the master registered.
    registered: bool,
    /// Containers launched, in all.
    launched: usize,
    /// The job is over: nothing more is launched or replaced.
    ending: bool,
    /// Why no more workers will come: the application ended, or too many failed.
    over: Option<String>,
    /// The application's id, once submitted.
    application: Option<String>,
}

impl Fleet {
    pub(crate) fn new(plan: FleetPlan) -> Fleet {
        Fleet {
            plan,
            live: BTreeMap::new(),
            outstanding: 0,
            failures: Vec::new(),
            registered: false,
            launched: 0,
            ending: false,
            over: None,
            application: None,
        }
    }

    /// Why no more workers will come, if so.
    pub(crate) fn over(&self) -> Option<&str> {
        self.over.as_deref()
    }

    /// Whether every launched container has ended.
    fn all_ended(&self) -> bool {
        self.live.is_empty()
    }

    /// How far getting the workers went, for a message: whether the master registered,
    /// containers launched and still asked for, failures.
    pub(crate) fn progress(&self) -> String {
        if !self.registered {
            return "the application's master has not registered yet (is the queue full, or \
                    the ResourceManager unreachable?)"
                .into();
        }
        format!(
            "YARN gave {} of the containers asked for, {} still asked for, {} failed",
            self.launched,
            self.outstanding,
            self.failures.len()
        )
    }

    /// The commands `event` calls for, and what the user is told of it.
    pub(crate) fn on(&mut self, event: Event) -> (Vec<Command>, Vec<String>) {
        let mut commands = Vec::new();
        let mut notes = Vec::new();
        match event {
            Event::Submitted { application } => {
                notes.push(format!("YARN: submitted as {application}"));
                self.application = Some(application);
            }
            Event::State { .. } | Event::ContainerStarted { .. } => {}
            Event::Registered {
                max_memory_mb,
                max_vcores,
            } => {
                let max_memory: u64 = max_memory_mb.parse().unwrap_or(u64::MAX);
                let max_vcores: usize = max_vcores.parse().unwrap_or(usize::MAX);
                if self.plan.memory_mb > max_memory || self.plan.vcores > max_vcores {
                    self.over = Some(format!(
                        "a worker's container ({} MB, {} vcores) is larger than this cluster \
                         allows ({max_memory} MB, {max_vcores} vcores): give a smaller \
                         --memory or --threads",
                        self.plan.memory_mb, self.plan.vcores
                    ));
                    commands.push(Command::Kill);
                } else {
                    self.registered = true;
                    let near = match self.plan.nodes.len() {
                        0 => String::new(),
                        n if n <= 5 => {
                            format!(", near the input on {}", self.plan.nodes.join(", "))
                        }
                        n => format!(
                            ", near the input on {} and {} more hosts",
                            self.plan.nodes[..4].join(", "),
                            n - 4
                        ),
                    };
                    notes.push(format!(
                        "YARN: asking for {} containers of {} MB and {} vcores{near}",
                        self.plan.workers, self.plan.memory_mb, self.plan.vcores
                    ));
                    for _ in 0..self.plan.workers {
                        commands.push(self.request());
                    }
                }
            }
            Event::Allocated { container, node } => {
                self.outstanding = self.outstanding.saturating_sub(1);
                if !self.ending && self.over.is_none() && self.live.len() < self.plan.workers {
                    self.live.insert(container.clone(), node);
                    self.launched += 1;
                    commands.push(Command::Launch {
                        container,
                        args: self.plan.args.clone(),
                    });
                } else {
                    commands.push(Command::Release { container });
                }
            }
            Event::ContainerNotStarted {
                container,
                node,
                diagnostics,
            } => {
                if self.live.remove(&container).is_some() {
                    let what = format!(
                        "container {container} on {node} could not start{}",
                        colon(&diagnostics)
                    );
                    self.failed(what, true, &mut commands, &mut notes);
                }
            }
            Event::ContainerEnded {
                container,
                node,
                exit_status,
                diagnostics,
            } => {
                // A container released, or never launched, ends without a worker's loss.
                if self.live.remove(&container).is_some() && exit_status != "0" {
                    let what = format!(
                        "container {container} on {node} ended with exit status \
                         {exit_status}{}",
                        colon(&diagnostics)
                    );
                    // Nothing wrong with the worker when YARN took it away: not counted.
                    let counted = !TAKEN_BY_YARN.contains(&exit_status.as_str());
                    self.failed(what, counted, &mut commands, &mut notes);
                }
            }
            Event::Finished {
                state,
                final_status,
                diagnostics,
            } => {
                self.over.get_or_insert(format!(
                    "the YARN application {} ended {state} ({final_status}){}",
                    self.application.as_deref().unwrap_or(""),
                    colon(&diagnostics)
                ));
                self.live.clear();
            }
            Event::Error { message } => {
                self.over
                    .get_or_insert(format!("the YARN submitter failed: {message}"));
            }
        }
        (commands, notes)
    }

    fn request(&mut self) -> Command {
        self.outstanding += 1;
        Command::Request {
            memory_mb: self.plan.memory_mb,
            vcores: self.plan.vcores,
            nodes: self.plan.nodes.clone(),
        }
    }

    /// A launched container's worker is gone (`what`): replaced while the job runs and,
    /// when the loss is `counted` as a failure, while failures are allowed.
    fn failed(
        &mut self,
        what: String,
        counted: bool,
        commands: &mut Vec<Command>,
        notes: &mut Vec<String>,
    ) {
        if counted {
            self.failures.push(what.clone());
        }
        if self.ending || self.over.is_some() {
            notes.push(format!("YARN: {what}"));
        } else if self.failures.len() <= self.plan.max_failures {
            commands.push(self.request());
            notes.push(format!("YARN: {what}; a replacement is asked for"));
        } else {
            notes.push(format!(
                "YARN: {what}; no replacement: {} containers failed, more than {} allowed",
                self.failures.len(),
                self.plan.max_failures
            ));
            self.over = Some(format!(
                "{} worker containers failed: {}",
                self.failures.len(),
                self.failures.join("; ")
            ));
        }
    }
}

/// Exit statuses of containers YARN took away for reasons of its own (YARN's
/// `ContainerExitStatus`: ABORTED, a lost node's; DISKS_FAILED; PREEMPTED; and killed by the
/// ResourceManager or the container scheduler): their workers are replaced without counting
/// as failures, which are the workers' own (a non-zero exit, memory limits exceeded).
const TAKEN_BY_YARN: [&str; 5] = ["-100", "-101", "-102", "-106", "-108"];

/// ": TEXT", or nothing for no text.
fn colon(text: &str) -> String {
    if text.is_empty() {
        String::new()
    } else {
        format!(": {text}")
    }
}

/// `Submit`, running, and the fleet it brokers for.
pub(crate) struct Broker {
    child: Child,
    shared: Arc<Shared>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// What the broker's reading thread and the job share.
struct Shared {
    fleet: Mutex<Fleet>,
    stdin: Mutex<Option<ChildStdin>>,
    /// The last [`STDERR_LINES`] lines `Submit` wrote on stderr.
    stderr: Mutex<std::collections::VecDeque<String>>,
}

/// Lines of `Submit`'s stderr kept for messages.
const STDERR_LINES: usize = 10;

impl Shared {
    fn fleet(&self) -> MutexGuard<'_, Fleet> {
        self.fleet.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Writes `commands` to `Submit`. One that cannot be written is dropped: `Submit` is
    /// gone, and its end is reported as such.
    fn send(&self, commands: &[Command]) {
        let mut stdin = self.stdin.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(pipe) = stdin.as_mut() {
            for command in commands {
                let Ok(mut line) = serde_json::to_vec(command) else {
                    continue;
                };
                line.push(b'\n');
                if pipe.write_all(&line).and_then(|()| pipe.flush()).is_err() {
                    *stdin = None;
                    return;
                }
            }
        }
    }

    /// Closes `Submit`'s stdin: it kills the application if it has not ended.
    fn close(&self) {
        self.stdin.lock().unwrap_or_else(|e| e.into_inner()).take();
    }
}

impl Broker {
    /// Starts `Submit` with `yarn`'s Java, class path, binary, secret and names; its events
    /// drive a [`Fleet`] of `plan`, and what the user should know goes to `status`'s notes.
    pub(crate) fn start(
        yarn: &YarnSettings,
        plan: FleetPlan,
        status: Arc<JobStatus>,
    ) -> Result<Broker, ClusterError> {
        let mut command = Process::new(&yarn.java);
        command
            .arg("-cp")
            .arg(&yarn.classpath)
            .arg("org.sluice.yarn.Submit")
            .arg("--name")
            .arg(&yarn.name)
            .arg("--binary")
            .arg(&yarn.binary)
            .arg("--secret-file")
            .arg(&yarn.secret_file);
        if let Some(queue) = &yarn.queue {
            command.arg("--queue").arg(queue);
        }
        // A process group of its own: a Ctrl-C at the terminal stops this job in order (which
        // ends the application with the job's error), not the master beneath it.
        command.process_group(0);
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
        let shared = Arc::new(Shared {
            fleet: Mutex::new(Fleet::new(plan)),
            stdin: Mutex::new(child.stdin.take()),
            stderr: Mutex::new(std::collections::VecDeque::new()),
        });
        if let Some(err) = child.stderr.take() {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                // Line by line, whatever the bytes; only the last lines are kept.
                for line in BufReader::new(err).split(b'\n') {
                    let Ok(line) = line else { break };
                    let mut kept = shared.stderr.lock().unwrap_or_else(|e| e.into_inner());
                    if kept.len() == STDERR_LINES {
                        kept.pop_front();
                    }
                    kept.push_back(String::from_utf8_lossy(&line).into_owned());
                }
            });
        }
        let reader = child.stdout.take().map(|stdout| {
            let shared = Arc::clone(&shared);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    let Ok(event) = serde_json::from_str::<Event>(&line) else {
                        continue;
                    };
                    let (commands, notes) = shared.fleet().on(event);
                    shared.send(&commands);
                    for note in notes {
                        status.note(note);
                    }
                }
                // Submit is gone: no more workers come.
                shared
                    .fleet()
                    .over
                    .get_or_insert_with(|| "the YARN submitter exited".into());
            })
        });
        Ok(Broker {
            child,
            shared,
            reader,
        })
    }

    /// Why no more workers will come, with the end of `Submit`'s stderr, if so.
    pub(crate) fn over(&self) -> Option<String> {
        let over = self.shared.fleet().over()?.to_string();
        Some(self.with_stderr(over))
    }

    /// How far getting the workers went, with the end of `Submit`'s stderr.
    pub(crate) fn progress(&self) -> String {
        self.with_stderr(self.containers())
    }

    /// How far getting the workers went: containers given, still asked for, failed.
    pub(crate) fn containers(&self) -> String {
        self.shared.fleet().progress()
    }

    /// Whether the application's master registered with the ResourceManager.
    pub(crate) fn registered(&self) -> bool {
        self.shared.fleet().registered
    }

    fn with_stderr(&self, text: String) -> String {
        let lines = self.shared.stderr.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            text
        } else {
            let tail: Vec<&str> = lines.iter().map(String::as_str).collect();
            format!("{text}\n{}", tail.join("\n"))
        }
    }

    /// Ends the application: waits up to `grace` for the workers to exit (they do once the
    /// job is over), then unregisters with `succeeded`'s final status and `diagnostics`, and
    /// waits for `Submit` to exit. If it does not, the application is killed.
    pub(crate) fn finish(mut self, succeeded: bool, diagnostics: &str, grace: Duration) {
        self.shared.fleet().ending = true;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline && !self.shared.fleet().all_ended() {
            std::thread::sleep(Duration::from_millis(50));
        }
        self.shared.send(&[Command::Finish {
            final_status: if succeeded { "SUCCEEDED" } else { "FAILED" }.into(),
            diagnostics: diagnostics.into(),
        }]);
        if self.wait_exit(Duration::from_secs(30)) {
            // Its last events, told before the job's end is.
            if let Some(reader) = self.reader.take() {
                let _ = reader.join();
            }
        } else {
            self.kill();
        }
    }

    /// Kills the application (if it runs) and waits for `Submit` to exit.
    pub(crate) fn kill(&mut self) {
        self.shared.send(&[Command::Kill]);
        self.shared.close();
        if !self.wait_exit(Duration::from_secs(30)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        if let Some(reader) = self.reader.take() {
            let _ = reader.join();
        }
    }

    fn wait_exit(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{Command, Event, Fleet, FleetPlan};

    fn plan(workers: usize, max_failures: usize) -> FleetPlan {
        FleetPlan {
            workers,
            memory_mb: 1024,
            vcores: 2,
            max_failures,
            nodes: vec!["h1".into()],
            args: vec!["worker".into(), "--connect".into(), "c:1".into()],
        }
    }

    fn registered(max_memory_mb: &str) -> Event {
        Event::Registered {
            max_memory_mb: max_memory_mb.into(),
            max_vcores: "8".into(),
        }
    }

    fn allocated(container: &str) -> Event {
        Event::Allocated {
            container: container.into(),
            node: format!("{container}-node:1"),
        }
    }

    fn ended(container: &str, exit_status: &str) -> Event {
        Event::ContainerEnded {
            container: container.into(),
            node: format!("{container}-node:1"),
            exit_status: exit_status.into(),
            diagnostics: if exit_status == "0" {
                String::new()
            } else {
                "killed".into()
            },
        }
    }

    fn request() -> Command {
        Command::Request {
            memory_mb: 1024,
            vcores: 2,
            nodes: vec!["h1".into()],
        }
    }

    fn launch(container: &str) -> Command {
        Command::Launch {
            container: container.into(),
            args: vec!["worker".into(), "--connect".into(), "c:1".into()],
        }
    }

    #[test]
    fn events_and_commands_are_the_json_lines_of_the_protocol() {
        let event: Event = serde_json::from_str(
            r#"{"event":"container_ended","container":"c1","node":"n:1","exit_status":"137","diagnostics":"d"}"#,
        )
        .unwrap();
        assert_eq!(
            event,
            Event::ContainerEnded {
                container: "c1".into(),
                node: "n:1".into(),
                exit_status: "137".into(),
                diagnostics: "d".into()
            }
        );
        assert!(serde_json::from_str::<Event>(r#"{"event":"from_the_future"}"#).is_err());
        assert_eq!(
            serde_json::to_string(&request()).unwrap(),
            r#"{"command":"request","memory_mb":1024,"vcores":2,"nodes":["h1"]}"#
        );
        assert_eq!(
            serde_json::to_string(&Command::Kill).unwrap(),
            r#"{"command":"kill"}"#
        );
        assert_eq!(
            serde_json::to_string(&Command::Finish {
                final_status: "FAILED".into(),
                diagnostics: "a \"b\"\n".into()
            })
            .unwrap(),
            r#"{"command":"finish","final_status":"FAILED","diagnostics":"a \"b\"\n"}"#
        );
    }

    #[test]
    fn the_fleet_asks_for_its_workers_launches_them_and_returns_extra_containers() {
        let mut fleet = Fleet::new(plan(2, 2));
        assert_eq!(
            fleet.on(registered("4096")),
            (
                vec![request(), request()],
                vec![
                    "YARN: asking for 2 containers of 1024 MB and 2 vcores, near the input on h1"
                        .to_string()
                ]
            )
        );
        assert_eq!(fleet.on(allocated("c1")).0, vec![launch("c1")]);
        assert_eq!(fleet.on(allocated("c2")).0, vec![launch("c2")]);
        // One more than asked for (a request withdrawn a heartbeat late) goes back.
        assert_eq!(
            fleet.on(allocated("c3")).0,
            vec![Command::Release {
                container: "c3".into()
            }]
        );
        // Its end is no failure, nor is a worker's that exits 0.
        assert_eq!(fleet.on(ended("c3", "-100")), (vec![], vec![]));
        assert_eq!(fleet.on(ended("c1", "0")), (vec![], vec![]));
        assert!(fleet.over().is_none());
    }

    #[test]
    fn a_failed_container_is_replaced_until_too_many_have_failed() {
        let mut fleet = Fleet::new(plan(2, 1));
        fleet.on(registered("4096"));
        fleet.on(allocated("c1"));
        fleet.on(allocated("c2"));
        let (commands, notes) = fleet.on(ended("c1", "137"));
        assert_eq!(commands, vec![request()]);
        assert_eq!(
            notes,
            vec![
                "YARN: container c1 on c1-node:1 ended with exit status 137: killed; a \
                 replacement is asked for"
            ]
        );
        assert_eq!(fleet.on(allocated("c4")).0, vec![launch("c4")]);
        let (commands, notes) = fleet.on(Event::ContainerNotStarted {
            container: "c4".into(),
            node: "n:1".into(),
            diagnostics: String::new(),
        });
        assert!(commands.is_empty());
        assert!(
            notes[0].contains("could not start; no replacement"),
            "{notes:?}"
        );
        let over = fleet.over().unwrap();
        assert!(
            over.starts_with("2 worker containers failed: container c1"),
            "{over}"
        );
        // Nothing more is launched.
        assert_eq!(
            fleet.on(allocated("c5")).0,
            vec![Command::Release {
                container: "c5".into()
            }]
        );
    }

    #[test]
    fn containers_yarn_takes_away_are_replaced_without_counting_as_failures() {
        let mut fleet = Fleet::new(plan(1, 0));
        assert!(fleet.progress().contains("has not registered"));
        fleet.on(registered("4096"));
        fleet.on(allocated("c1"));
        // Preempted: replaced, although no failure is allowed.
        let (commands, notes) = fleet.on(ended("c1", "-102"));
        assert_eq!(commands, vec![request()]);
        assert!(
            notes[0].ends_with("a replacement is asked for"),
            "{notes:?}"
        );
        assert!(fleet.over().is_none());
        fleet.on(allocated("c2"));
        assert_eq!(
            fleet.progress(),
            "YARN gave 2 of the containers asked for, 0 still asked for, 0 failed"
        );
        // The worker's own failure counts: none is allowed.
        let (commands, _) = fleet.on(ended("c2", "1"));
        assert!(commands.is_empty());
        assert!(fleet.over().is_some());
    }

    #[test]
    fn a_container_larger_than_the_cluster_allows_kills_the_application() {
        let mut fleet = Fleet::new(plan(2, 2));
        assert_eq!(fleet.on(registered("512")).0, vec![Command::Kill]);
        assert!(fleet.over().unwrap().contains("(1024 MB, 2 vcores)"));
    }

    #[test]
    fn once_the_job_ends_failures_are_only_told() {
        let mut fleet = Fleet::new(plan(1, 5));
        fleet.on(registered("4096"));
        fleet.on(allocated("c1"));
        fleet.ending = true;
        let (commands, notes) = fleet.on(ended("c1", "143"));
        assert!(commands.is_empty());
        assert_eq!(notes.len(), 1);
        assert!(fleet.all_ended());
        let finished = Event::Finished {
            state: "FINISHED".into(),
            final_status: "SUCCEEDED".into(),
            diagnostics: String::new(),
        };
        fleet.on(finished);
        assert!(fleet.over().unwrap().contains("ended FINISHED (SUCCEEDED)"));
    }
}
