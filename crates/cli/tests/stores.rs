//! `sluice` against real HDFS and S3 servers started by the test harness (`sluice-testkit`): an
//! in-JVM MiniDFSCluster and moto's S3 server. One server of each is shared by the tests of
//! this binary (started by the first test that needs it; both stop when the binary exits).
//!
//! The reference for every job is the same job on local files: outputs must be byte-identical
//! whichever stores the input and output are on. Hadoop's own client (FsShell) writes some of
//! the inputs and reads back what sluice wrote. A killed job must leave its output absent (and
//! nothing open on the store) or complete with `_SUCCESS`. Each failure a user can meet ends
//! with a clear message, exit status 1, and nothing committed.
//!
//! Without the `test-stores` feature every test here is ignored, with the reason.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use sluice_testkit::{MiniDfs, MiniDfsOptions, S3Server};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");
/// The bucket every test writes into (keys apart by test).
const BUCKET: &str = "jobs";

fn dfs() -> &'static MiniDfs {
    static DFS: OnceLock<MiniDfs> = OnceLock::new();
    DFS.get_or_init(|| {
        MiniDfs::start(MiniDfsOptions::default()).unwrap_or_else(|e| panic!("MiniDFS: {e}"))
    })
}

fn s3() -> &'static S3Server {
    static S3: OnceLock<S3Server> = OnceLock::new();
    S3.get_or_init(|| {
        let server = S3Server::start().unwrap_or_else(|e| panic!("S3 server: {e}"));
        server.create_bucket(BUCKET);
        server
    })
}

/// `hdfs://127.0.0.1:PORT/path` on the shared cluster.
fn hdfs(path: &str) -> String {
    format!("{}{path}", dfs().uri())
}

/// `s3://jobs/key` in the shared bucket.
fn s3_url(key: &str) -> String {
    format!("s3://{BUCKET}/{key}")
}

/// `sluice ARGS` with the S3 server's endpoint and credentials in the environment, as a user
/// of an S3-compatible store sets them, and a home directory without AWS files.
fn sluice(args: &[&str]) -> Command {
    let server = s3();
    let mut cmd = Command::new(SLUICE);
    cmd.args(args)
        .env("AWS_ACCESS_KEY_ID", server.access_key())
        .env("AWS_SECRET_ACCESS_KEY", server.secret_key())
        .env("AWS_REGION", server.region())
        .env("AWS_ENDPOINT_URL", server.endpoint())
        .env("HOME", scratch_home())
        .env("HADOOP_CONF_DIR", hadoop_conf_dir())
        .stdin(Stdio::null());
    cmd
}

/// A Hadoop configuration directory, as users of a cluster have one: its `hdfs-site.xml` gives
/// the files sluice writes 128 MiB blocks (the test cluster's default is 1 MiB, to cut the
/// inputs into many splits cheaply). One block per output file keeps these tests clear of a
/// race `hdfs-native` loses when a file needs a new block before the name node has heard of
/// the previous one (`NotReplicatedYetException`, which Hadoop's client retries).
fn hadoop_conf_dir() -> &'static Path {
    static CONF: OnceLock<tempfile::TempDir> = OnceLock::new();
    CONF.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary directory");
        fs::write(
            dir.path().join("hdfs-site.xml"),
            "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>dfs.blocksize</name>\
             <value>128m</value></property>\n</configuration>\n",
        )
        .expect("hdfs-site.xml written");
        dir
    })
    .path()
}

fn scratch_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| tempfile::tempdir().expect("a temporary home"))
        .path()
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("sluice runs")
}

#[track_caller]
fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what} failed ({:?})\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The visible files of a local output directory, by name.
fn local_files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .expect("a local output")
        .map(|e| e.expect("an entry"))
        .filter(|e| !e.file_name().to_string_lossy().starts_with(['_', '.']))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, fs::read(e.path()).expect("a part file"))
        })
        .collect()
}

/// The files of an HDFS directory as Hadoop's own client reads them (`hadoop fs -get`), and
/// whether `_SUCCESS` is there.
fn hdfs_files(path: &str) -> (BTreeMap<String, Vec<u8>>, bool) {
    let into = tempfile::tempdir().expect("a temporary directory");
    let local = into.path().join("got");
    let got = dfs().fs(&["-get", path, local.to_str().expect("UTF-8")]);
    assert!(
        got.status.success(),
        "hadoop fs -get {path}: {}",
        String::from_utf8_lossy(&got.stderr)
    );
    let success = local.join("_SUCCESS").exists();
    (local_files(&local), success)
}

/// The objects under `prefix/` of the bucket, by name, and whether `_SUCCESS` is there.
fn s3_files(prefix: &str) -> (BTreeMap<String, Vec<u8>>, bool) {
    let server = s3();
    let mut files = BTreeMap::new();
    let mut success = false;
    for (key, _) in server.list_objects(BUCKET, &format!("{prefix}/")) {
        let name = key.rsplit('/').next().unwrap_or_default().to_string();
        if name == "_SUCCESS" {
            success = true;
        } else if !name.starts_with(['_', '.']) {
            files.insert(name, server.get_object(BUCKET, &key));
        }
    }
    (files, success)
}

/// A deterministic corpus of text files (one gzip-compressed), about 3 MiB: several HDFS
/// blocks of the test cluster's 1 MiB.
fn corpus() -> &'static Path {
    static CORPUS: OnceLock<tempfile::TempDir> = OnceLock::new();
    CORPUS
        .get_or_init(|| {
            // A visible name: the directory itself is the jobs' input, and Hadoop refuses an
            // input named `.tmp…` as hidden.
            let dir = tempfile::Builder::new()
                .prefix("corpus-")
                .tempdir()
                .expect("a temporary directory");
            let words = [
                "alpha", "beta", "gamma", "delta", "eps", "zeta", "a", "bb", "ccc",
            ];
            let mut state = 7u64;
            let mut next = || {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                usize::try_from(state >> 33).expect("fits")
            };
            for (name, lines) in [("one.txt", 40_000), ("two.txt", 25_000), ("three.txt", 5)] {
                let mut text = String::new();
                for _ in 0..lines {
                    let n = 1 + next() % 9;
                    let line: Vec<&str> = (0..n).map(|_| words[next() % words.len()]).collect();
                    text.push_str(&line.join(" "));
                    text.push('\n');
                }
                fs::write(dir.path().join(name), text).expect("corpus written");
            }
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(b"gamma gamma zeta\nzeta\n").expect("gzip");
            fs::write(dir.path().join("four.txt.gz"), gz.finish().expect("gzip"))
                .expect("corpus written");
            // Hidden files are not input.
            fs::write(dir.path().join("_SUCCESS"), b"").expect("corpus written");
            fs::write(dir.path().join(".one.txt.crc"), b"junk").expect("corpus written");
            dir
        })
        .path()
}

