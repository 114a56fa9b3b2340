//! sluice on several workers: a harness starts `sluice worker` processes on loopback ports,
//! each with a scratch directory of its own, and jobs given `--cluster workers=...` must write
//! what the same job writes on one machine — byte for byte, or, where the order of values
//! within a key is unspecified, the same records per key. Faults: a coordinator without the
//! secret, a peer sending garbage, a failing program, a worker killed mid-job.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use sluice_testkit::console::counter;
use sluice_testkit::{sorted_part_lines, wait_until, Workers};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Workers on loopback ports, each with 2 threads and 256 MiB unless told otherwise.
fn start_workers(dir: &Path, n: usize) -> Workers {
    Workers::start(Path::new(SLUICE), dir, n, "256MiB", |_| {})
}

/// Starts `sluice ARGS` in `cwd`, its console's stderr kept for the test.
fn spawn_sluice(args: &[String], cwd: &Path) -> std::process::Child {
    Command::new(SLUICE)
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (two minutes at most) until worker `i` has logged `text`, while `job` runs.
fn await_log(workers: &Workers, i: usize, text: &str, job: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !workers.logged(i, text) {
        assert!(job.try_wait().unwrap().is_none(), "the job ended early");
        assert!(Instant::now() < deadline, "no {text:?} from worker {i}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn sluice(args: &[String], cwd: &Path) -> Output {
    Command::new(SLUICE)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed: {:?}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Every file of an output directory, by name.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// Panics unless the two output directories hold the same records per key in each part file,
/// saying where they first differ.
fn assert_same_per_key(a: &Path, b: &Path, what: &str) {
    let (a, b) = (per_key(a), per_key(b));
    let names = |m: &BTreeMap<String, BTreeMap<Vec<u8>, Vec<Vec<u8>>>>| {
        m.iter()
            .map(|(name, keys)| (name.clone(), keys.values().map(Vec::len).sum::<usize>()))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&a),
        names(&b),
        "{what}: different files or line counts"
    );
    for (name, keys) in &a {
        for (key, lines) in keys {
            let other = b[name].get(key);
            assert!(
                other == Some(lines),
                "{what}: {name}: key {:?} has {} line(s), and {:?} in the other",
                String::from_utf8_lossy(key),
                lines.len(),
                other.map(Vec::len)
            );
        }
    }
}

/// Panics unless the two output directories hold the same files with the same bytes, saying
/// where they first differ.
fn assert_same(a: &Path, b: &Path, what: &str) {
    let (a, b) = (files(a), files(b));
    let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
    assert_eq!(names(&a), names(&b), "{what}: different files");
    for (name, bytes) in &a {
        let other = &b[name];
        if bytes != other {
            let line = bytes
                .split(|&c| c == b'\n')
                .zip(other.split(|&c| c == b'\n'))
                .position(|(x, y)| x != y);
            panic!(
                "{what}: {name} differs ({} vs {} bytes), first at line {line:?}",
                bytes.len(),
                other.len()
            );
        }
    }
}

/// The lines of every part file, grouped by key (before the first tab) with the values
/// sorted: equal whatever order the values of a key arrived in.
fn per_key(dir: &Path) -> BTreeMap<String, BTreeMap<Vec<u8>, Vec<Vec<u8>>>> {
    files(dir)
        .into_iter()
        .filter(|(name, _)| name.starts_with("part-"))
        .map(|(name, bytes)| {
            let mut keys: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
            for line in bytes.split(|&b| b == b'\n') {
                let key = line.split(|&b| b == b'\t').next().unwrap_or_default();
                keys.entry(key.to_vec()).or_default().push(line.to_vec());
            }
            for values in keys.values_mut() {
                values.sort();
            }
            (name, keys)
        })
        .collect()
}

/// A few input files of words, numbers and tabs, some lines repeated.
fn write_input(dir: &Path) -> PathBuf {
    let input = dir.join("in");
    fs::create_dir_all(&input).unwrap();
    let words = [
        "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta",
    ];
    for f in 0..5 {
        let mut text = String::new();
        for i in 0..4000u64 {
            let a = words[(i * 7 + f) as usize % words.len()];
            let b = words[(i * 3 + 1) as usize % words.len()];
            text.push_str(&format!("{a} {b}\t{}\tline {i} of {f}\n", i % 97));
        }
        fs::write(input.join(format!("part-{f}.txt")), text).unwrap();
    }
    input
}

/// Runs `args` here and on the workers (outputs `local` and `cluster` in `dir`); returns the
/// two outputs and the stderr of the run on the workers.
fn both(dir: &Path, workers: &Workers, args: &[String], name: &str) -> (PathBuf, PathBuf, String) {
    let local = dir.join(format!("{name}-local"));
    let cluster = dir.join(format!("{name}-cluster"));
    let mut l = args.to_vec();
    l.extend(["--output".to_string(), local.display().to_string()]);
    ok(&sluice(&l, dir), &format!("{name} on one machine"));
    let mut c = args.to_vec();
    c.extend(["--output".to_string(), cluster.display().to_string()]);
    c.extend(workers.args());
    let out = sluice(&c, dir);
    ok(&out, &format!("{name} on the workers"));
    (
        local,
        cluster,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `rows` TeraGen rows in `dir/gen`, written by `maps` tasks.
fn teragen(dir: &Path, rows: &str, maps: &str) {
    ok(
        &sluice(
            &strings(&[
                "run", "teragen", "--quiet", "--rows", rows, "--maps", maps, "--output", "gen",
            ]),
            dir,
        ),
        "teragen",
    );
}

#[test]
fn built_in_jobs_write_on_workers_what_they_write_on_one_machine() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 3);
    write_input(dir.path());
    for (job, extra) in [
        ("wordcount", vec!["--reducers", "3"]),
        ("grep", vec!["--pattern", "[a-z]+a\\b", "--reducers", "2"]),
        ("invertedindex", vec!["--reducers", "2"]),
    ] {
        let mut args = strings(&[
            "run",
            job,
            "--quiet",
            "--input",
            "in",
            "--split-size",
            "64KiB",
        ]);
        args.extend(strings(&extra));
        let (local, cluster, _) = both(dir.path(), &workers, &args, job);
        assert_same(&local, &cluster, job);
    }
    // Sort keeps equal keys in input order: the workers merge each partition's runs in map
    // task order, as one machine does.
    let args = strings(&[
        "run",
        "sort",
        "--quiet",
        "--input",
        "in",
        "--split-size",
        "64KiB",
        "--reducers",
        "3",
    ]);
    let (local, cluster, _) = both(dir.path(), &workers, &args, "sort");
    assert_same(&local, &cluster, "sort");
    assert!(cluster.join("_SUCCESS").exists());
    assert!(
        workers.scratch_is_empty(),
        "a job left files in a worker's scratch directory"
    );
}

/// One worker under two names (its address and `localhost`) is one worker of the job: the
/// job says so and runs, rather than finding the worker busy with itself.
#[test]
fn a_worker_named_twice_is_used_once() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 1);
    write_input(dir.path());
    let addr = &workers.addrs()[0];
    let port = addr.rsplit_once(':').unwrap().1;
    let mut args = strings(&["run", "wordcount", "--input", "in", "--output", "out"]);
    args.extend([
        "--cluster".to_string(),
        format!("workers={addr},localhost:{port}"),
        "--secret-file".to_string(),
        workers.secret().display().to_string(),
    ]);
    let out = sluice(&args, dir.path());
    ok(&out, "a job on one worker named twice");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("named again"), "{stderr}");
    assert!(!stderr.contains("busy"), "{stderr}");
}

/// Input files whose names are not UTF-8 (Latin-1 names from an old system) are read on the
/// workers as on one machine: their paths reach the workers byte for byte.
#[test]
fn input_files_named_in_other_encodings_are_read_on_workers() {
    use std::os::unix::ffi::OsStrExt as _;
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 2);
    let input = dir.path().join("latin");
    fs::create_dir_all(&input).unwrap();
    fs::write(
        input.join(std::ffi::OsStr::from_bytes(b"caf\xe9.txt")),
        "café au lait\n",
    )
    .unwrap();
    fs::write(input.join("plain.txt"), "au revoir\n").unwrap();
    let args = strings(&["run", "wordcount", "--quiet", "--input", "latin"]);
    let (local, cluster, _) = both(dir.path(), &workers, &args, "latin");
    assert_same(&local, &cluster, "wordcount over a Latin-1 file name");
    let counted: String = files(&cluster)
        .into_iter()
        .filter(|(name, _)| name.starts_with("part-"))
        .map(|(_, bytes)| String::from_utf8(bytes).unwrap())
        .collect();
    assert!(counted.contains("lait\t1"), "{counted}");
}

/// A worker given a relative scratch directory keeps using the one under the directory it
/// started in, though each job moves it into the directory the job was submitted from.
#[test]
fn a_relative_scratch_directory_serves_jobs_submitted_from_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let submit = dir.path().join("submit");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&submit).unwrap();
    let mut workers = Workers::start(Path::new(SLUICE), dir.path(), 0, "256MiB", |_| {});
    workers.add(Path::new("scratch"), |c| {
        c.current_dir(&home);
    });
    write_input(&submit);
    let args = strings(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        "in",
        "--split-size",
        "64KiB",
    ]);
    // Twice: the first job leaves the worker in `submit`, where `scratch` does not exist.
    for name in ["first", "second"] {
        let (local, cluster, _) = both(&submit, &workers, &args, name);
        assert_same(&local, &cluster, name);
    }
    assert!(
        !submit.join("scratch").exists(),
        "a scratch directory appeared where the jobs were submitted"
    );
    let left: Vec<_> = fs::read_dir(home.join("scratch")).unwrap().collect();
    assert!(
        left.is_empty(),
        "the jobs left {left:?} in the worker's scratch directory"
    );
}

/// Started workers keep the budget, threads and directory they were started with: a job
/// that gives its own is told so, not left to believe they were used.
#[test]
fn options_started_workers_ignore_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 1);
    write_input(dir.path());
    let run = |name: &str, extra: &[&str]| {
        let mut args = strings(&[
            "run",
            "wordcount",
            "--quiet",
            "--input",
            "in",
            "--output",
            name,
        ]);
        args.extend(strings(extra));
        args.extend(workers.args());
        let out = sluice(&args, dir.path());
        ok(&out, name);
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let plain = run("plain", &[]);
    assert!(!plain.contains("warning"), "{plain}");
    let given = run(
        "given",
        &[
            "--memory",
            "64MiB",
            "--threads",
            "1",
            "--spill-dir",
            "spills",
        ],
    );
    for (option, own) in [
        ("--memory", "--memory"),
        ("--threads", "--threads"),
        ("--spill-dir", "--spill-dirs"),
    ] {
        assert!(
            given.contains(&format!(
                "warning: {option} is not used with --cluster workers=...: each worker uses its own (sluice worker {own})"
            )),
            "{option}: {given}"
        );
    }
    assert!(
        !dir.path().join("spills").exists(),
        "the job spilled where the workers do not"
    );
}

