//! Checks `tera` against rows and checksums recorded from Hadoop's GenSort and TeraGen
//! (`tests/tera_vectors/tera_vectors.txt`, produced by `tests/tera_vectors/TeraVectors.java`).
#![allow(clippy::unwrap_used)] // helpers outside #[test] functions may unwrap too

use sluice_hadoop::tera::{
    crc32, generate_row, next_random, skip_ahead, RowGenerator, TeraChecksum, KEY_LEN, ROW_LEN,
    VALUE_LEN,
};

const VECTORS: &str = include_str!("tera_vectors/tera_vectors.txt");

/// Lines of the vectors file whose first field is `kind`, split into their remaining fields.
fn lines(kind: &str) -> Vec<Vec<&'static str>> {
    let found: Vec<Vec<&str>> = VECTORS
        .lines()
        .filter_map(|line| {
            let mut fields = line.split(' ');
            (fields.next() == Some(kind)).then(|| fields.collect())
        })
        .collect();
    assert!(!found.is_empty(), "no `{kind}` lines in the vectors file");
    found
}

fn unhex(hex: &str) -> [u8; ROW_LEN] {
    assert_eq!(hex.len(), 2 * ROW_LEN);
    let mut row = [0u8; ROW_LEN];
    for (i, byte) in row.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap();
    }
    row
}

/// Generates `count` rows from `first` sequentially; returns (CRC-32C of all bytes, checksum).
fn digest_range(first: u128, count: u64) -> (u32, TeraChecksum) {
    let mut generator = RowGenerator::new(first);
    let mut row = [0u8; ROW_LEN];
    let mut crc = 0u32;
    let mut sum = TeraChecksum::new();
    for _ in 0..count {
        generator.next_row(&mut row);
        crc = crc32c::crc32c_append(crc, &row);
        sum.add_row(&row);
    }
    (crc, sum)
}

#[test]
fn layout_constants() {
    assert_eq!(ROW_LEN, 100);
    assert_eq!(KEY_LEN, 10);
    assert_eq!(KEY_LEN + VALUE_LEN, ROW_LEN);
}

#[test]
fn single_rows_match_gensort() {
    let vectors = lines("row");
    assert!(vectors.len() >= 30);
    for fields in vectors {
        let id: u128 = fields[0].parse().unwrap();
        let expected = unhex(fields[1]);
        let mut row = [0u8; ROW_LEN];
        generate_row(id, &mut row);
        assert_eq!(row, expected, "random access, row {id}");
        let mut generator = RowGenerator::new(id);
        assert_eq!(generator.row_id(), id);
        generator.next_row(&mut row);
        assert_eq!(row, expected, "sequential, row {id}");
        assert_eq!(generator.row_id(), id.wrapping_add(1));
    }
}

#[test]
fn ranges_match_gensort() {
    for fields in lines("range") {
        let first: u128 = fields[0].parse().unwrap();
        let count: u64 = fields[1].parse().unwrap();
        let (crc, sum) = digest_range(first, count);
        assert_eq!(
            format!("{crc:08x}"),
            fields[2],
            "bytes of rows {first}+{count}"
        );
        assert_eq!(
            sum.to_string(),
            fields[3],
            "checksum of rows {first}+{count}"
        );
    }
}

#[test]
fn first_thousand_rows_match_teragen() {
    let fields = &lines("teragen")[0];
    let count: u64 = fields[0].parse().unwrap();
    let (crc, sum) = digest_range(0, count);
    assert_eq!(format!("{crc:08x}"), fields[1]);
    assert_eq!(sum.to_string(), fields[2]);
    // What TeraGen's CHECKSUM counter showed for this run (see tera_vectors/README.md).
    assert_eq!(count, 1000);
    assert_eq!(sum.counter_value(), 2_173_251_765_740);

    let mut all = vec![0u8; ROW_LEN * usize::try_from(count).unwrap()];
    assert_eq!(RowGenerator::new(0).fill(&mut all), 1000);
    for fields in lines("teragen_row") {
        let id: usize = fields[0].parse().unwrap();
        assert_eq!(
            all[id * ROW_LEN..(id + 1) * ROW_LEN],
            unhex(fields[1]),
            "row {id}"
        );
    }
}

#[test]
fn sequential_equals_random_access() {
    let starts = [
        0,
        1,
        (1u128 << 32) - 700,
        1_000_000_000_000,
        u128::from(u64::MAX) - 300,
        // Crosses the wrap from u128::MAX to row 0.
        u128::MAX - 300,
    ];
    for first in starts {
        let mut generator = RowGenerator::new(first);
        let mut sequential = [0u8; ROW_LEN];
        let mut direct = [0u8; ROW_LEN];
        for offset in 0..1500u128 {
            let id = first.wrapping_add(offset);
            generator.next_row(&mut sequential);
            generate_row(id, &mut direct);
            assert_eq!(sequential, direct, "row {id}");
        }
    }
}

#[test]
fn fill_writes_whole_rows_only() {
    let mut buf = vec![0x5Au8; 7 * ROW_LEN + 42];
    let mut generator = RowGenerator::new(77);
    assert_eq!(generator.fill(&mut buf), 7);
    assert_eq!(generator.row_id(), 84);
    assert!(buf[7 * ROW_LEN..].iter().all(|&b| b == 0x5A));
    let mut row = [0u8; ROW_LEN];
    for (i, chunk) in buf[..7 * ROW_LEN].chunks_exact(ROW_LEN).enumerate() {
        generate_row(77 + i as u128, &mut row);
        assert_eq!(chunk, row);
    }
}

#[test]
fn skip_ahead_composes() {
    // Skipping a then b steps is skipping a + b steps; the period is 2^128.
    let mut state = skip_ahead(12_345);
    for _ in 0..1000 {
        state = next_random(state);
    }
    assert_eq!(state, skip_ahead(13_345));
    assert_eq!(skip_ahead(0), 0);
    assert_eq!(next_random(skip_ahead(u128::MAX)), 0);
}

#[test]
fn crc32_is_the_zlib_crc() {
    assert_eq!(crc32(b""), 0);
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(
        crc32(b"The quick brown fox jumps over the lazy dog"),
        0x414F_A339
    );
    // Every length from 0 to 20 bytes, to cover the 8-byte blocks and the remainder.
    let data: Vec<u8> = (0u8..20).map(|b| b.wrapping_mul(37)).collect();
    for len in 0..=data.len() {
        assert_eq!(
            crc32(&data[..len]),
            bitwise_crc32(&data[..len]),
            "len {len}"
        );
    }
}

fn bitwise_crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn checksum_formats_like_hadoop() {
    assert_eq!(TeraChecksum::new().to_string(), "0");
    assert_eq!(
        TeraChecksum::from_value(1 << 64).to_string(),
        "10000000000000000"
    );
    assert_eq!(TeraChecksum::from_value(0xabc).to_string(), "abc");

    let mut sum = TeraChecksum::from_value(u128::MAX);
    sum.add_crc(2);
    assert_eq!(sum.value(), 1, "the 128-bit sum wraps");

    // TeraGen's counter keeps only the low 64 bits, as a Java long.
    assert_eq!(TeraChecksum::from_value((1 << 64) + 5).counter_value(), 5);
    assert_eq!(TeraChecksum::from_value(1 << 63).counter_value(), i64::MIN);

    let mut a = TeraChecksum::new();
    a.add_crc(u32::MAX);
    let mut b = TeraChecksum::new();
    b.add_crc(7);
    a.merge(b);
    assert_eq!(a.value(), u128::from(u32::MAX) + 7);
}
