//! Hadoop Streaming's typed bytes (`-io typedbytes`), as in `org.apache.hadoop.typedbytes`.
//!
//! # Encoding
//!
//! Every value is a one-byte type code followed by its payload; integers are big-endian:
//!
//! | code | type | payload |
//! |---|---|---|
//! | 0 | bytes | `i32` length, bytes |
//! | 1 | byte | 1 byte |
//! | 2 | bool | 1 byte (non-zero is true) |
//! | 3 | int | `i32` |
//! | 4 | long | `i64` |
//! | 5 | float | IEEE 754 `f32` bits |
//! | 6 | double | IEEE 754 `f64` bits |
//! | 7 | string | `i32` length, UTF-8 bytes |
//! | 8 | vector | `i32` count, that many values |
//! | 9 | list | values, then the marker 255 |
//! | 10 | map | `i32` pair count, key, value, key, value... |
//! | 50-200 | application-specific (50 = a serialized `Writable`) | `i32` length, bytes |
//! | 255 | marker | none: ends a list |
//!
//! # How streaming uses it
//!
//! * **Child output** is cut into raw values, key then value, without interpreting them
//!   ([`read_raw`] / [`scan`]). A marker byte where a key should start makes Hadoop stop
//!   reading that child's output (the rest is ignored); a marker or end of input where a value
//!   should start makes the task fail.
//! * **Map input** under `TextInputFormat`: the key (byte offset, a `LongWritable`) is sent as
//!   a long (code 4, [`write_long`]) and the line (a `Text`) as a string (code 7,
//!   [`write_text`]: malformed UTF-8 is replaced by U+FFFD first, since Hadoop goes through
//!   `Text.toString()`). Unlike text mode, the key is not dropped.
//! * **Reduce input** and any later stage: the raw values a child produced are passed on
//!   byte for byte.
//! * **Job output** through `TextOutputFormat` is `toString()` of the decoded Java object
//!   ([`to_text`]).
//!
//! # Sorting and partitioning typed keys
//!
//! Map output keys are `TypedBytesWritable`, a `BytesWritable` subclass with no comparator
//! of its own, so Hadoop sorts them with the generic `WritableComparator`, which ends in
//! `BinaryComparable.compareTo`: **unsigned lexicographic order of the raw typed bytes**
//! (type code included; a shorter prefix first). No special sort key is needed: compare the
//! raw values as byte slices. Note this is not numeric order (`-1` as an int sorts after `1`).
//!
//! The default `HashPartitioner` uses `BinaryComparable.hashCode()` over the raw typed bytes,
//! as it does for a `Text` key over its bytes: [`hash_bytes`](crate::partition::hash_bytes) of
//! the raw value, then [`hash_partition`](crate::partition::hash_partition). No hash of its own
//! is needed either.
//!
//! # Where sluice is stricter than Hadoop
//!
//! Negative lengths or counts and a list cut short by the end of input (which Hadoop's raw
//! reader silently closes) are reported as errors by [`scan`] and [`read_raw`].

use std::cmp::Ordering;
use std::io::{self, BufRead};

use crate::java;

/// Type codes of the typed bytes format.
pub mod code {
    /// A byte array: `i32` length then the bytes.
    pub const BYTES: u8 = 0;
    /// One signed byte.
    pub const BYTE: u8 = 1;
    /// A boolean stored as one byte.
    pub const BOOL: u8 = 2;
    /// A big-endian `i32`.
    pub const INT: u8 = 3;
    /// A big-endian `i64`.
    pub const LONG: u8 = 4;
    /// A big-endian IEEE 754 `f32`.
    pub const FLOAT: u8 = 5;
    /// A big-endian IEEE 754 `f64`.
    pub const DOUBLE: u8 = 6;
    /// A UTF-8 string: `i32` length then the bytes.
    pub const STRING: u8 = 7;
    /// A vector: `i32` element count then the elements.
    pub const VECTOR: u8 = 8;
    /// A list: elements until [`MARKER`].
    pub const LIST: u8 = 9;
    /// A map: `i32` pair count then key, value, key, value...
    pub const MAP: u8 = 10;
    /// First application-specific code (also used for serialized Writables).
    pub const APPLICATION_FIRST: u8 = 50;
    /// Last application-specific code.
    pub const APPLICATION_LAST: u8 = 200;
    /// Ends a list.
    pub const MARKER: u8 = 255;
}

