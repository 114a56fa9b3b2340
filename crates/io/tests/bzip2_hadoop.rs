//! Splits of bzip2 files read by sluice as Apache Hadoop 3.4 reads them: every split's records
//! and keys from sluice's `LineReader` equal those of Hadoop's own old-API `LineRecordReader`
//! (`tests/hadoop/LineSplits.java`, run on the jars `make hadoop` puts in `target/hadoop/lib`).
//!
//! The files hold lines ended by `\n`, `\r\n` and lone `\r`, empty lines, lines longer than a
//! block, a last line without a terminator, and several streams one after another. They are
//! cut into consecutive splits of several sizes, and into splits that start and end a byte
//! before, at and after each block's marker, where the off-by-ones are.
#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_io::{FileStatus, LineReader, LocalStorage, Location, Split, StoredInput};

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
        lib.join(".complete").exists(),
        "the Hadoop jars are missing from {}: run `make hadoop` (or tests/hadoop/fetch.sh)",
        lib.display()
    );
    lib
}

/// A small deterministic generator (64-bit LCG).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// About `bytes` of numbered lines with every kind of terminator, empty lines and a few
/// lines longer than a 100 kB block.
fn text(rng: &mut Lcg, bytes: usize) -> Vec<u8> {
    let words: [&[u8]; 6] = [b"map", b"reduce", b"split", b"block", b"bzip2", b"\txy"];
    let mut out = Vec::new();
    let mut n = 0;
    while out.len() < bytes {
        write!(out, "{n}").unwrap();
        match rng.next(3_000) {
            0 => {
                for _ in 0..100_000 + rng.next(150_000) {
                    out.push(b'a' + rng.next(26) as u8);
                }
            }
            // An empty line after this one's number.
            1..=150 => out.push(b'\n'),
            _ => {
                for _ in 0..rng.next(15) {
                    out.push(b' ');
                    out.extend_from_slice(words[rng.next(6) as usize]);
                    // Random letters, so that the blocks stay large once compressed.
                    for _ in 0..rng.next(8) {
                        out.push(b'a' + rng.next(26) as u8);
                    }
                }
            }
        }
        out.extend_from_slice(match rng.next(20) {
            0..=1 => b"\r\n",
            2 => b"\r",
            _ => b"\n",
        });
        n += 1;
    }
    out
}

fn compress(data: &[u8], level: u32) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The bytes holding the first bit of each block marker (0x314159265359 at any bit offset),
/// found bit by bit.
fn marker_bytes(file: &[u8]) -> Vec<u64> {
    let bit = |i: u64| (file[(i / 8) as usize] >> (7 - i % 8)) & 1;
    let total = file.len() as u64 * 8;
    let mut found = Vec::new();
    let mut window = 0u64;
    for i in 0..total {
        window = ((window << 1) | u64::from(bit(i))) & ((1 << 48) - 1);
        if i >= 47 && window == 0x3141_5926_5359 {
            found.push((i - 47) / 8);
        }
    }
    found
}

/// The splits to read: consecutive ones of several sizes, and ones starting and ending around
/// each marker.
fn splits(len: u64, markers: &[u64]) -> Vec<(u64, u64)> {
    let mut ranges = Vec::new();
    for size in [1_000, 7_919, len / 3 + 1, len] {
        let mut start = 0;
        while start < len {
            ranges.push((start, size.min(len - start)));
            start += size;
        }
    }
    for &p in markers {
        for start in [p.saturating_sub(1), p, p + 1] {
            ranges.push((start, 3_000.min(len - start.min(len))));
        }
        for end in [p.saturating_sub(1), p, p + 1, p + 2] {
            let start = end.saturating_sub(2_000);
            ranges.push((start, end - start));
        }
    }
    ranges.push((0, 3));
    ranges.push((2, 5));
    ranges
}

