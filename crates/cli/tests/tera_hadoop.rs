//! Differential test of the sort benchmark against Apache Hadoop 3.4.2's own TeraGen, TeraSort
//! and TeraValidate (`hadoop-mapreduce-examples`, run in local mode from the jars that
//! `make hadoop` puts in `target/hadoop/lib`):
//!
//! 1. Hadoop's TeraGen and sluice's teragen write the same bytes for the same row count.
//! 2. sluice's teravalidate accepts Hadoop TeraSort's output, with the teragen checksum.
//! 3. Hadoop's TeraValidate accepts sluice terasort's output and prints the same report as
//!    sluice's teravalidate.
//! 4. On unsorted input both validators report the same misorders.
//!
//! Each Hadoop job costs a JVM start (a few seconds); they run one after the other.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Panics with the way to get them unless the jars are there. A test that needs Hadoop never
/// passes without it: without the `test-hadoop` feature it is ignored, with the reason.
fn require_hadoop() {
    let lib = root().join("target/hadoop/lib");
    if lib.join(".complete").exists() {
        return;
    }
    panic!(
        "the Hadoop jars are missing from {}: run `make hadoop` (or tests/hadoop/fetch.sh); the \
         tests that need Hadoop are ignored without the test-hadoop feature",
        lib.display()
    );
}

/// Runs Hadoop's example `program` in local mode, in `scratch`, with `args`; panics with its
/// log unless it exits 0.
fn hadoop(scratch: &Path, program: &str, options: &[&str], args: &[&Path]) {
    let root = root();
    let classpath = format!(
        "{}:{}/*",
        root.join("tests/hadoop").display(),
        root.join("target/hadoop/lib").display()
    );
    let tmp = scratch.join("hadoop-tmp");
    let out = Command::new("java")
        .arg("-cp")
        .arg(classpath)
        .arg("org.apache.hadoop.examples.ExampleDriver")
        .arg(program)
        .args(["-D", "mapreduce.framework.name=local"])
        .args(["-D", "fs.defaultFS=file:///"])
        .arg("-D")
        .arg(format!("hadoop.tmp.dir={}", tmp.display()))
        .args(options)
        .args(args)
        .current_dir(scratch)
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(
        out.status.success(),
        "Hadoop {program} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `sluice ARGS` and returns (exit code, stderr).
fn sluice(args: &[&str]) -> (i32, String) {
    let out = Command::new(SLUICE).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs `sluice run teravalidate` on `input` with its report in `report`; returns (exit code,
/// stderr).
fn sluice_validate(input: &Path, report: &Path) -> (i32, String) {
    sluice(&[
        "run",
        "teravalidate",
        "--input",
        path(input),
        "--output",
        path(report),
    ])
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The visible files of `dir` (Hadoop's local file system adds hidden `.crc` files, and
/// TeraSort a `_partition.lst`), name and bytes, in name order.
fn visible_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .map(|e| e.file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.') && !n.starts_with('_'))
        .map(|n| {
            let bytes = fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect();
    files.sort();
    files
}

/// The report line set of a validator's output directory, sorted (Hadoop orders misorder lines
/// by its shuffle, sluice by file).
fn report_lines(dir: &Path) -> Vec<String> {
    let text = fs::read_to_string(dir.join("part-r-00000")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines.sort();
    lines
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn sluice_and_hadoop_agree_on_the_sort_benchmark() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // 1. The same rows. (Local mode runs TeraGen with one map task, so one part file.)
    hadoop(
        d,
        "teragen",
        &[],
        &[Path::new("20000"), &d.join("hadoop-gen")],
    );
    let (code, stderr) = sluice(&[
        "run",
        "teragen",
        "--rows",
        "20000",
        "--maps",
        "1",
        "--output",
        path(&d.join("gen")),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let generated = visible_files(&d.join("gen"));
    assert_eq!(generated.len(), 1);
    assert!(
        visible_files(&d.join("hadoop-gen")) == generated,
        "sluice teragen and Hadoop TeraGen wrote different files"
    );

    // 2. Hadoop sorts, sluice validates.
    hadoop(
        d,
        "terasort",
        &["-D", "mapreduce.job.reduces=3"],
        &[&d.join("gen"), &d.join("hadoop-sorted")],
    );
    let (code, stderr) =
        sluice_validate(&d.join("hadoop-sorted"), &d.join("validate-hadoop-sorted"));
    assert_eq!(code, 0, "sluice rejects Hadoop's sorted output: {stderr}");

    // 3. sluice sorts, Hadoop validates: both validators write the same report, a checksum.
    let (code, stderr) = sluice(&[
        "run",
        "terasort",
        "--reducers",
        "3",
        "--split-size",
        "300007",
        "--input",
        path(&d.join("gen")),
        "--output",
        path(&d.join("sorted")),
    ]);
    assert_eq!(code, 0, "{stderr}");
    hadoop(
        d,
        "teravalidate",
        &[],
        &[&d.join("sorted"), &d.join("hadoop-validate-sorted")],
    );
    let (code, stderr) = sluice_validate(&d.join("sorted"), &d.join("validate-sorted"));
    assert_eq!(code, 0, "{stderr}");
    let hadoop_report = report_lines(&d.join("hadoop-validate-sorted"));
    assert_eq!(hadoop_report.len(), 1, "{hadoop_report:?}");
    assert!(hadoop_report[0].starts_with("checksum\t"));
    assert_eq!(report_lines(&d.join("validate-sorted")), hadoop_report);
    assert_eq!(
        report_lines(&d.join("validate-hadoop-sorted")),
        hadoop_report
    );

    // 4. Unsorted input (teragen's own, in two files): the same misorders, same checksum.
    let (code, stderr) = sluice(&[
        "run",
        "teragen",
        "--rows",
        "400",
        "--maps",
        "2",
        "--output",
        path(&d.join("unsorted")),
    ]);
    assert_eq!(code, 0, "{stderr}");
    hadoop(
        d,
        "teravalidate",
        &[],
        &[&d.join("unsorted"), &d.join("hadoop-validate-unsorted")],
    );
    let (code, _) = sluice_validate(&d.join("unsorted"), &d.join("validate-unsorted"));
    assert_eq!(code, 1, "sluice accepts unsorted rows");
    let hadoop_report = report_lines(&d.join("hadoop-validate-unsorted"));
    assert!(
        hadoop_report
            .iter()
            .any(|l| l.starts_with("error\tmisorder")),
        "{hadoop_report:?}"
    );
    assert_eq!(report_lines(&d.join("validate-unsorted")), hadoop_report);
}