/// Deepest container nesting [`to_text`] decodes (it recurses); [`scan`] has no limit.
pub const MAX_DECODE_DEPTH: usize = 100;

/// Why typed bytes could not be read or rendered.
#[derive(Debug, thiserror::Error)]
pub enum TypedBytesError {
    /// The input ended inside a value.
    #[error(
        "typed bytes input ends inside a value (value started {offset} bytes earlier than the end)"
    )]
    Truncated {
        /// How many bytes of the incomplete value were available.
        offset: usize,
    },
    /// A type code that Hadoop does not know (11-49, 201-254).
    #[error("unknown typed bytes type code {code} at offset {offset}")]
    UnknownType {
        /// The code.
        code: u8,
        /// Its offset from the start of the value.
        offset: usize,
    },
    /// A length or element count below zero.
    #[error("negative typed bytes length {length} at offset {offset}")]
    NegativeLength {
        /// The length read.
        length: i32,
        /// Offset of its type code from the start of the value.
        offset: usize,
    },
    /// A value to write is longer than the `i32::MAX` bytes a typed bytes length can say.
    #[error(
        "a value of {length} bytes is too long for typed bytes (at most {} bytes)",
        i32::MAX
    )]
    TooLong {
        /// The value's length in bytes.
        length: usize,
    },
    /// A marker (255) where a value was required (inside a vector or map, or as a value).
    #[error("typed bytes marker (255) where a value was expected, at offset {offset}")]
    UnexpectedMarker {
        /// Its offset from the start of the value.
        offset: usize,
    },
    /// A map whose keys Java cannot order (containers, or keys of different types), which
    /// makes Hadoop fail with a `ClassCastException` when it prints the map.
    #[error("typed bytes map at offset {offset} has keys that cannot be ordered (mixed types or containers)")]
    UnorderableMapKeys {
        /// Offset of the map's type code.
        offset: usize,
    },
    /// Containers nested deeper than [`MAX_DECODE_DEPTH`].
    #[error("typed bytes containers nested deeper than {MAX_DECODE_DEPTH}")]
    TooDeep,
    /// Reading the input failed.
    #[error("I/O error reading typed bytes")]
    Io(#[from] io::Error),
}

/// What [`scan`] found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// A complete value occupies the first `n` bytes.
    Value(usize),
    /// The buffer starts with a marker byte (255) at top level: for Hadoop this ends a
    /// child's output stream. It is one byte long.
    Marker,
    /// The buffer holds only the beginning of a value (or nothing): read more. At the end of
    /// input this is an error unless the buffer is empty.
    Incomplete,
}

/// What [`read_raw`] read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// One complete value was appended to the output buffer.
    Value,
    /// A top-level marker byte was consumed (Hadoop stops reading the stream there).
    Marker,
    /// The input ended cleanly before any byte of a new value.
    Eof,
}

/// Where the core walker gets bytes from: a complete slice or a reader being drained.
trait Source {
    /// Makes bytes `pos..pos + n` of the current value available; `false` if input ends first.
    fn ensure(&mut self, pos: usize, n: usize) -> Result<bool, TypedBytesError>;
    /// The bytes of the current value made available so far.
    fn bytes(&self) -> &[u8];
}

struct SliceSource<'a>(&'a [u8]);

impl Source for SliceSource<'_> {
    fn ensure(&mut self, pos: usize, n: usize) -> Result<bool, TypedBytesError> {
        Ok(pos.checked_add(n).is_some_and(|end| end <= self.0.len()))
    }
    fn bytes(&self) -> &[u8] {
        self.0
    }
}

/// Copies exactly the bytes of one value from a reader into `out[start..]`, never consuming
/// beyond the value's end.
struct ReaderSource<'a, R> {
    reader: &'a mut R,
    out: &'a mut Vec<u8>,
    start: usize,
}

