//! Damaged runs: every flipped byte and every truncation must be reported as an error at the
//! damaged block, never returned as data and never a panic.
// Test helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test
// failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use std::sync::OnceLock;

use common::{block_boundaries, block_index, read_run, text_records, write_run, Record, CODECS};
use proptest::prelude::*;
use sluice_format::{Codec, FormatError};

/// Where runs live inside the (imaginary) file they are read from: offsets must include it.
const START: u64 = (1 << 33) + 3;

/// An intact run and what is known about its blocks.
struct Run {
    records: Vec<Record>,
    bytes: Vec<u8>,
    /// Header offsets of each block, then the run length.
    boundaries: Vec<usize>,
    /// `records_before[k]`: records held by blocks `0..k`.
    records_before: Vec<usize>,
}

impl Run {
    fn new(records: Vec<Record>, codec: Codec, block_size: usize) -> Run {
        let bytes = write_run(&records, codec, block_size);
        let boundaries = block_boundaries(&bytes);
        // A run cut at a block boundary is a valid, shorter run: count what each prefix holds.
        let records_before = boundaries
            .iter()
            .map(|&end| {
                let (read, result) = read_run(&bytes[..end], START);
                result.unwrap();
                read.len()
            })
            .collect();
        Run {
            records,
            bytes,
            boundaries,
            records_before,
        }
    }

    fn blocks(&self) -> usize {
        self.boundaries.len() - 1
    }

    /// Reads `damaged` (this run, damaged from block `block` on) and checks that reading stops
    /// with an error about `block` after returning exactly the records of the blocks before it.
    fn assert_detected(&self, damaged: &[u8], block: usize, what: &str) {
        let (read, result) = read_run(damaged, START);
        let offset = match result {
            Err(
                FormatError::ChecksumMismatch { offset, .. } | FormatError::Corrupt { offset, .. },
            ) => offset,
            other => panic!("{what}: expected ChecksumMismatch or Corrupt, got {other:?}"),
        };
        assert_eq!(
            offset,
            START + self.boundaries[block] as u64,
            "{what}: wrong block"
        );
        assert_eq!(read.len(), self.records_before[block], "{what}");
        assert_eq!(
            &read[..],
            &self.records[..read.len()],
            "{what}: wrong data returned"
        );
    }

    /// Flips `mask` into byte `pos` and checks the damage is detected in the right block.
    fn assert_flip_detected(&self, pos: usize, mask: u8) {
        let mut damaged = self.bytes.clone();
        damaged[pos] ^= mask;
        let block = block_index(&self.boundaries, pos);
        self.assert_detected(
            &damaged,
            block,
            &format!("byte {pos} ^ {mask:#04x} (block {block})"),
        );
    }
}

/// A small run of a few blocks, for exhaustive damage.
fn small_run(codec: Codec) -> Run {
    let run = Run::new(text_records(40), codec, 128);
    assert!(run.blocks() >= 4, "{codec:?}: {} blocks", run.blocks());
    run
}

/// A larger run (tens of blocks, ~100 KB) per codec, built once for the property tests.
fn large_run(codec_index: usize) -> &'static Run {
    static RUNS: OnceLock<Vec<Run>> = OnceLock::new();
    let runs = RUNS.get_or_init(|| {
        CODECS
            .iter()
            .map(|&codec| Run::new(text_records(4000), codec, 4096))
            .collect()
    });
    &runs[codec_index]
}

#[test]
fn every_flipped_byte_of_a_small_run_is_detected() {
    for codec in CODECS {
        let run = small_run(codec);
        for pos in 0..run.bytes.len() {
            for mask in [0x01, 0x80, 0xff] {
                run.assert_flip_detected(pos, mask);
            }
        }
    }
}

#[test]
fn every_truncation_of_a_small_run_is_detected_except_at_block_boundaries() {
    for codec in CODECS {
        let run = small_run(codec);
        for len in 0..run.bytes.len() {
            let cut = &run.bytes[..len];
            let block = block_index(&run.boundaries, len);
            if run.boundaries[block] == len {
                // A clean end: a shorter valid run. Only the caller's expected length can tell.
                let (read, result) = read_run(cut, START);
                result.unwrap();
                assert_eq!(read, run.records[..run.records_before[block]]);
                continue;
            }
            match read_run(cut, START).1 {
                Err(FormatError::Corrupt { .. }) => {}
                other => panic!("{codec:?} cut at {len}: expected Corrupt, got {other:?}"),
            }
            run.assert_detected(cut, block, &format!("{codec:?} cut at {len}"));
        }
    }
}

