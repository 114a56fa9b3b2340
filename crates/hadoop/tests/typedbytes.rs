//! Typed bytes: cutting streams into raw values, writers, text rendering, robustness.
#![allow(clippy::unwrap_used)] // helpers outside #[test] functions may unwrap too

use std::io::{BufReader, Cursor};

use proptest::prelude::*;
use sluice_hadoop::partition::{hash_bytes, hash_partition};
use sluice_hadoop::typedbytes::{self, Next, Scan, TypedBytesError};

fn text(raw: &[u8]) -> String {
    let mut out = Vec::new();
    typedbytes::to_text(raw, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// A few encoded values covering every container kind.
fn samples() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    let mut b = Vec::new();
    typedbytes::write_long(&mut b, 42);
    v.push(std::mem::take(&mut b));
    typedbytes::write_text(&mut b, b"a\xffb").unwrap();
    v.push(std::mem::take(&mut b));
    typedbytes::write_bytes(&mut b, &[0, 0xab]).unwrap();
    v.push(std::mem::take(&mut b));
    v.push(vec![9, 3, 0, 0, 0, 1, 9, 255, 8, 0, 0, 0, 1, 2, 1, 255]);
    v.push(vec![
        10, 0, 0, 0, 2, 7, 0, 0, 0, 1, b'b', 1, 5, 7, 0, 0, 0, 1, b'a', 6, 0, 0, 0, 0, 0, 0, 0, 0,
    ]);
    v.push(vec![8, 0, 0, 0, 0]);
    v.push(vec![60, 0, 0, 0, 1, 7]);
    v
}

#[test]
fn renders_like_java() {
    let s = samples();
    assert_eq!(text(&s[0]), "42");
    assert_eq!(text(&s[1]), "a\u{FFFD}b");
    assert_eq!(text(&s[2]), "00ab");
    assert_eq!(text(&s[3]), "[1, [], [true]]");
    assert_eq!(text(&s[4]), "{a=0.0, b=5}");
    assert_eq!(text(&s[5]), "[]");
    assert_eq!(text(&s[6]), "07");
    let mut d = Vec::new();
    typedbytes::write_double(&mut d, 1e7);
    assert_eq!(text(&d), "1.0E7");
}

#[test]
fn reader_cuts_a_stream_into_values_byte_by_byte() {
    let values = samples();
    let stream: Vec<u8> = values.concat();
    let mut reader = BufReader::with_capacity(1, Cursor::new(stream));
    let mut buf = Vec::new();
    for v in &values {
        buf.clear();
        assert_eq!(
            typedbytes::read_raw(&mut reader, &mut buf).unwrap(),
            Next::Value
        );
        assert_eq!(&buf, v);
    }
    assert_eq!(
        typedbytes::read_raw(&mut reader, &mut buf).unwrap(),
        Next::Eof
    );
}

#[test]
fn every_prefix_is_incomplete_and_truncation_is_an_error() {
    for v in samples() {
        assert_eq!(typedbytes::scan(&v).unwrap(), Scan::Value(v.len()));
        for cut in 0..v.len() {
            assert_eq!(
                typedbytes::scan(&v[..cut]).unwrap(),
                Scan::Incomplete,
                "{v:?} cut at {cut}"
            );
            let mut out = Vec::new();
            let got = typedbytes::read_raw(&mut Cursor::new(&v[..cut]), &mut out);
            if cut == 0 {
                assert_eq!(got.unwrap(), Next::Eof);
            } else {
                assert!(
                    matches!(got, Err(TypedBytesError::Truncated { .. })),
                    "{got:?}"
                );
            }
        }
    }
}

#[test]
fn top_level_marker_and_bad_codes() {
    let mut reader = Cursor::new(vec![255u8, 3, 0, 0, 0, 1]);
    let mut out = Vec::new();
    assert_eq!(
        typedbytes::read_raw(&mut reader, &mut out).unwrap(),
        Next::Marker
    );
    assert!(out.is_empty());
    assert_eq!(
        typedbytes::read_raw(&mut reader, &mut out).unwrap(),
        Next::Value
    );
    assert_eq!(out, [3, 0, 0, 0, 1]);
    assert!(matches!(
        typedbytes::scan(&[11]),
        Err(TypedBytesError::UnknownType { code: 11, .. })
    ));
    assert!(matches!(
        typedbytes::scan(&[8, 0, 0, 0, 1, 255]),
        Err(TypedBytesError::UnexpectedMarker { offset: 5 })
    ));
    assert!(matches!(
        typedbytes::scan(&[7, 255, 255, 255, 255]),
        Err(TypedBytesError::NegativeLength { .. })
    ));
    assert!(typedbytes::to_text(&[255], &mut out).is_err());
    assert!(typedbytes::to_text(&[], &mut out).is_err());
    // Mixed key types: Java's TreeMap throws ClassCastException.
    assert!(matches!(
        typedbytes::to_text(
            &[10, 0, 0, 0, 2, 3, 0, 0, 0, 1, 1, 5, 4, 0, 0, 0, 0, 0, 0, 0, 1, 1, 6],
            &mut out
        ),
        Err(TypedBytesError::UnorderableMapKeys { .. })
    ));
}

#[test]
fn deep_nesting_neither_overflows_nor_panics() {
    let depth = 200_000;
    let mut v = vec![9u8; depth];
    v.extend(std::iter::repeat_n(255u8, depth));
    assert_eq!(typedbytes::scan(&v).unwrap(), Scan::Value(v.len()));
    assert!(matches!(
        typedbytes::to_text(&v, &mut Vec::new()),
        Err(TypedBytesError::TooDeep)
    ));
}

#[test]
fn typed_keys_hash_like_bytes_writable() {
    // BinaryComparable.hashCode of [3, 0, 0, 0, 1]: 1*31^5 + 3*31^4 + 1.
    let raw = [3u8, 0, 0, 0, 1];
    assert_eq!(hash_bytes(&raw), 31i32.pow(5) + 3 * 31i32.pow(4) + 1);
    assert_eq!(hash_partition(hash_bytes(&raw), 1), 0);
}

proptest! {
    #[test]
    fn scan_read_raw_and_to_text_agree_on_any_bytes(bytes in prop::collection::vec(
        prop_oneof![0u8..12, Just(255u8), any::<u8>()], 0..40)) {
        let scanned = typedbytes::scan(&bytes);
        let mut out = Vec::new();
        let read = typedbytes::read_raw(&mut Cursor::new(&bytes), &mut out);
        match scanned {
            Ok(Scan::Value(n)) => {
                prop_assert!(matches!(read, Ok(Next::Value)));
                prop_assert_eq!(&out[..], &bytes[..n]);
                let _ = typedbytes::to_text(&bytes[..n], &mut Vec::new());
            }
            Ok(Scan::Marker) => prop_assert!(matches!(read, Ok(Next::Marker))),
            Ok(Scan::Incomplete) => {
                let ok = matches!(read, Ok(Next::Eof) | Err(TypedBytesError::Truncated { .. }));
                prop_assert!(ok, "incomplete scan but read_raw gave {:?}", read);
            }
            Err(_) => prop_assert!(read.is_err()),
        }
        let _ = typedbytes::to_text(&bytes, &mut Vec::new());
    }
}

/// A vector or map claiming two billion items, cut short: reported as truncated, not rendered
/// as two billion nulls (which took 24 GB before).
#[test]
fn huge_counts_at_the_end_of_input_are_truncation() {
    for code in [8u8, 10] {
        let bytes = [code, 0x7f, 0xff, 0xff, 0xff];
        assert!(matches!(
            typedbytes::to_text(&bytes, &mut Vec::new()),
            Err(TypedBytesError::Truncated { .. })
        ));
    }
    // A few missing items still read as nulls, as Java reads them.
    let mut out = Vec::new();
    typedbytes::to_text(&[8, 0, 0, 0, 2, 3, 0, 0, 0, 7], &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "[7, null]");
}

#[test]
fn maximum_depth_decodes_on_a_small_stack() {
    let depth = typedbytes::MAX_DECODE_DEPTH;
    let mut v = vec![9u8; depth];
    v.extend(std::iter::repeat_n(255u8, depth));
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || text(&v))
        .unwrap();
    let rendered = handle.join().unwrap();
    assert!(rendered.starts_with("[[[") && rendered.len() == 2 * depth);
}
