//! Failures and usage errors: the exit status (1 for a failed job, 2 for a command-line usage
//! error), a message on stderr that starts with `sluice: error:` and names the culprit, and the
//! all-or-nothing output: no output directory, no `_SUCCESS`, no temporary or spill directory
//! left behind, and an existing output directory never touched.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::compressed::{bzip2, gzip, Compress};
use crate::corpus::messy_corpus;
use crate::util::{
    assert_job_failed, assert_no_debris, assert_same_output, gen_text, list_dir, running_as_root,
    JobRun, Mount, Outcome, JOBS,
};

#[test]
fn missing_input_path() {
    let dir = tempfile::tempdir().unwrap();
    let present = dir.path().join("present.txt");
    fs::write(&present, "some words\n").unwrap();
    let missing = dir.path().join("no-such-file.txt");
    let out = dir.path().join("out");
    for job in JOBS {
        let mut run = JobRun::new(job)
            .input(&present)
            .input(&missing)
            .output(&out);
        if job == "grep" {
            run = run.args(&["--pattern", "x"]);
        }
        let outcome = run.run();
        assert_job_failed(
            &outcome,
            &out,
            &[&missing.display().to_string()],
            &run.describe(),
        );
    }
    // A glob matching nothing is a missing input too.
    let glob = dir.path().join("*.nothing");
    let run = JobRun::new("wordcount").input(&glob).output(&out);
    assert_job_failed(&run.run(), &out, &["*.nothing"], "empty glob");
    // The only entries left are the ones the test made.
    assert_eq!(list_dir(dir.path()), vec!["present.txt"]);
}

#[test]
fn existing_output_is_refused_and_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "a b c\n").unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    fs::write(out.join("keep.txt"), "precious").unwrap();
    fs::write(out.join("part-r-00000"), "old result\n").unwrap();
    let outcome = JobRun::new("wordcount").input(&input).output(&out).run();
    outcome.assert_code(1, "existing output");
    assert!(
        outcome.stderr.starts_with("sluice: error:"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains("already exists"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains(&out.display().to_string()),
        "{}",
        outcome.stderr
    );
    assert_eq!(list_dir(&out), vec!["keep.txt", "part-r-00000"]);
    assert_eq!(fs::read(out.join("keep.txt")).unwrap(), b"precious");
    assert_eq!(fs::read(out.join("part-r-00000")).unwrap(), b"old result\n");
    assert_no_debris(dir.path());
    // An existing plain file in the way is refused too, and left as it was.
    let file = dir.path().join("file-out");
    fs::write(&file, "x").unwrap();
    let outcome = JobRun::new("sort").input(&input).output(&file).run();
    outcome.assert_code(1, "output is a file");
    assert!(
        outcome.stderr.contains("already exists"),
        "{}",
        outcome.stderr
    );
    assert_eq!(fs::read(&file).unwrap(), b"x");
    assert_no_debris(dir.path());
}

/// An empty input directory (or one with only hidden and empty files) is a valid, empty input:
/// every part file exists, empty, plus `_SUCCESS`.
#[test]
fn empty_input_directory_gives_empty_parts() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty");
    fs::create_dir_all(empty.join("sub/deeper")).unwrap();
    let hidden_only = dir.path().join("hidden-only");
    fs::create_dir_all(hidden_only.join("sub")).unwrap();
    fs::write(hidden_only.join("_ignored.txt"), "words here\n").unwrap();
    fs::write(hidden_only.join("sub/.ignored"), "more words\n").unwrap();
    fs::write(hidden_only.join("sub/empty.txt"), "").unwrap();
    for input in [&empty, &hidden_only] {
        for job in JOBS {
            for reducers in [1usize, 3] {
                let out = dir.path().join(format!("out-{job}-{reducers}"));
                let r = reducers.to_string();
                let mut run = JobRun::new(job)
                    .input(input)
                    .output(&out)
                    .args(&["--reducers", &r]);
                if job == "grep" {
                    run = run.args(&["--pattern", "w"]);
                }
                run.run_ok();
                // Grep's final stage has one partition whatever --reducers says.
                let parts = if job == "grep" { 1 } else { reducers };
                let mut want: Vec<String> = (0..parts).map(|p| format!("part-r-{p:05}")).collect();
                want.push("_SUCCESS".into());
                want.sort();
                assert_eq!(list_dir(&out), want, "{}", run.describe());
                for name in want {
                    assert_eq!(fs::metadata(out.join(&name)).unwrap().len(), 0, "{name}");
                }
                fs::remove_dir_all(&out).unwrap();
            }
        }
    }
    assert_no_debris(dir.path());
}

