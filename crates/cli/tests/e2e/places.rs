//! Full disks and read-only places, for the three kinds of job (a built-in job, `sluice
//! streaming`, `sluice run terasort`): a small tmpfs that fills up under the output and the
//! spills, an output parent or a spill directory on a read-only mount, a spill directory
//! removed while the job spills. Each time the job must fail with a message naming the place,
//! exit non-zero, write no `_SUCCESS` and leave nothing behind (no staging or spill directory,
//! no streaming program still running). Every test mounts file systems, so needs root (the
//! `test-root` feature).
//!
//! Every run is watched: one that does not end within [`DEADLINE`] is killed and fails its
//! test, so a hang shows as a failure. No other timing is asserted.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::util::{assert_no_debris, gen_text, list_dir, Mount, Outcome, SLUICE};
use sluice_testkit::spill_dirs;

/// A run taking longer than this is killed and fails its test (runs take seconds).
const DEADLINE: Duration = Duration::from_secs(120);

/// The kinds of job every case is tried with.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// `sluice run sort`: its spills and its output are as large as its input.
    Sort,
    /// `sluice streaming` with `sh` scripts as mapper and reducer (`cat`, after noting their
    /// process ids).
    Streaming,
    /// `sluice run terasort` on TeraGen's rows.
    Terasort,
}

const KINDS: [Kind; 3] = [Kind::Sort, Kind::Streaming, Kind::Terasort];

