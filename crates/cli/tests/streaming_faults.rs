//! How `sluice streaming` behaves when its programs misbehave: programs that write a lot before
//! they read, fail, get killed, stop reading early, hang, leave processes behind, or report
//! counters from attempts that fail; the job being interrupted; command lines sluice refuses;
//! inputs of so many small files that starting the mapper is most of the job.
//!
//! None of this can be compared with Hadoop (its local mode does not retry, waits ten minutes
//! before a timeout, ...), so every test asserts the specified behaviour directly. The programs
//! are `sh` one-liners or small scripts written at run time into each test's temporary
//! directory; expected results are computed by the test itself, never taken from sluice.
//!
//! Every run of sluice is watched: a run that does not finish within a generous deadline is
//! killed and fails its test, so a deadlock shows up as a failure instead of a hung suite. No
//! other timing is asserted.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// The binary under test.
const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// A run taking longer than this is killed and fails its test (runs take a few seconds).
const DEADLINE: Duration = Duration::from_secs(120);

/// The deadline of runs that must end because of `mapreduce.task.timeout=1000` or Ctrl-C.
const SHORT_DEADLINE: Duration = Duration::from_secs(20);

/// A small input of key-tab-value lines. With `cat` as mapper (and reducer) the output is
/// [`ABC_LINES`]: a line without a tab would come out as `key<TAB>` (an empty value), as in
/// Hadoop.
const ABC: &str = "a\t1\nb\t2\nc\t3\n";

/// The output lines of [`ABC`] through `cat`.
const ABC_LINES: [&str; 3] = ["a\t1", "b\t2", "c\t3"];

/// A test's scratch directory: inputs, scripts, the job's output and sluice's own temporary
/// files (sluice runs with `TMPDIR` pointing here, so nothing is left in the system's).
struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `name` as an argument for sluice or a script (temporary paths have no spaces or quotes).
    fn arg(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }

    /// Writes `content` to `name`, creating its directory.
    fn write(&self, name: &str, content: &str) -> String {
        let path = self.path(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        self.arg(name)
    }

    /// Writes an executable `sh` script; returns its absolute path (a command for sluice).
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.write(name, &format!("#!/bin/sh\n{body}"));
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    /// Starts `sluice streaming ARGS` in this directory.
    fn start(&self, args: &[&str]) -> Running {
        let mut all = vec!["streaming"];
        all.extend_from_slice(args);
        self.start_sluice(&all)
    }

    /// Starts `sluice ARGS` in this directory.
    fn start_sluice(&self, args: &[&str]) -> Running {
        let mut command = Command::new(SLUICE);
        // Tests interrupt it with SIGINT: it must not start with SIGINT ignored.
        sluice_testkit::with_default_interrupts(&mut command);
        command.args(args);
        self.spawn(command)
    }

    /// Starts `sluice streaming ARGS` with the signals `ignored` (names for the shell's `trap`,
    /// `HUP INT`) ignored from its start, as `nohup` and a script's background jobs start it.
    fn start_ignoring(&self, ignored: &str, args: &[&str]) -> Running {
        let script = format!("trap '' {ignored}; exec \"$0\" streaming \"$@\"");
        let mut command = Command::new("sh");
        command.args(["-c", &script, SLUICE]).args(args);
        self.spawn(command)
    }

    /// Starts `command` in this directory (also its `TMPDIR`), its output kept for the test.
    fn spawn(&self, mut command: Command) -> Running {
        let mut child = command
            .current_dir(self.dir.path())
            .env("TMPDIR", self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = drain(child.stdout.take().unwrap());
        let stderr = drain(child.stderr.take().unwrap());
        Running {
            child,
            stdout,
            stderr,
        }
    }

    /// Runs `sluice streaming ARGS` to its end (at most [`DEADLINE`]).
    fn run(&self, args: &[&str]) -> Finished {
        self.start(args).finish(DEADLINE)
    }

    /// The lines of the output directory's part files, in file-name order.
    fn output_lines(&self, name: &str) -> Vec<String> {
        let dir = self.path(name);
        assert!(
            dir.join("_SUCCESS").is_file(),
            "{} has no _SUCCESS",
            dir.display()
        );
        let mut parts: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .starts_with("part-")
            })
            .collect();
        parts.sort();
        assert!(!parts.is_empty(), "{} has no part files", dir.display());
        parts
            .iter()
            .flat_map(|p| {
                fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect()
    }
}

/// Reads a pipe to its end on a thread of its own (so that neither pipe can fill up).
fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

/// A sluice process being run.
struct Running {
    child: Child,
    stdout: JoinHandle<String>,
    stderr: JoinHandle<String>,
}

/// How a sluice run ended.
struct Finished {
    /// Its exit code (`None`: killed by a signal).
    code: Option<i32>,
    stderr: String,
}

impl Running {
    /// Waits for the run to end; if it takes longer than `limit`, kills it and fails the test.
    fn finish(mut self, limit: Duration) -> Finished {
        let started = Instant::now();
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if started.elapsed() > limit {
                let _ = self.child.kill();
                let _ = self.child.wait();
                let stderr = self.stderr.join().unwrap();
                panic!("sluice did not finish within {limit:?}; its stderr:\n{stderr}");
            }
            thread::sleep(Duration::from_millis(50));
        };
        let _ = self.stdout.join().unwrap();
        Finished {
            code: status.code(),
            stderr: self.stderr.join().unwrap(),
        }
    }
}

impl Finished {
    fn assert_success(&self) {
        assert_eq!(
            self.code,
            Some(0),
            "the job should succeed; sluice's stderr:\n{}",
            self.stderr
        );
    }

    /// Asserts that the job failed with exit status 1 and left no output at `output`.
    fn assert_failed(&self, output: &Path) {
        assert_eq!(
            self.code,
            Some(1),
            "the job should fail with exit status 1; sluice's stderr:\n{}",
            self.stderr
        );
        assert!(
            !output.exists(),
            "a failed job left {} behind; sluice's stderr:\n{}",
            output.display(),
            self.stderr
        );
    }

    /// Asserts that sluice's stderr contains `text`.
    fn assert_says(&self, text: &str) {
        assert!(
            self.stderr.contains(text),
            "sluice's stderr should contain {text:?}; it is:\n{}",
            self.stderr
        );
    }
}

