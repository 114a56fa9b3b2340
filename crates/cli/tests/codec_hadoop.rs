//! Compressed part files between sluice and Apache Hadoop 3.4.2 (local mode, the jars that
//! `make hadoop` puts in `target/hadoop/lib`): each reads what the other writes.
//!
//! 1. sluice writes part files with every codec Hadoop runs without its native library
//!    (`GzipCodec`, `BZip2Codec`, `DefaultCodec`, `Lz4Codec`, `SnappyCodec`), from a streaming
//!    job and from `sluice run sort`; Hadoop runs a job whose input is that output directory,
//!    and must see the original lines.
//! 2. Hadoop writes compressed part files with the same codecs; sluice runs a job on them, and
//!    must see the original lines.
//! 3. Without Hadoop: `ZStandardCodec`, which Hadoop cannot run without libhadoop, is decoded by
//!    the `zstd` tool; gzip, bzip2 and zlib output by Python's modules.
//!
//! All Hadoop jobs run in one JVM (`tests/hadoop/StreamingBatch.java`).
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// Codec class (under `org.apache.hadoop.io.compress.`) and its part file extension.
const CODECS: [(&str, &str); 5] = [
    ("GzipCodec", ".gz"),
    ("BZip2Codec", ".bz2"),
    ("DefaultCodec", ".deflate"),
    ("Lz4Codec", ".lz4"),
    ("SnappyCodec", ".snappy"),
];

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
    if lib.join(".complete").exists() && lib.join("lz4-java-1.7.1.jar").exists() {
        return;
    }
    panic!(
        "the Hadoop jars are missing from {}: run `make hadoop` (or tests/hadoop/fetch.sh); the \
         tests that need Hadoop are ignored without the test-hadoop feature",
        lib.display()
    );
}

/// About 600 KB of lines with distinct keys in scrambled order (so a `cat` reducer's output
/// is fully determined), enough for several of Hadoop's 256 KiB lz4 and snappy blocks.
/// Returns the input and the lines sorted as one reducer writes them.
fn input() -> (Vec<u8>, Vec<u8>) {
    let n = 30_000;
    let mut lines: Vec<String> = (0..n)
        .map(|i| {
            let k = (i * 7919) % n;
            format!("key{k:05}\t{}{}\n", "value ".repeat(k % 5), k * 31 % 1000)
        })
        .collect();
    let input = lines.concat().into_bytes();
    lines.sort();
    (input, lines.concat().into_bytes())
}

fn compress_args(class: &str) -> Vec<String> {
    vec![
        "-D".into(),
        "mapreduce.output.fileoutputformat.compress=true".into(),
        "-D".into(),
        format!("mapreduce.output.fileoutputformat.compress.codec=org.apache.hadoop.io.compress.{class}"),
    ]
}

fn job_args(input: &Path, output: &Path, reducers: &str) -> Vec<String> {
    [
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        "cat",
        "-reducer",
        "cat",
        "-numReduceTasks",
        reducers,
    ]
    .map(String::from)
    .to_vec()
}