/// Corrupt compressed inputs: truncated, bytes flipped in the middle, not compressed at all.
/// The job fails naming the file, and writes nothing.
/// zstd with a content checksum (the library leaves it off by default).
fn zstd_checksummed(data: &[u8]) -> Vec<u8> {
    let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(true).unwrap();
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// An LZ4 frame with block and content checksums.
fn lz4_checksummed(data: &[u8]) -> Vec<u8> {
    let info = lz4_flex::frame::FrameInfo::new()
        .content_checksum(true)
        .block_checksums(true);
    let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[test]
fn corrupt_compressed_input() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = messy_corpus(dir.path(), false);
    let text: Vec<u8> = fs::read(corpus.join("boundary.txt")).unwrap().repeat(20);
    let out = dir.path().join("out");
    // Checksummed streams only: without a checksum, flipped bytes in zstd or LZ4 literals can
    // decode "successfully" to other bytes, which no reader could detect.
    let codecs: [(&str, Compress); 4] = [
        ("gz", gzip),
        ("zst", zstd_checksummed),
        ("lz4", lz4_checksummed),
        ("bz2", bzip2),
    ];
    for (suffix, compress) in codecs {
        let good = compress(&text);
        let truncated = good[..good.len() / 2].to_vec();
        let mut flipped = good.clone();
        let mid = flipped.len() / 2;
        for b in &mut flipped[mid..mid + 16] {
            *b ^= 0x5a;
        }
        let garbage = b"this is not compressed at all\n".repeat(10);
        for (kind, bytes) in [
            ("truncated", truncated),
            ("flipped", flipped),
            ("garbage", garbage),
        ] {
            let bad_dir = dir.path().join(format!("in-{kind}-{suffix}"));
            fs::create_dir(&bad_dir).unwrap();
            fs::write(bad_dir.join("fine.txt"), "fine words\n").unwrap();
            let bad = bad_dir.join(format!("bad.txt.{suffix}"));
            fs::write(&bad, bytes).unwrap();
            let run = JobRun::new("wordcount")
                .input(&bad_dir)
                .output(&out)
                .args(&["--threads", "2"]);
            let what = format!("{kind} .{suffix}: {}", run.describe());
            assert_job_failed(&run.run(), &out, &[&bad.display().to_string()], &what);
        }
    }
}

#[test]
fn invalid_pattern_and_group() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "abc\n").unwrap();
    let out = dir.path().join("out");
    // An invalid regex is a usage error, caught while parsing the command line.
    let i = input.display().to_string();
    let o = out.display().to_string();
    let args = [
        "run",
        "grep",
        "--input",
        &i,
        "--output",
        &o,
        "--pattern",
        "([a-z",
    ];
    let outcome = crate::util::sluice(&args, None);
    outcome.assert_code(2, "invalid regex");
    assert!(outcome.stderr.contains("--pattern"), "{}", outcome.stderr);
    assert!(!out.exists());
    let run =
        JobRun::new("grep")
            .input(&input)
            .output(&out)
            .args(&["--pattern", "(a)b", "--group", "2"]);
    assert_job_failed(&run.run(), &out, &["--group 2"], "group out of range");
    assert_eq!(list_dir(dir.path()), vec!["in.txt"]);
}

/// Settings that cannot work are refused before anything is written.
#[test]
fn invalid_settings_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "abc\n").unwrap();
    let out = dir.path().join("out");
    let cases: [(&[&str], &[&str]); 2] = [
        (&["--memory", "1KiB"], &["memory", "minimum"]),
        (&["--split-size", "0"], &["split size", "at least 1"]),
    ];
    for (args, needles) in cases {
        for job in ["wordcount", "sort"] {
            let run = JobRun::new(job).input(&input).output(&out).args(args);
            let what = run.describe();
            assert_job_failed(&run.run(), &out, needles, &what);
        }
    }
    assert_eq!(list_dir(dir.path()), vec!["in.txt"]);
}

