//! sluice's YARN submitter (`yarn/`, built into `target/yarn/sluice-yarn.jar`) against a real
//! YARN cluster. `Submit` stages the files, submits the application and is its unmanaged
//! master; it decides nothing. Each test plays the job's coordinator: it waits for the
//! `registered` event, writes `request` commands on Submit's stdin, answers each `allocated`
//! event with `launch` or `release`, and ends the application with `finish` (or kills it).
//! The workers are a stand-in `sluice` script that writes down what it sees (its arguments,
//! the files it was given) and then succeeds, fails or sleeps as told.
//!
//! One cluster serves every test of this file (it starts in about 10 s and is never stopped:
//! it halts when the test process ends). Needs `make yarn`; ignored, with the
//! reason, without the `test-yarn` feature.

// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};
use sluice_testkit::MiniYarn;

/// The longest an application of these tests may take from submission to its end, and the
/// longest any one event may be waited for (they take seconds; the machine may be busy with
/// other tests).
const APP_TIMEOUT: Duration = Duration::from_secs(180);

/// The memory each test asks for, per container (the cluster's smallest is 64 MB).
const MEMORY_MB: u64 = 128;

/// The stand-in for the sluice binary. Run by a container as `./sluice worker --connect DIR
/// --mode MODE ... --secret-file secret` (the arguments the test's `launch` gives), it writes
/// what it sees into `DIR/<container id>`, then, by MODE: `ok` exits 0, `fail` exits 1,
/// `fail-once` exits 1 in the first container to get there and 0 in the others, `sleep`
/// sleeps (until the container is stopped).
const STAND_IN: &str = r#"#!/bin/sh
dir=
mode=ok
prev=
for arg in "$@"; do
    case "$prev" in
        --connect) dir=$arg ;;
        --mode) mode=$arg ;;
    esac
    prev=$arg
done
report="$dir/$CONTAINER_ID"
{
    printf 'args'
    for arg in "$@"; do printf ' [%s]' "$arg"; done
    printf '\n'
    printf 'secret-mode %s\n' "$(stat -L -c %a secret)"
    printf 'sluice-mode %s\n' "$(stat -L -c %a sluice)"
    printf 'secret %s\n' "$(cat secret)"
    printf 'host %s\n' "$(hostname)"
    printf 'pid %s\n' "$$"
} >"$report.tmp" && mv "$report.tmp" "$report"
case "$mode" in
    fail) echo "stand-in worker failing on purpose" >&2; exit 1 ;;
    fail-once)
        if mkdir "$dir/failed-once" 2>/dev/null; then
            echo "the first worker fails" >&2
            exit 1
        fi
        ;;
    sleep) exec sleep 600 ;;
esac
exit 0
"#;

/// The content of every test's secret file.
const SECRET: &str = "not-a-real-secret-0123456789abcdef";

/// An argument that no shell may change on its way into the container.
const TRICKY_ARG: &str = r#"it's "quoted" $HOME $(id) `id` \ * ; & | < > ~ # end"#;

/// The cluster shared by the tests of this file, started by the first to need it.
fn cluster() -> &'static MiniYarn {
    static CLUSTER: OnceLock<Result<MiniYarn, String>> = OnceLock::new();
    CLUSTER
        .get_or_init(|| {
            let started = Instant::now();
            let cluster = MiniYarn::start();
            eprintln!("MiniYarn up in {:.1} s", started.elapsed().as_secs_f64());
            cluster
        })
        .as_ref()
        .unwrap_or_else(|e| panic!("MiniYarn does not start: {e}"))
}

/// A test's local files: the stand-in binary, the secret, and the directory the workers
/// report into.
struct Work {
    dir: tempfile::TempDir,
}

impl Work {
    fn new() -> Work {
        let dir = tempfile::tempdir().unwrap();
        let binary = dir.path().join("sluice");
        fs::write(&binary, STAND_IN).unwrap();
        fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(dir.path().join("secret"), SECRET).unwrap();
        fs::create_dir(dir.path().join("reports")).unwrap();
        Work { dir }
    }

    fn binary(&self) -> PathBuf {
        self.dir.path().join("sluice")
    }

    fn secret(&self) -> PathBuf {
        self.dir.path().join("secret")
    }

    fn reports_dir(&self) -> PathBuf {
        self.dir.path().join("reports")
    }

    /// Submit's options for an application called `name`, then `extra`.
    fn options(&self, name: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "--name",
            name,
            "--binary",
            self.binary().to_str().unwrap(),
            "--secret-file",
            self.secret().to_str().unwrap(),
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args
    }

