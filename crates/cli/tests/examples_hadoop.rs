//! Differential tests of the SequenceFile workloads against Apache Hadoop 3.4.2's own
//! RandomWriter, RandomTextWriter, `sort` and `wordcount` examples
//! (`hadoop-mapreduce-examples`, local mode, from the jars `make hadoop` puts in
//! `target/hadoop/lib`):
//!
//! 1. Hadoop's `sort` reads the SequenceFiles `sluice gen randomwriter` writes (its default
//!    classes are BytesWritable, so files of another class would fail it), and its output
//!    holds the same records, part file by part file, as `sluice run sort`'s, for one and
//!    for several reducers. The same for `gen randomtextwriter` (Text keys and values).
//! 2. sluice sorts what Hadoop's RandomWriter writes as Hadoop's `sort` does.
//! 3. Word count over RandomTextWriter's SequenceFiles into SequenceFiles, as HiBench runs
//!    Hadoop's `wordcount` (its input and output format classes given with `-D`): the same
//!    records part file by part file; and Hadoop reads sluice's compressed ones.
//!
//! 4. `sluice jar` refuses the command lines Hadoop's examples jar refuses with Hadoop's exit
//!    status.
//!
//! Records are compared, not bytes: sync markers are random. Both outputs are read by a
//! SequenceFile reader written here (uncompressed files only), independent of sluice's. Hadoop
//! leaves the order of records with equal keys to its sort, so records are compared as the
//! sequence of keys and, within each run of equal keys, as a multiset.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_testkit::console::{counter, RECORD_COUNTERS};

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
    assert!(
        lib.join(".complete").exists(),
        "the Hadoop jars are missing from {}: run `make hadoop` (or tests/hadoop/fetch.sh); the \
         tests that need Hadoop are ignored without the test-hadoop feature",
        lib.display()
    );
}

/// Runs Hadoop's example `program` in local mode in `scratch`: whether it exited 0, and its
/// log (stdout, then stderr, where the job client prints the counters).
fn try_hadoop(scratch: &Path, program: &str, args: &[&str]) -> (bool, String) {
    try_hadoop_with_site(scratch, None, program, args)
}

/// [`try_hadoop`] with the site files of `conf_dir` on the class path, as Hadoop's launcher
/// puts `HADOOP_CONF_DIR` there.
fn try_hadoop_with_site(
    scratch: &Path,
    conf_dir: Option<&Path>,
    program: &str,
    args: &[&str],
) -> (bool, String) {
    let root = root();
    let mut classpath = format!(
        "{}:{}/*",
        root.join("tests/hadoop").display(),
        root.join("target/hadoop/lib").display()
    );
    if let Some(dir) = conf_dir {
        classpath = format!("{}:{classpath}", dir.display());
    }
    let out = Command::new("java")
        .arg("-cp")
        .arg(classpath)
        .arg("org.apache.hadoop.examples.ExampleDriver")
        .arg(program)
        .args(["-D", "mapreduce.framework.name=local"])
        .args(["-D", "fs.defaultFS=file:///"])
        .arg("-D")
        .arg(format!(
            "hadoop.tmp.dir={}",
            scratch.join("hadoop-tmp").display()
        ))
        .args(args)
        .current_dir(scratch)
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), log)
}

/// [`try_hadoop`], which panics with the log unless the program exits 0; returns the log.
fn hadoop(scratch: &Path, program: &str, args: &[&str]) -> String {
    let (success, log) = try_hadoop(scratch, program, args);
    assert!(success, "Hadoop {program} failed:\n{log}");
    log
}

/// Runs `sluice ARGS`; panics with its stderr unless it exits 0. Returns its stderr (where
/// the counters are).
fn sluice(args: &[&str]) -> String {
    let out = Command::new(SLUICE).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "sluice {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Panics unless both logs print every one of [`RECORD_COUNTERS`] with the same value.
fn assert_record_counters_equal(hadoop_log: &str, sluice_log: &str) {
    for name in RECORD_COUNTERS {
        let h = counter(hadoop_log, name);
        assert!(h.is_some(), "Hadoop printed no {name:?}:\n{hadoop_log}");
        assert_eq!(
            counter(sluice_log, name),
            h,
            "counter {name:?}: sluice's, then Hadoop's\nsluice:\n{sluice_log}"
        );
    }
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A file's key class, value class and records (serialised key, serialised value).
type SeqFile = (String, String, Vec<(Vec<u8>, Vec<u8>)>);

/// Hadoop's `WritableUtils.readVInt`.
fn vint(b: &[u8], i: &mut usize) -> i64 {
    let first = b[*i] as i8;
    *i += 1;
    if first >= -112 {
        return i64::from(first);
    }
    let negative = first < -120;
    let n = if negative { -119 - first } else { -111 - first };
    let mut v = 0i64;
    for _ in 1..n {
        v = (v << 8) | i64::from(b[*i]);
        *i += 1;
    }
    if negative {
        !v
    } else {
        v
    }
}

fn int(b: &[u8], i: &mut usize) -> i32 {
    let v = i32::from_be_bytes(b[*i..*i + 4].try_into().unwrap());
    *i += 4;
    v
}

fn text(b: &[u8], i: &mut usize) -> Vec<u8> {
    let n = usize::try_from(vint(b, i)).unwrap();
    *i += n;
    b[*i - n..*i].to_vec()
}

/// Reads an uncompressed SequenceFile (version 6).
fn read_seq(file: &Path) -> SeqFile {
    let b = fs::read(file).unwrap();
    assert_eq!(&b[..4], b"SEQ\x06", "{}", file.display());
    let mut i = 4;
    let key_class = String::from_utf8(text(&b, &mut i)).unwrap();
    let value_class = String::from_utf8(text(&b, &mut i)).unwrap();
    assert_eq!(&b[i..i + 2], [0, 0], "{} is compressed", file.display());
    i += 2;
    for _ in 0..int(&b, &mut i) {
        text(&b, &mut i);
        text(&b, &mut i);
    }
    let sync = b[i..i + 16].to_vec();
    i += 16;
    let mut records = Vec::new();
    while i < b.len() {
        let len = int(&b, &mut i);
        if len == -1 {
            assert_eq!(b[i..i + 16], sync);
            i += 16;
            continue;
        }
        let key_len = usize::try_from(int(&b, &mut i)).unwrap();
        let len = usize::try_from(len).unwrap();
        records.push((b[i..i + key_len].to_vec(), b[i + key_len..i + len].to_vec()));
        i += len;
    }
    (key_class, value_class, records)
}

/// The visible part files of `dir`, in name order.
fn parts(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with("part-")
        })
        .collect();
    files.sort();
    files
}