/// `count` numbered lines of about 40 bytes, each starting with `prefix`.
fn numbered_lines(prefix: &str, count: usize) -> String {
    let mut text = String::with_capacity(count * 40);
    for i in 0..count {
        writeln!(text, "{prefix}{i:08}-abcdefghijklmnopqrstuvwxyz").unwrap();
    }
    text
}

/// Whether process `pid` still runs. A zombie does not count: it runs no code and holds no
/// resources, and an orphan killed with its group waits as one until PID 1 reaps it (which, in
/// a container, may never happen).
fn is_running(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(process_state(&stat), Some('Z' | 'X')),
        Err(_) => false,
    }
}

/// The state letter of a `/proc/PID/stat` line (the field after the parenthesised name, which
/// may itself contain spaces and parentheses).
fn process_state(stat: &str) -> Option<char> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().next()?.chars().next()
}

/// The processes (not zombies) whose process group is `pgid`.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else {
            continue;
        };
        // After the name: state, ppid, pgrp.
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.len() > 2
            && fields[2] == pgid.to_string()
            && !matches!(process_state(&stat), Some('Z' | 'X'))
        {
            members.push(pid);
        }
    }
    members
}

/// Polls `gone` for up to five seconds (a killed process may take a moment to disappear).
fn eventually(gone: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        if gone() {
            return true;
        }
        thread::sleep(Duration::from_millis(50));
    }
    gone()
}

/// The process ids listed in `file`, one per line.
/// Asserts that each of `pids`, started by a job's programs, is gone soon after the job.
fn assert_gone(pids: &[u32]) {
    for &pid in pids {
        assert!(
            eventually(|| !is_running(pid)),
            "process {pid} started by a program outlived the job"
        );
    }
}

fn pids_in(file: &Path) -> Vec<u32> {
    fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// Waits (up to [`SHORT_DEADLINE`]) for `file` to appear.
fn wait_for_file(file: &Path) {
    let started = Instant::now();
    while !file.exists() {
        assert!(
            started.elapsed() < SHORT_DEADLINE,
            "{} did not appear",
            file.display()
        );
        thread::sleep(Duration::from_millis(50));
    }
}

/// A mapper that writes 50 MB before it reads any of its 4 MB of input, and a reducer that
/// reads all of its ~55 MB before it writes anything: neither fills a pipe that nobody drains
/// (sluice feeds a program's stdin and reads its stdout on different threads), and every line
/// arrives. The expected counts come from the numbers the test chose.
#[test]
fn large_output_before_reading_input_does_not_deadlock() {
    let s = Scratch::new();
    const INPUT_LINES: usize = 100_000;
    const GENERATED: usize = 1_250_000; // 40-byte lines: 50 MB
    let input = s.write("input.txt", &numbered_lines("input-", INPUT_LINES));
    let mapper = s.script(
        "map.sh",
        &format!(
            "yes generated-line-abcdefghijklmnopqrstuvwx | head -n {GENERATED}\n\
             cat\n"
        ),
    );
    let out = s.arg("out");
    let run = s.run(&[
        "-input", &input, "-output", &out, "-mapper", &mapper, "-reducer", "tac",
    ]);
    run.assert_success();
    let lines = s.output_lines("out");
    assert_eq!(lines.len(), GENERATED + INPUT_LINES);
    let from_input = lines.iter().filter(|l| l.starts_with("input-")).count();
    assert_eq!(from_input, INPUT_LINES);
}

/// A failing program fails the job (exit status 1, no output directory at all) with a message
/// that names the command, its exit status and the last lines of its stderr: what a user needs
/// to find the bug without digging for task logs.
#[test]
fn failing_mapper_reports_status_command_and_stderr() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let mapper = "sh -c 'echo MARKER-xyz-first >&2; echo MARKER-xyz-last >&2; exit 3'";
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_failed(&s.path("out"));
    run.assert_says("exit status 3");
    run.assert_says(mapper);
    run.assert_says("MARKER-xyz-first");
    run.assert_says("MARKER-xyz-last");
}

/// A program killed by a signal is reported as such, with the signal's number (there is no
/// exit status to report).
#[test]
fn mapper_killed_by_a_signal_is_reported() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "sh -c 'kill -9 $$'",
        "-reducer",
        "cat",
    ]);
    run.assert_failed(&s.path("out"));
    run.assert_says("killed by signal 9");
}

/// The retry script: counts its runs in `runs.txt` and fails until it has run `succeed_on`
/// times (never, if 0); then it passes its input through.
fn flaky_mapper(s: &Scratch, succeed_on: usize) -> String {
    let runs = s.arg("runs.txt");
    let check = if succeed_on == 0 {
        "exit 1\n".to_string()
    } else {
        format!("[ \"$(wc -l < {runs})\" -ge {succeed_on} ] || exit 1\n")
    };
    s.script(
        "flaky.sh",
        &format!("echo run >> {runs}\necho flaky-failure >&2\n{check}cat\n"),
    )
}

/// `mapreduce.map.maxattempts=3`: a mapper that fails twice and then works makes a job that
/// succeeds with the right output, after exactly three runs of the program.
#[test]
fn failed_attempts_are_retried_until_one_succeeds() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let mapper = flaky_mapper(&s, 3);
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=3",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert_eq!(line_count(&s.path("runs.txt")), 3);
    assert_eq!(s.output_lines("out"), ABC_LINES);
}

/// A mapper that reads all its input and then fails, retried until an attempt succeeds: the
/// counters count the input once, as Hadoop counts only the successful attempt (the failed
/// ones had shown their input bytes as progress).
#[test]
fn a_failed_attempt_that_read_its_input_leaves_no_count_behind() {
    let s = Scratch::new();
    let text = numbered_lines("line-", 20_000);
    let input = s.write("input.txt", &text);
    let out = s.arg("out");
    let runs = s.arg("runs.txt");
    let mapper = s.script(
        "reads_then_fails.sh",
        &format!(
            "echo run >> {runs}\n\
             if [ \"$(wc -l < {runs})\" -lt 3 ]; then cat > /dev/null; exit 1; fi\n\
             cat\n"
        ),
    );
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=3",
        "-D",
        "mapreduce.job.reduces=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert_eq!(line_count(&s.path("runs.txt")), 3, "two failed attempts");
    assert_eq!(s.output_lines("out").len(), 20_000);
    for (name, want) in [
        ("Map input records", 20_000),
        ("Map output records", 20_000),
        ("Bytes Read", text.len()),
    ] {
        run.assert_says(&format!("\t\t{name}={want}\n"));
    }
}

