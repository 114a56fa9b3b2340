//! Runs: round trips, block packing rules, positions and segments, cursor behaviour.
// Test helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test
// failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use common::{block_boundaries, read_run, text_records, write_run, Record, CODECS};
use proptest::prelude::*;
use sluice_format::{Codec, FormatError, RunReader, RunWriter, BLOCK_HEADER_LEN};

fn records(max_value: usize) -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec(
        (
            prop::collection::vec(any::<u8>(), 0..24),
            prop_oneof![
                4 => prop::collection::vec(any::<u8>(), 0..40),
                1 => prop::collection::vec(prop::sample::select(b"ab".to_vec()), 0..max_value),
            ],
        ),
        0..120,
    )
}

/// Raw lengths of the blocks of a run written with `Codec::None`.
fn raw_block_lengths(bytes: &[u8]) -> Vec<usize> {
    let boundaries = block_boundaries(bytes);
    boundaries[..boundaries.len() - 1]
        .iter()
        .map(|&at| u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize)
        .collect()
}

proptest! {
    // Each case writes and reads the run 20 times (5 block sizes x 4 codecs).
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn round_trip(
        records in records(6000),
        block_size in prop::sample::select(vec![0usize, 1, 64, 4096, 1 << 16]),
        start_offset in 0u64..1 << 40,
    ) {
        for codec in CODECS {
            let bytes = write_run(&records, codec, block_size);
            let (read, end) = read_run(&bytes, start_offset);
            prop_assert!(end.is_ok(), "{:?}", end);
            prop_assert_eq!(&read, &records);
        }
    }

    #[test]
    fn blocks_never_exceed_block_size_unless_one_record_does(
        records in records(300),
        block_size in prop::sample::select(vec![1usize, 64, 4096]),
    ) {
        let bytes = write_run(&records, Codec::None, block_size);
        let lengths = raw_block_lengths(&bytes);
        let encoded: Vec<usize> = records
            .iter()
            .map(|(k, v)| sluice_format::record::encoded_len(k.len(), v.len()))
            .collect();
        prop_assert_eq!(lengths.iter().sum::<usize>(), encoded.iter().sum::<usize>());
        // Replay the packing rule: every block is a maximal run of whole records.
        let mut expected = Vec::new();
        let mut current = 0;
        for len in encoded {
            if current > 0 && current + len > block_size {
                expected.push(current);
                current = 0;
            }
            current += len;
        }
        if current > 0 {
            expected.push(current);
        }
        prop_assert_eq!(lengths, expected);
    }
}

#[test]
fn packing_rule_on_fixed_records() {
    // Each record encodes to 1 + 1 + 3 + 5 = 10 bytes.
    let records: Vec<Record> = (0..7)
        .map(|i| (format!("k{i:02}").into_bytes(), b"value".to_vec()))
        .collect();
    assert_eq!(
        raw_block_lengths(&write_run(&records, Codec::None, 25)),
        [20, 20, 20, 10]
    );
    // A block may be filled exactly.
    assert_eq!(
        raw_block_lengths(&write_run(&records, Codec::None, 20)),
        [20, 20, 20, 10]
    );
    assert_eq!(
        raw_block_lengths(&write_run(&records, Codec::None, 19)),
        [10; 7]
    );
    assert_eq!(
        raw_block_lengths(&write_run(&records, Codec::None, 0)),
        [10; 7]
    );
    assert_eq!(
        raw_block_lengths(&write_run(&records, Codec::None, 1000)),
        [70]
    );
}

#[test]
fn oversized_record_gets_its_own_block() {
    let records: Vec<Record> = vec![
        (b"a".to_vec(), b"1".to_vec()),
        (b"b".to_vec(), b"2".to_vec()),
        (b"big".to_vec(), vec![b'x'; 1000]),
        (b"c".to_vec(), b"3".to_vec()),
    ];
    for codec in CODECS {
        let bytes = write_run(&records, codec, 64);
        assert_eq!(block_boundaries(&bytes).len() - 1, 3, "{codec:?}");
        assert_eq!(read_run(&bytes, 0).0, records);
    }
    assert_eq!(
        raw_block_lengths(&write_run(&records, Codec::None, 64)),
        [8, 1 + 2 + 3 + 1000, 4]
    );
}

#[test]
fn empty_run() {
    for codec in CODECS {
        let writer = RunWriter::new(Vec::new(), codec, 4096, "empty");
        assert_eq!(writer.position(), 0);
        assert_eq!(writer.records_written(), 0);
        let bytes = writer.into_inner().unwrap();
        assert!(bytes.is_empty());
    }
    let mut reader = RunReader::new(&[][..], "empty", 0);
    assert_eq!(reader.key(), b"");
    assert_eq!(reader.value(), b"");
    assert!(!reader.advance().unwrap());
    assert!(!reader.advance().unwrap());
    assert_eq!(reader.key(), b"");
}

#[test]
fn empty_keys_and_values() {
    let records: Vec<Record> = vec![
        (vec![], vec![]),
        (b"k".to_vec(), vec![]),
        (vec![], b"v".to_vec()),
        (vec![], vec![]),
    ];
    for codec in CODECS {
        for block_size in [0, 1, 3, 4096] {
            assert_eq!(
                read_run(&write_run(&records, codec, block_size), 0).0,
                records
            );
        }
    }
}

