//! The `Writable` classes a SequenceFile's header names, and what Hadoop makes of one of their
//! serialised values: its Java `toString()` (what `SequenceFileAsTextInputFormat` and a
//! streaming program's text input show), and its typed bytes (`-io typedbytes`).
//!
//! A SequenceFile stores each key and value as its class's `write(DataOutput)` bytes; the
//! classes are named once, in the header. A reader that does not know a class cannot print
//! its values (Hadoop cannot either without the class on its classpath), but can still pass
//! the serialised bytes on (`SequenceFileAsBinaryInputFormat`).

use crate::java::{bytes_writable_text, decode_utf8_lossy, double_to_string, float_to_string};
use crate::typedbytes;
use crate::writable::{WritableError, WritableReader};

/// A `Writable` class of `org.apache.hadoop.io` whose values sluice reads and prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WritableType {
    /// `Text`: vint length, UTF-8 bytes.
    Text,
    /// `BytesWritable`: 4-byte length, bytes.
    Bytes,
    /// `IntWritable`: 4 bytes big-endian.
    Int,
    /// `LongWritable`: 8 bytes big-endian.
    Long,
    /// `VIntWritable`: a vint.
    VInt,
    /// `VLongWritable`: a vlong.
    VLong,
    /// `BooleanWritable`: one byte.
    Boolean,
    /// `ByteWritable`: one signed byte.
    Byte,
    /// `ShortWritable`: 2 bytes big-endian.
    Short,
    /// `FloatWritable`: a big-endian IEEE float.
    Float,
    /// `DoubleWritable`: a big-endian IEEE double.
    Double,
    /// `NullWritable`: no bytes at all.
    Null,
    /// `MD5Hash`: 16 bytes.
    Md5,
}

/// Every type, for lookups by name.
const ALL: [WritableType; 13] = [
    WritableType::Text,
    WritableType::Bytes,
    WritableType::Int,
    WritableType::Long,
    WritableType::VInt,
    WritableType::VLong,
    WritableType::Boolean,
    WritableType::Byte,
    WritableType::Short,
    WritableType::Float,
    WritableType::Double,
    WritableType::Null,
    WritableType::Md5,
];

