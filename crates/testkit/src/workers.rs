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
    binary: PathBuf,
    memory: String,
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
            binary: binary.to_path_buf(),
            memory: memory.to_string(),
            children: Vec::new(),
            addrs: Vec::new(),
            scratch: Vec::new(),
            secret,
            logs: Vec::new(),
        };
        for i in 0..n {
            workers.add(&dir.join(format!("scratch-{i}")), &configure);
        }
        workers
    }

    /// Starts one more worker, as [`Workers::start`] does, on `scratch` (which may be another
    /// worker's: they then share it); returns its number.
    ///
    /// # Panics
    /// When the worker does not start or does not say where it listens.
    pub fn add(&mut self, scratch: &Path, configure: impl Fn(&mut Command)) -> usize {
        let i = self.children.len();
        let (child, addr, log) = self.spawn(i, scratch, &configure);
        self.children.push(child);
        self.addrs.push(addr);
        self.scratch.push(scratch.to_path_buf());
        self.logs.push(log);
        i
    }

    /// Kills worker `i` if it runs, and starts a new one in its place: on its scratch
    /// directory, at a new address.
    ///
    /// # Panics
    /// When the new worker does not start or does not say where it listens.
    pub fn restart(&mut self, i: usize, configure: impl Fn(&mut Command)) {
        self.kill(i);
        let scratch = self.scratch[i].clone();
        let (child, addr, log) = self.spawn(i, &scratch, &configure);
        self.children[i] = child;
        self.addrs[i] = addr;
        self.logs[i] = log;
    }

    /// Starts worker number `i` on `scratch`: its process, address and log.
    fn spawn(
        &self,
        i: usize,
        scratch: &Path,
        configure: &dyn Fn(&mut Command),
    ) -> (Child, String, Arc<Mutex<Vec<String>>>) {
        let mut command = Command::new(&self.binary);
        command
            .args(["worker", "--listen", "127.0.0.1:0", "--threads", "2"])
            .args(["--memory", &self.memory])
            .arg("--secret-file")
            .arg(&self.secret)
            .arg("--scratch")
            .arg(scratch)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        configure(&mut command);
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("worker {i} does not start: {e}"));
        let stderr = child.stderr.take();
        // Killed if what follows fails, so that no worker outlives its test.
        let mut guard = KillOnDrop(Some(child));
        let mut stderr = BufReader::new(stderr.unwrap_or_else(|| panic!("worker {i}: no stderr")));
        // The worker says where it listens once it is ready (after anything it removed from
        // its scratch directory); the rest of its log is kept (and shown with a failing
        // test's output) by a thread.
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut addr = None;
        let mut line = String::new();
        while addr.is_none() {
            line.clear();
            if stderr.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("worker {i} did not say where it listens");
            }
            eprintln!("[worker {i}] {}", line.trim_end());
            log.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(line.trim_end().to_string());
            addr = line
                .split("listening on ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .map(str::to_string);
        }
        let kept = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in stderr.lines() {
                let Ok(line) = line else { break };
                eprintln!("[worker {i}] {line}");
                kept.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        let child = guard.0.take().unwrap_or_else(|| panic!("worker {i}: lost"));
        (child, addr.unwrap_or_default(), log)
    }

    /// Worker `i`'s process id.
    pub fn pid(&self, i: usize) -> u32 {
        self.children[i].id()
    }

    /// What worker `i` has logged so far, a line each.
    pub fn log(&self, i: usize) -> Vec<String> {
        self.logs[i]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
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

    /// Sends worker `i` `SIGTERM`, as a service manager stops it, and waits up to `timeout`
    /// for it to exit; its exit status, or `None` if it still runs (it is then killed).
    pub fn terminate(&mut self, i: usize, timeout: Duration) -> Option<std::process::ExitStatus> {
        let pid = self.children[i].id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.children[i].try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill(i);
        None
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
    /// empty; whether they did. A killed worker's directory is not looked at (nothing of it
    /// runs to clean it): [`Workers::restart`] it first, since a worker starting on a scratch
    /// directory removes what killed workers left there.
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

    /// Whether worker `i` logged a line containing `text`.
    pub fn logged(&self, i: usize, text: &str) -> bool {
        let log = self.logs[i].lock().unwrap_or_else(|e| e.into_inner());
        log.iter().any(|l| l.contains(text))
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

/// Kills a worker being started unless its start completes (`.0.take()`).
struct KillOnDrop(Option<Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
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