/// The records in a comparable form: runs of equal keys have their records sorted.
fn canonical(mut records: Vec<(Vec<u8>, Vec<u8>)>) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut start = 0;
    while start < records.len() {
        let end = start
            + records[start..]
                .iter()
                .take_while(|r| r.0 == records[start].0)
                .count();
        records[start..end].sort();
        start = end;
    }
    records
}

/// Sorts `input` with Hadoop's `sort` and with sluice's (`sluice jar` of the examples jar,
/// which runs `sluice run sort`), `reducers` each, and checks
/// that every part file holds the same records of `class` (keys and values), and that both
/// print the same [`RECORD_COUNTERS`]; returns the records sorted.
fn both_sort(scratch: &Path, input: &Path, reducers: usize, class: &str) -> usize {
    both_sort_classes(scratch, input, reducers, (class, class))
}

/// [`both_sort`] of a file of keys of class `classes.0` and values of class `classes.1`.
fn both_sort_classes(
    scratch: &Path,
    input: &Path,
    reducers: usize,
    classes: (&str, &str),
) -> usize {
    let r = reducers.to_string();
    let hadoop_out = scratch.join(format!("hadoop-sorted-{reducers}"));
    let sluice_out = scratch.join(format!("sluice-sorted-{reducers}"));
    let args = |output: &Path| {
        [
            "-r",
            &r,
            "-outKey",
            classes.0,
            "-outValue",
            classes.1,
            path(input),
        ]
        .map(str::to_string)
        .into_iter()
        .chain([path(output).to_string()])
        .collect::<Vec<String>>()
    };
    let hadoop_args = args(&hadoop_out);
    let hadoop_log = hadoop(
        scratch,
        "sort",
        &hadoop_args.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    // The same command line, as a wrapper of `hadoop jar` gives it to sluice.
    let mut sluice_args = vec![
        "jar".to_string(),
        "hadoop-mapreduce-examples-3.4.2.jar".to_string(),
        "sort".to_string(),
    ];
    sluice_args.extend(args(&sluice_out));
    let sluice_log = sluice(&sluice_args.iter().map(String::as_str).collect::<Vec<_>>());
    let (h, s) = (parts(&hadoop_out), parts(&sluice_out));
    let names = |v: &[PathBuf]| -> Vec<String> {
        v.iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert_eq!(names(&h), names(&s));
    assert_eq!(h.len(), reducers);
    let mut total = 0;
    for (hp, sp) in h.iter().zip(&s) {
        let (hk, hv, hr) = read_seq(hp);
        let (sk, sv, sr) = read_seq(sp);
        assert_eq!((&sk, &sv), (&hk, &hv), "{}", sp.display());
        assert_eq!((sk.as_str(), sv.as_str()), classes);
        assert_eq!(sr.len(), hr.len(), "{}", sp.display());
        let keys = |r: &[(Vec<u8>, Vec<u8>)]| r.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
        assert!(keys(&sr) == keys(&hr), "keys differ in {}", sp.display());
        assert!(
            canonical(sr.clone()) == canonical(hr),
            "records differ in {}",
            sp.display()
        );
        total += sr.len();
    }
    assert_record_counters_equal(&hadoop_log, &sluice_log);
    total
}

/// The payload of a serialised BytesWritable or Text.
fn payload(class: &str, serialised: &[u8]) -> Vec<u8> {
    let mut i = 0;
    if class.ends_with("BytesWritable") {
        let n = usize::try_from(int(serialised, &mut i)).unwrap();
        assert_eq!(serialised.len(), 4 + n);
        serialised[4..].to_vec()
    } else {
        let t = text(serialised, &mut i);
        assert_eq!(i, serialised.len());
        t
    }
}

/// Every record of the input directory's part files.
fn all_records(dir: &Path, class: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut records = Vec::new();
    for p in parts(dir) {
        let (k, v, r) = read_seq(&p);
        assert_eq!((k.as_str(), v.as_str()), (class, class));
        records.extend(r);
    }
    records
}

const BYTES: &str = "org.apache.hadoop.io.BytesWritable";
const TEXT: &str = "org.apache.hadoop.io.Text";

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn hadoop_sorts_sluices_randomwriter_output_as_sluice_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("random");
    sluice(&[
        "gen",
        "randomwriter",
        "-q",
        "--maps",
        "3",
        "--bytes-per-map",
        "400000",
        "--output",
        path(&input),
    ]);
    let records = all_records(&input, BYTES);
    // Random keys of 10 or more bytes do not repeat: maps must not draw the same numbers.
    let distinct: std::collections::HashSet<&Vec<u8>> = records.iter().map(|r| &r.0).collect();
    assert_eq!(distinct.len(), records.len());
    let mut per_map = [0usize; 3];
    for (i, p) in parts(&input).iter().enumerate() {
        per_map[i] = read_seq(p)
            .2
            .iter()
            .map(|(k, v)| k.len() + v.len() - 8)
            .sum();
    }
    // Each map writes until its payload reaches the bytes per map, and stops there.
    assert!(per_map
        .iter()
        .all(|&b| (400_000..400_000 + 21_000).contains(&b)));
    for (k, v) in &records {
        let (k, v) = (payload(BYTES, k), payload(BYTES, v));
        assert!((10..1000).contains(&k.len()), "key of {} bytes", k.len());
        assert!(v.len() < 20000, "value of {} bytes", v.len());
    }
    for reducers in [1, 3] {
        assert_eq!(both_sort(d, &input, reducers, BYTES), records.len());
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn hadoop_sorts_sluices_randomtextwriter_output_as_sluice_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("text");
    sluice(&[
        "gen",
        "randomtextwriter",
        "-q",
        "--maps",
        "2",
        "--bytes-per-map",
        "300000",
        "--output",
        path(&input),
    ]);
    let records = all_records(&input, TEXT);
    for (k, v) in &records {
        let count = |t: &[u8]| t.iter().filter(|&&b| b == b' ').count();
        let (k, v) = (payload(TEXT, k), payload(TEXT, v));
        assert!((5..10).contains(&count(&k)), "{k:?}");
        assert!((10..100).contains(&count(&v)), "{v:?}");
    }
    assert_eq!(both_sort(d, &input, 2, TEXT), records.len());
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn sluice_sorts_hadoops_randomwriter_output_as_hadoop_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("hadoop-random");
    hadoop(
        d,
        "randomwriter",
        &[
            "-D",
            "mapreduce.randomwriter.bytespermap=300000",
            "-D",
            "mapreduce.randomwriter.totalbytes=900000",
            path(&input),
        ],
    );
    let records = all_records(&input, BYTES);
    assert!(!records.is_empty());
    for reducers in [1, 4] {
        assert_eq!(both_sort(d, &input, reducers, BYTES), records.len());
    }
}

/// HiBench's sort as its scripts run it, through the examples jar: `randomtextwriter` with
/// Hadoop's `-D` settings, then `sort -outKey Text -outValue Text -r N`. sluice takes both
/// command lines as they are and sorts as Hadoop does; and the sort without `-outKey` fails
/// on Text input in both (Hadoop's sort expects BytesWritable unless told), leaving no output.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn the_examples_jar_runs_hibenchs_sort_as_hadoop_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("rtw");
    let jar = "/opt/hadoop/share/hadoop/mapreduce/hadoop-mapreduce-examples-3.4.2.jar";
    sluice(&[
        "jar",
        jar,
        "randomtextwriter",
        "-D",
        "mapreduce.randomtextwriter.totalbytes=400000",
        "-D",
        "mapreduce.randomtextwriter.bytespermap=200000",
        "-D",
        "mapreduce.job.maps=2",
        "-D",
        "mapreduce.job.reduces=0",
        path(&input),
    ]);
    assert_eq!(parts(&input).len(), 2);
    let records = all_records(&input, TEXT);
    assert_eq!(both_sort(d, &input, 2, TEXT), records.len());

    // One reducer: in local mode Hadoop's sort would otherwise run map-only.
    let (hadoop_ok, hadoop_log) = try_hadoop(
        d,
        "sort",
        &["-r", "1", path(&input), path(&d.join("hadoop-untyped"))],
    );
    assert!(!hadoop_ok, "{hadoop_log}");
    assert!(
        hadoop_log.contains("Type mismatch in key from map"),
        "{hadoop_log}"
    );
    let out = Command::new(SLUICE)
        .args(["jar", jar, "sort", "-r", "1", path(&input)])
        .arg(d.join("sluice-untyped"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("Type mismatch in key from map")
            && stderr.contains("org.apache.hadoop.io.BytesWritable"),
        "{stderr}"
    );
    assert!(!d.join("sluice-untyped").exists());
}

/// Hadoop refuses a job whose output exists, or whose input is missing, at submission: no
/// `Running job:` line, no counters (sluice's side is checked in the e2e `jar` tests).
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn hadoop_refuses_jobs_at_submission_without_job_lines() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.txt");
    fs::write(&input, "a b\n").unwrap();
    let existing = d.join("existing");
    fs::create_dir(&existing).unwrap();
    for (args, says) in [
        ([path(&input), path(&existing)], "already exists"),
        (
            [path(&d.join("missing")), path(&d.join("fresh"))],
            "does not exist",
        ),
    ] {
        let (ok, log) = try_hadoop(d, "wordcount", &args);
        assert!(!ok, "{log}");
        assert!(log.contains(says), "{log}");
        for line in ["Running job:", "failed with state", "Counters:"] {
            assert!(!log.contains(line), "{log}");
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn refused_command_lines_exit_as_hadoops_do() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let root = root();
    let classpath = format!(
        "{}:{}/*",
        root.join("tests/hadoop").display(),
        root.join("target/hadoop/lib").display()
    );
    let cases: &[&[&str]] = &[
        &[],
        &["nosuch"],
        &["terasort", "in"],
        &["teravalidate", "in"],
        &["teragen", "5"],
        &["wordcount", "out"],
        &["sort", "a", "b", "c"],
        &["sort", "-r"],
        &["randomwriter"],
        &["grep", "a", "b"],
        // Jobs Hadoop's job client refuses at submission, and an argument that is not a
        // number: exceptions, which Hadoop's driver turns into 255.
        &["wordcount", "in.txt", "existing"],
        &["wordcount", "missing", "fresh"],
        &["grep", "missing", "fresh", "a"],
        &["teragen", "10", "existing"],
        &["teragen", "x", "fresh"],
        &["terasort", "missing", "fresh"],
        &["teravalidate", "missing", "fresh"],
    ];
    fs::write(dir.path().join("in.txt"), "a b\n").unwrap();
    fs::create_dir(dir.path().join("existing")).unwrap();
    for args in cases {
        let hadoop = Command::new("java")
            .arg("-cp")
            .arg(&classpath)
            .arg("org.apache.hadoop.examples.ExampleDriver")
            .args(*args)
            .current_dir(dir.path())
            .output()
            .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
        let sluice = Command::new(SLUICE)
            .args(["jar", "hadoop-mapreduce-examples-3.4.3.jar"])
            .args(*args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert_ne!(hadoop.status.code(), Some(0), "Hadoop ran {args:?}");
        assert_eq!(
            sluice.status.code(),
            hadoop.status.code(),
            "{args:?}: {}",
            String::from_utf8_lossy(&sluice.stderr)
        );
    }
    let mut left: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["existing", "in.txt"], "nothing written");
    assert_eq!(
        fs::read_dir(dir.path().join("existing")).unwrap().count(),
        0
    );
}

/// Hadoop's `WritableUtils.writeVLong`, written out here as the reference.
fn put_vlong(out: &mut Vec<u8>, value: i64) {
    if (-112..=127).contains(&value) {
        out.push(value.to_be_bytes()[7]);
        return;
    }
    let (magnitude, base) = if value < 0 {
        (!value, -120i8)
    } else {
        (value, -112)
    };
    let bytes = 8 - usize::try_from(magnitude.leading_zeros() / 8).unwrap();
    out.push((base - i8::try_from(bytes).unwrap()).to_be_bytes()[0]);
    // A negative number's complement is written, as Hadoop writes it.
    out.extend_from_slice(&magnitude.to_be_bytes()[8 - bytes..]);
}

/// A Hadoop `Text` (or the class names of a SequenceFile's header) as Hadoop serializes it.
fn put_text(out: &mut Vec<u8>, text: &[u8]) {
    put_vlong(out, i64::try_from(text.len()).unwrap());
    out.extend_from_slice(text);
}

/// Writes an uncompressed SequenceFile (version 6, no metadata, no sync markers between
/// records) of serialized keys and values, as Hadoop's writer lays one out.
fn write_seq(file: &Path, classes: (&str, &str), records: &[(Vec<u8>, Vec<u8>)]) {
    let mut b = b"SEQ\x06".to_vec();
    put_text(&mut b, classes.0.as_bytes());
    put_text(&mut b, classes.1.as_bytes());
    b.extend_from_slice(&[0, 0]); // neither record- nor block-compressed
    b.extend_from_slice(&0i32.to_be_bytes()); // no metadata
    b.extend_from_slice(b"sync-marker-0123");
    for (k, v) in records {
        let len = |n: usize| i32::try_from(n).unwrap().to_be_bytes();
        b.extend_from_slice(&len(k.len() + v.len()));
        b.extend_from_slice(&len(k.len()));
        b.extend_from_slice(k);
        b.extend_from_slice(v);
    }
    fs::write(file, b).unwrap();
}

/// The serialized key and value of record `i`, made from the number `n`.
type Record<'a> = dyn Fn(usize, i64) -> (Vec<u8>, Vec<u8>) + 'a;

/// The sort of SequenceFiles whose keys are numbers (`VLongWritable`, `VIntWritable`,
/// `IntWritable`): sluice holds such keys in a sort form of their own and counts their map
/// output bytes by the class. Hadoop's `sort`, given the classes, sorts the same records into
/// the same part files and prints the same record counters, `Map output bytes` included.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn sluice_sorts_numeric_keys_and_counts_them_as_hadoop_does() {
    require_hadoop();
    // Numbers around every boundary of the variable-length encoding, and repeats.
    let mut numbers: Vec<i64> = vec![
        0,
        1,
        -1,
        127,
        128,
        -112,
        -113,
        255,
        256,
        300,
        70_000,
        -70_000,
        1 << 40,
        i64::MIN,
        i64::MAX,
        i64::from(i32::MIN),
        i64::from(i32::MAX),
    ];
    for i in 0..300i64 {
        numbers.push((i * 7919) % 1000 - 500);
        numbers.push((i * 104_729).wrapping_mul(1 << 20) - (1 << 40));
    }
    let vlong = |n: i64| {
        let mut b = Vec::new();
        put_vlong(&mut b, n);
        b
    };
    let value = |i: usize| {
        let mut b = Vec::new();
        put_text(
            &mut b,
            format!("value {i} {}", "x".repeat(i % 150)).as_bytes(),
        );
        b
    };
    let int32 = |n: i64| i32::try_from(n.clamp(i32::MIN.into(), i32::MAX.into())).unwrap();
    let cases: [(&str, &str, &Record<'_>); 3] = [
        ("org.apache.hadoop.io.VLongWritable", TEXT, &|i, n| {
            (vlong(n), value(i))
        }),
        (
            "org.apache.hadoop.io.VIntWritable",
            "org.apache.hadoop.io.LongWritable",
            &|i, n| {
                (
                    vlong(int32(n).into()),
                    i64::try_from(i).unwrap().to_be_bytes().to_vec(),
                )
            },
        ),
        ("org.apache.hadoop.io.IntWritable", BYTES, &|i, n| {
            let mut v = u32::try_from(i % 40).unwrap().to_be_bytes().to_vec();
            v.extend(std::iter::repeat_n(b'b', i % 40));
            (int32(n).to_be_bytes().to_vec(), v)
        }),
    ];
    for (key_class, value_class, record) in cases {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = d.join("numbers");
        fs::create_dir(&input).unwrap();
        let records: Vec<_> = numbers
            .iter()
            .enumerate()
            .map(|(i, &n)| record(i, n))
            .collect();
        write_seq(
            &input.join("part-m-00000"),
            (key_class, value_class),
            &records,
        );
        assert_eq!(
            both_sort_classes(d, &input, 1, (key_class, value_class)),
            records.len(),
            "{key_class}"
        );
    }
}

/// Java's `WritableComparator.hashBytes`, written out here as the reference:
/// `h = 31 * h + b` over the bytes as signed bytes, from 1, wrapping.
fn java_hash(bytes: &[u8]) -> i32 {
    let mut h: i32 = 1;
    for &b in bytes {
        h = h.wrapping_mul(31).wrapping_add(i32::from(b as i8));
    }
    h
}

/// Without Hadoop: sluice's sort of randomtextwriter output against a reference computed
/// here (records grouped by `HashPartitioner` on the key's payload, each group sorted by the
/// payload's unsigned bytes).
#[test]
fn sort_of_sequence_files_matches_a_reference() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("text");
    sluice(&[
        "gen",
        "randomtextwriter",
        "-q",
        "--maps",
        "3",
        "--bytes-per-map",
        "100000",
        "-D",
        "mapreduce.randomtextwriter.minwordskey=1",
        "-D",
        "mapreduce.randomtextwriter.maxwordskey=2",
        "--output",
        path(&input),
    ]);
    let records = all_records(&input, TEXT);
    let reducers = 3;
    let mut expected: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); reducers];
    for (k, v) in &records {
        let hash = java_hash(&payload(TEXT, k));
        let p = usize::try_from((hash & i32::MAX) % 3).unwrap();
        expected[p].push((k.clone(), v.clone()));
    }
    // One-word keys repeat: equal keys are compared as multisets by `canonical`.
    for part in &mut expected {
        part.sort_by_key(|r| payload(TEXT, &r.0));
    }
    let out = d.join("sorted");
    sluice(&[
        "run",
        "sort",
        "-q",
        "--reducers",
        "3",
        "--input",
        path(&input),
        "--output",
        path(&out),
    ]);
    let files = parts(&out);
    assert_eq!(files.len(), reducers);
    for (file, want) in files.iter().zip(expected) {
        let (k, v, got) = read_seq(file);
        assert_eq!((k.as_str(), v.as_str()), (TEXT, TEXT));
        assert!(canonical(got) == canonical(want), "{}", file.display());
    }
}

