//! `--cluster yarn`: sluice's workers in the containers of a real YARN cluster (an in-JVM
//! MiniYARNCluster with its HDFS, `sluice-testkit`'s `MiniYarn`), submitted through
//! `sluice-yarn.jar` as a user's `sluice` does it, with `HADOOP_CONF_DIR` pointing at the
//! cluster. Every job's output must be what the same job writes on one machine.
//!
//! One cluster serves every test of this file (it halts when the test process ends). Needs
//! `make yarn`; skipped only with `SLUICE_SKIP_YARN=1`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use sluice_testkit::{without_proxies, yarn_jar, yarn_required, MiniYarn};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn yarn() -> &'static MiniYarn {
    static YARN: OnceLock<MiniYarn> = OnceLock::new();
    YARN.get_or_init(|| MiniYarn::start().unwrap_or_else(|e| panic!("MiniYarn: {e}")))
}

/// `sluice ARGS` as a user of the cluster runs it: `HADOOP_CONF_DIR` set, Hadoop's client
/// classes and `sluice-yarn.jar` found through their variables.
fn sluice(args: &[&str], cwd: &Path) -> Output {
    let yarn = yarn();
    let hadoop_jars = yarn.classpath().split(':').nth(1).unwrap().to_string();
    let mut cmd = Command::new(SLUICE);
    cmd.args(args)
        .current_dir(cwd)
        .env("HADOOP_CONF_DIR", yarn.conf_dir())
        .env("SLUICE_YARN_CLASSPATH", hadoop_jars)
        .env("SLUICE_YARN_JAR", yarn_jar())
        .stdin(Stdio::null());
    without_proxies(&mut cmd).output().unwrap()
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {:?}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The files of a local directory, hidden ones (checksum files) left out.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap())
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// The files of an HDFS directory, copied here by Hadoop's client.
fn hdfs_files(path: &str, scratch: &Path) -> BTreeMap<String, Vec<u8>> {
    let local = scratch.join(path.trim_start_matches('/').replace('/', "-"));
    let got = yarn().fs(&["-get", path, local.to_str().unwrap()]);
    assert!(
        got.status.success(),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    files(&local)
}

/// Input files here, and a copy on the cluster's HDFS at `hdfs_path` (put by Hadoop's client).
fn write_input(dir: &Path, hdfs_path: &str) {
    let input = dir.join("in");
    fs::create_dir_all(&input).unwrap();
    for f in 0..3 {
        let text: String = (0..3000u64)
            .map(|i| format!("w{} w{} x{}\tv{i}\n", i % 13, (i * 7 + f) % 31, f))
            .collect();
        fs::write(input.join(format!("f{f}.txt")), text).unwrap();
    }
    let put = yarn().fs(&["-mkdir", "-p", hdfs_path]);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    for f in 0..3 {
        let file = input.join(format!("f{f}.txt"));
        let put = yarn().fs(&["-put", file.to_str().unwrap(), hdfs_path]);
        assert!(
            put.status.success(),
            "{}",
            String::from_utf8_lossy(&put.stderr)
        );
    }
}

/// `file://` URI of a local path (plain paths are on the cluster's HDFS, as in Hadoop).
fn local(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// `--cluster yarn:2`, a small budget (the containers' size follows it), and the coordinator
/// on loopback, where this machine's containers reach it.
const ON_YARN: [&str; 7] = [
    "--cluster",
    "yarn:2",
    "--memory",
    "128MiB",
    "--threads",
    "2",
    "-Dsluice.coordinator.address=127.0.0.1",
];

#[test]
fn built_in_jobs_on_yarn_write_what_they_write_on_one_machine() {
    if !yarn_required() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path(), "/builtin/in");
    let input = local(&dir.path().join("in"));
    for (job, reducers) in [("wordcount", "3"), ("sort", "2")] {
        let reference = dir.path().join(format!("{job}-local"));
        let reference_uri = local(&reference);
        ok(
            &sluice(
                &[
                    "run",
                    job,
                    "-q",
                    "-i",
                    &input,
                    "-r",
                    reducers,
                    "-o",
                    &reference_uri,
                ],
                dir.path(),
            ),
            job,
        );
        let output = format!("/builtin/{job}-out");
        let mut args = vec![
            "run",
            job,
            "-i",
            "/builtin/in",
            "-r",
            reducers,
            "-o",
            output.as_str(),
        ];
        args.extend(ON_YARN);
        let out = sluice(&args, dir.path());
        ok(&out, &format!("{job} on YARN"));
        assert_eq!(
            files(&reference),
            hdfs_files(&output, dir.path()),
            "{job}: YARN's output differs from one machine's"
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            stderr.matches("  worker ").count(),
            2,
            "two workers report: {stderr}"
        );
    }
}

#[test]
fn a_streaming_job_on_yarn_writes_what_it_writes_on_one_machine_and_fails_cleanly() {
    if !yarn_required() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path(), "/streaming/in");
    let fail = dir.path().join("fail.sh");
    fs::write(&fail, "#!/bin/sh\necho 'no good' >&2\nexit 4\n").unwrap();
    fs::set_permissions(&fail, fs::Permissions::from_mode(0o755)).unwrap();
    let programs = ["-mapper", "cat", "-reducer", "cat", "-numReduceTasks", "2"];
    let reference = dir.path().join("local");
    let (input, reference_uri) = (local(&dir.path().join("in")), local(&reference));
    let mut args = vec!["streaming", "-input", &input, "-output", &reference_uri];
    args.extend(programs);
    ok(&sluice(&args, dir.path()), "streaming on one machine");
    let on_yarn = [
        "--cluster",
        "yarn:2",
        "-D",
        "sluice.coordinator.address=127.0.0.1",
        "-D",
        "sluice.memory=128MiB",
        "-D",
        "sluice.threads=2",
    ];
    let mut args = vec!["streaming"];
    args.extend(on_yarn);
    args.extend(["-input", "/streaming/in", "-output", "/streaming/out"]);
    args.extend(programs);
    let out = sluice(&args, dir.path());
    ok(&out, "streaming on YARN");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("completed successfully"), "{stderr}");
    assert_eq!(files(&reference), hdfs_files("/streaming/out", dir.path()));

    // A program that fails: the job fails as it would on one machine, nothing is written.
    let mut args = vec!["streaming"];
    args.extend(on_yarn);
    args.extend(["-input", "/streaming/in", "-output", "/streaming/failed"]);
    args.extend(["-mapper", "./fail.sh", "-reducer", "cat"]);
    let out = sluice(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no good"), "{stderr}");
    let listed = yarn().fs(&["-ls", "/streaming"]);
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(!listing.contains("/streaming/failed"), "{listing}");
}