impl<R: BufRead> Source for ReaderSource<'_, R> {
    fn ensure(&mut self, pos: usize, n: usize) -> Result<bool, TypedBytesError> {
        let Some(want) = pos.checked_add(n) else {
            return Ok(false);
        };
        while self.out.len() - self.start < want {
            let missing = want - (self.out.len() - self.start);
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if available.is_empty() {
                return Ok(false);
            }
            let take = missing.min(available.len());
            self.out.extend_from_slice(&available[..take]);
            self.reader.consume(take);
        }
        Ok(true)
    }
    fn bytes(&self) -> &[u8] {
        &self.out[self.start..]
    }
}

enum Walk {
    Value(usize),
    Marker,
    /// Input ended before the first byte.
    Empty,
    /// Input ended inside the value after `usize` bytes.
    Short(usize),
}

/// Open containers while walking a value.
enum Frame {
    /// Values still expected by a vector or map.
    Remaining(u64),
    /// A list: values until the marker.
    List,
}

fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut x = [0u8; 4];
    if let Some(s) = b.get(at..at + 4) {
        x.copy_from_slice(s);
    }
    i32::from_be_bytes(x)
}

/// Finds the extent of one value without recursion (nesting depth is bounded only by input).
fn walk(src: &mut impl Source) -> Result<Walk, TypedBytesError> {
    let mut stack: Vec<Frame> = Vec::new();
    let mut pos = 0usize;
    loop {
        if !src.ensure(pos, 1)? {
            return Ok(if pos == 0 {
                Walk::Empty
            } else {
                Walk::Short(pos)
            });
        }
        let at = pos;
        let tc = src.bytes()[pos];
        // Byte length of a fixed-size item, or None for headers handled below.
        let fixed = match tc {
            code::BYTE | code::BOOL => Some(2),
            code::INT | code::FLOAT => Some(5),
            code::LONG | code::DOUBLE => Some(9),
            _ => None,
        };
        if let Some(n) = fixed {
            if !src.ensure(pos, n)? {
                return Ok(Walk::Short(src.bytes().len()));
            }
            pos += n;
        } else if tc == code::MARKER {
            match stack.last() {
                Some(Frame::List) => {
                    stack.pop();
                    pos += 1;
                }
                None if pos == 0 => return Ok(Walk::Marker),
                _ => return Err(TypedBytesError::UnexpectedMarker { offset: pos }),
            }
        } else if tc == code::LIST {
            stack.push(Frame::List);
            pos += 1;
            continue;
        } else {
            let known = matches!(tc, code::BYTES | code::STRING | code::VECTOR | code::MAP)
                || (code::APPLICATION_FIRST..=code::APPLICATION_LAST).contains(&tc);
            if !known {
                return Err(TypedBytesError::UnknownType {
                    code: tc,
                    offset: at,
                });
            }
            if !src.ensure(pos, 5)? {
                return Ok(Walk::Short(src.bytes().len()));
            }
            let length = be_i32(src.bytes(), pos + 1);
            let Ok(count) = u64::try_from(length) else {
                return Err(TypedBytesError::NegativeLength { length, offset: at });
            };
            pos += 5;
            match tc {
                code::VECTOR | code::MAP => {
                    let items = if tc == code::MAP { count * 2 } else { count };
                    if items > 0 {
                        stack.push(Frame::Remaining(items));
                        continue;
                    }
                }
                _ => {
                    let n = usize::try_from(count).unwrap_or(usize::MAX);
                    if !src.ensure(pos, n)? {
                        return Ok(Walk::Short(src.bytes().len()));
                    }
                    pos += n;
                }
            }
        }
        // One item is complete: count it against the enclosing containers.
        loop {
            match stack.last_mut() {
                None => return Ok(Walk::Value(pos)),
                Some(Frame::List) => break,
                Some(Frame::Remaining(n)) => {
                    *n -= 1;
                    if *n > 0 {
                        break;
                    }
                    stack.pop();
                }
            }
        }
    }
}

/// Measures the complete typed value at the start of `buf`, without copying.
///
/// Cost is proportional to the number of values nested inside (byte strings are skipped in
/// one step), so a caller that rescans a growing buffer should grow it geometrically.
pub fn scan(buf: &[u8]) -> Result<Scan, TypedBytesError> {
    Ok(match walk(&mut SliceSource(buf))? {
        Walk::Value(n) => Scan::Value(n),
        Walk::Marker => Scan::Marker,
        Walk::Empty | Walk::Short(_) => Scan::Incomplete,
    })
}