/// The number of lines in `file`.
fn line_count(file: &Path) -> usize {
    fs::read_to_string(file).unwrap().lines().count()
}

/// A retried attempt is announced: the user learns that (and why) a task failed even though
/// the job succeeded.
#[test]
fn retried_attempt_is_announced() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let mapper = flaky_mapper(&s, 2);
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=3",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    run.assert_says("attempt 1 of 3 failed");
    run.assert_says("flaky-failure");
}

/// `mapreduce.map.maxattempts=2` and a mapper that always fails: the job fails after exactly two
/// runs (no more, no fewer), and the message says how many attempts failed.
#[test]
fn job_fails_after_max_attempts() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let mapper = flaky_mapper(&s, 0);
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=2",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_failed(&s.path("out"));
    assert_eq!(line_count(&s.path("runs.txt")), 2);
    run.assert_says("failed 2 attempts");
    run.assert_says("flaky-failure");
}

/// Corrupt input stays corrupt: a truncated gzip file and a SequenceFile with a broken
/// header fail their task at once, naming the file, instead of being read four times.
#[test]
fn corrupt_input_is_not_retried() {
    let s = Scratch::new();
    let text = b"alpha\nbeta\ngamma\n".repeat(200);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &text).unwrap();
    let gz = gz.finish().unwrap();
    let truncated = s.path("truncated.txt.gz");
    fs::write(&truncated, &gz[..gz.len() / 2]).unwrap();
    // A SequenceFile header of version 6 whose key class name runs past the end of the file.
    let seq = s.path("broken.seq");
    fs::write(&seq, b"SEQ\x06\x7fTruncated").unwrap();
    for (input, format) in [
        (&truncated, "TextInputFormat"),
        (&seq, "SequenceFileAsTextInputFormat"),
    ] {
        let out = s.arg(&format!("out-{format}"));
        let run = s.run(&[
            "-D",
            "mapreduce.map.maxattempts=4",
            "-input",
            &input.display().to_string(),
            "-output",
            &out,
            "-inputformat",
            format,
            "-mapper",
            "cat",
            "-reducer",
            "cat",
        ]);
        run.assert_failed(&s.path(&format!("out-{format}")));
        run.assert_says(&input.display().to_string());
        run.assert_says("attempt 1 of 4 failed");
        assert!(
            !run.stderr.contains("trying again"),
            "{format}: a corrupt input was retried:\n{}",
            run.stderr
        );
    }
}

/// `head -n 1` exits 0 after its first line of 4 MB of input: the records it never read would
/// silently be lost, so the task fails (as in Hadoop) and the message says why.
#[test]
fn mapper_that_exits_before_reading_its_input_fails() {
    let s = Scratch::new();
    let input = s.write("input.txt", &numbered_lines("line-", 100_000));
    let out = s.arg("out");
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "head -n 1",
        "-reducer",
        "cat",
    ]);
    run.assert_failed(&s.path("out"));
    run.assert_says("head -n 1");
    run.assert_says("before reading all of its input");
}

/// A mapper that reads one line of a 1 MiB input and exits 0, and a reducer (`head -n 1`)
/// that does the same: no write to them failed — the pipe and the feeder's buffer held all of
/// it — yet all but a line went unread, so the task fails, as Hadoop's does on the broken pipe.
#[test]
fn a_program_that_leaves_a_megabyte_of_its_input_unread_fails() {
    let s = Scratch::new();
    let input = s.write("input.txt", &numbered_lines("line-", 25_000));
    let mapper_out = s.arg("mapper-out");
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &mapper_out,
        // bash reads a pipe byte by byte: exactly one line is read.
        "-mapper",
        "bash -c 'read line; echo \"$line\"'",
        "-numReduceTasks",
        "0",
    ]);
    run.assert_failed(&s.path("mapper-out"));
    run.assert_says("before reading all of its input");
    let reducer_out = s.arg("reducer-out");
    let run = s.run(&[
        "-D",
        "mapreduce.reduce.maxattempts=1",
        "-input",
        &input,
        "-output",
        &reducer_out,
        "-mapper",
        "cat",
        "-reducer",
        "head -n 1",
    ]);
    run.assert_failed(&s.path("reducer-out"));
    run.assert_says("reducer: 'head -n 1' exited (exit status 0) before reading all of its input");
}

/// What a program may leave unread is the last 256 KiB of its input: one that reads none of
/// it and exits 0 succeeds over 200 KB and fails over 300 KB — whether it exits before the
/// feeder has written all of it or after (a race, so several runs of each).
#[test]
fn input_left_unread_fails_the_task_beyond_256_kib() {
    let s = Scratch::new();
    let small = s.write("small.txt", &numbered_lines("line-", 4_800));
    let large = s.write("large.txt", &numbered_lines("line-", 7_500));
    for run in 0..4 {
        for (input, fails) in [(&small, false), (&large, true)] {
            let out = s.arg(&format!("out-{fails}-{run}"));
            let finished = s.run(&[
                "-D",
                "mapreduce.map.maxattempts=1",
                "-input",
                input,
                "-output",
                &out,
                "-mapper",
                "sh -c 'exec 0<&-; echo done'",
                "-numReduceTasks",
                "0",
            ]);
            if fails {
                finished.assert_failed(&s.path(&format!("out-{fails}-{run}")));
                finished.assert_says("before reading all of its input");
            } else {
                finished.assert_success();
                assert_eq!(s.output_lines(&format!("out-{fails}-{run}")), ["done\t"]);
            }
        }
    }
}

/// `mapreduce.task.timeout=1000`: a mapper that sleeps 30 s without reading, writing or
/// reporting is killed after a second of silence, and the message names the setting to change.
/// (Only the watchdog deadline is timed: the job must end long before the sleep would.)
#[test]
fn silent_mapper_is_killed_after_the_task_timeout() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let run = s
        .start(&[
            "-D",
            "mapreduce.task.timeout=1000",
            "-D",
            "mapreduce.map.maxattempts=1",
            "-input",
            &input,
            "-output",
            &out,
            "-mapper",
            "sh -c 'sleep 30'",
            "-reducer",
            "cat",
        ])
        .finish(SHORT_DEADLINE);
    run.assert_failed(&s.path("out"));
    run.assert_says("mapreduce.task.timeout");
}