/// The compression flags and codec of a SequenceFile's header: (compressed, block, codec).
fn compression_of(file: &Path) -> (bool, bool, String) {
    let b = fs::read(file).unwrap();
    assert_eq!(&b[..4], b"SEQ\x06", "{}", file.display());
    let mut i = 4;
    text(&b, &mut i);
    text(&b, &mut i);
    let (compressed, block) = (b[i] == 1, b[i + 1] == 1);
    i += 2;
    let codec = if compressed {
        String::from_utf8(text(&b, &mut i)).unwrap()
    } else {
        String::new()
    };
    (compressed, block, codec)
}

/// `sluice run sort` writes compressed SequenceFiles when `-D` asks as Hadoop's users ask
/// (`SequenceFileOutputFormat`: RECORD and DefaultCodec by default, old key names too), and
/// Hadoop's `sort` reads them back into the records of sluice's uncompressed sort.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn hadoop_reads_sluices_compressed_sort_output() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("random");
    sluice(&[
        "gen",
        "randomwriter",
        "-q",
        "--maps",
        "2",
        "--bytes-per-map",
        "300000",
        "--output",
        path(&input),
    ]);
    let plain = d.join("plain");
    sluice(&[
        "run",
        "sort",
        "-q",
        "-r",
        "2",
        "--input",
        path(&input),
        "--output",
        path(&plain),
    ]);
    let expected: Vec<Vec<(Vec<u8>, Vec<u8>)>> = parts(&plain)
        .iter()
        .map(|p| canonical(read_seq(p).2))
        .collect();
    let gzip = "org.apache.hadoop.io.compress.GzipCodec";
    let default = "org.apache.hadoop.io.compress.DefaultCodec";
    let cases: [(&str, &[&str], bool, &str); 3] = [
        (
            "block-gzip",
            &[
                "mapreduce.output.fileoutputformat.compress=true",
                "mapreduce.output.fileoutputformat.compress.type=BLOCK",
                "mapreduce.output.fileoutputformat.compress.codec=org.apache.hadoop.io.compress.GzipCodec",
            ],
            true,
            gzip,
        ),
        ("record-default", &["mapred.output.compress=true"], false, default),
        (
            "record-bzip2-old-names",
            &[
                "mapred.output.compress=true",
                "mapred.output.compression.type=RECORD",
                "mapred.output.compression.codec=org.apache.hadoop.io.compress.BZip2Codec",
            ],
            false,
            "org.apache.hadoop.io.compress.BZip2Codec",
        ),
    ];
    for (name, defines, block, codec) in cases {
        let out = d.join(name);
        let mut args = vec!["run", "sort", "-q", "-r", "2"];
        for define in defines {
            args.extend(["-D", define]);
        }
        args.extend(["--input", path(&input), "--output", path(&out)]);
        sluice(&args);
        let files = parts(&out);
        assert_eq!(files.len(), 2, "{name}");
        for file in &files {
            assert_eq!(
                compression_of(file),
                (true, block, codec.to_string()),
                "{name}: {}",
                file.display()
            );
        }
        // Hadoop's sort of each compressed part file alone (one reducer, uncompressed
        // output) gives back that part's records.
        for (index, file) in files.iter().enumerate() {
            let back = d.join(format!("{name}-back-{index}"));
            hadoop(
                d,
                "sort",
                &[
                    "-r",
                    "1",
                    "-outKey",
                    BYTES,
                    "-outValue",
                    BYTES,
                    path(file),
                    path(&back),
                ],
            );
            let records: Vec<_> = parts(&back).iter().flat_map(|p| read_seq(p).2).collect();
            assert!(
                canonical(records) == expected[index],
                "{name}: Hadoop read other records from {}",
                file.display()
            );
        }
    }
}

