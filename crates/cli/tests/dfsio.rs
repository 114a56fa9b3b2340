//! `sluice run dfsio` on local `file://` locations: the files it writes, the result block it
//! appends (parsed as a reader of TestDFSIO's log parses it), and its errors; and
//! `sluice gen random`, which writes through the same stores. One test runs dfsio against a
//! real HDFS (an in-JVM MiniDFSCluster of the test harness, `sluice-testkit`), its files
//! checked by Hadoop's own client.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use sluice_testkit::{hadoop_main, MiniDfs, MiniDfsOptions};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Runs `sluice run dfsio ARGS` in `dir`.
fn dfsio(dir: &Path, args: &[&str]) -> Output {
    Command::new(SLUICE)
        .current_dir(dir)
        .args(["run", "dfsio"])
        .args(args)
        .env("SLUICE_PROGRESS", "0")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// One result block: the test's name and every `label: value` line after the first.
#[derive(Debug)]
struct Block {
    test: String,
    fields: BTreeMap<String, String>,
}

impl Block {
    fn number(&self, label: &str) -> f64 {
        let value = self
            .fields
            .get(label)
            .unwrap_or_else(|| panic!("no {label:?} in {self:?}"));
        value
            .parse()
            .unwrap_or_else(|_| panic!("{label}: {value:?} is not a number"))
    }
}

/// The blocks of a TestDFSIO result log: each a header line, eight labelled lines whose labels
/// end at column 23, and an empty line.
fn parse_results(log: &str) -> Vec<Block> {
    const LABELS: [&str; 7] = [
        "Date & time",
        "Number of files",
        "Total MBytes processed",
        "Throughput mb/sec",
        "Average IO rate mb/sec",
        "IO rate std deviation",
        "Test exec time sec",
    ];
    let lines: Vec<&str> = log.split('\n').collect();
    assert_eq!(lines.last(), Some(&""), "the log ends with a newline");
    let lines = &lines[..lines.len() - 1];
    assert_eq!(lines.len() % 9, 0, "blocks of 9 lines:\n{log}");
    lines
        .chunks(9)
        .map(|block| {
            let test = block[0]
                .strip_prefix("----- TestDFSIO ----- : ")
                .unwrap_or_else(|| panic!("header {:?}", block[0]))
                .to_string();
            let mut fields = BTreeMap::new();
            for (line, label) in block[1..8].iter().zip(LABELS) {
                let (name, value) = line.split_at(23);
                assert_eq!(name.trim_start(), label, "in {line:?}");
                assert_eq!(name.len(), 23, "labels are right-aligned to 23 columns");
                let value = value.strip_prefix(": ").unwrap();
                fields.insert(label.to_string(), value.to_string());
            }
            assert_eq!(block[8], "", "a block ends with an empty line");
            Block { test, fields }
        })
        .collect()
}

#[test]
fn write_then_read_reports_as_testdfsio() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("bench");
    let url = format!("file://{}", base.display());
    let log = dir.path().join("results.log");
    let log_arg = log.to_str().unwrap();
    let size = 3 * (1 << 20) + 12_345; // not a whole number of chunks
    let size_arg = size.to_string();

    let write = dfsio(
        dir.path(),
        &[
            "--write",
            "--files",
            "5",
            "--size",
            &size_arg,
            "--output",
            &url,
            "--threads",
            "2",
            "--result-file",
            log_arg,
        ],
    );
    assert_ok(&write, "write");
    for k in 0..5 {
        let file = base.join("io_data").join(format!("test_io_{k}"));
        let meta = std::fs::metadata(&file).unwrap();
        assert_eq!(meta.len(), size, "{}", file.display());
    }
    assert_eq!(std::fs::read_dir(base.join("io_data")).unwrap().count(), 5);
    // Different files, different bytes.
    let a = std::fs::read(base.join("io_data/test_io_0")).unwrap();
    let b = std::fs::read(base.join("io_data/test_io_1")).unwrap();
    assert_ne!(a, b);

    let read = dfsio(
        dir.path(),
        &[
            "--read",
            "--files",
            "5",
            "--size",
            &size_arg,
            "--output",
            &url,
            "--result-file",
            log_arg,
        ],
    );
    assert_ok(&read, "read");

    let results = std::fs::read_to_string(&log).unwrap();
    let blocks = parse_results(&results);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].test, "write");
    assert_eq!(blocks[1].test, "read");
    let total_mb = 5.0 * size as f64 / 1_048_576.0;
    for block in &blocks {
        assert_eq!(block.fields["Number of files"], "5");
        assert!((block.number("Total MBytes processed") - total_mb).abs() <= 0.005);
        assert!(block.number("Throughput mb/sec") > 0.0);
        assert!(block.number("Average IO rate mb/sec") > 0.0);
        assert!(block.number("IO rate std deviation") >= 0.0);
        assert!(block.number("Test exec time sec") >= 0.0);
        // At most two decimals, no trailing zeros, as Java's DecimalFormat("#.##").
        for value in block.fields.values().skip(1) {
            if let Some((_, decimals)) = value.split_once('.') {
                assert!(decimals.len() <= 2 && !decimals.ends_with('0'), "{value}");
            }
        }
    }
    // The same block goes to stdout.
    assert_eq!(parse_results(&text(&read.stdout)).len(), 1);
    assert!(results.ends_with(&text(&read.stdout)));

    // A second write starts afresh, as TestDFSIO's does.
    let again = dfsio(
        dir.path(),
        &[
            "--write", "--files", "2", "--size", "1000", "--output", &url, "-q",
        ],
    );
    assert_ok(&again, "second write");
    assert!(again.stdout.is_empty() && again.stderr.is_empty());
    assert_eq!(std::fs::read_dir(base.join("io_data")).unwrap().count(), 2);
    // Without --result-file the result goes to TestDFSIO's file in the current directory.
    let default_log = std::fs::read_to_string(dir.path().join("TestDFSIO_results.log")).unwrap();
    assert_eq!(
        parse_results(&default_log)[0].fields["Number of files"],
        "2"
    );

    let clean = dfsio(dir.path(), &["--clean", "--output", &url]);
    assert_ok(&clean, "clean");
    assert!(!base.join("io_data").exists());
    assert!(base.exists(), "only io_data is removed");
}