impl WritableType {
    /// The Java class name, as a SequenceFile header spells it.
    pub fn class_name(self) -> &'static str {
        match self {
            WritableType::Text => "org.apache.hadoop.io.Text",
            WritableType::Bytes => "org.apache.hadoop.io.BytesWritable",
            WritableType::Int => "org.apache.hadoop.io.IntWritable",
            WritableType::Long => "org.apache.hadoop.io.LongWritable",
            WritableType::VInt => "org.apache.hadoop.io.VIntWritable",
            WritableType::VLong => "org.apache.hadoop.io.VLongWritable",
            WritableType::Boolean => "org.apache.hadoop.io.BooleanWritable",
            WritableType::Byte => "org.apache.hadoop.io.ByteWritable",
            WritableType::Short => "org.apache.hadoop.io.ShortWritable",
            WritableType::Float => "org.apache.hadoop.io.FloatWritable",
            WritableType::Double => "org.apache.hadoop.io.DoubleWritable",
            WritableType::Null => "org.apache.hadoop.io.NullWritable",
            WritableType::Md5 => "org.apache.hadoop.io.MD5Hash",
        }
    }

    /// The type of a class name, `None` for a class sluice does not know.
    pub fn from_class_name(name: &str) -> Option<WritableType> {
        ALL.into_iter().find(|t| t.class_name() == name)
    }

    /// Checks that `bytes` are exactly one serialised value of this type.
    ///
    /// # Errors
    /// A truncated value, a negative length, or bytes left over.
    pub fn check(self, bytes: &[u8]) -> Result<(), WritableError> {
        let mut r = WritableReader::new(bytes);
        self.read(&mut r)?;
        r.finish(self.name())
    }

    /// The class's short name (`IntWritable`), for errors.
    fn name(self) -> &'static str {
        let class = self.class_name();
        class.rsplit('.').next().unwrap_or(class)
    }

    /// The serialised size of a fixed-size type; `None` for the length-prefixed and
    /// variable-length ones.
    fn fixed_size(self) -> Option<usize> {
        match self {
            WritableType::Int | WritableType::Float => Some(4),
            WritableType::Long | WritableType::Double => Some(8),
            WritableType::Boolean | WritableType::Byte => Some(1),
            WritableType::Short => Some(2),
            WritableType::Null => Some(0),
            WritableType::Md5 => Some(16),
            WritableType::Text | WritableType::Bytes | WritableType::VInt | WritableType::VLong => {
                None
            }
        }
    }

    /// Reads one value.
    fn read(self, r: &mut WritableReader<'_>) -> Result<Value, WritableError> {
        Ok(match self {
            WritableType::Text => Value::Text(r.read_text()?.to_vec()),
            WritableType::Bytes => Value::Bytes(r.read_bytes_writable()?.to_vec()),
            WritableType::VInt => Value::Int(r.read_vint()?),
            WritableType::VLong => Value::Long(r.read_vlong()?),
            WritableType::Boolean => Value::Boolean(r.read_boolean()?),
            _ => {
                let n = self.fixed_size().unwrap_or(0);
                let raw = r.read_raw(self.name(), n)?;
                let mut a = [0u8; 8];
                a[8 - n.min(8)..].copy_from_slice(&raw[..n.min(8)]);
                match self {
                    WritableType::Int => Value::Int(i32::from_be_bytes([a[4], a[5], a[6], a[7]])),
                    WritableType::Long => Value::Long(i64::from_be_bytes(a)),
                    WritableType::Byte => Value::Byte(i8::from_be_bytes([a[7]])),
                    WritableType::Short => Value::Short(i16::from_be_bytes([a[6], a[7]])),
                    WritableType::Float => {
                        Value::Float(f32::from_be_bytes([a[4], a[5], a[6], a[7]]))
                    }
                    WritableType::Double => Value::Double(f64::from_be_bytes(a)),
                    _ => Value::Raw(raw.to_vec()),
                }
            }
        })
    }

    /// Appends the value's Java `toString()`, UTF-8 encoded, to `out`: what
    /// `SequenceFileAsTextInputFormat` makes of it. A `Text` is decoded as Java decodes it
    /// (malformed bytes become U+FFFD), a `BytesWritable` is hex, `NullWritable` is `(null)`,
    /// an `MD5Hash` 32 hex digits, floating point numbers as Java prints them.
    ///
    /// # Errors
    /// `bytes` are not exactly one value of this type.
    pub fn to_text(self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), WritableError> {
        let mut r = WritableReader::new(bytes);
        let value = self.read(&mut r)?;
        r.finish(self.name())?;
        let mut s = String::new();
        match value {
            Value::Text(t) => s.push_str(&decode_utf8_lossy(&t)),
            Value::Bytes(b) => bytes_writable_text(&b, out),
            Value::Int(v) => s.push_str(&v.to_string()),
            Value::Long(v) => s.push_str(&v.to_string()),
            Value::Short(v) => s.push_str(&v.to_string()),
            Value::Byte(v) => s.push_str(&v.to_string()),
            Value::Boolean(v) => s.push_str(if v { "true" } else { "false" }),
            Value::Float(v) => float_to_string(v, &mut s),
            Value::Double(v) => double_to_string(v, &mut s),
            Value::Raw(raw) if self == WritableType::Md5 => {
                for b in raw {
                    s.push_str(&format!("{b:02x}"));
                }
            }
            Value::Raw(_) => s.push_str("(null)"),
        }
        out.extend_from_slice(s.as_bytes());
        Ok(())
    }

    /// Appends the value as Hadoop Streaming's `TypedBytesWritableOutput` writes it to a
    /// `-io typedbytes` program: numbers as typed numbers (a `VIntWritable` as an int, a
    /// `VLongWritable` as a long), `Text` as a string, `BytesWritable` as bytes; the classes
    /// with no typed form (`ShortWritable`, `NullWritable`, `MD5Hash`) as Hadoop's "last
    /// resort": a value of type 50 holding the class name (`WritableUtils.writeString`) and
    /// the serialised value.
    ///
    /// # Errors
    /// `bytes` are not exactly one value of this type.
    pub fn to_typed_bytes(self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), WritableError> {
        let mut r = WritableReader::new(bytes);
        let value = self.read(&mut r)?;
        r.finish(self.name())?;
        match value {
            Value::Text(t) => typedbytes::write_text(out, &t).map_err(|_| too_long(&t, "Text"))?,
            Value::Bytes(b) => {
                typedbytes::write_bytes(out, &b).map_err(|_| too_long(&b, "BytesWritable"))?;
            }
            Value::Int(v) => typedbytes::write_int(out, v),
            Value::Long(v) => typedbytes::write_long(out, v),
            Value::Byte(v) => typedbytes::write_byte(out, v),
            Value::Boolean(v) => typedbytes::write_bool(out, v),
            Value::Float(v) => typedbytes::write_float(out, v),
            Value::Double(v) => typedbytes::write_double(out, v),
            Value::Short(_) | Value::Raw(_) => {
                let class = self.class_name().as_bytes();
                let len = class.len() + 4 + bytes.len();
                out.push(WRITABLE_CODE);
                out.extend_from_slice(&java_int(len, self.name())?.to_be_bytes());
                out.extend_from_slice(&java_int(class.len(), self.name())?.to_be_bytes());
                out.extend_from_slice(class);
                out.extend_from_slice(bytes);
            }
        }
        Ok(())
    }
}

