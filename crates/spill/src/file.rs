//! Spill files: sorted runs on local disk.
//!
//! A spill file holds one sorted run of a map task (or of an intermediate merge), cut into one
//! segment per partition, partitions in increasing order:
//!
//! ```text
//! | segment p0: blocks ... | segment p1: blocks ... | ... |
//! ```
//!
//! The segment table (offset, length, record count per partition) stays in memory in the
//! [`SpillFile`]; it is small and never needs to survive the job. Every block carries its own
//! CRC32C, so a damaged file is reported with its path and the offset of the bad block.

use std::fs::File;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use sluice_format::{Codec, FormatError, RunReader, RunWriter};
use sluice_io::{DirectWriter, ReadAhead};

use crate::SpillError;

/// The job's private scratch directory; removed with everything in it when dropped.
#[derive(Debug)]
pub struct SpillDir {
    dir: tempfile::TempDir,
    next_id: AtomicU64,
    /// Chunk size of each spill file's [`DirectWriter`] (it holds two).
    write_chunk: usize,
}

impl SpillDir {
    /// Creates a fresh directory named `.sluice-spill-XXXXXX` inside `parent`.
    ///
    /// # Errors
    /// [`SpillError::Io`] naming `parent` if it cannot be created there.
    pub fn create_in(parent: &Path) -> Result<SpillDir, SpillError> {
        let dir = tempfile::Builder::new()
            .prefix(".sluice-spill-")
            .tempdir_in(parent)
            .map_err(|source| SpillError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        Ok(SpillDir {
            dir,
            next_id: AtomicU64::new(0),
            write_chunk: sluice_io::DIRECT_CHUNK,
        })
    }

    /// Sets the chunk size of the spill files' writers (each holds two chunks): small budgets
    /// want small ones.
    #[must_use]
    pub fn with_write_chunk(mut self, bytes: usize) -> SpillDir {
        self.write_chunk = bytes;
        self
    }

    /// Where the spill files go.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Starts a new spill file with `partitions` segments.
    ///
    /// # Errors
    /// [`SpillError::Io`] if the file cannot be created.
    pub fn create_writer(
        &self,
        partitions: usize,
        codec: Codec,
        block_size: usize,
    ) -> Result<SpillWriter, SpillError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!("run-{id:06}.spill"));
        let file = DirectWriter::create_with(&path, self.write_chunk).map_err(|source| {
            SpillError::Io {
                path: path.clone(),
                source,
            }
        })?;
        let name = path.display().to_string();
        Ok(SpillWriter {
            run: RunWriter::new(file, codec, block_size, name),
            segments: vec![Segment::default(); partitions],
            current: None,
            path,
        })
    }
}

/// Where one partition's records are inside a spill file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Segment {
    /// Byte offset of the first block.
    pub offset: u64,
    /// Bytes of blocks.
    pub len: u64,
    /// Records in the segment.
    pub records: u64,
}

/// Writes one spill file. Records must arrive grouped by partition in increasing partition order,
/// each partition's records sorted.
///
/// The file is written past the page cache ([`DirectWriter`]): it is read back once, much later,
/// and caching it would cost a copy of every byte into the page cache and its reclaim.
pub struct SpillWriter {
    run: RunWriter<DirectWriter>,
    segments: Vec<Segment>,
    current: Option<usize>,
    path: PathBuf,
}

impl SpillWriter {
    /// Appends a record to `partition`'s segment.
    ///
    /// # Errors
    /// I/O errors (e.g. a full disk) naming the file.
    ///
    /// # Panics
    /// In debug builds, if partitions arrive out of order or out of range (a caller bug).
    pub fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), SpillError> {
        if self.current != Some(partition) {
            self.switch_to(partition)?;
        }
        self.run.write_record(key, value)?;
        self.segments[partition].records += 1;
        Ok(())
    }

    fn switch_to(&mut self, partition: usize) -> Result<(), SpillError> {
        debug_assert!(partition < self.segments.len(), "partition out of range");
        debug_assert!(
            self.current.is_none_or(|c| c < partition),
            "partitions out of order"
        );
        self.close_segment()?;
        self.segments[partition].offset = self.run.position();
        self.current = Some(partition);
        Ok(())
    }

    fn close_segment(&mut self) -> Result<(), SpillError> {
        if let Some(current) = self.current.take() {
            self.run.finish_segment()?;
            let segment = &mut self.segments[current];
            segment.len = self.run.position() - segment.offset;
        }
        Ok(())
    }

    /// Flushes everything to the file and returns its description.
    ///
    /// # Errors
    /// I/O errors naming the file.
    pub fn finish(mut self) -> Result<SpillFile, SpillError> {
        self.close_segment()?;
        let io_err = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SpillError::Io { path, source }
        };
        let bytes = self.run.position();
        let file = self.run.into_inner()?;
        file.finish().map_err(io_err(&self.path))?;
        Ok(SpillFile {
            path: self.path,
            segments: self.segments,
            bytes,
        })
    }
}

/// A finished spill file. The file is deleted when this is dropped.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    segments: Vec<Segment>,
    bytes: u64,
}

/// A cursor over one segment of a spill file.
///
/// Blocks carry checksums but a run has no trailer, so a file cut short exactly at a block
/// boundary would read as a shorter valid run; the reader therefore checks at the end that it
/// consumed the whole segment as recorded when it was written.
pub struct SegmentReader {
    run: RunReader<ReadAhead>,
    end: u64,
    path: PathBuf,
}