/// `reporter:status:` lines on stderr are signs of life: a mapper idle for 3 s but reporting
/// every 200 ms is not killed with `mapreduce.task.timeout=1000`, and its output is complete.
#[test]
fn status_reports_keep_a_task_alive() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let mapper = s.script(
        "alive.sh",
        "i=0\n\
         while [ $i -lt 15 ]; do echo reporter:status:alive >&2; sleep 0.2; i=$((i+1)); done\n\
         cat\n",
    );
    let run = s.run(&[
        "-D",
        "mapreduce.task.timeout=1000",
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert_eq!(s.output_lines("out"), ABC_LINES);
}

/// A failing mapper that started a background process (with its stdio redirected, so that it
/// holds none of the task's pipes): when the job has failed, no such process is left running —
/// sluice kills each program's whole process group. Both attempts' grandchildren are checked.
#[test]
fn failed_task_leaves_no_background_process() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let pids = s.arg("pids.txt");
    let mapper = s.script(
        "orphan.sh",
        &format!("sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> {pids}\nexit 1\n"),
    );
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=2",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_failed(&s.path("out"));
    let started = pids_in(&s.path("pids.txt"));
    assert_eq!(started.len(), 2, "one background process per attempt");
    assert_gone(&started);
}

/// As above for a task that succeeds: a background process started by a mapper does not
/// outlive its task, and the job's output is unaffected.
#[test]
fn successful_task_leaves_no_background_process() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let pids = s.arg("pids.txt");
    let mapper = s.script(
        "orphan.sh",
        &format!("sleep 300 </dev/null >/dev/null 2>&1 &\necho $! >> {pids}\ncat\n"),
    );
    let run = s.run(&[
        "-input", &input, "-output", &out, "-mapper", &mapper, "-reducer", "cat",
    ]);
    run.assert_success();
    assert_eq!(s.output_lines("out"), ABC_LINES);
    let started = pids_in(&s.path("pids.txt"));
    assert_eq!(started.len(), 1);
    assert_gone(&started);
}

/// The brief's literal form, `sleep 300 & ...; exit 1`: the background process inherits the
/// mapper's stdout. The job should fail promptly and leave nothing running.
#[test]
fn background_process_holding_stdout_does_not_hold_up_the_job() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let pids = s.arg("pids.txt");
    let mapper = format!("sh -c 'sleep 300 & echo $! > {pids}; exit 1'");
    let running = s.start(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    let sluice = running.child.id();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        running.finish(SHORT_DEADLINE)
    }));
    let Ok(run) = result else {
        // Do not leave the 300 s sleep behind when the test fails.
        for pid in pids_in(&s.path("pids.txt")) {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        panic!("sluice {sluice} did not finish within {SHORT_DEADLINE:?}");
    };
    run.assert_failed(&s.path("out"));
    run.assert_says("exit status 1");
    assert_gone(&pids_in(&s.path("pids.txt")));
}

/// A mapper that starts a background `sleep` in its process group, writes that process's pid
/// to `child_file`, then its own (its group's id) to `group_file` (whole, by a rename), and
/// sleeps without reading its input.
fn long_mapper(s: &Scratch, child_file: &str, group_file: &str) -> String {
    s.script(
        "long.sh",
        &format!(
            "sleep 300 </dev/null >/dev/null 2>&1 &\n\
             echo $! > {child_file}\n\
             echo $$ > {group_file}.tmp\n\
             mv {group_file}.tmp {group_file}\n\
             exec sleep 300 </dev/null\n"
        ),
    )
}

/// Ctrl-C (SIGINT to sluice) while a mapper runs: sluice exits non-zero, writes no output, and
/// kills the mapper's whole process group — the mapper and the process it started in the
/// background. The mapper writes its pid (its process group's id) only after it has started
/// the background process, so the test knows both before it interrupts.
#[test]
fn interrupted_job_kills_its_programs_and_leaves_no_output() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let (child_file, group_file) = (s.arg("child.txt"), s.arg("group.txt"));
    let mapper = long_mapper(&s, &child_file, &group_file);
    let running = s.start(&[
        "-input", &input, "-output", &out, "-mapper", &mapper, "-reducer", "cat",
    ]);
    wait_for_file(&s.path("group.txt"));
    let group = pids_in(&s.path("group.txt"))[0];
    let child = pids_in(&s.path("child.txt"))[0];
    assert!(is_running(group) && is_running(child));
    let sent = Command::new("kill")
        .args(["-INT", &running.child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let run = running.finish(SHORT_DEADLINE);
    assert_ne!(run.code, Some(0), "stderr:\n{}", run.stderr);
    run.assert_says("interrupted");
    assert!(!s.path("out").exists(), "an interrupted job left output");
    assert!(
        eventually(|| group_members(group).is_empty()),
        "processes of the mapper's group {group} outlived the job: {:?}",
        group_members(group)
    );
    assert!(!is_running(child));
}

/// One interrupt delivered twice at once, as `timeout` delivers the signal it gets (to its
/// child, then to the child's process group): sluice winds the job down as after one, with
/// Hadoop's failure lines and nothing of its own left in the directory (which is also its
/// `TMPDIR`), rather than taking it for a second Ctrl-C and exiting mid-cleanup.
#[test]
fn an_interrupt_delivered_twice_at_once_is_one_interrupt() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let (child_file, group_file) = (s.arg("child.txt"), s.arg("group.txt"));
    let mapper = long_mapper(&s, &child_file, &group_file);
    let running = s.start(&[
        "-input", &input, "-output", &out, "-mapper", &mapper, "-reducer", "cat",
    ]);
    wait_for_file(&s.path("group.txt"));
    let group = pids_in(&s.path("group.txt"))[0];
    let pid = running.child.id().to_string();
    for _ in 0..2 {
        let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(sent.success());
    }
    let run = running.finish(SHORT_DEADLINE);
    assert_eq!(run.code, Some(130), "stderr:\n{}", run.stderr);
    assert!(
        !run.stderr.contains("interrupted again"),
        "one interrupt taken for two:\n{}",
        run.stderr
    );
    run.assert_says("Streaming Command Failed!");
    assert!(!s.path("out").exists(), "an interrupted job left output");
    let left: Vec<String> = fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains("sluice"))
        .collect();
    assert!(
        left.is_empty(),
        "the job left {left:?}; stderr:\n{}",
        run.stderr
    );
    assert!(
        eventually(|| group_members(group).is_empty()),
        "processes of the mapper's group {group} outlived the job"
    );
}