/// The corpus on HDFS (written by Hadoop's client) and in S3, once.
fn remote_corpus() -> (String, String) {
    static PUT: OnceLock<()> = OnceLock::new();
    PUT.get_or_init(|| {
        let put = dfs().fs(&["-put", corpus().to_str().expect("UTF-8"), "/corpus"]);
        assert!(
            put.status.success(),
            "{}",
            String::from_utf8_lossy(&put.stderr)
        );
        for entry in fs::read_dir(corpus()).expect("corpus") {
            let entry = entry.expect("an entry");
            let name = entry.file_name().to_string_lossy().into_owned();
            let data = fs::read(entry.path()).expect("a corpus file");
            s3().put_object(BUCKET, &format!("corpus/{name}"), &data);
        }
    });
    (hdfs("/corpus"), s3_url("corpus"))
}

/// Two workers with scratch directories in `scratch` and the stores' settings in their
/// environment, as a site's workers have them.
fn workers_with_the_stores(scratch: &Path) -> sluice_testkit::Workers {
    sluice_testkit::Workers::start(Path::new(SLUICE), scratch, 2, "256MiB", |cmd| {
        let configured = sluice(&[]);
        for (key, value) in configured.get_envs() {
            match value {
                Some(value) => cmd.env(key, value),
                None => cmd.env_remove(key),
            };
        }
    })
}

