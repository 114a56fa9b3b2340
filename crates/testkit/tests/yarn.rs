//! sluice's YARN submitter (`yarn/`, built into `target/yarn/sluice-yarn.jar`) against a real
//! YARN cluster: `Submit` stages the files and submits the application, `AppMaster` runs the
//! workers in containers. The workers are a stand-in `sluice` script that writes down what it
//! sees (its arguments, the files it was given) and then succeeds, fails or sleeps as told.
//!
//! One cluster serves every test of this file (it starts in about 10 s and is never stopped:
//! it halts when the test process ends). Needs `make yarn`; ignored, with the
//! reason, without the `test-yarn` feature.

// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
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
use serde_json::Value;
use sluice_testkit::MiniYarn;

/// The longest an application of these tests may take from submission to its end (they take
/// 5 to 15 s; the machine may be busy with other tests).
const APP_TIMEOUT: Duration = Duration::from_secs(180);

/// The stand-in for the sluice binary. Run by a container as `./sluice worker --connect DIR
/// --mode MODE ... --secret-file secret`, it writes what it sees into `DIR/<container id>`
/// (the Java side passes the arguments through without reading them), then, by MODE: `ok`
/// exits 0, `fail` exits 1, `fail-once` exits 1 in the first container to get there and 0 in
/// the others, `sleep` sleeps (until the container is killed).
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

    fn reports_dir(&self) -> PathBuf {
        self.dir.path().join("reports")
    }

    /// Submit's options for `workers` stand-ins in `mode`, then `extra`.
    fn args(&self, name: &str, workers: u32, mode: &str, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = [
            "--name",
            name,
            "--binary",
            self.binary().to_str().unwrap(),
            "--secret-file",
            self.dir.path().join("secret").to_str().unwrap(),
            "--workers",
            &workers.to_string(),
            "--worker-memory-mb",
            "128",
            "--worker-arg",
            "--connect",
            "--worker-arg",
            self.reports_dir().to_str().unwrap(),
            "--worker-arg",
            "--mode",
            "--worker-arg",
            mode,
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
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

/// A running `Submit`: its events as they come, its stdin to close or write to.
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

    /// Reads events until one satisfies `wanted`, which it returns.
    fn wait_for(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + APP_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let event: Value = serde_json::from_str(&line)
                        .unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}\n{}", self.context()));
                    self.events.push(event.clone());
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

/// Checks the events of an application that ended: submitted first, then states in the order
/// YARN goes through them, ending with `state`; returns the finished event's diagnostics.
fn check_events(sub: &Submission, state: &str, final_status: &str) -> String {
    let app = sub.application();
    assert!(
        app.starts_with("application_") && app.split('_').count() == 3,
        "{app}"
    );
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
    // The master's container events (relayed as they come) are checked where they matter;
    // between them, the application's states.
    let states: Vec<&str> = sub.events[1..sub.events.len() - 1]
        .iter()
        .filter(|e| {
            !e["event"]
                .as_str()
                .is_some_and(|kind| kind.starts_with("container_"))
        })
        .map(|e| {
            assert_eq!(e["event"], "state", "{}", sub.context());
            assert_eq!(e.as_object().unwrap().len(), 2, "{e}");
            e["state"].as_str().unwrap()
        })
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

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn two_workers_run_and_the_application_succeeds() {
    let work = Work::new();
    cluster();
    let started = Instant::now();
    let mut sub = Submission::start(&work.args(
        "sluice-yarn-test",
        2,
        "ok",
        &["--worker-arg", TRICKY_ARG, "--worker-arg", ""],
    ));
    let (finished, status) = sub.finish();
    eprintln!(
        "two workers: {:.1} s from submission to the end",
        started.elapsed().as_secs_f64()
    );
    eprintln!("Submit's stderr:\n{}", sub.stderr.lock().unwrap());
    let diagnostics = check_events(&sub, "FINISHED", "SUCCEEDED");
    assert!(sub.events.iter().any(|e| e["state"] == "RUNNING"));
    assert_eq!(diagnostics, "2 workers finished");
    assert_eq!(finished.as_object().unwrap().len(), 4, "{finished}");
    assert_eq!(status.code(), Some(0), "{}", sub.context());

    // Two containers ran the binary with the arguments, unchanged, then the secret file; the
    // NodeManagers localized the private secret as 0500 and the public binary as 0555
    // (YARN's modes for localized files, whatever their mode on HDFS).
    let reports = work.reports();
    assert_eq!(reports.len(), 2, "{reports:?}\n{}", sub.context());
    let expected_args = format!(
        "[worker] [--connect] [{}] [--mode] [ok] [{TRICKY_ARG}] [] [--secret-file] [secret]",
        work.reports_dir().display()
    );
    let app = sub.application();
    for (container, report) in &reports {
        assert!(
            container.contains(&app["application_".len()..]),
            "{container}"
        );
        assert_eq!(report["args"], expected_args);
        assert_eq!(report["secret-mode"], "500");
        assert_eq!(report["sluice-mode"], "555");
        assert_eq!(report["secret"], SECRET);
        assert!(!report["host"].is_empty());
    }

    // The application's staging directory is gone; the binary stays for the next one, under
    // its hash, world-readable like the directories above it (so that it can be PUBLIC).
    let root = staging_root();
    assert!(!exists(&format!("{root}/{app}")), "{root}/{app} is left");
    let binary = format!("{root}/bin/sluice-{}", sha256_prefix(&work.binary()));
    assert_eq!(stat("%a %b", &binary), format!("755 {}", STAND_IN.len()));
    assert_eq!(stat("%a", &format!("{root}/bin")), "755");
    assert_eq!(stat("%a", &root), "755");
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_failed_worker_is_replaced() {
    let work = Work::new();
    let mut sub = Submission::start(&work.args("sluice-yarn-fail-once", 2, "fail-once", &[]));
    let (_, status) = sub.finish();
    let diagnostics = check_events(&sub, "FINISHED", "SUCCEEDED");
    assert_eq!(diagnostics, "2 workers finished");
    assert_eq!(status.code(), Some(0), "{}", sub.context());
    // The master's word on the failure reached the submitter's output.
    assert!(
        sub.events.iter().any(|e| e["event"] == "container_ended"
            && e["exit_status"] == "1"
            && e["replaced"] == "true"
            && e["diagnostics"]
                .as_str()
                .is_some_and(|d| d.contains("the first worker fails"))),
        "{}",
        sub.context()
    );
    // The first failed, a third replaced it.
    assert!(work.reports_dir().join("failed-once").is_dir());
    assert_eq!(work.reports().len(), 3, "{}", sub.context());
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn too_many_failures_fail_the_application() {
    let work = Work::new();
    let mut sub = Submission::start(&work.args(
        "sluice-yarn-fail",
        2,
        "fail",
        &[
            "--max-worker-failures",
            "1",
            "--staging-root",
            "/staging/failures",
        ],
    ));
    let (_, status) = sub.finish();
    let diagnostics = check_events(&sub, "FINISHED", "FAILED");
    eprintln!("diagnostics: {diagnostics}");
    assert_eq!(status.code(), Some(1), "{}", sub.context());
    assert!(
        diagnostics.starts_with("2 worker containers failed, more than --max-worker-failures 1"),
        "{diagnostics}"
    );
    assert_eq!(
        diagnostics.matches("exited with status 1").count(),
        2,
        "{diagnostics}"
    );
    // The end of a failed worker's stderr comes along.
    assert!(
        diagnostics.contains("stand-in worker failing on purpose"),
        "{diagnostics}"
    );
    // Two failed at once, and maybe a replacement started before the second failed: never
    // more than workers + allowed failures.
    let ran = work.reports().len();
    assert!((2..=3).contains(&ran), "{ran} workers ran");
    let app = sub.application();
    assert!(!exists(&format!("/staging/failures/{app}")));
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn closing_stdin_kills_the_application() {
    let work = Work::new();
    let mut sub = Submission::start(&work.args("sluice-yarn-sleep", 2, "sleep", &[]));
    sub.wait_for("RUNNING", |e| e["state"] == "RUNNING");
    work.wait_for_reports(2, &sub);

    // While it runs: the secret is private on HDFS too, in a private directory.
    let app = sub.application();
    let dir = format!("{}/{app}", staging_root());
    assert_eq!(stat("%a", &dir), "700");
    assert_eq!(stat("%a", &format!("{dir}/secret")), "600");

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
fn a_kill_command_kills_the_application() {
    let work = Work::new();
    let mut sub = Submission::start(&work.args("sluice-yarn-kill", 1, "sleep", &[]));
    sub.wait_for("RUNNING", |e| e["state"] == "RUNNING");
    let stdin = sub.stdin.as_mut().unwrap();
    stdin.write_all(b"{\"command\": \"kill\"}\n").unwrap();
    stdin.flush().unwrap();
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
    let mut sub = Submission::start(&work.args("sluice-yarn-sigterm", 1, "sleep", &[]));
    sub.wait_for("RUNNING", |e| e["state"] == "RUNNING");
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
fn bad_command_lines_exit_with_status_2() {
    let work = Work::new();
    let binary = work.binary();
    let binary = binary.to_str().unwrap();
    let secret = work.dir.path().join("secret");
    let secret = secret.to_str().unwrap();
    let valid = [
        "--name",
        "x",
        "--binary",
        binary,
        "--secret-file",
        secret,
        "--workers",
        "1",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        valid.iter().chain(extra).map(|s| (*s).to_owned()).collect()
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![], "option --name is required"),
        (
            vec!["--name".into(), "x".into(), "--binary".into()],
            "option --binary needs a value",
        ),
        (with(&["--bogus", "1"]), "unknown option --bogus"),
        (with(&["--workers", "2"]), "option --workers is given twice"),
        (
            with(&["--worker-vcores=0"]),
            "option --worker-vcores must be at least 1, not 0",
        ),
        (
            with(&["--max-worker-failures", "many"]),
            "option --max-worker-failures takes a whole number, not 'many'",
        ),
        (with(&["extra"]), "unexpected argument 'extra'"),
        (
            vec![
                "--name".into(),
                "x".into(),
                "--binary".into(),
                "/nonexistent/sluice".into(),
            ],
            "option --binary: /nonexistent/sluice is not a readable file",
        ),
    ];
    for (args, message) in cases {
        let out = cluster()
            .submit()
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stdout}{stderr}");
        let event: Value = serde_json::from_str(stdout.trim()).unwrap();
        assert_eq!(
            event,
            serde_json::json!({"event": "error", "message": message}),
            "{args:?}"
        );
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    let help = cluster()
        .submit()
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).starts_with("usage: "));
}