/// HiBench's settings for Hadoop's WordCount over RandomTextWriter's output.
const SEQUENCE_FILE_FORMATS: [&str; 2] = [
    "mapreduce.job.inputformat.class=org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat",
    "mapreduce.job.outputformat.class=org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat",
];
const INT: &str = "org.apache.hadoop.io.IntWritable";

/// Word counts of the Text values of `input`'s SequenceFiles, computed here: words split as
/// Java's `StringTokenizer` splits them.
fn value_word_counts(input: &Path) -> std::collections::BTreeMap<Vec<u8>, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for file in parts(input) {
        let (key_class, value_class, records) = read_seq(&file);
        assert_eq!((key_class.as_str(), value_class.as_str()), (TEXT, TEXT));
        for (_, value) in records {
            for word in payload(TEXT, &value)
                .split(|b| b" \t\n\r\x0c".contains(b))
                .filter(|w| !w.is_empty())
            {
                *counts.entry(word.to_vec()).or_insert(0) += 1;
            }
        }
    }
    counts
}

/// sluice's word count, grep and inverted index read the Text values of SequenceFiles (found by
/// their first bytes), as Hadoop's mappers get them from `SequenceFileInputFormat`; values of
/// another class fail the job, naming it.
#[test]
fn text_jobs_read_the_values_of_sequence_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("text");
    sluice(&[
        "gen",
        "randomtextwriter",
        "-q",
        "--maps",
        "3",
        "--bytes-per-map",
        "100000",
        "--output",
        path(&input),
    ]);
    let expected = value_word_counts(&input);
    assert!(expected.len() > 100);

    let counted = d.join("counted");
    sluice(&[
        "run",
        "wordcount",
        "-q",
        "-r",
        "2",
        "--input",
        path(&input),
        "--output",
        path(&counted),
    ]);
    let mut got = std::collections::BTreeMap::new();
    for file in parts(&counted) {
        for line in fs::read_to_string(&file).unwrap().lines() {
            let (word, count) = line.split_once('\t').unwrap();
            got.insert(word.as_bytes().to_vec(), count.parse::<u64>().unwrap());
        }
    }
    assert!(got == expected, "word counts of the values differ");

    // Grep of every word: each match counted as the values' words are.
    let grepped = d.join("grepped");
    sluice(&[
        "run",
        "grep",
        "-q",
        "--input-format",
        "sequencefile",
        "-e",
        r"[^ \t\n\r\x0c]+",
        "--input",
        path(&input),
        "--output",
        path(&grepped),
    ]);
    let mut matches = std::collections::BTreeMap::new();
    for file in parts(&grepped) {
        for line in fs::read_to_string(&file).unwrap().lines() {
            let (count, word) = line.split_once('\t').unwrap();
            matches.insert(word.as_bytes().to_vec(), count.parse::<u64>().unwrap());
        }
    }
    assert!(matches == expected, "grep's counts of the values differ");

    // The index names the files whose values hold the word.
    let indexed = d.join("indexed");
    sluice(&[
        "run",
        "invertedindex",
        "-q",
        "--input",
        path(&input),
        "--output",
        path(&indexed),
    ]);
    let index: String = parts(&indexed)
        .iter()
        .map(|p| fs::read_to_string(p).unwrap())
        .collect();
    let word = std::str::from_utf8(expected.keys().next().unwrap()).unwrap();
    let entry = index
        .lines()
        .find(|l| l.split('\t').next() == Some(word))
        .unwrap();
    assert!(entry.contains("part-m-00000"), "{entry}");

    // Read as text when told so: the SequenceFile's bytes are words too, not the values'.
    let as_text = d.join("as-text");
    sluice(&[
        "run",
        "wordcount",
        "-q",
        "--input-format",
        "text",
        "--input",
        path(&input),
        "--output",
        path(&as_text),
    ]);
    assert!(fs::read(as_text.join("part-r-00000"))
        .unwrap()
        .windows(4)
        .any(|w| w == b"SEQ\x06"));

    // BytesWritable values: the job fails, naming the file and the class; no output.
    let bytes = d.join("bytes");
    sluice(&[
        "gen",
        "randomwriter",
        "-q",
        "--maps",
        "1",
        "--bytes-per-map",
        "10000",
        "--output",
        path(&bytes),
    ]);
    let refused = d.join("refused");
    let out = Command::new(SLUICE)
        .args([
            "run",
            "wordcount",
            "-q",
            "--input",
            path(&bytes),
            "--output",
        ])
        .arg(&refused)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(BYTES) && stderr.contains("part-m-00000"),
        "{stderr}"
    );
    assert!(!refused.exists());
}

