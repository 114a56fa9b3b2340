//! Differential tests of `sluice streaming` against Apache Hadoop 3.4.2 Streaming in local
//! mode: every case under `tests/streaming/cases/` runs through both, with the same command
//! line, and the output directories must be byte-identical (see `tests/hadoop/README.md` for
//! how the suite works and how to add a case).
//!
//! Hadoop's results are cached under `target/hadoop/results/`, keyed by a hash of the case, so
//! only new or changed cases start a JVM (one for all of them). The jars come from
//! `make hadoop` (`tests/hadoop/fetch.sh`); without them the test fails (it never passes
//! without running; without the `test-hadoop` feature it is ignored, visibly).
//!
//! `SLUICE_STREAMING_CASES=a,b` runs only the named cases; `SLUICE_STREAMING_KEEP=1` keeps the
//! sluice side's scratch directories and prints where they are.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

#[path = "streaming/case.rs"]
mod case;
#[path = "streaming/compare.rs"]
mod compare;
#[path = "streaming/decode.rs"]
mod decode;
#[path = "streaming/hadoop.rs"]
mod hadoop;

use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use case::{Case, Expect};
use hadoop::{Layout, Run};

/// The binary under test.
const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// A sluice run taking longer than this is killed and reported (Hadoop takes seconds per case).
const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs through Hadoop the cases whose results are not cached yet. The tests of this file run
/// at once and share the cache: one runs the batch while the others wait, then find it
/// cached.
fn run_hadoop_once(layout: &Layout, cases: &[Case]) {
    static BATCH: Mutex<()> = Mutex::new(());
    let _one_at_a_time = BATCH.lock().unwrap_or_else(|e| e.into_inner());
    let uncached: Vec<&Case> = cases
        .iter()
        .filter(|c| hadoop::cached(layout, c).is_none())
        .collect();
    eprintln!(
        "{} case(s), {} cached, {} to run through Hadoop",
        cases.len(),
        cases.len() - uncached.len(),
        uncached.len()
    );
    hadoop::run_batch(layout, &uncached).unwrap();
}

/// Where Hadoop's jars and cached results are; panics when the jars are missing.
fn hadoop_layout() -> Layout {
    let layout = Layout::new();
    if !layout.jars_present() {
        // Never a pass without Hadoop: without the `test-hadoop` feature the test is ignored,
        // which the test runner reports.
        panic!(
            "the Hadoop jars are missing from {}: run `make hadoop` (or tests/hadoop/fetch.sh); \
             the tests that need Hadoop are ignored without the test-hadoop feature",
            layout.lib().display()
        );
    }
    layout
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn streaming_matches_hadoop() {
    let layout = hadoop_layout();
    let mut cases = case::load_all(&layout.cases(), &layout.salt()).unwrap();
    if let Ok(only) = std::env::var("SLUICE_STREAMING_CASES") {
        let names: Vec<&str> = only.split(',').map(str::trim).collect();
        for n in &names {
            assert!(cases.iter().any(|c| c.name == *n), "no case named {n}");
        }
        cases.retain(|c| names.contains(&c.name.as_str()));
    }

    run_hadoop_once(&layout, &cases);

    let reports: Mutex<Vec<(usize, Vec<String>)>> = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    let workers = thread::available_parallelism().map_or(2, |n| n.get().min(4));
    thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let problems = check_case(&layout, case);
                let verdict = if problems.is_empty() { "ok" } else { "DIFFERS" };
                eprintln!("streaming case {:<40} {verdict}", case.name);
                reports.lock().unwrap().push((i, problems));
            });
        }
    });

    let mut reports = reports.into_inner().unwrap();
    reports.sort_by_key(|(i, _)| *i);
    let failed: Vec<String> = reports
        .iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(i, p)| format!("=== case {}\n{}", cases[*i].name, p.join("\n")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} streaming case(s) differ from Hadoop:\n\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n\n")
    );
}