    /// What a `launch` runs after `./sluice`: a stand-in worker in `mode`, with `extra`
    /// arguments, as the coordinator starts one.
    fn worker_args(&self, mode: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "worker".into(),
            "--connect".into(),
            self.reports_dir().to_str().unwrap().into(),
            "--mode".into(),
            mode.into(),
        ];
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args.extend(["--secret-file".into(), "secret".into()]);
        args
    }

    /// The reports of the workers so far, by container id: each a map from the first word of
    /// a line to the rest.
    fn reports(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut reports = BTreeMap::new();
        for entry in fs::read_dir(self.reports_dir()).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with("container_") || name.ends_with(".tmp") {
                continue;
            }
            let text = fs::read_to_string(entry.path()).unwrap();
            let fields = text
                .lines()
                .filter_map(|l| l.split_once(' '))
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            reports.insert(name, fields);
        }
        reports
    }

    /// Waits until `n` workers have reported.
    fn wait_for_reports(&self, n: usize, sub: &Submission) {
        let deadline = Instant::now() + APP_TIMEOUT;
        while self.reports().len() < n {
            assert!(
                Instant::now() < deadline,
                "fewer than {n} workers reported:\n{}",
                sub.context()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A running `Submit`: its events as they come, its stdin to write commands to or close.
struct Submission {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    events: Vec<Value>,
    /// What Submit printed on stderr so far.
    stderr: Arc<Mutex<String>>,
}

impl Submission {
    fn start(args: &[String]) -> Submission {
        let mut child = cluster()
            .submit()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("java starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&text);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let mut sink = sink.lock().unwrap();
                sink.push_str(&line);
                sink.push('\n');
            }
        });
        Submission {
            child,
            stdin,
            lines,
            events: Vec::new(),
            stderr: text,
        }
    }

    /// The events so far, what Submit printed on stderr, and the application's container logs:
    /// for the message of a failing assertion.
    fn context(&self) -> String {
        let app = self
            .events
            .first()
            .and_then(|e| e["application"].as_str())
            .unwrap_or("");
        format!(
            "events:\n{}\nstderr:\n{}\ncontainer logs:\n{}",
            self.events
                .iter()
                .map(Value::to_string)
                .collect::<Vec<_>>()
                .join("\n"),
            self.stderr.lock().unwrap(),
            if app.is_empty() {
                String::new()
            } else {
                cluster().app_logs(app)
            }
        )
    }

    /// Writes one line on Submit's stdin.
    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes one command on Submit's stdin.
    fn send(&mut self, command: &Value) {
        self.send_line(&command.to_string());
    }

    /// Asks for one container of `MEMORY_MB` and 1 vcore, on one of `nodes` if possible.
    fn request(&mut self, nodes: &[&str]) {
        self.send(&json!({
            "command": "request",
            "memory_mb": MEMORY_MB,
            "vcores": 1,
            "nodes": nodes,
        }));
    }

    /// Starts `./sluice ARGS` in `container`.
    fn launch(&mut self, container: &str, args: &[String]) {
        self.send(&json!({"command": "launch", "container": container, "args": args}));
    }

    /// Unregisters with `final_status` and `diagnostics`.
    fn finish_with(&mut self, final_status: &str, diagnostics: &str) {
        self.send(&json!({
            "command": "finish",
            "final_status": final_status,
            "diagnostics": diagnostics,
        }));
    }

    /// Reads events until one satisfies `wanted`, which it returns. Every event must be a
    /// JSON object of strings.
    fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + APP_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let event: Value = serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\n{}", self.context()));
                    self.events.push(event.clone());
                    let all_strings = event
                        .as_object()
                        .is_some_and(|o| o.values().all(Value::is_string));
                    assert!(
                        all_strings,
                        "not an object of strings: {line}\n{}",
                        self.context()
                    );
                    if wanted(&event) {
                        return event;
                    }
                }
                Err(_) => {
                    panic!("no {what} event:\n{}", self.context());
                }
            }
        }
    }

    /// Waits for the `registered` event and returns it.
    fn registered(&mut self) -> Value {
        self.wait_for("registered", |e| e["event"] == "registered")
    }

    /// Waits for the next `allocated` event and returns its container's id.
    fn allocated(&mut self) -> String {
        let event = self.wait_for("allocated", |e| e["event"] == "allocated");
        event["container"].as_str().unwrap().to_owned()
    }

    /// The `container_ended` event of `container`: one received already, or the next.
    fn ended(&mut self, container: &str) -> Value {
        if let Some(ended) = self.event_of("container_ended", container) {
            return ended.clone();
        }
        self.wait_for(&format!("container_ended of {container}"), |e| {
            e["event"] == "container_ended" && e["container"] == container
        })
    }

    /// The event of kind `kind` about `container` received so far, if any.
    fn event_of(&self, kind: &str, container: &str) -> Option<&Value> {
        self.events
            .iter()
            .find(|e| e["event"] == kind && e["container"] == container)
    }

    /// Waits for the finished event and Submit's exit; returns the finished event and the
    /// exit status.
    fn finish(&mut self) -> (Value, ExitStatus) {
        let finished = self.wait_for("finished", |e| e["event"] == "finished");
        let status = self.child.wait().unwrap();
        // Nothing follows the finished event (stdout is closed by now).
        if let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            panic!(
                "a line after the finished event: {line}\n{}",
                self.context()
            );
        }
        (finished, status)
    }

    /// The application's id, from the submitted event (which must be the first).
    fn application(&self) -> String {
        let first = self.events.first().expect("no events yet");
        assert_eq!(first["event"], "submitted", "{}", self.context());
        first["application"].as_str().unwrap().to_owned()
    }

    /// What Submit logged on stderr so far.
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

