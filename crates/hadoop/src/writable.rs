//! Hadoop's `Writable` serialisation of the basic key and value types, and the raw comparators
//! Hadoop sorts them with.
//!
//! Inside a Hadoop task, keys and values travel as the bytes their `write(DataOutput)` methods
//! produce, and the sort compares those bytes with the key class's registered raw comparator,
//! without deserialising. Code that works on Hadoop's buffers (the JNI library that runs inside
//! Hadoop's map tasks, `sluice-jni`) has to read, write and order exactly those bytes.
//!
//! # Encodings
//!
//! | Java class | serialised as |
//! |---|---|
//! | `VIntWritable`, `VLongWritable` | a `WritableUtils` vint / vlong (below) |
//! | `Text` | vint byte count, then the UTF-8 bytes (not validated on reading, as in Hadoop) |
//! | `BytesWritable` | 4-byte big-endian byte count, then the bytes |
//! | `IntWritable`, `LongWritable` | 4 / 8 bytes, big-endian two's complement |
//! | `BooleanWritable` | one byte: 1 for true, 0 for false (reading: any non-zero is true) |
//!
//! `WritableUtils.writeVLong` (and `writeVInt`, the same encoding) writes a value in
//! `-112..=127` as that one byte. Any other value is a length byte followed by 1 to 8 bytes of
//! magnitude, most significant first, without leading zero bytes. For a value `v >= 0` the
//! magnitude is `v` and the length byte is `-112 - n` (`0x8f` to `0x88` for `n` = 1 to 8
//! bytes); for `v < 0` the magnitude is `!v` (one's complement, so `-113` is stored as 112) and
//! the length byte is `-120 - n` (`0x87` to `0x80`). So a vlong takes 1 to 9 bytes.
//!
//! # Raw comparators
//!
//! [`WritableKey::compare`] orders two serialised keys as the class's registered comparator
//! does: `Text` skips the vint length of each key and compares the rest as unsigned bytes (a
//! shorter prefix first); `BytesWritable` skips the 4-byte length likewise; `IntWritable` and
//! `LongWritable` compare the signed big-endian numbers; `BooleanWritable` compares the
//! serialised byte unsigned (so a `true` stored as `02` is greater than one stored as `01`).
//! `VIntWritable` and `VLongWritable` register no raw comparator, so Hadoop deserialises and
//! compares the numbers; so does sluice.
//!
//! # Untrusted bytes
//!
//! Every decoder returns a [`WritableError`] instead of panicking, and never reads a value
//! that does not fit its type. Where Hadoop reads a value it accepts, so does sluice, with two
//! exceptions where sluice is stricter:
//!
//! * A raw comparator or [`WritableKey::hash_code`] is given exactly one serialised key; bytes
//!   after it are an error ([`WritableError::TrailingBytes`]), and so is a length prefix that
//!   points past the end. Hadoop's comparators compare whatever bytes lie in the span they are
//!   given without looking at the length prefix, which gives the same order on well-formed
//!   keys.
//! * A read that fails leaves the [`WritableReader`] where it was, where Hadoop's stream would
//!   have consumed part of the value.
//!
//! Like Hadoop, decoding accepts a vint that uses more bytes than needed (`8f 05` is 5).
//!
//! The results are checked against what Hadoop's own classes produce
//! (`tests/hadoop_vectors/writable_vectors.txt`).

use std::cmp::Ordering;

use crate::partition;

/// Why bytes could not be read as a `Writable`, or a value could not be written as one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WritableError {
    /// The bytes end inside a value (Hadoop: `EOFException`).
    #[error("{what} at offset {offset} needs {needed} bytes but only {available} remain")]
    Truncated {
        /// The value being read (`vlong`, `Text`, ...).
        what: &'static str,
        /// Offset of the value's first byte in the bytes being read.
        offset: usize,
        /// How many bytes the value needs from `offset`, as far as it could be decoded.
        needed: u64,
        /// How many bytes there are from `offset` on.
        available: usize,
    },
    /// A length prefix is negative.
    #[error("{what} at offset {offset} has a negative length ({length})")]
    NegativeLength {
        /// The value being read.
        what: &'static str,
        /// Offset of the value's first byte.
        offset: usize,
        /// The length as stored.
        length: i64,
    },
    /// A vint holds a value outside Java's `int` range (Hadoop: `IOException` "value too long
    /// to fit in integer").
    #[error("vint at offset {offset} holds {value}, which does not fit in an int")]
    IntOverflow {
        /// Offset of the vint's first byte.
        offset: usize,
        /// The value it holds.
        value: i64,
    },
    /// A serialised key is followed by more bytes than it holds.
    #[error("{what} ends at byte {end} but {len} bytes were given")]
    TrailingBytes {
        /// The type of the key.
        what: &'static str,
        /// Where the serialised value ends.
        end: usize,
        /// How many bytes were given.
        len: usize,
    },
    /// A value is longer than a Java array can be (`Integer.MAX_VALUE` bytes), so Hadoop could
    /// not read it back.
    #[error("{what} of {length} bytes is longer than Hadoop's limit of 2147483647 bytes")]
    TooLong {
        /// The type being written.
        what: &'static str,
        /// The length of the value.
        length: usize,
    },
}

