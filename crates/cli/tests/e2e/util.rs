//! Helpers shared by every e2e module: running the `sluice` binary and the independent Python
//! references, comparing output directories byte for byte, reading `--report` files, and
//! checking that a run left no debris (temporary or spill directories) behind.

use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The binary under test.
pub(crate) const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// The four built-in jobs, by their command-line names.
pub(crate) const JOBS: [&str; 4] = ["wordcount", "grep", "sort", "invertedindex"];

/// What a finished process said.
pub(crate) struct Outcome {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    /// The exit code (`None` if killed by a signal).
    pub(crate) fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Panics with both streams unless the process exited with `code`.
    pub(crate) fn assert_code(&self, code: i32, what: &str) -> &Self {
        assert_eq!(
            self.code(),
            Some(code),
            "{what}: expected exit {code}\n--- stdout\n{}\n--- stderr\n{}",
            self.stdout,
            self.stderr
        );
        self
    }
}

fn run_command(cmd: &mut Command, what: &str) -> Outcome {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    Outcome {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `sluice ARGS...` (in `cwd` if given) and returns what it did, whatever the exit code.
pub(crate) fn sluice<S: AsRef<OsStr>>(args: &[S], cwd: Option<&Path>) -> Outcome {
    let mut cmd = Command::new(SLUICE);
    cmd.args(args);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    run_command(&mut cmd, "sluice")
}

/// Builds a `sluice run JOB ...` command line.
#[derive(Clone)]
pub(crate) struct JobRun {
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
}

impl JobRun {
    /// `sluice run JOB --quiet`.
    pub(crate) fn new(job: &str) -> JobRun {
        JobRun {
            args: vec!["run".into(), job.into(), "--quiet".into()],
            cwd: None,
        }
    }

    /// Adds one `--input` argument.
    pub(crate) fn input(mut self, path: impl AsRef<OsStr>) -> JobRun {
        self.args.push("--input".into());
        self.args.push(path.as_ref().to_owned());
        self
    }

    /// Sets `--output`.
    pub(crate) fn output(mut self, path: impl AsRef<OsStr>) -> JobRun {
        self.args.push("--output".into());
        self.args.push(path.as_ref().to_owned());
        self
    }

    /// Adds raw arguments.
    pub(crate) fn args<S: AsRef<OsStr>>(mut self, args: &[S]) -> JobRun {
        self.args.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Runs in this working directory.
    pub(crate) fn cwd(mut self, dir: &Path) -> JobRun {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    /// The command line, for messages.
    pub(crate) fn describe(&self) -> String {
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        format!("sluice {}", args.join(" "))
    }

    /// Runs it, whatever the outcome.
    pub(crate) fn run(&self) -> Outcome {
        sluice(&self.args, self.cwd.as_deref())
    }

    /// Runs it and asserts success.
    pub(crate) fn run_ok(&self) -> Outcome {
        let out = self.run();
        out.assert_code(0, &self.describe());
        out
    }

    /// Runs it under `/usr/bin/time -f %M` and returns (outcome, peak RSS in bytes), or `None`
    /// for the RSS when `/usr/bin/time` is not available.
    pub(crate) fn run_timed(&self, scratch: &Path) -> (Outcome, Option<u64>) {
        let time = Path::new("/usr/bin/time");
        if !time.exists() {
            return (self.run(), None);
        }
        let rss_file = scratch.join("rss.txt");
        let mut cmd = Command::new(time);
        cmd.arg("-f").arg("%M").arg("-o").arg(&rss_file).arg(SLUICE);
        cmd.args(&self.args);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let out = run_command(&mut cmd, "/usr/bin/time sluice");
        let text = fs::read_to_string(&rss_file).unwrap_or_default();
        // The last line holds %M (earlier lines may say "Command exited with non-zero status").
        let kib = text
            .lines()
            .rev()
            .find_map(|l| l.trim().parse::<u64>().ok());
        (out, kib.map(|k| k * 1024))
    }
}

/// Builds a run of one of the Python references in `tests/reference/`.
pub(crate) struct Reference {
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
}

impl Reference {
    /// `python3 tests/reference/SCRIPT.py --out OUT`.
    pub(crate) fn new(script: &str, out: &Path) -> Reference {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/reference")
            .join(format!("{script}.py"));
        Reference {
            args: vec![path.into(), "--out".into(), out.into()],
            cwd: None,
        }
    }

    /// Adds raw arguments (`--reducers 3`, `--pattern P`, `--raw`, ...).
    pub(crate) fn args<S: AsRef<OsStr>>(mut self, args: &[S]) -> Reference {
        self.args.extend(args.iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Adds an input argument (positional).
    pub(crate) fn input(mut self, path: impl AsRef<OsStr>) -> Reference {
        self.args.push(path.as_ref().to_owned());
        self
    }

    /// Runs in this working directory.
    pub(crate) fn cwd(mut self, dir: &Path) -> Reference {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    /// Runs the reference, asserting success.
    pub(crate) fn run(&self) {
        let mut cmd = Command::new("python3");
        // No `__pycache__` in the source tree.
        cmd.env("PYTHONDONTWRITEBYTECODE", "1").args(&self.args);
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let out = run_command(&mut cmd, "python3 reference");
        let args: Vec<_> = self.args.iter().map(|a| a.to_string_lossy()).collect();
        out.assert_code(0, &format!("python3 {}", args.join(" ")));
    }

    /// Runs the reference with `--stats` and returns the JSON it wrote.
    pub(crate) fn run_with_stats(self, stats: &Path) -> serde_json::Value {
        self.args(&[OsStr::new("--stats"), stats.as_os_str()]).run();
        serde_json::from_slice(&fs::read(stats).unwrap()).unwrap()
    }
}

/// Names of the entries of a directory, sorted.
pub(crate) fn list_dir(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A line of `data` (around byte `at`), shortened for a message.
fn line_around(data: &[u8], at: usize) -> String {
    let at = at.min(data.len());
    let start = data[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    let end = data[at..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(data.len(), |p| at + p);
    let line = &data[start..end];
    let shown = &line[..line.len().min(160)];
    let suffix = if line.len() > 160 { "..." } else { "" };
    format!("{:?}{suffix}", String::from_utf8_lossy(shown))
}

/// Describes the first difference between two byte strings (empty if equal).
pub(crate) fn first_difference(actual: &[u8], expected: &[u8]) -> String {
    if actual == expected {
        return String::new();
    }
    let at = actual
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(actual.len().min(expected.len()));
    let line_no = expected[..at.min(expected.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1;
    let mut msg = String::new();
    let _ = write!(
        msg,
        "sizes actual={} expected={}; first difference at byte {at} (line {line_no})\n  actual:   {}\n  expected: {}",
        actual.len(),
        expected.len(),
        line_around(actual, at),
        line_around(expected, at)
    );
    msg
}

/// Asserts that `actual` (a sluice output directory) holds exactly the part files of `expected`
/// (written by a reference) plus an empty `_SUCCESS`, each part identical byte for byte.
pub(crate) fn assert_same_output(actual: &Path, expected: &Path, what: &str) {
    let mut want = list_dir(expected);
    want.push("_SUCCESS".to_string());
    want.sort();
    let got = list_dir(actual);
    assert_eq!(got, want, "{what}: files of {}", actual.display());
    assert_eq!(
        fs::metadata(actual.join("_SUCCESS")).unwrap().len(),
        0,
        "{what}: _SUCCESS must be empty"
    );
    for name in list_dir(expected) {
        let a = fs::read(actual.join(&name)).unwrap();
        let e = fs::read(expected.join(&name)).unwrap();
        assert!(
            a == e,
            "{what}: {name} differs from the reference: {}",
            first_difference(&a, &e)
        );
    }
}

/// Asserts `dir` holds no temporary output (`.NAME.sluice-tmp-*`) or spill (`.sluice-spill-*`)
/// directories: a run, failed or not, must clean up after itself.
pub(crate) fn assert_no_debris(dir: &Path) {
    for name in list_dir(dir) {
        assert!(
            !name.contains(".sluice-tmp-") && !name.starts_with(".sluice-spill-"),
            "leftover {name} in {}",
            dir.display()
        );
    }
}

/// `sluice gen text --size SIZE --files FILES --seed SEED --output DIR`.
pub(crate) fn gen_text(dir: &Path, size: &str, files: usize, seed: u64) {
    let files = files.to_string();
    let seed = seed.to_string();
    let args = [
        "gen", "text", "--quiet", "--size", size, "--files", &files, "--seed", &seed, "--output",
    ];
    let mut all: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
    all.push(dir.as_os_str());
    sluice(&all, None).assert_code(0, "sluice gen text");
}

/// Reads a `--report` JSON file.
pub(crate) fn read_report(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&fs::read(path).unwrap()).unwrap()
}

/// A counter of a report.
pub(crate) fn counter(report: &serde_json::Value, name: &str) -> u64 {
    report["counters"][name]
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {name} in report {report}"))
}

/// A top-level number of a report.
pub(crate) fn report_u64(report: &serde_json::Value, name: &str) -> u64 {
    report[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name} in report {report}"))
}

/// Whether the tests run as root (then permissions do not stop reading).
pub(crate) fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// What [`Case::check`] learnt.
pub(crate) struct Checked {
    /// The engine's `--report`.
    pub(crate) report: serde_json::Value,
    /// The reference's `--stats`.
    pub(crate) stats: serde_json::Value,
    /// Peak RSS of the engine in bytes, if measured.
    pub(crate) measured_rss: Option<u64>,
}

/// One comparison of the engine against its reference.
pub(crate) struct Case {
    /// Job name (`wordcount`, `grep`, `sort`, `invertedindex`).
    pub(crate) job: &'static str,
    /// `--input` arguments, spelled as both programs get them.
    pub(crate) inputs: Vec<OsString>,
    /// `--reducers`.
    pub(crate) reducers: usize,
    /// Arguments both programs take besides inputs and reducers (`--pattern`, `--group`).
    pub(crate) shared: Vec<String>,
    /// Engine-only arguments (`--threads`, `--split-size`, `--memory`, ...).
    pub(crate) engine: Vec<String>,
    /// Working directory of both programs (for relative input spellings).
    pub(crate) cwd: Option<PathBuf>,
    /// Pass `--raw` to the reference (it reads plain twins of compressed files).
    pub(crate) raw_reference: bool,
    /// Run the engine under `/usr/bin/time` to measure its peak RSS.
    pub(crate) measure_rss: bool,
    /// Inputs of the reference when they differ from the engine's.
    pub(crate) reference_inputs: Option<Vec<OsString>>,
    /// Working directory of the reference when it differs from the engine's.
    pub(crate) reference_cwd: Option<PathBuf>,
}

impl Case {
    /// A case with one reducer, default engine settings.
    pub(crate) fn new(job: &'static str, inputs: &[&Path]) -> Case {
        Case {
            job,
            inputs: inputs.iter().map(|p| p.as_os_str().to_owned()).collect(),
            reducers: 1,
            shared: if job == "grep" {
                vec!["--pattern".into(), "[a-z]+ing".into()]
            } else {
                Vec::new()
            },
            engine: Vec::new(),
            cwd: None,
            raw_reference: false,
            measure_rss: false,
            reference_inputs: None,
            reference_cwd: None,
        }
    }

    /// Sets `--reducers`.
    pub(crate) fn reducers(mut self, n: usize) -> Case {
        self.reducers = n;
        self
    }

    /// Replaces the shared arguments.
    pub(crate) fn shared(mut self, args: &[&str]) -> Case {
        self.shared = args.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Adds engine-only arguments.
    pub(crate) fn engine(mut self, args: &[&str]) -> Case {
        self.engine.extend(args.iter().map(|s| s.to_string()));
        self
    }

    /// Runs both programs in `dir`.
    pub(crate) fn cwd(mut self, dir: &Path) -> Case {
        self.cwd = Some(dir.to_path_buf());
        self
    }

    /// Gives the reference other input arguments (e.g. without a duplicate).
    pub(crate) fn reference_inputs<S: AsRef<OsStr>>(mut self, inputs: &[S]) -> Case {
        self.reference_inputs = Some(inputs.iter().map(|s| s.as_ref().to_owned()).collect());
        self
    }

    /// Runs the reference in another working directory (e.g. holding plain twins under the
    /// same relative names).
    pub(crate) fn reference_cwd(mut self, dir: &Path) -> Case {
        self.reference_cwd = Some(dir.to_path_buf());
        self
    }

    /// Measures the engine's peak RSS from outside (see [`JobRun::run_timed`]).
    pub(crate) fn measure_rss(mut self) -> Case {
        self.measure_rss = true;
        self
    }

    /// The reference gets `--raw`: it reads plain twins of the engine's compressed inputs.
    pub(crate) fn raw_reference(mut self) -> Case {
        self.raw_reference = true;
        self
    }

    /// Runs the engine into `scratch/NAME-out` and the reference into `scratch/NAME-ref`,
    /// asserts identical output and no debris, and returns what both said.
    pub(crate) fn check(&self, scratch: &Path, name: &str) -> Checked {
        let out = scratch.join(format!("{name}-out"));
        let expected = scratch.join(format!("{name}-ref"));
        let report = scratch.join(format!("{name}-report.json"));
        let stats = scratch.join(format!("{name}-stats.json"));
        let reducers = self.reducers.to_string();

        let mut run = JobRun::new(self.job)
            .output(&out)
            .args(&["--reducers", &reducers])
            .args(&self.shared)
            .args(&self.engine)
            .args(&[OsStr::new("--report"), report.as_os_str()]);
        for input in &self.inputs {
            run = run.input(input);
        }
        if let Some(dir) = &self.cwd {
            run = run.cwd(dir);
        }
        let what = format!("{name}: {}", run.describe());
        let (outcome, measured_rss) = if self.measure_rss {
            run.run_timed(scratch)
        } else {
            (run.run(), None)
        };
        outcome.assert_code(0, &what);

        let mut reference = Reference::new(self.job, &expected)
            .args(&["--reducers", &reducers])
            .args(&self.shared);
        if self.raw_reference {
            reference = reference.args(&["--raw"]);
        }
        for input in self.reference_inputs.as_ref().unwrap_or(&self.inputs) {
            reference = reference.input(input);
        }
        if let Some(dir) = self.reference_cwd.as_ref().or(self.cwd.as_ref()) {
            reference = reference.cwd(dir);
        }
        let stats = reference.run_with_stats(&stats);
        let report = read_report(&report);

        assert_same_output(&out, &expected, &what);
        assert_no_debris(scratch);
        // Keep the scratch directory small: outputs can be large.
        fs::remove_dir_all(&out).unwrap();
        fs::remove_dir_all(&expected).unwrap();
        Checked {
            report,
            stats,
            measured_rss,
        }
    }
}

/// Asserts a failed job: exit 1, `sluice: error:` with every `needle` on stderr, no output.
pub(crate) fn assert_job_failed(out: &Outcome, output: &Path, needles: &[&str], what: &str) {
    out.assert_code(1, what);
    assert!(
        out.stderr.starts_with("sluice: error:"),
        "{what}: stderr should start with `sluice: error:`: {}",
        out.stderr
    );
    for needle in needles {
        assert!(
            out.stderr.contains(needle),
            "{what}: stderr should mention {needle:?}: {}",
            out.stderr
        );
    }
    assert!(
        !output.exists(),
        "{what}: output {} exists",
        output.display()
    );
    if let Some(parent) = output.parent().filter(|p| p.exists()) {
        assert_no_debris(parent);
    }
}

/// Unmounts a tmpfs when dropped (even if the test panics).
pub(crate) struct Mount(pub(crate) PathBuf);

impl Mount {
    /// Mounts a tmpfs of `size` at `dir`; the tests that call it need root (the `test-root`
    /// feature), and fail if the mount is refused.
    pub(crate) fn tmpfs(dir: &Path, size: &str) -> Mount {
        Mount::with_options(dir, &format!("size={size}"))
    }

    /// Mounts an empty, read-only tmpfs at `dir`: a place nobody, not even root (whom
    /// permission bits do not stop), can create anything in.
    pub(crate) fn read_only(dir: &Path) -> Mount {
        Mount::with_options(dir, "ro,size=1m")
    }

    fn with_options(dir: &Path, options: &str) -> Mount {
        fs::create_dir_all(dir).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", options, "tmpfs"])
            .arg(dir)
            .output()
            .expect("run mount");
        assert!(
            status.status.success(),
            "cannot mount a tmpfs ({options}) at {}: {}",
            dir.display(),
            String::from_utf8_lossy(&status.stderr).trim()
        );
        Mount(dir.to_path_buf())
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