/// sluice killed outright (SIGKILL: no code of its own runs) while a mapper runs: the mapper
/// and the process it started in its group die with it, although neither reads the pipes
/// whose closing would otherwise end them.
#[test]
fn killed_sluice_takes_its_programs_with_it() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let (child_file, group_file) = (s.arg("child.txt"), s.arg("group.txt"));
    let mapper = long_mapper(&s, &child_file, &group_file);
    let mut running = s.start(&[
        "-input", &input, "-output", &out, "-mapper", &mapper, "-reducer", "cat",
    ]);
    wait_for_file(&s.path("group.txt"));
    let group = pids_in(&s.path("group.txt"))[0];
    let child = pids_in(&s.path("child.txt"))[0];
    assert!(is_running(group) && is_running(child));
    running.child.kill().unwrap();
    let run = running.finish(SHORT_DEADLINE);
    assert_eq!(run.code, None, "killed by a signal");
    let gone = eventually(|| group_members(group).is_empty());
    // Whatever the outcome, leave no 300 s sleeps behind.
    let _ = Command::new("kill")
        .args(["-9", "--", &format!("-{group}")])
        .status();
    assert!(
        gone,
        "processes of the mapper's group {group} outlived the killed sluice"
    );
    assert!(!is_running(child));
}

/// `reporter:counter:` lines from the mappers of three map tasks (one per input file) add up in
/// sluice's counter block; malformed counter lines count for nothing; and the counters of an
/// attempt that failed (one task's first attempt reports for all of its lines, then exits 1)
/// are not added to those of its successful retry.
#[test]
fn counters_add_up_across_tasks_and_ignore_failed_attempts() {
    let s = Scratch::new();
    let sizes = [10usize, 20, 30];
    for (i, n) in sizes.iter().enumerate() {
        s.write(
            &format!("in/part{i}.txt"),
            &numbered_lines(&format!("f{i}-"), *n),
        );
    }
    let out = s.arg("out");
    let failed_once = s.arg("failed-once");
    let mapper = s.script(
        "count.sh",
        &format!(
            "while IFS= read -r line; do\n\
             \x20 echo reporter:counter:G,n,5 >&2\n\
             \x20 echo \"$line\"\n\
             done\n\
             echo reporter:counter:G,n >&2\n\
             echo reporter:counter:G,bad,abc >&2\n\
             echo reporter:counter:G,bad,1,2 >&2\n\
             echo reporter:counter:H,runs,1 >&2\n\
             if mkdir {failed_once} 2>/dev/null; then exit 1; fi\n"
        ),
    );
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=2",
        "-input",
        &s.arg("in"),
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert!(s.path("failed-once").is_dir(), "no attempt failed");
    let lines: usize = sizes.iter().sum();
    assert_eq!(s.output_lines("out").len(), lines);
    run.assert_says(&format!("\tG\n\t\tn={}\n", 5 * lines));
    // One successful run per map task: the failed run's counters are gone.
    run.assert_says(&format!("\tH\n\t\truns={}\n", sizes.len()));
    assert!(
        !run.stderr.contains("bad="),
        "a malformed counter line was counted:\n{}",
        run.stderr
    );
}

/// A mapper that reports 120 counters (Hadoop's limit for one task) succeeds, each counted;
/// one that reports 121 fails its attempt, as Hadoop's `LimitExceededException` fails it, and the
/// message names the key that raises the limit, which lets the same mapper through. Groups: 50.
#[test]
fn counters_past_the_limit_fail_the_task() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let mapper = |counters: usize, groups: usize| {
        s.script(
            &format!("count-{counters}-{groups}.sh"),
            &format!(
                "cat
                 i=0; while [ $i -lt {counters} ]; do \
                 echo reporter:counter:G$((i % {groups})),c$i,2 >&2; i=$((i+1)); done
"
            ),
        )
    };
    let runs = std::cell::Cell::new(0);
    let run_with = |mapper: &str, defines: &[&str]| {
        runs.set(runs.get() + 1);
        let out = s.arg(&format!("out-{}", runs.get()));
        let mut args: Vec<&str> = vec!["-D", "mapreduce.map.maxattempts=1"];
        for define in defines {
            args.extend(["-D", define]);
        }
        args.extend([
            "-input",
            &input,
            "-output",
            &out,
            "-mapper",
            mapper,
            "-numReduceTasks",
            "0",
        ]);
        s.run(&args)
    };
    let at_the_limit = mapper(120, 10);
    let run = run_with(&at_the_limit, &[]);
    run.assert_success();
    run.assert_says("\tG9\n");
    run.assert_says("\t\tc119=2\n");

    let past = mapper(121, 10);
    let run = run_with(&past, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    run.assert_says("reported more than 120 counters (mapreduce.job.counters.max)");
    let run = run_with(&past, &["mapreduce.job.counters.max=121"]);
    run.assert_success();

    let groups = mapper(51, 51);
    let run = run_with(&groups, &[]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    run.assert_says("reported more than 50 counter groups (mapreduce.job.counters.groups.max)");
}

/// `stream.non.zero.exit.is.failure=false`: a mapper that writes its output and exits 1 makes a
/// job that succeeds with that output. Without the setting, the same job fails.
#[test]
fn non_zero_exit_is_accepted_when_configured() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let mapper = "sh -c 'cat; exit 1'";
    let run = s.run(&[
        "-D",
        "stream.non.zero.exit.is.failure=false",
        "-input",
        &input,
        "-output",
        &s.arg("out"),
        "-mapper",
        mapper,
        "-reducer",
        "NONE",
    ]);
    run.assert_success();
    assert_eq!(s.output_lines("out"), ABC_LINES);

    let control = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &s.arg("control"),
        "-mapper",
        mapper,
        "-reducer",
        "NONE",
    ]);
    control.assert_failed(&s.path("control"));
    control.assert_says("exit status 1");
}

/// Command lines sluice cannot run are refused up front with exit status 1 and a message
/// saying why: a Java class as mapper, an input format it cannot read, a missing `-input`.
#[test]
fn usage_errors_are_refused_clearly() {
    let s = Scratch::new();
    let input = s.write("input.txt", "a\n");
    let out = s.arg("out");

    let java = s.run(&[
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "org.example.MyMapper",
        "-reducer",
        "cat",
    ]);
    java.assert_failed(&s.path("out"));
    java.assert_says("org.example.MyMapper");
    java.assert_says("Java classes cannot run");

    let format = s.run(&[
        "-input",
        &input,
        "-output",
        &out,
        "-inputformat",
        "org.apache.hadoop.mapred.lib.CombineSequenceFileInputFormat",
        "-mapper",
        "cat",
        "-reducer",
        "cat",
    ]);
    format.assert_failed(&s.path("out"));
    format.assert_says(
        "-inputformat org.apache.hadoop.mapred.lib.CombineSequenceFileInputFormat is not supported",
    );

    let missing = s.run(&["-output", &out, "-mapper", "cat", "-reducer", "cat"]);
    missing.assert_failed(&s.path("out"));
    missing.assert_says("Required argument: -input");
}