/// Malformed command lines are usage errors: exit 2, nothing written.
#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "abc\n").unwrap();
    let out = dir.path().join("out");
    let i = input.display().to_string();
    let o = out.display().to_string();
    let cases: [&[&str]; 8] = [
        &[
            "run",
            "sort",
            "--input",
            &i,
            "--output",
            &o,
            "--reducers",
            "0",
        ],
        &[
            "run",
            "sort",
            "--input",
            &i,
            "--output",
            &o,
            "--threads",
            "0",
        ],
        &["run", "wordcount", "--input", &i],  // no --output
        &["run", "wordcount", "--output", &o], // no --input
        &["run", "nosuchjob", "--input", &i, "--output", &o], // unknown job
        &["run", "grep", "--input", &i, "--output", &o], // no --pattern
        &[
            "run", "sort", "--input", &i, "--output", &o, "--memory", "lots",
        ], // bad size
        &[
            "run",
            "sort",
            "--input",
            &i,
            "--output",
            &o,
            "--spill-codec",
            "rar",
        ],
    ];
    for args in cases {
        let outcome = crate::util::sluice(args, None);
        outcome.assert_code(2, &format!("{args:?}"));
        assert!(!outcome.stderr.is_empty(), "{args:?}: no message");
        assert!(!out.exists(), "{args:?}: output created");
    }
    assert_eq!(list_dir(dir.path()), vec!["in.txt"]);
}

/// A file that cannot be read fails the job naming it. Root reads anything, so as root the job
/// runs as `nobody` (through `setpriv`, from a copy of the binary that `nobody` may run); the
/// case is skipped, with a note, only where that is impossible.
#[test]
fn unreadable_input_file() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir(&input).unwrap();
    fs::write(input.join("ok.txt"), "fine\n").unwrap();
    let locked = input.join("locked.txt");
    fs::write(&locked, "secret\n").unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let out = dir.path().join("out");
    let args = [
        "run",
        "wordcount",
        "--quiet",
        "--input",
        input.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ];
    let outcome = if running_as_root() {
        // `nobody` must be able to enter the directory, run the binary and write the output.
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o777)).unwrap();
        let binary = dir.path().join("sluice");
        fs::copy(crate::util::SLUICE, &binary).unwrap();
        fs::set_permissions(&binary, fs::Permissions::from_mode(0o755)).unwrap();
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(&binary)
            .args(args);
        let result = cmd
            .output()
            .expect("as root, this test runs sluice as nobody with setpriv (util-linux)");
        fs::remove_file(&binary).unwrap();
        let stderr = String::from_utf8_lossy(&result.stderr).into_owned();
        assert!(
            !stderr.starts_with("setpriv:"),
            "setpriv cannot drop privileges: {stderr}"
        );
        Outcome {
            status: result.status,
            stdout: String::from_utf8_lossy(&result.stdout).into_owned(),
            stderr,
        }
    } else {
        crate::util::sluice(&args, None)
    };
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o644)).unwrap();
    assert_job_failed(
        &outcome,
        &out,
        &[&locked.display().to_string(), "Permission denied"],
        "unreadable file",
    );
}

