//! A server child process: started in its own process group with a pipe on its stdin, waited
//! for until it prints its `READY` line, and killed with its whole group when dropped.

use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tempfile::TempDir;

use crate::stores_target;

/// The variables that would send a child's requests to 127.0.0.1 through a proxy.
const PROXY_VARS: [&str; 6] = [
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
];

/// Removes the proxy variables from `cmd`'s environment: everything the harness talks to is on
/// 127.0.0.1.
pub fn without_proxies(cmd: &mut Command) -> &mut Command {
    for var in PROXY_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// Starts `cmd` with `SIGINT` and `SIGHUP` at their default dispositions, whatever this test
/// process inherited: run from a script's background job (or under `nohup`) a test ignores
/// them, its children would too, and sluice keeps ignoring what it started with ignored, as
/// `nohup` wants. A test that interrupts sluice must start it this way.
pub fn with_default_interrupts(cmd: &mut Command) -> &mut Command {
    use nix::sys::signal::{signal, SigHandler};
    // SAFETY: the closure runs in the child between fork and exec, where only async-signal-safe
    // calls may be made: `signal` (sigaction) is one, and it allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            for sig in [Signal::SIGINT, Signal::SIGHUP] {
                signal(sig, SigHandler::SigDfl).map_err(std::io::Error::from)?;
            }
            Ok(())
        })
    }
}

/// Makes a directory of its own for a server, `target/stores/run/<prefix>XXXXXX`, first
/// removing those that test processes which died without cleaning up left there.
pub(crate) fn server_dir(prefix: &str) -> Result<TempDir, String> {
    server_dir_in(&stores_target(), prefix)
}

/// [`server_dir`] in another harness's directory: `<target>/run/<prefix>XXXXXX`.
pub(crate) fn server_dir_in(target: &Path, prefix: &str) -> Result<TempDir, String> {
    let runs = target.join("run");
    fs::create_dir_all(&runs).map_err(|e| format!("cannot create {}: {e}", runs.display()))?;
    remove_orphans(&runs);
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&runs)
        .map_err(|e| format!("cannot create a directory in {}: {e}", runs.display()))?;
    // The owner, for `remove_orphans` of later runs.
    fs::write(dir.path().join(OWNER_FILE), std::process::id().to_string())
        .map_err(|e| format!("cannot write in {}: {e}", dir.path().display()))?;
    Ok(dir)
}

/// The file naming the process that made a server's directory.
const OWNER_FILE: &str = "owner.pid";

/// Removes the server directories in `runs` whose owner process is gone (killed before its
/// servers were dropped; the servers themselves stopped with it). A directory without an owner
/// file is being made: it is left alone.
fn remove_orphans(runs: &Path) {
    let Ok(entries) = fs::read_dir(runs) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(owner) = fs::read_to_string(entry.path().join(OWNER_FILE)) else {
            continue;
        };
        let Ok(pid) = owner.trim().parse::<i32>() else {
            continue;
        };
        if matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH)) {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// A running server. Dropping it closes its stdin, kills its process group, reaps it and
/// removes its directory.
pub(crate) struct ServerProcess {
    // Field order is drop order: the directory goes after the process is dead.
    child: Child,
    stdin: Option<ChildStdin>,
    dir: TempDir,
    /// The logs named when something goes wrong, in `dir`.
    logs: Vec<PathBuf>,
    what: &'static str,
}

impl ServerProcess {
    /// Starts `cmd` (which must not have set stdin, stdout or stderr) with stderr going to
    /// `dir/stderr.log`, and waits up to `timeout` for a stdout line starting with `READY `.
    /// Returns the server and the rest of that line. A line that does not start with `READY`
    /// is handed to `explain`, which turns it into the error returned (e.g. `MISSING moto`).
    pub(crate) fn start(
        what: &'static str,
        mut cmd: Command,
        dir: TempDir,
        extra_logs: &[&str],
        timeout: Duration,
        explain: impl Fn(&str) -> Option<String>,
    ) -> Result<(ServerProcess, String), String> {
        let stderr_path = dir.path().join("stderr.log");
        let stderr = File::create(&stderr_path)
            .map_err(|e| format!("{what}: cannot create {}: {e}", stderr_path.display()))?;
        let program = cmd.get_program().to_string_lossy().into_owned();
        let mut child = without_proxies(&mut cmd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("{what}: cannot start {program}: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut logs: Vec<PathBuf> = extra_logs.iter().map(|l| dir.path().join(l)).collect();
        logs.push(stderr_path);
        let mut server = ServerProcess {
            child,
            stdin,
            dir,
            logs,
            what,
        };
        let Some(stdout) = stdout else {
            return Err(format!("{what}: no pipe on the server's stdout"));
        };

        // The first line comes through the channel; the rest of stdout (nothing, if the
        // server keeps its word) is drained so that the server can never block on it.
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(format!("{what} stdout"))
            .spawn(move || {
                let mut lines = BufReader::new(stdout).lines();
                let first = lines.next().and_then(Result::ok);
                let _ = tx.send(first);
                for _ in lines.by_ref() {}
            })
            .map_err(|e| format!("{what}: cannot start a thread: {e}"))?;

        let started = Instant::now();
        match rx.recv_timeout(timeout) {
            Ok(Some(line)) => {
                if let Some(rest) = line.strip_prefix("READY ") {
                    return Ok((server, rest.trim().to_owned()));
                }
                if let Some(message) = explain(&line) {
                    return Err(message);
                }
                Err(server.failure(&format!("printed {line:?} instead of READY")))
            }
            Ok(None) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = server
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string());
                Err(server.failure(&format!("exited before it was ready ({status})")))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => Err(server.failure(&format!(
                "was not ready after {:.0} s",
                started.elapsed().as_secs_f64()
            ))),
        }
    }

    /// The server's own directory.
    pub(crate) fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// An error message: what went wrong, then the end of each log.
    fn failure(&self, what_happened: &str) -> String {
        let mut message = format!("{} {what_happened}", self.what);
        for log in &self.logs {
            message.push_str(&format!("\n--- last lines of {} ---\n", log.display()));
            message.push_str(&tail(log, 40));
        }
        message
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Closing stdin alone makes the server stop; the kill makes sure of it at once, and
        // takes any process it started along (same group).
        drop(self.stdin.take());
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
        let _ = self.child.wait();
    }
}

/// The last `n` lines of the file at `path`, or why it cannot be read.
fn tail(path: &Path, n: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let mut out = lines[lines.len().saturating_sub(n)..].join("\n");
            out.push('\n');
            out
        }
        Err(e) => format!("(cannot read it: {e})\n"),
    }
}
