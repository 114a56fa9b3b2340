//! `--cluster yarn`: sluice's workers in the containers of a real YARN cluster (an in-JVM
//! MiniYARNCluster with its HDFS, `sluice-testkit`'s `MiniYarn`), submitted through
//! `sluice-yarn.jar` as a user's `sluice` does it, with `HADOOP_CONF_DIR` pointing at the
//! cluster. Every job's output must be what the same job writes on one machine.
//!
//! One cluster serves every test of this file (it halts when the test process ends). Needs
//! `make yarn`; ignored, with the reason, without the `test-yarn` feature.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use sluice_testkit::{sorted_part_lines, MiniYarn};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn yarn() -> &'static MiniYarn {
    static YARN: OnceLock<MiniYarn> = OnceLock::new();
    YARN.get_or_init(|| MiniYarn::start().unwrap_or_else(|e| panic!("MiniYarn: {e}")))
}

/// `sluice ARGS` as a user of the cluster runs it: `HADOOP_CONF_DIR` set, Hadoop's client
/// classes and `sluice-yarn.jar` found through their variables.
fn sluice(args: &[&str], cwd: &Path) -> Output {
    let mut cmd = Command::new(SLUICE);
    cmd.args(args).current_dir(cwd).stdin(Stdio::null());
    yarn().as_client(&mut cmd).output().unwrap()
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
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn built_in_jobs_on_yarn_write_what_they_write_on_one_machine() {
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
        // The input is on HDFS: the containers are asked for on the hosts holding its
        // blocks, and the user is told where the application is.
        assert!(
            stderr.contains("YARN: asking for 2 containers of ")
                && stderr.contains(", near the input on "),
            "{stderr}"
        );
        assert!(
            stderr.contains("YARN: submitted as application_"),
            "{stderr}"
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_worker_larger_than_the_cluster_allows_fails_the_job_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(&input).unwrap();
    fs::write(input.join("a.txt"), "a b\n").unwrap();
    let output = dir.path().join("out");
    let out = sluice(
        &[
            "run",
            "wordcount",
            "-i",
            &local(&input),
            "-o",
            &local(&output),
            "--cluster",
            "yarn:1",
            "--memory",
            "64GiB",
            "-Dsluice.coordinator.address=127.0.0.1",
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("is larger than this cluster allows")
            && stderr.contains("give a smaller --memory or --threads"),
        "{stderr}"
    );
    assert!(!output.exists(), "no output is written");
    // The application was killed and its staging directory removed.
    let application = stderr
        .split("submitted as ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no application named: {stderr}"))
        .to_string();
    let listed = yarn().fs(&["-ls", "-R", "/user"]);
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(!listing.contains(&application), "{listing}");
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_streaming_job_on_yarn_writes_what_it_writes_on_one_machine_and_fails_cleanly() {
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

    // Over shared memory (`-io shm`) in the containers: word count with the Python client's
    // examples, against the same programs over pipes on one machine. A program that did not
    // get its rings would fail the job, so a job that succeeds used them.
    let example = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/shm/python")
            .join(name);
        format!("python3 {}", path.display())
    };
    let (map, reduce) = (example("wc_map.py"), example("wc_reduce.py"));
    let programs = ["-mapper", &map, "-reducer", &reduce, "-numReduceTasks", "2"];
    let reference = dir.path().join("wordcount-local");
    let reference_uri = local(&reference);
    let mut args = vec!["streaming", "-input", &input, "-output", &reference_uri];
    args.extend(programs);
    ok(
        &sluice(&args, dir.path()),
        "word count over pipes on one machine",
    );
    let mut args = vec!["streaming"];
    args.extend(on_yarn);
    args.extend(["-io", "shm"]);
    args.extend(["-input", "/streaming/in", "-output", "/streaming/wordcount"]);
    args.extend(programs);
    ok(
        &sluice(&args, dir.path()),
        "word count over shared memory on YARN",
    );
    assert_eq!(
        files(&reference),
        hdfs_files("/streaming/wordcount", dir.path())
    );

    // A program that fails: the job fails as it would on one machine, nothing is written.
    let mut args = vec!["streaming"];
    args.extend(on_yarn);
    args.extend(["-input", "/streaming/in", "-output", "/streaming/failed"]);
    args.extend(["-mapper", "./fail.sh", "-reducer", "cat"]);
    let out = sluice(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no good"), "{stderr}");
    // The program's whole stderr is in its container's log directory, which YARN keeps after
    // the container is gone (and `yarn logs` shows), named in the message.
    let log = stderr
        .split("(all of its stderr: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .map(PathBuf::from)
        .unwrap_or_else(|| panic!("no log named: {stderr}"));
    let container = log.parent().and_then(Path::file_name);
    let app = log
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name);
    assert!(
        container.is_some_and(|n| n.to_string_lossy().starts_with("container_"))
            && app.is_some_and(|n| n.to_string_lossy().starts_with("application_")),
        "not in a container's log directory: {}",
        log.display()
    );
    let name = log.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("attempt_") && name.ends_with(".mapper.stderr"),
        "{name}"
    );
    let kept = fs::read_to_string(&log).unwrap_or_default();
    assert!(kept.contains("no good"), "{}: {kept:?}", log.display());
    let listed = yarn().fs(&["-ls", "/streaming"]);
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(!listing.contains("/streaming/failed"), "{listing}");
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn terasort_on_yarn_sorts_as_on_one_machine() {
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

/// The `sluice worker` processes working for the coordinator at `coordinator`.
fn workers_of(coordinator: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.iter().any(|a| a == "worker") && args.iter().any(|a| a == coordinator) {
            found.push(pid);
        }
    }
    found
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_lost_container_is_replaced_and_its_replacement_joins_the_running_job() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(&input).unwrap();
    let mut expected = Vec::new();
    for f in 0..32 {
        let lines: Vec<String> = (0..50)
            .map(|i| format!("k{}\tf{f} line {i}", i % 7))
            .collect();
        fs::write(input.join(format!("f{f:02}.txt")), lines.join("\n") + "\n").unwrap();
        expected.extend(lines);
    }
    expected.sort();
    // Each map task takes a second: the job outlasts a container's replacement.
    let slow = dir.path().join("slow.sh");
    fs::write(&slow, "#!/bin/sh\nsleep 1\nexec cat\n").unwrap();
    fs::set_permissions(&slow, fs::Permissions::from_mode(0o755)).unwrap();
    // The coordinator's port, chosen here: its workers are found by it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let coordinator = format!("127.0.0.1:{port}");
    let address = format!("sluice.coordinator.address={coordinator}");
    let output = dir.path().join("out");
    let (input_uri, output_uri) = (local(&input), local(&output));
    let args = [
        "streaming",
        "--cluster",
        "yarn:2",
        "-D",
        &address,
        "-D",
        "sluice.memory=128MiB",
        "-D",
        "sluice.threads=2",
        "-files",
        slow.to_str().unwrap(),
        "-input",
        &input_uri,
        "-output",
        &output_uri,
        "-mapper",
        "slow.sh",
        "-reducer",
        "cat",
        "-numReduceTasks",
        "2",
    ];
    let mut cmd = Command::new(SLUICE);
    cmd.args(args)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let child = yarn().as_client(&mut cmd).spawn().unwrap();
    // Both workers at work for two seconds, then one is killed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let victim = loop {
        let found = workers_of(&coordinator);
        if found.len() == 2 {
            std::thread::sleep(std::time::Duration::from_secs(2));
            break found[0];
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the workers did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // The worker spills on the node's local disks, in the application's directories there
    // (`LOCAL_DIRS`, expanded by the NodeManager), where the job's spill directory is made.
    let args: Vec<String> = fs::read(format!("/proc/{victim}/cmdline"))
        .unwrap()
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let spill_dirs = args
        .iter()
        .position(|a| a == "--spill-dirs")
        .and_then(|i| args.get(i + 1))
        .unwrap_or_else(|| panic!("no --spill-dirs: {args:?}"));
    for spill_dir in spill_dirs.split(',') {
        let spill_dir = Path::new(spill_dir);
        assert!(
            spill_dir.is_absolute()
                && spill_dir
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("application_")),
            "not an application's local directory: {spill_dirs}"
        );
        let spilling = !sluice_testkit::spill_dirs(spill_dir).is_empty();
        assert!(spilling, "no spill directory in {}", spill_dir.display());
    }
    // The worker's scratch directory is in its container's working directory: the job's
    // directory in it is open (locked) in the worker.
    let open: Vec<PathBuf> = fs::read_dir(format!("/proc/{victim}/fd"))
        .unwrap()
        .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
        .collect();
    let container_dir = open
        .iter()
        .filter_map(|path| path.parent())
        .find(|parent| parent.file_name().is_some_and(|n| n == "scratch"))
        .and_then(Path::parent)
        .unwrap_or_else(|| panic!("no job directory in a scratch directory is open: {open:?}"))
        .to_path_buf();
    assert!(
        container_dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("container_")),
        "the scratch directory is not in a container's directory: {}",
        container_dir.display()
    );
    let _ = Command::new("kill")
        .args(["-9", &victim.to_string()])
        .status();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "the job failed:\n{stderr}");
    assert!(stderr.contains("lost"), "the loss is reported: {stderr}");
    // What the killed worker left goes with its container's directory, and nothing of it
    // stays in the system's temporary directory.
    let removed = sluice_testkit::wait_until(std::time::Duration::from_secs(30), || {
        !container_dir.exists()
    });
    assert!(removed, "YARN kept {}", container_dir.display());
    assert!(!std::env::temp_dir()
        .join(format!("sluice-worker-pid{victim}"))
        .exists());
    // Why, as YARN saw it: the master relays the container's end, which names the container
    // the lost worker's messages name too.
    let ended = stderr
        .lines()
        .find(|l| l.contains("INFO sluice.Cluster: YARN: container ") && l.contains(" ended "))
        .unwrap_or_else(|| panic!("the container's end is not reported: {stderr}"));
    assert!(ended.contains("exit status 137"), "{ended}");
    assert!(ended.contains("a replacement is asked for"), "{ended}");
    let container = ended.split_whitespace().nth(6).unwrap();
    assert!(container.starts_with("container_"), "{ended}");
    assert!(
        stderr
            .lines()
            .any(|l| l.contains(&format!(", {container})")) && l.contains("lost")),
        "the lost worker is not named by its container {container}: {stderr}"
    );
    // Every input line once, as the identity job writes it.
    assert_eq!(sorted_part_lines(&output), expected);
    // Three workers of 2 threads and 128 MiB took part: the two started, and the replacement
    // that joined the running job.
    assert!(
        stderr.contains(" 6 threads, memory budget 384.0 MiB"),
        "the replacement did not join: {stderr}"
    );
    let workers: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("INFO sluice.Job: worker "))
        .collect();
    assert_eq!(workers.len(), 3, "{stderr}");
    assert!(
        !workers[2].contains("map tasks=0 "),
        "the replacement ran no map task: {}",
        workers[2]
    );
}

