//! `-io rawbytes` output of a program: 4-byte big-endian lengths, key then value. Records
//! must be what an independent decoder finds, and a stream that ends inside a record (or has
//! a negative length) an error, never a panic or a huge allocation.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use sluice_streaming::protocol::{Framing, RecordReader};

type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// The records before the first malformed one, and whether the stream ended cleanly.
fn decode(mut data: &[u8]) -> (Records, bool) {
    let mut out = Records::new();
    let take = |data: &mut &[u8]| -> Option<Vec<u8>> {
        let (len, rest) = data.split_first_chunk::<4>()?;
        let len = usize::try_from(i32::from_be_bytes(*len)).ok()?;
        let bytes = rest.get(..len)?.to_vec();
        *data = &rest[len..];
        Some(bytes)
    };
    while !data.is_empty() {
        let Some(key) = take(&mut data) else {
            return (out, false);
        };
        let Some(value) = take(&mut data) else {
            return (out, false);
        };
        out.push((key, value));
    }
    (out, true)
}

fuzz_target!(|data: &[u8]| {
    let Some((&cap, data)) = data.split_first() else {
        return;
    };
    let reader = RecordReader {
        framing: Framing::RawBytes,
        separator: b"\t".to_vec(),
        key_fields: 1,
    };
    let (expected, clean) = decode(data);
    let mut input = BufReader::with_capacity(usize::from(cap) + 1, data);
    let mut buf = Vec::new();
    let mut got = Records::new();
    let ended = loop {
        match reader.read(&mut input, &mut buf) {
            Ok(Some(record)) => got.push((record.key(&buf).to_vec(), record.value(&buf).to_vec())),
            Ok(None) => break true,
            Err(_) => break false,
        }
        assert!(
            got.len() <= data.len() / 8,
            "more records than 8-byte headers"
        );
    };
    assert_eq!(got, expected);
    assert_eq!(ended, clean);
});
