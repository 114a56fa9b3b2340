//! Hadoop's map output file: `file.out` in IFile format, and the index entries that Java writes
//! to `file.out.index` with Hadoop's own `SpillRecord`.
//!
//! Each partition is one segment, written as `IFile.Writer` over `IFileOutputStream` writes it:
//! records as `vint keyLength, vint valueLength, key, value`, then the end marker (two vints of
//! -1), all through the map output codec's stream when map output is compressed (one stream
//! per segment, ended with it), then the CRC32 (the zlib polynomial) of all the segment's
//! bytes as written (compressed, if they are) before it, as a 4-byte big-endian number. Every
//! partition gets a segment, empty ones included. The index entry of a segment is its start
//! offset, its *raw length* (the records and end marker, uncompressed) and its *part length*
//! (the bytes in the file, checksum included), exactly what `MapTask` records when nothing is
//! encrypted.

use std::fs::File;
use std::io::{self, BufWriter, Write};

use sluice_hadoop::writable::write_vint;
use sluice_io::{CompressedWriter, OutputCodec};

use crate::error::JniError;

/// `IFile.EOF_MARKER` as a vint, twice.
const END_MARKER: [u8; 2] = [0xff, 0xff];

/// One segment's index entry: start offset, raw length, part length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexEntry {
    /// Where the segment starts in `file.out`.
    pub start: u64,
    /// Bytes of records and end marker, uncompressed.
    pub raw_length: u64,
    /// Bytes of the segment in the file: the (compressed) records and end marker, and the
    /// 4-byte checksum.
    pub part_length: u64,
}

/// The file under a segment's stream: counts and checksums what reaches it.
struct Checksummed {
    out: BufWriter<File>,
    crc: crc32fast::Hasher,
    /// Bytes of the current segment in the file.
    written: u64,
}

impl Write for Checksummed {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.crc.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// Where the writer is: between segments (the file), or inside one (the segment's stream).
enum State {
    Between(Checksummed),
    Segment(CompressedWriter<Checksummed>),
    /// A stream failed to start or end: nothing more can be written.
    Failed,
}

/// Writes `file.out`, one segment after the other.
pub struct IFileWriter {
    state: State,
    codec: OutputCodec,
    path: String,
    /// Bytes written before the current segment.
    offset: u64,
    /// Bytes of the current segment before compression.
    raw: u64,
    header: Vec<u8>,
    /// Records written in all segments.
    records: u64,
}

impl IFileWriter {
    /// Creates (or truncates) the file at `path`, its segments compressed with `codec`
    /// ([`OutputCodec::None`]: not at all).
    ///
    /// # Errors
    /// The file cannot be created.
    pub fn create(path: &str, codec: OutputCodec) -> Result<IFileWriter, JniError> {
        let file = File::create(path).map_err(|source| JniError::Output {
            path: path.to_string(),
            source,
        })?;
        Ok(IFileWriter {
            state: State::Between(Checksummed {
                out: BufWriter::with_capacity(256 * 1024, file),
                crc: crc32fast::Hasher::new(),
                written: 0,
            }),
            codec,
            path: path.to_string(),
            offset: 0,
            raw: 0,
            header: Vec::with_capacity(10),
            records: 0,
        })
    }

    fn output_error(&self, source: io::Error) -> JniError {
        JniError::Output {
            path: self.path.clone(),
            source,
        }
    }

    fn failed() -> io::Error {
        io::Error::other("an earlier write to the file failed")
    }

    /// The current segment's stream, started if it is not yet.
    fn segment(&mut self) -> io::Result<&mut CompressedWriter<Checksummed>> {
        if let State::Between(_) = self.state {
            let State::Between(sink) = std::mem::replace(&mut self.state, State::Failed) else {
                return Err(Self::failed());
            };
            self.state = State::Segment(CompressedWriter::new(self.codec, sink)?);
        }
        match &mut self.state {
            State::Segment(stream) => Ok(stream),
            State::Between(_) | State::Failed => Err(Self::failed()),
        }
    }