/// Thousands of small files, from a pseudo-terminal, as an interactive user's `sluice run`
/// sends them to YARN: the output is the one machine's, and the terminal shows what YARN did
/// and what the job waits for.
#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn thousands_of_small_files_on_yarn_from_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("small");
    fs::create_dir_all(&input).unwrap();
    for f in 0..2_000 {
        fs::write(
            input.join(format!("f{f:04}.txt")),
            format!("alpha beta{}\ngamma f{f}\nalpha\n", f % 7),
        )
        .unwrap();
    }
    let input_uri = local(&input);
    let reference = dir.path().join("reference");
    ok(
        &sluice(
            &[
                "run",
                "wordcount",
                "-q",
                "-i",
                &input_uri,
                "-r",
                "2",
                "-o",
                &local(&reference),
            ],
            dir.path(),
        ),
        "small files on one machine",
    );
    // Python's pty module runs sluice on a pseudo-terminal and copies what it draws.
    let output = dir.path().join("out");
    let output_uri = local(&output);
    let mut args = vec![
        "run",
        "wordcount",
        "-i",
        &input_uri,
        "-r",
        "2",
        "-o",
        &output_uri,
    ];
    args.extend(ON_YARN);
    let mut cmd = Command::new("python3");
    cmd.args([
        "-c",
        "import pty, sys; sys.exit(pty.spawn(sys.argv[1:]) >> 8)",
        SLUICE,
    ])
    .args(&args)
    .current_dir(dir.path())
    .env_remove("SLUICE_PROGRESS")
    .stdin(Stdio::null());
    let out = yarn().as_client(&mut cmd).output().unwrap();
    let terminal = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{terminal}");
    assert!(
        terminal.contains("YARN: submitted as application_"),
        "{terminal}"
    );
    // While it waits, the spinner says for what.
    assert!(
        terminal.contains("waiting for YARN's containers: 0 of 2 workers connected"),
        "{terminal}"
    );
    assert_eq!(files(&reference), files(&output), "{terminal}");
    assert!(output.join("_SUCCESS").exists());
}
