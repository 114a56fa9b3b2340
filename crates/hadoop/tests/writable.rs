//! Checks `writable` against results recorded from Hadoop's own classes
//! (`tests/hadoop_vectors/writable_vectors.txt`, produced by
//! `tests/hadoop_vectors/WritableVectors.java` running Hadoop 3.4.2's `WritableUtils`, `Text`,
//! `BytesWritable`, `IntWritable`, `LongWritable`, `BooleanWritable`, `VIntWritable`,
//! `VLongWritable` and their registered `WritableComparator`s; the line formats are described
//! at the top of the generator), then checks the decoders on arbitrary bytes.
#![allow(clippy::unwrap_used)] // helpers outside #[test] functions may unwrap too

use std::cmp::Ordering;

use proptest::prelude::*;
use sluice_hadoop::writable::{
    decode_vint_size, vint_size, write_boolean, write_bytes_writable, write_int, write_long,
    write_text, write_vint, write_vlong, WritableError, WritableKey, WritableReader,
};

const VECTORS: &str = include_str!("hadoop_vectors/writable_vectors.txt");

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

fn unhex(hex: &str) -> Vec<u8> {
    if hex == "~" {
        return Vec::new();
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn key(class: &str) -> WritableKey {
    WritableKey::from_class_name(&format!("org.apache.hadoop.io.{class}"))
        .unwrap_or_else(|| panic!("unknown class {class}"))
}

fn sign(o: Ordering) -> &'static str {
    match o {
        Ordering::Less => "-1",
        Ordering::Equal => "0",
        Ordering::Greater => "1",
    }
}

/// Whether our error is the one Hadoop's exception stands for.
fn same_failure(exception: &str, ours: &WritableError) -> bool {
    match ours {
        WritableError::Truncated { .. } => exception == "EOFException",
        // A negative length makes Hadoop index out of its array.
        WritableError::NegativeLength { .. } => exception == "IndexOutOfBoundsException",
        WritableError::IntOverflow { .. } => exception == "IOException",
        WritableError::TrailingBytes { .. } | WritableError::TooLong { .. } => false,
    }
}

/// Checks a read against a recorded `value consumed` pair or `!Exception -`.
fn check_read<T: ToString>(
    input: &str,
    result: Result<T, WritableError>,
    position: usize,
    expected: &str,
    consumed: &str,
) {
    match (expected.strip_prefix('!'), result) {
        (None, Ok(value)) => {
            assert_eq!(value.to_string(), expected, "{input}");
            assert_eq!(position.to_string(), consumed, "{input}");
        }
        (Some(exception), Err(e)) => {
            assert!(
                same_failure(exception, &e),
                "{input}: Hadoop {exception}, we {e:?}"
            );
            assert_eq!(position, 0, "{input}: a failed read moved");
        }
        (None, Err(e)) => panic!("{input}: Hadoop read {expected}, we failed: {e}"),
        (Some(exception), Ok(v)) => {
            panic!(
                "{input}: Hadoop threw {exception}, we read {}",
                v.to_string()
            )
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "~".into();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn vlongs_are_written_as_hadoop_writes_them() {
    for f in lines("V") {
        let value: i64 = f[0].parse().unwrap();
        let mut out = Vec::new();
        write_vlong(&mut out, value);
        assert_eq!(hex(&out), f[1], "writeVLong({value})");
        assert_eq!(vint_size(value).to_string(), f[2], "getVIntSize({value})");
        assert_eq!(decode_vint_size(out[0]), out.len(), "{value}");
        let mut reader = WritableReader::new(&out);
        assert_eq!(reader.read_vlong(), Ok(value));
        assert!(reader.remaining().is_empty());
    }
    for f in lines("I") {
        let value: i32 = f[0].parse().unwrap();
        let mut out = Vec::new();
        write_vint(&mut out, value);
        assert_eq!(hex(&out), f[1], "writeVInt({value})");
        assert_eq!(WritableReader::new(&out).read_vint(), Ok(value));
    }
}

#[test]
fn vlongs_and_vints_are_read_as_hadoop_reads_them() {
    for f in lines("R") {
        let bytes = unhex(f[0]);
        let mut reader = WritableReader::new(&bytes);
        let result = reader.read_vlong();
        check_read(f[0], result, reader.position(), f[1], f[2]);
        let mut reader = WritableReader::new(&bytes);
        let result = reader.read_vint();
        check_read(f[0], result, reader.position(), f[3], f[4]);
    }
}

#[test]
fn writables_serialise_and_hash_as_in_hadoop() {
    let mut classes = std::collections::BTreeSet::new();
    for f in lines("S") {
        let (class, value, serialised, hash) = (f[0], f[1], unhex(f[2]), f[3]);
        let mut ours = Vec::new();
        let mut reader = WritableReader::new(&serialised);
        let read_back = match class {
            "Text" => {
                write_text(&mut ours, &unhex(value)).unwrap();
                hex(reader.read_text().unwrap())
            }
            "BytesWritable" => {
                write_bytes_writable(&mut ours, &unhex(value)).unwrap();
                hex(reader.read_bytes_writable().unwrap())
            }
            "IntWritable" => {
                write_int(&mut ours, value.parse().unwrap());
                reader.read_int().unwrap().to_string()
            }
            "VIntWritable" => {
                write_vint(&mut ours, value.parse().unwrap());
                reader.read_vint().unwrap().to_string()
            }
            "LongWritable" => {
                write_long(&mut ours, value.parse().unwrap());
                reader.read_long().unwrap().to_string()
            }
            "VLongWritable" => {
                write_vlong(&mut ours, value.parse().unwrap());
                reader.read_vlong().unwrap().to_string()
            }
            "BooleanWritable" => {
                write_boolean(&mut ours, value.parse().unwrap());
                reader.read_boolean().unwrap().to_string()
            }
            other => panic!("unknown class {other}"),
        };
        assert_eq!(hex(&ours), f[2], "{class} {value}");
        assert_eq!(read_back, value, "{class} {}", f[2]);
        assert!(reader.remaining().is_empty(), "{class} {}", f[2]);
        assert_eq!(
            key(class).hash_code(&serialised).unwrap().to_string(),
            hash,
            "{class} {value}"
        );
        classes.insert(class);
    }
    assert_eq!(classes.len(), WritableKey::ALL.len());
}

#[test]
fn malformed_writables_fail_where_hadoop_fails() {
    for f in lines("D") {
        let (class, input, expected, consumed) = (f[0], f[1], f[2], f[3]);
        let bytes = unhex(input);
        let mut reader = WritableReader::new(&bytes);
        let result = match class {
            "Text" => reader.read_text().map(hex),
            "BytesWritable" => reader.read_bytes_writable().map(hex),
            "IntWritable" => reader.read_int().map(|v| v.to_string()),
            "LongWritable" => reader.read_long().map(|v| v.to_string()),
            "BooleanWritable" => reader.read_boolean().map(|v| v.to_string()),
            other => panic!("unexpected class {other}"),
        };
        let position = reader.position();
        check_read(
            &format!("{class} {input}"),
            result,
            position,
            expected,
            consumed,
        );
    }
}

#[test]
fn raw_comparators_order_as_hadoops_do() {
    let mut compared = std::collections::BTreeSet::new();
    for f in lines("C") {
        let (class, a, b) = (f[0], unhex(f[1]), unhex(f[2]));
        let ours = key(class).compare(&a, &b).unwrap();
        assert_eq!(sign(ours), f[3], "{class} {} {}", f[1], f[2]);
        compared.insert(class);
    }
    assert_eq!(compared.len(), WritableKey::ALL.len());
}

#[test]
fn class_names_round_trip() {
    for key in WritableKey::ALL {
        assert_eq!(WritableKey::from_class_name(key.class_name()), Some(key));
    }
    assert_eq!(WritableKey::from_class_name("Text"), None);
}

proptest! {
    #[test]
    fn vlongs_round_trip(value in any::<i64>()) {
        let mut out = Vec::new();
        write_vlong(&mut out, value);
        prop_assert_eq!(out.len(), vint_size(value));
        let mut reader = WritableReader::new(&out);
        prop_assert_eq!(reader.read_vlong(), Ok(value));
        prop_assert!(reader.remaining().is_empty());
    }

    #[test]
    fn comparators_agree_with_the_values(a in any::<i64>(), b in any::<i64>()) {
        let (mut la, mut lb, mut va, mut vb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        write_long(&mut la, a);
        write_long(&mut lb, b);
        write_vlong(&mut va, a);
        write_vlong(&mut vb, b);
        prop_assert_eq!(WritableKey::Long.compare(&la, &lb), Ok(a.cmp(&b)));
        prop_assert_eq!(WritableKey::VLong.compare(&va, &vb), Ok(a.cmp(&b)));
    }

    #[test]
    fn text_keys_compare_as_their_bytes(
        a in prop::collection::vec(any::<u8>(), 0..300),
        b in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let (mut sa, mut sb) = (Vec::new(), Vec::new());
        write_text(&mut sa, &a).unwrap();
        write_text(&mut sb, &b).unwrap();
        prop_assert_eq!(WritableKey::Text.compare(&sa, &sb), Ok(a.cmp(&b)));
        let (mut ba, mut bb) = (Vec::new(), Vec::new());
        write_bytes_writable(&mut ba, &a).unwrap();
        write_bytes_writable(&mut bb, &b).unwrap();
        prop_assert_eq!(WritableKey::Bytes.compare(&ba, &bb), Ok(a.cmp(&b)));
    }

    /// Arbitrary bytes: every decoder returns a value or an error, never panics, and a failed
    /// read leaves the reader where it was.
    #[test]
    fn decoders_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..24)) {
        type Read = fn(&mut WritableReader<'_>) -> Result<(), WritableError>;
        let reads: [Read; 7] = [
            |r| r.read_vlong().map(drop),
            |r| r.read_vint().map(drop),
            |r| r.read_text().map(drop),
            |r| r.read_bytes_writable().map(drop),
            |r| r.read_int().map(drop),
            |r| r.read_long().map(drop),
            |r| r.read_boolean().map(drop),
        ];
        for read in reads {
            let mut reader = WritableReader::new(&bytes);
            while !reader.remaining().is_empty() {
                let before = reader.position();
                if read(&mut reader).is_err() {
                    prop_assert_eq!(reader.position(), before);
                    break;
                }
                prop_assert!(reader.position() > before);
            }
        }
        for key in WritableKey::ALL {
            let _ = key.compare(&bytes, &bytes);
            let _ = key.hash_code(&bytes);
        }
    }
}