/// The typed bytes code of a serialised `Writable` (`Type.WRITABLE`).
const WRITABLE_CODE: u8 = 50;

/// A length as a Java `int`.
/// The error of a value of `what` too long for typed bytes' Java `int` length.
fn too_long(bytes: &[u8], what: &'static str) -> WritableError {
    WritableError::TooLong {
        what,
        length: bytes.len(),
    }
}

fn java_int(len: usize, what: &'static str) -> Result<i32, WritableError> {
    i32::try_from(len).map_err(|_| WritableError::TooLong { what, length: len })
}

/// One decoded value.
enum Value {
    Text(Vec<u8>),
    Bytes(Vec<u8>),
    Int(i32),
    Long(i64),
    Short(i16),
    Byte(i8),
    Boolean(bool),
    Float(f32),
    Double(f64),
    /// `NullWritable` (empty) and `MD5Hash` (16 bytes).
    Raw(Vec<u8>),
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn text(t: WritableType, bytes: &[u8]) -> String {
        let mut out = Vec::new();
        t.to_text(bytes, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn class_names_round_trip() {
        for t in ALL {
            assert_eq!(WritableType::from_class_name(t.class_name()), Some(t));
        }
        assert_eq!(WritableType::from_class_name("com.example.Mine"), None);
    }

    #[test]
    fn values_print_as_java_prints_them() {
        // Expected strings are what Java's toString() prints for these values.
        assert_eq!(text(WritableType::Text, b"\x03a\xffb"), "a\u{fffd}b");
        assert_eq!(text(WritableType::Bytes, b"\0\0\0\x02\x0a\xff"), "0a ff");
        assert_eq!(text(WritableType::Int, &(-7i32).to_be_bytes()), "-7");
        assert_eq!(
            text(WritableType::Long, &(1i64 << 40).to_be_bytes()),
            "1099511627776"
        );
        assert_eq!(text(WritableType::VInt, &[0x8f, 0xc8]), "200");
        assert_eq!(text(WritableType::VLong, &[0x7f]), "127");
        assert_eq!(text(WritableType::Boolean, &[1]), "true");
        assert_eq!(text(WritableType::Byte, &[0xff]), "-1");
        assert_eq!(text(WritableType::Short, &[0x80, 0]), "-32768");
        assert_eq!(
            text(WritableType::Float, &1.0e10f32.to_be_bytes()),
            "1.0E10"
        );
        assert_eq!(text(WritableType::Double, &0.001f64.to_be_bytes()), "0.001");
        assert_eq!(text(WritableType::Null, b""), "(null)");
        assert_eq!(
            text(WritableType::Md5, &[0xab; 16]),
            "abababababababababababababababab"
        );
    }

    #[test]
    fn malformed_values_are_errors() {
        let mut out = Vec::new();
        assert!(WritableType::Int.to_text(&[1, 2, 3], &mut out).is_err());
        assert!(WritableType::Int
            .to_text(&[1, 2, 3, 4, 5], &mut out)
            .is_err());
        assert!(WritableType::Text.to_text(&[5, b'a'], &mut out).is_err());
        assert!(WritableType::Bytes.check(&[0x80, 0, 0, 0]).is_err());
        assert!(WritableType::Null.check(&[0]).is_err());
        assert!(WritableType::VInt.check(&[0x8f, 1]).is_ok());
    }

    #[test]
    fn typed_bytes_follow_streamings_writable_output() {
        let mut out = Vec::new();
        WritableType::VInt
            .to_typed_bytes(&[0x8f, 0xc8], &mut out)
            .unwrap();
        assert_eq!(out, [3, 0, 0, 0, 200]);
        out.clear();
        WritableType::Text
            .to_typed_bytes(b"\x02hi", &mut out)
            .unwrap();
        assert_eq!(out, [7, 0, 0, 0, 2, b'h', b'i']);
        out.clear();
        WritableType::Null.to_typed_bytes(b"", &mut out).unwrap();
        let class = b"org.apache.hadoop.io.NullWritable";
        let mut want = vec![
            50,
            0,
            0,
            0,
            (class.len() + 4) as u8,
            0,
            0,
            0,
            class.len() as u8,
        ];
        want.extend_from_slice(class);
        assert_eq!(out, want);
    }
}
