//! Blocks: round trips for every codec, header layout, and rejection of every kind of bad header
//! or body.
// Test helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test
// failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use common::{random_bytes, CODECS};
use proptest::prelude::*;
use sluice_format::{
    BlockReader, BlockWriter, Codec, FormatError, BLOCK_HEADER_LEN, MAX_BLOCK_LEN,
};

/// Writes `payloads` as blocks; checks the byte counts the writer reports.
fn write_blocks(codec: Codec, payloads: &[Vec<u8>]) -> Vec<u8> {
    let mut writer = BlockWriter::new(Vec::new(), codec, "blocks");
    let mut total = 0;
    for payload in payloads {
        let written = writer.write_block(payload).unwrap();
        if payload.is_empty() {
            assert_eq!(written, 0);
        }
        total += written;
        assert_eq!(writer.bytes_written(), total);
    }
    let bytes = writer.into_inner();
    assert_eq!(bytes.len() as u64, total);
    bytes
}

/// Reads every block, or the first error.
fn read_blocks(bytes: &[u8], start_offset: u64) -> Result<Vec<Vec<u8>>, FormatError> {
    let mut reader = BlockReader::new(bytes, "blocks", start_offset);
    let mut blocks = Vec::new();
    while let Some(block) = reader.next_block()? {
        blocks.push(block.to_vec());
    }
    assert_eq!(reader.offset(), start_offset + bytes.len() as u64);
    Ok(blocks)
}

/// A block with the given header fields and body, and a correct checksum over them.
fn craft_block(codec_id: u8, reserved: [u8; 3], raw_len: u32, stored: &[u8]) -> Vec<u8> {
    let mut block = vec![codec_id];
    block.extend_from_slice(&reserved);
    block.extend_from_slice(&(stored.len() as u32).to_le_bytes());
    block.extend_from_slice(&raw_len.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&block), stored);
    block.extend_from_slice(&crc.to_le_bytes());
    block.extend_from_slice(stored);
    block
}

fn expect_corrupt(bytes: &[u8], start_offset: u64, expected_offset: u64, detail_part: &str) {
    match read_blocks(bytes, start_offset) {
        Err(FormatError::Corrupt {
            offset,
            detail,
            source_name,
        }) => {
            assert_eq!(offset, expected_offset, "{detail}");
            assert_eq!(source_name, "blocks");
            assert!(
                detail.contains(detail_part),
                "{detail:?} lacks {detail_part:?}"
            );
        }
        other => panic!("expected Corrupt ({detail_part}), got {other:?}"),
    }
}

fn compressible(len: usize) -> Vec<u8> {
    b"the quick brown fox jumps over the lazy dog; "
        .iter()
        .cycle()
        .take(len)
        .copied()
        .collect()
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Random, usually incompressible.
        prop::collection::vec(any::<u8>(), 0..3000),
        // Highly compressible: one short pattern repeated.
        (prop::collection::vec(any::<u8>(), 1..6), 0..20_000usize).prop_map(|(unit, len)| unit
            .iter()
            .cycle()
            .take(len)
            .copied()
            .collect()),
        // Text-like: few distinct bytes.
        prop::collection::vec(prop::sample::select(b"aeiou st\n".to_vec()), 0..5000),
        Just(Vec::new()),
    ]
}

proptest! {
    #[test]
    fn round_trip_every_codec(payloads in prop::collection::vec(payload(), 0..6), start in 0u64..1_000_000) {
        for codec in CODECS {
            let bytes = write_blocks(codec, &payloads);
            let expected: Vec<Vec<u8>> = payloads.iter().filter(|p| !p.is_empty()).cloned().collect();
            prop_assert_eq!(read_blocks(&bytes, start).unwrap(), expected);
        }
    }

    /// Blocks whose checksum is right but whose contents are arbitrary must never panic the
    /// reader, and whatever it accepts has the length the header promised.
    #[test]
    fn crafted_blocks_with_valid_checksums_never_panic(
        codec_id in 0u8..4,
        raw_len in prop_oneof![0u32..2000, Just(u32::MAX), Just(MAX_BLOCK_LEN as u32)],
        stored in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200),
            payload().prop_map(|p| lz4_flex::block::compress(&p)),
            payload().prop_map(|p| zstd::bulk::compress(&p, 1).unwrap()),
        ],
        mutate in any::<Option<(prop::sample::Index, u8)>>(),
    ) {
        let mut stored = stored;
        if let (Some((at, mask)), false) = (mutate, stored.is_empty()) {
            let at = at.index(stored.len());
            stored[at] ^= mask;
        }
        let bytes = craft_block(codec_id, [0; 3], raw_len, &stored);
        let mut reader = BlockReader::new(&bytes[..], "blocks", 0);
        if let Ok(Some(block)) = reader.next_block() {
            prop_assert_eq!(block.len(), raw_len as usize);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = read_blocks(&bytes, 0);
    }
}