impl SegmentReader {
    /// Moves to the next record; `false` at the end of the segment.
    ///
    /// # Errors
    /// A corrupt or truncated block, or a segment shorter than written.
    pub fn advance(&mut self) -> Result<bool, FormatError> {
        if self.run.advance()? {
            return Ok(true);
        }
        if self.run.offset() != self.end {
            return Err(FormatError::Corrupt {
                source_name: self.path.display().to_string(),
                offset: self.run.offset(),
                detail: format!("segment ends early: expected {} bytes", self.end),
            });
        }
        Ok(false)
    }

    /// The current record's key.
    pub fn key(&self) -> &[u8] {
        self.run.key()
    }

    /// The current record's value.
    pub fn value(&self) -> &[u8] {
        self.run.value()
    }
}

impl SpillFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size of the file in bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Records of `partition` in this file (0 for a partition out of range).
    pub fn records(&self, partition: usize) -> u64 {
        self.segments.get(partition).map_or(0, |s| s.records)
    }

    /// Records in all partitions.
    pub fn total_records(&self) -> u64 {
        self.segments.iter().map(|s| s.records).sum()
    }

    /// Opens a cursor over `partition`'s records. Each cursor has its own file handle, so many
    /// partitions can be read at once.
    ///
    /// # Errors
    /// [`SpillError::Io`] if the file cannot be opened or positioned.
    pub fn open_segment(&self, partition: usize) -> Result<SegmentReader, SpillError> {
        let segment = self.segments.get(partition).copied().unwrap_or_default();
        let io_err = |source| SpillError::Io {
            path: self.path.clone(),
            source,
        };
        let file = File::open(&self.path).map_err(io_err)?;
        Ok(SegmentReader {
            run: RunReader::new(
                ReadAhead::new(file, segment.offset, segment.offset + segment.len),
                self.path.display().to_string(),
                segment.offset,
            ),
            end: segment.offset + segment.len,
            path: self.path.clone(),
        })
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        // Best effort: the whole spill directory is removed at the end of the job anyway.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Totals of what a job spilled to disk.
#[derive(Debug, Default)]
pub struct SpillMetrics {
    runs: AtomicU64,
    records: AtomicU64,
    bytes: AtomicU64,
}

impl SpillMetrics {
    /// Counts one finished spill file.
    pub fn record(&self, file: &SpillFile) {
        self.runs.fetch_add(1, Ordering::Relaxed);
        self.records
            .fetch_add(file.total_records(), Ordering::Relaxed);
        self.bytes.fetch_add(file.bytes(), Ordering::Relaxed);
    }

    /// Spill files written.
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    /// Records written to spill files.
    pub fn records(&self) -> u64 {
        self.records.load(Ordering::Relaxed)
    }

    /// Bytes written to spill files.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(mut r: SegmentReader) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while r.advance().unwrap() {
            out.push((r.key().to_vec(), r.value().to_vec()));
        }
        out
    }

    #[test]
    fn segments_round_trip_and_file_is_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let mut w = dir.create_writer(4, Codec::Lz4, 64).unwrap();
        let mut expected: Vec<Vec<(Vec<u8>, Vec<u8>)>> = vec![Vec::new(); 4];
        for p in [0usize, 2, 3] {
            for i in 0..100u32 {
                let k = format!("key-{p}-{i:04}").into_bytes();
                let v = vec![b'v'; (i % 7) as usize];
                w.write(p, &k, &v).unwrap();
                expected[p].push((k, v));
            }
        }
        let file = w.finish().unwrap();
        let metrics = SpillMetrics::default();
        metrics.record(&file);
        assert_eq!(metrics.records(), 300);
        assert_eq!(file.records(1), 0);
        for (p, want) in expected.iter().enumerate() {
            assert_eq!(
                &read_all(file.open_segment(p).unwrap()),
                want,
                "partition {p}"
            );
        }
        let path = file.path().to_path_buf();
        assert!(path.exists());
        drop(file);
        assert!(!path.exists());
    }

    #[test]
    fn corrupt_spill_file_is_detected_with_its_path() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let mut w = dir.create_writer(1, Codec::None, 1024).unwrap();
        for i in 0..1000u32 {
            w.write(0, format!("{i:08}").as_bytes(), b"value").unwrap();
        }
        let file = w.finish().unwrap();
        let mut bytes = std::fs::read(file.path()).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0x40;
        std::fs::write(file.path(), &bytes).unwrap();
        let mut r = file.open_segment(0).unwrap();
        let err = loop {
            match r.advance() {
                Ok(true) => continue,
                Ok(false) => panic!("corruption not detected"),
                Err(e) => break e,
            }
        };
        let msg = SpillError::from(err).to_string();
        assert!(msg.contains(&file.path().display().to_string()), "{msg}");
    }

    #[test]
    fn file_truncated_at_a_block_boundary_is_detected() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let mut w = dir.create_writer(1, Codec::None, 64).unwrap();
        for i in 0..100u32 {
            w.write(0, format!("{i:08}").as_bytes(), b"value").unwrap();
        }
        let file = w.finish().unwrap();
        // Cut the file right after its first block: the header says how long that block is.
        let bytes = std::fs::read(file.path()).unwrap();
        let stored = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
        std::fs::write(file.path(), &bytes[..16 + stored]).unwrap();
        let mut r = file.open_segment(0).unwrap();
        let result = loop {
            match r.advance() {
                Ok(true) => continue,
                other => break other,
            }
        };
        assert!(result.is_err(), "a truncated segment read as complete");
    }
}