/// A combiner that writes its keys in reverse order would break the merge of sorted runs
/// (records silently split across groups); sluice checks the combiner's output and fails the
/// job, naming the problem.
#[test]
fn combiner_that_reorders_keys_fails_the_job() {
    let s = Scratch::new();
    let input = s.write("input.txt", "a\nb\nc\nd\n");
    let out = s.arg("out");
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "cat",
        "-combiner",
        "tac",
        "-reducer",
        "cat",
    ]);
    run.assert_failed(&s.path("out"));
    run.assert_says("the combiner's output is not sorted");
}

/// A failed attempt counts nothing: here the combiner fails on its first run, which fails the
/// map task's first attempt after its mapper read and wrote every record. The framework's
/// counters must show each record once.
#[test]
fn failed_attempt_counts_no_records() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let flag = s.arg("combiner-failed");
    let combiner = s.script(
        "combine.sh",
        &format!("if mkdir {flag} 2>/dev/null; then cat >/dev/null; exit 3; fi\ncat\n"),
    );
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=2",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "cat",
        "-combiner",
        &combiner,
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert!(
        s.path("combiner-failed").is_dir(),
        "the combiner never failed"
    );
    run.assert_says("\t\tMap input records=3\n");
    run.assert_says("\t\tMap output records=3\n");
    run.assert_says("\t\tReduce input records=3\n");
}

/// A process that leaves the program's group (`setsid`) and keeps its stdout open cannot be
/// killed with the group; the task must still end, here by the task timeout, instead of
/// waiting for the pipe forever.
#[test]
fn process_outside_the_group_holding_stdout_times_out() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let pids = s.arg("pids.txt");
    // The pid is written from inside the new session, and the mapper reads its input only
    // then: otherwise a fast mapper can end, and its group be killed, before `setsid` ran.
    let mapper = s.script(
        "escape.sh",
        &format!(
            "setsid sh -c 'echo $$ > {pids}; exec sleep 30' &\n\
             while [ ! -s {pids} ]; do sleep 0.01; done\ncat\n"
        ),
    );
    let run = s.start(&[
        "-D",
        "mapreduce.task.timeout=1000",
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    let finished = run.finish(SHORT_DEADLINE);
    for pid in pids_in(&s.path("pids.txt")) {
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    }
    finished.assert_failed(&s.path("out"));
    finished.assert_says("mapreduce.task.timeout");
}

/// A `rawbytes` program that dies in the middle of a record breaks the framing, but the cause
/// is its failure: the error must give its exit status and stderr, not only the broken output.
#[test]
fn crashing_rawbytes_program_is_reported_with_its_stderr() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let mapper = s.script(
        "crash.sh",
        "cat >/dev/null\nprintf '\\000\\000\\000\\005ab'\necho MARKER-boom >&2\nexit 4\n",
    );
    let run = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-io",
        "rawbytes",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    run.assert_failed(&s.path("out"));
    run.assert_says("exit status 4");
    run.assert_says("MARKER-boom");
}

/// A command whose name looks like a Java class is still a command when such a program
/// exists (Hadoop only takes names it can load as classes).
#[test]
fn capitalized_program_name_runs_as_a_command() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let reducer = s.script("MyReducer", "cat\n");
    let run = s.run(&[
        "-files",
        &reducer,
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "cat",
        "-reducer",
        "MyReducer",
    ]);
    run.assert_success();
    assert_eq!(s.output_lines("out"), ABC_LINES);
}

