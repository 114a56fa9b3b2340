//! Helpers shared by the integration tests: writing and reading whole runs, walking block
//! headers, and payload generators.
#![allow(dead_code)] // Each test file uses a different subset.

use sluice_format::{Codec, FormatError, RunReader, RunWriter, BLOCK_HEADER_LEN};

/// A key/value pair as owned bytes.
pub(crate) type Record = (Vec<u8>, Vec<u8>);

/// Every codec, zstd at two levels.
pub(crate) const CODECS: [Codec; 4] = [
    Codec::None,
    Codec::Lz4,
    Codec::Zstd { level: 1 },
    Codec::Zstd { level: 3 },
];

/// Writes `records` as one run and returns its bytes.
pub(crate) fn write_run(records: &[Record], codec: Codec, block_size: usize) -> Vec<u8> {
    let mut writer = RunWriter::new(Vec::new(), codec, block_size, "test run");
    for (key, value) in records {
        writer.write_record(key, value).unwrap();
    }
    assert_eq!(writer.records_written(), records.len() as u64);
    writer.into_inner().unwrap()
}

/// Reads a run until its end or its first error: the records read and how it stopped.
pub(crate) fn read_run(bytes: &[u8], start_offset: u64) -> (Vec<Record>, Result<(), FormatError>) {
    let mut reader = RunReader::new(bytes, "test run", start_offset);
    let mut records = Vec::new();
    loop {
        match reader.advance() {
            Ok(true) => records.push((reader.key().to_vec(), reader.value().to_vec())),
            Ok(false) => return (records, Ok(())),
            Err(e) => return (records, Err(e)),
        }
    }
}

/// Offsets of every block header in a valid stream of blocks, followed by the stream length.
pub(crate) fn block_boundaries(bytes: &[u8]) -> Vec<usize> {
    let mut boundaries = vec![0];
    let mut at = 0;
    while at < bytes.len() {
        let stored_len = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().unwrap()) as usize;
        at += BLOCK_HEADER_LEN + stored_len;
        boundaries.push(at);
    }
    assert_eq!(at, bytes.len(), "block headers do not tile the stream");
    boundaries
}

/// Index of the block that contains byte `pos`, given [`block_boundaries`].
pub(crate) fn block_index(boundaries: &[usize], pos: usize) -> usize {
    boundaries.partition_point(|&b| b <= pos) - 1
}

/// Deterministic pseudo-random bytes (xorshift64), incompressible in practice.
pub(crate) fn random_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8
        })
        .collect()
}

/// `n` records that look like a word count's: short text keys, small numeric values.
pub(crate) fn text_records(n: usize) -> Vec<Record> {
    (0..n)
        .map(|i| {
            let key = format!(
                "word-{:06}-{}",
                i * 7919 % 100_000,
                "abcdefgh".repeat(i % 4)
            );
            (key.into_bytes(), format!("{}", i % 97).into_bytes())
        })
        .collect()
}
