//! Reading the fixed-length records of one split, as Hadoop's `TeraInputFormat` does.
//!
//! Splits are byte ranges cut anywhere, so a split first moves to the next record boundary (a
//! multiple of the record length from the start of the file) and then reads every record that
//! *starts* before its end; the record straddling the end belongs to it, and the next split
//! skips that record's tail when it rounds its own start up. Every record thus lands in exactly
//! one split. Compressed files are read whole.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;

use crate::line::{open_stream_in, stream_error};
use crate::local::{release_pages, RELEASE_STEP};
use crate::{
    CachePolicy, Compression, InputFile, IoError, LocalStorage, Location, Split, Storage,
    StoredInput,
};

/// The file a reader is opened on.
struct Source<'a> {
    storage: &'a dyn Storage,
    location: &'a Location,
    compression: Compression,
    /// The file's name in errors.
    path: PathBuf,
}

/// Bytes read from the file at a time.
const READ_SIZE: usize = 1 << 20;

/// Reads the records of `record_len` bytes of one split.
///
/// A file whose length is not a multiple of the record length ends in a partial record; reading
/// it is an error (naming the file and the record's offset), as it is for Hadoop
/// (`EOFException: read past eof`).
///
/// After an error, every further call to [`FixedRecordReader::next_record`] fails too.
pub struct FixedRecordReader {
    reader: Box<dyn Read + Send>,
    /// The file, for error messages.
    path: PathBuf,
    /// The codec of a compressed input: its read errors are [`IoError::Decompress`].
    codec: Option<&'static str>,
    record_len: usize,
    /// Buffered input; `buf[head..tail]` is read but not yet consumed.
    buf: Vec<u8>,
    head: usize,
    tail: usize,
    eof: bool,
    /// Position in the file of the first record of the split.
    first: u64,
    /// Records starting at or after this position belong to the next split.
    end: u64,
    /// Position in the file of `buf[head]`.
    pos: u64,
    /// The kind of an earlier error, which poisons the reader.
    failed: Option<io::ErrorKind>,
    /// With [`FixedRecordReader::drop_consumed_pages`]: the file, and the offset below which
    /// its pages were handed back to the kernel.
    release: Option<(File, u64)>,
}

impl FixedRecordReader {
    /// Opens `split` of `file` for records of `record_len` bytes (at least 1).
    ///
    /// # Errors
    /// [`IoError::Read`] if the file cannot be opened or positioned; [`IoError::Decompress`] if a
    /// decoder cannot be set up.
    pub fn open(
        file: &InputFile,
        split: &Split,
        record_len: usize,
    ) -> Result<FixedRecordReader, IoError> {
        let location = Location::from_path(file.path.clone());
        let local = LocalStorage::new();
        let source = Source {
            storage: &local,
            location: &location,
            compression: file.compression,
            path: file.path.clone(),
        };
        FixedRecordReader::open_stream(source, split, record_len, CachePolicy::Keep)
    }

    /// Opens `split` of `input` on any [`Storage`] for records of `record_len` bytes (at least
    /// 1): the same rules as [`FixedRecordReader::open`]. A plain split asks the storage for
    /// exactly its records' bytes (from its first record boundary to the end of the record
    /// that straddles its end); `cache` tells the storage whether to keep them cached
    /// ([`CachePolicy::DropBehind`] is what [`FixedRecordReader::drop_consumed_pages`] does
    /// for a local file).
    ///
    /// # Errors
    /// The storage's error if the file cannot be opened or positioned ([`IoError::Read`],
    /// [`IoError::UnsupportedScheme`]); [`IoError::Decompress`] if a decoder cannot be set up.
    pub fn open_in(
        storage: &dyn Storage,
        input: &StoredInput,
        split: &Split,
        record_len: usize,
        cache: CachePolicy,
    ) -> Result<FixedRecordReader, IoError> {
        let source = Source {
            storage,
            location: input.location(),
            compression: input.compression,
            path: input.location().error_path(),
        };
        FixedRecordReader::open_stream(source, split, record_len, cache)
    }

    /// Opens `split` of the file `source`.
    fn open_stream(
        source: Source<'_>,
        split: &Split,
        record_len: usize,
        cache: CachePolicy,
    ) -> Result<FixedRecordReader, IoError> {
        let Source {
            storage,
            location,
            compression,
            path,
        } = source;
        let record_len = record_len.max(1);
        let len = record_len as u64;
        // A plain split starts at its first record boundary and ends with the record that
        // starts before its end; a compressed file is read whole.
        let first_plain = split.start.div_ceil(len).saturating_mul(len);
        let end = split.start.saturating_add(split.len);
        let last_plain = end.div_ceil(len).saturating_mul(len);
        let (reader, codec) = open_stream_in(
            storage,
            location,
            compression,
            first_plain,
            last_plain.saturating_sub(first_plain),
            cache,
        )?;
        let (first, end) = match codec {
            None => (first_plain, end),
            Some(_) => (0, u64::MAX),
        };
        Ok(FixedRecordReader {
            reader,
            path,
            codec,
            record_len,
            buf: vec![0; READ_SIZE.max(record_len)],
            head: 0,
            tail: 0,
            eof: false,
            first,
            end,
            pos: first,
            failed: None,
            release: None,
        })
    }

    /// Drops the file's pages from the kernel's page cache as they are consumed (plain files
    /// only). For input read once and larger than memory, such as a sort's: the kernel then
    /// reuses the same pages for the next reads instead of taking fresh ones, which costs less
    /// CPU (much less on some virtual machines); the price is that the file is no longer
    /// cached for a later reader.
    #[must_use]
    pub fn drop_consumed_pages(mut self, file: &InputFile) -> FixedRecordReader {
        if file.compression == Compression::None {
            if let Ok(handle) = File::open(&file.path) {
                self.release = Some((handle, self.first));
            }
        }
        self
    }