/// A worker runs one job at a time. A coordinator that comes while it works for another is
/// told so at once: the worker is left out when others can run the job, and the job fails
/// with the reason (not after a timeout) when none can.
#[test]
fn a_busy_worker_says_so_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 2);
    write_input(dir.path());
    write_script(dir.path(), "slow-map.sh", "#!/bin/sh\nsleep 8\ncat\n");
    let on = |addrs: &[&String]| {
        let list: Vec<&str> = addrs.iter().map(|a| a.as_str()).collect();
        vec![
            "--cluster".to_string(),
            format!("workers={}", list.join(",")),
            "--secret-file".to_string(),
            workers.secret().display().to_string(),
        ]
    };
    let (first, second) = (&workers.addrs()[0], &workers.addrs()[1]);
    // A long job keeps the first worker busy.
    let mut args = strings(&["streaming"]);
    args.extend(on(&[first]));
    args.extend(strings(&[
        "-input",
        "in",
        "-output",
        "long",
        "-mapper",
        "./slow-map.sh",
        "-reducer",
        "cat",
    ]));
    let mut long = Command::new(SLUICE)
        .args(&args)
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        within_5s(|| workers.logged(0, "connected")),
        "the long job did not reach its worker"
    );
    let wordcount = |name: &str, cluster: Vec<String>| {
        let mut args = strings(&["run", "wordcount", "--input", "in", "--output", name]);
        args.extend(cluster);
        let started = Instant::now();
        let out = sluice(&args, dir.path());
        (out, started.elapsed())
    };
    // Both workers given: the job runs on the free one (and says why the other is left out,
    // which --quiet would not).
    let (out, took) = wordcount("both", on(&[first, second]));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(&out, "a job on a busy and a free worker");
    assert!(
        stderr.contains(&format!(
            "left out of the job: worker {first} cannot run the job: it is busy"
        )),
        "{stderr}"
    );
    assert!(took < Duration::from_secs(20), "took {took:?}");
    // Only the busy one given: the job fails at once, saying why.
    let (out, took) = wordcount("busy", on(&[first]));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("busy with a job of coordinator"),
        "{stderr}"
    );
    assert!(
        took < Duration::from_secs(5),
        "the busy worker was waited for: {took:?}"
    );
    assert!(!dir.path().join("busy").exists());
    // The long job is unaffected.
    let status = long.wait().unwrap();
    assert!(status.success(), "the long job failed");
    assert!(dir.path().join("long/_SUCCESS").exists());
}

/// The output codec travels in the job's description: the workers write the part files
/// compressed, with the codec's extension, byte for byte as one machine does.
#[test]
fn workers_compress_part_files_as_the_job_asks() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 2);
    write_input(dir.path());
    let args = strings(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        "in",
        "--split-size",
        "64KiB",
        "--reducers",
        "3",
        "-D",
        "mapreduce.output.fileoutputformat.compress=true",
        "-D",
        "mapreduce.output.fileoutputformat.compress.codec=org.apache.hadoop.io.compress.GzipCodec",
    ]);
    let (local, cluster, _) = both(dir.path(), &workers, &args, "wordcount-gzip");
    assert_same(&local, &cluster, "wordcount-gzip");
    let names: Vec<String> = files(&cluster).into_keys().collect();
    assert_eq!(
        names,
        [
            "_SUCCESS",
            "part-r-00000.gz",
            "part-r-00001.gz",
            "part-r-00002.gz"
        ],
        "{names:?}"
    );
}

/// Whether the job reads SequenceFiles, and writes them, travels in its description: the
/// workers count the words of RandomTextWriter's values as one machine does, and write
/// SequenceFiles of Text words and IntWritable counts when asked with Hadoop's key.
#[test]
fn workers_read_and_write_sequence_files_as_the_job_asks() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 2);
    ok(
        &sluice(
            &strings(&[
                "gen",
                "randomtextwriter",
                "--quiet",
                "--maps",
                "3",
                "--bytes-per-map",
                "100000",
                "--output",
                "rtw",
            ]),
            dir.path(),
        ),
        "randomtextwriter",
    );
    let args = strings(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        "rtw",
        "--split-size",
        "32KiB",
        "--reducers",
        "3",
    ]);
    let (local, cluster, _) = both(dir.path(), &workers, &args, "wordcount-of-values");
    assert_same(&local, &cluster, "wordcount-of-values");
    // The counts of the values' words, not of the files' bytes.
    let text = fs::read_to_string(cluster.join("part-r-00000")).unwrap();
    assert!(!text.is_empty() && !text.contains("SEQ"), "{text}");

    let mut args = args;
    args.extend(strings(&[
        "-D",
        "mapreduce.job.outputformat.class=org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat",
    ]));
    let (local, cluster, _) = both(dir.path(), &workers, &args, "wordcount-to-seq");
    // Sync markers are random: the files are compared by their headers and lengths.
    let (local, cluster) = (files(&local), files(&cluster));
    assert_eq!(
        local.keys().collect::<Vec<_>>(),
        cluster.keys().collect::<Vec<_>>()
    );
    let header = b"SEQ\x06\x19org.apache.hadoop.io.Text\x20org.apache.hadoop.io.IntWritable";
    for (name, bytes) in cluster.iter().filter(|(n, _)| n.starts_with("part-")) {
        assert!(bytes.starts_with(header), "{name}");
        assert_eq!(bytes.len(), local[name].len(), "{name}");
    }
}

#[test]
fn terasort_on_workers_is_sorted_as_on_one_machine() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 2);
    teragen(dir.path(), "20000", "3");
    let args = strings(&[
        "run",
        "terasort",
        "--quiet",
        "--input",
        "gen",
        "--reducers",
        "3",
        "--split-size",
        "256KiB",
    ]);
    let (local, cluster, _) = both(dir.path(), &workers, &args, "terasort");
    assert_same(&local, &cluster, "terasort");
    let out = sluice(
        &strings(&[
            "run",
            "teravalidate",
            "--quiet",
            "--input",
            "terasort-cluster",
            "--output",
            "report",
        ]),
        dir.path(),
    );
    ok(&out, "teravalidate of the workers' output");
}

/// With more owners than a task pushes to at once (8), a task's pushes wait for each other,
/// each worker starting after itself round the ring: every output still arrives by push.
#[test]
fn terasort_on_eleven_workers_pushes_every_output_a_few_owners_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 11);
    teragen(dir.path(), "200000", "2");
    // 10 splits of 2 MiB, 22 partitions (2 per worker): each task pushes about 180 KiB to
    // each of the 10 other workers, above what is held back for a batch.
    let args = strings(&[
        "run",
        "terasort",
        "--input",
        "gen",
        "--reducers",
        "22",
        "--split-size",
        "2MiB",
    ]);
    let (local, cluster, stderr) = both(dir.path(), &workers, &args, "terasort");
    assert_same(&local, &cluster, "terasort on 11 workers");
    let (_, pulled) = kept_and_pulled(&stderr);
    assert_eq!(pulled.len(), 11, "a line per worker: {stderr}");
    assert!(
        pulled.iter().all(|p| p == "0 B"),
        "every output should have arrived by push: {pulled:?}\n{stderr}"
    );
}

/// A streaming job's mapper and reducer, as users write them.
fn write_programs(dir: &Path) {
    let mapper = "#!/bin/sh\n# word<TAB>1 per word of the first field\ncut -f1 | tr ' ' '\\n' | awk 'NF { print $0 \"\\t1\" }'\n";
    let reducer = "#!/bin/sh\nawk -F'\\t' '{ n[$1] += $2 } END { for (k in n) print k \"\\t\" n[k] }' | sort\n";
    let failing = "#!/bin/sh\necho 'this mapper always fails' >&2\nexit 3\n";
    for (name, text) in [
        ("map.sh", mapper),
        ("reduce.sh", reducer),
        ("fail.sh", failing),
    ] {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn streaming_jobs_run_on_workers_as_on_one_machine() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 3);
    write_input(dir.path());
    write_programs(dir.path());
    for (name, reducers, reducer) in [("streaming", "2", "./reduce.sh"), ("maponly", "0", "NONE")] {
        let local = dir.path().join(format!("{name}-local"));
        let cluster = dir.path().join(format!("{name}-cluster"));
        let base = |out: &Path| {
            let mut a = strings(&[
                "streaming",
                "-D",
                "mapreduce.input.fileinputformat.split.maxsize=65536",
            ]);
            a.extend(strings(&[
                "-input",
                "in",
                "-mapper",
                "./map.sh",
                "-numReduceTasks",
                reducers,
            ]));
            if reducer != "NONE" {
                a.extend(strings(&["-reducer", reducer]));
            }
            a.extend(["-output".to_string(), out.display().to_string()]);
            a
        };
        ok(
            &sluice(&base(&local), dir.path()),
            &format!("{name} on one machine"),
        );
        let mut args = vec!["streaming".to_string()];
        args.extend(workers.args());
        args.extend(base(&cluster).into_iter().skip(1));
        let out = sluice(&args, dir.path());
        ok(&out, &format!("{name} on the workers"));
        // Hadoop's console, as wrappers parse it, then each worker's part.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("completed successfully"), "{stderr}");
        assert_eq!(
            stderr.matches("INFO sluice.Job: worker ").count(),
            3,
            "a line per worker: {stderr}"
        );
        assert_same_per_key(&local, &cluster, name);
    }
    assert!(workers.scratch_is_empty());
}

/// Streaming over shared memory (`-io shm`) on workers: each worker's tasks set up their rings
/// with their own programs, as on one machine. A program that did not get its rings would
/// fail the job ("does not speak the sluice shm protocol"), so a job that succeeds used them.
#[test]
fn streaming_over_shared_memory_runs_on_workers_as_on_one_machine() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 3);
    write_input(dir.path());
    let example = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/shm/python")
            .join(name);
        format!("python3 {}", path.display())
    };
    let job = |io: &[&str], out: &str| {
        let mut args = strings(&["-D", "mapreduce.input.fileinputformat.split.maxsize=65536"]);
        args.extend(strings(io));
        args.extend(strings(&["-input", "in", "-output", out]));
        args.extend(["-mapper".to_string(), example("wc_map.py")]);
        args.extend(["-reducer".to_string(), example("wc_reduce.py")]);
        args.extend(strings(&["-numReduceTasks", "3"]));
        args
    };
    // On one machine over pipes, the reference.
    let mut args = strings(&["streaming"]);
    args.extend(job(&[], "pipes-local"));
    ok(&sluice(&args, dir.path()), "over pipes on one machine");
    let mut args = strings(&["streaming"]);
    args.extend(workers.args());
    args.extend(job(&["-io", "shm"], "shm-cluster"));
    let out = sluice(&args, dir.path());
    ok(&out, "over shared memory on the workers");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("INFO sluice.Job: worker ").count(),
        3,
        "a line per worker: {stderr}"
    );
    assert_eq!(
        files(&dir.path().join("pipes-local")),
        files(&dir.path().join("shm-cluster")),
        "word counts over shared memory on the workers against pipes on one machine"
    );
    assert!(workers.scratch_is_empty());
}

#[test]
fn a_streaming_jobs_files_reach_workers_that_do_not_share_the_submitting_directory() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(&dir.path().join("workers"), 3);
    let input = write_input(dir.path());
    // What the job is submitted with, moved (below) into a directory only the submitting
    // process sees: a file system mounted in a mount namespace of its own. The workers see
    // an empty directory where the job was submitted from, as another machine would.
    let private = dir.path().join("private");
    fs::create_dir_all(private.join("lib/sub")).unwrap();
    let mapper = r#"#!/bin/sh