#[test]
fn terasort_on_yarn_sorts_as_on_one_machine() {
    if !yarn_required() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // TeraGen writes the rows to the cluster's HDFS (a plain path is on fs.defaultFS).
    ok(
        &sluice(
            &[
                "run", "teragen", "-q", "--rows", "30000", "--maps", "3", "--output", "/tera/in",
            ],
            dir.path(),
        ),
        "teragen",
    );
    let rows = hdfs_files("/tera/in", dir.path());
    let local_in = dir.path().join("tera-in");
    fs::create_dir_all(&local_in).unwrap();
    for (name, bytes) in &rows {
        fs::write(local_in.join(name), bytes).unwrap();
    }
    let reference = dir.path().join("tera-local");
    ok(
        &sluice(
            &[
                "run",
                "terasort",
                "-q",
                "-i",
                &local(&local_in),
                "-r",
                "3",
                "-o",
                &local(&reference),
            ],
            dir.path(),
        ),
        "terasort on one machine",
    );
    let mut args = vec![
        "run",
        "terasort",
        "-i",
        "/tera/in",
        "-r",
        "3",
        "-o",
        "/tera/out",
    ];
    args.extend(ON_YARN);
    let out = sluice(&args, dir.path());
    ok(&out, "terasort on YARN");
    assert_eq!(files(&reference), hdfs_files("/tera/out", dir.path()));
    ok(
        &sluice(
            &[
                "run",
                "teravalidate",
                "-q",
                "-i",
                "/tera/out",
                "-o",
                "/tera/report",
            ],
            dir.path(),
        ),
        "teravalidate",
    );
}
