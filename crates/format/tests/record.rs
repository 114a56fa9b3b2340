//! Record encoding: round trips and robustness of `decode` against arbitrary bytes.

use proptest::prelude::*;
use sluice_format::record::{self, RecordSpan};
use sluice_format::FormatError;

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..max)
}

/// Lengths around the 1-, 2- and 3-byte varint boundaries as well as small ones.
fn length() -> impl Strategy<Value = usize> {
    prop_oneof![0..4usize, 120..136usize, 16_380..16_390usize]
}

fn assert_corrupt_at(result: Result<RecordSpan, FormatError>, pos: usize) {
    match result {
        Err(FormatError::Corrupt {
            offset,
            source_name,
            ..
        }) => {
            assert_eq!(offset, pos as u64);
            assert_eq!(source_name, "record");
        }
        other => panic!("expected Corrupt at {pos}, got {other:?}"),
    }
}

proptest! {
    #[test]
    fn round_trip_one_record(prefix in bytes(8), key in bytes(300), value in bytes(300)) {
        let mut buf = prefix.clone();
        record::encode(&mut buf, &key, &value).unwrap();
        prop_assert_eq!(buf.len(), prefix.len() + record::encoded_len(key.len(), value.len()));

        let span = record::decode(&buf, prefix.len()).unwrap();
        prop_assert_eq!(&buf[span.key_start..span.key_start + span.key_len], &key[..]);
        let value_start = span.key_start + span.key_len;
        prop_assert_eq!(&buf[value_start..value_start + span.value_len], &value[..]);
        prop_assert_eq!(span.next, buf.len());
    }

    #[test]
    fn round_trip_varint_boundary_lengths(key_len in length(), value_len in length()) {
        let key = vec![b'k'; key_len];
        let value = vec![b'v'; value_len];
        let mut buf = Vec::new();
        record::encode(&mut buf, &key, &value).unwrap();
        prop_assert_eq!(buf.len(), record::encoded_len(key_len, value_len));
        let span = record::decode(&buf, 0).unwrap();
        prop_assert_eq!((span.key_len, span.value_len, span.next), (key_len, value_len, buf.len()));
    }

    #[test]
    fn round_trip_record_sequence(records in prop::collection::vec((bytes(40), bytes(40)), 0..50)) {
        let mut buf = Vec::new();
        for (key, value) in &records {
            record::encode(&mut buf, key, value).unwrap();
        }
        let mut pos = 0;
        for (key, value) in &records {
            let span = record::decode(&buf, pos).unwrap();
            prop_assert_eq!(&buf[span.key_start..span.key_start + span.key_len], &key[..]);
            let value_start = span.key_start + span.key_len;
            prop_assert_eq!(&buf[value_start..value_start + span.value_len], &value[..]);
            pos = span.next;
        }
        prop_assert_eq!(pos, buf.len());
    }

    #[test]
    fn decode_of_arbitrary_bytes_never_panics(buf in bytes(64), pos in 0usize..80) {
        if let Ok(span) = record::decode(&buf, pos) {
            // Whatever it accepted must lie inside the buffer.
            prop_assert!(span.key_start >= pos);
            prop_assert!(span.next <= buf.len());
            prop_assert_eq!(span.next, span.key_start + span.key_len + span.value_len);
        }
    }

    #[test]
    fn decode_of_truncated_record_fails(key in bytes(200), value in bytes(200), cut in any::<prop::sample::Index>()) {
        let mut buf = Vec::new();
        record::encode(&mut buf, &key, &value).unwrap();
        let cut = cut.index(buf.len());
        assert_corrupt_at(record::decode(&buf[..cut], 0), 0);
    }
}

#[test]
fn decode_rejects_malformed_varints_and_lengths() {
    let cases: [&[u8]; 9] = [
        &[],
        &[0x80],
        &[0x00],
        // Overlong key length: six varint bytes.
        &[0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x00],
        // Key length above u32::MAX.
        &[0xff, 0xff, 0xff, 0xff, 0x1f, 0x00],
        // Key length u32::MAX, value length u32::MAX: far past the end, must not overflow.
        &[0xff, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f],
        // Key of 3 bytes, only 2 present.
        &[0x03, 0x00, b'a', b'b'],
        // Key fits, value of 2 bytes does not.
        &[0x01, 0x02, b'a', b'b'],
        // Overlong value length.
        &[0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
    ];
    for buf in cases {
        assert_corrupt_at(record::decode(buf, 0), 0);
    }
}

#[test]
fn decode_at_or_past_the_end_fails() {
    let mut buf = Vec::new();
    record::encode(&mut buf, b"k", b"v").unwrap();
    assert_corrupt_at(record::decode(&buf, buf.len()), buf.len());
    assert_corrupt_at(record::decode(&buf, buf.len() + 1), buf.len() + 1);
    assert_corrupt_at(record::decode(&buf, usize::MAX), usize::MAX);
}

#[test]
fn empty_key_and_value() {
    let mut buf = Vec::new();
    record::encode(&mut buf, b"", b"").unwrap();
    assert_eq!(buf, [0, 0]);
    assert_eq!(
        record::decode(&buf, 0).unwrap(),
        RecordSpan {
            key_start: 2,
            key_len: 0,
            value_len: 0,
            next: 2
        }
    );
}

#[test]
fn layout_is_lengths_then_key_then_value() {
    let mut buf = Vec::new();
    record::encode(&mut buf, b"key", &[b'v'; 200]).unwrap();
    assert_eq!(&buf[..4], &[3, 0xc8, 0x01, b'k']);
    assert_eq!(&buf[3..6], b"key");
    assert_eq!(buf.len(), 3 + 3 + 200);
    assert_eq!(record::encoded_len(3, 200), buf.len());
}

#[test]
fn encoded_len_saturates() {
    assert_eq!(record::encoded_len(usize::MAX, usize::MAX), usize::MAX);
}

#[test]
fn a_value_over_4_gib_is_an_error_not_a_panic() {
    // Zeroed pages of an allocation this large are only mapped, never touched: encoding must
    // fail on the length before it reads a byte.
    let huge = vec![0u8; usize::try_from(u64::from(u32::MAX) + 1).unwrap()];
    let mut buf = b"kept".to_vec();
    let err = record::encode(&mut buf, b"key", &huge).unwrap_err();
    assert!(
        matches!(
            err,
            sluice_format::FormatError::RecordTooLong { key_len: 3, value_len } if value_len == huge.len()
        ),
        "{err}"
    );
    assert!(err.to_string().contains("value 4294967296 bytes"), "{err}");
    assert_eq!(buf, b"kept", "nothing appended");
    let err = record::encode(&mut buf, &huge, b"").unwrap_err();
    assert!(err.to_string().contains("key 4294967296 bytes"), "{err}");
}