/// Reads exactly one raw typed value from `reader` and appends its bytes to `out` (which is
/// not cleared, so a caller can reuse one buffer for key and value).
///
/// Returns [`Next::Eof`] only if the input ends before the value's first byte; an end inside
/// a value is [`TypedBytesError::Truncated`]. On error, `out` may hold part of the value.
pub fn read_raw<R: BufRead>(reader: &mut R, out: &mut Vec<u8>) -> Result<Next, TypedBytesError> {
    let start = out.len();
    let mut src = ReaderSource { reader, out, start };
    match walk(&mut src)? {
        Walk::Value(_) => Ok(Next::Value),
        Walk::Marker => {
            // The marker byte was copied by `ensure`; it is not part of any value.
            src.out.truncate(start);
            Ok(Next::Marker)
        }
        Walk::Empty => Ok(Next::Eof),
        Walk::Short(n) => Err(TypedBytesError::Truncated { offset: n }),
    }
}

fn write_with_length(out: &mut Vec<u8>, tc: u8, bytes: &[u8]) -> Result<(), TypedBytesError> {
    // A length is a Java int: longer data cannot be sent at all (Java arrays stop there too).
    let len = i32::try_from(bytes.len()).map_err(|_| TypedBytesError::TooLong {
        length: bytes.len(),
    })?;
    out.push(tc);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
    Ok(())
}

/// Appends a byte array value (code 0), as Hadoop writes a `BytesWritable`.
///
/// # Errors
/// [`TypedBytesError::TooLong`] for more than `i32::MAX` bytes; `out` is then unchanged.
pub fn write_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), TypedBytesError> {
    write_with_length(out, code::BYTES, bytes)
}