/// Benchmark scripts run TestDFSIO from Hadoop's job client tests jar; `sluice jar` takes
/// that command line as it is: the directory from `-D test.build.data`, TestDFSIO's sizes in
/// binary units (`64KB` is 65,536 bytes, a bare number is MB), `-resFile`, `-bufferSize`
/// accepted, then `-read` and `-clean`.
#[test]
fn testdfsio_command_lines_of_the_jobclient_tests_jar() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("bench");
    let log = dir.path().join("results.log");
    let jar =
        "/opt/hadoop/share/hadoop/mapreduce/hadoop-mapreduce-client-jobclient-3.4.3-tests.jar";
    let setting = format!("test.build.data=file://{}", base.display());
    let testdfsio = |args: &[&str]| {
        let out = Command::new(SLUICE)
            .current_dir(dir.path())
            .args(["jar", jar, "TestDFSIO", "-D", &setting])
            .args(args)
            .output()
            .unwrap();
        assert_ok(&out, &format!("TestDFSIO {args:?}"));
        out
    };
    let log_arg = log.to_str().unwrap();
    let common = ["-nrFiles", "3", "-size", "64KB", "-resFile", log_arg];
    let write = testdfsio(&[&["-write", "-bufferSize", "4096"], &common[..]].concat());
    // As TestDFSIO, the block goes to stderr as records of its logger, one per line, where
    // scripts grep it from; nothing to stdout.
    assert_eq!(text(&write.stdout), "");
    let logged: String = text(&write.stderr)
        .lines()
        .filter_map(|line| Some(format!("{}\n", line.split_once(" INFO fs.TestDFSIO: ")?.1)))
        .collect();
    let blocks = parse_results(&logged);
    assert_eq!(blocks.len(), 1, "{logged}");
    assert_eq!(blocks[0].test, "write");
    assert_eq!(blocks[0].number("Total MBytes processed"), 0.19);
    for k in 0..3 {
        let file = base.join("io_data").join(format!("test_io_{k}"));
        assert_eq!(std::fs::metadata(&file).unwrap().len(), 65_536);
    }
    testdfsio(&[&["-read"], &common[..]].concat());
    let blocks = parse_results(&std::fs::read_to_string(&log).unwrap());
    let tests: Vec<&str> = blocks.iter().map(|b| b.test.as_str()).collect();
    assert_eq!(tests, ["write", "read"]);
    for block in &blocks {
        assert_eq!(block.number("Number of files"), 3.0);
    }
    testdfsio(&["-clean"]);
    assert!(!base.join("io_data").exists());

    // What it does not run is refused with TestDFSIO's usage, nothing written.
    let out = Command::new(SLUICE)
        .args([
            "jar",
            jar,
            "TestDFSIO",
            "-D",
            &setting,
            "-write",
            "-compression",
            "x",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("-compression is not supported") && stderr.contains("Usage: TestDFSIO"),
        "{stderr}"
    );
    assert!(!base.join("io_data").exists());
}

