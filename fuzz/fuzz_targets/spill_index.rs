//! Spill files as another process opens them: the index beside the data file (magic,
//! version, partition count, lengths, per-entry and whole-file CRC32Cs) and the segments it
//! points to.
//!
//! Mode 0: arbitrary index bytes, with the checksums optionally recomputed so that the
//! checks behind them are reached. Whatever `SpillIndex::read` accepts must tile the data
//! file, and `read_entry` must return the same entries one by one.
//! Mode 1: an index with valid checksums over entries chosen by the fuzzer, beside arbitrary
//! data (block checksums recomputed): every way of reading a partition must fail cleanly or
//! return no more records than the segment's raw bytes allow.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_format::BLOCK_HEADER_LEN;
use sluice_spill::{SpillFile, SpillIndex};

const HEADER_LEN: usize = 28;
const ENTRY_LEN: usize = 36;

/// A directory of this process's own, for the two files each input is written to.
fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("sluice-fuzz-spill-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        dir
    })
}

/// Recomputes every complete entry's checksum and the trailer, as a writer would have.
fn fix_checksums(index: &mut [u8]) {
    if index.len() < HEADER_LEN + 4 {
        return;
    }
    let data_len = &index[20..28];
    let data_len = u64::from_le_bytes(data_len.try_into().expect("8 bytes"));
    let body_end = index.len() - 4;
    let mut at = HEADER_LEN;
    let mut partition = 0u64;
    while at + ENTRY_LEN <= body_end {
        let crc = crc32c::crc32c(&partition.to_le_bytes());
        let crc = crc32c::crc32c_append(crc, &data_len.to_le_bytes());
        let crc = crc32c::crc32c_append(crc, &index[at..at + 32]);
        index[at + 32..at + 36].copy_from_slice(&crc.to_le_bytes());
        at += ENTRY_LEN;
        partition += 1;
    }
    let crc = crc32c::crc32c(&index[..body_end]);
    index[body_end..].copy_from_slice(&crc.to_le_bytes());
}

/// Recomputes the checksum of every complete block of `data`.
fn fix_block_checksums(data: &mut [u8]) {
    let mut at = 0;
    while data.len() - at >= BLOCK_HEADER_LEN {
        let stored = u32::from_le_bytes([data[at + 4], data[at + 5], data[at + 6], data[at + 7]]);
        let Some(end) = usize::try_from(stored)
            .ok()
            .and_then(|n| (at + BLOCK_HEADER_LEN).checked_add(n))
            .filter(|&end| end <= data.len())
        else {
            return;
        };
        let crc = crc32c::crc32c_append(
            crc32c::crc32c(&data[at..at + 12]),
            &data[at + BLOCK_HEADER_LEN..end],
        );
        data[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
}

fn check_index(index: &[u8], data: &[u8]) {
    let dir = dir();
    let (data_path, index_path) = (dir.join("run.spill"), dir.join("run.index"));
    std::fs::write(&index_path, index).expect("write index");
    std::fs::write(&data_path, data).expect("write data");
    if let Ok(read) = SpillIndex::read(&index_path) {
        let mut end = 0u64;
        for (p, segment) in read.segments().iter().enumerate() {
            assert_eq!(segment.offset, end, "segments tile the data file");
            end = segment
                .offset
                .checked_add(segment.stored_len)
                .expect("no overflow");
            let one = SpillIndex::read_entry(&index_path, p).expect("entry of a valid index");
            assert_eq!(&one, segment);
        }
        assert_eq!(end, read.data_len());
        assert!(SpillIndex::read_entry(&index_path, read.segments().len()).is_err());
    }
    let Ok(file) = SpillFile::open_indexed(&data_path, &index_path) else {
        return;
    };
    for p in 0..file.partitions().min(16) {
        let segment = file.segment(p).expect("partition in range");
        if let Ok(mut reader) = file.open_segment(p) {
            let mut records = 0u64;
            let mut bytes = 0u64;
            let clean = loop {
                match reader.advance() {
                    Ok(true) => {
                        records += 1;
                        bytes += (reader.key().len() + reader.value().len()) as u64;
                    }
                    Ok(false) => break true,
                    Err(_) => break false,
                }
            };
            if clean {
                // A segment read to its end is whole blocks, each record at least two bytes
                // (its length varints) of their raw bytes.
                let start = usize::try_from(segment.offset).expect("in the data");
                let end =
                    usize::try_from(segment.offset + segment.stored_len).expect("in the data");
                let raw = sluice_format::verify_blocks(&data[start..end], "fuzz", 0)
                    .expect("a segment read cleanly verifies");
                assert!(
                    2 * records + bytes <= raw,
                    "{records} records in {raw} raw bytes"
                );
            }
        }
        let _ = file.block_starts(p);
        let _ = file.sample_keys(p, 3, 64);
        if let Ok(stored) = file.read_stored(p) {
            assert_eq!(stored.len() as u64, segment.stored_len);
            let raw = sluice_format::verify_blocks(&stored, "fuzz", 0).expect("verified");
            assert_eq!(raw, segment.raw_len);
        }
        let compare = |a: &[u8], b: &[u8]| a.cmp(b);
        if let Ok(mut reader) = file.open_segment_at(p, b"m", &compare) {
            if let Ok(true) = reader.advance() {
                assert!(
                    reader.key() >= &b"m"[..],
                    "a cursor opened at a key starts there"
                );
            }
        }
    }
}

struct Entry {
    raw_len: u64,
    stored_len: u64,
    records: u64,
}

fn structured(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let mut data = <&[u8]>::arbitrary(u)?.to_vec();
    fix_block_checksums(&mut data);
    let count = usize::from(u8::arbitrary(u)? % 8);
    let mut entries = Vec::new();
    let mut left = data.len() as u64;
    for i in 0..count {
        // Mostly a tiling of the data; sometimes any length at all.
        let stored_len = if u8::arbitrary(u)? == 0 {
            u64::arbitrary(u)?
        } else if i + 1 == count {
            left
        } else {
            u64::from(u16::arbitrary(u)?).min(left)
        };
        left = left.saturating_sub(stored_len);
        entries.push(Entry {
            raw_len: u64::from(u32::arbitrary(u)?),
            stored_len,
            records: u64::from(u16::arbitrary(u)?),
        });
    }
    let mut index = Vec::new();
    index.extend_from_slice(b"SLUICEIX");
    index.extend_from_slice(&1u32.to_le_bytes());
    index.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    index.extend_from_slice(&(data.len() as u64).to_le_bytes());
    let mut offset = 0u64;
    for e in &entries {
        for field in [offset, e.raw_len, e.stored_len, e.records] {
            index.extend_from_slice(&field.to_le_bytes());
        }
        index.extend_from_slice(&[0; 4]);
        offset = offset.wrapping_add(e.stored_len);
    }
    index.extend_from_slice(&[0; 4]);
    fix_checksums(&mut index);
    check_index(&index, &data);
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let mut index = data.to_vec();
        if mode & 2 != 0 {
            fix_checksums(&mut index);
        }
        check_index(&index, &[0; 64]);
    } else {
        let _ = structured(&mut Unstructured::new(data));
    }
});
