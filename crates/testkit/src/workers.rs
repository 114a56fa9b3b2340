//! `sluice worker` processes for tests of cluster mode: on loopback ports the system picks,
//! each with a scratch directory of its own, sharing a secret made by `sluice secret`.

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Workers started for a test, killed (and waited for) when dropped.
pub struct Workers {
    children: Vec<Child>,
    addrs: Vec<String>,
    scratch: Vec<PathBuf>,
    secret: PathBuf,
    logs: Vec<Arc<Mutex<Vec<String>>>>,
}

impl Workers {
    /// Starts `n` workers of the `sluice` binary at `binary` in `dir` (created), each with 2
    /// threads and `memory` (`256MiB`), the secret in `dir/secret` (made unless it is there).
    /// `configure` may add to each worker's command (its environment: the stores' settings).
    ///
    /// # Panics
    /// When a worker does not start or does not say where it listens: the test cannot go on.
    pub fn start(
        binary: &Path,
        dir: &Path,
        n: usize,
        memory: &str,
        configure: impl Fn(&mut Command),
    ) -> Workers {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let secret = dir.join("secret");
        if !secret.exists() {
            let mut made = Command::new(binary);
            made.arg("secret").arg(&secret);
            configure(&mut made);
            let made = made
                .output()
                .unwrap_or_else(|e| panic!("sluice secret: {e}"));
            assert!(
                made.status.success(),
                "sluice secret: {}",
                String::from_utf8_lossy(&made.stderr)
            );
        }
        let mut workers = Workers {
            children: Vec::new(),
            addrs: Vec::new(),
            scratch: Vec::new(),
            secret,
            logs: Vec::new(),
        };
        for i in 0..n {
            let scratch = dir.join(format!("scratch-{i}"));
            let mut command = Command::new(binary);
            command
                .args(["worker", "--listen", "127.0.0.1:0", "--threads", "2"])
                .args(["--memory", memory])
                .arg("--secret-file")
                .arg(&workers.secret)
                .arg("--scratch")
                .arg(&scratch)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            configure(&mut command);
            let mut child = command
                .spawn()
                .unwrap_or_else(|e| panic!("worker {i} does not start: {e}"));
            let stderr = child.stderr.take();
            // Killed with the others, whatever happens next.
            workers.children.push(child);
            let mut stderr =
                BufReader::new(stderr.unwrap_or_else(|| panic!("worker {i}: no stderr")));
            // The worker says where it listens first; the rest of its log is kept (and shown
            // with a failing test's output) by a thread.
            let mut line = String::new();
            let _ = stderr.read_line(&mut line);
            let addr = line
                .split("listening on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("worker {i} did not say where it listens: {line:?}"))
                .to_string();
            let log = Arc::new(Mutex::new(Vec::new()));
            let kept = Arc::clone(&log);
            std::thread::spawn(move || {
                for line in stderr.lines() {
                    let Ok(line) = line else { break };
                    eprintln!("[worker {i}] {line}");
                    kept.lock().unwrap_or_else(|e| e.into_inner()).push(line);
                }
            });
            workers.addrs.push(addr);
            workers.scratch.push(scratch);
            workers.logs.push(log);
        }
        workers
    }

    /// `--cluster workers=... --secret-file FILE`, for a job on these workers.
    pub fn args(&self) -> Vec<String> {
        vec![
            "--cluster".into(),
            format!("workers={}", self.addrs.join(",")),
            "--secret-file".into(),
            self.secret.display().to_string(),
        ]
    }

    /// The workers' addresses, in order.
    pub fn addrs(&self) -> &[String] {
        &self.addrs
    }

    /// The cluster secret's file.
    pub fn secret(&self) -> &Path {
        &self.secret
    }

    /// Each worker's scratch directory.
    pub fn scratch(&self) -> &[PathBuf] {
        &self.scratch
    }

    /// Kills worker `i` (SIGKILL) and waits for it.
    pub fn kill(&mut self, i: usize) {
        let _ = self.children[i].kill();
        let _ = self.children[i].wait();
    }

    /// How many workers are still running.
    pub fn alive(&mut self) -> usize {
        let mut alive = 0;
        for child in &mut self.children {
            if matches!(child.try_wait(), Ok(None)) {
                alive += 1;
            }
        }
        alive
    }

    /// Whether every worker's scratch directory is empty (jobs leave nothing behind).
    pub fn scratch_is_empty(&self) -> bool {
        self.scratch
            .iter()
            .all(|d| fs::read_dir(d).map_or(true, |mut e| e.next().is_none()))
    }

    /// Waits up to `timeout` for the scratch directories of the workers still running to
    /// empty; whether they did.
    pub fn scratch_empties(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let mut empty = true;
            for (child, dir) in self.children.iter_mut().zip(&self.scratch) {
                let running = matches!(child.try_wait(), Ok(None));
                if running && fs::read_dir(dir).is_ok_and(|mut e| e.next().is_some()) {
                    empty = false;
                }
            }
            if empty || Instant::now() > deadline {
                return empty;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The shuffle address worker `i` logged for its latest job.
    pub fn shuffle_addr(&self, i: usize) -> Option<String> {
        let log = self.logs[i].lock().unwrap_or_else(|e| e.into_inner());
        log.iter()
            .rev()
            .find_map(|l| l.split("(shuffle at ").nth(1))
            .map(|rest| rest.trim_end_matches(')').to_string())
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