/// Runs `job` (a `sluice run` job with its extra arguments) on local files and returns the
/// output's files: the reference.
fn local_reference(name: &str, args: &[&str], input: &Path) -> BTreeMap<String, Vec<u8>> {
    let out = tempfile::tempdir().expect("a temporary directory");
    let output = out.path().join("out");
    let mut full = vec!["run", name];
    full.extend_from_slice(args);
    let input = input.to_str().expect("UTF-8");
    let output_text = output.to_str().expect("UTF-8");
    full.extend(["-i", input, "-o", output_text, "-q"]);
    let done = run(&mut sluice(&full));
    assert_ok(&done, &format!("local {name}"));
    local_files(&output)
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn every_job_reads_and_writes_hdfs_and_s3_as_it_does_local_files() {
    let (hdfs_in, s3_in) = remote_corpus();
    let jobs: [(&str, &[&str]); 3] = [
        ("wordcount", &["-r", "3"]),
        ("grep", &["-e", "[a-z]*ta"]),
        ("sort", &["-r", "2"]),
    ];
    for (job, args) in jobs {
        let reference = local_reference(job, args, corpus());
        assert!(!reference.is_empty());
        // Input on one store, output on the other, both ways.
        for (input, out_hdfs) in [(&hdfs_in, false), (&s3_in, true)] {
            let tag = format!(
                "{job}-{}",
                if out_hdfs { "s3-to-hdfs" } else { "hdfs-to-s3" }
            );
            let output = if out_hdfs {
                hdfs(&format!("/out/{tag}"))
            } else {
                s3_url(&format!("out/{tag}"))
            };
            let mut full = vec!["run", job];
            full.extend_from_slice(args);
            full.extend(["-i", input.as_str(), "-o", output.as_str(), "-q"]);
            let done = run(&mut sluice(&full));
            assert_ok(&done, &tag);
            let (files, success) = if out_hdfs {
                hdfs_files(&format!("/out/{tag}"))
            } else {
                s3_files(&format!("out/{tag}"))
            };
            assert!(success, "{tag}: no _SUCCESS");
            assert_eq!(files, reference, "{tag}: output differs from the local run");
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn terasort_on_hdfs_matches_the_local_sort() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let rows = dir.path().join("rows");
    let gen = run(&mut sluice(&[
        "run",
        "teragen",
        "--rows",
        "30000",
        "-o",
        rows.to_str().expect("UTF-8"),
        "-q",
    ]));
    assert_ok(&gen, "teragen");
    let put = dfs().fs(&["-put", rows.to_str().expect("UTF-8"), "/tera-in"]);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let reference = local_reference("terasort", &["-r", "3"], &rows);
    let output = hdfs("/tera-out");
    let done = run(&mut sluice(&[
        "run",
        "terasort",
        "-r",
        "3",
        "-i",
        &hdfs("/tera-in"),
        "-o",
        &output,
        "-q",
    ]));
    assert_ok(&done, "terasort on HDFS");
    let (files, success) = hdfs_files("/tera-out");
    assert!(success);
    assert_eq!(files, reference);
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn a_streaming_job_reads_hdfs_and_writes_s3_as_it_does_local_files() {
    let (hdfs_in, s3_in) = remote_corpus();
    let streaming = |input: &str, output: &str| {
        let done = run(&mut sluice(&[
            "streaming",
            "-D",
            "mapreduce.job.reduces=2",
            "-input",
            input,
            "-output",
            output,
            "-mapper",
            "tr ' ' '\\n'",
            "-reducer",
            "uniq -c",
        ]));
        assert_ok(&done, &format!("streaming {input} -> {output}"));
    };
    let local = tempfile::tempdir().expect("a temporary directory");
    let local_out = local.path().join("out");
    streaming(
        corpus().to_str().expect("UTF-8"),
        local_out.to_str().expect("UTF-8"),
    );
    let reference = local_files(&local_out);
    streaming(&hdfs_in, &s3_url("streamed"));
    let (files, success) = s3_files("streamed");
    assert!(success);
    assert_eq!(files, reference);
    // A plain path is on the default file system, as in Hadoop.
    let done = run(&mut sluice(&[
        "streaming",
        "-fs",
        dfs().uri(),
        "-D",
        "mapreduce.job.reduces=2",
        "-input",
        &s3_in,
        "-output",
        "/streamed-default-fs",
        "-mapper",
        "tr ' ' '\\n'",
        "-reducer",
        "uniq -c",
    ]));
    assert_ok(&done, "streaming with -fs");
    let (files, success) = hdfs_files("/streamed-default-fs");
    assert!(success);
    assert_eq!(files, reference);
    // The default file system named through a variable, as a site file may: substituted
    // where the stores are set up and where the job reads its settings.
    let port = dfs()
        .uri()
        .rsplit(':')
        .next()
        .expect("the name node's port");
    let done = run(&mut sluice(&[
        "streaming",
        "-D",
        &format!("nn.port={port}"),
        "-D",
        "fs.defaultFS=hdfs://127.0.0.1:${nn.port}",
        "-D",
        "mapreduce.job.reduces=2",
        "-input",
        &s3_in,
        "-output",
        "/streamed-variables",
        "-mapper",
        "tr ' ' '\\n'",
        "-reducer",
        "uniq -c",
    ]));
    assert_ok(
        &done,
        "streaming with fs.defaultFS=hdfs://127.0.0.1:${nn.port}",
    );
    let (files, success) = hdfs_files("/streamed-variables");
    assert!(success);
    assert_eq!(files, reference);
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn hadoops_client_reads_what_sluice_wrote_and_the_listing_hides_nothing_partial() {
    let (hdfs_in, _) = remote_corpus();
    let done = run(&mut sluice(&[
        "run",
        "wordcount",
        "-r",
        "2",
        "-i",
        &hdfs_in,
        "-o",
        &hdfs("/interop"),
        "-q",
    ]));
    assert_ok(&done, "wordcount to HDFS");
    // FsShell lists exactly the part files and _SUCCESS: no staging directory, no attempt
    // files, and the checksums the client verifies on -cat are the data nodes' own.
    let ls = dfs().fs(&["-ls", "-C", "/interop"]);
    assert!(ls.status.success());
    let names: Vec<String> = String::from_utf8_lossy(&ls.stdout)
        .lines()
        .map(|l| l.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["_SUCCESS", "part-r-00000", "part-r-00001"]);
    let cat = dfs().fs(&["-cat", "/interop/part-r-*"]);
    assert!(cat.status.success());
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for line in String::from_utf8_lossy(&cat.stdout).lines() {
        let (word, count) = line.split_once('\t').expect("word<TAB>count");
        counts.insert(word.to_string(), count.parse().expect("a count"));
    }
    // Independent reference: the words of the corpus, counted here.
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for entry in fs::read_dir(corpus()).expect("corpus") {
        let path = entry.expect("entry").path();
        let name = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if name.starts_with(['_', '.']) {
            continue;
        }
        let bytes = fs::read(&path).expect("corpus file");
        let text = if name.ends_with(".gz") {
            let mut out = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut out)
                .expect("gunzip");
            out
        } else {
            String::from_utf8(bytes).expect("UTF-8")
        };
        for word in text.split([' ', '\n']).filter(|w| !w.is_empty()) {
            *expected.entry(word.to_string()).or_default() += 1;
        }
    }
    assert_eq!(counts, expected);
}

/// The state of a job's output after it was killed: absent, with nothing left behind, or
/// complete with `_SUCCESS` and the reference's files.
fn check_killed_output(out_hdfs: bool, name: &str, reference: &BTreeMap<String, Vec<u8>>) {
    // The watcher undoes what the job left; give it time.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let leftovers = if out_hdfs {
            let ls = dfs().fs(&["-ls", "-C", "/killed"]);
            String::from_utf8_lossy(&ls.stdout)
                .lines()
                .filter(|l| l.contains(&format!(".{name}.sluice-tmp")))
                .count()
        } else {
            s3().list_multipart_uploads(BUCKET)
                .iter()
                .filter(|(key, _)| key.starts_with(&format!("killed/{name}/")))
                .count()
        };
        let (files, success) = if out_hdfs {
            let test = dfs().fs(&["-test", "-d", &format!("/killed/{name}")]);
            if test.status.success() {
                hdfs_files(&format!("/killed/{name}"))
            } else {
                (BTreeMap::new(), false)
            }
        } else {
            s3_files(&format!("killed/{name}"))
        };
        let absent = files.is_empty() && !success && leftovers == 0;
        let complete = success && files == *reference;
        if absent || complete {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: neither absent nor complete: {} file(s), _SUCCESS {success}, {leftovers} \
             staging dir(s)/upload(s) left",
            files.len()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn a_killed_job_leaves_its_hdfs_output_absent_or_complete() {
    killed_jobs_leave_their_output_absent_or_complete(true);
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn a_killed_job_leaves_its_s3_output_absent_or_complete() {
    killed_jobs_leave_their_output_absent_or_complete(false);
}

/// Kills `sluice run sort` writing to HDFS (`out_hdfs`) or S3 at five moments of its run; after
/// each, the output is absent with nothing left behind, or complete.
fn killed_jobs_leave_their_output_absent_or_complete(out_hdfs: bool) {
    // An input that takes a while to sort and write: about 24 MiB.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let input = dir.path().join("big.txt");
    {
        let one = fs::read(corpus().join("one.txt")).expect("corpus");
        let mut file = fs::File::create(&input).expect("input");
        for _ in 0..12 {
            file.write_all(&one).expect("input");
        }
    }
    let input = input.to_str().expect("UTF-8").to_string();
    let reference = local_reference("sort", &["-r", "3", "-m", "16MiB"], Path::new(&input));
    {
        let output_of = |name: &str| {
            if out_hdfs {
                hdfs(&format!("/killed/{name}"))
            } else {
                s3_url(&format!("killed/{name}"))
            }
        };
        // How long a whole run takes, to spread the kills over it.
        let started = Instant::now();
        let whole = run(&mut sluice(&[
            "run",
            "sort",
            "-r",
            "3",
            "-m",
            "16MiB",
            "-i",
            &input,
            "-o",
            &output_of("whole"),
            "-q",
        ]));
        assert_ok(&whole, "an uninterrupted run");
        let duration = started.elapsed();
        for (i, fraction) in [0.05, 0.3, 0.6, 0.85, 0.97].into_iter().enumerate() {
            let name = format!("k{i}");
            let mut child = sluice(&[
                "run",
                "sort",
                "-r",
                "3",
                "-m",
                "16MiB",
                "-i",
                &input,
                "-o",
                &output_of(&name),
                "-q",
            ])
            .stderr(Stdio::null())
            .spawn()
            .expect("sluice starts");
            std::thread::sleep(duration.mul_f64(fraction));
            let _ = child.kill();
            let _ = child.wait();
            check_killed_output(out_hdfs, &name, &reference);
        }
    }
}

/// Runs `sluice ARGS` expecting a failure: exit status 1 within `limit`, and a message holding
/// every one of `says`.
#[track_caller]
fn assert_fails(cmd: &mut Command, limit: Duration, says: &[&str]) {
    let started = Instant::now();
    let out = run(cmd);
    let took = started.elapsed();
    let text = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "expected exit 1:\n{text}");
    assert!(took < limit, "took {took:?} (limit {limit:?}):\n{text}");
    for s in says {
        assert!(text.contains(s), "the message should say {s:?}:\n{text}");
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn failures_are_clear_bounded_and_leave_nothing() {
    let (hdfs_in, s3_in) = remote_corpus();
    let local_in = corpus().to_str().expect("UTF-8").to_string();

    // A name node that refuses connections: the URL and the cause, at once.
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("an address").port()
    };
    let refused = format!("hdfs://127.0.0.1:{closed}/in");
    assert_fails(
        &mut sluice(&[
            "run",
            "wordcount",
            "-i",
            &refused,
            "-o",
            "/nonexistent-out",
            "-q",
        ]),
        Duration::from_secs(10),
        &[&format!("127.0.0.1:{closed}"), "refused"],
    );

    // A name node that accepts but never answers: bounded by the configured timeout.
    let silent = TcpListener::bind("127.0.0.1:0").expect("a port");
    let silent_url = format!("hdfs://{}/in", silent.local_addr().expect("an address"));
    assert_fails(
        &mut sluice(&[
            "run",
            "wordcount",
            "-D",
            "sluice.store.timeout=2",
            "-i",
            &silent_url,
            "-o",
            "/nonexistent-out",
            "-q",
        ]),
        Duration::from_secs(20),
        &["no answer within 2 s", &silent_url],
    );
    drop(silent);

    // Permission denied: another user may not write into the superuser's directory.
    let mkdir = dfs().fs(&["-mkdir", "-p", "/protected"]);
    assert!(mkdir.status.success());
    let chmod = dfs().fs(&["-chmod", "755", "/protected"]);
    assert!(chmod.status.success());
    let journals = tempfile::tempdir().expect("a temporary directory");
    assert_fails(
        sluice(&[
            "run",
            "wordcount",
            "-i",
            &local_in,
            "-o",
            &hdfs("/protected/out"),
            "-q",
        ])
        .env("HADOOP_USER_NAME", "mallory")
        .env("TMPDIR", journals.path()),
        Duration::from_secs(60),
        &["AccessControlException", "/protected"],
    );
    let ls = dfs().fs(&["-ls", "-C", "/protected"]);
    assert!(String::from_utf8_lossy(&ls.stdout).trim().is_empty());
    // The staging directory was never made: the job's journal says there is nothing to
    // undo, and its watcher removes it.
    let left = || {
        fs::read_dir(journals.path())
            .expect("the temporary directory")
            .map(|e| e.expect("an entry").file_name())
            .filter(|n| n.to_string_lossy().starts_with("sluice-journal-"))
            .count()
    };
    assert!(
        sluice_testkit::wait_until(Duration::from_secs(10), || left() == 0),
        "the job's cleanup journal was left behind"
    );

    // A missing input, on either store.
    for missing in [hdfs("/no/such/input"), s3_url("no/such/input")] {
        assert_fails(
            &mut sluice(&[
                "run",
                "wordcount",
                "-i",
                &missing,
                "-o",
                &hdfs("/never"),
                "-q",
            ]),
            Duration::from_secs(60),
            &["input path does not exist", &missing],
        );
    }

    // No credentials: the variables to set are named.
    assert_fails(
        sluice(&[
            "run",
            "wordcount",
            "-i",
            &s3_in,
            "-o",
            &hdfs("/never"),
            "-q",
        ])
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY"),
        Duration::from_secs(30),
        &["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"],
    );

    // A bucket that does not exist.
    assert_fails(
        &mut sluice(&[
            "run",
            "wordcount",
            "-i",
            &hdfs_in,
            "-o",
            "s3://no-such-bucket/out",
            "-q",
        ]),
        Duration::from_secs(60),
        &["no-such-bucket", "does not exist"],
    );

    // A store that fills up: a space quota on the output's parent directory.
    let quota_dir = "/quota";
    assert!(dfs().fs(&["-mkdir", "-p", quota_dir]).status.success());
    let admin = dfs_admin(&["-setSpaceQuota", "1m", quota_dir]);
    assert!(
        admin.status.success(),
        "{}",
        String::from_utf8_lossy(&admin.stderr)
    );
    assert_fails(
        &mut sluice(&[
            "run",
            "sort",
            "-i",
            &local_in,
            "-o",
            &hdfs("/quota/out"),
            "-q",
        ]),
        Duration::from_secs(120),
        &["quota", "/quota"],
    );
    let ls = dfs().fs(&["-ls", "-C", quota_dir]);
    assert!(
        String::from_utf8_lossy(&ls.stdout).trim().is_empty(),
        "the failed job left: {}",
        String::from_utf8_lossy(&ls.stdout)
    );

    // Nothing of the failed jobs is visible. (Uploads under `killed/` are the kill test's,
    // running beside this one in the shared bucket: it checks its own.)
    let never = dfs().fs(&["-test", "-e", "/never"]);
    assert!(!never.status.success());
    let open: Vec<(String, String)> = s3()
        .list_multipart_uploads(BUCKET)
        .into_iter()
        .filter(|(key, _)| !key.starts_with("killed/"))
        .collect();
    assert!(open.is_empty(), "uploads left open: {open:?}");
}

/// Runs Hadoop's `hdfs dfsadmin ARGS` against the shared cluster.
fn dfs_admin(args: &[&str]) -> Output {
    let lib: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "..",
        "..",
        "target",
        "stores",
        "lib",
    ]
    .iter()
    .collect();
    Command::new("java")
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg("org.apache.hadoop.hdfs.tools.DFSAdmin")
        .arg("-fs")
        .arg(dfs().uri())
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("java runs DFSAdmin")
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn spills_stay_local_and_splits_follow_hdfs_blocks() {
    let (hdfs_in, _) = remote_corpus();
    let spill = tempfile::tempdir().expect("a temporary directory");
    let report = spill.path().join("report.json");
    let done = run(&mut sluice(&[
        "run",
        "sort",
        "-m",
        "4MiB",
        "--spill-dir",
        spill.path().to_str().expect("UTF-8"),
        "--report",
        report.to_str().expect("UTF-8"),
        "-i",
        &hdfs_in,
        "-o",
        &hdfs("/spilled"),
        "-q",
    ]));
    assert_ok(&done, "a spilling sort on HDFS");
    let json: serde_json::Value =
        serde_json::from_slice(&fs::read(&report).expect("the report")).expect("JSON");
    // one.txt (about 2 MiB) and two.txt (about 1.3 MiB) are cut at the cluster's 1 MiB
    // blocks; three.txt and four.txt.gz are one split each.
    let sizes: Vec<u64> = ["one.txt", "two.txt"]
        .iter()
        .map(|n| fs::metadata(corpus().join(n)).expect("corpus").len())
        .collect();
    let block = 1u64 << 20;
    let expected_splits: u64 = sizes
        .iter()
        .map(|&len| {
            let mut n = 1;
            let mut rest = len;
            while u128::from(rest) * 10 > u128::from(block) * 11 {
                n += 1;
                rest -= block;
            }
            n
        })
        .sum::<u64>()
        + 2;
    assert_eq!(
        json["splits"].as_u64(),
        Some(expected_splits),
        "report: {json}"
    );
    assert!(
        json["counters"]["spilled_records"].as_u64().unwrap_or(0) > 0,
        "the sort should have spilled: {json}"
    );
    // The scratch directory was local, and is gone.
    assert_eq!(fs::read_dir(spill.path()).expect("spill dir").count(), 1);
}

/// Runs Hadoop 3.4.2's example `program` (the jars of the streaming tests, `make hadoop`) in
/// local mode with the shared cluster as its default file system.
fn hadoop_example(program: &str, args: &[&str]) {
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", ".."].iter().collect();
    let lib = root.join("target/hadoop/lib");
    assert!(
        lib.join(".complete").exists(),
        "the Hadoop jars are missing from {}: run `make hadoop`",
        lib.display()
    );
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!(
            "{}:{}/*",
            root.join("tests/hadoop").display(),
            lib.display()
        ))
        .arg("org.apache.hadoop.examples.ExampleDriver")
        .arg(program)
        .args(["-D", "mapreduce.framework.name=local"])
        .arg("-D")
        .arg(format!("fs.defaultFS={}", dfs().uri()))
        .arg("-D")
        .arg(format!("hadoop.tmp.dir={}", tmp.path().display()))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("java starts (Java 17 is required)");
    assert!(
        out.status.success(),
        "Hadoop {program} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The lines of every part file under an HDFS directory, as Hadoop's client reads them.
fn hdfs_part_lines(dir: &str) -> Vec<String> {
    let cat = dfs().fs(&["-cat", &format!("{dir}/part-*")]);
    assert!(
        cat.status.success(),
        "{}",
        String::from_utf8_lossy(&cat.stderr)
    );
    String::from_utf8_lossy(&cat.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn hadoop_and_sluice_read_each_others_output_on_hdfs() {
    let (hdfs_in, _) = remote_corpus();
    // The same job by both, on the same HDFS input: the same bytes (one reducer each; Hadoop's
    // WordCount reads the gzip file whole as sluice does).
    hadoop_example("wordcount", &["/corpus", "/interop-hadoop"]);
    let done = run(&mut sluice(&[
        "run",
        "wordcount",
        "-i",
        &hdfs_in,
        "-o",
        &hdfs("/interop-sluice"),
        "-q",
    ]));
    assert_ok(&done, "sluice wordcount");
    let by_hadoop = hdfs_part_lines("/interop-hadoop");
    assert!(!by_hadoop.is_empty());
    assert_eq!(hdfs_part_lines("/interop-sluice"), by_hadoop);
    // Hadoop reads what sluice wrote, sluice reads what Hadoop wrote: counting the words of
    // the other's output gives the same counts.
    hadoop_example(
        "wordcount",
        &["/interop-sluice", "/interop-hadoop-of-sluice"],
    );
    let done = run(&mut sluice(&[
        "run",
        "wordcount",
        "-i",
        &hdfs("/interop-hadoop"),
        "-o",
        &hdfs("/interop-sluice-of-hadoop"),
        "-q",
    ]));
    assert_ok(&done, "sluice wordcount of Hadoop's output");
    assert_eq!(
        hdfs_part_lines("/interop-hadoop-of-sluice"),
        hdfs_part_lines("/interop-sluice-of-hadoop")
    );
}

/// Runs `sluice ARGS -q` on local files and returns the output's visible files, checking
/// `_SUCCESS`: the reference of a command that is not a `sluice run` job.
fn local_command(args: &[&str], output: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut full = args.to_vec();
    full.extend(["-o", output.to_str().expect("UTF-8"), "-q"]);
    assert_ok(&run(&mut sluice(&full)), &full.join(" "));
    assert!(output.join("_SUCCESS").is_file(), "{}", full.join(" "));
    local_files(output)
}

/// The visible files of the output at `/path` (on HDFS, or its key in the bucket), and
/// whether `_SUCCESS` is there.
fn remote_files(on_hdfs: bool, path: &str) -> (BTreeMap<String, Vec<u8>>, bool) {
    if on_hdfs {
        hdfs_files(path)
    } else {
        s3_files(path.trim_start_matches('/'))
    }
}

/// `/path` as a URL on HDFS, or of its key in the bucket.
fn remote_url(on_hdfs: bool, path: &str) -> String {
    if on_hdfs {
        hdfs(path)
    } else {
        s3_url(path.trim_start_matches('/'))
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn teragen_writes_hdfs_and_s3_as_it_does_local_files() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let teragen = ["run", "teragen", "--rows", "30k", "--maps", "3"];
    let reference = local_command(&teragen, &dir.path().join("rows"));
    assert_eq!(reference.len(), 3);
    let location = "/teragen";
    for out_hdfs in [true, false] {
        let url = remote_url(out_hdfs, location);
        let mut args = teragen.to_vec();
        args.extend(["-o", &url, "-q"]);
        assert_ok(&run(&mut sluice(&args)), &url);
        let (files, success) = remote_files(out_hdfs, location);
        assert!(success, "{url}: no _SUCCESS");
        assert_eq!(files, reference, "{url}: rows differ from the local run");

        // Run again: the output exists, so nothing is written and what is there stays.
        assert_fails(
            &mut sluice(&["run", "teragen", "--rows", "10", "-o", &url, "-q"]),
            Duration::from_secs(60),
            &["already exists", &url],
        );
        assert_eq!(remote_files(out_hdfs, location), (reference.clone(), true));
    }
    // A plain path is on the default file system, as in Hadoop.
    let done = run(&mut sluice(&[
        "run",
        "teragen",
        "--rows",
        "30k",
        "--maps",
        "3",
        "-D",
        &format!("fs.defaultFS={}", dfs().uri()),
        "-o",
        "/teragen-default-fs",
        "-q",
    ]));
    assert_ok(&done, "teragen with fs.defaultFS");
    assert_eq!(hdfs_files("/teragen-default-fs"), (reference, true));
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn teravalidate_reads_and_reports_on_hdfs_and_s3_as_it_does_locally() {
    // Sorted rows (TeraGen's, sorted locally in two part files) and unsorted ones (TeraGen's
    // own), each on both stores.
    let dir = tempfile::tempdir().expect("a temporary directory");
    let unsorted = dir.path().join("unsorted");
    let sorted = dir.path().join("sorted");
    local_command(
        &["run", "teragen", "--rows", "20k", "--maps", "2"],
        &unsorted,
    );
    let unsorted_text = unsorted.to_str().expect("UTF-8");
    local_command(
        &["run", "terasort", "-r", "2", "-i", unsorted_text],
        &sorted,
    );
    for (name, rows) in [("unsorted", &unsorted), ("sorted", &sorted)] {
        let put = dfs().fs(&[
            "-put",
            rows.to_str().expect("UTF-8"),
            &format!("/tv-{name}"),
        ]);
        assert!(
            put.status.success(),
            "{}",
            String::from_utf8_lossy(&put.stderr)
        );
        for (file, data) in local_files(rows) {
            s3().put_object(BUCKET, &format!("tv-{name}/{file}"), &data);
        }
    }
    for (name, rows, code) in [("sorted", &sorted, 0), ("unsorted", &unsorted, 1)] {
        let report = dir.path().join(format!("report-{name}"));
        let local = run(&mut sluice(&[
            "run",
            "teravalidate",
            "-i",
            rows.to_str().expect("UTF-8"),
            "-o",
            report.to_str().expect("UTF-8"),
            "-q",
        ]));
        assert_eq!(local.status.code(), Some(code), "{}", stderr(&local));
        let reference = local_files(&report);
        assert_eq!(reference.len(), 1, "one report file");
        // Input on one store, the report on the other, both ways.
        for out_hdfs in [true, false] {
            let input = remote_url(!out_hdfs, &format!("/tv-{name}"));
            let location = format!("/tv-report-{name}");
            let output = remote_url(out_hdfs, &location);
            let done = run(&mut sluice(&[
                "run",
                "teravalidate",
                "-i",
                &input,
                "-o",
                &output,
                "-q",
            ]));
            assert_eq!(
                done.status.code(),
                Some(code),
                "{input} -> {output}: {}",
                stderr(&done)
            );
            let (files, success) = remote_files(out_hdfs, &location);
            assert!(success, "{output}: no _SUCCESS");
            assert_eq!(files, reference, "{output}: the report differs");
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn gen_text_writes_hdfs_and_s3_as_it_does_local_files() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let gen = [
        "gen", "text", "--size", "2MiB", "--files", "3", "--seed", "11",
    ];
    let reference = local_command(&gen, &dir.path().join("corpus"));
    assert_eq!(reference.len(), 3);
    let location = "/gen-text";
    for out_hdfs in [true, false] {
        let url = remote_url(out_hdfs, location);
        let mut args = gen.to_vec();
        args.extend(["-o", &url, "-q"]);
        assert_ok(&run(&mut sluice(&args)), &url);
        let (files, success) = remote_files(out_hdfs, location);
        assert!(success, "{url}: no _SUCCESS");
        assert_eq!(
            files, reference,
            "{url}: the corpus differs from the local one"
        );
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn the_inverted_index_names_the_remote_files_it_read() {
    let (hdfs_in, s3_in) = remote_corpus();
    let reference = local_reference("invertedindex", &["-r", "2"], corpus());
    let local_prefix = corpus().to_str().expect("UTF-8").to_string();
    for (input, tag) in [(&hdfs_in, "hdfs"), (&s3_in, "s3")] {
        let output = hdfs(&format!("/index-{tag}"));
        let done = run(&mut sluice(&[
            "run",
            "invertedindex",
            "-r",
            "2",
            "-i",
            input,
            "-o",
            &output,
            "-q",
        ]));
        assert_ok(&done, &format!("invertedindex of {input}"));
        let (files, success) = hdfs_files(&format!("/index-{tag}"));
        assert!(success);
        // The same index, the files named by their locations on the store they were read from.
        let renamed: BTreeMap<String, Vec<u8>> = reference
            .iter()
            .map(|(name, bytes)| {
                let text = String::from_utf8_lossy(bytes).replace(&local_prefix, input);
                (name.clone(), text.into_bytes())
            })
            .collect();
        assert_eq!(files, renamed, "{tag}");
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn cluster_jobs_read_hdfs_and_s3_and_commit_to_hdfs_and_s3_from_their_workers() {
    let (hdfs_in, s3_in) = remote_corpus();
    // Workers with the stores' settings in their environment, as a site's workers have them.
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let workers = workers_with_the_stores(scratch.path());
    for (job, args, input) in [
        ("wordcount", &["-r", "3"][..], &hdfs_in),
        ("sort", &["-r", "2"][..], &s3_in),
    ] {
        let reference = local_reference(job, args, corpus());
        let path = format!("/out/cluster-{job}");
        let output = hdfs(&path);
        let mut full: Vec<String> = ["run", job].iter().map(|s| s.to_string()).collect();
        full.extend(args.iter().map(|s| s.to_string()));
        full.extend(["-i", input.as_str(), "-o", output.as_str(), "-q"].map(String::from));
        full.extend(workers.args());
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let done = run(&mut sluice(&full));
        assert_ok(&done, &format!("{job} on the workers"));
        let (files, success) = hdfs_files(&path);
        assert!(success, "{job}: no _SUCCESS");
        assert_eq!(
            files, reference,
            "{job}: the workers' output differs from one machine's"
        );
    }
    // S3 output from the workers: each committed task leaves a manifest of its upload, which
    // the coordinator completes at job commit.
    let reference = local_reference("wordcount", &["-r", "3"], corpus());
    let output = s3_url("out/cluster-s3");
    let mut full = vec![
        "run",
        "wordcount",
        "-r",
        "3",
        "-i",
        hdfs_in.as_str(),
        "-o",
        output.as_str(),
        "-q",
    ];
    let args = workers.args();
    full.extend(args.iter().map(String::as_str));
    let done = run(&mut sluice(&full));
    assert_ok(&done, "wordcount from HDFS to S3 on the workers");
    let (files, success) = s3_files("out/cluster-s3");
    assert!(success, "no _SUCCESS");
    assert_eq!(
        files, reference,
        "the workers' S3 output differs from one machine's"
    );
    let left: Vec<String> = s3()
        .list_objects(BUCKET, "out/.cluster-s3")
        .into_iter()
        .map(|(key, _)| key)
        .collect();
    assert!(left.is_empty(), "the job's manifests were left: {left:?}");
    let open: Vec<String> = s3()
        .list_multipart_uploads(BUCKET)
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| key.contains("cluster-s3"))
        .collect();
    assert!(open.is_empty(), "uploads left open: {open:?}");
}

/// `sluice fs`, as scripts run it around their jobs, on HDFS and on S3: make a directory,
/// put a local tree, read a file back, test, get the tree, and remove it all; what HDFS holds
/// afterwards is read with Hadoop's own client.
#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn sluice_fs_manages_files_on_hdfs_and_s3() {
    let local = tempfile::tempdir().unwrap();
    let tree = local.path().join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("a.txt"), "alpha\n").unwrap();
    fs::write(tree.join("sub/b.txt"), "beta\n").unwrap();
    let tree_text = tree.to_str().unwrap();
    for base in [hdfs("/fs-shell"), s3_url("fs-shell")] {
        let status = |args: &[&str]| -> (i32, String, String) {
            let out = run(sluice(&[&["fs"][..], args].concat()).current_dir(local.path()));
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr(&out),
            )
        };
        let dir = format!("{base}/in");
        let copy = format!("{dir}/tree");
        // (On S3 a directory is there only while something is in it: -mkdir makes nothing,
        // so the tree is put under its own name, which works on both.)
        assert_eq!(status(&["-mkdir", "-p", &dir]).0, 0, "{base}");
        let put = status(&["-put", tree_text, &copy]);
        assert_eq!(put.0, 0, "put as {copy}: {}", put.2);
        assert_eq!(
            status(&["-cat", &format!("{copy}/sub/b.txt")]).1,
            "beta\n",
            "{base}"
        );
        assert_eq!(
            status(&["-test", "-d", &copy]).0,
            0,
            "{copy} is a directory"
        );
        if base.starts_with("hdfs:") {
            // Listed as Hadoop's own shell lists it: owners, permissions, replication, times.
            for ls in [
                &["-ls", &copy][..],
                &["-ls", "-R", &copy],
                &["-ls", "-d", &dir],
                &["-du", &copy],
                &["-du", "-s", &dir],
            ] {
                let hadoop = dfs().fs(ls);
                assert!(hadoop.status.success(), "hadoop fs {ls:?}");
                let listed = status(ls);
                assert_eq!(
                    (listed.0, listed.1.as_str()),
                    (0, String::from_utf8_lossy(&hadoop.stdout).as_ref()),
                    "fs {ls:?}: sluice's, then Hadoop's"
                );
            }
            // Permissions and owners set through sluice, as Hadoop's own shell lists them.
            for change in [
                &["-chmod", "-R", "go-rx,u+X", &copy][..],
                &["-chmod", "1750", &dir],
                &["-chown", "-R", "alice:staff", &copy],
                &["-chgrp", "wheel", &format!("{copy}/a.txt")],
            ] {
                let changed = status(change);
                assert_eq!(changed.0, 0, "fs {change:?}: {}", changed.2);
            }
            for (ls, changed) in [
                (
                    &["-ls", "-R", &copy][..],
                    &["drwx------", "alice staff", "alice wheel"][..],
                ),
                (&["-ls", "-d", &dir], &["drwxr-x--T"]),
            ] {
                let hadoop = String::from_utf8_lossy(&dfs().fs(ls).stdout).into_owned();
                for shown in changed {
                    assert!(hadoop.contains(shown), "{shown} in {hadoop}");
                }
                assert_eq!(status(ls).1, hadoop, "fs {ls:?}: sluice's, then Hadoop's");
            }
            // Replication: two copies asked of every file (the one DataNode holds one), then
            // one again, waited for.
            let (a, b) = (format!("{copy}/a.txt"), format!("{copy}/sub/b.txt"));
            let set = status(&["-setrep", "-R", "2", &copy]);
            assert_eq!(set.0, 0, "{}", set.2);
            assert!(
                set.1.contains(&format!("Replication 2 set: {a}")),
                "{}",
                set.1
            );
            let kept = dfs().fs(&["-stat", "%r", &a]);
            assert_eq!(String::from_utf8_lossy(&kept.stdout), "2\n");
            // (Block locations come from WebHDFS, at the address a site's hdfs-site.xml gives.)
            let http = format!("dfs.namenode.http-address={}", dfs().webhdfs());
            let waited = status(&["-D", &http, "-setrep", "-w", "1", &b]);
            assert_eq!(
                waited.1,
                format!("Replication 1 set: {b}\nWaiting for {b} ... done\n"),
                "{}",
                waited.2
            );
            let kept = dfs().fs(&["-stat", "%r", &b]);
            assert_eq!(String::from_utf8_lossy(&kept.stdout), "1\n");
        } else {
            // S3 has no permissions or owners: taken and ignored, as by Hadoop's S3 client.
            assert_eq!(status(&["-chmod", "-R", "700", &copy]).0, 0, "{base}");
            assert_eq!(status(&["-chown", "alice", &copy]).0, 0, "{base}");
            let listed = status(&["-ls", "-R", &copy]).1;
            let paths: Vec<&str> = listed
                .lines()
                .filter_map(|l| l.rsplit(' ').next())
                .collect();
            let inside = |name: &str| format!("{copy}/{name}");
            assert_eq!(paths, [inside("a.txt"), inside("sub"), inside("sub/b.txt")]);
        }
        assert_eq!(status(&["-test", "-f", &format!("{copy}/a.txt")]).0, 0);
        assert_eq!(status(&["-test", "-e", &format!("{dir}/nothing")]).0, 1);
        // Copied, then moved (on S3, object by object), within the store.
        let (copied, moved) = (format!("{dir}/copied"), format!("{dir}/moved"));
        let cp = status(&["-cp", &copy, &copied]);
        assert_eq!(cp.0, 0, "cp {copy} {copied}: {}", cp.2);
        let mv = status(&["-mv", &copied, &moved]);
        assert_eq!(mv.0, 0, "mv {copied} {moved}: {}", mv.2);
        assert_eq!(status(&["-test", "-e", &copied]).0, 1, "{copied} is gone");
        assert_eq!(
            status(&["-text", &format!("{moved}/sub/b.txt")]).1,
            "beta\n",
            "{base}"
        );
        let counted = status(&["-count", &moved]).1;
        assert_eq!(
            counted.split_whitespace().collect::<Vec<_>>(),
            ["2", "2", "11", moved.as_str()],
            "{base}"
        );
        if base.starts_with("hdfs:") {
            // As Hadoop's own shell prints them.
            for info in [
                &["-count", "-v", &moved][..],
                &[
                    "-stat",
                    "%n %b %F %a %u %g %r %o",
                    &moved,
                    &format!("{moved}/a.txt"),
                ],
                &["-du", "-h", "-v", &moved],
                &["-ls", "-h", "-S", &moved],
            ] {
                let hadoop = dfs().fs(info);
                assert!(hadoop.status.success(), "hadoop fs {info:?}");
                let said = status(info);
                assert_eq!(
                    (said.0, said.1.as_str()),
                    (0, String::from_utf8_lossy(&hadoop.stdout).as_ref()),
                    "fs {info:?}: sluice's, then Hadoop's"
                );
            }
        }
        // A file put again: refused, as it is there; -f replaces it.
        let file = tree.join("a.txt");
        let (file, target) = (file.to_str().unwrap(), format!("{copy}/a.txt"));
        let again = status(&["-put", file, &target]);
        assert_eq!(again.0, 1, "{base}");
        assert!(again.2.contains("File exists"), "{}", again.2);
        assert_eq!(status(&["-put", "-f", file, &target]).0, 0, "{base}");
        let got = local.path().join("got");
        let get = status(&["-get", &copy, got.to_str().unwrap()]);
        assert_eq!(get.0, 0, "get {copy}: {}", get.2);
        assert_eq!(fs::read_to_string(got.join("a.txt")).unwrap(), "alpha\n");
        assert_eq!(fs::read_to_string(got.join("sub/b.txt")).unwrap(), "beta\n");
        fs::remove_dir_all(&got).unwrap();
        let not_recursive = status(&["-rm", &copy]);
        assert_eq!(not_recursive.0, 1, "{base}");
        assert!(
            not_recursive.2.contains("Is a directory"),
            "{}",
            not_recursive.2
        );
        let removed = status(&["-rm", "-r", &dir]);
        assert_eq!(
            removed,
            (0, format!("Deleted {dir}\n"), String::new()),
            "{base}"
        );
        assert_eq!(status(&["-test", "-e", &dir]).0, 1, "{dir} is gone");
        assert_eq!(status(&["-test", "-e", &format!("{copy}/a.txt")]).0, 1);
    }
    // Hadoop's client sees no trace of the directory on HDFS.
    let listed = dfs().fs(&["-ls", "/fs-shell"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).trim().is_empty(),
        "{}",
        String::from_utf8_lossy(&listed.stdout)
    );
    assert!(s3().list_objects(BUCKET, "fs-shell/").is_empty());
}

/// Directories made by Hadoop's S3 client (`mkdir`) or the AWS console ("Create folder") are
/// empty objects whose keys end in `/`: a job reading the tree holding them reads the files
/// and skips the markers, full or empty, as Hadoop's input formats do.
#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn directory_markers_on_s3_are_directories_not_files() {
    let server = s3();
    server.put_object(BUCKET, "marked/x.txt", b"a b\n");
    server.put_object(BUCKET, "marked/2024/", b"");
    server.put_object(BUCKET, "marked/2024/y.txt", b"c a\n");
    server.put_object(BUCKET, "marked/empty/", b"");
    server.put_object(BUCKET, "marked/empty.txt", b"");
    let done = run(&mut sluice(&[
        "run",
        "wordcount",
        "--quiet",
        "--input",
        &s3_url("marked"),
        "--output",
        &s3_url("marked-counts"),
    ]));
    assert_ok(&done, "wordcount over a tree with directory markers");
    let (files, success) = s3_files("marked-counts");
    assert!(success);
    let mut counts: Vec<String> = files
        .values()
        .flat_map(|bytes| {
            String::from_utf8_lossy(bytes)
                .lines()
                .map(String::from)
                .collect::<Vec<_>>()
        })
        .collect();
    counts.sort();
    assert_eq!(counts, ["a\t2", "b\t1", "c\t1"]);
}

#[test]
#[cfg_attr(
    not(feature = "test-stores"),
    ignore = "needs HDFS and S3 servers: make stores, moto; cargo test --features test-stores"
)]
fn a_streaming_jobs_files_and_archives_come_from_hdfs_and_s3() {
    // What the job ships, made here and put on the stores as mrjob and Oozie put them.
    let made = tempfile::tempdir().expect("a temporary directory");
    let dir = made.path();
    fs::write(
        dir.join("tag.sh"),
        "#!/bin/sh\n# Not executable where it was made: a downloaded file is r-xr-xr-x.\n\
         while read -r line; do echo \"$line $(cat lookup/suffix.txt) $(cat env/bin/name.txt)\"; done\n\
         ./lib.zip/run.sh\nls -d lookup/inner/deep.txt\n",
    )
    .expect("the mapper");
    fs::create_dir_all(dir.join("lookup/inner")).expect("a directory");
    fs::write(dir.join("lookup/suffix.txt"), "from-hdfs-dir").expect("a file");
    fs::write(dir.join("lookup/inner/deep.txt"), "deep").expect("a file");
    let made_archives = Command::new("python3")
        .arg("-c")
        .arg(
            "import io, tarfile, zipfile\n\
             with tarfile.open('env.tgz', 'w:gz') as t:\n\
             \x20   data = b'tar-on-hdfs'\n\
             \x20   info = tarfile.TarInfo('bin/name.txt'); info.size = len(data)\n\
             \x20   t.addfile(info, io.BytesIO(data))\n\
             with zipfile.ZipFile('lib.zip', 'w') as z:\n\
             \x20   z.writestr('run.sh', '#!/bin/sh\\necho zip-on-s3\\n')\n",
        )
        .current_dir(dir)
        .status()
        .expect("python3 runs");
    assert!(made_archives.success());
    for (local, remote) in [
        ("tag.sh", "/apps/streaming/tag.sh"),
        ("lookup", "/apps/streaming/lookup"),
        ("env.tgz", "/apps/streaming/env.tgz"),
    ] {
        let _ = dfs().fs(&["-mkdir", "-p", "/apps/streaming"]);
        let put = dfs().fs(&["-put", dir.join(local).to_str().expect("UTF-8"), remote]);
        assert!(
            put.status.success(),
            "{}",
            String::from_utf8_lossy(&put.stderr)
        );
    }
    let zip = fs::read(dir.join("lib.zip")).expect("the zip file");
    s3().put_object(BUCKET, "apps/lib.zip", &zip);

    let input = tempfile::tempdir().expect("a temporary directory");
    fs::write(input.path().join("in.txt"), "one\ntwo\n").expect("the input");
    let scratch = tempfile::tempdir().expect("a temporary directory");
    let workers = workers_with_the_stores(scratch.path());
    for on_workers in [false, true] {
        let output = input.path().join(format!("out-{on_workers}"));
        let mut args: Vec<String> = vec!["streaming".into()];
        if on_workers {
            args.extend(workers.args());
        }
        args.extend(
            [
                "-files",
                &format!(
                    "{}#tagger,{}",
                    hdfs("/apps/streaming/tag.sh"),
                    hdfs("/apps/streaming/lookup")
                ),
                "-archives",
                &format!(
                    "{}#env,{}",
                    hdfs("/apps/streaming/env.tgz"),
                    s3_url("apps/lib.zip")
                ),
                "-input",
                input.path().join("in.txt").to_str().expect("UTF-8"),
                "-output",
                output.to_str().expect("UTF-8"),
                "-mapper",
                "tagger",
                "-numReduceTasks",
                "0",
            ]
            .map(String::from),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        // Started elsewhere than where the files were made: they can only come from the stores.
        let elsewhere = tempfile::tempdir().expect("a temporary directory");
        let done = run(sluice(&args).current_dir(elsewhere.path()));
        assert_ok(
            &done,
            &format!("streaming with remote files (workers: {on_workers})"),
        );
        let text = fs::read_to_string(output.join("part-00000")).expect("the part file");
        assert_eq!(
            text,
            "one from-hdfs-dir tar-on-hdfs\t\ntwo from-hdfs-dir tar-on-hdfs\t\nzip-on-s3\t\n\
             lookup/inner/deep.txt\t\n",
            "workers: {on_workers}"
        );
    }
    // A remote entry that is not there fails the job before it starts, naming it.
    let missing = hdfs("/apps/streaming/nowhere.tgz");
    let out = input.path().join("out-missing");
    let done = run(&mut sluice(&[
        "streaming",
        "-archives",
        &format!("{missing}#env"),
        "-input",
        input.path().join("in.txt").to_str().expect("UTF-8"),
        "-output",
        out.to_str().expect("UTF-8"),
        "-mapper",
        "cat",
    ]));
    assert_eq!(done.status.code(), Some(1), "{}", stderr(&done));
    assert!(stderr(&done).contains(&missing), "{}", stderr(&done));
    assert!(!out.exists());
}