/// The total size in bytes (1 to 9) of the vint or vlong whose first byte is `first`:
/// `WritableUtils.decodeVIntSize`.
pub const fn decode_vint_size(first: u8) -> usize {
    match first {
        // -120..=-113: a non-negative value of 1 to 8 bytes (0x8f is 1 byte, 0x88 is 8).
        0x88..=0x8f => 0x91 - first as usize,
        // -128..=-121: a negative value of 1 to 8 bytes (0x87 is 1 byte, 0x80 is 8).
        0x80..=0x87 => 0x89 - first as usize,
        // -112..=127: the value itself.
        _ => 1,
    }
}

/// Whether the vint or vlong whose first byte is `first` is negative:
/// `WritableUtils.isNegativeVInt`.
pub const fn is_negative_vint(first: u8) -> bool {
    matches!(first, 0x80..=0x87 | 0x90..=0xff)
}

/// How many bytes [`write_vlong`] writes for `value` (1 to 9): `WritableUtils.getVIntSize`.
pub const fn vint_size(value: i64) -> usize {
    if value >= -112 && value <= 127 {
        return 1;
    }
    let magnitude = if value < 0 { !value } else { value };
    // The magnitude's bytes without leading zeros, plus the length byte.
    let significant_bits = 64 - magnitude.leading_zeros() as usize;
    significant_bits.div_ceil(8) + 1
}

/// Appends `value` as `WritableUtils.writeVLong` does (see the module docs).
pub fn write_vlong(out: &mut Vec<u8>, value: i64) {
    if (-112..=127).contains(&value) {
        out.push(value.to_be_bytes()[7]);
        return;
    }
    let (magnitude, mut first) = if value < 0 {
        (!value, 0x88u8)
    } else {
        (value, 0x90u8)
    };
    let mut rest = magnitude;
    while rest != 0 {
        rest >>= 8;
        first -= 1;
    }
    out.push(first);
    let len = decode_vint_size(first) - 1;
    out.extend_from_slice(&magnitude.to_be_bytes()[8 - len..]);
}

/// Appends `value` as `WritableUtils.writeVInt` does: the vlong encoding of the same number.
pub fn write_vint(out: &mut Vec<u8>, value: i32) {
    write_vlong(out, i64::from(value));
}

/// Appends a `Text` holding `text`: its length as a vint, then the bytes. The bytes should be
/// UTF-8; neither this function nor Hadoop's reader checks. Fails (writing nothing) when `text`
/// is longer than a Java array can be.
pub fn write_text(out: &mut Vec<u8>, text: &[u8]) -> Result<(), WritableError> {
    let len = java_length("Text", text.len())?;
    write_vint(out, len);
    out.extend_from_slice(text);
    Ok(())
}

/// Appends a `BytesWritable` holding `bytes`: its length as a big-endian `int`, then the bytes.
/// Fails (writing nothing) when `bytes` is longer than a Java array can be.
pub fn write_bytes_writable(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), WritableError> {
    let len = java_length("BytesWritable", bytes.len())?;
    write_int(out, len);
    out.extend_from_slice(bytes);
    Ok(())
}

/// Appends an `IntWritable`: 4 bytes, big-endian.
pub fn write_int(out: &mut Vec<u8>, value: i32) {
    out.extend_from_slice(&value.to_be_bytes());
}

/// Appends a `LongWritable`: 8 bytes, big-endian.
pub fn write_long(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(&value.to_be_bytes());
}

/// Appends a `BooleanWritable`: one byte, 1 for true and 0 for false.
pub fn write_boolean(out: &mut Vec<u8>, value: bool) {
    out.push(u8::from(value));
}