/// As in Hadoop's local mode, a program may name files of the directory sluice was started in
/// by relative paths, without shipping them with -files.
#[test]
fn programs_see_the_starting_directory() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    s.write("suffix.txt", "!\n");
    s.script(
        "add.sh",
        "while IFS= read -r line; do echo \"$line$(cat suffix.txt)\"; done\n",
    );
    let out = s.arg("out");
    let run = s.run(&[
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "sh add.sh",
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert_eq!(s.output_lines("out"), ["a\t1!", "b\t2!", "c\t3!"]);
}

/// 1,000 small files make 1,000 map tasks, each starting the mapper program: sluice says so
/// and names CombineTextInputFormat. Following the note gives the same output (the mapper
/// reads the same lines) and no note.
#[test]
fn thousands_of_small_files_get_a_note_and_following_it_gives_the_same_output() {
    let s = Scratch::new();
    let mut expected = Vec::new();
    let mut bytes = 0;
    for i in 0..1000 {
        let text = format!("w{i} x\nv{i}\ty\n");
        bytes += text.len();
        s.write(&format!("many/f{i:04}.txt"), &text);
        // `cat` as mapper and reducer: a line's text up to its first tab is the key.
        expected.push(format!("w{i} x\t"));
        expected.push(format!("v{i}\ty"));
    }
    expected.sort();
    let input = s.arg("many");
    let note = "CombineTextInputFormat reads many small files in one map task";

    let out = s.arg("out");
    let run = s.run(&[
        "-input", &input, "-output", &out, "-mapper", "cat", "-reducer", "cat",
    ]);
    run.assert_success();
    run.assert_says(&format!(
        "the input makes 1000 map tasks of {} B on average",
        bytes / 1000
    ));
    run.assert_says(note);
    let mut lines = s.output_lines("out");
    lines.sort();
    assert_eq!(lines, expected);

    let combined = s.arg("combined");
    let run = s.run(&[
        "-D",
        "stream.map.input.ignoreKey=true",
        "-inputformat",
        "org.apache.hadoop.mapred.lib.CombineTextInputFormat",
        "-input",
        &input,
        "-output",
        &combined,
        "-mapper",
        "cat",
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    assert!(!run.stderr.contains(note), "{}", run.stderr);
    let mut lines = s.output_lines("combined");
    lines.sort();
    assert_eq!(lines, expected);
}

/// Wrappers run `$HADOOP_CMD jar $HADOOP_STREAMING ARGS`: with sluice as the command, a
/// streaming jar's path (which need not exist) runs the streaming job; a jar of Java jobs is
/// refused before anything runs.
#[test]
fn the_streaming_jar_runs_as_hadoop_jar_runs_it() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let run = |args: &[&str]| {
        let finished = s.start_sluice(args).finish(DEADLINE);
        (finished.code, finished.stderr)
    };
    let (code, stderr) = run(&[
        "jar",
        "/opt/hadoop/share/hadoop/tools/lib/hadoop-streaming-3.4.3.jar",
        "-D",
        "mapreduce.job.reduces=2",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "cat",
        "-reducer",
        "cat",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(s.path("out/part-00001").is_file(), "{stderr}");
    let mut lines = s.output_lines("out");
    lines.sort();
    assert_eq!(lines, ABC_LINES);

    let (code, stderr) = run(&["jar", "hadoop-streaming.jar", "-info"]);
    assert_eq!(code, Some(0), "{stderr}");

    let other = s.arg("other");
    let (code, stderr) = run(&[
        "jar",
        "/opt/app/wordcount-1.0.jar",
        "com.example.WordCount",
        &input,
        &other,
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("wordcount-1.0.jar") && stderr.contains("Java code"),
        "{stderr}"
    );
    assert!(!s.path("other").exists());
}

/// A job refused while it is being set up (here: a reducer that is neither a program nor a
/// class sluice knows) leaves no scratch directory behind.
#[test]
fn refused_job_leaves_no_scratch_directory() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let run = s.run(&[
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "cat",
        "-reducer",
        "org.example.NoSuchReducer",
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    run.assert_says("Java classes cannot run");
    let leftovers: Vec<String> = fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("sluice-"))
        .collect();
    assert!(leftovers.is_empty(), "left behind: {leftovers:?}");
}

/// Numeric `-D` settings beyond what Hadoop reads them as (a Java int) or what the budget can
/// track are refused before the job runs, naming the key, the value and the bound, and leave
/// nothing behind: no output, no scratch directory.
#[test]
fn out_of_range_numeric_settings_are_refused() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let cases: [(&str, &[&str]); 6] = [
        (
            "mapreduce.job.reduces=3000000000",
            &[
                "-D mapreduce.job.reduces=3000000000",
                "from 0 to 2147483647",
            ],
        ),
        (
            "mapreduce.job.reduces=-1",
            &["-D mapreduce.job.reduces=-1", "from 0 to 2147483647"],
        ),
        (
            "mapreduce.job.reduces=300000000",
            &["300000000 reducers", "at most 2097152 partitions"],
        ),
        (
            "mapreduce.map.maxattempts=99999999999",
            &[
                "-D mapreduce.map.maxattempts=99999999999",
                "from 0 to 2147483647",
            ],
        ),
        (
            "stream.num.map.output.key.fields=4294967297",
            &[
                "-D stream.num.map.output.key.fields=4294967297",
                "from 0 to 2147483647",
            ],
        ),
        (
            "sluice.shm.ring.size=3000",
            &["sluice.shm.ring.size=3000", "power of two"],
        ),
    ];
    for (define, needles) in cases {
        let run = s.run(&[
            "-D", define, "-input", &input, "-output", &out, "-mapper", "cat", "-reducer", "cat",
        ]);
        run.assert_failed(&s.path("out"));
        for needle in needles {
            run.assert_says(needle);
        }
        let mut left: Vec<String> = fs::read_dir(s.path(""))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["input.txt"], "-D {define} left files behind");
    }
}

/// Hadoop's `KeyFieldBasedComparator -n` reads keys that are not numbers (`1.5.6`, `abc`, `-`,
/// an IP address) in ways that are not transitive: `1.5` = `1.50` and `1.5` = `1.5.6`, but
/// `1.50` > `1.5.6`. Hadoop's quicksort sorts such keys without complaint; sluice must too
/// (Rust's own sorts may panic on such an order), through the map side's sort and a combiner,
/// and the output must be every input line once.
#[test]
fn numeric_key_fields_that_are_not_numbers_still_sort() {
    let s = Scratch::new();
    const PIECES: [&str; 15] = [
        "1.5", "1.50", "1.5.6", "-0", "5", "+5", "abc", ".", "-", "1.2.3", "x", "10", "9.9.9",
        "-1.5.2", "",
    ];
    // A fixed pseudo-random sequence (a linear congruential generator), so a failure repeats.
    let mut state: u64 = 7;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from(state >> 33).unwrap() % PIECES.len()
    };
    let mut input = String::new();
    for i in 0..3000 {
        let (a, b) = (next(), next());
        writeln!(input, "{}{}\t{i}", PIECES[a], PIECES[b]).unwrap();
    }
    let path = s.write("input.txt", &input);
    let out = s.arg("out");
    let run = s.run(&[
        "-D",
        "mapreduce.job.output.key.comparator.class=org.apache.hadoop.mapred.lib.KeyFieldBasedComparator",
        "-D",
        "mapreduce.partition.keycomparator.options=-k1,1n",
        "-D",
        "mapreduce.job.reduces=2",
        "-input",
        &path,
        "-output",
        &out,
        "-mapper",
        "cat",
        "-combiner",
        "cat",
        "-reducer",
        "cat",
    ]);
    run.assert_success();
    let mut got = s.output_lines("out");
    got.sort();
    let mut want: Vec<String> = input.lines().map(String::from).collect();
    want.sort();
    assert_eq!(got, want, "the output is not the input's lines, each once");
}

/// `nohup sluice ... &`, or a script's background job: sluice started with `SIGHUP` and
/// `SIGINT` ignored keeps ignoring them, so a closing terminal or a Ctrl-C meant for the script
/// does not stop the job, which finishes with its output (as Hadoop's client does).
#[test]
fn signals_ignored_at_start_stay_ignored() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let (started, go) = (s.arg("started"), s.arg("go"));
    let mapper = s.script(
        "wait.sh",
        &format!(
            "touch {started}\n\
             while [ ! -e {go} ]; do sleep 0.05; done\n\
             exec cat\n"
        ),
    );
    let running = s.start_ignoring(
        "HUP INT",
        &[
            "-input", &input, "-output", &out, "-mapper", &mapper, "-reducer", "cat",
        ],
    );
    wait_for_file(&s.path("started"));
    for signal in ["-HUP", "-INT"] {
        let sent = Command::new("kill")
            .args([signal, &running.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
    // Long enough for a handler to have cancelled the job, had one been installed.
    thread::sleep(Duration::from_millis(300));
    fs::write(s.path("go"), "").unwrap();
    let run = running.finish(DEADLINE);
    run.assert_success();
    assert_eq!(s.output_lines("out"), ABC_LINES);
}

/// A mapper that stops reading at once (closes its input, exits with success) over an input
/// small enough to reach it in one last write succeeds, every time: Hadoop ignores a failure
/// of that last write, so whether the program was gone before it must not matter (it decided,
/// by a race, whether the attempt failed). Several jobs in a row, since each lost the race
/// only now and then.
#[test]
fn a_program_that_stops_reading_a_small_input_succeeds_every_time() {
    let s = Scratch::new();
    let input = s.write("input.txt", &numbered_lines("line-", 200));
    for run in 0..8 {
        let out = s.arg(&format!("out{run}"));
        let finished = s.run(&[
            "-D",
            "mapreduce.map.maxattempts=1",
            "-input",
            &input,
            "-output",
            &out,
            "-mapper",
            "sh -c 'exec 0<&-; echo done'",
            "-reducer",
            "cat",
        ]);
        finished.assert_success();
        assert_eq!(s.output_lines(&format!("out{run}")), ["done\t"]);
    }
}

/// A program that writes a huge stderr line without a line end (a binary dump, a progress
/// bar without `\n`): the task keeps it in bounded pieces, not whole in memory; the log still
/// gets all of it, and the lines after it are quoted when the program fails.
#[test]
fn a_huge_stderr_line_is_not_held_in_memory() {
    const BYTES: u64 = 200_000_000;
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let mapper = format!("sh -c 'cat; head -c {BYTES} /dev/zero | tr \"\\\\0\" x >&2'");
    let finished = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    finished.assert_success();
    // The job's summary line: `..., peak RSS 9.89 MiB; map ...`.
    let peak = finished
        .stderr
        .split("peak RSS ")
        .nth(1)
        .and_then(|rest| rest.split(';').next())
        .unwrap_or_else(|| panic!("no peak RSS in:\n{}", finished.stderr));
    let (amount, unit) = peak.split_once(' ').unwrap();
    let amount: f64 = amount.parse().unwrap();
    let mib = match unit {
        "KiB" => amount / 1024.0,
        "MiB" => amount,
        "GiB" => amount * 1024.0,
        other => panic!("unit {other:?} in {peak:?}"),
    };
    assert!(
        mib < 100.0,
        "peak RSS {peak} for a {BYTES}-byte stderr line"
    );

    // A failed job keeps its logs: the long line is there whole, with what followed it.
    let failing = "sh -c 'cat; head -c 1000000 /dev/zero | tr \"\\\\0\" x >&2; \
                   echo >&2; echo MARKER-after >&2; exit 3'";
    let failed = s.run(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-input",
        &input,
        "-output",
        &s.arg("failed"),
        "-mapper",
        failing,
        "-reducer",
        "cat",
    ]);
    failed.assert_failed(&s.path("failed"));
    failed.assert_says("MARKER-after");
    let logs = failed
        .stderr
        .split("the programs' stderr is in ")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .unwrap_or_else(|| panic!("no log directory in:\n{}", failed.stderr));
    let sizes: Vec<u64> = fs::read_dir(logs)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .collect();
    assert_eq!(sizes, [1_000_000 + 1 + "MARKER-after\n".len() as u64]);
}

/// A mapper that succeeds while a process it left in the background still holds its output:
/// the task waits for that process and keeps what it writes (as Hadoop's task reads the
/// output to its end), and the console says why the task waits.
#[test]
fn a_background_writer_after_a_successful_exit_is_waited_for() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let finished = s.run(&[
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        "sh -c 'cat >/dev/null; (sleep 11; echo late) &'",
        "-reducer",
        "cat",
    ]);
    finished.assert_success();
    finished.assert_says("WARN sluice.Job: attempt_");
    finished.assert_says("exited 10 s ago, but a process it started still holds its output open");
    assert_eq!(s.output_lines("out"), ["late\t"]);
}

/// A mapper that exits (with status 0) before reading its input, leaving a background
/// process that holds its input open but never reads it: the task does not wait for that
/// process (even with no task timeout) but fails at once, the program having exited before
/// reading all of its input.
#[test]
fn a_background_process_holding_the_input_does_not_hold_the_task() {
    let s = Scratch::new();
    // Far more than the pipe and the feeder's buffer hold.
    let input = s.write(
        "input.txt",
        &numbered_lines("a line of the input ", 200_000),
    );
    let out = s.arg("out");
    let pids = s.arg("pids.txt");
    let mapper =
        format!("sh -c 'exec 3<&0; head -n1; sleep 300 <&3 >/dev/null 2>&1 & echo $! > {pids}'");
    let run = s.start(&[
        "-D",
        "mapreduce.map.maxattempts=1",
        "-D",
        "mapreduce.task.timeout=0",
        "-input",
        &input,
        "-output",
        &out,
        "-mapper",
        &mapper,
        "-reducer",
        "cat",
    ]);
    let finished =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.finish(SHORT_DEADLINE)));
    let started = pids_in(&s.path("pids.txt"));
    let Ok(finished) = finished else {
        for pid in started {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        panic!("the task waited for the process holding its input");
    };
    finished.assert_failed(&s.path("out"));
    finished.assert_says("before reading all of its input");
    assert_gone(&started);
}

/// `stream.joindelay.milli` bounds the wait for a process a successful mapper left holding
/// its output, as in Hadoop: the task ends that long after the exit without what the process
/// would write later, and the process goes with the program's group.
#[test]
fn the_join_delay_bounds_the_wait_for_a_background_writer() {
    let s = Scratch::new();
    let input = s.write("input.txt", ABC);
    let out = s.arg("out");
    let pids = s.arg("pids.txt");
    let mapper = format!("sh -c 'cat; (sleep 30; echo late) & echo $! > {pids}'");
    let finished = s
        .start(&[
            "-D",
            "stream.joindelay.milli=500",
            "-input",
            &input,
            "-output",
            &out,
            "-mapper",
            &mapper,
            "-reducer",
            "cat",
        ])
        .finish(SHORT_DEADLINE);
    finished.assert_success();
    let lines = s.output_lines("out");
    assert_eq!(lines.len(), ABC_LINES.len(), "{lines:?}");
    assert!(!lines.iter().any(|l| l.starts_with("late")), "{lines:?}");
    assert_gone(&pids_in(&s.path("pids.txt")));
}