#[test]
fn offset_tells_a_clean_end_from_the_expected_one() {
    let run = small_run(Codec::Lz4);
    let cut = &run.bytes[..run.boundaries[2]];
    let mut reader = sluice_format::RunReader::new(cut, "run", START);
    while reader.advance().unwrap() {}
    assert_eq!(reader.offset(), START + run.boundaries[2] as u64);
    assert_ne!(reader.offset(), START + run.bytes.len() as u64);
}

#[test]
fn damage_in_a_later_block_of_a_multi_block_run_reports_that_block() {
    for (i, codec) in CODECS.iter().enumerate() {
        let run = large_run(i);
        assert!(run.blocks() >= 10, "{codec:?}: {} blocks", run.blocks());
        // The middle of the payload of block 7.
        let pos = (run.boundaries[7] + run.boundaries[8]) / 2;
        let mut damaged = run.bytes.clone();
        damaged[pos] ^= 0x04;
        let (read, result) = read_run(&damaged, START);
        match result {
            Err(FormatError::ChecksumMismatch {
                source_name,
                offset,
                stored,
                computed,
            }) => {
                assert_eq!(source_name, "test run");
                assert_eq!(offset, START + run.boundaries[7] as u64, "{codec:?}");
                assert_ne!(stored, computed);
            }
            other => panic!("{codec:?}: {other:?}"),
        }
        assert_eq!(read, run.records[..run.records_before[7]]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_flips_in_a_large_run_are_detected(
        codec_index in 0..CODECS.len(),
        pos in any::<prop::sample::Index>(),
        mask in 1u8..=255,
    ) {
        let run = large_run(codec_index);
        run.assert_flip_detected(pos.index(run.bytes.len()), mask);
    }

    #[test]
    fn random_truncations_of_a_large_run_are_detected(codec_index in 0..CODECS.len(), len in any::<prop::sample::Index>()) {
        let run = large_run(codec_index);
        let len = len.index(run.bytes.len());
        let block = block_index(&run.boundaries, len);
        prop_assume!(run.boundaries[block] != len);
        run.assert_detected(&run.bytes[..len], block, &format!("cut at {len}"));
    }

    /// Several damaged bytes at once, anywhere: still an error at the first damaged block.
    #[test]
    fn multiple_flips_are_detected_at_the_first_damaged_block(
        codec_index in 0..CODECS.len(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..8),
    ) {
        let run = large_run(codec_index);
        let mut damaged = run.bytes.clone();
        let mut first = usize::MAX;
        for (pos, mask) in flips {
            let pos = pos.index(damaged.len());
            damaged[pos] ^= mask;
            first = first.min(pos);
        }
        prop_assume!(damaged != run.bytes);
        let block = block_index(&run.boundaries, first);
        // If flips cancelled out in the first block, the first damaged block is a later one;
        // then reading must still fail, at or after `block`.
        let (read, result) = read_run(&damaged, START);
        prop_assert!(matches!(result, Err(FormatError::ChecksumMismatch { .. } | FormatError::Corrupt { .. })), "{:?}", result);
        prop_assert!(read.len() >= run.records_before[block]);
        prop_assert_eq!(&read[..], &run.records[..read.len()]);
    }

    #[test]
    fn arbitrary_bytes_never_panic_the_run_reader(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = read_run(&bytes, 0);
    }

    /// A valid run followed by garbage: the valid records come out, then an error.
    #[test]
    fn garbage_after_a_valid_run_is_an_error(garbage in prop::collection::vec(any::<u8>(), 1..300)) {
        let run = large_run(1);
        let bytes = [&run.bytes[..run.boundaries[3]], &garbage[..]].concat();
        let (read, result) = read_run(&bytes, START);
        prop_assert!(result.is_err());
        prop_assert_eq!(&read[..], &run.records[..run.records_before[3]]);
    }
}