/// HiBench's word count: Hadoop's `wordcount` example and `sluice run wordcount`, given the
/// same `-D` format classes, write the same SequenceFiles of Text words and IntWritable counts,
/// part file by part file; the counts are those of the values' words.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn hadoops_wordcount_and_sluices_agree_over_sequence_files() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("text");
    sluice(&[
        "gen",
        "randomtextwriter",
        "-q",
        "--maps",
        "2",
        "--bytes-per-map",
        "200000",
        "--output",
        path(&input),
    ]);
    let hadoop_out = d.join("hadoop");
    let sluice_out = d.join("sluice");
    let mut hadoop_args = vec!["-D", "mapreduce.job.reduces=3"];
    let mut sluice_args = vec!["run", "wordcount", "-q", "-r", "3"];
    for define in SEQUENCE_FILE_FORMATS {
        hadoop_args.extend(["-D", define]);
        sluice_args.extend(["-D", define]);
    }
    hadoop_args.extend([path(&input), path(&hadoop_out)]);
    sluice_args.extend(["--input", path(&input), "--output", path(&sluice_out)]);
    hadoop(d, "wordcount", &hadoop_args);
    sluice(&sluice_args);

    let (h, s) = (parts(&hadoop_out), parts(&sluice_out));
    assert_eq!(h.len(), 3);
    assert_eq!(
        h.iter().map(|p| p.file_name().unwrap()).collect::<Vec<_>>(),
        s.iter().map(|p| p.file_name().unwrap()).collect::<Vec<_>>()
    );
    let mut counts = std::collections::BTreeMap::new();
    for (hp, sp) in h.iter().zip(&s) {
        let (hk, hv, hr) = read_seq(hp);
        let (sk, sv, sr) = read_seq(sp);
        assert_eq!((sk.as_str(), sv.as_str()), (TEXT, INT), "{}", sp.display());
        assert_eq!((hk.as_str(), hv.as_str()), (TEXT, INT), "{}", hp.display());
        assert!(sr == hr, "records differ in {}", sp.display());
        for (word, count) in sr {
            let mut i = 0;
            let n = int(&count, &mut i);
            counts.insert(payload(TEXT, &word), u64::try_from(n).unwrap());
        }
    }
    assert!(
        counts == value_word_counts(&input),
        "counts differ from the values' words"
    );
}

