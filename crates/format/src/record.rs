//! One key/value record as bytes: `varint(key_len) varint(value_len) key value`.
//!
//! Varints are unsigned LEB128 (7 bits per byte, low bits first), at most 5 bytes for a `u32`
//! length. Records never straddle blocks.

use crate::FormatError;

/// Bytes needed to encode a record with these lengths.
pub fn encoded_len(key_len: usize, value_len: usize) -> usize {
    todo!("{key_len} {value_len}")
}

/// Appends one encoded record to `buf`.
pub fn encode(buf: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    todo!("{} {} {}", buf.len(), key.len(), value.len())
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
/// # Errors
/// [`FormatError::Corrupt`] (with `offset` = `pos`, source "record") if the varints are malformed
/// or the lengths run past the end of `buf`.
pub fn decode(buf: &[u8], pos: usize) -> Result<RecordSpan, FormatError> {
    todo!("{} {pos}", buf.len())
}