/// A full disk (a 2 MiB tmpfs) under the output, the spills, or both: the job fails with a
/// message naming a path on the full file system, and leaves nothing there (no output, no
/// `_SUCCESS`, no temporary or spill directory).
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "mounts a tmpfs, which needs root: cargo test --features test-root"
)]
fn full_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (input, mount, roomy) = small_and_roomy_disks(dir.path(), 21);
    let small = mount.0.clone();
    let spill_here = small.display().to_string();
    let spill_roomy = roomy.display().to_string();
    // (name, output, extra arguments): output and spills on the small disk; only the output
    // there (spills elsewhere); only the spills there (output elsewhere).
    let cases: [(&str, PathBuf, Vec<&str>); 3] = [
        ("both", small.join("out"), vec![]),
        (
            "output",
            small.join("out"),
            vec!["--spill-dir", &spill_roomy],
        ),
        (
            "spills",
            roomy.join("out"),
            vec!["--spill-dir", &spill_here],
        ),
    ];
    for (name, out, extra) in cases {
        for job in ["sort", "wordcount"] {
            let run = JobRun::new(job)
                .input(&input)
                .output(&out)
                .args(&[
                    "--memory",
                    "4MiB",
                    "--threads",
                    "2",
                    "--spill-codec",
                    "none",
                ])
                .args(&extra);
            let outcome = run.run();
            let what = format!("full disk ({name}), {job}: {}", run.describe());
            println!(
                "{what}: exit {:?}, stderr: {}",
                outcome.code(),
                outcome.stderr.trim()
            );
            if job == "wordcount" && outcome.code() == Some(0) {
                // Word count's combined spills and output may fit in 2 MiB; sort's cannot (its
                // output alone is 8 MiB), so only sort must fail.
                fs::remove_dir_all(&out).unwrap();
                continue;
            }
            assert_job_failed(&outcome, &out, &[&spill_here], &what);
            assert_eq!(
                list_dir(&small),
                Vec::<String>::new(),
                "{what}: debris on the small disk"
            );
            assert_no_debris(&roomy);
        }
    }
}

/// In `dir`: 16 MiB of text (`seed`), a 2 MiB tmpfs (unmounted when the [`Mount`] is
/// dropped) and a directory on the roomy disk beside it.
fn small_and_roomy_disks(dir: &Path, seed: u64) -> (PathBuf, Mount, PathBuf) {
    let input = dir.join("gen");
    gen_text(&input, "8MiB", 2, seed);
    let mount = Mount::tmpfs(&dir.join("small-disk"), "2m");
    let roomy = dir.join("roomy");
    fs::create_dir(&roomy).unwrap();
    (input, mount, roomy)
}

/// Spills spread over two directories, one on a disk that is (nearly) full: the job passes
/// over that one, as Hadoop's local directory allocator does, and succeeds with the output of
/// a run on the roomy one alone, instead of failing on the full disk.
#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "mounts a tmpfs, which needs root: cargo test --features test-root"
)]
fn a_full_disk_among_the_spill_directories_is_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let (input, mount, roomy) = small_and_roomy_disks(dir.path(), 22);
    let small = mount.0.clone();
    let settings = [
        "--memory",
        "4MiB",
        "--threads",
        "2",
        "--spill-codec",
        "none",
    ];
    let expected = dir.path().join("expected");
    JobRun::new("sort")
        .input(&input)
        .output(&expected)
        .args(&settings)
        .args(&["--spill-dir", &roomy.display().to_string()])
        .run_ok();
    let out = dir.path().join("out");
    let run = JobRun::new("sort")
        .input(&input)
        .output(&out)
        .args(&settings)
        .args(&["--spill-dir", &small.display().to_string()])
        .args(&["--spill-dir", &roomy.display().to_string()]);
    let outcome = run.run();
    assert_eq!(
        outcome.code(),
        Some(0),
        "{}: {}",
        run.describe(),
        outcome.stderr
    );
    // The reference holds the part files alone.
    fs::remove_file(expected.join("_SUCCESS")).unwrap();
    assert_same_output(&out, &expected, "spills beside a full disk");
    assert_eq!(
        list_dir(&small),
        Vec::<String>::new(),
        "debris on the small disk"
    );
    assert_no_debris(&roomy);
}

/// The first `: `-separated segment of a message (longer than a few characters) that occurs
/// more than once, if any.
fn repeated_segment(message: &str) -> Option<String> {
    let segments: Vec<&str> = message.trim().split(": ").collect();
    segments
        .iter()
        .enumerate()
        .find(|(i, s)| s.len() > 8 && segments[i + 1..].contains(s))
        .map(|(_, s)| s.to_string())
}