/// A test's scratch directory: the inputs (text for sort and streaming, TeraGen's rows for
/// terasort), the streaming scripts, the list of the programs' process ids, their markers,
/// and the `TMPDIR` of every run (streaming's scratch directories go there).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// Makes the inputs: `text` of generated text and `rows` TeraGen rows.
    fn new(text: &str, rows: u64) -> Scratch {
        let dir = tempfile::tempdir().unwrap();
        let s = Scratch { dir };
        gen_text(&s.path("text"), text, 2, 19);
        let teragen = crate::util::sluice(
            &[
                "run",
                "teragen",
                "--quiet",
                "--rows",
                &rows.to_string(),
                "--maps",
                "2",
                "--output",
                s.path("rows").to_str().unwrap(),
            ],
            None,
        );
        teragen.assert_code(0, "teragen");
        for name in ["tmp", "marks"] {
            fs::create_dir(s.path(name)).unwrap();
        }
        // Each program notes its process id, and leaves a marker that it ran.
        let pids = s.path("pids.txt");
        let marks = s.path("marks");
        let script = format!(
            "#!/bin/sh\necho $$ >> {}\ntouch {}/ran.$$\nexec cat\n",
            pids.display(),
            marks.display()
        );
        fs::write(s.path("cat.sh"), script).unwrap();
        fs::set_permissions(s.path("cat.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        s
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The command line of a job of `kind` writing `output`, with `memory` as its budget,
    /// two threads, uncompressed spills (so that they take room), and the spills in
    /// `spill_dir` if given (streaming has no such option: its spills go beside the output).
    fn command(
        &self,
        kind: Kind,
        output: &Path,
        memory: &str,
        spill_dir: Option<&Path>,
    ) -> Command {
        let mut cmd = Command::new(SLUICE);
        cmd.env("TMPDIR", self.path("tmp"));
        match kind {
            Kind::Sort | Kind::Terasort => {
                let (job, input) = match kind {
                    Kind::Sort => ("sort", self.path("text")),
                    _ => ("terasort", self.path("rows")),
                };
                cmd.args(["run", job, "--quiet", "--threads", "2", "--memory", memory])
                    .args(["--spill-codec", "none", "--input"])
                    .arg(input)
                    .arg("--output")
                    .arg(output);
                if let Some(dir) = spill_dir {
                    cmd.arg("--spill-dir").arg(dir);
                }
            }
            Kind::Streaming => {
                assert!(
                    spill_dir.is_none(),
                    "streaming has no spill directory option"
                );
                let script = self.path("cat.sh");
                cmd.args(["streaming", "-D", "sluice.console=sluice", "-D"])
                    .arg(format!("sluice.memory={memory}"))
                    .args(["-D", "sluice.threads=2", "-input"])
                    .arg(self.path("text"))
                    .arg("-output")
                    .arg(output)
                    .arg("-mapper")
                    .arg(&script)
                    .arg("-reducer")
                    .arg(&script);
            }
        }
        cmd
    }

    /// Starts `cmd`, its stderr going to a file of the scratch directory.
    fn start(&self, mut cmd: Command) -> Running {
        let stderr = self.path("stderr.txt");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        Running {
            child,
            stderr,
            started: Instant::now(),
        }
    }

    /// Runs `cmd` to its end.
    fn run(&self, cmd: Command) -> Outcome {
        self.start(cmd).finish()
    }

    /// The process ids the streaming programs noted (none if none ran).
    fn program_pids(&self) -> Vec<u32> {
        fs::read_to_string(self.path("pids.txt"))
            .unwrap_or_default()
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    }

    /// Forgets the programs of earlier runs: their process ids and markers.
    fn forget_programs(&self) {
        let _ = fs::remove_file(self.path("pids.txt"));
        for name in list_dir(&self.path("marks")) {
            fs::remove_file(self.path("marks").join(name)).unwrap();
        }
    }

    /// Asserts that none of the streaming programs of the run still runs: sluice killed
    /// them when the job failed (a killed process may take a moment to go).
    fn assert_programs_gone(&self, what: &str) {
        for pid in self.program_pids() {
            let started = Instant::now();
            while is_running(pid) && started.elapsed() < Duration::from_secs(10) {
                thread::sleep(Duration::from_millis(20));
            }
            assert!(
                !is_running(pid),
                "{what}: streaming program {pid} outlived the job"
            );
        }
        self.forget_programs();
    }
}

/// A job being run.
struct Running {
    child: Child,
    stderr: PathBuf,
    started: Instant,
}

impl Running {
    /// Whether it has ended.
    fn ended(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Waits for the end (at most [`DEADLINE`] from the start, else kills it and fails).
    fn finish(mut self) -> Outcome {
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if self.started.elapsed() > DEADLINE {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "sluice did not finish within {DEADLINE:?}; its stderr:\n{}",
                    fs::read_to_string(&self.stderr).unwrap_or_default()
                );
            }
            thread::sleep(Duration::from_millis(10));
        };
        Outcome {
            status,
            stdout: String::new(),
            stderr: fs::read_to_string(&self.stderr).unwrap(),
        }
    }
}

/// Whether process `pid` still runs (a zombie does not: it runs nothing, holds nothing).
fn is_running(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rfind(')')
                .and_then(|close| stat[close + 1..].split_whitespace().next());
            !matches!(state, Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

/// Asserts a failed run: a non-zero exit (1 for sluice's own jobs; streaming's is Hadoop
/// Streaming's), a `sluice: error:` line on stderr that mentions each of `needles` once, and
/// nothing at `output`.
fn assert_failed(kind: Kind, outcome: &Outcome, output: &Path, needles: &[&str], what: &str) {
    if kind == Kind::Streaming {
        assert!(
            !matches!(outcome.code(), Some(0) | None),
            "{what}: expected a failure, got {:?}: {}",
            outcome.code(),
            outcome.stderr
        );
    } else {
        outcome.assert_code(1, what);
    }
    // Streaming announces failed attempts before the job's error, on lines of their own.
    let error = outcome
        .stderr
        .lines()
        .find(|l| l.starts_with("sluice: error:"))
        .unwrap_or_else(|| panic!("{what}: no `sluice: error:` line: {}", outcome.stderr));
    for needle in needles {
        assert_eq!(
            error.matches(needle).count(),
            1,
            "{what}: the error should mention {needle:?} once: {error}"
        );
    }
    assert!(
        !output.exists(),
        "{what}: output {} exists",
        output.display()
    );
}

/// A 2 MiB tmpfs that fills up mid-job (the inputs are 8 MB; each job's output alone is as
/// large): under the output and the spills, where the spills fill it; under the output only,
/// where the reducers fill it (streaming's spills always go beside its output, so there the
/// budget is large enough for none). The job fails naming a path on that file system, leaves
/// nothing on it, and streaming's programs (mappers, then reducers) do not outlive the job.
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "mounts a tmpfs, which needs root: cargo test --features test-root"
)]
fn full_disk_under_streaming_and_terasort() {
    let s = Scratch::new("8MiB", 80_000);
    let mount = Mount::tmpfs(&s.path("small"), "2m");
    let small = mount.0.clone();
    let small_text = small.display().to_string();
    let roomy = s.path("roomy");
    fs::create_dir(&roomy).unwrap();
    // (kind, budget, spill directory, the task that meets the full disk)
    let cases: [(Kind, &str, Option<&Path>, &str); 5] = [
        (Kind::Sort, "4MiB", None, "map task"),
        (Kind::Streaming, "4MiB", None, "map task"),
        (Kind::Streaming, "256MiB", None, "reduce task"),
        (Kind::Terasort, "4MiB", None, "map task"),
        (Kind::Terasort, "4MiB", Some(&roomy), "reduce task"),
    ];
    for (kind, memory, spill_dir, task) in cases {
        let out = small.join("out");
        let outcome = s.run(s.command(kind, &out, memory, spill_dir));
        let what = format!("full disk, {kind:?}, {memory}, spills in {spill_dir:?}");
        println!(
            "{what}: exit {:?}, stderr: {}",
            outcome.code(),
            outcome.stderr.trim()
        );
        assert_failed(kind, &outcome, &out, &[&small_text, task], &what);
        assert_eq!(
            list_dir(&small),
            Vec::<String>::new(),
            "{what}: debris on the small disk"
        );
        assert_eq!(list_dir(&roomy), Vec::<String>::new(), "{what}");
        if kind == Kind::Streaming {
            assert!(!s.program_pids().is_empty(), "{what}: no program ran");
            s.assert_programs_gone(&what);
        }
    }
}

/// The output's parent on a read-only mount (`chmod` would not stop root): the job fails up
/// front, naming the output and the cause, before any map runs; the same for a spill directory
/// on a read-only mount. Nothing is left anywhere.
///
/// That no map ran is seen from streaming's programs, which leave a marker when they start,
/// and for sort and terasort from an input that the maps would fail on (a missing file for
/// terasort, whose sampling reads the input first; a corrupt gzip file for sort).
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "mounts a read-only tmpfs, which needs root: cargo test --features test-root"
)]
fn read_only_output_parent_and_spill_dir() {
    let s = Scratch::new("1MiB", 10_000);
    let mount = Mount::read_only(&s.path("ro"));
    let ro = mount.0.clone();
    // A corrupt gzip file in sort's input: reading it fails the map that does.
    fs::write(s.path("text/zz-corrupt.txt.gz"), b"\x1f\x8b\x08\0garbage").unwrap();
    let writable = s.path("writable");
    fs::create_dir(&writable).unwrap();
    let cases: [(&str, PathBuf, Option<&Path>); 3] = [
        ("output parent", ro.join("out"), None),
        ("output grandparent", ro.join("sub/out"), None),
        ("spill directory", writable.join("out"), Some(&ro)),
    ];
    for (name, out, spill_dir) in cases {
        for kind in KINDS {
            if kind == Kind::Streaming && spill_dir.is_some() {
                continue; // streaming's spills go beside its output
            }
            let what = format!("read-only {name}, {kind:?}");
            let mut cmd = s.command(kind, &out, "4MiB", spill_dir);
            if kind == Kind::Terasort {
                // Sampling would fail on the missing file if it ran first.
                cmd.arg("--input").arg(s.path("no-such-rows"));
            }
            let outcome = s.run(cmd);
            println!(
                "{what}: exit {:?}, stderr: {}",
                outcome.code(),
                outcome.stderr.trim()
            );
            let place = spill_dir.unwrap_or(&out).display().to_string();
            assert_failed(
                kind,
                &outcome,
                &out,
                &[&place, "Read-only file system"],
                &what,
            );
            assert!(
                !outcome.stderr.contains("zz-corrupt") && !outcome.stderr.contains("no-such-rows"),
                "{what}: the job read its input before it failed: {}",
                outcome.stderr
            );
            assert!(list_dir(&s.path("marks")).is_empty(), "{what}: a map ran");
            assert_eq!(list_dir(&ro), Vec::<String>::new(), "{what}");
            assert_eq!(list_dir(&writable), Vec::<String>::new(), "{what}");
            assert_no_debris(s.dir.path());
        }
    }
    // The controls: with places that can be written, the same inputs do fail the jobs that
    // read them (so an error that does not name them means nothing read them).
    for (kind, culprit) in [(Kind::Sort, "zz-corrupt"), (Kind::Terasort, "no-such-rows")] {
        let out = writable.join("out");
        let mut cmd = s.command(kind, &out, "4MiB", None);
        if kind == Kind::Terasort {
            cmd.arg("--input").arg(s.path("no-such-rows"));
        }
        let outcome = s.run(cmd);
        outcome.assert_code(1, &format!("control, {kind:?}"));
        assert!(
            outcome.stderr.contains(culprit),
            "control, {kind:?}: {}",
            outcome.stderr
        );
        assert!(!out.exists(), "control, {kind:?}: output written");
    }
}