fn java_length(what: &'static str, length: usize) -> Result<i32, WritableError> {
    i32::try_from(length).map_err(|_| WritableError::TooLong { what, length })
}

/// Reads `Writable`s one after another from a byte slice, as a `DataInput` would.
///
/// Each `read_*` either returns the value and moves past it, or returns an error and stays
/// where it was.
#[derive(Debug, Clone)]
pub struct WritableReader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> WritableReader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> WritableReader<'a> {
        WritableReader { bytes, pos: 0 }
    }

    /// How many bytes have been read.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// The bytes not read yet.
    pub fn remaining(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    /// Fails with [`WritableError::TrailingBytes`] unless every byte has been read; `what`
    /// names the value the bytes should have held.
    pub fn finish(&self, what: &'static str) -> Result<(), WritableError> {
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(WritableError::TrailingBytes {
                what,
                end: self.pos,
                len: self.bytes.len(),
            })
        }
    }

    /// The next `n` bytes of a value that started at `start`; does not move on failure.
    fn take(
        &mut self,
        what: &'static str,
        start: usize,
        n: usize,
    ) -> Result<&'a [u8], WritableError> {
        let rest = &self.bytes[self.pos..];
        if rest.len() < n {
            return Err(WritableError::Truncated {
                what,
                offset: start,
                needed: (self.pos - start) as u64 + n as u64,
                available: self.bytes.len() - start,
            });
        }
        self.pos += n;
        Ok(&rest[..n])
    }

    /// `N` bytes of a value that starts here.
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], WritableError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(what, self.pos, N)?);
        Ok(out)
    }

    /// A vlong (`WritableUtils.readVLong`), non-canonical encodings included.
    pub fn read_vlong(&mut self) -> Result<i64, WritableError> {
        self.vlong("vlong")
    }

    fn vlong(&mut self, what: &'static str) -> Result<i64, WritableError> {
        let start = self.pos;
        let Some(&first) = self.bytes.get(start) else {
            return Err(WritableError::Truncated {
                what,
                offset: start,
                needed: 1,
                available: 0,
            });
        };
        let size = decode_vint_size(first);
        let encoded = self.take(what, start, size)?;
        if size == 1 {
            return Ok(i64::from(i8::from_be_bytes([first])));
        }
        // At most 8 magnitude bytes: they fill a u64 exactly.
        let magnitude = encoded[1..]
            .iter()
            .fold(0u64, |v, &b| v << 8 | u64::from(b));
        let value = i64::from_be_bytes(magnitude.to_be_bytes());
        Ok(if is_negative_vint(first) {
            !value
        } else {
            value
        })
    }

    /// A vint (`WritableUtils.readVInt`): a vlong that must fit in an `i32`.
    pub fn read_vint(&mut self) -> Result<i32, WritableError> {
        self.vint("vint")
    }

    fn vint(&mut self, what: &'static str) -> Result<i32, WritableError> {
        let start = self.pos;
        let value = self.vlong(what)?;
        i32::try_from(value).map_err(|_| {
            self.pos = start;
            WritableError::IntOverflow {
                offset: start,
                value,
            }
        })
    }

    /// The bytes of a `Text` (`Text.readFields`): a vint length, then that many bytes, which
    /// are returned as they are (not checked to be UTF-8, as in Hadoop).
    pub fn read_text(&mut self) -> Result<&'a [u8], WritableError> {
        let start = self.pos;
        let len = self.vint("Text")?;
        self.payload("Text", start, i64::from(len))
    }

    /// The bytes of a `BytesWritable` (`BytesWritable.readFields`): a big-endian `int` length,
    /// then that many bytes.
    pub fn read_bytes_writable(&mut self) -> Result<&'a [u8], WritableError> {
        let start = self.pos;
        let len = i32::from_be_bytes(self.array("BytesWritable")?);
        self.payload("BytesWritable", start, i64::from(len))
    }

    /// The `len` bytes that follow a length prefix read from `start`; on failure the reader
    /// goes back to `start`.
    fn payload(
        &mut self,
        what: &'static str,
        start: usize,
        len: i64,
    ) -> Result<&'a [u8], WritableError> {
        let result = match usize::try_from(len) {
            Ok(n) => self.take(what, start, n),
            Err(_) => Err(WritableError::NegativeLength {
                what,
                offset: start,
                length: len,
            }),
        };
        if result.is_err() {
            self.pos = start;
        }
        result
    }

    /// The next `n` bytes as they are: a fixed-size value's serialised form. `what` names the
    /// value in an error.
    pub fn read_raw(&mut self, what: &'static str, n: usize) -> Result<&'a [u8], WritableError> {
        self.take(what, self.pos, n)
    }

    /// An `IntWritable`: 4 bytes, big-endian.
    pub fn read_int(&mut self) -> Result<i32, WritableError> {
        Ok(i32::from_be_bytes(self.array("IntWritable")?))
    }

    /// A `LongWritable`: 8 bytes, big-endian.
    pub fn read_long(&mut self) -> Result<i64, WritableError> {
        Ok(i64::from_be_bytes(self.array("LongWritable")?))
    }

    /// A `BooleanWritable`: one byte, any non-zero value being true (`DataInput.readBoolean`).
    pub fn read_boolean(&mut self) -> Result<bool, WritableError> {
        let [b] = self.array("BooleanWritable")?;
        Ok(b != 0)
    }
}