/// Each cause appears once in an error message: today every error whose `Display` already
/// includes its source is printed again by the `{:#}` chain, so the tail of the message repeats
/// (two or three times) for a corrupt input, a full disk, an unwritable output.
#[test]

fn error_messages_state_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.txt.gz");
    let good = gzip(b"some words here\n");
    fs::write(&bad, &good[..good.len() / 2]).unwrap();
    let out = dir.path().join("out");
    let outcome = JobRun::new("wordcount").input(&bad).output(&out).run();
    assert_job_failed(
        &outcome,
        &out,
        &[&bad.display().to_string()],
        "truncated gzip",
    );
    assert_eq!(
        repeated_segment(&outcome.stderr),
        None,
        "repeated cause in: {}",
        outcome.stderr
    );
}

/// A file count far beyond reason (each file is a task) is a usage error (exit 2) naming the
/// option and the bound, for every command that writes files, instead of aborting on a
/// terabyte allocation.
#[test]
fn absurd_file_counts_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out").display().to_string();
    let huge = "100000000000";
    let commands: [&[&str]; 4] = [
        &[
            "gen", "text", "--size", "1KiB", "--files", huge, "--output", &out,
        ],
        &[
            "gen", "random", "--size", "1KiB", "--files", huge, "--output", &out,
        ],
        &[
            "run", "teragen", "--rows", "10", "--maps", huge, "--output", &out,
        ],
        &[
            "run", "dfsio", "--write", "--size", "1KiB", "--files", huge, "--output", &out,
        ],
    ];
    for args in commands {
        let outcome = crate::util::sluice(args, None);
        let what = args.join(" ");
        outcome.assert_code(2, &what);
        assert!(
            outcome.stderr.contains("must be at most 1000000"),
            "{what}: {}",
            outcome.stderr
        );
        assert!(
            !dir.path().join("out").exists(),
            "{what} created its output"
        );
    }
}

/// A reducer count far beyond what the budget can keep track of is a usage error (exit 2)
/// before anything is read, allocated or created, naming the option and the bound, instead of
/// aborting on a 48 GB allocation (terasort's boundaries) or leaving directories behind.
#[test]
fn absurd_reducer_counts_are_refused_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "b\t1\na\t2\n").unwrap();
    let rows = dir.path().join("rows");
    crate::util::sluice(
        &[
            "run",
            "teragen",
            "--rows",
            "1000",
            "--output",
            &rows.display().to_string(),
        ],
        None,
    )
    .assert_code(0, "teragen");
    let out = dir.path().join("out");
    for job in ["sort", "wordcount", "grep", "invertedindex", "terasort"] {
        let source = if job == "terasort" { &rows } else { &input };
        let mut run = JobRun::new(job)
            .input(source)
            .output(&out)
            .args(&["--reducers", "3000000000"]);
        if job == "grep" {
            run = run.args(&["--pattern", "a"]);
        }
        let outcome = run.run();
        let what = run.describe();
        outcome.assert_code(2, &what);
        for needle in [
            "--reducers 3000000000",
            "3000000000 reducers",
            "at most 2097152 partitions",
        ] {
            assert!(
                outcome.stderr.contains(needle),
                "{what}: {}",
                outcome.stderr
            );
        }
        assert!(!out.exists(), "{what}: output created");
    }
    assert_eq!(list_dir(dir.path()), vec!["in.txt", "rows"]);
}

/// Thread counts are bounded: more than 4096 is a usage error naming the option and the bound,
/// on the command line as in streaming's `-D sluice.threads`.
#[test]
fn absurd_thread_counts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "abc\n").unwrap();
    let out = dir.path().join("out");
    let outcome = JobRun::new("sort")
        .input(&input)
        .output(&out)
        .args(&["--threads", "100000000"])
        .run();
    outcome.assert_code(2, "--threads 100000000");
    assert!(outcome.stderr.contains("--threads"), "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("at most 4096"),
        "{}",
        outcome.stderr
    );
    let outcome = crate::util::sluice(
        &[
            "streaming",
            "-D",
            "sluice.threads=5000",
            "-input",
            &input.display().to_string(),
            "-output",
            &out.display().to_string(),
            "-mapper",
            "cat",
        ],
        Some(dir.path()),
    );
    outcome.assert_code(1, "-D sluice.threads=5000");
    assert!(
        outcome
            .stderr
            .contains("-D sluice.threads=5000: expected a number from 1 to 4096"),
        "{}",
        outcome.stderr
    );
    assert!(!out.exists());
    assert_eq!(list_dir(dir.path()), vec!["in.txt"]);
}