impl Drop for Submission {
    fn drop(&mut self) {
        // Closing stdin makes Submit kill the application (if the test failed before its end);
        // give it the time to, then make sure it is gone.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The members of each kind of event, `event` included.
fn members(kind: &str) -> &'static [&'static str] {
    match kind {
        "submitted" => &["event", "application"],
        "state" => &["event", "state"],
        "registered" => &["event", "max_memory_mb", "max_vcores"],
        "allocated" => &["event", "container", "node", "host", "memory_mb", "vcores"],
        "container_started" => &["event", "container", "node"],
        "container_not_started" => &["event", "container", "node", "diagnostics"],
        "container_ended" => &["event", "container", "node", "exit_status", "diagnostics"],
        "finished" => &["event", "state", "final_status", "diagnostics"],
        "error" => &["event", "message"],
        other => panic!("an unknown event {other}"),
    }
}

/// Checks the events of an application that ended: submitted first; every event with its
/// members; the states in the order YARN goes through them, ending with `state`; registered
/// once, before any container; each container allocated before it started, started before it
/// ended, each at most once. Returns the finished event's diagnostics.
fn check_events(sub: &Submission, state: &str, final_status: &str) -> String {
    let app = sub.application();
    assert!(
        app.starts_with("application_") && app.split('_').count() == 3,
        "{app}"
    );
    for event in &sub.events {
        let mut names: Vec<&str> = event
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        let mut expected = members(event["event"].as_str().unwrap()).to_vec();
        expected.sort_unstable();
        assert_eq!(names, expected, "{event}");
    }
    let order = [
        "NEW",
        "NEW_SAVING",
        "SUBMITTED",
        "ACCEPTED",
        "RUNNING",
        "FINISHED",
        "FAILED",
        "KILLED",
    ];
    let states: Vec<&str> = sub
        .events
        .iter()
        .filter(|e| e["event"] == "state")
        .map(|e| e["state"].as_str().unwrap())
        .collect();
    let positions: Vec<usize> = states
        .iter()
        .map(|s| order.iter().position(|o| o == s).expect("a known state"))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "states out of order: {states:?}"
    );
    assert_eq!(states.last(), Some(&state), "{}", sub.context());

    // The containers' events, in order.
    let mut registered = false;
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for (i, event) in sub.events.iter().enumerate() {
        let kind = event["event"].as_str().unwrap();
        assert!(
            kind != "submitted" || i == 0,
            "submitted again: {}",
            sub.context()
        );
        assert!(
            kind != "finished" || i == sub.events.len() - 1,
            "finished before the end: {}",
            sub.context()
        );
        assert_ne!(kind, "error", "{}", sub.context());
        if kind == "registered" {
            assert!(!registered, "registered twice: {}", sub.context());
            registered = true;
        }
        let Some(container) = event["container"].as_str() else {
            continue;
        };
        assert!(
            container.starts_with("container_") && container.contains(&app["application_".len()..]),
            "{event}"
        );
        if kind == "container_not_started" && event["diagnostics"] == "no such container allocated"
        {
            continue; // a launch of a container that is not (or no longer) there
        }
        assert!(registered, "{event} before registered");
        let before: &[&str] = match kind {
            "allocated" => &[],
            "container_started" | "container_not_started" | "container_ended" => &["allocated"],
            other => panic!("{other} names a container"),
        };
        // A launch either starts the container or does not.
        let other = match kind {
            "container_started" => "container_not_started",
            "container_not_started" => "container_started",
            _ => "",
        };
        assert!(
            !seen.contains(&(other.to_owned(), container.to_owned())),
            "{event} after {other}: {}",
            sub.context()
        );
        for earlier in before {
            assert!(
                seen.contains(&((*earlier).to_owned(), container.to_owned())),
                "{event} before its {earlier}: {}",
                sub.context()
            );
        }
        assert!(
            seen.insert((kind.to_owned(), container.to_owned())),
            "{event} twice: {}",
            sub.context()
        );
        if kind != "allocated" {
            // The node where it was allocated.
            let allocated = sub
                .events
                .iter()
                .find(|e| e["event"] == "allocated" && e["container"] == container)
                .unwrap();
            assert_eq!(event["node"], allocated["node"], "{}", sub.context());
        }
        if kind == "container_ended" {
            // A command that started had started before it ended: its start is never
            // reported after the end.
            let started_later = sub.events[i..]
                .iter()
                .any(|e| e["event"] == "container_started" && e["container"] == container);
            assert!(!started_later, "{container} started after it ended");
        }
    }