/// sluice's compressed SequenceFile word counts (BLOCK and RECORD, as the `-D` keys ask) are
/// read by Hadoop (its `sort`, given the classes) into the records of the uncompressed ones.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn hadoop_reads_sluices_compressed_word_counts() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("text");
    sluice(&[
        "gen",
        "randomtextwriter",
        "-q",
        "--maps",
        "1",
        "--bytes-per-map",
        "100000",
        "--output",
        path(&input),
    ]);
    let plain = d.join("plain");
    sluice(&[
        "run",
        "wordcount",
        "-q",
        "--output-format",
        "sequencefile",
        "--input",
        path(&input),
        "--output",
        path(&plain),
    ]);
    let expected = read_seq(&plain.join("part-r-00000")).2;
    assert!(expected.len() > 100);
    for (name, kind, block) in [("block", "BLOCK", true), ("record", "RECORD", false)] {
        let out = d.join(name);
        let compress_type = format!("mapreduce.output.fileoutputformat.compress.type={kind}");
        let mut args = vec!["run", "wordcount", "-q"];
        for define in SEQUENCE_FILE_FORMATS.iter().copied().chain([
            "mapreduce.output.fileoutputformat.compress=true",
            compress_type.as_str(),
            "mapreduce.output.fileoutputformat.compress.codec=org.apache.hadoop.io.compress.GzipCodec",
        ]) {
            args.extend(["-D", define]);
        }
        args.extend(["--input", path(&input), "--output", path(&out)]);
        sluice(&args);
        let file = out.join("part-r-00000");
        assert_eq!(
            compression_of(&file),
            (
                true,
                block,
                "org.apache.hadoop.io.compress.GzipCodec".to_string()
            ),
            "{name}"
        );
        let back = d.join(format!("{name}-back"));
        hadoop(
            d,
            "sort",
            &[
                "-r",
                "1",
                "-outKey",
                TEXT,
                "-outValue",
                INT,
                path(&file),
                path(&back),
            ],
        );
        let records = read_seq(&back.join("part-r-00000")).2;
        assert!(records == expected, "{name}: Hadoop read other records");
    }
}

/// `${name}` in `-D` values is substituted as Hadoop's `Configuration.get` does, for every
/// setting a built-in job reads (here the number of reducers and output compression), not
/// only for the store settings: both systems write the same part files, named alike and
/// holding the same words (Hadoop's `-D` reaches its jobs the same way through `hadoop jar`).
/// Panics unless both output directories hold the part files of 3 reducers compressed with
/// `DefaultCodec` (`.deflate`), each the same text once inflated.
fn assert_same_three_deflated_parts(hadoop_out: &Path, sluice_out: &Path) {
    let names = |dir: &Path| -> Vec<String> {
        parts(dir)
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(hadoop_out),
        [
            "part-r-00000.deflate",
            "part-r-00001.deflate",
            "part-r-00002.deflate"
        ]
    );
    assert_eq!(names(sluice_out), names(hadoop_out));
    let inflate = |file: &Path| {
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::ZlibDecoder::new(fs::File::open(file).unwrap()),
            &mut text,
        )
        .unwrap();
        text
    };
    for (h, s) in parts(hadoop_out).iter().zip(parts(sluice_out)) {
        assert_eq!(inflate(&s), inflate(h), "{}", s.display());
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn variables_in_job_settings_are_substituted_as_hadoop_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("words");
    fs::create_dir(&input).unwrap();
    let text: String = (0..2000)
        .map(|i| format!("w{} x{}\n", i % 97, i % 13))
        .collect();
    fs::write(input.join("a.txt"), text).unwrap();
    let settings = [
        "-D",
        "job.width=3",
        "-D",
        "mapreduce.job.reduces=${job.width}",
        "-D",
        "mapreduce.output.fileoutputformat.compress=${env.SLUICE_TEST_COMPRESS:-false}",
    ];
    let mut hadoop_args: Vec<&str> = settings.to_vec();
    let hadoop_out = d.join("hadoop-out");
    hadoop_args.extend([path(&input), path(&hadoop_out)]);
    // Both systems inherit this test's environment: the variable makes both outputs
    // compressed (its name is this test's alone).
    std::env::set_var("SLUICE_TEST_COMPRESS", "true");
    let log = hadoop(d, "wordcount", &hadoop_args);
    let sluice_out = d.join("sluice-out");
    let jar = "/opt/hadoop/share/hadoop/mapreduce/hadoop-mapreduce-examples-3.4.2.jar";
    let mut sluice_args = vec!["jar", jar, "wordcount"];
    sluice_args.extend(settings);
    sluice_args.extend([path(&input), path(&sluice_out)]);
    let sluice_log = sluice(&sluice_args);
    assert_record_counters_equal(&log, &sluice_log);
    assert_same_three_deflated_parts(&hadoop_out, &sluice_out);
}

