//! Hadoop's map output file: `file.out` in IFile format, and the index entries that Java writes
//! to `file.out.index` with Hadoop's own `SpillRecord`.
//!
//! Each partition is one segment, written as `IFile.Writer` over `IFileOutputStream` writes it
//! without compression: records as `vint keyLength, vint valueLength, key, value`, then the
//! end marker (two vints of -1), then the CRC32 (the zlib polynomial) of all the segment's
//! bytes before it, as a 4-byte big-endian number. Every partition gets a segment, empty ones
//! included. The index entry of a segment is its start offset, its *raw length* (the bytes
//! before the checksum) and its *part length* (the bytes with it), exactly what `MapTask`
//! records when nothing is compressed or encrypted.

use std::fs::File;
use std::io::{BufWriter, Write};

use sluice_hadoop::writable::write_vint;

use crate::error::JniError;

/// `IFile.EOF_MARKER` as a vint, twice.
const END_MARKER: [u8; 2] = [0xff, 0xff];

/// One segment's index entry: start offset, raw length, part length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Where the segment starts in `file.out`.
    pub start: u64,
    /// Bytes of records and end marker.
    pub raw_length: u64,
    /// `raw_length` plus the 4-byte checksum.
    pub part_length: u64,
}

/// Writes `file.out`, one segment after the other.
pub struct IFileWriter {
    out: BufWriter<File>,
    path: String,
    /// Bytes written before the current segment.
    offset: u64,
    /// Bytes of the current segment so far, and their checksum.
    segment: u64,
    crc: crc32fast::Hasher,
    header: Vec<u8>,
    /// Records written in all segments.
    records: u64,
}

impl IFileWriter {
    /// Creates (or truncates) the file at `path`.
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(path: &str) -> Result<IFileWriter, JniError> {
        let file = File::create(path).map_err(|source| JniError::Output {
            path: path.to_string(),
            source,
        })?;
        Ok(IFileWriter {
            out: BufWriter::with_capacity(256 * 1024, file),
            path: path.to_string(),
            offset: 0,
            segment: 0,
            crc: crc32fast::Hasher::new(),
            header: Vec::with_capacity(10),
            records: 0,
        })
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), JniError> {
        self.crc.update(bytes);
        self.segment += bytes.len() as u64;
        self.out
            .write_all(bytes)
            .map_err(|source| JniError::Output {
                path: self.path.clone(),
                source,
            })
    }

    /// Appends one record to the current segment.
    ///
    /// # Errors
    /// Writing failed, or a length does not fit Java's `int`.
    pub fn append(&mut self, key: &[u8], value: &[u8]) -> Result<(), JniError> {
        let too_long = |what: &str| JniError::Config(format!("a map output {what} exceeds 2 GiB"));
        let klen = i32::try_from(key.len()).map_err(|_| too_long("key"))?;
        let vlen = i32::try_from(value.len()).map_err(|_| too_long("value"))?;
        let mut header = std::mem::take(&mut self.header);
        header.clear();
        write_vint(&mut header, klen);
        write_vint(&mut header, vlen);
        let written = self
            .put(&header)
            .and_then(|()| self.put(key))
            .and_then(|()| self.put(value));
        self.header = header;
        self.records += 1;
        written
    }

    /// Ends the current segment (end marker, checksum) and returns its index entry; the next
    /// record starts the next segment.
    ///
    /// # Errors
    /// Writing failed.
    pub fn end_segment(&mut self) -> Result<IndexEntry, JniError> {
        self.put(&END_MARKER)?;
        let raw_length = self.segment;
        let crc = std::mem::take(&mut self.crc).finalize();
        self.out
            .write_all(&crc.to_be_bytes())
            .map_err(|source| JniError::Output {
                path: self.path.clone(),
                source,
            })?;
        let entry = IndexEntry {
            start: self.offset,
            raw_length,
            part_length: raw_length + 4,
        };
        self.offset += entry.part_length;
        self.segment = 0;
        Ok(entry)
    }

    /// Records appended so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the file and closes it, as Hadoop's close does (no sync).
    ///
    /// # Errors
    /// Writing failed.
    pub fn finish(self) -> Result<(), JniError> {
        let path = self.path;
        self.out.into_inner().map_err(|e| JniError::Output {
            path,
            source: e.into_error(),
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of a two-partition file, worked out by hand from Hadoop's IFile layout: the
    /// CRC32 values are those of Python's `zlib.crc32` over the same bytes.
    #[test]
    fn segments_are_records_end_marker_and_crc32() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file.out");
        let path = path.to_str().unwrap();
        let mut w = IFileWriter::create(path).unwrap();
        w.append(b"\x01a", b"\x00\x00\x00\x02").unwrap();
        let first = w.end_segment().unwrap();
        let second = w.end_segment().unwrap();
        w.finish().unwrap();
        let bytes = std::fs::read(path).unwrap();
        // zlib.crc32(bytes.fromhex('0204016100000002ffff')) == 0xe65a6819
        // zlib.crc32(bytes.fromhex('ffff')) == 0xffff0000
        let mut expected = hex("0204016100000002ffff");
        expected.extend(0xe65a_6819_u32.to_be_bytes());
        expected.extend(hex("ffff"));
        expected.extend(0xffff_0000_u32.to_be_bytes());
        assert_eq!(bytes, expected);
        assert_eq!(
            (first, second),
            (
                IndexEntry {
                    start: 0,
                    raw_length: 10,
                    part_length: 14
                },
                IndexEntry {
                    start: 14,
                    raw_length: 2,
                    part_length: 6
                }
            )
        );
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
