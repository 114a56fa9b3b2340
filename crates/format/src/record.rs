//! One key/value record as bytes: `varint(key_len) varint(value_len) key value`.
//!
//! Varints are unsigned LEB128 (7 bits per byte, low bits first), at most 5 bytes for a `u32`
//! length. Records never straddle blocks.
//!
//! Lengths are prefixed rather than delimited so that keys and values may hold any byte, and
//! both lengths come first so that a reader can slice out the key without looking at the value.
//!
//! Decoding is strict about what cannot be represented (a varint longer than 5 bytes, a value
//! above `u32::MAX`, lengths past the end of the buffer) but accepts non-minimal varints such as
//! `0x80 0x00` for 0: [`encode`] never produces them, and rejecting them would buy nothing.

use crate::FormatError;

/// Most bytes a `u32` varint takes.
const MAX_VARINT_LEN: usize = 5;

/// Bytes the varint of `value` takes.
fn varint_len(value: usize) -> usize {
    // Each byte carries 7 bits; a value of 0 still needs one byte.
    let bits = usize::BITS - (value | 1).leading_zeros();
    bits.div_ceil(7) as usize
}

/// Appends the LEB128 varint of `value` to `buf`.
fn put_varint(buf: &mut Vec<u8>, mut value: u32) {
    while value >= 0x80 {
        // Truncation is the point: the low 7 bits, with the continuation bit set.
        buf.push((value as u8) | 0x80);
        value >>= 7;
    }
    buf.push(value as u8);
}

/// Reads the varint at the start of `bytes`: its value and how many bytes it took, or a
/// description of what is wrong.
#[inline]
fn get_varint(bytes: &[u8]) -> Result<(u32, usize), &'static str> {
    let mut value: u32 = 0;
    for (i, &byte) in bytes.iter().take(MAX_VARINT_LEN).enumerate() {
        let low = u32::from(byte & 0x7f);
        if i == MAX_VARINT_LEN - 1 && (byte & 0x80 != 0 || low > 0x0f) {
            // The fifth byte may only hold the top 4 bits of a u32 and must end the varint.
            return Err("varint longer than 5 bytes or above u32::MAX");
        }
        value |= low << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err("truncated varint")
}

/// Bytes needed to encode a record with these lengths.
///
/// Saturates at `usize::MAX` for absurd lengths instead of overflowing.
pub fn encoded_len(key_len: usize, value_len: usize) -> usize {
    (varint_len(key_len) + varint_len(value_len))
        .saturating_add(key_len)
        .saturating_add(value_len)
}

/// Appends one encoded record to `buf`.
///
/// # Errors
/// [`FormatError::RecordTooLong`] if `key` or `value` is longer than `u32::MAX` bytes, which
/// the format cannot represent (a combiner's output of 5 GiB, say); `buf` is then unchanged.
pub fn encode(buf: &mut Vec<u8>, key: &[u8], value: &[u8]) -> Result<(), FormatError> {
    let (Ok(key_len), Ok(value_len)) = (u32::try_from(key.len()), u32::try_from(value.len()))
    else {
        return Err(FormatError::RecordTooLong {
            key_len: key.len(),
            value_len: value.len(),
        });
    };
    buf.reserve(encoded_len(key.len(), value.len()));
    put_varint(buf, key_len);
    put_varint(buf, value_len);
    buf.extend_from_slice(key);
    buf.extend_from_slice(value);
    Ok(())
}

/// Where a decoded record's parts are inside the buffer it was decoded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordSpan {
    /// Start of the key bytes.
    pub key_start: usize,
    /// Length of the key.
    pub key_len: usize,
    /// Length of the value; the value starts right after the key.
    pub value_len: usize,
    /// Position of the next record.
    pub next: usize,
}

/// Decodes the record that starts at `pos` in `buf`.
///
/// Never panics, whatever `buf` and `pos` hold (`pos` past the end is an error too).
///
/// # Errors
/// [`FormatError::Corrupt`] (with `offset` = `pos`, source "record") if the varints are malformed
/// or the lengths run past the end of `buf`.
#[inline]
pub fn decode(buf: &[u8], pos: usize) -> Result<RecordSpan, FormatError> {
    decode_span(buf, pos).map_err(|detail| FormatError::Corrupt {
        source_name: "record".to_string(),
        offset: pos as u64,
        detail: detail.to_string(),
    })
}

/// [`decode`] with a static error text, so the success path builds no error value.
#[inline]
fn decode_span(buf: &[u8], pos: usize) -> Result<RecordSpan, &'static str> {
    let rest = buf
        .get(pos..)
        .ok_or("record position past the end of the buffer")?;
    let (key_len, key_len_bytes) = get_varint(rest)?;
    let rest = &rest[key_len_bytes..];
    let (value_len, value_len_bytes) = get_varint(rest)?;
    let rest = &rest[value_len_bytes..];

    let (key_len, value_len) = (key_len as usize, value_len as usize);
    // `rest` is the tail of `buf`, so comparing against its length cannot overflow `pos + ...`.
    match key_len.checked_add(value_len) {
        Some(body_len) if body_len <= rest.len() => {}
        _ => return Err("record lengths run past the end of the buffer"),
    }
    let key_start = pos + key_len_bytes + value_len_bytes;
    Ok(RecordSpan {
        key_start,
        key_len,
        value_len,
        next: key_start + key_len + value_len,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(value: u32) -> Vec<u8> {
        let mut buf = Vec::new();
        put_varint(&mut buf, value);
        buf
    }

    #[test]
    fn varint_boundaries() {
        let cases: [(u32, &[u8]); 8] = [
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (16_383, &[0xff, 0x7f]),
            (16_384, &[0x80, 0x80, 0x01]),
            (u32::MAX, &[0xff, 0xff, 0xff, 0xff, 0x0f]),
        ];
        for (value, bytes) in cases {
            assert_eq!(varint(value), bytes, "{value}");
            assert_eq!(varint_len(value as usize), bytes.len(), "{value}");
            assert_eq!(get_varint(bytes), Ok((value, bytes.len())), "{value}");
        }
    }

    #[test]
    fn varint_len_matches_encoding_for_all_bit_widths() {
        for shift in 0..32 {
            for value in [1u32 << shift, (1u32 << shift) - 1, (1u32 << shift) + 1] {
                assert_eq!(varint_len(value as usize), varint(value).len(), "{value}");
            }
        }
    }

    #[test]
    fn rejects_overlong_and_overflowing_varints() {
        // Fifth byte with the continuation bit: would be a sixth byte.
        assert!(get_varint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00]).is_err());
        // Fifth byte carrying more than the 4 bits left in a u32.
        assert!(get_varint(&[0xff, 0xff, 0xff, 0xff, 0x10]).is_err());
        assert!(get_varint(&[0xff, 0xff, 0xff, 0xff, 0x7f]).is_err());
        // Truncated.
        assert!(get_varint(&[]).is_err());
        assert!(get_varint(&[0x80]).is_err());
        assert!(get_varint(&[0xff, 0xff, 0xff, 0xff]).is_err());
        // Non-minimal but representable: accepted.
        assert_eq!(get_varint(&[0x80, 0x00]), Ok((0, 2)));
    }
}
