//! SequenceFiles between sluice and Apache Hadoop 3.4.2 (`tests/hadoop/SeqFiles.java`, run on
//! the jars `make hadoop` puts in `target/hadoop/lib`), both ways:
//!
//! * Hadoop's writer makes files with every codec it runs without libhadoop (`DefaultCodec`,
//!   `GzipCodec`, `BZip2Codec`, `SnappyCodec`, `Lz4Codec`), record- and block-compressed, and
//!   files of the other `Writable` types; sluice reads every record, printed as Java's
//!   `toString()`, exactly as Hadoop's reader prints them, and the records of every split as
//!   Hadoop's `SequenceFileRecordReader` gives them.
//! * sluice's writer makes the same kinds of files; Hadoop's reader must print the records
//!   sluice was given (built here as text, independently of both readers), and give each split
//!   the records sluice's reader gives it.
//!
//! `ZStandardCodec` is not among them: Hadoop runs it only through libhadoop, which the jars
//! do not carry. Its buffers are zstd frames made and read by the `zstd` library; the unit
//! tests round-trip them.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_hadoop::writable;
use sluice_hadoop::writable_type::WritableType;
use sluice_io::seqfile::{
    CompressionKind, SeqCodec, SeqFileReader, SeqFileWriter, SeqWriteOptions,
};
use sluice_io::{FileStatus, LocalStorage, Location, Split, StoredInput};

