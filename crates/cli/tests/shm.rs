//! `sluice streaming` over shared memory (`-io shm`, `stream.*=shm`) with the example programs
//! of `examples/shm/` (C and Python clients): the output must be byte for byte the output of
//! the same programs over pipes, and word count must match the independent Python reference.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The C examples, compiled once for all tests into a directory that lives for the run.
fn c_examples() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // Under the target directory (cargo's place for tests' files), not the system's.
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("shm-examples-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let root = repo();
        let sources = [
            ("wc_map", "examples/shm/c/wc_map.c"),
            ("wc_reduce", "examples/shm/c/wc_reduce.c"),
            ("grep_map", "examples/shm/c/grep_map.c"),
            ("conform", "tests/shm/conform.c"),
        ];
        for (example, source) in sources {
            let status = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
                .args(["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
                .arg(root.join("clients/c"))
                .arg(root.join("clients/c/sluice_shm.c"))
                .arg(root.join(source))
                .arg("-o")
                .arg(dir.join(example))
                .status()
                .unwrap();
            assert!(status.success(), "compiling {example}.c failed");
        }
        dir
    })
}

/// The command that runs example `name` (`wc_map`, ...) written in `lang`.
fn example(lang: &str, name: &str) -> String {
    match lang {
        "c" => c_examples().join(name).display().to_string(),
        "python" => format!(
            "python3 {}",
            repo()
                .join(format!("examples/shm/python/{name}.py"))
                .display()
        ),
        _ => unreachable!(),
    }
}

/// An input directory with generated text and the messy cases: `\r\n` and lone `\r` line
/// ends, no final newline, a line of 3 MB, bytes that are not UTF-8, tabs, empty lines.
fn corpus(dir: &Path) -> PathBuf {
    let input = dir.join("input");
    succeed(
        Command::new(SLUICE)
            .args(["gen", "text", "--size", "6MiB", "--seed", "7", "--output"])
            .arg(&input),
    );
    let mut messy = Vec::new();
    messy.extend_from_slice(b"the cat\r\nthe dog\rthe end\n\n\t\ttabs\tin the\tline\n");
    messy.extend_from_slice(b"caf\xc3\xa9 \xff\xfe bytes the\x0cform feed\n");
    for i in 0..300_000u32 {
        messy.extend_from_slice(if i.is_multiple_of(2) {
            b"thing "
        } else {
            b"other "
        });
    }
    messy.extend_from_slice(b"\nlast line without newline the");
    fs::write(input.join("messy.txt"), messy).unwrap();
    input
}