/// Appends a byte value (code 1).
pub fn write_byte(out: &mut Vec<u8>, v: i8) {
    out.push(code::BYTE);
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends a boolean value (code 2).
pub fn write_bool(out: &mut Vec<u8>, v: bool) {
    out.extend_from_slice(&[code::BOOL, u8::from(v)]);
}

/// Appends an int value (code 3), as Hadoop writes an `IntWritable` or `VIntWritable`.
pub fn write_int(out: &mut Vec<u8>, v: i32) {
    out.push(code::INT);
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends a long value (code 4), as Hadoop writes a `LongWritable` such as the byte offset
/// key of `TextInputFormat`.
pub fn write_long(out: &mut Vec<u8>, v: i64) {
    out.push(code::LONG);
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends a float value (code 5).
pub fn write_float(out: &mut Vec<u8>, v: f32) {
    out.push(code::FLOAT);
    out.extend_from_slice(&v.to_bits().to_be_bytes());
}

/// Appends a double value (code 6).
pub fn write_double(out: &mut Vec<u8>, v: f64) {
    out.push(code::DOUBLE);
    out.extend_from_slice(&v.to_bits().to_be_bytes());
}

/// Appends a string value (code 7).
///
/// # Errors
/// [`TypedBytesError::TooLong`] for more than `i32::MAX` bytes; `out` is then unchanged.
pub fn write_string(out: &mut Vec<u8>, s: &str) -> Result<(), TypedBytesError> {
    write_with_length(out, code::STRING, s.as_bytes())
}

/// Appends a `Text` as Hadoop sends it: a string value (code 7) of the bytes decoded the way
/// `Text.toString()` does, so malformed UTF-8 arrives as U+FFFD (`EF BF BD`).
///
/// # Errors
/// [`TypedBytesError::TooLong`] if the decoded text takes more than `i32::MAX` bytes; `out` is
/// then unchanged.
pub fn write_text(out: &mut Vec<u8>, text: &[u8]) -> Result<(), TypedBytesError> {
    write_string(out, &java::decode_utf8_lossy(text))
}

/// A decoded value, shaped like the Java object `TypedBytesInput.read()` returns.
#[derive(Debug)]
enum Value {
    /// `org.apache.hadoop.record.Buffer` (code 0 and application codes).
    Buffer(Vec<u8>),
    Byte(i8),
    Bool(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    String(String),
    /// Vectors and lists both become `ArrayList`s.
    List(Vec<Value>),
    /// A `TreeMap`, already in key order.
    Map(Vec<(Value, Value)>),
    /// Java `null`: a marker or the end of input where an element was expected.
    Null,
}

struct Decoder<'a> {
    buf: &'a [u8],
    pos: usize,
}

/// Most items of a vector or map read as nulls past the end of the input.
const MAX_NULL_TAIL: usize = 1 << 16;

impl Decoder<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], TypedBytesError> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(TypedBytesError::Truncated { offset: self.pos });
        };
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], TypedBytesError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    fn length(&mut self, at: usize) -> Result<usize, TypedBytesError> {
        let length = i32::from_be_bytes(self.array()?);
        usize::try_from(length).map_err(|_| TypedBytesError::NegativeLength { length, offset: at })
    }

    /// Java reads the missing items of a vector or map cut short by the end of the input as
    /// nulls; a count in the billions would then make billions of them (Java runs out of
    /// memory). More than [`MAX_NULL_TAIL`] missing items is reported as truncated input.
    fn check_null_tail(&self, missing: usize) -> Result<(), TypedBytesError> {
        if self.pos >= self.buf.len() && missing > MAX_NULL_TAIL {
            return Err(TypedBytesError::Truncated { offset: self.pos });
        }
        Ok(())
    }

    /// `TypedBytesInput.read()`: `None` (Java null) at a marker or at the end of input.
    fn read(&mut self, depth: usize) -> Result<Value, TypedBytesError> {
        if depth > MAX_DECODE_DEPTH {
            return Err(TypedBytesError::TooDeep);
        }
        let at = self.pos;
        let Some(&tc) = self.buf.get(self.pos) else {
            return Ok(Value::Null);
        };
        self.pos += 1;
        Ok(match tc {
            code::BYTES | code::APPLICATION_FIRST..=code::APPLICATION_LAST => {
                let n = self.length(at)?;
                Value::Buffer(self.take(n)?.to_vec())
            }
            code::BYTE => Value::Byte(i8::from_be_bytes(self.array()?)),
            code::BOOL => Value::Bool(self.array::<1>()?[0] != 0),
            code::INT => Value::Int(i32::from_be_bytes(self.array()?)),
            code::LONG => Value::Long(i64::from_be_bytes(self.array()?)),
            code::FLOAT => Value::Float(f32::from_bits(u32::from_be_bytes(self.array()?))),
            code::DOUBLE => Value::Double(f64::from_bits(u64::from_be_bytes(self.array()?))),
            code::STRING => {
                let n = self.length(at)?;
                Value::String(java::decode_utf8_lossy(self.take(n)?).into_owned())
            }
            code::VECTOR => {
                let n = self.length(at)?;
                // Do not trust the count for preallocation: it comes from the input.
                let mut items = Vec::with_capacity(n.min(1024));
                for i in 0..n {
                    self.check_null_tail(n - i)?;
                    items.push(self.read(depth + 1)?);
                }
                Value::List(items)
            }
            code::LIST => {
                let mut items = Vec::new();
                loop {
                    match self.read(depth + 1)? {
                        Value::Null => break,
                        v => items.push(v),
                    }
                }
                Value::List(items)
            }
            code::MAP => {
                let n = self.length(at)?;
                let mut entries = Vec::with_capacity(n.min(1024));
                for i in 0..n {
                    self.check_null_tail(2 * (n - i))?;
                    let key = self.read(depth + 1)?;
                    let value = self.read(depth + 1)?;
                    entries.push((key, value));
                }
                Value::Map(tree_map(entries, at)?)
            }
            code::MARKER => Value::Null,
            _ => {
                return Err(TypedBytesError::UnknownType {
                    code: tc,
                    offset: at,
                })
            }
        })
    }
}

/// Java class of a map key, for `TreeMap`'s "same Comparable class" requirement.
fn key_class(v: &Value) -> Option<u8> {
    Some(match v {
        Value::Buffer(_) => 0,
        Value::Byte(_) => 1,
        Value::Bool(_) => 2,
        Value::Int(_) => 3,
        Value::Long(_) => 4,
        Value::Float(_) => 5,
        Value::Double(_) => 6,
        Value::String(_) => 7,
        Value::List(_) | Value::Map(_) | Value::Null => return None,
    })
}