/// Splits of this many bytes: each file gets several, and most hold sync points.
const SPLIT_SIZE: u64 = 30_000;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Panics with the way to get them unless the jars are there (a test that needs Hadoop never
/// passes without it; without the `test-hadoop` feature it is ignored, visibly).
fn require_hadoop() -> PathBuf {
    let lib = root().join("target/hadoop/lib");
    assert!(
        lib.join(".complete").exists() && lib.join("lz4-java-1.7.1.jar").exists(),
        "the Hadoop jars are missing from {}: run `make hadoop` (or tests/hadoop/fetch.sh)",
        lib.display()
    );
    lib
}

/// The records of a split (the whole file with `len` `u64::MAX`) as Hadoop prints them:
/// `key TAB value NEWLINE`, each the Java `toString()` of its `Writable`.
fn sluice_text(path: &Path, start: u64, len: u64) -> Vec<u8> {
    let file_len = fs::metadata(path).unwrap().len();
    let input = StoredInput::new(FileStatus::file(Location::from_path(path), file_len));
    let split = Split {
        file: 0,
        start,
        len,
    };
    let mut r = SeqFileReader::open_in(&LocalStorage::new(), &input, &split).unwrap();
    let key_type = WritableType::from_class_name(&r.header().key_class).unwrap();
    let value_type = WritableType::from_class_name(&r.header().value_class).unwrap();
    let mut out = Vec::new();
    while let Some((_, k, v)) = r.next_record().unwrap() {
        key_type.to_text(k, &mut out).unwrap();
        out.push(b'\t');
        value_type.to_text(v, &mut out).unwrap();
        out.push(b'\n');
    }
    out
}

/// What `SeqFiles.java` writes for splits of [`SPLIT_SIZE`], from sluice's reader.
fn sluice_splits(path: &Path) -> Vec<u8> {
    let len = fs::metadata(path).unwrap().len();
    let mut out = Vec::new();
    let mut start = 0;
    let mut k = 0;
    while start < len {
        out.extend(format!("split {k}\n").bytes());
        out.extend(sluice_text(path, start, SPLIT_SIZE.min(len - start)));
        start += SPLIT_SIZE;
        k += 1;
    }
    out
}

fn text(s: &str) -> Vec<u8> {
    let mut out = Vec::new();
    writable::write_text(&mut out, s.as_bytes()).unwrap();
    out
}

/// Serialised keys and values.
type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// sluice's files: (name, options, records, the lines Java must print).
fn sluice_files() -> Vec<(String, SeqWriteOptions, Records, String)> {
    let t = "org.apache.hadoop.io.Text";
    let n = 6000;
    let text_records: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
        .map(|i| {
            let k = i * 7919 % n;
            (
                text(&format!("key{k}")),
                text(&format!("{}\u{e9}{}", "w".repeat(i % 41), k)),
            )
        })
        .collect();
    let text_lines: String = (0..n)
        .map(|i| {
            let k = i * 7919 % n;
            format!("key{k}\t{}\u{e9}{}\n", "w".repeat(i % 41), k)
        })
        .collect();
    let mut files = Vec::new();
    let mut kinds = vec![("none".to_string(), CompressionKind::None, None)];
    for codec in [
        SeqCodec::Default,
        SeqCodec::Gzip,
        SeqCodec::Bzip2,
        SeqCodec::Snappy,
        SeqCodec::Lz4,
    ] {
        for kind in [CompressionKind::Record, CompressionKind::Block] {
            kinds.push((format!("{}-{kind:?}", codec.name()), kind, Some(codec)));
        }
    }
    for (name, kind, codec) in kinds {
        let mut o = SeqWriteOptions::new(t, t);
        o.compression = kind;
        o.codec = codec;
        o.block_size = 20_000;
        o.metadata = vec![(b"written-by".to_vec(), b"sluice".to_vec())];
        files.push((name, o, text_records.clone(), text_lines.clone()));
    }
    // Other Writable types: IntWritable keys, LongWritable, BytesWritable and NullWritable
    // values, block-compressed.
    let ints: Vec<(Vec<u8>, Vec<u8>)> = (0..2000i64)
        .map(|i| {
            let mut bytes = (0..(i % 5) as u8).map(|b| b * 51).collect::<Vec<u8>>();
            let mut value = (bytes.len() as u32).to_be_bytes().to_vec();
            value.append(&mut bytes);
            (((i * 37 - 900) as i32).to_be_bytes().to_vec(), value)
        })
        .collect();
    let int_lines: String = (0..2000i64)
        .map(|i| {
            let hex: Vec<String> = (0..(i % 5) as u8)
                .map(|b| format!("{:02x}", b * 51))
                .collect();
            format!("{}\t{}\n", i * 37 - 900, hex.join(" "))
        })
        .collect();
    let mut o = SeqWriteOptions::new(
        "org.apache.hadoop.io.IntWritable",
        "org.apache.hadoop.io.BytesWritable",
    );
    o.compression = CompressionKind::Block;
    o.block_size = 5000;
    files.push(("int-bytes".into(), o, ints, int_lines));
    let longs: Vec<(Vec<u8>, Vec<u8>)> = (0..2000i64)
        .map(|i| ((i * i * 1_000_003 - 7).to_be_bytes().to_vec(), Vec::new()))
        .collect();
    let long_lines: String = (0..2000i64)
        .map(|i| format!("{}\t(null)\n", i * i * 1_000_003 - 7))
        .collect();
    let o = SeqWriteOptions::new(
        "org.apache.hadoop.io.LongWritable",
        "org.apache.hadoop.io.NullWritable",
    );
    files.push(("long-null".into(), o, longs, long_lines));
    files
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop: make hadoop, Java 17; cargo test --features test-hadoop"
)]
fn hadoop_and_sluice_read_each_others_sequence_files() {
    let lib = require_hadoop();
    let scratch = tempfile::tempdir().unwrap();
    let hadoop_dir = scratch.path().join("hadoop");
    let sluice_dir = scratch.path().join("sluice");
    fs::create_dir_all(&sluice_dir).unwrap();
    let files = sluice_files();
    for (name, options, records, _) in &files {
        let out = fs::File::create(sluice_dir.join(format!("{name}.seq"))).unwrap();
        let mut w = SeqFileWriter::new(std::io::BufWriter::new(out), options.clone()).unwrap();
        for (k, v) in records {
            w.append(k, v).unwrap();
        }
        std::io::Write::flush(&mut w.finish().unwrap()).unwrap();
    }

    let driver = root().join("tests/hadoop");
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{}:{}/*", driver.display(), lib.display()))
        .arg(driver.join("SeqFiles.java"))
        .arg(&hadoop_dir)
        .arg(&sluice_dir)
        .arg(SPLIT_SIZE.to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(
        out.status.success(),
        "SeqFiles.java failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // Hadoop reads sluice's files as the records sluice was given, split for split as sluice.
    for (name, _, _, lines) in &files {
        let path = sluice_dir.join(format!("{name}.seq"));
        let hadoop = fs::read(sluice_dir.join(format!("{name}.seq.txt"))).unwrap();
        assert!(
            hadoop == lines.as_bytes(),
            "Hadoop read sluice's {name} wrongly"
        );
        let splits = fs::read(sluice_dir.join(format!("{name}.seq.splits"))).unwrap();
        assert!(
            splits == sluice_splits(&path),
            "the splits of sluice's {name} differ"
        );
    }

    // sluice reads Hadoop's files as Hadoop does, whole and split by split.
    let mut names: Vec<PathBuf> = fs::read_dir(&hadoop_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "seq"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 18, "{names:?}");
    for path in names {
        let with = |ext: &str| PathBuf::from(format!("{}.{ext}", path.display()));
        let whole = fs::read(with("txt")).unwrap();
        assert!(
            sluice_text(&path, 0, u64::MAX) == whole,
            "sluice read Hadoop's {} wrongly",
            path.display()
        );
        let splits = fs::read(with("splits")).unwrap();
        assert!(
            sluice_splits(&path) == splits,
            "sluice split Hadoop's {} differently",
            path.display()
        );
    }
}
