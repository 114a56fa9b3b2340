//! Keys as Hadoop's raw comparators order them, turned into bytes that sort the same way as
//! unsigned bytes, and back.
//!
//! sluice's sort, merge and grouping order keys as unsigned bytes (with a normalised 8-byte
//! prefix doing most of the work). Rather than teach them Hadoop's comparators, each key is
//! converted once, when it crosses into native code, into a *sortable* form whose byte order is
//! the comparator's order, and converted back when it is written to `file.out`:
//!
//! | key class (comparator) | serialised | sortable form |
//! |---|---|---|
//! | `Text` | vint length, bytes | the bytes (the comparator skips the vint) |
//! | `BytesWritable` | 4-byte length, bytes | the bytes (the comparator skips the length) |
//! | `IntWritable`, `LongWritable` | big-endian two's complement | the same with the sign bit flipped |
//! | `LongWritable.DecreasingComparator` | 8 bytes | sign bit flipped, then every bit inverted |
//! | `VIntWritable`, `VLongWritable` | a vlong | 8 bytes, the number's sign bit flipped |
//! | `ByteWritable` | one signed byte | the byte with its sign bit flipped |
//! | `BooleanWritable`, `NullWritable` | one byte, nothing | unchanged (unsigned byte order) |
//!
//! Two keys are equal under the comparator exactly when their sortable forms are equal bytes,
//! so grouping (the combiner) is right too. Writing back re-encodes the lengths and vlongs the
//! way `Text.write`, `BytesWritable.write` and `WritableUtils.writeVLong` do: canonically,
//! which is what those classes always produce, so the bytes written are the bytes Java
//! serialised.

use sluice_hadoop::writable::{write_vlong, WritableError, WritableReader};

/// How a job's map output keys are compared (chosen on the Java side from the job's key
/// comparator; the numbers are the Java side's constants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// `Text` and `Text.Comparator`.
    Text,
    /// `BytesWritable` and `BytesWritable.Comparator`.
    Bytes,
    /// `IntWritable` and `IntWritable.Comparator`.
    Int,
    /// `LongWritable` and `LongWritable.Comparator`.
    Long,
    /// `LongWritable` and `LongWritable.DecreasingComparator`.
    LongDecreasing,
    /// `VIntWritable` or `VLongWritable` (compared as numbers).
    VLong,
    /// `ByteWritable` and `ByteWritable.Comparator`.
    Byte,
    /// `BooleanWritable` or `NullWritable`: the serialised bytes in unsigned byte order.
    Raw,
}

impl KeyKind {
    /// The kind the Java side numbered `code`.
    pub fn from_code(code: i32) -> Option<KeyKind> {
        Some(match code {
            1 => KeyKind::Text,
            2 => KeyKind::Bytes,
            3 => KeyKind::Int,
            4 => KeyKind::Long,
            5 => KeyKind::LongDecreasing,
            6 => KeyKind::VLong,
            7 => KeyKind::Byte,
            8 => KeyKind::Raw,
            _ => return None,
        })
    }

    /// Appends the sortable form of the serialised key `key` to `out` (cleared first).
    ///
    /// # Errors
    /// `key` is not one well-formed serialised key of this kind.
    pub fn to_sortable(self, key: &[u8], out: &mut Vec<u8>) -> Result<(), WritableError> {
        out.clear();
        let mut reader = WritableReader::new(key);
        match self {
            KeyKind::Text => out.extend_from_slice(reader.read_text()?),
            KeyKind::Bytes => out.extend_from_slice(reader.read_bytes_writable()?),
            KeyKind::Int => {
                let v = reader.read_int()?;
                out.extend_from_slice(&(v ^ i32::MIN).to_be_bytes());
            }
            KeyKind::Long => {
                let v = reader.read_long()?;
                out.extend_from_slice(&(v ^ i64::MIN).to_be_bytes());
            }
            KeyKind::LongDecreasing => {
                let v = reader.read_long()?;
                out.extend_from_slice(&(!(v ^ i64::MIN)).to_be_bytes());
            }
            KeyKind::VLong => {
                let v = reader.read_vlong()?;
                out.extend_from_slice(&(v ^ i64::MIN).to_be_bytes());
            }
            KeyKind::Byte => {
                let b = reader.read_raw("ByteWritable", 1)?;
                out.extend(b.iter().map(|b| b ^ 0x80));
            }
            KeyKind::Raw => {
                out.extend_from_slice(key);
                return Ok(());
            }
        }
        reader.finish("key")
    }

    /// Appends the serialised key whose sortable form is `sortable` to `out` (not cleared).
    ///
    /// # Errors
    /// `sortable` was not made by [`KeyKind::to_sortable`] (a wrong length, or a byte count
    /// too large for Java).
    pub fn to_serialised(self, sortable: &[u8], out: &mut Vec<u8>) -> Result<(), WritableError> {
        match self {
            KeyKind::Text => {
                sluice_hadoop::writable::write_text(out, sortable)?;
            }
            KeyKind::Bytes => {
                sluice_hadoop::writable::write_bytes_writable(out, sortable)?;
            }
            KeyKind::Int => {
                let v = i32::from_be_bytes(fixed(sortable)?);
                out.extend_from_slice(&(v ^ i32::MIN).to_be_bytes());
            }
            KeyKind::Long => {
                let v = i64::from_be_bytes(fixed(sortable)?);
                out.extend_from_slice(&(v ^ i64::MIN).to_be_bytes());
            }
            KeyKind::LongDecreasing => {
                let v = i64::from_be_bytes(fixed(sortable)?);
                out.extend_from_slice(&(!v ^ i64::MIN).to_be_bytes());
            }
            KeyKind::VLong => {
                let v = i64::from_be_bytes(fixed(sortable)?);
                write_vlong(out, v ^ i64::MIN);
            }
            KeyKind::Byte => {
                let [b] = fixed::<1>(sortable)?;
                out.push(b ^ 0x80);
            }
            KeyKind::Raw => out.extend_from_slice(sortable),
        }
        Ok(())
    }
}

