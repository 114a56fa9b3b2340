//! Sort of SequenceFiles: Hadoop's `sort` example (`org.apache.hadoop.examples.Sort`), the
//! benchmark run on RandomWriter's output.
//!
//! Hadoop's `Sort` is an identity map and an identity reduce between `SequenceFileInputFormat`
//! and `SequenceFileOutputFormat`: the framework sorts each partition by the key class's raw
//! comparator and `HashPartitioner` spreads keys by their `hashCode()`. Here the map turns each
//! serialised key into bytes whose unsigned order is the comparator's (the payload of a `Text`
//! or `BytesWritable`; a number with its sign bit flipped), so the engine's byte sort orders
//! the records as Hadoop does; the partitioner computes the key's `hashCode()` from those
//! bytes, and the reducer serialises the key again. Values are never looked into.

use std::sync::Arc;

use sluice_api::{
    Emit, ExecError, InputFormat, Job, MapInput, Mapper, OutputFormat, Partitioner, Reducer,
    SequenceOutput, Serialized, SortedInput, Stage, Values, Writable,
};
use sluice_hadoop::partition::{hash_bytes, hash_partition};
use sluice_hadoop::writable::{self, WritableKey, WritableReader};
use sluice_io::seqfile::{split_pair, CompressionKind, SeqCodec};

/// Sorts SequenceFiles whose keys are of class `key_class` and values of class
/// `value_class`, as Hadoop's `sort` example does; `None` if sluice does not know the key
/// class's comparator (see [`WritableKey`]).
///
/// Output: `part-r-NNNNN` SequenceFiles of the same classes, compressed as `compression` and
/// `codec` say (as `SequenceFileOutputFormat` compresses them), each sorted by
/// the key class's comparator (`Text` and `BytesWritable`: unsigned bytes after the length;
/// `IntWritable`, `LongWritable` and their variable-length forms: signed numbers;
/// `BooleanWritable`: false first), keys spread over the reducers by Hadoop's
/// `HashPartitioner`. Records with equal keys keep their input order (Hadoop leaves that
/// order to its sort). An input file whose header names other classes fails its map task.
pub fn sort_sequence_files(
    reducers: usize,
    key_class: &str,
    value_class: &str,
    compression: CompressionKind,
    codec: SeqCodec,
) -> Option<Job> {
    let key = WritableKey::from_class_name(key_class)?;
    let value_class = value_class.to_string();
    let key_class = key_class.to_string();
    let expected = (key_class.clone(), value_class.clone());
    let job = Job::new("sort", move |input: &MapInput| SeqSortMapper {
        key,
        classes: check_classes(input, &expected),
        sort_key: Vec::new(),
    })
    // Not `with_independent_keys`: a SequenceFile's sync entries depend on where each record
    // lands in its file, so a partition is written by one writer from start to end.
    .with_stage(
        Stage::new(reducers, move |_| SeqSortReducer {
            key,
            serialised: Vec::new(),
        })
        .with_partitioner(Arc::new(WritableHashPartitioner(key))),
    )
    .with_input(InputFormat::SequenceFile)
    // The mapper emits the key's sort form and the value as it was serialized.
    .with_map_output_types(sort_form_writable(key), Writable::Raw)
    // Keys and values are serialised objects already: written as they are.
    .with_output(OutputFormat::SequenceFile(SequenceOutput {
        key_class,
        value_class,
        key: Serialized::Raw,
        value: Serialized::Raw,
        compression,
        codec,
    }));
    Some(job)
}

/// How Hadoop serializes a key of class `key` that the mapper emits in its sort form
/// ([`sort_key`]): a `Text` or `BytesWritable` is its payload, fixed-width numbers and booleans
/// have their serialized width, variable-length numbers do not.
fn sort_form_writable(key: WritableKey) -> Writable {
    match key {
        WritableKey::Text => Writable::Text,
        WritableKey::Bytes => Writable::Bytes,
        WritableKey::Int | WritableKey::Long | WritableKey::Boolean => Writable::Raw,
        WritableKey::VInt | WritableKey::VLong => Writable::SortedVarNumber,
    }
}

/// Whether the split's file holds the job's classes; the error names the file otherwise.
fn check_classes(input: &MapInput, expected: &(String, String)) -> Result<(), String> {
    match &input.record_classes {
        Some(classes) if classes == expected => Ok(()),
        Some((key, value)) => Err(format!(
            "{} holds {key} keys and {value} values, but the sort's input is {} / {} (the \
             classes of the first input file)",
            input.location, expected.0, expected.1
        )),
        None => Err(format!("{} is not read as a SequenceFile", input.location)),
    }
}