#[test]
fn cursor_before_during_and_after() {
    let records = text_records(500);
    let bytes = write_run(&records, Codec::Lz4, 512);
    let mut reader = RunReader::new(&bytes[..], "run", 0);
    assert_eq!((reader.key(), reader.value()), (&b""[..], &b""[..]));
    for (key, value) in &records {
        assert!(reader.advance().unwrap());
        assert_eq!(reader.key(), &key[..]);
        assert_eq!(reader.value(), &value[..]);
        // Reading the current record twice gives the same thing.
        assert_eq!(reader.key(), &key[..]);
    }
    assert!(!reader.advance().unwrap());
    assert_eq!((reader.key(), reader.value()), (&b""[..], &b""[..]));
    assert!(!reader.advance().unwrap());
    assert_eq!(reader.offset(), bytes.len() as u64);
}

#[test]
fn positions_and_segments() {
    let records = text_records(1000);
    for codec in CODECS {
        let mut writer = RunWriter::new(Vec::new(), codec, 1024, "segments");
        let mut bounds = vec![0u64];
        for (i, chunk) in records.chunks(300).enumerate() {
            for (key, value) in chunk {
                writer.write_record(key, value).unwrap();
            }
            writer.finish_segment().unwrap();
            // Nothing pending: finishing again writes nothing.
            let at = writer.position();
            writer.finish_segment().unwrap();
            assert_eq!(writer.position(), at);
            assert_eq!(writer.records_written(), (i * 300 + chunk.len()) as u64);
            bounds.push(at);
        }
        let total = writer.position();
        let bytes = writer.into_inner().unwrap();
        assert_eq!(bytes.len() as u64, total, "{codec:?}");

        // Each segment is a run of its own, readable from its offset.
        for (i, chunk) in records.chunks(300).enumerate() {
            let (start, end) = (bounds[i] as usize, bounds[i + 1] as usize);
            let mut reader = RunReader::new(&bytes[start..end], "segments", start as u64);
            let mut read = Vec::new();
            while reader.advance().unwrap() {
                read.push((reader.key().to_vec(), reader.value().to_vec()));
            }
            assert_eq!(read, chunk);
            assert_eq!(reader.offset(), end as u64);
        }
    }
}

#[test]
fn position_counts_only_flushed_blocks() {
    let mut writer = RunWriter::new(Vec::new(), Codec::None, 100, "pos");
    writer.write_record(b"key", b"value").unwrap();
    assert_eq!(writer.position(), 0);
    assert_eq!(writer.records_written(), 1);
    writer.write_record(&[b'k'; 50], &[b'v'; 50]).unwrap();
    // The first record (10 bytes) was flushed to make room.
    assert_eq!(writer.position(), (BLOCK_HEADER_LEN + 10) as u64);
    let bytes = writer.into_inner().unwrap();
    assert_eq!(bytes.len(), 2 * BLOCK_HEADER_LEN + 10 + 102);
}

#[test]
fn empty_blocks_are_skipped() {
    // An empty block (raw_len 0) between two real ones.
    let empty_block = {
        let mut block = vec![0u8; 12];
        let crc = crc32c::crc32c(&block);
        block.extend_from_slice(&crc.to_le_bytes());
        block
    };
    let first = write_run(&[(b"a".to_vec(), b"1".to_vec())], Codec::None, 64);
    let second = write_run(&[(b"b".to_vec(), b"2".to_vec())], Codec::Lz4, 64);
    let bytes = [first, empty_block.clone(), empty_block, second].concat();
    let (read, end) = read_run(&bytes, 0);
    end.unwrap();
    assert_eq!(
        read,
        vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec())
        ]
    );
}

#[test]
fn bad_record_in_a_valid_block_names_the_run_and_block() {
    let good = write_run(&[(b"a".to_vec(), b"1".to_vec())], Codec::None, 64);
    // A block with a correct checksum whose payload is a record claiming a 9-byte key.
    let payload = [9u8, 0, b'x'];
    let mut bad = vec![0u8, 0, 0, 0];
    bad.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    bad.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&bad), &payload);
    bad.extend_from_slice(&crc.to_le_bytes());
    bad.extend_from_slice(&payload);
    let bytes = [good.clone(), bad].concat();

    let mut reader = RunReader::new(&bytes[..], "part-3.spill", 1000);
    assert!(reader.advance().unwrap());
    match reader.advance() {
        Err(FormatError::Corrupt {
            source_name,
            offset,
            detail,
        }) => {
            assert_eq!(source_name, "part-3.spill");
            assert_eq!(offset, 1000 + good.len() as u64);
            assert!(detail.contains("record"), "{detail}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!((reader.key(), reader.value()), (&b""[..], &b""[..]));
    // The reader stays failed rather than skipping ahead.
    assert!(reader.advance().is_err());
    assert!(reader.advance().is_err());
}

#[test]
fn io_error_on_write_is_reported() {
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "disk full",
            ))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    // Failing while making room for a record.
    let mut writer = RunWriter::new(Full, Codec::Lz4, 16, "full");
    writer.write_record(b"0123456789", b"0123456789").unwrap();
    match writer.write_record(b"k", b"v") {
        Err(FormatError::Io { source_name, error }) => {
            assert_eq!(source_name, "full");
            assert_eq!(error.kind(), std::io::ErrorKind::StorageFull);
        }
        other => panic!("{other:?}"),
    }
    // Failing on the last block.
    let mut writer = RunWriter::new(Full, Codec::Lz4, 4096, "full");
    writer.write_record(b"k", b"v").unwrap();
    assert!(matches!(
        writer.finish_segment(),
        Err(FormatError::Io { .. })
    ));
    let mut writer = RunWriter::new(Full, Codec::Lz4, 4096, "full");
    writer.write_record(b"k", b"v").unwrap();
    assert!(matches!(writer.into_inner(), Err(FormatError::Io { .. })));
}