/// The examples read the site's `mapred-site.xml` beneath their `-D` settings: a site that
/// sets the reduce count (here by its Hadoop 1 name) and compresses output changes what
/// `wordcount` writes, in Hadoop and through `sluice jar` alike; a `-D` setting still wins.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn the_examples_read_the_sites_mapred_site_xml_beneath_their_settings() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("words");
    fs::create_dir(&input).unwrap();
    let text: String = (0..2000)
        .map(|i| format!("w{} x{}\n", i % 89, i % 11))
        .collect();
    fs::write(input.join("a.txt"), text).unwrap();
    let conf = d.join("conf");
    fs::create_dir(&conf).unwrap();
    fs::write(
        conf.join("mapred-site.xml"),
        "<?xml version=\"1.0\"?>\n<configuration>\n\
         <property><name>mapred.reduce.tasks</name><value>3</value></property>\n\
         <property><name>mapreduce.output.fileoutputformat.compress</name>\
         <value>true</value></property>\n\
         <property><name>mapreduce.output.fileoutputformat.compress.codec</name>\
         <value>org.apache.hadoop.io.compress.GzipCodec</value></property>\n\
         </configuration>\n",
    )
    .unwrap();
    let settings = [
        "-D",
        "mapreduce.output.fileoutputformat.compress.codec=org.apache.hadoop.io.compress.DefaultCodec",
    ];
    let hadoop_out = d.join("hadoop-out");
    let mut hadoop_args: Vec<&str> = settings.to_vec();
    hadoop_args.extend([path(&input), path(&hadoop_out)]);
    let (success, log) = try_hadoop_with_site(d, Some(&conf), "wordcount", &hadoop_args);
    assert!(success, "Hadoop wordcount failed:\n{log}");
    let sluice_out = d.join("sluice-out");
    let jar = "/opt/hadoop/share/hadoop/mapreduce/hadoop-mapreduce-examples-3.4.2.jar";
    let out = Command::new(SLUICE)
        .args(["jar", jar, "wordcount"])
        .args(settings)
        .args([path(&input), path(&sluice_out)])
        .env("HADOOP_CONF_DIR", &conf)
        .output()
        .unwrap();
    let sluice_log = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "sluice jar wordcount failed: {sluice_log}"
    );
    assert_record_counters_equal(&log, &sluice_log);
    assert_same_three_deflated_parts(&hadoop_out, &sluice_out);

    // A site file that does not parse: the program fails, naming it.
    fs::write(conf.join("mapred-site.xml"), "<configuration><property>").unwrap();
    let out = Command::new(SLUICE)
        .args([
            "jar",
            jar,
            "wordcount",
            path(&input),
            path(&d.join("never")),
        ])
        .env("HADOOP_CONF_DIR", &conf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("mapred-site.xml"), "{stderr}");
    assert!(!d.join("never").exists());
}