    let finished = sub.events.last().unwrap();
    assert_eq!(finished["event"], "finished");
    assert_eq!(finished["state"], state, "{}", sub.context());
    assert_eq!(finished["final_status"], final_status, "{}", sub.context());
    finished["diagnostics"].as_str().unwrap().to_owned()
}

/// The user the tests run as: the owner of the staging directories.
fn user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The default staging root on the cluster's HDFS.
fn staging_root() -> String {
    format!("/user/{}/.sluice-staging", user())
}

/// `hadoop fs -stat FORMAT PATH`, trimmed; panics if it fails.
fn stat(format: &str, path: &str) -> String {
    let out = cluster().fs(&["-stat", format, path]);
    assert!(
        out.status.success(),
        "-stat {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Whether `path` exists on the cluster's HDFS.
fn exists(path: &str) -> bool {
    cluster().fs(&["-test", "-e", path]).status.success()
}

/// The first 16 hex digits of the SHA-256 of a local file.
fn sha256_prefix(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..16].to_owned()
}

/// Waits until the process of each worker that reported is gone (with its container).
fn assert_workers_gone(work: &Work) {
    for (container, report) in work.reports() {
        let pid = Pid::from_raw(report["pid"].parse().unwrap());
        let deadline = Instant::now() + Duration::from_secs(30);
        while kill(pid, None) != Err(Errno::ESRCH) {
            assert!(
                Instant::now() < deadline,
                "the worker of {container} (pid {pid}) still runs"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn two_workers_run_and_the_application_succeeds() {
    let work = Work::new();
    cluster();
    let started = Instant::now();
    let mut sub = Submission::start(&work.options("sluice-yarn-test", &[]));
    let registered = sub.registered();
    // The largest container the cluster gives: the largest NodeManager's memory (4 GB in the
    // test cluster), or the scheduler's maximum (8 GB) while the ResourceManager is young;
    // vcores likewise.
    let max_memory: u64 = registered["max_memory_mb"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let max_vcores: u64 = registered["max_vcores"].as_str().unwrap().parse().unwrap();
    assert!([4096, 8192].contains(&max_memory), "{registered}");
    assert!((1..=8).contains(&max_vcores), "{registered}");

    sub.request(&[]);
    sub.request(&[]);
    let args = work.worker_args("ok", &[TRICKY_ARG, ""]);
    let mut containers = Vec::new();
    for _ in 0..2 {
        let container = sub.allocated();
        sub.launch(&container, &args);
        containers.push(container);
    }
    for container in &containers {
        let ended = sub.ended(container);
        assert_eq!(ended["exit_status"], "0", "{}", sub.context());
        let allocated = sub.event_of("allocated", container).unwrap().clone();
        assert_eq!(allocated["memory_mb"], MEMORY_MB.to_string(), "{allocated}");
        assert_eq!(allocated["vcores"], "1", "{allocated}");
        let node = allocated["node"].as_str().unwrap();
        let (host, port) = node.rsplit_once(':').unwrap();
        assert_eq!(allocated["host"], host, "{allocated}");
        assert!(port.parse::<u16>().is_ok(), "{allocated}");
        // Its command started (check_events checks the order and the nodes).
        assert!(
            sub.event_of("container_started", container).is_some(),
            "{}",
            sub.context()
        );
    }
    // The diagnostics go through as given, whatever characters they hold.
    let diagnostics = "2 workers finished: \"ok\" \\ é\tdone";
    sub.finish_with("SUCCEEDED", diagnostics);
    let (_, status) = sub.finish();
    eprintln!(
        "two workers: {:.1} s from Submit's start to the end",
        started.elapsed().as_secs_f64()
    );
    eprintln!("Submit's stderr:\n{}", sub.stderr());
    assert_eq!(
        check_events(&sub, "FINISHED", "SUCCEEDED"),
        diagnostics,
        "{}",
        sub.context()
    );
    assert!(sub.events.iter().any(|e| e["state"] == "RUNNING"));
    assert_eq!(status.code(), Some(0), "{}", sub.context());

    // Two containers ran the binary with the arguments, unchanged; the NodeManagers localized
    // the private secret as 0500 and the public binary as 0555 (YARN's modes for localized
    // files, whatever their mode on HDFS).
    let reports = work.reports();
    let mut expected = containers.clone();
    expected.sort();
    assert_eq!(
        reports.keys().cloned().collect::<Vec<_>>(),
        expected,
        "{}",
        sub.context()
    );
    let expected_args = format!(
        "[worker] [--connect] [{}] [--mode] [ok] [{TRICKY_ARG}] [] [--secret-file] [secret]",
        work.reports_dir().display()
    );
    for report in reports.values() {
        assert_eq!(report["args"], expected_args);
        assert_eq!(report["secret-mode"], "500");
        assert_eq!(report["sluice-mode"], "555");
        assert_eq!(report["secret"], SECRET);
        assert!(!report["host"].is_empty());
    }

    // The application's staging directory is gone; the binary stays for the next one, under
    // its hash, world-readable like the directories above it (so that it can be PUBLIC).
    let app = sub.application();
    let root = staging_root();
    assert!(!exists(&format!("{root}/{app}")), "{root}/{app} is left");
    let binary = format!("{root}/bin/sluice-{}", sha256_prefix(&work.binary()));
    assert_eq!(stat("%a %b", &binary), format!("755 {}", STAND_IN.len()));
    assert_eq!(stat("%a", &format!("{root}/bin")), "755");
    assert_eq!(stat("%a", &root), "755");
    assert!(
        !sub.stderr().contains("PRIVATE resource"),
        "{}",
        sub.stderr()
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_failed_worker_is_reported_and_a_replacement_runs() {
    let work = Work::new();
    let mut sub = Submission::start(&work.options("sluice-yarn-fail-once", &[]));
    sub.registered();
    sub.request(&[]);
    sub.request(&[]);
    let args = work.worker_args("fail-once", &[]);
    let mut launched = Vec::new();
    for _ in 0..2 {
        let container = sub.allocated();
        sub.launch(&container, &args);
        launched.push(container);
    }
    // One of the two fails: its end says how, with the end of its stderr.
    let mut failed = None;
    for container in &launched {
        let ended = sub.ended(container);
        if ended["exit_status"] != "0" {
            assert!(failed.is_none(), "two failed: {}", sub.context());
            assert_eq!(ended["exit_status"], "1", "{}", sub.context());
            let diagnostics = ended["diagnostics"].as_str().unwrap();
            assert!(
                diagnostics.contains("the first worker fails"),
                "{diagnostics}"
            );
            failed = Some(container.clone());
        }
    }
    assert!(failed.is_some(), "none failed: {}", sub.context());
    // The application goes on: a replacement is asked for, and it runs and succeeds.
    sub.request(&[]);
    let replacement = sub.allocated();
    assert!(!launched.contains(&replacement));
    sub.launch(&replacement, &args);
    assert_eq!(
        sub.ended(&replacement)["exit_status"],
        "0",
        "{}",
        sub.context()
    );
    sub.finish_with("SUCCEEDED", "2 workers finished");
    let (_, status) = sub.finish();
    assert_eq!(
        check_events(&sub, "FINISHED", "SUCCEEDED"),
        "2 workers finished"
    );
    assert_eq!(status.code(), Some(0), "{}", sub.context());
    // The first failed, a third replaced it.
    assert!(work.reports_dir().join("failed-once").is_dir());
    assert_eq!(work.reports().len(), 3, "{}", sub.context());
    assert!(work.reports().contains_key(&replacement));
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn finishing_failed_fails_the_application_and_stops_its_workers() {
    let work = Work::new();
    let mut sub = Submission::start(
        &work.options("sluice-yarn-fail", &["--staging-root", "/staging/failures"]),
    );
    sub.registered();
    sub.request(&[]);
    let container = sub.allocated();
    sub.launch(&container, &work.worker_args("sleep", &[]));
    work.wait_for_reports(1, &sub);
    // Staged under the root given.
    let app = sub.application();
    assert!(exists(&format!("/staging/failures/{app}/secret")));

    let diagnostics = "1 worker container failed: container_x ended with exit status 1";
    let finishing = Instant::now();
    sub.finish_with("FAILED", diagnostics);
    let (_, status) = sub.finish();
    let took = finishing.elapsed();
    eprintln!("finished FAILED in {:.1} s", took.as_secs_f64());
    assert!(took < Duration::from_secs(30), "finishing took {took:?}");
    assert_eq!(check_events(&sub, "FINISHED", "FAILED"), diagnostics);
    assert_eq!(status.code(), Some(1), "{}", sub.context());
    assert!(!exists(&format!("/staging/failures/{app}")));
    assert!(exists(&format!(
        "/staging/failures/bin/sluice-{}",
        sha256_prefix(&work.binary())
    )));
    // The worker still running was stopped with its container.
    assert_workers_gone(&work);
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn closing_stdin_kills_the_application() {
    let work = Work::new();
    let mut sub = Submission::start(&work.options("sluice-yarn-sleep", &[]));
    sub.registered();
    sub.request(&[]);
    sub.request(&[]);
    let args = work.worker_args("sleep", &[]);
    for _ in 0..2 {
        let container = sub.allocated();
        sub.launch(&container, &args);
    }
    work.wait_for_reports(2, &sub);

    // While it runs: the secret is private on HDFS too, in a private directory, and alone
    // there.
    let app = sub.application();
    let dir = format!("{}/{app}", staging_root());
    assert_eq!(stat("%a", &dir), "700");
    assert_eq!(stat("%a", &format!("{dir}/secret")), "600");
    let listed = cluster().fs(&["-ls", "-C", &dir]);
    assert_eq!(
        String::from_utf8_lossy(&listed.stdout).trim(),
        format!("{dir}/secret")
    );

    let closed = Instant::now();
    drop(sub.stdin.take());
    let (_, status) = sub.finish();
    let took = closed.elapsed();
    eprintln!("killed in {:.1} s", took.as_secs_f64());
    assert!(took < Duration::from_secs(30), "the kill took {took:?}");
    let diagnostics = check_events(&sub, "KILLED", "KILLED");
    assert!(diagnostics.contains("its stdin ended"), "{diagnostics}");
    assert_eq!(status.code(), Some(1), "{}", sub.context());
    assert!(!exists(&dir), "{dir} is left");
    // The workers' processes are gone with their containers.
    assert_workers_gone(&work);
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_kill_command_kills_the_application() {
    let work = Work::new();
    let mut sub = Submission::start(&work.options("sluice-yarn-kill", &[]));
    sub.registered();
    sub.send_line("{\"command\": \"kill\"}");
    let (_, status) = sub.finish();
    let diagnostics = check_events(&sub, "KILLED", "KILLED");
    assert!(
        diagnostics.contains("a kill command arrived"),
        "{diagnostics}"
    );
    assert_eq!(status.code(), Some(1));
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn sigterm_kills_the_application() {
    let work = Work::new();
    let mut sub = Submission::start(&work.options("sluice-yarn-sigterm", &[]));
    sub.registered();
    let pid = Pid::from_raw(i32::try_from(sub.child.id()).unwrap());
    kill(pid, Signal::SIGTERM).unwrap();
    let (_, status) = sub.finish();
    let diagnostics = check_events(&sub, "KILLED", "KILLED");
    assert!(
        diagnostics.contains("its submitter was stopped"),
        "{diagnostics}"
    );
    // The JVM's status for SIGTERM, after its shutdown hooks ran.
    assert_eq!(status.code(), Some(143), "{}", sub.context());
    let app = sub.application();
    assert!(!exists(&format!("{}/{app}", staging_root())));
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_released_container_runs_nothing_and_a_request_naming_its_host_gets_one() {
    let work = Work::new();
    let mut sub = Submission::start(&work.options("sluice-yarn-release", &[]));
    sub.registered();
    sub.request(&[]);
    let released = sub.allocated();
    let host = sub.event_of("allocated", &released).unwrap()["host"]
        .as_str()
        .unwrap()
        .to_owned();
    sub.send(&json!({"command": "release", "container": released}));
    // Given back: YARN ends it (-100, ABORTED), and a launch in it is refused.
    let ended = sub.ended(&released);
    assert_eq!(ended["exit_status"], "-100", "{}", sub.context());
    sub.launch(&released, &work.worker_args("ok", &[]));
    let refused = sub.wait_for("container_not_started", |e| {
        e["event"] == "container_not_started"
    });
    assert_eq!(refused["container"], released.as_str(), "{refused}");
    assert_eq!(
        refused["diagnostics"], "no such container allocated",
        "{refused}"
    );

    // A request naming a NodeManager's host gets a container there.
    sub.request(&[&host]);
    let placed = sub.allocated();
    assert_eq!(
        sub.event_of("allocated", &placed).unwrap()["host"],
        host.as_str()
    );
    sub.launch(&placed, &work.worker_args("ok", &[]));
    assert_eq!(sub.ended(&placed)["exit_status"], "0", "{}", sub.context());

    sub.finish_with("SUCCEEDED", "1 worker finished");
    let (_, status) = sub.finish();
    assert_eq!(
        check_events(&sub, "FINISHED", "SUCCEEDED"),
        "1 worker finished"
    );
    assert_eq!(status.code(), Some(0), "{}", sub.context());
    // No worker ran in the released container.
    assert!(sub.event_of("container_started", &released).is_none());
    assert_eq!(
        work.reports().into_keys().collect::<Vec<_>>(),
        vec![placed],
        "{}",
        sub.context()
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn bad_command_lines_on_stdin_are_ignored_and_an_unlaunched_container_ends_with_the_application() {
    let work = Work::new();
    let mut sub = Submission::start(&work.options("sluice-yarn-bad-commands", &[]));
    // Before the master registers, a command is ignored (the first heartbeat comes seconds
    // later).
    sub.request(&[]);
    sub.registered();
    let bad = [
        "not json",
        "[1, 2]",
        "{\"command\": \"request\", \"memory_mb\": 128, \"vcores\": 1} trailing",
        "{\"command\": \"bogus\"}",
        "{\"no command\": true}",
        "{\"command\": \"request\", \"memory_mb\": 0, \"vcores\": 1}",
        "{\"command\": \"request\", \"memory_mb\": \"lots\", \"vcores\": 1}",
        "{\"command\": \"request\", \"memory_mb\": 128, \"vcores\": 1, \"nodes\": \"h\"}",
        "{\"command\": \"request\", \"memory_mb\": 128, \"vcores\": 1, \"nodes\": [{}]}",
        "{\"command\": \"launch\", \"args\": []}",
        "{\"command\": \"launch\", \"container\": \"c\", \"args\": [[\"nested\"]]}",
        "{\"command\": \"release\"}",
        "{\"command\": \"finish\", \"final_status\": \"KILLED\"}",
        "{\"command\": \"finish\"}",
        "{\"command\": \"kill\"",
    ];
    for line in bad {
        sub.send_line(line);
    }
    sub.send_line("");
    // The application goes on: a request is followed, and its container, never launched,
    // does not keep the application from finishing.
    sub.request(&[]);
    let container = sub.allocated();
    sub.finish_with("SUCCEEDED", "nothing ran");
    let (_, status) = sub.finish();
    assert_eq!(check_events(&sub, "FINISHED", "SUCCEEDED"), "nothing ran");
    assert_eq!(status.code(), Some(0), "{}", sub.context());
    // One container: the request before the master registered was not followed.
    let allocated: Vec<&Value> = sub
        .events
        .iter()
        .filter(|e| e["event"] == "allocated")
        .collect();
    assert_eq!(allocated.len(), 1, "{}", sub.context());
    assert!(sub.event_of("container_started", &container).is_none());
    assert!(work.reports().is_empty());
    // Each bad line was logged as ignored.
    let stderr = sub.stderr();
    assert!(
        stderr.contains("ignoring a command on stdin (the master has not registered yet)"),
        "{stderr}"
    );
    for line in bad {
        assert!(
            stderr.contains(&format!("): {line}\n")),
            "{line} not logged:\n{stderr}"
        );
    }
    assert_eq!(
        stderr.matches("ignoring a command on stdin").count(),
        bad.len() + 1,
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn bad_command_lines_exit_with_status_2() {
    let work = Work::new();
    let binary = work.binary();
    let binary = binary.to_str().unwrap();
    let secret = work.secret();
    let secret = secret.to_str().unwrap();
    let valid = ["--name", "x", "--binary", binary, "--secret-file", secret];
    let with = |extra: &[&str]| -> Vec<String> {
        valid.iter().chain(extra).map(|s| (*s).to_owned()).collect()
    };
    let mut cases: Vec<(Vec<String>, String)> = vec![
        (vec![], "option --name is required".into()),
        (
            vec!["--name".into(), "x".into(), "--binary".into()],
            "option --binary needs a value".into(),
        ),
        (with(&["--bogus", "1"]), "unknown option --bogus".into()),
        (
            with(&["--name", "y"]),
            "option --name is given twice".into(),
        ),
        (with(&["extra"]), "unexpected argument 'extra'".into()),
        (
            vec![
                "--name".into(),
                "x".into(),
                "--binary".into(),
                "/nonexistent/sluice".into(),
            ],
            "option --binary: /nonexistent/sluice is not a readable file".into(),
        ),
        (
            vec![
                "--name".into(),
                "x".into(),
                "--binary".into(),
                binary.into(),
            ],
            "option --secret-file is required".into(),
        ),
        (
            with(&["--queue="]),
            "option --queue must not be empty".into(),
        ),
        (
            with(&["--staging-root", ""]),
            "option --staging-root must not be empty".into(),
        ),
    ];
    // The options of the workers and of a master's container are not Submit's.
    for (option, value) in [
        ("workers", "2"),
        ("worker-memory-mb", "128"),
        ("worker-vcores", "1"),
        ("worker-arg", "x"),
        ("max-worker-failures", "1"),
        ("am-memory-mb", "512"),
    ] {
        let flag = format!("--{option}");
        cases.push((with(&[&flag, value]), format!("unknown option --{option}")));
    }
    cases.push((
        with(&["--worker-arg=x"]),
        "unknown option --worker-arg".into(),
    ));
    // One JVM per case, a few at a time.
    let outputs: Vec<_> = cases
        .chunks(4)
        .flat_map(|chunk| {
            std::thread::scope(|s| {
                let running: Vec<_> = chunk
                    .iter()
                    .map(|(args, _)| {
                        s.spawn(move || {
                            cluster()
                                .submit()
                                .args(args)
                                .stdin(Stdio::null())
                                .output()
                                .unwrap()
                        })
                    })
                    .collect();
                running
                    .into_iter()
                    .map(|h| h.join().unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for ((args, message), out) in cases.iter().zip(outputs) {
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
        assert_eq!(stdout.lines().count(), 1, "{args:?}: {stdout}");
        let event: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(
            event,
            json!({"event": "error", "message": message}),
            "{args:?}"
        );
        assert!(stderr.contains(message.as_str()), "{args:?}: {stderr}");
    }
    let help = cluster()
        .submit()
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    let usage = String::from_utf8_lossy(&help.stdout);
    assert!(usage.starts_with("usage: "), "{usage}");
    for option in [
        "--name",
        "--queue",
        "--binary",
        "--secret-file",
        "--staging-root",
    ] {
        assert!(usage.contains(option), "{usage}");
    }
    assert!(!usage.contains("--worker"), "{usage}");
}

/// Runs one `ok` stand-in worker in an application staged under `root`, to its end; returns
/// the application's id and Submit's stderr. The worker's report shows the stand-in ran.
fn run_one_worker(work: &Work, root: &str) -> (String, String) {
    let mut sub =
        Submission::start(&work.options("sluice-yarn-staging", &["--staging-root", root]));
    sub.registered();
    sub.request(&[]);
    let container = sub.allocated();
    sub.launch(&container, &work.worker_args("ok", &[]));
    work.wait_for_reports(1, &sub);
    let _ = sub.ended(&container);
    sub.finish_with("SUCCEEDED", "done");
    let (_, status) = sub.finish();
    assert_eq!(status.code(), Some(0), "{}", sub.context());
    assert!(work.reports().contains_key(&container), "{}", sub.context());
    (sub.application(), sub.stderr())
}

/// A binary staged for later applications is reused only from where no one but the user can
/// write: a file of the right name and length that another user owns is replaced (the
/// planted one never runs: it would write no report), and with a staging root others may
/// write to the binary is staged with the application alone and deleted with it.
#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_staged_binary_is_reused_only_from_the_users_own_places() {
    let work = Work::new();
    let hash = sha256_prefix(&work.binary());
    let fs_ok = |args: &[&str]| {
        let out = cluster().fs(args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };

    // Planted: the right name and length, another owner.
    let planted_local = work.dir.path().join("planted");
    let mut planted = b"#!/bin/sh\nexit 3\n".to_vec();
    planted.resize(STAND_IN.len(), b'#');
    fs::write(&planted_local, &planted).unwrap();
    let binary = format!("/staging/planted/bin/sluice-{hash}");
    fs_ok(&["-mkdir", "-p", "/staging/planted/bin"]);
    fs_ok(&["-chmod", "755", "/staging/planted", "/staging/planted/bin"]);
    fs_ok(&["-put", planted_local.to_str().unwrap(), &binary]);
    fs_ok(&["-chmod", "755", &binary]);
    fs_ok(&["-chown", "mallory", &binary]);
    let (_, stderr) = run_one_worker(&work, "/staging/planted");
    assert!(stderr.contains("replacing"), "{stderr}");
    assert_eq!(
        stat("%u %b", &binary),
        format!("{} {}", user(), STAND_IN.len())
    );
    let staged = cluster().fs(&["-cat", &binary]);
    assert_eq!(String::from_utf8_lossy(&staged.stdout), STAND_IN);
    // The user's own upload is reused the next time.
    let (_, stderr) = run_one_worker(&work, "/staging/planted");
    assert!(stderr.contains("reusing"), "{stderr}");

    // A staging root others may write to: nothing kept in it.
    fs_ok(&["-mkdir", "-p", "/staging/open"]);
    fs_ok(&["-chmod", "777", "/staging/open"]);
    let (app, stderr) = run_one_worker(&work, "/staging/open");
    assert!(
        stderr.contains("staged for this application alone")
            && stderr.contains("may be written by others"),
        "{stderr}"
    );
    assert!(!exists(&format!("/staging/open/bin/sluice-{hash}")));
    assert!(!exists(&format!("/staging/open/{app}")));
}