/// A key type whose serialised form sluice can order and hash as Hadoop does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WritableKey {
    /// `org.apache.hadoop.io.Text`.
    Text,
    /// `org.apache.hadoop.io.BytesWritable`.
    Bytes,
    /// `org.apache.hadoop.io.IntWritable`.
    Int,
    /// `org.apache.hadoop.io.LongWritable`.
    Long,
    /// `org.apache.hadoop.io.VIntWritable`.
    VInt,
    /// `org.apache.hadoop.io.VLongWritable`.
    VLong,
    /// `org.apache.hadoop.io.BooleanWritable`.
    Boolean,
}

impl WritableKey {
    /// Every key type.
    pub const ALL: [WritableKey; 7] = [
        WritableKey::Text,
        WritableKey::Bytes,
        WritableKey::Int,
        WritableKey::Long,
        WritableKey::VInt,
        WritableKey::VLong,
        WritableKey::Boolean,
    ];

    /// The fully qualified Java class name (`org.apache.hadoop.io.Text`, ...).
    pub const fn class_name(self) -> &'static str {
        match self {
            WritableKey::Text => "org.apache.hadoop.io.Text",
            WritableKey::Bytes => "org.apache.hadoop.io.BytesWritable",
            WritableKey::Int => "org.apache.hadoop.io.IntWritable",
            WritableKey::Long => "org.apache.hadoop.io.LongWritable",
            WritableKey::VInt => "org.apache.hadoop.io.VIntWritable",
            WritableKey::VLong => "org.apache.hadoop.io.VLongWritable",
            WritableKey::Boolean => "org.apache.hadoop.io.BooleanWritable",
        }
    }

    /// The key type of a fully qualified Java class name (what a job configuration names in
    /// `mapreduce.map.output.key.class`), if it is one of these.
    pub fn from_class_name(name: &str) -> Option<WritableKey> {
        WritableKey::ALL
            .into_iter()
            .find(|k| k.class_name() == name)
    }

    /// The class's simple name (`Text`, `BytesWritable`, ...), used in errors.
    fn simple_name(self) -> &'static str {
        let name = self.class_name();
        name.rsplit('.').next().unwrap_or(name)
    }

    /// Orders two serialised keys as the class's raw comparator does (see the module docs).
    /// Each of `a` and `b` must hold exactly one serialised key.
    pub fn compare(self, a: &[u8], b: &[u8]) -> Result<Ordering, WritableError> {
        Ok(match self {
            WritableKey::Text | WritableKey::Bytes | WritableKey::Boolean => {
                self.comparable_bytes(a)?.cmp(self.comparable_bytes(b)?)
            }
            WritableKey::Int | WritableKey::VInt => self.int(a)?.cmp(&self.int(b)?),
            WritableKey::Long | WritableKey::VLong => self.long(a)?.cmp(&self.long(b)?),
        })
    }

    /// The `hashCode()` of the object `serialised` holds, which Hadoop's `HashPartitioner`
    /// turns into a partition ([`partition::hash_partition`]): [`partition::hash_bytes`] of
    /// the bytes of a `Text` or `BytesWritable`, the value of an `IntWritable` or
    /// `VIntWritable`, the low 32 bits of a `LongWritable` or `VLongWritable`, and 0 for a
    /// true `BooleanWritable`, 1 for a false one.
    pub fn hash_code(self, serialised: &[u8]) -> Result<i32, WritableError> {
        Ok(match self {
            WritableKey::Text | WritableKey::Bytes => {
                partition::hash_bytes(self.comparable_bytes(serialised)?)
            }
            WritableKey::Int | WritableKey::VInt => self.int(serialised)?,
            WritableKey::Long | WritableKey::VLong => {
                // Java's (int) cast of a long keeps its low 32 bits.
                let [.., a, b, c, d] = self.long(serialised)?.to_be_bytes();
                i32::from_be_bytes([a, b, c, d])
            }
            WritableKey::Boolean => {
                if self.comparable_bytes(serialised)? == [0] {
                    1
                } else {
                    0
                }
            }
        })
    }

    /// Reads exactly one key with `read` from `serialised`.
    fn whole<T>(
        self,
        serialised: &[u8],
        read: impl FnOnce(&mut WritableReader<'_>) -> Result<T, WritableError>,
    ) -> Result<T, WritableError> {
        let mut reader = WritableReader::new(serialised);
        let value = read(&mut reader)?;
        reader.finish(self.simple_name())?;
        Ok(value)
    }

    /// The bytes a byte-wise key compares: the payload of a `Text` or `BytesWritable`, the
    /// one byte of a `BooleanWritable`.
    fn comparable_bytes(self, serialised: &[u8]) -> Result<&[u8], WritableError> {
        let mut reader = WritableReader::new(serialised);
        let bytes = match self {
            WritableKey::Text => reader.read_text()?,
            WritableKey::Bytes => reader.read_bytes_writable()?,
            _ => reader.take("BooleanWritable", 0, 1)?,
        };
        reader.finish(self.simple_name())?;
        Ok(bytes)
    }

    /// The value of an `IntWritable` or `VIntWritable`.
    fn int(self, serialised: &[u8]) -> Result<i32, WritableError> {
        match self {
            WritableKey::VInt => self.whole(serialised, |r| r.vint("VIntWritable")),
            _ => self.whole(serialised, |r| r.read_int()),
        }
    }

    /// The value of a `LongWritable` or `VLongWritable`.
    fn long(self, serialised: &[u8]) -> Result<i64, WritableError> {
        match self {
            WritableKey::VLong => self.whole(serialised, |r| r.vlong("VLongWritable")),
            _ => self.whole(serialised, |r| r.read_long()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vlong(value: i64) -> Vec<u8> {
        let mut out = Vec::new();
        write_vlong(&mut out, value);
        out
    }

    #[test]
    fn vlong_boundaries() {
        assert_eq!(vlong(0), [0x00]);
        assert_eq!(vlong(127), [0x7f]);
        assert_eq!(vlong(-112), [0x90]);
        assert_eq!(vlong(128), [0x8f, 0x80]);
        assert_eq!(vlong(-113), [0x87, 0x70]);
        assert_eq!(vlong(256), [0x8e, 0x01, 0x00]);
        assert_eq!(
            vlong(i64::MAX),
            [0x88, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            vlong(i64::MIN),
            [0x80, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
    }

    #[test]
    fn failed_reads_do_not_move() {
        // A Text claiming 5 bytes with 2 present.
        let bytes = [0x05, b'a', b'b'];
        let mut reader = WritableReader::new(&bytes);
        assert_eq!(
            reader.read_text(),
            Err(WritableError::Truncated {
                what: "Text",
                offset: 0,
                needed: 6,
                available: 3
            })
        );
        assert_eq!(reader.position(), 0);
        // The same bytes read as a vint succeed.
        assert_eq!(reader.read_vint(), Ok(5));
        assert_eq!(reader.remaining(), b"ab");
        // A vint too large for an int.
        let mut reader = WritableReader::new(&[0x8c, 0x80, 0x00, 0x00, 0x00]);
        assert!(matches!(
            reader.read_vint(),
            Err(WritableError::IntOverflow {
                value: 2_147_483_648,
                ..
            })
        ));
        assert_eq!(reader.position(), 0);
    }

    #[test]
    fn keys_must_fill_their_span() {
        let mut a = Vec::new();
        write_text(&mut a, b"ab").unwrap();
        a.push(0);
        assert!(matches!(
            WritableKey::Text.compare(&a, &a),
            Err(WritableError::TrailingBytes { end: 3, len: 4, .. })
        ));
        assert!(WritableKey::Int.compare(&[0, 0, 0], &[0, 0, 0, 0]).is_err());
        assert!(WritableKey::Boolean.compare(&[], &[1]).is_err());
    }
}