/// `bytes` as an array of exactly `N` bytes.
fn fixed<const N: usize>(bytes: &[u8]) -> Result<[u8; N], WritableError> {
    let mut reader = WritableReader::new(bytes);
    let raw = reader.read_raw("sortable key", N)?;
    reader.finish("sortable key")?;
    let mut out = [0u8; N];
    out.copy_from_slice(raw);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_hadoop::writable::WritableKey;
    use std::cmp::Ordering;

    fn sortable(kind: KeyKind, key: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        kind.to_sortable(key, &mut out).unwrap();
        let mut back = Vec::new();
        kind.to_serialised(&out, &mut back).unwrap();
        assert_eq!(back, key, "{kind:?}: the round trip changed the key");
        out
    }

    /// Checks that `keys`, serialised, sort (as sortable forms) in the order given: the order
    /// of Java's comparator, written down from its definition, and, where sluice-hadoop has
    /// the comparator (checked there against vectors Hadoop produced), confirmed by it.
    fn assert_order(kind: KeyKind, keys: &[Vec<u8>]) {
        let reference = match kind {
            KeyKind::Text => Some(WritableKey::Text),
            KeyKind::Bytes => Some(WritableKey::Bytes),
            KeyKind::Int => Some(WritableKey::Int),
            KeyKind::Long => Some(WritableKey::Long),
            KeyKind::VLong => Some(WritableKey::VLong),
            _ => None,
        };
        for pair in keys.windows(2) {
            if let Some(r) = reference {
                assert_eq!(r.compare(&pair[0], &pair[1]).unwrap(), Ordering::Less);
            }
            let (a, b) = (sortable(kind, &pair[0]), sortable(kind, &pair[1]));
            assert_eq!(
                a.cmp(&b),
                Ordering::Less,
                "{kind:?}: {:02x?} should sort before {:02x?}",
                pair[0],
                pair[1]
            );
        }
    }

    fn text(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        sluice_hadoop::writable::write_text(&mut out, s).unwrap();
        out
    }

    #[test]
    fn text_keys_sort_as_unsigned_bytes_after_the_length() {
        // A longer key whose vint length is larger must not sort after because of it.
        let long = vec![b'a'; 200];
        assert_order(
            KeyKind::Text,
            &[
                text(b""),
                text(b"A"),
                text(&long),
                text(b"ab"),
                text(b"b"),
                text("é".as_bytes()),
                text(&[0xff]),
            ],
        );
    }

    #[test]
    fn bytes_writable_keys_sort_after_the_length() {
        let bw = |b: &[u8]| {
            let mut out = Vec::new();
            sluice_hadoop::writable::write_bytes_writable(&mut out, b).unwrap();
            out
        };
        assert_order(
            KeyKind::Bytes,
            &[
                bw(b""),
                bw(&[0, 0, 0]),
                bw(&[0, 1]),
                bw(&[0x7f]),
                bw(&[0x80, 0]),
            ],
        );
    }

    #[test]
    fn int_and_long_keys_sort_as_signed_numbers() {
        let ints: Vec<Vec<u8>> = [i32::MIN, -70000, -1, 0, 1, 255, 256, i32::MAX]
            .iter()
            .map(|v| v.to_be_bytes().to_vec())
            .collect();
        assert_order(KeyKind::Int, &ints);
        let longs: Vec<Vec<u8>> = [i64::MIN, -1 << 40, -1, 0, 7, 1 << 33, i64::MAX]
            .iter()
            .map(|v| v.to_be_bytes().to_vec())
            .collect();
        assert_order(KeyKind::Long, &longs);
        // DecreasingComparator: the same numbers, largest first.
        let mut decreasing = longs.clone();
        decreasing.reverse();
        assert_order(KeyKind::LongDecreasing, &decreasing);
    }

    #[test]
    fn vint_and_vlong_keys_sort_as_numbers() {
        let keys: Vec<Vec<u8>> = [i64::MIN, -1000, -113, -112, -1, 0, 127, 128, 1 << 40]
            .iter()
            .map(|&v| {
                let mut out = Vec::new();
                write_vlong(&mut out, v);
                out
            })
            .collect();
        // Serialised, these are not in order: -1 is the byte ff, 0 the byte 00.
        assert_eq!(keys[4].cmp(&keys[5]), Ordering::Greater);
        assert_order(KeyKind::VLong, &keys);
    }

    #[test]
    fn byte_boolean_and_null_keys() {
        let bytes: Vec<Vec<u8>> = [-128i8, -1, 0, 1, 127]
            .iter()
            .map(|v| v.to_be_bytes().to_vec())
            .collect();
        assert_order(KeyKind::Byte, &bytes);
        assert_order(KeyKind::Raw, &[vec![0], vec![1]]);
        assert_eq!(sortable(KeyKind::Raw, &[]), Vec::<u8>::new());
    }

    #[test]
    fn malformed_keys_are_errors() {
        let mut out = Vec::new();
        assert!(KeyKind::Int.to_sortable(&[0, 0, 0], &mut out).is_err());
        assert!(KeyKind::Long.to_sortable(&[0; 9], &mut out).is_err());
        assert!(KeyKind::Text.to_sortable(&[5, b'a'], &mut out).is_err());
        assert!(KeyKind::Int.to_serialised(&[0; 5], &mut out).is_err());
    }
}