struct SeqSortMapper {
    key: WritableKey,
    /// Whether this task's file has the job's classes (checked at the first record, so that an
    /// empty split of any file passes, as in Hadoop).
    classes: Result<(), String>,
    sort_key: Vec<u8>,
}

impl Mapper for SeqSortMapper {
    fn map(&mut self, _offset: u64, record: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if let Err(message) = &self.classes {
            return Err(ExecError::User {
                message: message.clone(),
            });
        }
        let (key, value) = split_pair(record).ok_or_else(|| ExecError::User {
            message: "a SequenceFile record without its key length".into(),
        })?;
        sort_key(self.key, key, &mut self.sort_key).map_err(|e| ExecError::User {
            message: format!(
                "a key that is not a serialised {}: {e}",
                self.key.class_name()
            ),
        })?;
        out.emit(&self.sort_key, value)
    }
}

/// Writes into `out` the bytes of the serialised key `serialised` whose unsigned byte order is
/// the order of `key`'s comparator.
///
/// # Errors
/// `serialised` is not exactly one serialised key of the class.
pub(crate) fn sort_key(
    key: WritableKey,
    serialised: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), writable::WritableError> {
    out.clear();
    let mut reader = WritableReader::new(serialised);
    match key {
        WritableKey::Text => out.extend_from_slice(reader.read_text()?),
        WritableKey::Bytes => out.extend_from_slice(reader.read_bytes_writable()?),
        WritableKey::Boolean => out.push(u8::from(reader.read_boolean()?)),
        WritableKey::Int => out.extend_from_slice(&flip_int(reader.read_int()?)),
        WritableKey::VInt => out.extend_from_slice(&flip_int(reader.read_vint()?)),
        WritableKey::Long => out.extend_from_slice(&flip_long(reader.read_long()?)),
        WritableKey::VLong => out.extend_from_slice(&flip_long(reader.read_vlong()?)),
    }
    reader.finish("key")
}

/// A signed number as big-endian bytes that order as the numbers do: the sign bit flipped.
fn flip_int(value: i32) -> [u8; 4] {
    let mut bytes = value.to_be_bytes();
    bytes[0] ^= 0x80;
    bytes
}

/// [`flip_int`] for a long.
fn flip_long(value: i64) -> [u8; 8] {
    let mut bytes = value.to_be_bytes();
    bytes[0] ^= 0x80;
    bytes
}

/// The number [`flip_int`] or [`flip_long`] made, as an `i64`; `None` for another length.
fn unflip(bytes: &[u8]) -> Option<i64> {
    match *bytes {
        [a, b, c, d] => Some(i64::from(i32::from_be_bytes([a ^ 0x80, b, c, d]))),
        [a, b, c, d, e, f, g, h] => Some(i64::from_be_bytes([a ^ 0x80, b, c, d, e, f, g, h])),
        _ => None,
    }
}

/// The serialised key whose [`sort_key`] is `sort_key`, into `out`.
fn serialise(key: WritableKey, sort_key: &[u8], out: &mut Vec<u8>) -> Result<(), ExecError> {
    out.clear();
    let bad = || ExecError::User {
        message: format!(
            "a sort key of {} bytes is not a {}",
            sort_key.len(),
            key.class_name()
        ),
    };
    let write_err = |e: writable::WritableError| ExecError::User {
        message: e.to_string(),
    };
    match key {
        WritableKey::Text => writable::write_text(out, sort_key).map_err(write_err)?,
        WritableKey::Bytes => writable::write_bytes_writable(out, sort_key).map_err(write_err)?,
        WritableKey::Boolean => match sort_key {
            [b] => writable::write_boolean(out, *b != 0),
            _ => return Err(bad()),
        },
        WritableKey::Int | WritableKey::VInt => {
            let value = unflip(sort_key)
                .and_then(|v| i32::try_from(v).ok())
                .filter(|_| sort_key.len() == 4)
                .ok_or_else(bad)?;
            if key == WritableKey::Int {
                writable::write_int(out, value);
            } else {
                writable::write_vint(out, value);
            }
        }
        WritableKey::Long | WritableKey::VLong => {
            let value = unflip(sort_key)
                .filter(|_| sort_key.len() == 8)
                .ok_or_else(bad)?;
            if key == WritableKey::Long {
                writable::write_long(out, value);
            } else {
                writable::write_vlong(out, value);
            }
        }
    }
    Ok(())
}