    fn put(&mut self, bytes: &[u8]) -> Result<(), JniError> {
        self.raw += bytes.len() as u64;
        let written = self.segment().and_then(|stream| stream.write_all(bytes));
        written.map_err(|e| self.output_error(e))
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

    /// Ends the current segment (end marker, end of the codec's stream, checksum) and returns
    /// its index entry; the next record starts the next segment.
    ///
    /// # Errors
    /// Writing failed.
    pub fn end_segment(&mut self) -> Result<IndexEntry, JniError> {
        self.put(&END_MARKER)?;
        let State::Segment(stream) = std::mem::replace(&mut self.state, State::Failed) else {
            return Err(self.output_error(Self::failed()));
        };
        let mut sink = stream.finish().map_err(|e| self.output_error(e))?;
        let crc = std::mem::take(&mut sink.crc).finalize();
        sink.out
            .write_all(&crc.to_be_bytes())
            .map_err(|e| self.output_error(e))?;
        let entry = IndexEntry {
            start: self.offset,
            raw_length: self.raw,
            part_length: sink.written + 4,
        };
        self.offset += entry.part_length;
        self.raw = 0;
        sink.written = 0;
        self.state = State::Between(sink);
        Ok(entry)
    }

    /// Records appended so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Flushes the file and closes it, as Hadoop's close does (no sync).
    ///
    /// # Errors
    /// Writing failed, or a segment was left unended.
    pub fn finish(self) -> Result<(), JniError> {
        let State::Between(sink) = self.state else {
            let error =
                io::Error::other("the file was closed inside a segment, or after a failure");
            return Err(JniError::Output {
                path: self.path,
                source: error,
            });
        };
        let path = self.path;
        sink.out.into_inner().map_err(|e| JniError::Output {
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
        let mut w = IFileWriter::create(path, OutputCodec::None).unwrap();
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

    /// A compressed segment: the records and end marker through the codec's stream (one per
    /// segment), the checksum over the compressed bytes; the raw length is the uncompressed
    /// size. Decoded here with the codecs' reference libraries (flate2 and bzip2's decoders).
    #[test]
    fn compressed_segments_checksum_what_is_written() {
        use std::io::Read;
        for codec in [OutputCodec::Deflate, OutputCodec::Gzip, OutputCodec::Bzip2] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("file.out");
            let path = path.to_str().unwrap();
            let mut w = IFileWriter::create(path, codec).unwrap();
            for i in 0..1000u32 {
                w.append(format!("key{i}").as_bytes(), &i.to_be_bytes())
                    .unwrap();
            }
            let first = w.end_segment().unwrap();
            let second = w.end_segment().unwrap();
            w.finish().unwrap();
            let bytes = std::fs::read(path).unwrap();
            assert_eq!(second.start, first.part_length, "{codec:?}");
            assert_eq!(bytes.len() as u64, first.part_length + second.part_length);
            for (entry, records) in [(first, 1000u32), (second, 0)] {
                let start = usize::try_from(entry.start).unwrap();
                let end = start + usize::try_from(entry.part_length).unwrap();
                let (data, crc) = bytes[start..end].split_at(end - start - 4);
                assert_eq!(crc32fast::hash(data).to_be_bytes(), crc, "{codec:?}");
                let mut raw = Vec::new();
                match codec {
                    OutputCodec::Deflate => flate2::read::ZlibDecoder::new(data)
                        .read_to_end(&mut raw)
                        .unwrap(),
                    OutputCodec::Gzip => flate2::read::GzDecoder::new(data)
                        .read_to_end(&mut raw)
                        .unwrap(),
                    _ => bzip2::read::BzDecoder::new(data)
                        .read_to_end(&mut raw)
                        .unwrap(),
                };
                assert_eq!(raw.len() as u64, entry.raw_length, "{codec:?}");
                let mut expected = Vec::new();
                for i in 0..records {
                    let key = format!("key{i}");
                    expected.push(u8::try_from(key.len()).unwrap());
                    expected.push(4);
                    expected.extend(key.as_bytes());
                    expected.extend(i.to_be_bytes());
                }
                expected.extend(END_MARKER);
                assert_eq!(raw, expected, "{codec:?}");
            }
            assert!(first.part_length < first.raw_length, "{codec:?} compresses");
        }
    }

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