#[test]
fn header_layout() {
    let payload = compressible(10_000);
    for codec in CODECS {
        let bytes = write_blocks(codec, std::slice::from_ref(&payload));
        let stored_len = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
        let raw_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(bytes[12..16].try_into().unwrap());
        assert_eq!(bytes[0], codec.id(), "{codec:?}");
        assert_eq!(&bytes[1..4], &[0, 0, 0]);
        assert_eq!(raw_len, payload.len());
        assert_eq!(bytes.len(), BLOCK_HEADER_LEN + stored_len);
        if codec == Codec::None {
            assert_eq!(&bytes[BLOCK_HEADER_LEN..], &payload[..]);
        } else {
            assert!(
                stored_len < payload.len() / 4,
                "{codec:?} stored {stored_len}"
            );
        }
        let expected_crc =
            crc32c::crc32c_append(crc32c::crc32c(&bytes[..12]), &bytes[BLOCK_HEADER_LEN..]);
        assert_eq!(crc, expected_crc);
    }
}

#[test]
fn compressed_bodies_use_the_standard_formats() {
    let payload = compressible(5000);
    let lz4 = write_blocks(Codec::Lz4, std::slice::from_ref(&payload));
    assert_eq!(
        lz4_flex::block::decompress(&lz4[BLOCK_HEADER_LEN..], payload.len()).unwrap(),
        payload
    );
    let zstd = write_blocks(Codec::Zstd { level: 5 }, std::slice::from_ref(&payload));
    assert_eq!(
        zstd::bulk::decompress(&zstd[BLOCK_HEADER_LEN..], payload.len()).unwrap(),
        payload
    );
}

#[test]
fn incompressible_blocks_are_stored_uncompressed() {
    for size in [1, 7, 100, 4096, 100_000] {
        let payload = random_bytes(size, size as u64);
        for codec in CODECS {
            let bytes = write_blocks(codec, std::slice::from_ref(&payload));
            assert_eq!(bytes[0], 0, "{codec:?} size {size}");
            assert_eq!(bytes.len(), BLOCK_HEADER_LEN + size);
            assert_eq!(&bytes[BLOCK_HEADER_LEN..], &payload[..]);
            assert_eq!(read_blocks(&bytes, 0).unwrap(), vec![payload.clone()]);
        }
    }
}

#[test]
fn mixed_stored_and_compressed_blocks_in_one_stream() {
    let payloads = vec![
        random_bytes(3000, 1),
        compressible(3000),
        random_bytes(10, 2),
        compressible(70_000),
    ];
    for codec in CODECS {
        let bytes = write_blocks(codec, &payloads);
        assert_eq!(read_blocks(&bytes, 0).unwrap(), payloads, "{codec:?}");
    }
}

#[test]
fn empty_stream_and_empty_payloads() {
    assert_eq!(read_blocks(&[], 0).unwrap(), Vec::<Vec<u8>>::new());
    let bytes = write_blocks(Codec::Lz4, &[Vec::new(), Vec::new()]);
    assert!(bytes.is_empty());
}

#[test]
fn zero_length_block_reads_as_empty() {
    let mut bytes = craft_block(0, [0; 3], 0, &[]);
    bytes.extend(write_blocks(Codec::None, &[b"after".to_vec()]));
    assert_eq!(
        read_blocks(&bytes, 0).unwrap(),
        vec![Vec::new(), b"after".to_vec()]
    );
}

#[test]
fn truncated_header_is_corrupt() {
    let bytes = write_blocks(Codec::Lz4, &[compressible(500), compressible(600)]);
    let second = bytes.len() - {
        let mut reader = BlockReader::new(&bytes[..], "blocks", 0);
        reader.next_block().unwrap();
        bytes.len() - reader.offset() as usize
    };
    for extra in 1..BLOCK_HEADER_LEN {
        expect_corrupt(
            &bytes[..second + extra],
            40,
            40 + second as u64,
            "truncated block header",
        );
    }
}

#[test]
fn truncated_body_is_corrupt() {
    for codec in CODECS {
        let bytes = write_blocks(codec, &[compressible(500)]);
        for len in BLOCK_HEADER_LEN..bytes.len() {
            expect_corrupt(&bytes[..len], 7, 7, "truncated block");
        }
    }
}

#[test]
fn nonzero_reserved_bytes_are_corrupt() {
    for reserved in [[1, 0, 0], [0, 0x80, 0], [0, 0, 0xff]] {
        let bytes = craft_block(0, reserved, 3, b"abc");
        expect_corrupt(&bytes, 0, 0, "reserved");
    }
}

#[test]
fn unknown_codec_ids_are_corrupt() {
    for id in [3, 4, 0x80, 0xff] {
        let bytes = craft_block(id, [0; 3], 3, b"abc");
        expect_corrupt(&bytes, 100, 100, "unknown codec id");
    }
}