/// A job killed outright (SIGKILL, as the out-of-memory killer does) leaves its staging and
/// spill directories behind; the next job writing the same output with the same spill
/// directory removes them, runs, and leaves nothing but its output.
#[test]
fn what_a_killed_job_left_is_removed_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("gen");
    gen_text(&input, "24MiB", 4, 5);
    let spill = dir.path().join("spill");
    fs::create_dir(&spill).unwrap();
    let out = dir.path().join("out");
    let args = |out: &Path| {
        vec![
            "run".to_string(),
            "wordcount".into(),
            "--quiet".into(),
            "--memory".into(),
            "8MiB".into(),
            "--threads".into(),
            "2".into(),
            "--input".into(),
            input.display().to_string(),
            "--output".into(),
            out.display().to_string(),
            "--spill-dir".into(),
            spill.display().to_string(),
        ]
    };
    let mut child = Command::new(crate::util::SLUICE)
        .args(args(&out))
        .spawn()
        .unwrap();
    // Killed once a spill file is written: both directories exist then.
    let spilled = || {
        list_dir(&spill).iter().any(|d| {
            d.starts_with(".sluice-spill-")
                && fs::read_dir(spill.join(d)).is_ok_and(|mut files| {
                    files.any(|f| {
                        f.is_ok_and(|f| f.file_name().to_string_lossy().ends_with(".spill"))
                    })
                })
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !spilled() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the job ended before it spilled"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "no spill file in 60 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let staging: Vec<String> = list_dir(dir.path())
        .into_iter()
        .filter(|n| n.starts_with(".out.sluice-tmp-"))
        .collect();
    assert_eq!(staging.len(), 1, "the killed job's staging directory");
    assert!(!out.exists(), "a killed job left output");
    // A job writing another output leaves the killed job's staging directory alone (only its
    // spill directory, in the shared spill place, is removed).
    let other = dir.path().join("other");
    let outcome = crate::util::sluice(&args(&other), None);
    outcome.assert_code(0, "a job beside the killed one's leftovers");
    assert!(dir.path().join(&staging[0]).exists());
    assert_no_debris(&spill);
    let outcome = crate::util::sluice(&args(&out), None);
    outcome.assert_code(0, "the killed job again");
    assert!(out.join("_SUCCESS").exists());
    assert_no_debris(dir.path());
    assert_no_debris(&spill);
    assert_eq!(list_dir(&spill), Vec::<String>::new());
    let counts = |d: &Path| {
        let mut lines: Vec<String> = list_dir(d)
            .iter()
            .filter(|n| n.starts_with("part-"))
            .flat_map(|n| {
                fs::read_to_string(d.join(n))
                    .unwrap()
                    .lines()
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect();
        lines.sort();
        lines
    };
    assert_eq!(counts(&out), counts(&other), "the rerun's counts");
}

/// An argument that is not UTF-8 (a path in another encoding) is a usage error, exit 2, never a
/// panic, whichever command gets it.
#[test]
fn an_argument_that_is_not_utf8_is_a_usage_error() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    fs::write(&input, "a b\n").unwrap();
    let output = dir.path().join(OsStr::from_bytes(b"out\xff"));
    for (command, output_option) in [
        (&["run", "wordcount", "--input"][..], "--output"),
        (&["streaming", "-mapper", "cat", "-input"][..], "-output"),
    ] {
        let mut args: Vec<&OsStr> = command.iter().map(OsStr::new).collect();
        args.extend([
            input.as_os_str(),
            OsStr::new(output_option),
            output.as_os_str(),
        ]);
        let out = Command::new(crate::util::SLUICE)
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
        assert!(stderr.contains("invalid UTF-8"), "{command:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{command:?}: {stderr}");
    }
}