/// `compareTo` between two keys of the same class.
fn java_cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Buffer(x), Value::Buffer(y)) => x.cmp(y),
        (Value::Byte(x), Value::Byte(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Int(x), Value::Int(y)) => x.cmp(y),
        (Value::Long(x), Value::Long(y)) => x.cmp(y),
        (Value::Float(x), Value::Float(y)) => java::double_cmp(f64::from(*x), f64::from(*y)),
        (Value::Double(x), Value::Double(y)) => java::double_cmp(*x, *y),
        (Value::String(x), Value::String(y)) => java::string_cmp(x, y),
        _ => Ordering::Equal,
    }
}

/// Orders entries as a `TreeMap` built by successive `put`s: sorted by key, and for equal
/// keys the first key is kept with the last value.
fn tree_map(
    entries: Vec<(Value, Value)>,
    at: usize,
) -> Result<Vec<(Value, Value)>, TypedBytesError> {
    let mut class = None;
    for (k, _) in &entries {
        let c = key_class(k).ok_or(TypedBytesError::UnorderableMapKeys { offset: at })?;
        if class.is_some_and(|prev| prev != c) {
            return Err(TypedBytesError::UnorderableMapKeys { offset: at });
        }
        class = Some(c);
    }
    let mut indexed: Vec<(usize, (Value, Value))> = entries.into_iter().enumerate().collect();
    indexed.sort_by(|(i, (a, _)), (j, (b, _))| java_cmp(a, b).then(i.cmp(j)));
    let mut out: Vec<(Value, Value)> = Vec::with_capacity(indexed.len());
    for (_, (k, v)) in indexed {
        match out.last_mut() {
            Some(last) if java_cmp(&last.0, &k) == Ordering::Equal => last.1 = v,
            _ => out.push((k, v)),
        }
    }
    Ok(out)
}

fn render(v: &Value, out: &mut String) {
    match v {
        Value::Buffer(b) => {
            for byte in b {
                out.push(char::from(HEX[usize::from(byte >> 4)]));
                out.push(char::from(HEX[usize::from(byte & 0x0F)]));
            }
        }
        Value::Byte(x) => out.push_str(&x.to_string()),
        Value::Bool(x) => out.push_str(if *x { "true" } else { "false" }),
        Value::Int(x) => out.push_str(&x.to_string()),
        Value::Long(x) => out.push_str(&x.to_string()),
        Value::Float(x) => java::float_to_string(*x, out),
        Value::Double(x) => java::double_to_string(*x, out),
        Value::String(s) => out.push_str(s),
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render(item, out);
            }
            out.push(']');
        }
        Value::Map(entries) => {
            out.push('{');
            for (i, (k, v)) in entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render(k, out);
                out.push('=');
                render(v, out);
            }
            out.push('}');
        }
        Value::Null => out.push_str("null"),
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends the text Hadoop's `TextOutputFormat` writes for a `TypedBytesWritable` holding
/// `raw`: the UTF-8 of Java's `toString()` of the decoded object.
///
/// Byte arrays print as lowercase hex, bools as `true`/`false`, floats and doubles as Java's
/// `Float.toString`/`Double.toString` (`1.0`, `1.0E7`, `NaN`, ...), vectors and lists as
/// `[a, b]`, maps as `{k=v, ...}` sorted by key (Java's order: strings by UTF-16 units, -0.0
/// before 0.0, byte arrays unsigned). Only the first value in `raw` is rendered.
///
/// Errors where Hadoop's task would fail: an empty or marker value, unknown codes,
/// truncation, map keys Java cannot order.
///
/// Known difference: Java 17 and older sometimes print a double or float with one more digit
/// than needed (e.g. `2.0E-3` style cases of JDK-4511638); this follows the shortest form
/// that newer JDKs print.
pub fn to_text(raw: &[u8], out: &mut Vec<u8>) -> Result<(), TypedBytesError> {
    let mut decoder = Decoder { buf: raw, pos: 0 };
    let value = decoder.read(0)?;
    if matches!(value, Value::Null) {
        return Err(match raw.first() {
            Some(_) => TypedBytesError::UnexpectedMarker { offset: 0 },
            None => TypedBytesError::Truncated { offset: 0 },
        });
    }
    let mut text = String::new();
    render(&value, &mut text);
    out.extend_from_slice(text.as_bytes());
    Ok(())
}