#[test]
fn reading_what_was_not_written_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("bench");
    let url = format!("file://{}", base.display());
    let log = dir.path().join("results.log");
    let log_arg = log.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--output", &url, "--result-file", log_arg]);
        dfsio(dir.path(), &all)
    };

    let nothing = run(&["--read", "--files", "2", "--size", "1000"]);
    assert_eq!(nothing.status.code(), Some(1));
    let stderr = text(&nothing.stderr);
    assert!(
        stderr.contains(&format!("{url}/io_data does not exist")) && stderr.contains("--write"),
        "{stderr}"
    );

    assert_ok(
        &run(&["--write", "--files", "2", "--size", "1000", "-q"]),
        "write",
    );
    let fewer = run(&["--read", "--files", "3", "--size", "1000"]);
    assert_eq!(fewer.status.code(), Some(1));
    let stderr = text(&fewer.stderr);
    assert!(
        stderr.contains(&format!("{url}/io_data/test_io_2 does not exist")),
        "{stderr}"
    );

    let shorter = run(&["--read", "--files", "2", "--size", "2000"]);
    assert_eq!(shorter.status.code(), Some(1));
    let stderr = text(&shorter.stderr);
    assert!(
        stderr.contains("has 1000 bytes, not the 2000 of --size"),
        "{stderr}"
    );

    // Only the successful write reported.
    let results = std::fs::read_to_string(&log).unwrap();
    let blocks = parse_results(&results);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].test, "write");
}

