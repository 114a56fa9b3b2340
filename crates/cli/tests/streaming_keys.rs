//! Configuration keys that `sluice streaming` refuses: each refused key makes the job fail
//! before it starts (exit status 1, a message naming the key and its value, no output
//! directory), and the same key set to a value that behaves as Hadoop's default is accepted and
//! the job runs. What Hadoop does with the keys sluice honours is compared with Hadoop itself
//! by the differential cases (`tests/streaming.rs`); these keys have no such comparison, since
//! sluice does not run the job at all.
//!
//! The keys and values are written out here, not taken from sluice's table, so that a key
//! dropped from the table (and so silently ignored) fails a test.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The binary under test.
const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Keys with a value sluice must refuse.
const REFUSED: &[(&str, &str)] = &[
    (
        "mapreduce.job.output.group.comparator.class",
        "com.example.Grouping",
    ),
    ("mapred.output.value.groupfn.class", "com.example.Grouping"),
    ("mapreduce.job.outputformat.class", "com.example.Output"),
    ("mapreduce.job.inputformat.class", "com.example.Input"),
    ("mapreduce.job.partitioner.class", "com.example.Partitioner"),
    ("mapreduce.job.map.class", "com.example.Mapper"),
    ("mapreduce.job.reduce.class", "com.example.Reducer"),
    (
        "mapred.partitioner.class",
        "org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner",
    ),
    ("mapred.combiner.class", "com.example.Combiner"),
    ("mapreduce.input.pathFilter.class", "com.example.Filter"),
    ("textinputformat.record.delimiter", ";"),
    ("mapreduce.input.linerecordreader.line.maxlength", "1000"),
    ("mapred.linerecordreader.maxlength", "1000"),
    ("mapreduce.input.fileinputformat.inputdir", "/elsewhere"),
    ("mapred.input.dir", "/elsewhere"),
    ("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false"),
    (
        "stream.io.identifier.resolver.class",
        "com.example.Resolver",
    ),
    ("mapreduce.map.failures.maxpercent", "10"),
    ("mapred.max.reduce.failures.percent", "10"),
    ("mapreduce.map.skip.maxrecords", "1"),
    ("mapreduce.reduce.skip.maxgroups", "1"),
    ("mapreduce.job.cache.files", "/x/y.txt"),
    ("mapreduce.job.working.dir", "/elsewhere"),
    ("fs.defaultFS", "gs://bucket"),
    ("fs.default.name", "ftp://host"),
];

/// Refused keys with a value that behaves as Hadoop's default: accepted.
const DEFAULTS: &[(&str, &str)] = &[
    (
        "mapreduce.job.output.group.comparator.class",
        "org.apache.hadoop.io.Text$Comparator",
    ),
    (
        "mapred.partitioner.class",
        "org.apache.hadoop.mapred.lib.HashPartitioner",
    ),
    ("mapred.reducer.class", "com.example.Replaced"),
    (
        "mapreduce.input.linerecordreader.line.maxlength",
        "2147483647",
    ),
    ("mapreduce.fileoutputcommitter.marksuccessfuljobs", "true"),
    ("mapreduce.map.failures.maxpercent", "0"),
    ("mapreduce.map.skip.maxrecords", "0"),
    ("fs.defaultFS", "file:///"),
    (
        "mapreduce.input.fileinputformat.input.dir.recursive",
        "false",
    ),
    ("mapreduce.output.basename", "data"),
    ("mapreduce.map.memory.mb", "4096"),
];

/// Runs `sluice streaming -D KEY=VALUE` on a small input (`cat` as mapper and reducer) in
/// `dir`; returns how it ended.
fn run(dir: &Path, key: &str, value: &str) -> Output {
    run_with(dir, key, value, &["-mapper", "cat", "-reducer", "cat"])
}