/// The same cases on two `sluice worker`s (`--cluster workers=...`), each case on workers
/// of its own: every output must still be Hadoop's.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn streaming_matches_hadoop_on_workers() {
    let layout = hadoop_layout();
    let cases = case::load_all(&layout.cases(), &layout.salt()).unwrap();
    run_hadoop_once(&layout, &cases);
    let failed: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(case) = cases.get(i) else { break };
                let problems = check_case_on(&layout, case, 2);
                let verdict = if problems.is_empty() { "ok" } else { "DIFFERS" };
                eprintln!("streaming case on workers {:<40} {verdict}", case.name);
                if !problems.is_empty() {
                    failed.lock().unwrap().push(format!(
                        "=== case {}\n{}",
                        case.name,
                        problems.join("\n")
                    ));
                }
            });
        }
    });
    let failed = failed.into_inner().unwrap();
    assert!(
        failed.is_empty(),
        "{} of {} streaming case(s) on workers differ from Hadoop:\n\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n\n")
    );
}

/// Runs one case through sluice and compares it with Hadoop's cached result.
fn check_case(layout: &Layout, case: &Case) -> Vec<String> {
    check_case_on(layout, case, 0)
}

/// [`check_case`], on `workers` workers of the case's own (0: on one machine).
fn check_case_on(layout: &Layout, case: &Case, workers: usize) -> Vec<String> {
    let hadoop = hadoop::cached(layout, case).expect("the Hadoop batch ran every case");
    let mut problems = compare::check_hadoop(case, &hadoop);
    if !problems.is_empty() {
        return problems;
    }
    let scratch = tempfile::Builder::new()
        .prefix("sluice-streaming-")
        .tempdir()
        .unwrap();
    let sluice = match run_sluice(case, scratch.path(), workers) {
        Ok(run) => run,
        Err(e) => return vec![e],
    };
    problems.extend(compare::compare(&case.expect, &hadoop, &sluice));
    if std::env::var("SLUICE_STREAMING_KEEP").as_deref() == Ok("1") {
        let kept = scratch.keep();
        eprintln!(
            "case {}: sluice scratch kept in {}",
            case.name,
            kept.display()
        );
    }
    problems
}

/// Runs `sluice streaming` on a fresh copy of the case, in an empty working directory (as
/// Hadoop's local mode runs programs in the working directory of its JVM).
fn run_sluice(case: &Case, scratch: &Path, workers: usize) -> Result<Run, String> {
    let copy = scratch.join("case");
    case.materialize(&copy)?;
    let work = scratch.join("work");
    fs::create_dir_all(&work).unwrap();
    let output = scratch.join("output");
    let mut args = vec!["streaming".to_string()];
    let _workers = if workers > 0 {
        let started = sluice_testkit::Workers::start(
            Path::new(SLUICE),
            &scratch.join("workers"),
            workers,
            "256MiB",
            |_| {},
        );
        args.extend(started.args());
        Some(started)
    } else {
        None
    };
    args.extend(hadoop::local_mode_args(&scratch.join("tmp")));
    args.extend(case.resolve_args(&copy, &output));

    let log_path = scratch.join("stderr");
    let log = File::create(&log_path).unwrap();
    // A failed job keeps its task logs in its directory under TMPDIR: the case's own.
    let tmp = scratch.join("tmpdir");
    fs::create_dir_all(&tmp).unwrap();
    let mut child = Command::new(SLUICE)
        .args(&args)
        .env("TMPDIR", &tmp)
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {SLUICE}: {e}"))?;
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let mut log = String::from_utf8_lossy(&fs::read(&log_path).unwrap()).into_owned();
    if status.is_none() {
        log.push_str(&format!("\n(killed after {}s)", TIMEOUT.as_secs()));
    }
    Ok(Run {
        exit: status.and_then(|s| s.code()),
        output,
        log,
    })
}