/// The job's spill directory removed (`rm -rf`) while the job spills: once a spill file is
/// there, the test removes the directory and waits for the job's end. It must fail naming the
/// spill directory, with no output and nothing left behind. A job that ended before the
/// removal proves nothing: the test then tries again with a bigger input.
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "part of the root tests (the places a job cannot write): cargo test --features test-root"
)]
fn spill_directory_that_vanishes() {
    let mut size_mib = 16;
    let mut s = Scratch::new(&format!("{size_mib}MiB"), 160_000);
    for kind in KINDS {
        loop {
            let what = format!("vanishing spill directory, {kind:?}, {size_mib} MiB");
            let out = s.path("out");
            // Streaming's spill directory is beside its output; the others get their own.
            let spill_parent = if kind == Kind::Streaming {
                s.dir.path().to_path_buf()
            } else {
                s.path("spill")
            };
            fs::create_dir_all(&spill_parent).unwrap();
            let spill_arg = (kind != Kind::Streaming).then_some(spill_parent.as_path());
            let mut running = s.start(s.command(kind, &out, "4MiB", spill_arg));
            let Some(spill_dir) = wait_for_spill(&mut running, &spill_parent) else {
                let outcome = running.finish();
                outcome.assert_code(0, &what);
                assert!(size_mib < 256, "{what}: the job never spilled");
                println!("{what}: ended before it spilled; again with more input");
                size_mib *= 4;
                s = Scratch::new(&format!("{size_mib}MiB"), 10_000 * size_mib);
                continue;
            };
            // What the test removes: the --spill-dir given, or streaming's own directory.
            let removed = if kind == Kind::Streaming {
                spill_dir.clone()
            } else {
                spill_parent.clone()
            };
            remove_while_written(&removed);
            let outcome = running.finish();
            println!(
                "{what}: exit {:?}, stderr: {}",
                outcome.code(),
                outcome.stderr.trim()
            );
            if outcome.code() == Some(0) {
                // Only legitimate if the job had written its last spill file before the
                // removal and kept it open: then try with a bigger input.
                assert!(size_mib < 256, "{what}: the job succeeded every time");
                println!("{what}: the job finished without its spill directory; again");
                fs::remove_dir_all(&out).unwrap();
                size_mib *= 4;
                s = Scratch::new(&format!("{size_mib}MiB"), 10_000 * size_mib);
                continue;
            }
            assert_failed(
                kind,
                &outcome,
                &out,
                &[&spill_dir.display().to_string()],
                &what,
            );
            assert_no_debris(s.dir.path());
            if spill_parent.exists() {
                assert_no_debris(&spill_parent);
            }
            if kind == Kind::Streaming {
                s.assert_programs_gone(&what);
            } else {
                let _ = fs::remove_dir_all(&spill_parent);
            }
            break;
        }
    }
}

/// Waits until a spill file is in a spill directory (`.sluice-spill-*`) of `parent` and
/// returns that directory; `None` if the job ended first.
fn wait_for_spill(running: &mut Running, parent: &Path) -> Option<PathBuf> {
    loop {
        let found = spill_dirs(parent).into_iter().find(|dir| {
            fs::read_dir(dir).is_ok_and(|mut files| {
                files.any(|f| f.is_ok_and(|f| f.file_name().to_string_lossy().ends_with(".spill")))
            })
        });
        if found.is_some() {
            return found;
        }
        if running.ended() {
            return None;
        }
        assert!(
            running.started.elapsed() < DEADLINE,
            "no spill file in {DEADLINE:?}"
        );
        thread::sleep(Duration::from_millis(2));
    }
}

/// Removes `dir` and everything in it, as `rm -rf` does, again while the job creates files in
/// it meanwhile (a bounded number of times).
fn remove_while_written(dir: &Path) {
    for _ in 0..100 {
        match fs::remove_dir_all(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => thread::sleep(Duration::from_millis(1)),
        }
    }
    panic!("cannot remove {}", dir.display());
}