tag="$(cat dict.txt)|$shipped_greeting|$(cat lib/sub/x.txt)|$(wc -c < lib/big.bin | tr -d ' ')"
awk -v t="$tag" '{ print $0 "\t" t }'
"#;
    fs::write(private.join("map.sh"), mapper).unwrap();
    fs::set_permissions(private.join("map.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(private.join("dict.txt"), "from-dict\n").unwrap();
    fs::write(private.join("lib/sub/x.txt"), "from-dir\n").unwrap();
    // Shipped in several frames.
    let big: Vec<u8> = (0..3_500_001u32).map(|i| (i % 251) as u8).collect();
    fs::write(private.join("lib/big.bin"), big).unwrap();
    fs::write(
        private.join("job.xml"),
        "<configuration><property><name>shipped.greeting</name>\
         <value>from-conf</value></property></configuration>",
    )
    .unwrap();
    let submit = dir.path().join("submit");
    fs::create_dir_all(&submit).unwrap();
    let out = dir.path().join("out");

    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(strings(&[
        "-conf",
        "job.xml",
        "-files",
        "map.sh,dict.txt,lib",
        "-input",
        &input.display().to_string(),
        "-output",
        &out.display().to_string(),
        "-mapper",
        "map.sh",
        "-reducer",
        "cat",
        "-numReduceTasks",
        "2",
    ]));
    let script = r#"set -e
mount -t tmpfs shipped "$1"
# Moved across file systems: copied in here, gone from where the workers could see it.
mv "$2"/* "$1"/
cd "$1"
shift 2
exec "$@""#;
    let output = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&submit)
        .arg(&private)
        .arg(SLUICE)
        .args(&args)
        .output()
        .expect("unshare (util-linux) runs the submitting process in a mount namespace");
    ok(
        &output,
        "the job submitted from a directory the workers cannot see",
    );
    assert_eq!(
        fs::read_dir(&submit).unwrap().count(),
        0,
        "the workers saw the submitting directory's files"
    );
    assert_eq!(fs::read_dir(&private).unwrap().count(), 0);

    // Every input line, its key and value as they were, tagged by the shipped files.
    let mut expected: Vec<String> = fs::read_dir(&input)
        .unwrap()
        .flat_map(|e| {
            fs::read_to_string(e.unwrap().path())
                .unwrap()
                .lines()
                .map(|line| format!("{line}\tfrom-dict|from-conf|from-dir|3500001"))
                .collect::<Vec<_>>()
        })
        .collect();
    expected.sort();
    assert_eq!(sorted_part_lines(&out), expected);
    assert!(workers.scratch_is_empty());
}

#[test]
fn shuffles_listen_on_the_ports_they_are_given() {
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path());
    // A port the system picks is held by another program: the shuffles take the next ones.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let first = held.local_addr().unwrap().port();
    let last = first.saturating_add(8);
    let range = format!("{first}-{last}");
    let mut workers = Workers::start(
        Path::new(SLUICE),
        &dir.path().join("w"),
        0,
        "256MiB",
        |_| {},
    );
    for i in 0..2 {
        workers.add(&dir.path().join(format!("w/scratch-{i}")), |c| {
            c.args(["--shuffle-ports", &range]);
        });
    }
    let mut args = strings(&["run", "wordcount", "--input", "in", "--output", "cluster"]);
    args.extend(workers.args());
    ok(
        &sluice(&args, dir.path()),
        "word count on workers with shuffle ports",
    );
    let ok_local = sluice(
        &strings(&["run", "wordcount", "--input", "in", "--output", "local"]),
        dir.path(),
    );
    ok(&ok_local, "word count on one machine");
    assert_same(
        &dir.path().join("local"),
        &dir.path().join("cluster"),
        "wordcount",
    );
    let mut ports = Vec::new();
    for i in 0..2 {
        let addr = workers
            .shuffle_addr(i)
            .expect("the worker logs its shuffle's address");
        let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
        assert!(
            port > first && port <= last,
            "worker {i}'s shuffle at {addr}, not in {range}"
        );
        ports.push(port);
    }
    assert_ne!(ports[0], ports[1]);
    drop(held);

    // A worker refuses a range that is not one.
    let out = sluice(
        &strings(&[
            "worker",
            "--listen",
            "127.0.0.1:0",
            "--shuffle-ports",
            "90-80",
        ]),
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("90-80"));
}

/// A worker that answers but cannot set the job up (here: its only shuffle port is taken) is
/// left out, as an unreachable one is, and the job runs on the others; when no worker can
/// set it up, the job fails saying why, with no output.
#[test]
fn a_worker_that_cannot_set_the_job_up_is_left_out() {
    let dir = tempfile::tempdir().unwrap();
    write_input(dir.path());
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = held.local_addr().unwrap().port();
    let only_held = format!("{port}-{port}");
    let mut workers = start_workers(&dir.path().join("w"), 1);
    let stuck = workers.add(&dir.path().join("w/scratch-stuck"), |c| {
        c.args(["--shuffle-ports", &only_held]);
    });
    let mut args = strings(&["run", "wordcount", "--input", "in", "--output", "cluster"]);
    args.extend(workers.args());
    let out = sluice(&args, dir.path());
    ok(&out, "word count with a worker that cannot set the job up");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stuck_addr = &workers.addrs()[stuck];
    assert!(
        stderr.lines().any(|l| l.contains("left out of the job")
            && l.contains(stuck_addr.as_str())
            && l.contains(&only_held)),
        "{stderr}"
    );
    let local = sluice(
        &strings(&["run", "wordcount", "--input", "in", "--output", "local"]),
        dir.path(),
    );
    ok(&local, "word count on one machine");
    assert_same(
        &dir.path().join("local"),
        &dir.path().join("cluster"),
        "wordcount",
    );

    // Only the stuck worker: the job fails with its reason.
    let mut args = strings(&["run", "wordcount", "--input", "in", "--output", "none"]);
    args.extend(strings(&[
        "--cluster",
        &format!("workers={stuck_addr}"),
        "--secret-file",
        workers.secret().to_str().unwrap(),
    ]));
    let out = sluice(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("cannot run the job") && stderr.contains(&only_held),
        "{stderr}"
    );
    assert!(!dir.path().join("none").exists());
    drop(held);
}

/// Runs word count over `input` (a directory below `dir`) on `workers` and on one machine,
/// checks the outputs are the same, and returns each worker's shuffle figures.
fn wordcount_on_workers(
    dir: &Path,
    workers: &Workers,
    input: &str,
    reducers: &str,
) -> Vec<serde_json::Value> {
    let report = dir.join("report.json");
    let mut args = strings(&[
        "run",
        "wordcount",
        "-r",
        reducers,
        "--input",
        input,
        "--output",
    ]);
    args.extend(["cluster".to_string(), "--report".to_string()]);
    args.push(report.display().to_string());
    args.extend(workers.args());
    ok(&sluice(&args, dir), "word count on workers");
    let local = strings(&[
        "run",
        "wordcount",
        "-r",
        reducers,
        "-i",
        input,
        "-o",
        "local",
    ]);
    ok(&sluice(&local, dir), "the same on one machine");
    assert_same(&dir.join("local"), &dir.join("cluster"), "wordcount");
    shuffle_stats(&report)
}

fn sum(stats: &[serde_json::Value], field: &str) -> u64 {
    stats.iter().map(|s| s[field].as_u64().unwrap()).sum()
}

#[test]
fn pushes_to_a_worker_share_kept_connections() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(&dir.path().join("w"), 2);
    let input = dir.path().join("many");
    fs::create_dir_all(&input).unwrap();
    // Each task's output for the other worker is over 64 KiB: pushed on its own, at once.
    for f in 0..20 {
        let text: String = (0..16_000)
            .map(|i| format!("w{f}x{i} w{}\n", i % 23))
            .collect();
        fs::write(input.join(format!("f{f:02}.txt")), text).unwrap();
    }
    let started = std::time::Instant::now();
    let stats = wordcount_on_workers(dir.path(), &workers, "many", "4");
    let took = u64::try_from(started.elapsed().as_micros()).unwrap();
    assert!(
        sum(&stats, "pushes") >= 15,
        "each task pushes to the other worker: {stats:?}"
    );
    assert_eq!(sum(&stats, "batched_outputs"), 0, "{stats:?}");
    for s in &stats {
        // One connection per task thread (2) at most, whatever the number of pushes.
        let connections = s["push_connections"].as_u64().unwrap();
        assert!(
            (1..=2).contains(&connections),
            "{connections} connections for {} pushes: {stats:?}",
            s["pushes"]
        );
        assert_eq!(s["failed_pushes"].as_u64(), Some(0), "{stats:?}");
        // Each worker pushed and received for some of the job's time, not more than all of it.
        for clock in ["pushing_micros", "receiving_micros"] {
            let micros = s[clock].as_u64().unwrap();
            assert!(
                micros > 0 && micros < took,
                "{clock}: {micros} of {took}: {s}"
            );
        }
    }
}

#[test]
fn small_outputs_for_a_worker_are_pushed_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(&dir.path().join("w"), 3);
    let input = dir.path().join("small");
    fs::create_dir_all(&input).unwrap();
    let files = 300u64;
    for f in 0..files {
        let text: String = (0..20).map(|i| format!("w{} w{f}\n", i % 7)).collect();
        fs::write(input.join(format!("f{f:03}.txt")), text).unwrap();
    }
    let stats = wordcount_on_workers(dir.path(), &workers, "small", "4");
    // Every task has output (empty or not) for two other workers; held back, each worker's
    // go in a batch per owner when the maps are done (or when 256 are held).
    let batched = sum(&stats, "batched_outputs");
    // A batch of one (what is left of a worker's outputs for an owner after a full batch of
    // 256 went) is not counted.
    assert!(
        batched + 6 >= 2 * files,
        "{batched} of {} batched: {stats:?}",
        2 * files
    );
    let pushes = sum(&stats, "pushes");
    assert!(
        (6..=12).contains(&pushes),
        "{pushes} pushes for {} outputs: {stats:?}",
        2 * files
    );
    assert_eq!(sum(&stats, "failed_pushes"), 0, "{stats:?}");
    // Sealing pulled nothing: what was held back arrived before.
    assert_eq!(sum(&stats, "pulled_bytes"), 0, "{stats:?}");
}

#[test]
fn a_failing_program_fails_the_job_cleanly_naming_the_task_and_worker() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing of the job is to go to the workers' temporary directory.
    let tmp = dir.path().join("tmp");
    fs::create_dir_all(&tmp).unwrap();
    let workers = Workers::start(Path::new(SLUICE), dir.path(), 2, "256MiB", |c| {
        c.env("TMPDIR", &tmp);
    });
    write_input(dir.path());
    write_programs(dir.path());
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(strings(&[
        "-input",
        "in",
        "-output",
        "out",
        "-mapper",
        "./fail.sh",
        "-reducer",
        "cat",
    ]));
    let out = sluice(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("this mapper always fails"), "{stderr}");
    assert!(
        stderr.contains("127.0.0.1:"),
        "the worker is named: {stderr}"
    );
    // The log the error names is kept on the worker's machine (here, the same one).
    let log = stderr
        .split("(all of its stderr: ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .unwrap_or_else(|| panic!("no log named: {stderr}"));
    let text = fs::read_to_string(log).unwrap_or_else(|e| panic!("{log}: {e}\n{stderr}"));
    assert!(text.contains("this mapper always fails"), "{log}: {text}");
    // In the worker's scratch directory; of the job, only the logs are left there.
    assert!(
        workers
            .scratch()
            .iter()
            .any(|s| Path::new(log).starts_with(s)),
        "{log} is not in a worker's scratch directory"
    );
    for scratch in workers.scratch() {
        for kept in entries(scratch) {
            assert!(
                kept.starts_with("sluice-job_"),
                "{kept} left in {scratch:?}"
            );
            assert_eq!(entries(&scratch.join(&kept)), ["logs"], "{kept}");
        }
    }
    assert_eq!(entries(&tmp), Vec::<String>::new());
    assert!(!dir.path().join("out").exists());
    assert_no_staging(dir.path());
}

fn assert_no_staging(dir: &Path) {
    let hidden: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("sluice-tmp"))
        .collect();
    assert!(hidden.is_empty(), "staging left behind: {hidden:?}");
}

#[test]
fn peers_without_the_secret_are_refused_and_the_workers_carry_on() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 2);
    write_input(dir.path());
    // A coordinator with another secret.
    let other = dir.path().join("other-secret");
    ok(
        &sluice(&strings(&["secret", other.to_str().unwrap()]), dir.path()),
        "secret",
    );
    let args = strings(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        "in",
        "--output",
        "out",
        "--cluster",
        &format!("workers={}", workers.addrs().join(",")),
        "--secret-file",
        other.to_str().unwrap(),
    ]);
    let out = sluice(&args, dir.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "a coordinator without the secret ran a job"
    );
    assert!(stderr.contains("no output was written"), "{stderr}");
    assert!(!dir.path().join("out").exists());
    // Garbage, a silent peer and a half-written frame at a worker's port.
    for junk in [&b"GET / HTTP/1.1\r\n\r\n"[..], b"", b"SLCN\x01\x00\x00"] {
        let mut stream = std::net::TcpStream::connect(&workers.addrs()[0]).unwrap();
        stream.write_all(junk).unwrap();
        drop(stream);
    }
    // A secret file others may read is refused before anything is sent.
    let open = dir.path().join("open-secret");
    fs::copy(workers.secret(), &open).unwrap();
    fs::set_permissions(&open, fs::Permissions::from_mode(0o644)).unwrap();
    let mut args = strings(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        "in",
        "--output",
        "out",
    ]);
    args.extend(strings(&[
        "--cluster",
        &format!("workers={}", workers.addrs().join(",")),
        "--secret-file",
        open.to_str().unwrap(),
    ]));
    let out = sluice(&args, dir.path());
    assert!(!out.status.success());
    // The workers still serve a coordinator that knows the secret.
    let mut args = strings(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        "in",
        "--output",
        "out",
    ]);
    args.extend(workers.args());
    ok(
        &sluice(&args, dir.path()),
        "wordcount after the refused peers",
    );
    assert!(dir.path().join("out/_SUCCESS").exists());
}

/// The arguments of a streaming job on `workers` from `in` to `out`, with `reducers`
/// partitions.
fn streaming_on(
    workers: &Workers,
    mapper: &str,
    reducer: &str,
    reducers: usize,
    out: &str,
) -> Vec<String> {
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(strings(&[
        "-input", "in", "-output", out, "-mapper", mapper, "-reducer", reducer,
    ]));
    args.extend(["-numReduceTasks".to_string(), reducers.to_string()]);
    args
}

/// Runs a streaming job with `mapper` and `reducer` on `workers`, kills worker 1 after
/// `delay`, and returns what the job did and where its output is.
fn kill_during(
    dir: &Path,
    workers: &mut Workers,
    mapper: &str,
    reducer: &str,
    delay: Duration,
    out: &str,
) -> (Output, PathBuf) {
    let args = streaming_on(workers, mapper, reducer, 4, out);
    let job = spawn_sluice(&args, dir);
    std::thread::sleep(delay);
    workers.kill(1);
    let started = Instant::now();
    let output = job.wait_with_output().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "the job hung after the kill"
    );
    (output, dir.join(out))
}

fn write_script(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_worker_killed_mid_job_costs_only_its_work() {
    let dir = tempfile::tempdir().unwrap();
    let mut workers = start_workers(dir.path(), 3);
    write_input(dir.path());
    // Slow programs, so that the kill lands while tasks run: in the map phase, then in the
    // reduce phase (the maps are quick there).
    write_script(dir.path(), "slow-map.sh", "#!/bin/sh\nsleep 3\ncat\n");
    write_script(dir.path(), "slow-reduce.sh", "#!/bin/sh\nsleep 3\ncat\n");
    let expected = dir.path().join("expected");
    let mut args = strings(&[
        "streaming",
        "-input",
        "in",
        "-mapper",
        "cat",
        "-reducer",
        "cat",
    ]);
    args.extend(strings(&["-numReduceTasks", "4", "-output", "expected"]));
    ok(&sluice(&args, dir.path()), "the job on one machine");

    let (out, output) = kill_during(
        dir.path(),
        &mut workers,
        "./slow-map.sh",
        "cat",
        Duration::from_millis(1500),
        "killed-in-map",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "killed in the map phase: {stderr}");
    assert!(stderr.contains("lost"), "the loss is reported: {stderr}");
    // As a note of the cluster's, not as a failed attempt of a task that did not fail
    // (wrappers count Hadoop's "Status : FAILED" lines).
    let loss = stderr
        .lines()
        .find(|l| l.contains(" lost: "))
        .unwrap_or_default();
    assert!(loss.contains("INFO sluice.Cluster: worker "), "{stderr}");
    assert!(!stderr.contains("Status : FAILED"), "{stderr}");
    assert_same_per_key(&expected, &output, "killed in the map phase");
    assert_eq!(workers.alive(), 2, "the other workers carry on");
    for (i, scratch) in workers.scratch().iter().enumerate() {
        let empty = fs::read_dir(scratch).map_or(true, |mut e| e.next().is_none());
        assert!(i == 1 || empty, "worker {i} kept the job's files");
    }

    // Killed while the reduce tasks run: the map outputs it held are made again on the
    // others, then the partitions it had not finished run there.
    let mut workers = start_workers(&dir.path().join("second"), 3);
    let (out, output) = kill_during(
        dir.path(),
        &mut workers,
        "cat",
        "./slow-reduce.sh",
        Duration::from_millis(2000),
        "killed-in-reduce",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "killed in the reduce phase: {stderr}");
    assert_same_per_key(&expected, &output, "killed in the reduce phase");
    assert_no_staging(dir.path());
}

/// Whether process `pid` runs (a zombie does not: it runs nothing and holds nothing but its
/// number, until whoever inherited it reaps it).
fn is_running(pid: u32) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // The state follows the parenthesised command, which may hold spaces.
    let state = stat
        .rfind(')')
        .and_then(|i| stat[i + 1..].split_whitespace().next());
    !matches!(state, Some("Z" | "X") | None)
}

/// The processes (not zombies) whose command line is exactly `words`.
fn processes_running(words: &[&str]) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .collect();
        if args.len() == words.len()
            && args.iter().zip(words).all(|(a, w)| *a == w.as_bytes())
            && is_running(pid)
        {
            found.push(pid);
        }
    }
    found
}

/// Polls `done` for up to five seconds (a killed process takes a moment to go).
fn within_5s(done: impl FnMut() -> bool) -> bool {
    wait_until(Duration::from_secs(5), done)
}

/// The entries of a directory, by name.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The programs a `hold.sh` mapper recorded: (its worker's pid, its own pid = its process
/// group, the pid of the process it started in the background), a line each.
fn held_programs(file: &Path) -> Vec<(u32, u32, u32)> {
    fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let n: Vec<u32> = l
                .split_whitespace()
                .filter_map(|w| w.parse().ok())
                .collect();
            (n.len() == 3).then(|| (n[0], n[1], n[2]))
        })
        .collect()
}

/// Kills (when dropped, however the test ends) the process groups a `hold.sh` recorded.
struct KillHeld(PathBuf);

impl Drop for KillHeld {
    fn drop(&mut self) {
        for (_, group, child) in held_programs(&self.0) {
            let _ = Command::new("kill")
                .args(["-9", "--", &format!("-{group}"), &child.to_string()])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Starts `sluice streaming` on `workers` in `dir`: input `in`, output `out`, `mapper`, and
/// `cat` as the reducer; its console goes nowhere.
fn spawn_streaming(workers: &Workers, dir: &Path, mapper: &str) -> std::process::Child {
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(strings(&[
        "-input", "in", "-output", "out", "-mapper", mapper, "-reducer", "cat",
    ]));
    Command::new(SLUICE)
        .args(&args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// A streaming job whose mappers (`hold.sh`) never end by themselves: each records its
/// worker's pid, its own pid (= its process group) and the pid of a `sleep` it started in
/// the background, then sleeps for ten minutes. Its programs are killed when it is dropped.
struct HeldJob {
    /// `sluice streaming` itself.
    job: std::process::Child,
    /// Where the programs record themselves.
    record: PathBuf,
    _cleanup: KillHeld,
}

impl HeldJob {
    /// Starts the job on `workers` (at least two) in `dir`, and waits until two programs run
    /// on each of the first two workers (5 map tasks, 2 at once on each).
    fn start(workers: &Workers, dir: &Path) -> HeldJob {
        write_input(dir);
        let record = dir.join("programs.txt");
        let cleanup = KillHeld(record.clone());
        // `$PPID` is the worker (programs are its children); the program runs in a group of
        // its own, whose id is its pid; the background `sleep` is in that group.
        write_script(
            dir,
            "hold.sh",
            &format!(
                "#!/bin/sh\nsleep 600 </dev/null >/dev/null 2>&1 &\n\
                 echo \"$PPID $$ $!\" >> {}\nexec sleep 600 </dev/null\n",
                record.display()
            ),
        );
        let held = HeldJob {
            job: spawn_streaming(workers, dir, "./hold.sh"),
            record,
            _cleanup: cleanup,
        };
        let (w0, w1) = (workers.pid(0), workers.pid(1));
        assert!(
            wait_until(Duration::from_secs(30), || held.on(w0).len() == 2
                && held.on(w1).len() == 2),
            "the programs did not start on both workers: {:?}",
            held_programs(&held.record)
        );
        held
    }

    /// The programs running on the worker whose pid is `worker`: (process group, background
    /// child).
    fn on(&self, worker: u32) -> Vec<(u32, u32)> {
        held_programs(&self.record)
            .into_iter()
            .filter(|(w, _, _)| *w == worker)
            .map(|(_, group, child)| (group, child))
            .collect()
    }
}

/// A worker killed outright (SIGKILL) while its programs run: the programs, and what they
/// started in their process groups, die with it, although they read no pipe whose closing
/// would end them. Its job directory stays in its scratch directory; a worker started on that
/// directory again removes it. And a worker starting on a scratch directory shared with a
/// running worker leaves the running worker's job directory alone.
#[test]
fn a_killed_worker_takes_its_programs_along_and_its_restart_clears_its_scratch() {
    let dir = tempfile::tempdir().unwrap();
    let mut workers = start_workers(dir.path(), 2);
    let mut held = HeldJob::start(&workers, dir.path());
    let (w0, w1) = (workers.pid(0), workers.pid(1));
    let scratch = workers.scratch().to_vec();
    // The job's directory and the streaming job's.
    let live = entries(&scratch[0]);
    assert_eq!(live.len(), 2, "worker 0's job directories: {live:?}");

    // A worker started on worker 0's scratch directory leaves its running job's alone.
    let sharing = workers.add(&scratch[0], |_| {});
    assert_eq!(
        entries(&scratch[0]),
        live,
        "a running worker's job directory went"
    );
    assert!(
        !workers.log(sharing).iter().any(|l| l.contains("removed")),
        "{:?}",
        workers.log(sharing)
    );

    workers.kill(1);
    for (group, child) in held.on(w1) {
        assert!(
            within_5s(|| !is_running(group) && !is_running(child)),
            "program {group} (or its child {child}) outlived its killed worker"
        );
    }
    let stale = entries(&scratch[1]);
    assert_eq!(
        stale.len(),
        2,
        "the killed worker's job directories: {stale:?}"
    );

    // The job is abandoned (its maps would sleep for ten minutes): worker 0 ends its tasks.
    held.job.kill().unwrap();
    held.job.wait().unwrap();
    for (group, child) in held.on(w0) {
        assert!(
            within_5s(|| !is_running(group) && !is_running(child)),
            "program {group} (or its child {child}) outlived its abandoned job"
        );
    }

    // Worker 1 again, on its scratch directory: what the killed one left goes, and is said.
    workers.restart(1, |_| {});
    assert_eq!(entries(&scratch[1]), Vec::<String>::new());
    for name in &stale {
        let removed = scratch[1].join(name).display().to_string();
        assert!(
            workers
                .log(1)
                .iter()
                .any(|l| l.contains("removed") && l.contains(&removed)),
            "the removal of {name} is not logged: {:?}",
            workers.log(1)
        );
    }
    assert!(workers.scratch_empties(Duration::from_secs(10)));
}

/// A worker stopped with `SIGTERM` (as systemd or YARN stop one) while its programs run: it
/// ends them and what they started, removes its job's files (its job directory and the
/// streaming job's directory, both in its scratch directory, none in its `TMPDIR`), says so
/// and exits 0, while the other worker carries on. Both directories were for the worker's
/// user only while they existed.
#[test]
fn a_worker_stopped_with_sigterm_ends_its_programs_and_removes_its_files() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let temp: Vec<PathBuf> = (0..2)
        .map(|i| dir.path().join(format!("tmp-{i}")))
        .collect();
    for t in &temp {
        fs::create_dir_all(t).unwrap();
    }
    let mut workers = Workers::start(Path::new(SLUICE), dir.path(), 1, "256MiB", |c| {
        c.env("TMPDIR", &temp[0]);
    });
    workers.add(&dir.path().join("scratch-1"), |c| {
        c.env("TMPDIR", &temp[1]);
    });
    let mut held = HeldJob::start(&workers, dir.path());
    let (w0, w1) = (workers.pid(0), workers.pid(1));
    let scratch = workers.scratch().to_vec();
    let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let in_scratch = entries(&scratch[1]);
    assert_eq!(in_scratch.len(), 2, "{in_scratch:?}");
    for name in &in_scratch {
        // The job's directory, and the streaming job's (`sluice-job_...`).
        assert!(
            name.starts_with("job_") || name.starts_with("sluice-job_"),
            "{name}"
        );
        assert_eq!(mode(&scratch[1].join(name)), 0o700, "{name}");
    }
    assert_eq!(entries(&temp[1]), Vec::<String>::new());

    let status = workers.terminate(1, Duration::from_secs(10));
    assert!(
        status.is_some_and(|s| s.success()),
        "the worker did not stop cleanly on SIGTERM: {status:?}\n{:?}",
        workers.log(1)
    );
    for (group, child) in held.on(w1) {
        assert!(
            within_5s(|| !is_running(group) && !is_running(child)),
            "program {group} (or its child {child}) outlived its stopped worker"
        );
    }
    assert_eq!(
        entries(&scratch[1]),
        Vec::<String>::new(),
        "job directory left"
    );
    assert_eq!(
        entries(&temp[1]),
        Vec::<String>::new(),
        "streaming directory left"
    );
    let log = workers.log(1);
    assert!(
        log.iter().any(|l| l.contains("stopping")) && log.iter().any(|l| l.ends_with("stopped")),
        "{log:?}"
    );
    // The job carries on without it: its tasks' cancellation is no failure of theirs, and
    // the other worker still runs its programs.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        held.job.try_wait().unwrap().is_none(),
        "the job ended when one of its workers was stopped"
    );
    assert_eq!(workers.alive(), 1);
    assert!(held.on(w0).iter().all(|(group, _)| is_running(*group)));

    held.job.kill().unwrap();
    held.job.wait().unwrap();
    // An idle worker stops at once too.
    let status = workers.terminate(0, Duration::from_secs(10));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    assert_eq!(entries(&scratch[0]), Vec::<String>::new());
    assert_eq!(entries(&temp[0]), Vec::<String>::new());
}

/// `sluice worker --listen ADDR` without `--scratch`, its temporary directory `temp`.
fn worker_without_scratch(listen: &str, secret: &Path, temp: &Path) -> std::process::Child {
    worker_without_scratch_logging(listen, secret, temp, Stdio::null())
}

/// [`worker_without_scratch`], its log to `log`.
fn worker_without_scratch_logging(
    listen: &str,
    secret: &Path,
    temp: &Path,
    log: impl Into<Stdio>,
) -> std::process::Child {
    Command::new(SLUICE)
        .args(["worker", "--listen", listen])
        .arg("--secret-file")
        .arg(secret)
        .env("TMPDIR", temp)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// A worker started without `--scratch` works in `sluice-worker-PORT` in its temporary
/// directory (for its user only), so that the next worker on that port clears what a killed
/// one left; stopped, it removes the directory.
#[test]
fn a_workers_default_scratch_is_named_by_its_port_and_removed_when_it_stops() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let temp = dir.path().join("tmp");
    fs::create_dir_all(&temp).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let secret = dir.path().join("secret");
    ok(
        &sluice(&strings(&["secret", secret.to_str().unwrap()]), dir.path()),
        "sluice secret",
    );
    let start = || worker_without_scratch(&format!("127.0.0.1:{port}"), &secret, &temp);
    let scratch = temp.join(format!("sluice-worker-{port}"));
    let mut worker = start();
    assert!(within_5s(|| scratch.is_dir()), "{:?}", entries(&temp));
    assert_eq!(
        fs::metadata(&scratch).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // Killed outright: its directory stays, with what a job of it would have left.
    worker.kill().unwrap();
    worker.wait().unwrap();
    fs::create_dir(scratch.join("job_1_0001")).unwrap();
    // The mark a worker puts in each job directory it makes.
    fs::write(scratch.join("job_1_0001/.sluice-worker-job"), b"").unwrap();
    fs::write(scratch.join("job_1_0001/spill-0"), b"records").unwrap();
    // The next worker on the port takes the same directory and clears it.
    let mut worker = start();
    assert!(
        within_5s(|| entries(&scratch).is_empty()),
        "{:?}",
        entries(&scratch)
    );
    let pid = worker.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    let status = worker.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(entries(&temp), Vec::<String>::new());
}

/// Workers on no fixed port each work in `sluice-worker-pidPID`: a new one removes those whose
/// worker was killed, never a running worker's, idle or not.
#[test]
fn a_worker_on_no_fixed_port_removes_the_scratch_of_killed_ones_only() {
    let dir = tempfile::tempdir().unwrap();
    let temp = dir.path().join("tmp");
    fs::create_dir_all(&temp).unwrap();
    let secret = dir.path().join("secret");
    ok(
        &sluice(&strings(&["secret", secret.to_str().unwrap()]), dir.path()),
        "sluice secret",
    );
    let third_log = dir.path().join("third.log");
    let start = |log: Stdio| {
        let worker = worker_without_scratch_logging("127.0.0.1:0", &secret, &temp, log);
        let scratch = temp.join(format!("sluice-worker-pid{}", worker.id()));
        assert!(within_5s(|| scratch.is_dir()), "{:?}", entries(&temp));
        (worker, scratch)
    };
    let (mut killed, killed_scratch) = start(Stdio::null());
    let (mut idle, idle_scratch) = start(Stdio::null());
    killed.kill().unwrap();
    killed.wait().unwrap();
    fs::create_dir(killed_scratch.join("job_1_0001")).unwrap();
    fs::write(killed_scratch.join("job_1_0001/spill-0"), b"records").unwrap();
    let (mut third, third_scratch) = start(fs::File::create(&third_log).unwrap().into());
    assert!(!killed_scratch.exists(), "{:?}", entries(&temp));
    // The removal is logged, as a fixed-port worker logs the stale job directories it removes.
    let removal = format!(
        "removed {}, left by a worker that is no longer running",
        killed_scratch.display()
    );
    assert!(
        within_5s(|| fs::read_to_string(&third_log).is_ok_and(|l| l.contains(&removal))),
        "{:?}",
        fs::read_to_string(&third_log)
    );
    assert!(
        idle_scratch.is_dir(),
        "a running worker's scratch was removed"
    );
    for worker in [&mut idle, &mut third] {
        let pid = worker.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let status = worker.wait().unwrap();
        assert!(status.success(), "{status:?}");
    }
    assert!(!third_scratch.exists());
    assert_eq!(entries(&temp), Vec::<String>::new());
}

/// A worker lost in the map phase after finishing some map tasks: their output for the
/// partitions it owned went with it, so they run again on the others during the map phase,
/// and the stage's input is whole when it is sealed (no owner finds a task's output missing
/// and waits for it to be made again after the map phase). The output is as on one machine.
/// Writes `slow.sh`, a mapper that notes its worker's process id in the file returned, then
/// takes 0.3 s to copy its input.
fn write_noting_mapper(dir: &Path) -> PathBuf {
    let started = dir.join("started.txt");
    write_script(
        dir,
        "slow.sh",
        &format!(
            "#!/bin/sh\necho \"$PPID\" >> {}\nsleep 0.3\nexec cat\n",
            started.display()
        ),
    );
    started
}

/// Waits (a minute at most) until worker `i`, with 2 threads, is given a third map task of a
/// `slow.sh` job ([`write_noting_mapper`]): the coordinator has then heard that one of its
/// first two finished.
fn await_third_task(workers: &Workers, i: usize, started: &Path) {
    let worker = workers.pid(i).to_string();
    let starts = || {
        fs::read_to_string(started)
            .unwrap_or_default()
            .lines()
            .filter(|l| *l == worker)
            .count()
    };
    assert!(
        wait_until(Duration::from_secs(60), || starts() >= 3),
        "worker {i} was not given a third map task"
    );
}

#[test]
fn map_tasks_finished_on_a_worker_lost_mid_map_run_again_within_the_map_phase() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(&input).unwrap();
    // 16 files, each with keys in both partitions.
    for f in 0..16 {
        let text: String = (0..200).map(|i| format!("key-{f}-{i}\tv{i}\n")).collect();
        fs::write(input.join(format!("part-{f:02}")), text).unwrap();
    }
    let started = write_noting_mapper(dir.path());
    let job = |out: &str| {
        strings(&[
            "streaming",
            "-input",
            "in",
            "-output",
            out,
            "-mapper",
            "./slow.sh",
            "-reducer",
            "cat",
            "-numReduceTasks",
            "2",
        ])
    };
    ok(&sluice(&job("local"), dir.path()), "the job on one machine");
    fs::remove_file(&started).unwrap();

    let mut workers = start_workers(&dir.path().join("w"), 2);
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(job("cluster").into_iter().skip(1));
    let child = spawn_sluice(&args, dir.path());
    // Worker 1 owns partition 1.
    await_third_task(&workers, 1, &started);
    workers.kill(1);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("lost"), "the loss was not seen: {stderr}");
    let log = workers.log(0);
    assert!(
        !log.iter().any(|l| l.contains("cannot have task")),
        "the stage's input was incomplete after the map phase: {log:?}"
    );
    assert!(workers.logged(0, "stage 1 sealed"), "{log:?}");
    assert_same(
        &dir.path().join("local"),
        &dir.path().join("cluster"),
        "a worker lost mid-map",
    );
}

#[test]
fn a_lost_workers_finished_tasks_count_once_in_the_jobs_counters() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(&input).unwrap();
    let mut lines = 0;
    let mut input_bytes = 0;
    for f in 0..12 {
        let text: String = (0..500).map(|i| format!("f{f} line {i}\n")).collect();
        lines += 500;
        input_bytes += text.len() as u64;
        fs::write(input.join(format!("part-{f:02}")), text).unwrap();
    }
    let started = write_noting_mapper(dir.path());
    // A map-only job: the map tasks a lost worker finished wrote committed part files, which
    // are kept, so their counts must be kept too, and not counted again.
    let mut workers = start_workers(dir.path(), 2);
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(strings(&[
        "-input",
        "in",
        "-output",
        "out",
        "-mapper",
        "./slow.sh",
        "-numReduceTasks",
        "0",
    ]));
    let child = spawn_sluice(&args, dir.path());
    await_third_task(&workers, 1, &started);
    std::thread::sleep(Duration::from_millis(200));
    workers.kill(1);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(" lost: "),
        "the loss was not seen: {stderr}"
    );
    let written: u64 = files(&dir.path().join("out"))
        .iter()
        .filter(|(name, _)| name.starts_with("part-"))
        .map(|(_, bytes)| bytes.len() as u64)
        .sum();
    let output_lines = sorted_part_lines(&dir.path().join("out")).len() as u64;
    assert_eq!(output_lines, lines, "the output has every line once");
    for (name, want) in [
        ("Map input records", lines),
        ("Map output records", lines),
        ("Bytes Read", input_bytes),
        ("Bytes Written", written),
    ] {
        assert_eq!(counter(&stderr, name), Some(want), "{name}: {stderr}");
    }
}

/// Input for `grep 'w[0-9]+'` with many distinct matches, so that its second stage (sorting
/// the counts, one partition) has work to do; returns the job's output as computed here:
/// `count<TAB>match` lines by decreasing count, ties by the match's bytes.
fn write_grep_input(dir: &Path) -> String {
    let input = dir.join("in");
    fs::create_dir_all(&input).unwrap();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for f in 0..8u64 {
        let mut text = String::new();
        for i in 0..40_000u64 {
            let n = f * 40_000 + i;
            let words = [
                format!("w{}", n % 150_000),
                format!("w{}", 1_000_000 + n % 170_000),
                format!("w{}", n % 11),
            ];
            text.push_str(&format!(
                "{} and {} or {} end\n",
                words[0], words[1], words[2]
            ));
            for word in words {
                *counts.entry(word).or_default() += 1;
            }
        }
        fs::write(input.join(format!("part-{f}.txt")), text).unwrap();
    }
    let mut lines: Vec<(u64, String)> = counts.into_iter().map(|(m, c)| (c, m)).collect();
    lines.sort_by(|x, y| {
        y.0.cmp(&x.0)
            .then_with(|| x.1.as_bytes().cmp(y.1.as_bytes()))
    });
    lines.iter().map(|(c, m)| format!("{c}\t{m}\n")).collect()
}

#[test]
fn a_worker_killed_in_the_second_stage_of_a_two_stage_job_costs_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let expected = write_grep_input(dir.path());
    let job = |out: &str| {
        strings(&[
            "run",
            "grep",
            "--input",
            "in",
            "--pattern",
            "w[0-9]+",
            "--reducers",
            "3",
            "--split-size",
            "256KiB",
            "--output",
            out,
        ])
    };
    ok(&sluice(&job("local"), dir.path()), "grep on one machine");
    let local = fs::read_to_string(dir.path().join("local/part-r-00000")).unwrap();
    assert!(
        local == expected,
        "grep on one machine differs from the counts made here"
    );

    // Worker 0 owns stage 2's only partition: losing it loses stage 2's input, made by stage
    // 1's tasks from input let go by then, so the job runs again from its map phase. Worker
    // 1 owns none: stage 2 carries on without it.
    for (victim, again) in [(0, true), (1, false)] {
        let mut workers = start_workers(&dir.path().join(format!("victim-{victim}")), 3);
        let out = format!("killed-{victim}");
        let mut args = job(&out);
        args.extend(workers.args());
        let mut child = spawn_sluice(&args, dir.path());
        // Stage 2 has begun once its owner has sealed its input; its one task, sorting
        // 320,000 counts, takes far longer than a poll. That the kill landed in the stage is
        // checked below: the coordinator reports the loss.
        let deadline = Instant::now() + Duration::from_secs(120);
        while !workers.logged(0, "stage 2 sealed") {
            assert!(
                child.try_wait().unwrap().is_none(),
                "the job ended before stage 2"
            );
            assert!(Instant::now() < deadline, "stage 2 did not begin");
            std::thread::sleep(Duration::from_millis(2));
        }
        workers.kill(victim);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let what = format!("worker {victim} killed in stage 2");
        assert!(output.status.success(), "{what}: {stderr}");
        assert!(
            stderr.contains("lost"),
            "{what}: the loss was not seen: {stderr}"
        );
        assert_eq!(
            stderr.contains("runs again from its map phase"),
            again,
            "{what}: {stderr}"
        );
        let got = fs::read_to_string(dir.path().join(&out).join("part-r-00000")).unwrap();
        assert!(
            got == expected,
            "{what}: the output differs from the counts made here"
        );
        assert_same(&dir.path().join("local"), &dir.path().join(&out), &what);
        assert!(dir.path().join(&out).join("_SUCCESS").exists());
        assert_no_staging(dir.path());
        assert_eq!(workers.alive(), 2, "{what}: the other workers carry on");
        assert!(
            workers.scratch_empties(Duration::from_secs(5)),
            "{what}: scratch left behind"
        );
    }

    // A worker that cannot set the second try up (its scratch directory replaced by a file)
    // is left out of it, as one that cannot set a job up at its start is: the try runs on
    // the worker left.
    let mut workers = start_workers(&dir.path().join("refusing"), 3);
    let mut args = job("refused");
    args.extend(workers.args());
    let mut child = spawn_sluice(&args, dir.path());
    await_log(&workers, 0, "stage 2 sealed", &mut child);
    let blocked = workers.scratch()[2].clone();
    fs::rename(&blocked, dir.path().join("refusing/moved")).unwrap();
    fs::write(&blocked, b"not a directory").unwrap();
    workers.kill(0);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("runs again from its map phase"), "{stderr}");
    let refusing = &workers.addrs()[2];
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("left out of the job") && l.contains(refusing.as_str())),
        "{stderr}"
    );
    assert_same(
        &dir.path().join("local"),
        &dir.path().join("refused"),
        "refused",
    );
    assert!(dir.path().join("refused/_SUCCESS").exists());
    assert_no_staging(dir.path());
    drop(workers);

    // On two workers, the second try runs on one; when that one is lost too, the job fails
    // and neither try leaves anything behind.
    let mut workers = start_workers(&dir.path().join("both"), 2);
    let mut args = job("killed-both");
    args.extend(workers.args());
    let mut child = spawn_sluice(&args, dir.path());
    for (victim, sign) in [(0, "stage 2 sealed"), (1, "_2 started")] {
        await_log(&workers, victim, sign, &mut child);
        workers.kill(victim);
    }
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "every worker lost: {stderr}");
    assert!(stderr.contains("runs again from its map phase"), "{stderr}");
    assert!(stderr.contains("no output was written"), "{stderr}");
    assert!(!dir.path().join("killed-both").exists());
    assert_no_staging(dir.path());
}

/// A small deterministic generator of trial timings (no dependency for a few numbers).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % bound.max(1)
    }
}

#[test]
fn kills_at_random_moments_end_in_correct_output_or_a_clean_failure() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(&input).unwrap();
    let mut keys = BTreeSet::new();
    for f in 0..12 {
        let text: String = (0..1500)
            .map(|i| format!("k{} {f}\tv{i}\n", i % 37))
            .collect();
        keys.extend(
            text.lines()
                .map(|l| l.split('\t').next().unwrap_or(l).to_string()),
        );
        fs::write(input.join(format!("f{f:02}.txt")), text).unwrap();
    }
    let lines = 12 * 1500;
    let keys = keys.len() as u64;
    // Each program also starts a process in its group that no pipe ends (its task kills the
    // group when it is done with the program; the reaper of a killed worker does): found by
    // its command line, unique to this run of the test.
    let marker = format!("600.{}", std::process::id());
    for name in ["map.sh", "reduce.sh"] {
        write_script(
            dir.path(),
            name,
            &format!("#!/bin/sh\nsleep {marker} </dev/null >/dev/null 2>&1 &\nsleep 0.2\ncat\n"),
        );
    }
    let left_running = || processes_running(&["sleep", &marker]);
    let job = |out: &str| {
        strings(&[
            "-input",
            "in",
            "-output",
            out,
            "-mapper",
            "./map.sh",
            "-reducer",
            "./reduce.sh",
            "-numReduceTasks",
            "3",
        ])
    };
    let mut args = vec!["streaming".to_string()];
    args.extend(job("expected"));
    ok(&sluice(&args, dir.path()), "the job on one machine");
    let expected = dir.path().join("expected");
    // How long the job takes on workers, undisturbed: the kills land within that.
    let baseline = {
        let mut workers = start_workers(&dir.path().join("baseline"), 3);
        let mut args = vec!["streaming".to_string()];
        args.extend(workers.args());
        args.extend(job("baseline-out"));
        let started = Instant::now();
        ok(&sluice(&args, dir.path()), "the job on workers");
        let took = started.elapsed();
        assert_eq!(workers.alive(), 3);
        took
    };
    // A trial whose job was over before its kill shows the job can be shorter (a busy
    // machine makes the baseline long): the window then shrinks to below that.
    let mut window = u64::try_from(baseline.as_millis() * 9 / 10).unwrap_or(u64::MAX);

    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    eprintln!("kill trials: seed {seed}");
    let mut rng = Lcg(seed);
    let (mut completed, mut failed, mut during) = (0, 0, 0);
    for trial in 0..20 {
        let mut workers = start_workers(&dir.path().join(format!("trial-{trial}")), 3);
        let out = format!("out-{trial}");
        let mut args = vec!["streaming".to_string()];
        args.extend(workers.args());
        args.extend(job(&out));
        let mut child = spawn_sluice(&args, dir.path());
        let victim = rng.next(3) as usize;
        let delay = Duration::from_millis(rng.next(window));
        std::thread::sleep(delay);
        let running = child.try_wait().unwrap().is_none();
        workers.kill(victim);
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let what = format!("trial {trial} (seed {seed}): worker {victim} killed after {delay:?}");
        if running {
            during += 1;
        } else {
            window = window.min(u64::try_from(delay.as_millis() * 9 / 10).unwrap_or(window));
        }
        if output.status.success() {
            completed += 1;
            assert_same_per_key(&expected, &dir.path().join(&out), &what);
            // Each record counted once, whatever the lost worker had done.
            for (name, want) in [
                ("Map input records", lines),
                ("Map output records", lines),
                ("Reduce input groups", keys),
                ("Reduce input records", lines),
                ("Reduce output records", lines),
            ] {
                assert_eq!(
                    counter(&stderr, name),
                    Some(want),
                    "{what}: {name}: {stderr}"
                );
            }
        } else {
            failed += 1;
            let reason = stderr
                .lines()
                .filter(|l| l.contains("ERROR"))
                .collect::<Vec<_>>()
                .join(" | ");
            eprintln!("{what}: failed cleanly: {reason}");
            assert!(
                !dir.path().join(&out).exists(),
                "{what}: failed, but left output: {stderr}"
            );
        }
        assert_no_staging(dir.path());
        assert_eq!(workers.alive(), 2, "{what}: the other workers carry on");
        // No program of any worker outlives the job, the killed worker's included.
        let survived = within_5s(|| left_running().is_empty());
        let survivors = left_running();
        for pid in &survivors {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        }
        assert!(survived, "{what}: programs left running: {survivors:?}");
        // The killed worker started again on its scratch directory removes what it left
        // there: then every worker's scratch directory must empty.
        workers.restart(victim, |_| {});
        assert!(
            workers.scratch_empties(Duration::from_secs(5)),
            "{what}: scratch left behind: {:?}",
            workers
                .scratch()
                .iter()
                .map(|d| entries(d))
                .collect::<Vec<_>>()
        );
    }
    eprintln!(
        "kill trials: {completed} completed, {failed} failed cleanly; {during} kills landed \
         while the job ran"
    );
    assert!(
        completed >= 10,
        "most trials should complete: {completed} of 20"
    );
    assert!(
        during >= 5,
        "too few kills landed while the job ran: {during} of 20 (the job takes {baseline:?})"
    );
}

#[test]
fn a_coordinator_killed_mid_job_leaves_the_workers_clean_and_ready() {
    let dir = tempfile::tempdir().unwrap();
    let mut workers = start_workers(dir.path(), 2);
    write_input(dir.path());
    write_script(dir.path(), "slow.sh", "#!/bin/sh\nsleep 2\ncat\n");
    let mut job = spawn_streaming(&workers, dir.path(), "./slow.sh");
    std::thread::sleep(Duration::from_millis(800));
    job.kill().unwrap();
    job.wait().unwrap();
    assert!(
        !dir.path().join("out").exists(),
        "a killed job committed output"
    );
    assert!(
        workers.scratch_empties(Duration::from_secs(10)),
        "the job's files stayed on a worker"
    );
    assert_eq!(workers.alive(), 2);
    // The workers take the next job.
    let mut args = strings(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        "in",
        "--output",
        "again",
    ]);
    args.extend(workers.args());
    ok(&sluice(&args, dir.path()), "a job after the killed one");
}

#[test]
fn a_shuffle_listener_refuses_peers_without_the_jobs_secret() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 2);
    write_input(dir.path());
    write_script(dir.path(), "slow.sh", "#!/bin/sh\nsleep 2\ncat\n");
    let mut args = vec!["streaming".to_string()];
    args.extend(workers.args());
    args.extend(strings(&[
        "-input",
        "in",
        "-output",
        "out",
        "-mapper",
        "./slow.sh",
        "-reducer",
        "cat",
    ]));
    let job = spawn_sluice(&args, dir.path());
    // While the job runs: garbage, a half handshake and a silent peer at a shuffle port.
    let deadline = Instant::now() + Duration::from_secs(10);
    let addr = loop {
        if let Some(addr) = workers.shuffle_addr(0) {
            break addr;
        }
        assert!(
            Instant::now() < deadline,
            "the worker did not log its shuffle address"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut silent = std::net::TcpStream::connect(&addr).unwrap();
    for junk in [
        &b"\x00\x00\x00\x10garbage garbage!"[..],
        b"SLCN\x01",
        b"\xff\xff\xff\xff",
    ] {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        let _ = stream.write_all(junk);
    }
    let output = job.wait_with_output().unwrap();
    ok(&output, "the job beside refused peers");
    let _ = silent.write_all(b"late");
    assert!(dir.path().join("out/_SUCCESS").exists());
}

/// The per-worker shuffle figures of a `--report` file.
fn shuffle_stats(report: &Path) -> Vec<serde_json::Value> {
    let text = fs::read_to_string(report).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["shuffle"].clone())
        .collect()
}

/// Panics unless the `--report` file says, for every worker, how much of its budget the job
/// reserved at its peak (something, within the budget) and its peak resident memory, and
/// gives the largest worker's peak as the job's.
fn assert_memory_reported(report: &Path, name: &str) {
    let json: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(report).unwrap()).unwrap();
    let workers = json["workers"].as_array().unwrap();
    let mut largest = 0;
    for w in workers {
        let budget = w["memory_budget"].as_u64().unwrap();
        let peak = w["peak_memory_reserved"].as_u64().unwrap();
        let rss = w["peak_rss_bytes"].as_u64().unwrap();
        assert!(peak > 0 && peak <= budget, "{name}: {w}");
        assert!(rss > 0, "{name}: {w}");
        largest = largest.max(peak);
    }
    assert_eq!(
        json["peak_memory_reserved"].as_u64(),
        Some(largest),
        "{name}: {json}"
    );
}

/// Writes `dir/in`: 24 files of 30,000 lines (`KEY<TAB>value ...`, 100,003 distinct 16-digit
/// hex keys), about 1.2 MB each.
fn write_middle_input(dir: &Path) {
    let input = dir.join("in");
    fs::create_dir_all(&input).unwrap();
    for f in 0..24 {
        let text: String = (0..30_000u64)
            .map(|i| format!("{:016x}\tvalue {i} of file {f}\n", (i * 7919 + f) % 100_003))
            .collect();
        fs::write(input.join(format!("f{f:02}.txt")), text).unwrap();
    }
}

#[test]
fn pushed_partitions_stay_in_memory_when_they_fit_and_spill_when_not() {
    let dir = tempfile::tempdir().unwrap();
    // 24 map tasks of about 1.2 MB of output each: small enough to stay in memory one by
    // one within a task's share of every budget below but "tight".
    write_middle_input(dir.path());
    let base = strings(&["run", "sort", "--quiet", "--input", "in", "--reducers", "4"]);
    let mut local = base.clone();
    local.extend(strings(&["--output", "local"]));
    ok(&sluice(&local, dir.path()), "sort on one machine");

    // "middle": each worker's partitions (about 15 MB) fit in its share for held runs
    // (16 MiB), but not beside the whole outputs of its map tasks, which it keeps for pulls
    // (about 22 MB in all): those copies, once pushed, must be what leaves memory.
    for (name, memory, fits) in [
        ("roomy", "256MiB", true),
        ("middle", "32MiB", true),
        ("tight", "8MiB", false),
    ] {
        let workers = Workers::start(
            Path::new(SLUICE),
            &dir.path().join(format!("workers-{name}")),
            2,
            memory,
            |_| {},
        );
        let mut args = base.clone();
        args.extend(strings(&["--output", name, "--report"]));
        args.push(format!("{name}.json"));
        args.extend(workers.args());
        ok(&sluice(&args, dir.path()), name);
        assert_same(&dir.path().join("local"), &dir.path().join(name), name);
        assert_memory_reported(&dir.path().join(format!("{name}.json")), name);
        let stats = shuffle_stats(&dir.path().join(format!("{name}.json")));
        let received: u64 = stats
            .iter()
            .map(|s| s["received_bytes"].as_u64().unwrap())
            .sum();
        let to_disk: u64 = stats
            .iter()
            .map(|s| s["received_to_disk_bytes"].as_u64().unwrap())
            .sum();
        assert!(
            received > 1 << 20,
            "{name}: the workers pushed little: {stats:?}"
        );
        let kept_to_disk: u64 = stats
            .iter()
            .map(|s| s["kept_to_disk_bytes"].as_u64().unwrap())
            .sum();
        match name {
            "roomy" => assert_eq!(kept_to_disk, 0, "{name}: {stats:?}"),
            "middle" => assert!(kept_to_disk > 0, "{name}: {stats:?}"),
            _ => {}
        }
        if fits {
            assert_eq!(to_disk, 0, "{name}: pushed data went to disk: {stats:?}");
        } else {
            assert!(
                to_disk > 0,
                "{name}: nothing spilled within 8 MiB: {stats:?}"
            );
        }
    }
}

/// A partition larger than the job's split threshold (`--reduce-split`, forwarded to the
/// workers) is reduced as key ranges on its owner's two threads: the part file is the one
/// machine's unsplit one, byte for byte, and the report counts the ranges. With `--reduce-split
/// off` the workers do not split it.
#[test]
fn a_large_partition_is_split_into_key_ranges_on_its_worker() {
    let dir = tempfile::tempdir().unwrap();
    let workers = Workers::start(Path::new(SLUICE), &dir.path().join("w"), 2, "1GiB", |_| {});
    let input = dir.path().join("big");
    fs::create_dir_all(&input).unwrap();
    // About 12 MB of `key\tvalue` lines, keys repeated across files.
    for f in 0..4u64 {
        let text: String = (0..60_000u64)
            .map(|i| {
                let k = (i * 7919 + f * 104_729) % 30_000;
                format!(
                    "key{k:07}\tfile {f} line {i} {}\n",
                    "v".repeat((k % 20) as usize)
                )
            })
            .collect();
        fs::write(input.join(format!("f{f}.txt")), text).unwrap();
    }
    let local = strings(&[
        "run",
        "sort",
        "--quiet",
        "-r",
        "1",
        "-i",
        "big",
        "-o",
        "local",
        "--reduce-split",
        "off",
    ]);
    ok(
        &sluice(&local, dir.path()),
        "the same on one machine, unsplit",
    );
    for (split, expected_ranges) in [("2MiB", 2), ("off", 0)] {
        let output = format!("cluster-{split}");
        let report = dir.path().join(format!("report-{split}.json"));
        let mut args = strings(&[
            "run",
            "sort",
            "--quiet",
            "-r",
            "1",
            "-i",
            "big",
            "-o",
            &output,
            "--reduce-split",
            split,
        ]);
        args.extend(["--report".to_string(), report.display().to_string()]);
        args.extend(workers.args());
        ok(&sluice(&args, dir.path()), "sort on workers");
        assert_same(&dir.path().join("local"), &dir.path().join(&output), "sort");
        let report: serde_json::Value =
            serde_json::from_slice(&fs::read(&report).unwrap()).unwrap();
        let ranges = report["counters"]["reduce_ranges"].as_u64().unwrap_or(0);
        assert_eq!(
            ranges, expected_ranges,
            "--reduce-split {split}, the owner has 2 threads: {report}"
        );
    }
}

/// Every worker's `kept for pulls moved to disk=` and `pulled=` figures (`1.11 MiB`) in a
/// streaming job's stderr (its per-worker lines).
fn kept_and_pulled(stderr: &str) -> (Vec<String>, Vec<String>) {
    let figure = |line: &str, name: &str| {
        let rest = line.split(name).nth(1)?;
        let mut words = rest.split(' ');
        Some(format!("{} {}", words.next()?, words.next()?))
    };
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("worker ")).collect();
    (
        lines
            .iter()
            .filter_map(|l| figure(l, "kept for pulls moved to disk="))
            .collect(),
        lines.iter().filter_map(|l| figure(l, " pulled=")).collect(),
    )
}

#[test]
fn a_worker_killed_after_kept_copies_moved_to_disk_is_made_good_from_those_copies() {
    let dir = tempfile::tempdir().unwrap();
    // As in the "middle" case above: with 32 MiB per worker, each worker's partitions fit
    // in memory beside only part of the map outputs it keeps for pulls, so kept copies move
    // to disk during the map phase.
    write_middle_input(dir.path());
    write_script(dir.path(), "slow-reduce.sh", "#!/bin/sh\nsleep 3\ncat\n");
    // `--cluster ...`, when given, comes before the streaming options, as users write it.
    let job = |cluster: &[String], out: &str, reducer: &str| {
        let mut args = vec!["streaming".to_string()];
        args.extend_from_slice(cluster);
        args.extend(strings(&[
            "-input",
            "in",
            "-output",
            out,
            "-mapper",
            "cat",
            "-reducer",
            reducer,
            "-numReduceTasks",
            "6",
        ]));
        args
    };
    ok(
        &sluice(&job(&[], "local", "cat"), dir.path()),
        "the job on one machine",
    );

    // Whether kept copies moved to disk before the kill depends on timing (a worker short of
    // memory moves them only when no other thread holds its outputs just then): the job is
    // run again, on fresh workers, until they did, at most three times.
    for attempt in 1..=3 {
        let out = format!("killed-{attempt}");
        let mut workers = Workers::start(
            Path::new(SLUICE),
            &dir.path().join(format!("w{attempt}")),
            3,
            "32MiB",
            |_| {},
        );
        let args = job(&workers.args(), &out, "./slow-reduce.sh");
        let mut child = spawn_sluice(&args, dir.path());
        // Killed once its reduce tasks have begun (they sleep 3 s first): the outputs of its
        // map tasks are made again, and its partitions are merged on the others from their
        // kept copies, pulled from their disks.
        let deadline = Instant::now() + Duration::from_secs(120);
        while !workers.logged(1, "stage 1 sealed") {
            if child.try_wait().unwrap().is_some() {
                let output = child.wait_with_output().unwrap();
                panic!(
                    "the job ended before its reduce phase: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
            }
            assert!(Instant::now() < deadline, "the reduce phase did not begin");
            std::thread::sleep(Duration::from_millis(2));
        }
        workers.kill(1);
        let started = Instant::now();
        let output = child.wait_with_output().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the job hung after the kill"
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{stderr}");
        assert!(stderr.contains("lost"), "the loss was not seen: {stderr}");
        assert_same_per_key(
            &dir.path().join("local"),
            &dir.path().join(&out),
            "a worker killed after kept copies moved to disk",
        );
        let (kept, pulled) = kept_and_pulled(&stderr);
        // One line per worker, the lost one's too (with what it had reported: nothing).
        assert_eq!(kept.len(), 3, "three workers' lines: {stderr}");
        assert!(
            pulled.iter().any(|p| p != "0 B"),
            "the lost worker's partitions were not pulled: {pulled:?}"
        );
        if kept.iter().any(|k| k != "0 B") {
            assert_no_staging(dir.path());
            return;
        }
        eprintln!("attempt {attempt}: no kept copy moved to disk before the kill: {kept:?}");
    }
    panic!("in three attempts no kept copy moved to disk before the kill");
}

/// A worker given several spill directories, one per local disk (`--spill-dirs`, as YARN's
/// `LOCAL_DIRS`), makes each job's spill directory in every one of them (its spill files go
/// to them in turn) and leaves nothing there when the job ends; the output is as on one
/// machine.
#[test]
fn a_worker_spreads_its_spills_over_the_directories_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let disks = [dir.path().join("disk1"), dir.path().join("disk2")];
    let mut workers = Workers::start(Path::new(SLUICE), dir.path(), 0, "256MiB", |_| {});
    let spill_dirs = format!("{},{}", disks[0].display(), disks[1].display());
    workers.add(&dir.path().join("scratch"), |c| {
        c.args(["--spill-dirs", &spill_dirs]);
    });
    write_input(dir.path());
    // A second per map task: the job lasts long enough to be looked at.
    write_script(dir.path(), "slow.sh", "#!/bin/sh\nsleep 1\nexec cat\n");
    let job = |output: &str, cluster: Vec<String>| {
        let mut args = strings(&["streaming"]);
        args.extend(cluster);
        args.extend(strings(&[
            "-files",
            "slow.sh",
            "-input",
            "in",
            "-output",
            output,
            "-mapper",
            "./slow.sh",
            "-reducer",
            "cat",
        ]));
        args
    };
    ok(
        &sluice(&job("expected", Vec::new()), dir.path()),
        "the job on one machine",
    );
    // The job's own spill directories are the submitting machine's: not used, and said so.
    let unused = dir.path().join("unused");
    let mut on_workers = workers.args();
    on_workers.extend([
        "-D".to_string(),
        format!("mapreduce.cluster.local.dir={}", unused.display()),
    ]);
    let child = spawn_sluice(&job("spread", on_workers), dir.path());
    let spilling = |disk: &Path| !sluice_testkit::spill_dirs(disk).is_empty();
    let both = wait_until(Duration::from_secs(60), || {
        spilling(&disks[0]) && spilling(&disks[1])
    });
    let out = child.wait_with_output().unwrap();
    assert!(
        both,
        "no spill directory on both disks: {:?}",
        disks.map(|d| entries(&d))
    );
    ok(&out, "the job on the worker");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mapreduce.cluster.local.dir is not used on a cluster"),
        "{stderr}"
    );
    assert!(!unused.exists());
    assert_same_per_key(
        &dir.path().join("expected"),
        &dir.path().join("spread"),
        "spills spread",
    );
    for disk in &disks {
        assert!(
            wait_until(Duration::from_secs(5), || entries(disk).is_empty()),
            "the job left {:?} in {}",
            entries(disk),
            disk.display()
        );
    }
}

/// Two workers on one log directory would remove each other's logs (a job that succeeds on a
/// worker removes its attempts' logs there): the second is refused, saying why.
#[test]
fn a_log_directory_is_one_workers() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let mut workers = Workers::start(Path::new(SLUICE), dir.path(), 0, "64MiB", |_| {});
    workers.add(&dir.path().join("scratch-0"), |c| {
        c.arg("--log-dir").arg(&logs);
    });
    let second = Command::new(SLUICE)
        .args(["worker", "--listen", "127.0.0.1:0", "--secret-file"])
        .arg(workers.secret())
        .arg("--scratch")
        .arg(dir.path().join("scratch-1"))
        .arg("--log-dir")
        .arg(&logs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = second.id();
    let ended = wait_until(Duration::from_secs(10), || {
        !Path::new(&format!("/proc/{pid}/cmdline")).exists()
            || fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z "))
    });
    if !ended {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
    let second = second.wait_with_output().unwrap();
    assert!(ended, "a second worker runs on the same log directory");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("another worker uses it"),
        "the reason is not given: {stderr}"
    );
    // Once the first is gone, the directory is free.
    workers.kill(0);
    workers.add(&dir.path().join("scratch-1"), |c| {
        c.arg("--log-dir").arg(&logs);
    });
}

/// A worker that stops answering while its tasks run (stopped with `SIGSTOP`, as a hung
/// process or a host gone without a word looks from outside: its connections stay open)
/// is taken for lost once it has been silent for the worker timeout, and the job finishes on
/// the others with the right output, instead of waiting for it forever. Woken again, the
/// worker finds its connection to the coordinator shut and ends the job.
#[test]
fn a_worker_that_stops_answering_is_taken_for_lost() {
    stop_one_of(3);
}

/// As above with eight workers, whose progress reports keep the coordinator's queue from
/// ever falling quiet for long: the silent one is noticed all the same.
#[test]
fn a_worker_that_stops_answering_among_many_is_taken_for_lost() {
    stop_one_of(8);
}

/// Runs a streaming job on `count` workers, stops worker 1 with `SIGSTOP` a second in, and
/// checks that the job finishes without it, with the right output.
fn stop_one_of(count: usize) {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), count);
    write_input(dir.path());
    write_script(dir.path(), "slow-map.sh", "#!/bin/sh\nsleep 2\ncat\n");
    // As many partitions as workers and more, so that the stopped one owns some.
    let reducers = 2 * count;
    let mut local = strings(&["streaming", "-input", "in", "-mapper", "cat"]);
    local.extend(strings(&["-reducer", "cat", "-output", "expected"]));
    local.extend(["-numReduceTasks".to_string(), reducers.to_string()]);
    ok(&sluice(&local, dir.path()), "the job on one machine");

    let args = streaming_on(&workers, "./slow-map.sh", "cat", reducers, "out");
    let job = Command::new(SLUICE)
        .args(&args)
        .current_dir(dir.path())
        .env("SLUICE_WORKER_TIMEOUT", "3")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let stopped = workers.pid(1).to_string();
    assert!(Command::new("kill")
        .args(["-STOP", &stopped])
        .status()
        .unwrap()
        .success());
    // The timeout, and at most one stalled transfer's limit (60 s) besides; a job still
    // running after that is killed and fails the test.
    let pid = job.id().to_string();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(job.wait_with_output()));
    let waited = finished.recv_timeout(Duration::from_secs(100));
    let _ = Command::new("kill").args(["-CONT", &stopped]).status();
    let Ok(out) = waited else {
        let _ = Command::new("kill").args(["-KILL", &pid]).status();
        panic!("the job still ran 100 s after a worker stopped answering");
    };
    let out = out.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("nothing heard from it for 3 s"), "{stderr}");
    assert_same_per_key(
        &dir.path().join("expected"),
        &dir.path().join("out"),
        "a worker stopped",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while !workers.logged(1, "ended") {
        assert!(
            Instant::now() < deadline,
            "the woken worker did not end the job: {:?}",
            workers.log(1)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_no_staging(dir.path());
}

/// A mapper on a worker that succeeds while a process it left in the background still holds
/// its output: the task keeps what that process writes, and the worker's note of why the
/// task waits reaches the job's console, naming the worker.
#[test]
fn a_note_of_a_task_on_a_worker_reaches_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let workers = start_workers(dir.path(), 1);
    let input = dir.path().join("in");
    fs::create_dir_all(&input).unwrap();
    fs::write(input.join("a.txt"), "one\n").unwrap();
    write_script(
        dir.path(),
        "late.sh",
        "#!/bin/sh\ncat >/dev/null\n(sleep 11; echo late) &\n",
    );
    let args = streaming_on(&workers, "./late.sh", "cat", 1, "out");
    let out = sluice(&args, dir.path());
    ok(&out, "the job on the worker");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let note = stderr
        .lines()
        .find(|l| l.contains("still holds its output open"))
        .unwrap_or_else(|| panic!("no note of the wait: {stderr}"));
    assert!(note.contains("WARN sluice.Job: worker "), "{note}");
    assert_eq!(
        fs::read_to_string(dir.path().join("out/part-00000")).unwrap(),
        "late\t\n"
    );
}