/// The comparator itself: a difference is found and shown with both sides' lines.
#[test]
fn comparator_reports_first_difference() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for d in [a.path(), b.path()] {
        fs::write(d.join("_SUCCESS"), "").unwrap();
        fs::write(d.join(".part-00000.crc"), "ignored").unwrap();
    }
    fs::write(a.path().join("part-00000"), "a\t1\nb\t2\nc\t3\n").unwrap();
    fs::write(b.path().join("part-00000"), "a\t1\nb\t20\nc\t3\n").unwrap();
    fs::write(a.path().join("part-00001"), "x\n").unwrap();

    let problems = compare::compare_dirs(a.path(), b.path(), false, false);
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("part-00001"), "{}", problems[0]);
    assert!(
        problems[1].contains("part-00000")
            && problems[1].contains("line 2")
            && problems[1].contains(r#"Hadoop: "b\t2\n""#)
            && problems[1].contains(r#"sluice: "b\t20\n""#),
        "{}",
        problems[1]
    );

    fs::write(b.path().join("part-00000"), "a\t1\nb\t2\nc\t3\n").unwrap();
    fs::write(b.path().join("part-00001"), "x\n").unwrap();
    assert!(compare::compare_dirs(a.path(), b.path(), false, false).is_empty());
    // Hidden files are not part of the output.
    fs::write(b.path().join(".extra.crc"), "").unwrap();
    assert!(compare::compare_dirs(a.path(), b.path(), false, false).is_empty());
}

/// Compressed outputs compare by content and must decode; names must still match.
#[test]
fn comparator_decompresses_when_asked() {
    use std::io::Write as _;
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let gzip = |level: u32, data: &[u8]| {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    };
    let text = b"a\t1\nb\t2\n".repeat(50);
    fs::write(a.path().join("part-00000.gz"), gzip(1, &text)).unwrap();
    fs::write(b.path().join("part-00000.gz"), gzip(9, &text)).unwrap();
    // Hadoop's lz4 block framing of "a\t1\n", one chunk.
    let chunk = lz4_flex::block::compress(b"a\t1\n");
    let mut framed = vec![0, 0, 0, 4, 0, 0, 0, chunk.len() as u8];
    framed.extend(&chunk);
    fs::write(a.path().join("part-00001.lz4"), &framed).unwrap();
    fs::write(b.path().join("part-00001.lz4"), &framed).unwrap();
    assert!(!compare::compare_dirs(a.path(), b.path(), false, false).is_empty());
    assert!(compare::compare_dirs(a.path(), b.path(), false, true).is_empty());

    fs::write(b.path().join("part-00001.lz4"), b"a\t1\n").unwrap();
    let problems = compare::compare_dirs(a.path(), b.path(), false, true);
    assert!(
        problems.len() == 1 && problems[0].contains("sluice's file part-00001.lz4 does not decode"),
        "{problems:?}"
    );
    fs::write(b.path().join("part-00000.gz"), gzip(9, b"a\t1\n")).unwrap();
    fs::remove_file(b.path().join("part-00001.lz4")).unwrap();
    let problems = compare::compare_dirs(a.path(), b.path(), false, true);
    assert!(
        problems.iter().any(|p| p.contains("output files differ"))
            && problems
                .iter()
                .any(|p| p.contains("part-00000.gz differs (decompressed)")),
        "{problems:?}"
    );
    assert!(Expect::parse("decompress = true\n").unwrap().decompress);
}

#[test]
fn comparator_sorts_values_only_when_asked() {
    let h = b"a\t1\na\t2\nb\t9\nb\t8\n";
    let s = b"a\t2\na\t1\nb\t8\nb\t9\n";
    assert!(compare::first_difference(h, s).is_some());
    assert_eq!(
        compare::sort_within_keys(h),
        compare::sort_within_keys(s),
        "runs of equal keys compare as sets"
    );
    // Lines never move across keys.
    assert_ne!(
        compare::sort_within_keys(b"b\t1\na\t1\n"),
        compare::sort_within_keys(b"a\t1\nb\t1\n")
    );
}

#[test]
fn counters_are_read_from_the_job_log_layout() {
    let log = "INFO Job: Counters: 3\n\tMy Group\n\t\tlines=3\n\t\twords=7\n\
               \tFile Output Format Counters \n\t\tBytes Written=68\n\
               INFO StreamJob: Output directory: out\n";
    let counters = compare::job_counters(log);
    assert_eq!(counters.get("My Group", "lines"), Some(3));
    assert_eq!(counters.get("My Group", "words"), Some(7));
    assert_eq!(
        counters.get("File Output Format Counters", "Bytes Written"),
        Some(68)
    );
    assert_eq!(counters.group_names().count(), 2);
}

#[test]
fn failure_checks_want_the_marker_and_no_success_file() {
    let expect = Expect {
        success: false,
        stderr: Some("MARKER-42".into()),
        ..Expect::default()
    };
    let out = tempfile::tempdir().unwrap();
    let hadoop = Run {
        exit: Some(1),
        output: out.path().join("h"),
        log: "boom MARKER-42\n".into(),
    };
    let quiet = Run {
        exit: Some(2),
        output: out.path().join("s"),
        log: "job failed\n".into(),
    };
    let problems = compare::compare(&expect, &hadoop, &quiet);
    assert!(
        problems.iter().any(|p| p.contains("MARKER-42")),
        "{problems:?}"
    );

    let quoting = Run {
        log: "map task failed: MARKER-42\n".into(),
        ..quiet.clone()
    };
    assert!(compare::compare(&expect, &hadoop, &quoting).is_empty());

    fs::create_dir_all(&quoting.output).unwrap();
    fs::write(quoting.output.join("_SUCCESS"), "").unwrap();
    assert!(!compare::compare(&expect, &hadoop, &quoting).is_empty());

    let Expect { success, .. } = Expect::parse("status = failure\n# note\nstderr = X\n").unwrap();
    assert!(!success);
    assert!(Expect::parse("bogus = 1\n").is_err());
}

/// SequenceFiles compare by header and records, not bytes: two files of the same records
/// with different sync markers are equal; a changed value or class is found.
#[test]
fn comparator_decodes_sequence_files() {
    // An uncompressed SequenceFile of Text records, laid out by hand as Hadoop's
    // SequenceFile.Writer writes one: "SEQ" 6, classes, two flags, no metadata, sync, then
    // (record length, key length, key, value) per record and a sync entry between them.
    let file = |sync: u8, value: &[u8], class: &str| {
        let mut f = b"SEQ\x06".to_vec();
        for c in [class, "org.apache.hadoop.io.Text"] {
            f.push(c.len() as u8);
            f.extend(c.as_bytes());
        }
        f.extend([0, 0, 0, 0, 0, 0]);
        f.extend([sync; 16]);
        let mut record = |key: &[u8], value: &[u8]| {
            let (k, v) = (
                [&[key.len() as u8][..], key].concat(),
                [&[value.len() as u8][..], value].concat(),
            );
            f.extend(((k.len() + v.len()) as u32).to_be_bytes());
            f.extend((k.len() as u32).to_be_bytes());
            f.extend(k);
            f.extend(v);
        };
        record(b"a", b"1");
        record(b"b", value);
        f.extend([0xff; 4]);
        f.extend([sync; 16]);
        f
    };
    let text = "org.apache.hadoop.io.Text";
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    fs::write(a.path().join("part-00000"), file(1, b"2", text)).unwrap();
    fs::write(b.path().join("part-00000"), file(2, b"2", text)).unwrap();
    assert!(compare::compare_sequence_files(a.path(), b.path()).is_empty());
    assert_eq!(
        decode::sequence_file(&file(1, b"2", text)).unwrap(),
        b"org.apache.hadoop.io.Text org.apache.hadoop.io.Text NONE  []\n\\x01a\t\\x011\n\\x01b\t\\x012\n"
    );
    fs::write(b.path().join("part-00000"), file(2, b"3", text)).unwrap();
    let problems = compare::compare_sequence_files(a.path(), b.path());
    assert!(
        problems.len() == 1 && problems[0].contains("line 3"),
        "{problems:?}"
    );
    let long = "org.apache.hadoop.io.LongWritable";
    fs::write(b.path().join("part-00000"), file(1, b"2", long)).unwrap();
    let problems = compare::compare_sequence_files(a.path(), b.path());
    assert!(
        problems.len() == 1 && problems[0].contains("line 1"),
        "{problems:?}"
    );
    fs::write(b.path().join("part-00000"), b"SEQ\x06\x01").unwrap();
    let problems = compare::compare_sequence_files(a.path(), b.path());
    assert!(
        problems.len() == 1 && problems[0].contains("sluice's part-00000 is not a SequenceFile"),
        "{problems:?}"
    );
}