/// Hadoop's `HashPartitioner` over the key's `hashCode()`, computed from its [`sort_key`].
#[derive(Debug, Clone, Copy)]
struct WritableHashPartitioner(WritableKey);

impl Partitioner for WritableHashPartitioner {
    fn partition(&self, sort_key: &[u8], partitions: usize) -> usize {
        if partitions <= 1 {
            return 0;
        }
        let hash = match self.0 {
            // `WritableComparator.hashBytes` over the bytes, as `BinaryComparable.hashCode()`.
            WritableKey::Text | WritableKey::Bytes => hash_bytes(sort_key),
            // `BooleanWritable.hashCode()`: 0 for true, 1 for false.
            WritableKey::Boolean => i32::from(sort_key == [0]),
            // The value; for a long, its low 32 bits (`LongWritable.hashCode()` is
            // `(int) value`).
            WritableKey::Int | WritableKey::VInt | WritableKey::Long | WritableKey::VLong => {
                let [.., a, b, c, d] = unflip(sort_key).unwrap_or(0).to_be_bytes();
                i32::from_be_bytes([a, b, c, d])
            }
        };
        hash_partition(hash, partitions)
    }
}

/// The identity reducer, serialising each key again.
struct SeqSortReducer {
    key: WritableKey,
    serialised: Vec<u8>,
}

impl Reducer for SeqSortReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        serialise(self.key, key, &mut self.serialised)?;
        while let Some(value) = values.next_value()? {
            out.emit(&self.serialised, value)?;
        }
        Ok(())
    }

    fn run(&mut self, input: &mut dyn SortedInput, out: &mut dyn Emit) -> Result<(), ExecError> {
        while input.advance()? {
            serialise(self.key, input.key(), &mut self.serialised)?;
            out.emit(&self.serialised, input.value())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each key class's sort keys order as Java orders the values, serialise back to the
    /// same bytes, and partition by the class's `hashCode()`.
    #[test]
    fn sort_keys_order_serialise_and_hash_as_hadoop() {
        let longs = [i64::MIN, -(1 << 40), -5, -1, 0, 1, 7, 1 << 40, i64::MAX];
        for class in [WritableKey::Long, WritableKey::VLong] {
            let mut previous: Option<Vec<u8>> = None;
            for &v in &longs {
                let mut s = Vec::new();
                if class == WritableKey::Long {
                    writable::write_long(&mut s, v);
                } else {
                    writable::write_vlong(&mut s, v);
                }
                let mut k = Vec::new();
                sort_key(class, &s, &mut k).unwrap();
                if let Some(p) = &previous {
                    assert!(p < &k, "{v}");
                }
                let mut back = Vec::new();
                serialise(class, &k, &mut back).unwrap();
                assert_eq!(back, s);
                // `(int) value` in Java keeps the low 32 bits.
                let low = i32::from_be_bytes(v.to_be_bytes()[4..].try_into().unwrap());
                let p = WritableHashPartitioner(class).partition(&k, 7);
                assert_eq!(p, hash_partition(low, 7));
                assert_eq!(p, hash_partition(class.hash_code(&s).unwrap(), 7));
                previous = Some(k);
            }
        }
        let ints = [i32::MIN, -300, -1, 0, 1, 300, i32::MAX];
        let mut previous: Option<Vec<u8>> = None;
        for &v in &ints {
            let mut s = Vec::new();
            writable::write_int(&mut s, v);
            let mut k = Vec::new();
            sort_key(WritableKey::Int, &s, &mut k).unwrap();
            if let Some(p) = &previous {
                assert!(p < &k);
            }
            assert_eq!(
                WritableHashPartitioner(WritableKey::Int).partition(&k, 5),
                hash_partition(v, 5)
            );
            previous = Some(k);
        }
        // Text: the payload, hashed as `Text.hashCode()`, serialised with its vint length.
        let mut s = Vec::new();
        writable::write_text(&mut s, b"hello world").unwrap();
        let mut k = Vec::new();
        sort_key(WritableKey::Text, &s, &mut k).unwrap();
        assert_eq!(k, b"hello world");
        let mut back = Vec::new();
        serialise(WritableKey::Text, &k, &mut back).unwrap();
        assert_eq!(back, s);
        // A key followed by stray bytes is refused.
        s.push(0);
        assert!(sort_key(WritableKey::Text, &s, &mut k).is_err());
    }
}