/// Runs `sluice streaming ARGS`; panics with its stderr unless it succeeds.
fn sluice(args: &[String]) {
    let out = Command::new(SLUICE)
        .arg("streaming")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "sluice streaming {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The visible file names of an output directory, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    names
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop (Java 17): make hadoop; cargo test --features test-hadoop"
)]
fn hadoop_and_sluice_read_each_others_compressed_output() {
    require_hadoop();
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let (data, sorted) = input();
    let input = dir.join("input.txt");
    fs::write(&input, &data).unwrap();

    // sluice writes, with two reducers: a streaming job, and a built-in job (`run sort`).
    for (class, ext) in CODECS {
        let mut args = compress_args(class);
        args.extend(job_args(&input, &dir.join(format!("sluice-{class}")), "2"));
        sluice(&args);
        let native = dir.join(format!("sluice-native-{class}"));
        let out = Command::new(SLUICE)
            .args(["run", "sort", "-q", "-r", "2", "--input"])
            .arg(&input)
            .arg("--output")
            .arg(&native)
            .args(compress_args(class))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            names(&native),
            [
                "_SUCCESS",
                &format!("part-r-00000{ext}"),
                &format!("part-r-00001{ext}")
            ]
        );
    }

    // Hadoop reads sluice's files, and writes its own, in one JVM.
    let cwd = dir.join("cwd");
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join(".streaming-batch-cwd"), "").unwrap();
    let mut manifest = String::new();
    for (class, _) in CODECS {
        let reading = job_args(
            &dir.join(format!("sluice-{class}")),
            &dir.join(format!("hadoop-read-{class}")),
            "1",
        );
        let reading_native = job_args(
            &dir.join(format!("sluice-native-{class}")),
            &dir.join(format!("hadoop-read-native-{class}")),
            "1",
        );
        let mut writing = compress_args(class);
        writing.extend(job_args(&input, &dir.join(format!("hadoop-{class}")), "2"));
        for (name, args) in [
            ("read", reading),
            ("read-native", reading_native),
            ("write", writing),
        ] {
            let tmp = dir.join("hadoop-tmp").join(format!("{name}-{class}"));
            writeln!(manifest, "case {name}-{class}").unwrap();
            writeln!(
                manifest,
                "result {}",
                dir.join(format!("log-{name}-{class}")).display()
            )
            .unwrap();
            for a in [
                "-D",
                "mapreduce.framework.name=local",
                "-D",
                "fs.defaultFS=file:///",
                "-D",
            ] {
                writeln!(manifest, "arg {a}").unwrap();
            }
            writeln!(manifest, "arg hadoop.tmp.dir={}", tmp.display()).unwrap();
            for a in args {
                writeln!(manifest, "arg {a}").unwrap();
            }
            writeln!(manifest, "end").unwrap();
        }
    }
    fs::write(dir.join("manifest"), manifest).unwrap();
    let driver = root().join("tests/hadoop");
    let out = Command::new("java")
        .arg("-Djava.security.manager=allow")
        .arg("-cp")
        .arg(format!(
            "{}:{}/*",
            driver.display(),
            root().join("target/hadoop/lib").display()
        ))
        .arg(driver.join("StreamingBatch.java"))
        .arg(dir.join("manifest"))
        .current_dir(&cwd)
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    // Its own output is only the JVM's warnings about the driver's exit guard.
    assert!(
        out.status.success(),
        "the Hadoop driver failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    for (class, ext) in CODECS {
        for name in ["read", "read-native", "write"] {
            let log = dir.join(format!("log-{name}-{class}"));
            let exit = fs::read_to_string(log.join("exit")).unwrap();
            assert_eq!(
                exit.trim(),
                "0",
                "Hadoop's {name} job with {class} failed:\n{}",
                fs::read_to_string(log.join("log")).unwrap_or_default()
            );
        }
        // Hadoop decoded sluice's files to the input's lines.
        let read = fs::read(dir.join(format!("hadoop-read-{class}/part-00000"))).unwrap();
        assert!(read == sorted, "Hadoop read sluice's {class} files wrongly");
        let read = fs::read(dir.join(format!("hadoop-read-native-{class}/part-00000"))).unwrap();
        assert!(
            read == sorted,
            "Hadoop read sluice's sort's {class} files wrongly"
        );

        // sluice decodes Hadoop's files to the input's lines.
        let written = dir.join(format!("hadoop-{class}"));
        assert_eq!(
            names(&written),
            [
                "_SUCCESS",
                &format!("part-00000{ext}"),
                &format!("part-00001{ext}")
            ]
        );
        let back = dir.join(format!("sluice-read-{class}"));
        sluice(&job_args(&written, &back, "1"));
        let read = fs::read(back.join("part-00000")).unwrap();
        assert!(read == sorted, "sluice read Hadoop's {class} files wrongly");
    }
}

/// Decodes `path` with an independent tool (`make prereqs` checks that it is installed).
fn decode_with(tool: &str, args: &[&str]) -> Vec<u8> {
    let out = Command::new(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} (make prereqs says what to install): {e}"));
    assert!(
        out.status.success(),
        "{tool} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn independent_decoders_read_sluices_files() {
    let scratch = tempfile::tempdir().unwrap();
    let dir = scratch.path();
    let (data, _) = input();
    let input = dir.join("input.txt");
    fs::write(&input, &data).unwrap();
    let python = "import sys, gzip, bz2, zlib\n\
                  d = open(sys.argv[2], 'rb').read()\n\
                  f = {'gz': gzip.decompress, 'bz2': bz2.decompress, 'deflate': zlib.decompress}\n\
                  sys.stdout.buffer.write(f[sys.argv[1]](d))\n";
    let checks = [
        ("ZStandardCodec", "zst"),
        ("GzipCodec", "gz"),
        ("BZip2Codec", "bz2"),
        ("DeflateCodec", "deflate"),
    ];
    for (class, ext) in checks {
        // Map-only: the one part file holds the input's lines as they were.
        let output = dir.join(class);
        let mut args = compress_args(class);
        args.extend(job_args(&input, &output, "0"));
        sluice(&args);
        assert_eq!(
            names(&output),
            ["_SUCCESS".to_string(), format!("part-00000.{ext}")]
        );
        let part = output.join(format!("part-00000.{ext}"));
        let part = part.to_str().unwrap();
        let decoded = if ext == "zst" {
            decode_with("zstd", &["-dc", part])
        } else {
            decode_with("python3", &["-c", python, ext, part])
        };
        assert!(
            decoded == data,
            "{class}: the decoded file differs from the input"
        );
    }
}