/// Runs `sluice streaming -D KEY=VALUE` on a small input with the `programs` options.
fn run_with(dir: &Path, key: &str, value: &str, programs: &[&str]) -> Output {
    fs::write(dir.join("input"), "b\t2\na\t1\n").unwrap();
    Command::new(SLUICE)
        .arg("streaming")
        .args(["-D", &format!("{key}={value}")])
        .args(["-input", "input", "-output", "out"])
        .args(programs)
        .current_dir(dir)
        .env("TMPDIR", dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn refused_keys_stop_the_job_before_it_starts() {
    for (key, value) in REFUSED {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), key, value);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "-D {key}={value} should be refused; stderr:\n{stderr}"
        );
        // An old name Hadoop aliases is named next to the current one.
        assert!(
            stderr.contains(key) && stderr.contains(&format!("={value}")),
            "the message should name -D {key}={value}; stderr:\n{stderr}"
        );
        assert!(
            !dir.path().join("out").exists(),
            "-D {key}={value}: a refused job must not create its output directory"
        );
    }
}

#[test]
fn java_classes_are_refused_when_no_option_replaces_them() {
    // Identity mapper and reducer: Hadoop would run the classes the keys name.
    let identity = ["-inputformat", "KeyValueTextInputFormat"];
    for key in [
        "mapred.mapper.class",
        "mapred.map.runner.class",
        "mapred.reducer.class",
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = run_with(dir.path(), key, "com.example.Task", &identity);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{key}: {stderr}");
        assert!(
            stderr.contains(&format!("-D {key}=com.example.Task: ")),
            "{stderr}"
        );
        assert!(!dir.path().join("out").exists());
    }
    // Without the keys the same job runs.
    let dir = tempfile::tempdir().unwrap();
    let out = run_with(dir.path(), "mapreduce.job.name", "identity", &identity);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn refused_keys_at_their_default_values_are_accepted() {
    for (key, value) in DEFAULTS {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), key, value);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(0),
            "-D {key}={value} should be accepted; stderr:\n{stderr}"
        );
        let part = fs::read_to_string(dir.path().join("out/part-00000")).unwrap();
        assert_eq!(part, "a\t1\nb\t2\n", "-D {key}={value}");
    }
}

#[test]
fn a_directory_inside_an_input_directory_needs_the_recursive_key() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("in/sub")).unwrap();
    fs::write(dir.path().join("in/a"), "a\n").unwrap();
    fs::write(dir.path().join("in/sub/b"), "b\n").unwrap();
    let job = |recursive: &str| {
        let _ = fs::remove_dir_all(dir.path().join("out"));
        Command::new(SLUICE)
            .arg("streaming")
            .args([
                "-D",
                &format!("mapreduce.input.fileinputformat.input.dir.recursive={recursive}"),
            ])
            .args(["-input", "in", "-output", "out", "-mapper", "cat"])
            .current_dir(dir.path())
            .env("TMPDIR", dir.path())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = job("false");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // Hadoop's exit status for a job that cannot be launched.
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    assert!(stderr.contains("Not a file: file:/"), "{stderr}");
    assert!(!dir.path().join("out").exists());
    let out = job("true");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let part = fs::read_to_string(dir.path().join("out/part-00000")).unwrap();
    assert_eq!(part, "a\t\nb\t\n");
}

/// sluice's table of deprecated key names is Hadoop 3.4's, as its `JobConf` registers them
/// (`tests/hadoop/DeprecatedKeys.java`): a name Hadoop renames and sluice does not would reach
/// the programs under the wrong name and escape the checks on its current one.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop: make hadoop, Java 17; cargo test --features test-hadoop"
)]
fn the_deprecated_key_names_are_hadoops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let lib = root.join("target/hadoop/lib");
    assert!(
        lib.join(".complete").exists(),
        "the Hadoop jars are missing from {}: run `make hadoop`",
        lib.display()
    );
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg(root.join("tests/hadoop/DeprecatedKeys.java"))
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(out.status.success(), "DeprecatedKeys.java failed");
    let hadoop = String::from_utf8(out.stdout).unwrap();
    let hadoop: Vec<(&str, &str)> = hadoop
        .lines()
        .map(|line| line.split_once('\t').unwrap())
        .collect();
    assert!(hadoop.len() > 100, "Hadoop printed {} names", hadoop.len());
    let sluice = sluice_streaming::deprecated::DEPRECATED;
    let missing: Vec<_> = hadoop.iter().filter(|p| !sluice.contains(p)).collect();
    let extra: Vec<_> = sluice.iter().filter(|p| !hadoop.contains(p)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "Hadoop's names sluice lacks: {missing:?}; sluice's names Hadoop lacks: {extra:?}"
    );
}