/// The examples jar's wordcount on an input directory holding a directory: with
/// `...input.dir.nonrecursive.ignore.subdirs=true` Hadoop counts the files directly in it
/// only, and so does sluice; with `...input.dir.recursive=true` both count every file.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn wordcount_leaves_out_or_reads_nested_directories_as_hadoop_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in");
    fs::create_dir_all(input.join("sub/deeper")).unwrap();
    fs::write(input.join("top.txt"), "top a\n").unwrap();
    fs::write(input.join("sub/b.txt"), "sub b\n").unwrap();
    fs::write(input.join("sub/deeper/c.txt"), "deep c\n").unwrap();
    let counts = |out: &Path| -> Vec<String> {
        let mut lines: Vec<String> = parts(out)
            .iter()
            .flat_map(|p| {
                fs::read_to_string(p)
                    .unwrap()
                    .lines()
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect();
        lines.sort();
        lines
    };
    for (key, expected) in [
        (
            "mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs=true",
            &["a\t1", "top\t1"][..],
        ),
        (
            "mapreduce.input.fileinputformat.input.dir.recursive=true",
            &["a\t1", "b\t1", "c\t1", "deep\t1", "sub\t1", "top\t1"],
        ),
    ] {
        let name = key.split('.').next_back().unwrap();
        let (by_hadoop, by_sluice) = (
            d.join(format!("hadoop-{name}")),
            d.join(format!("sluice-{name}")),
        );
        hadoop(d, "wordcount", &["-D", key, path(&input), path(&by_hadoop)]);
        let out = Command::new(SLUICE)
            .args([
                "jar",
                "hadoop-mapreduce-examples-3.4.2.jar",
                "wordcount",
                "-D",
                key,
            ])
            .args([path(&input), path(&by_sluice)])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(counts(&by_hadoop), expected, "Hadoop with {key}");
        assert_eq!(counts(&by_sluice), expected, "sluice with {key}");
    }
}

/// The examples jar's grep takes Java's regular expressions, and matches lines as Java
/// strings: for each pattern, sluice counts the matches Java's `Matcher.find` finds
/// (`tests/hadoop/RegexFind.java`, Hadoop's `RegexMapper` loop) in lines of many scripts, odd
/// white space and bytes that are not UTF-8.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Java 17 (and the Hadoop jars): make hadoop; cargo test --features test-hadoop"
)]
fn grep_matches_java_regular_expressions_as_hadoop_does() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut input: Vec<u8> = Vec::new();
    input.extend_from_slice("café naïve ٣٤ 123 １２ ABC abc ÉCOLE école K k\n".as_bytes());
    input.extend_from_slice("foo\u{a0}bar x\u{3000}y mid\u{2028}line nel\u{85}after\n".as_bytes());
    input.extend_from_slice("ß SS ss ẞ a_b a-b aa aaa tab\there\x0bvt\x0cff\n".as_bytes());
    input.extend_from_slice(b"caf\xe9 na\xefve caf\xe9\n\xff\xfe word\n");
    let in_dir = d.join("in");
    fs::create_dir(&in_dir).unwrap();
    fs::write(in_dir.join("lines.txt"), &input).unwrap();
    let patterns = [
        "\\w+",
        "\\p{Alpha}+",
        "\\d+",
        "\\s",
        "\\S+",
        "\\b\\w",
        "\\p{Upper}",
        "mid.line",
        "nel.after",
        "\\v",
        "\\h+",
        "[[:alpha:]]+",
        "[^ ]+",
        "caf.",
        "\\p{L}+",
        "\\p{IsLatin}+",
        "[a-z&&[^aeiou]]+",
        "(?<w>[a-z]+)-",
        "a*",
        "\\Qa-\\E.",
        "\\u00e9",
        "(?i)ecole",
        "[\\w-]+",
        "\\p{Punct}",
        "(?s)mid.line",
    ];
    let list = d.join("patterns");
    fs::write(&list, patterns.join("\n") + "\n").unwrap();
    let java = Command::new("java")
        .arg(root().join("tests/hadoop/RegexFind.java"))
        .arg(&list)
        .arg(in_dir.join("lines.txt"))
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(
        java.status.success(),
        "{}",
        String::from_utf8_lossy(&java.stderr)
    );
    let mut expected: Vec<BTreeMap<String, u64>> = vec![BTreeMap::new(); patterns.len()];
    for line in String::from_utf8(java.stdout).unwrap().lines() {
        let (n, found) = line.split_once('\t').unwrap();
        *expected[n.parse::<usize>().unwrap()]
            .entry(found.to_string())
            .or_default() += 1;
    }
    let mut differences = Vec::new();
    for (n, pattern) in patterns.iter().enumerate() {
        let out = d.join(format!("out-{n}"));
        let run = Command::new(SLUICE)
            .args(["jar", "hadoop-mapreduce-examples-3.4.2.jar", "grep"])
            .args([path(&in_dir), path(&out), pattern])
            .output()
            .unwrap();
        assert!(
            run.status.success(),
            "grep {pattern}: {}",
            String::from_utf8_lossy(&run.stderr)
        );
        let mut counted: BTreeMap<String, u64> = BTreeMap::new();
        for line in fs::read_to_string(out.join("part-r-00000"))
            .unwrap()
            .lines()
        {
            let (count, found) = line.split_once('\t').unwrap();
            counted.insert(found.to_string(), count.parse().unwrap());
        }
        if counted != expected[n] {
            differences.push(format!(
                "{pattern}:\n  sluice: {counted:?}\n  Java:   {:?}",
                expected[n]
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    // What sluice cannot match as Java does is refused before the job, as a bad argument.
    let refused = Command::new(SLUICE)
        .args(["jar", "hadoop-mapreduce-examples-3.4.2.jar", "grep"])
        .args([path(&in_dir), path(&d.join("never")), "a++a"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(255));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("possessive quantifier"));
    assert!(!d.join("never").exists());
}

/// The examples jar's wordcount and terasort take each argument as one path
/// (`FileInputFormat.addInputPath`): a directory named `a,b` is read, not `a` and `b`. (Its
/// grep and sort split at commas; that is compared with the other cases.)
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn wordcount_and_terasort_take_a_comma_in_a_path_as_hadoop_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for (name, text) in [("a,b", "comma\n"), ("a", "alpha\n"), ("b", "beta\n")] {
        fs::create_dir(d.join(name)).unwrap();
        fs::write(d.join(name).join("in.txt"), text).unwrap();
    }
    let input = d.join("a,b");
    let (h_out, s_out) = (d.join("h-wc"), d.join("s-wc"));
    hadoop(d, "wordcount", &[path(&input), path(&h_out)]);
    let jar = "hadoop-mapreduce-examples.jar";
    sluice(&["jar", jar, "wordcount", path(&input), path(&s_out)]);
    let h = fs::read_to_string(h_out.join("part-r-00000")).unwrap();
    assert_eq!(h, "comma\t1\n");
    assert_eq!(fs::read_to_string(s_out.join("part-r-00000")).unwrap(), h);

    // TeraSort: 100-byte rows, ten of them in `x,y`, one in `x`.
    let rows = |n: u8| -> Vec<u8> {
        (0..n)
            .flat_map(|i| {
                let mut row = vec![b'A' + (9 - i % 10); 10];
                row.extend(std::iter::repeat_n(b'.', 88));
                row.extend(b"\r\n");
                row
            })
            .collect()
    };
    for (name, n) in [("x,y", 10), ("x", 1)] {
        fs::create_dir(d.join(name)).unwrap();
        fs::write(d.join(name).join("rows"), rows(n)).unwrap();
    }
    let input = d.join("x,y");
    let (h_out, s_out) = (d.join("h-ts"), d.join("s-ts"));
    hadoop(d, "terasort", &[path(&input), path(&h_out)]);
    sluice(&["jar", jar, "terasort", path(&input), path(&s_out)]);
    let h = fs::read(h_out.join("part-r-00000")).unwrap();
    assert_eq!(h.len(), 1000, "Hadoop sorted the ten rows of x,y");
    assert_eq!(fs::read(s_out.join("part-r-00000")).unwrap(), h);
}

/// The examples jar's generic `-conf FILE`: its properties under every `-D`, wherever the
/// `-D` stands (three reduces from the file, two where a `-D` says so), and `-jt local`.
#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn the_examples_jar_reads_conf_files_as_hadoop_does() {
    require_hadoop();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let input = d.join("in.txt");
    let words: String = (0..200)
        .map(|i| format!("w{} x{}\n", i % 37, i % 11))
        .collect();
    fs::write(&input, words).unwrap();
    let conf = d.join("job.xml");
    fs::write(
        &conf,
        "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>mapreduce.job.reduces\
         </name><value>3</value></property>\n</configuration>\n",
    )
    .unwrap();
    let jar = "hadoop-mapreduce-examples.jar";
    for (name, extra) in [
        ("from-file", &[][..]),
        ("d-after", &["-D", "mapreduce.job.reduces=2"][..]),
        ("jt-local", &["-jt", "local"][..]),
    ] {
        let (h_out, s_out) = (d.join(format!("h-{name}")), d.join(format!("s-{name}")));
        let mut args = vec!["-conf", path(&conf)];
        args.extend_from_slice(extra);
        hadoop(
            d,
            "wordcount",
            &[&args[..], &[path(&input), path(&h_out)]].concat(),
        );
        sluice(
            &[
                &["jar", jar, "wordcount"][..],
                &args,
                &[path(&input), path(&s_out)],
            ]
            .concat(),
        );
        let (h_parts, s_parts) = (parts(&h_out), parts(&s_out));
        assert_eq!(
            h_parts.len(),
            if name == "d-after" { 2 } else { 3 },
            "{name}"
        );
        assert_eq!(s_parts.len(), h_parts.len(), "{name}");
        for (h, s) in h_parts.iter().zip(&s_parts) {
            assert_eq!(
                fs::read(s).unwrap(),
                fs::read(h).unwrap(),
                "{name}: {}",
                s.display()
            );
        }
    }
}