/// Runs `command`, asserting that it succeeds.
fn succeed(command: &mut Command) -> Output {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn streaming(args: &[&str]) -> Output {
    Command::new(SLUICE)
        .arg("streaming")
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap()
}

/// Runs a streaming job and returns its part files, concatenated in order.
fn run_job(extra: &[&str], input: &Path, output: &Path, mapper: &str, reducer: &str) -> Vec<u8> {
    // Generic options (-D) come first, as in Hadoop.
    let mut args = extra.to_vec();
    args.extend_from_slice(&[
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        mapper,
        "-reducer",
        reducer,
    ]);
    let out = streaming(&args);
    assert!(
        out.status.success(),
        "sluice streaming {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    concat_parts(output)
}

fn concat_parts(dir: &Path) -> Vec<u8> {
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
    assert!(!parts.is_empty(), "no part files in {}", dir.display());
    parts.iter().flat_map(|p| fs::read(p).unwrap()).collect()
}

/// Word count over shm equals word count over pipes and the independent reference, for both
/// clients, with one and three reducers.
#[test]
fn wordcount_over_shm_matches_pipes_and_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    for reducers in ["1", "3"] {
        let reference = dir.path().join(format!("reference-{reducers}"));
        succeed(
            Command::new("python3")
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/wordcount.py"))
                .args(["--out", reference.to_str().unwrap(), "--reducers", reducers])
                .arg(&input),
        );
        let expected = concat_parts(&reference);
        for lang in ["c", "python"] {
            let (map, reduce) = (example(lang, "wc_map"), example(lang, "wc_reduce"));
            let over_pipes = run_job(
                &["-numReduceTasks", reducers],
                &input,
                &dir.path().join(format!("{lang}-pipes-{reducers}")),
                &map,
                &reduce,
            );
            let over_shm = run_job(
                &["-io", "shm", "-numReduceTasks", reducers],
                &input,
                &dir.path().join(format!("{lang}-shm-{reducers}")),
                &map,
                &reduce,
            );
            assert!(
                over_pipes == expected,
                "{lang}, {reducers} reducers: pipes differ from the reference"
            );
            assert!(
                over_shm == expected,
                "{lang}, {reducers} reducers: shm differs from the reference"
            );
        }
    }
}

/// Grep over shm equals grep over pipes and an independent count of the matches; only the
/// map side uses shm, through one key, with a ring of the smallest size.
#[test]
fn grep_over_shm_matches_pipes_and_a_reference() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    // Counted independently: every non-overlapping match of th[a-z]* in every line.
    let reference = succeed(
        Command::new("python3")
        .arg("-c")
        .arg(
            r#"
import collections, os, re, sys
counts = collections.Counter()
for root, _, files in os.walk(sys.argv[1]):
    for name in files:
        if name[0] in "._":
            continue
        data = open(os.path.join(root, name), "rb").read()
        for line in re.split(rb"\r\n|\r|\n", data):
            counts.update(re.findall(rb"th[a-z]*", line))
sys.stdout.buffer.write(b"".join(k + b"\t" + str(v).encode() + b"\n" for k, v in sorted(counts.items())))
"#,
        )
        .arg(&input),
    );
    for lang in ["c", "python"] {
        let map = format!("{} th[a-z]*", example(lang, "grep_map"));
        let reduce = example(lang, "wc_reduce");
        let over_pipes = run_job(
            &[],
            &input,
            &dir.path().join(format!("{lang}-pipes")),
            &map,
            &reduce,
        );
        let over_shm = run_job(
            &[
                "-D",
                "stream.map.input=shm",
                "-D",
                "stream.map.output=shm",
                "-D",
                "sluice.shm.ring.size=4096",
            ],
            &input,
            &dir.path().join(format!("{lang}-shm")),
            &map,
            &reduce,
        );
        assert!(
            over_pipes == reference.stdout,
            "{lang}: pipes differ from the reference"
        );
        assert!(
            over_shm == reference.stdout,
            "{lang}: shm differs from the reference"
        );
    }
}

/// Shared memory is only a transport: with `rawbytes` and `typedbytes` framing, a program that
/// copies its input to its output (the C conformance child) gives over shm exactly what `cat`
/// gives over pipes.
#[test]
fn binary_framings_cross_shm_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    let copy = format!("{} copy", c_examples().join("conform").display());
    for framing in ["rawbytes", "typedbytes"] {
        let over_pipes = run_job(
            &["-io", framing, "-numReduceTasks", "2"],
            &input,
            &dir.path().join(format!("{framing}-pipes")),
            "cat",
            "cat",
        );
        let shm = [
            "-D",
            "stream.map.input=shm",
            "-D",
            "stream.map.output=shm",
            "-D",
            "stream.reduce.input=shm",
            "-D",
            "stream.reduce.output=shm",
            "-io",
            framing,
            "-numReduceTasks",
            "2",
        ];
        let over_shm = run_job(
            &shm,
            &input,
            &dir.path().join(format!("{framing}-shm")),
            &copy,
            &copy,
        );
        assert!(
            over_shm == over_pipes,
            "{framing}: shm differs from cat over pipes"
        );
        // The keys did engage shared memory: `cat` itself is refused with them.
        let mut refused = vec!["-D", "mapreduce.map.maxattempts=1"];
        refused.extend(shm);
        let cat_out = dir.path().join(format!("{framing}-cat"));
        refused.extend([
            "-input",
            input.to_str().unwrap(),
            "-output",
            cat_out.to_str().unwrap(),
            "-mapper",
            "cat",
            "-reducer",
            "cat",
        ]);
        let out = streaming(&refused);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("does not speak the sluice shm protocol"),
            "{framing}: cat was not refused"
        );
    }
}