/// What `LineSplits.java` writes for these splits, from sluice's reader.
fn sluice_records(path: &Path, ranges: &[(u64, u64)]) -> Vec<u8> {
    let len = fs::metadata(path).unwrap().len();
    let input = StoredInput::new(FileStatus::file(Location::from_path(path), len));
    let mut out = Vec::new();
    for &(start, len) in ranges {
        writeln!(out, "#split {start} {len}").unwrap();
        let split = Split {
            file: 0,
            start,
            len,
        };
        let mut reader = match LineReader::open_in(&LocalStorage::new(), &input, &split) {
            Ok(reader) => reader,
            Err(e) => {
                writeln!(out, "#error {e}").unwrap();
                continue;
            }
        };
        loop {
            match reader.next_line() {
                Ok(Some((key, value))) => {
                    write!(out, "{key}\t").unwrap();
                    out.extend_from_slice(value);
                    out.push(b'\n');
                }
                Ok(None) => break,
                Err(e) => {
                    writeln!(out, "#error {e}").unwrap();
                    break;
                }
            }
        }
    }
    out
}

/// The first split whose records differ, for the failure message.
fn first_difference(hadoop: &[u8], sluice: &[u8]) -> String {
    let split = |text: &[u8]| -> Vec<Vec<u8>> {
        let mut parts: Vec<Vec<u8>> = Vec::new();
        for line in text.split_inclusive(|&b| b == b'\n') {
            if line.starts_with(b"#split ") || parts.is_empty() {
                parts.push(Vec::new());
            }
            parts.last_mut().unwrap().extend_from_slice(line);
        }
        parts
    };
    let (h, s) = (split(hadoop), split(sluice));
    for (a, b) in h.iter().zip(&s) {
        if a != b {
            let head = |t: &[u8]| String::from_utf8_lossy(&t[..t.len().min(600)]).into_owned();
            return format!("Hadoop:\n{}\nsluice:\n{}", head(a), head(b));
        }
    }
    format!("{} splits from Hadoop, {} from sluice", h.len(), s.len())
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Apache Hadoop: make hadoop, Java 17; cargo test --features test-hadoop"
)]
fn every_split_of_a_bzip2_file_reads_as_in_hadoop() {
    let lib = require_hadoop();
    let scratch = tempfile::tempdir().unwrap();
    let mut rng = Lcg(2024);
    let mut files = Vec::new();
    for i in 0..8 {
        let mut file = compress(&text(&mut rng, 500_000), 1 + i % 2);
        if i % 3 == 0 {
            // Streams one after another, an empty one among them (as `cat` and pbzip2 make).
            file.extend(compress(b"", 9));
            let mut tail = text(&mut rng, 200_000);
            if i == 3 {
                tail.extend_from_slice(b"a last line without a terminator");
            }
            file.extend(compress(&tail, 2));
        }
        let path = scratch.path().join(format!("f{i}.bz2"));
        fs::write(&path, &file).unwrap();
        let ranges = splits(file.len() as u64, &marker_bytes(&file));
        files.push((path, ranges));
    }
    let mut jobs = String::new();
    for (path, ranges) in &files {
        write!(jobs, "{}\t{}.hadoop", path.display(), path.display()).unwrap();
        for (start, len) in ranges {
            write!(jobs, "\t{start}:{len}").unwrap();
        }
        jobs.push('\n');
    }
    let jobs_file = scratch.path().join("jobs");
    fs::write(&jobs_file, jobs).unwrap();

    let driver = root().join("tests/hadoop");
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{}:{}/*", driver.display(), lib.display()))
        .arg(format!(
            "-Dlog4j.configuration=file:{}",
            driver.join("log4j.properties").display()
        ))
        .arg(driver.join("LineSplits.java"))
        .arg(&jobs_file)
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(
        out.status.success(),
        "LineSplits.java failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let mut records = 0;
    let mut splits_read = 0;
    for (path, ranges) in &files {
        let hadoop = fs::read(format!("{}.hadoop", path.display())).unwrap();
        assert!(
            !hadoop.windows(7).any(|w| w == b"#error "),
            "Hadoop failed to read {}",
            path.display()
        );
        let sluice = sluice_records(path, ranges);
        assert!(
            hadoop == sluice,
            "the splits of {} differ; the first:\n{}",
            path.display(),
            first_difference(&hadoop, &sluice)
        );
        records += hadoop.split(|&b| b == b'\n').count();
        splits_read += ranges.len();
    }
    // The files must have been cut at many blocks, and read.
    assert!(splits_read > 1_000, "{splits_read} splits");
    assert!(records > 100_000, "{records} records");
}