#[test]
fn impossible_lengths_are_corrupt_without_reading_the_body() {
    let too_long = MAX_BLOCK_LEN as u32 + 1;
    // Stored length too large (the body is absent: the check must come first).
    let mut header = craft_block(1, [0; 3], 100, &[]);
    header[4..8].copy_from_slice(&too_long.to_le_bytes());
    expect_corrupt(&header, 0, 0, "stored length");
    header[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    expect_corrupt(&header, 0, 0, "stored length");
    // Raw length too large.
    expect_corrupt(&craft_block(1, [0; 3], too_long, b"xx"), 0, 0, "raw length");
    expect_corrupt(&craft_block(2, [0; 3], u32::MAX, b"xx"), 0, 0, "raw length");
    // Uncompressed block whose lengths disagree.
    expect_corrupt(
        &craft_block(0, [0; 3], 4, b"abc"),
        0,
        0,
        "uncompressed block",
    );
}

#[test]
fn wrong_raw_length_is_corrupt_even_with_a_valid_checksum() {
    let payload = compressible(1000);
    let lz4 = lz4_flex::block::compress(&payload);
    let zstd = zstd::bulk::compress(&payload, 3).unwrap();
    for (id, stored) in [(1u8, &lz4), (2u8, &zstd)] {
        assert_eq!(
            read_blocks(&craft_block(id, [0; 3], 1000, stored), 0).unwrap(),
            vec![payload.clone()]
        );
        for raw_len in [0, 1, 999, 1001, 5000] {
            match read_blocks(&craft_block(id, [0; 3], raw_len, stored), 0) {
                Err(FormatError::Corrupt { offset: 0, .. }) => {}
                other => panic!("codec {id} raw_len {raw_len}: {other:?}"),
            }
        }
    }
    // Garbage that is not LZ4 or zstd at all.
    for id in [1, 2] {
        expect_corrupt(
            &craft_block(id, [0; 3], 50, &random_bytes(40, 9)),
            0,
            0,
            "decompression failed",
        );
    }
}

#[test]
fn checksum_mismatch_reports_both_checksums_and_the_block_offset() {
    let payloads = [compressible(300), compressible(400), compressible(500)];
    let mut bytes = write_blocks(Codec::Lz4, &payloads);
    let third = {
        let mut reader = BlockReader::new(&bytes[..], "blocks", 0);
        reader.next_block().unwrap();
        reader.next_block().unwrap();
        reader.offset() as usize
    };
    let stored_crc = u32::from_le_bytes(bytes[third + 12..third + 16].try_into().unwrap());
    bytes[third + BLOCK_HEADER_LEN + 3] ^= 0x10;
    let computed_crc = crc32c::crc32c_append(
        crc32c::crc32c(&bytes[third..third + 12]),
        &bytes[third + BLOCK_HEADER_LEN..],
    );

    let mut reader = BlockReader::new(&bytes[..], "file.spill", 4096);
    assert_eq!(reader.next_block().unwrap().unwrap(), &payloads[0][..]);
    assert_eq!(reader.next_block().unwrap().unwrap(), &payloads[1][..]);
    match reader.next_block() {
        Err(FormatError::ChecksumMismatch {
            source_name,
            offset,
            stored,
            computed,
        }) => {
            assert_eq!(source_name, "file.spill");
            assert_eq!(offset, 4096 + third as u64);
            assert_eq!(stored, stored_crc);
            assert_eq!(computed, computed_crc);
        }
        other => panic!("{other:?}"),
    }
    // The reader refuses to go on after an error.
    assert!(reader.next_block().is_err());
}

#[test]
fn flipped_header_fields_are_detected() {
    let bytes = write_blocks(Codec::None, &[b"hello, world".to_vec()]);
    // Changing any header byte other than the reserved ones and the checksum itself, with
    // a body that still fits, must fail the checksum or a header check.
    for at in 0..BLOCK_HEADER_LEN {
        for mask in [0x01, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= mask;
            match read_blocks(&damaged, 0) {
                Err(
                    FormatError::ChecksumMismatch { offset: 0, .. }
                    | FormatError::Corrupt { offset: 0, .. },
                ) => {}
                other => panic!("byte {at} ^ {mask:#x}: {other:?}"),
            }
        }
    }
}

#[test]
fn io_errors_are_reported_as_io() {
    struct Failing;
    impl std::io::Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut reader = BlockReader::new(Failing, "bad disk", 0);
    assert!(matches!(reader.next_block(), Err(FormatError::Io { .. })));
    let mut writer = BlockWriter::new(Failing, Codec::Lz4, "bad disk");
    match writer.write_block(b"data") {
        Err(FormatError::Io { source_name, .. }) => assert_eq!(source_name, "bad disk"),
        other => panic!("{other:?}"),
    }
    assert_eq!(writer.bytes_written(), 0);
}