/// A combiner runs over shm too: word count with `wc_reduce` as combiner and reducer equals the
/// reference.
#[test]
fn a_combiner_over_shm_gives_the_same_counts() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path());
    let reference = dir.path().join("reference");
    succeed(
        Command::new("python3")
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/wordcount.py"))
            .args(["--out", reference.to_str().unwrap()])
            .arg(&input),
    );
    let reduce = example("c", "wc_reduce");
    let out = dir.path().join("out");
    // A small budget, so that the combiner runs on many spills; small rings, since each task
    // holds four (its mapper's and its combiner's) out of the budget.
    let args = [
        "-D",
        "sluice.memory=8MiB",
        "-D",
        "sluice.shm.ring.size=65536",
        "-io",
        "shm",
        "-combiner",
        reduce.as_str(),
    ];
    let got = run_job(&args, &input, &out, &example("c", "wc_map"), &reduce);
    assert!(
        got == concat_parts(&reference),
        "combined counts differ from the reference"
    );
}

/// A program that does not speak the protocol fails the job at its first attempt (another
/// would not help) with a message saying so, and no output is left.
#[test]
fn a_program_without_a_client_fails_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, b"a b\nc\n").unwrap();
    let output = dir.path().join("out");
    let out = streaming(&[
        "-io",
        "shm",
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        "cat",
        "-reducer",
        "cat",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("does not speak the sluice shm protocol"),
        "{stderr}"
    );
    assert!(!output.exists(), "a failed job left {}", output.display());
    assert!(!stderr.contains("trying again"), "retried: {stderr}");
}

/// A ring size that is not a power of two is refused before anything runs.
#[test]
fn a_bad_ring_size_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = streaming(&[
        "-D",
        "sluice.shm.ring.size=5000",
        "-io",
        "shm",
        "-input",
        dir.path().to_str().unwrap(),
        "-output",
        dir.path().join("out").to_str().unwrap(),
        "-mapper",
        "cat",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("sluice.shm.ring.size=5000"), "{stderr}");
}

/// The rings count against the memory budget: with `-io shm`, 1 MiB rings and two threads,
/// each running task holds two rings (its program's input and output), so 4 MiB of the budget
/// go to rings and at least 2 MiB must be left for buffers. A 6 MiB budget runs the job; one
/// byte less is refused before any program starts, naming the rings.
#[test]
fn the_rings_count_against_the_memory_budget() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "a b a\nc a b\n".repeat(1000)).unwrap();
    let (map, reduce) = (example("c", "wc_map"), example("c", "wc_reduce"));
    let options = |memory: usize| {
        vec![
            "-D".to_string(),
            format!("sluice.memory={memory}"),
            "-D".to_string(),
            "sluice.threads=2".to_string(),
            "-D".to_string(),
            "sluice.shm.ring.size=1048576".to_string(),
            "-io".to_string(),
            "shm".to_string(),
        ]
    };
    let enough = options(6 << 20);
    let enough: Vec<&str> = enough.iter().map(String::as_str).collect();
    let counts = run_job(&enough, &input, &dir.path().join("enough"), &map, &reduce);
    assert_eq!(
        String::from_utf8_lossy(&counts),
        "a\t3000\nb\t2000\nc\t1000\n"
    );

    let short = options((6 << 20) - 1);
    let mut args: Vec<&str> = short.iter().map(String::as_str).collect();
    let output = dir.path().join("short");
    args.extend_from_slice(&[
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        &map,
        "-reducer",
        &reduce,
    ]);
    let out = streaming(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a budget too small for the rings was accepted"
    );
    assert!(stderr.contains("shared-memory rings"), "{stderr}");
    assert!(!output.exists(), "a refused job left {}", output.display());
}

