//! Running the `sluice` binary from a scratch directory and reading what it left.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub(crate) const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// A run taking longer than this is killed and fails its test (runs take a second or two).
pub(crate) const DEADLINE: Duration = Duration::from_secs(120);

/// A test's scratch directory; sluice runs in it with `TMPDIR` pointing to it, so its own
/// temporary files can be inspected and nothing is left in the system's.
pub(crate) struct Scratch {
    pub(crate) dir: tempfile::TempDir,
}

/// What a finished run said.
#[derive(Debug)]
pub(crate) struct Finished {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Finished {
    /// Panics with the run's output unless it exited 0.
    pub(crate) fn assert_success(&self) -> &Self {
        assert_eq!(self.code, Some(0), "{self:#?}");
        self
    }

    /// Panics unless stderr contains `text`.
    pub(crate) fn assert_says(&self, text: &str) -> &Self {
        assert!(
            self.stderr.contains(text),
            "expected {text:?} in stderr:\n{}",
            self.stderr
        );
        self
    }
}

impl Scratch {
    pub(crate) fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// The absolute path of `name` in the scratch directory.
    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The absolute path of `name` as a string (temporary paths have no spaces or quotes).
    pub(crate) fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }

    /// Writes `content` to `name`, creating its directory; returns its absolute path.
    pub(crate) fn write(&self, name: &str, content: &str) -> String {
        let path = self.path(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        self.arg(name)
    }

    /// Writes an executable script; returns its absolute path.
    pub(crate) fn script(&self, name: &str, body: &str) -> String {
        let path = self.write(name, body);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// A command for sluice in this directory, with `TMPDIR` here and no standard input.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(SLUICE);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env("TMPDIR", self.dir.path())
            .env_remove("SLUICE_PROGRESS")
            .stdin(Stdio::null());
        // Tests interrupt it with SIGINT: it must not start with SIGINT ignored.
        sluice_testkit::with_default_interrupts(&mut command);
        command
    }

    /// Runs `sluice ARGS` to its end (killed after [`DEADLINE`]).
    pub(crate) fn run(&self, args: &[&str]) -> Finished {
        finish(self.command(args))
    }

    /// The entries of the scratch directory whose names start with `prefix`.
    pub(crate) fn entries(&self, prefix: &str) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with(prefix))
            .collect();
        names.sort();
        names
    }
}

/// Runs `command` with piped output to its end, killing it after [`DEADLINE`].
pub(crate) fn finish(mut command: Command) -> Finished {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("sluice did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Finished {
        code: status.code(),
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// The concatenated part files (`part-*`, by name) of an output directory that has `_SUCCESS`.
pub(crate) fn output_text(dir: &Path) -> String {
    assert!(
        dir.join("_SUCCESS").is_file(),
        "{} has no _SUCCESS",
        dir.display()
    );
    let mut parts: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("part-")
        })
        .collect();
    parts.sort();
    parts
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect()
}