#[test]
fn a_test_is_named_and_sized() {
    let dir = tempfile::tempdir().unwrap();
    let out = dfsio(
        dir.path(),
        &["--files", "1", "--size", "1", "--output", "x"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--write|--read|--clean"));
    let out = dfsio(dir.path(), &["--read", "--output", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--files"));
}

#[test]
fn gen_random_writes_files_of_random_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let gen = |output: &str, threads: &str| {
        Command::new(SLUICE)
            .args(["gen", "random", "--size", "2500000", "--files", "3", "-q"])
            .args(["--output", output, "--threads", threads])
            .output()
            .unwrap()
    };
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    assert_ok(&gen(&format!("file://{}", a.display()), "1"), "gen random");
    assert_ok(&gen(b.to_str().unwrap(), "3"), "gen random");
    let mut names: Vec<String> = std::fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["_SUCCESS", "part-m-00000", "part-m-00001", "part-m-00002"]
    );
    let sizes: Vec<u64> = names[1..]
        .iter()
        .map(|n| std::fs::metadata(a.join(n)).unwrap().len())
        .collect();
    assert_eq!(sizes, [833_334, 833_333, 833_333]);
    for name in &names {
        // The same seed gives the same bytes, whatever the threads.
        assert_eq!(
            std::fs::read(a.join(name)).unwrap(),
            std::fs::read(b.join(name)).unwrap()
        );
    }
    // Random bytes: every byte value about equally often.
    let bytes = std::fs::read(a.join("part-m-00000")).unwrap();
    let mut counts = [0u32; 256];
    for byte in &bytes {
        counts[usize::from(*byte)] += 1;
    }
    let expected = bytes.len() as f64 / 256.0;
    assert!(counts
        .iter()
        .all(|&c| (f64::from(c) - expected).abs() < expected * 0.1));
    // Each file has bytes of its own: no file is another one shifted (its first 64 bytes occur
    // nowhere in the other files).
    for (i, name) in names[1..].iter().enumerate() {
        let head = &std::fs::read(a.join(name)).unwrap()[..64];
        for other in names[1..].iter().enumerate().filter(|(j, _)| *j != i) {
            let other_bytes = std::fs::read(a.join(other.1)).unwrap();
            assert!(
                !other_bytes.windows(64).any(|w| w == head),
                "{name}'s first bytes occur in {}",
                other.1
            );
        }
    }

    let again = gen(a.to_str().unwrap(), "1");
    assert_eq!(again.status.code(), Some(1));
    assert!(
        text(&again.stderr).contains("already exists"),
        "{}",
        text(&again.stderr)
    );
}

/// TestDFSIO command lines that fail exit as Hadoop's do: 255 for its driver's and its own
/// usage errors, 254 for an exception (a value missing or not a number, nothing to read);
/// sluice's own refusals (a Hadoop program it does not run) stay 1. Hadoop's side is run
/// here, through the job client tests jar's driver.
#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs Hadoop's jars (Java 17): make stores; cargo test --features test-stores"
)]
fn testdfsio_failures_exit_as_hadoops_do() {
    let dir = tempfile::tempdir().unwrap();
    let setting = format!(
        "test.build.data=file://{}",
        dir.path().join("bench").display()
    );
    let cases: &[&[&str]] = &[
        &[],
        &["nosuch"],
        &["TestDFSIO"],
        &["TestDFSIO", "-bogus"],
        &["TestDFSIO", "-D", &setting, "-write", "-nrFiles"],
        &["TestDFSIO", "-D", &setting, "-write", "-nrFiles", "x"],
        &["TestDFSIO", "-D", &setting, "-write", "-size", "x"],
        &["TestDFSIO", "-D", &setting, "-read", "-nrFiles", "2"],
    ];
    for args in cases {
        let hadoop = hadoop_main("org.apache.hadoop.test.MapredTestDriver", args, dir.path());
        let sluice = Command::new(SLUICE)
            .current_dir(dir.path())
            .args(["jar", "hadoop-mapreduce-client-jobclient-3.4.3-tests.jar"])
            .args(*args)
            .output()
            .unwrap();
        assert_ne!(hadoop.status.code(), Some(0), "Hadoop ran {args:?}");
        assert_eq!(
            sluice.status.code(),
            hadoop.status.code(),
            "{args:?}: sluice's status, then Hadoop's\n{}\n{}",
            text(&sluice.stderr),
            text(&hadoop.stderr)
        );
    }
    assert!(!dir.path().join("bench/io_data").exists());
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn dfsio_on_hdfs() {
    // The cluster's 1 MiB blocks cut Hadoop's files into many; sluice writes its files with
    // one block each (-D dfs.blocksize), clear of the new-block race hdfs-native does not
    // retry (NotReplicatedYetException; see ARCHITECTURE.md).
    let dfs = MiniDfs::start(MiniDfsOptions {
        datanodes: 1,
        block_size: 1 << 20,
    })
    .unwrap_or_else(|e| panic!("MiniDFS: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let url = format!("{}/benchmarks/dfsio", dfs.uri());
    let log = dir.path().join("results.log");
    let log_arg = log.to_str().unwrap();
    let size = (5 << 19) + 100; // 2.5 MiB and a bit
    let size_arg = size.to_string();
    let common = [
        "--files",
        "3",
        "--size",
        &size_arg,
        "--result-file",
        log_arg,
    ];

    let mut write = vec!["--write", "--output", &url, "-D", "dfs.blocksize=128m"];
    write.extend(common);
    assert_ok(&dfsio(dir.path(), &write), "write to HDFS");
    // What Hadoop's client sees.
    let stat = dfs.fs(&["-stat", "%n %b", "/benchmarks/dfsio/io_data/*"]);
    assert!(stat.status.success(), "{}", text(&stat.stderr));
    let mut listed: Vec<String> = text(&stat.stdout).lines().map(str::to_string).collect();
    listed.sort();
    let expected: Vec<String> = (0..3).map(|k| format!("test_io_{k} {size}")).collect();
    assert_eq!(listed, expected);

    // A plain path is on fs.defaultFS, as for every job.
    let default_fs = format!("fs.defaultFS={}", dfs.uri());
    let mut read = vec!["--read", "--output", "/benchmarks/dfsio", "-D", &default_fs];
    read.extend(common);
    assert_ok(&dfsio(dir.path(), &read), "read from HDFS");
    let blocks = parse_results(&std::fs::read_to_string(&log).unwrap());
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        (blocks[0].test.as_str(), blocks[1].test.as_str()),
        ("write", "read")
    );
    for block in &blocks {
        assert_eq!(block.fields["Number of files"], "3");
        assert!(block.number("Throughput mb/sec") > 0.0);
    }

    // Reading more files than were written names the missing one.
    let mut more = vec!["--read", "--output", &url, "--files", "4"];
    more.extend(["--size", &size_arg, "--result-file", log_arg]);
    let missing = dfsio(dir.path(), &more);
    assert_eq!(missing.status.code(), Some(1));
    let stderr = text(&missing.stderr);
    assert!(
        stderr.contains(&format!("{url}/io_data/test_io_3 does not exist")),
        "{stderr}"
    );

    assert_ok(&dfsio(dir.path(), &["--clean", "--output", &url]), "clean");
    let gone = dfs.fs(&["-test", "-e", "/benchmarks/dfsio/io_data"]);
    assert!(!gone.status.success(), "io_data is removed");
    let kept = dfs.fs(&["-test", "-d", "/benchmarks/dfsio"]);
    assert!(kept.status.success(), "only io_data is removed");
}

#[test]
fn gen_random_refuses_an_existing_output_and_leaves_it_alone() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), b"mine").unwrap();
    let run = Command::new(SLUICE)
        .args([
            "gen", "random", "--size", "1000", "--files", "2", "-q", "--output",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    assert!(
        text(&run.stderr).contains("already exists"),
        "{}",
        text(&run.stderr)
    );
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["keep.txt"]);
    // No staging directory beside it either.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