/// `sluice streaming -io shm` with a Python program given inline, with the Python client on its
/// path; `extra` are generic options. Stopped by a watchdog after two minutes: a hang fails.
fn python_job(dir: &Path, extra: &[&str], program: &str) -> (bool, String) {
    let input = dir.join("in.txt");
    fs::write(&input, "one line\nanother line\n".repeat(1000)).unwrap();
    let output = dir.join("out");
    let python_path = format!("PYTHONPATH={}", repo().join("clients/python").display());
    let mut args: Vec<&str> = extra.to_vec();
    args.extend([
        "-io",
        "shm",
        "-cmdenv",
        &python_path,
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        program,
        "-numReduceTasks",
        "0",
    ]);
    let mut child = Command::new(SLUICE)
        .arg("streaming")
        .args(&args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // A failed job keeps its task logs under TMPDIR: the test's own directory.
        .env("TMPDIR", dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > std::time::Duration::from_secs(120) {
            let _ = child.kill();
            panic!("sluice streaming {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        assert!(!output.exists(), "a failed job left {}", output.display());
    }
    (out.status.success(), stderr)
}

/// The task timeout ends a program that attached and then stopped moving records.
#[test]
fn a_silent_program_over_shm_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = python_job(
        dir.path(),
        &[
            "-D",
            "mapreduce.task.timeout=1000",
            "-D",
            "mapreduce.map.maxattempts=1",
        ],
        "python3 -c \"import sluice_shm, time; channel = sluice_shm.open(); time.sleep(600)\"",
    );
    assert!(!ok);
    assert!(stderr.contains("was killed after 1 s"), "{stderr}");
}

/// A program that exits with success without closing its output ring fails its task.
#[test]
fn a_program_that_does_not_close_its_output_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = python_job(
        dir.path(),
        &["-D", "mapreduce.map.maxattempts=1"],
        "python3 -c \"import os, sluice_shm; channel = sluice_shm.open(); \
         [channel.write(line) for line in channel]; channel.flush(); os._exit(0)\"",
    );
    assert!(!ok);
    assert!(
        stderr.contains("exited without closing its shared-memory output"),
        "{stderr}"
    );
}

/// A program that exits with its input unread fails its task, as over pipes.
#[test]
fn a_program_that_leaves_input_unread_over_shm_fails() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = python_job(
        dir.path(),
        &["-D", "mapreduce.map.maxattempts=1"],
        "python3 -c \"import sluice_shm; sluice_shm.open().close()\"",
    );
    assert!(!ok);
    assert!(
        stderr.contains("before reading all of its input"),
        "{stderr}"
    );
}

/// A program killed before it attached failed like any program: the attempt is retried, and
/// the message is its exit status, not a missing client.
#[test]
fn a_program_killed_before_attaching_is_retried() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stderr) = python_job(
        dir.path(),
        &["-D", "mapreduce.map.maxattempts=2"],
        "sh -c \"echo starting >&2; kill -9 $$\"",
    );
    assert!(!ok);
    assert!(stderr.contains("trying again"), "{stderr}");
    assert!(
        stderr.contains("killed by signal 9") && stderr.contains("before it attached"),
        "{stderr}"
    );
    assert!(!stderr.contains("does not speak"), "{stderr}");
}

/// A process that leaves the program's group and keeps its stderr open does not hold the task.
#[test]
fn an_escaped_process_holding_stderr_does_not_hold_the_task() {
    let dir = tempfile::tempdir().unwrap();
    // A duration no other process uses, so that the escaped one can be found and ended.
    let marker = "599.4321";
    let script = dir.path().join("escape.sh");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nsetsid -f sleep {marker}\nexec python3 -c \"import sluice_shm; \
             channel = sluice_shm.open(); [channel.write(line) for line in channel]; \
             channel.close()\"\n"
        ),
    )
    .unwrap();
    let mut permissions = fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    fs::set_permissions(&script, permissions).unwrap();
    /// Ends the escaped process however the test ends.
    struct Reap(String);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = Command::new("pkill").args(["-f", &self.0]).status();
        }
    }
    let _reap = Reap(format!("sleep {marker}"));
    let (ok, stderr) = python_job(dir.path(), &[], script.to_str().unwrap());
    assert!(ok, "{stderr}");
}