    /// The next record and its offset in the (uncompressed) file, or `None` when the split is
    /// done.
    ///
    /// # Errors
    /// [`IoError::Read`] or [`IoError::Decompress`] naming the file, also when the file ends
    /// inside a record.
    pub fn next_record(&mut self) -> Result<Option<(u64, &[u8])>, IoError> {
        if let Some(kind) = self.failed {
            let source = io::Error::new(kind, "an earlier read of this input failed");
            return Err(self.error(source));
        }
        if self.pos >= self.end {
            return Ok(None);
        }
        if self.tail - self.head < self.record_len {
            if let Err(source) = self.fill() {
                self.failed = Some(source.kind());
                return Err(self.error(source));
            }
            let have = self.tail - self.head;
            if have == 0 {
                return Ok(None);
            }
            if have < self.record_len {
                let source = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "the input ends inside a record: {have} of {} bytes at byte {}",
                        self.record_len, self.pos
                    ),
                );
                self.failed = Some(source.kind());
                return Err(self.error(source));
            }
        }
        let offset = self.pos;
        let start = self.head;
        self.head += self.record_len;
        self.pos += self.record_len as u64;
        Ok(Some((offset, &self.buf[start..self.head])))
    }

    /// Bytes of the (uncompressed) input consumed so far. Used for progress and the "map input
    /// bytes" counter.
    pub fn bytes_consumed(&self) -> u64 {
        self.pos - self.first
    }

    /// Moves the unconsumed bytes to the front and reads until a whole record is buffered or the
    /// input ends.
    fn fill(&mut self) -> io::Result<()> {
        if let Some((handle, released)) = &mut self.release {
            if self.pos - *released >= RELEASE_STEP {
                release_pages(handle, *released, self.pos - *released);
                *released = self.pos;
            }
        }
        self.buf.copy_within(self.head..self.tail, 0);
        self.tail -= self.head;
        self.head = 0;
        while !self.eof && self.tail < self.record_len {
            match self.reader.read(&mut self.buf[self.tail..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.tail += n.min(self.buf.len() - self.tail),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn error(&self, source: io::Error) -> IoError {
        stream_error(&self.path, self.codec, self.pos, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan_splits;

    fn write_records(dir: &std::path::Path, count: usize, len: usize, extra: usize) -> InputFile {
        let path = dir.join("records");
        let mut bytes = Vec::new();
        for i in 0..count {
            let mut record = vec![(i % 251) as u8; len];
            record[..8.min(len)].copy_from_slice(&(i as u64).to_be_bytes()[..8.min(len)]);
            bytes.extend_from_slice(&record);
        }
        bytes.extend(std::iter::repeat_n(7u8, extra));
        std::fs::write(&path, &bytes).unwrap();
        InputFile {
            len: bytes.len() as u64,
            compression: Compression::None,
            path,
        }
    }

    fn read_split(file: &InputFile, split: &Split, len: usize) -> Result<Vec<u64>, IoError> {
        let mut reader = FixedRecordReader::open(file, split, len)?;
        let mut offsets = Vec::new();
        while let Some((offset, record)) = reader.next_record()? {
            assert_eq!(record.len(), len);
            assert_eq!(offset % len as u64, 0);
            let index = (offset / len as u64) as usize;
            assert_eq!(record[len - 1], (index % 251) as u8, "record at {offset}");
            offsets.push(offset);
        }
        Ok(offsets)
    }

    #[test]
    fn every_record_lands_in_exactly_one_split() {
        let dir = tempfile::tempdir().unwrap();
        let file = write_records(dir.path(), 1000, 100, 0);
        for split_size in [1, 7, 99, 100, 101, 250, 999, 4096, 100_000, 200_000] {
            let splits = plan_splits(std::slice::from_ref(&file), split_size);
            let mut all = Vec::new();
            for split in &splits {
                all.extend(read_split(&file, split, 100).unwrap());
            }
            let expected: Vec<u64> = (0..1000).map(|i| i * 100).collect();
            assert_eq!(all, expected, "split size {split_size}");
        }
    }

    #[test]
    fn a_partial_last_record_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = write_records(dir.path(), 3, 100, 42);
        let split = Split {
            file: 0,
            start: 0,
            len: file.len,
        };
        let err = read_split(&file, &split, 100).unwrap_err();
        let text = format!("{err}: {}", std::error::Error::source(&err).unwrap());
        assert!(text.contains("records"), "{text}");
        assert!(text.contains("42 of 100 bytes at byte 300"), "{text}");
    }

    #[test]
    fn a_compressed_file_is_read_whole_by_its_one_split() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let plain = write_records(dir.path(), 500, 100, 0);
        let path = dir.path().join("records.gz");
        let mut encoder = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            Default::default(),
        );
        encoder
            .write_all(&std::fs::read(&plain.path).unwrap())
            .unwrap();
        encoder.finish().unwrap();
        let file = InputFile {
            len: std::fs::metadata(&path).unwrap().len(),
            compression: Compression::Gzip,
            path,
        };
        let splits = plan_splits(std::slice::from_ref(&file), 64);
        assert_eq!(splits.len(), 1);
        let offsets = read_split(&file, &splits[0], 100).unwrap();
        assert_eq!(offsets, (0..500).map(|i| i * 100).collect::<Vec<u64>>());
    }

    #[test]
    fn an_empty_file_has_no_records() {
        let dir = tempfile::tempdir().unwrap();
        let file = write_records(dir.path(), 0, 100, 0);
        let split = Split {
            file: 0,
            start: 0,
            len: 0,
        };
        assert!(read_split(&file, &split, 100).unwrap().is_empty());
    }
}
