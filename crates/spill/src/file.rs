//! Spill files: sorted runs on local disk, each with an index beside it.
//!
//! A spill file holds one sorted run of a map task (or of an intermediate merge), cut into one
//! segment per partition, partitions in increasing order. Its index file (`run-000001.spill` →
//! `run-000001.index`) holds the segment table, so that another process (a shuffle server, a
//! restarted reducer) can read any one partition knowing nothing but the data file's path.
//!
//! # Data file
//!
//! ```text
//! | segment p0: blocks ... | segment p1: blocks ... | ... |
//! ```
//!
//! Segments lie back to back, without gaps, header or trailer; a partition without records has
//! an empty segment. A segment is a stream of `sluice-format` blocks (a 16-byte header with its
//! own CRC32C, then the stored, possibly compressed bytes) and never shares a block with
//! another, so it can be read, checked and shipped on its own.
//!
//! # Index file
//!
//! All integers are little-endian. `n` is the partition count; the entry of partition `p`
//! starts at `e = 28 + 36p`, and the file ends with a checksum at `t = 28 + 36n`.
//!
//! | bytes          | field                                                                 |
//! |----------------|-----------------------------------------------------------------------|
//! | `0..8`         | magic `SLUICEIX`                                                      |
//! | `8..12`        | layout version, u32: 1                                                |
//! | `12..20`       | `n`, u64                                                              |
//! | `20..28`       | length of the data file, u64                                          |
//! | `e..e+8`       | offset of `p`'s segment in the data file, u64                         |
//! | `e+8..e+16`    | raw length: the segment's encoded records before compression, u64     |
//! | `e+16..e+24`   | stored length: bytes of the segment in the data file, u64             |
//! | `e+24..e+32`   | records in the segment, u64                                           |
//! | `e+32..e+36`   | CRC32C of `p` (u64), the data file's length (u64), bytes `e..e+32`    |
//! | `t..t+4`       | CRC32C of bytes `0..t`                                                |
//!
//! A reader checks everything before using it: magic and version, the file's length against
//! `n`, both kinds of checksum, that the segments tile the data file exactly, and that the data
//! file has the length recorded. Any failure is a [`SpillError::Index`] naming the index file
//! and what is wrong; lengths never reach arithmetic or allocation unchecked.
//!
//! Each entry has a checksum of its own, over the entry rather than over the segment's bytes.
//! Those bytes are already covered block by block by the blocks' CRC32Cs, which a server checks
//! without decompressing ([`SpillFile::verify_stored`]) and the reducer checks again as it
//! decodes; a second checksum over them would cost the writer another pass over everything it
//! spills and protect nothing new. What blocks cannot vouch for is where a segment is and how
//! long it is: the entry checksum lets a server read a single entry
//! ([`SpillIndex::read_entry`]) and trust it without reading the whole index.
//!
//! The index is written after the data file is complete, under a temporary name, then renamed:
//! an index that exists is whole, and so is its data file. Nothing is synced to disk (spill
//! files are written at full speed, many per job): after a crash of the machine the checks above
//! are what catches a torn pair.
//!
//! # Ownership
//!
//! A [`SpillFile`] returned by [`SpillWriter::finish`] owns its data and index files and
//! deletes both when dropped (and the [`SpillDir`] removes whatever is left). One opened from
//! disk with [`SpillFile::open`] only reads them.
//!
//! Every block carries its own CRC32C, so a damaged data file is reported with its path and the
//! offset of the bad block.

use std::cmp::Ordering as KeyOrdering;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use sluice_format::{block_len, Codec, FormatError, RunReader, RunWriter, BLOCK_HEADER_LEN};
use sluice_io::{DirectWriter, OwnedDir, ReadAhead};

/// The start of a spill directory's name; the creating process's id and a random part follow.
const SPILL_DIR_PREFIX: &str = ".sluice-spill-";

use crate::{BufferAccount, IndexProblem, MemoryPool, Segment, SpillError, SpillIndex};

/// What a spill reader's or writer's two reused buffers (a block and its compressed form) hold
/// at most with blocks of `block_size` bytes: each may grow to twice a block (amortized growth),
/// plus a compression bound's slack. Beyond it they hold a huge record, which is counted in the
/// job's pool (see [`SpillDir::with_pool`]).
fn usual_buffers(block_size: usize) -> usize {
    block_size.saturating_mul(4).saturating_add(16 * 1024)
}

/// Where a spill file's readers count buffers grown past the usual for a huge record.
#[derive(Debug, Clone)]
struct Counting {
    pool: MemoryPool,
    /// What the buffers hold usually ([`usual_buffers`]), which the callers reserve.
    baseline: usize,
}

impl Counting {
    fn account(&self) -> BufferAccount {
        BufferAccount::new(&self.pool, self.baseline)
    }
}

/// The job's private scratch directory; removed with everything in it when dropped.
#[derive(Debug)]
pub struct SpillDir {
    /// Removed when dropped, before the lock below is released.
    dir: tempfile::TempDir,
    /// Tells other jobs that the directory is in use.
    _owned: OwnedDir,
    next_id: AtomicU64,
    /// Chunk size of each spill file's [`DirectWriter`] (it holds two).
    write_chunk: usize,
    /// Where huge records' buffers are counted, if anywhere.
    pool: Option<MemoryPool>,
}

impl SpillDir {
    /// Creates a fresh directory named `.sluice-spill-PID-XXXXXX` inside `parent`, after
    /// removing those that jobs killed outright left there (see
    /// [`sluice_io::remove_abandoned`]).
    ///
    /// # Errors
    /// [`SpillError::CreateDir`] naming `parent` if it cannot be created there;
    /// [`SpillError::Io`] naming it if it cannot be locked.
    pub fn create_in(parent: &Path) -> Result<SpillDir, SpillError> {
        sluice_io::remove_abandoned(parent, OsStr::new(SPILL_DIR_PREFIX));
        // For this user only: spill files hold the job's records, and the parent is often a
        // directory everyone can list (the system's temporary directory).
        let dir = tempfile::Builder::new()
            .prefix(&format!("{SPILL_DIR_PREFIX}{}-", std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(parent)
            .map_err(|source| SpillError::CreateDir {
                path: parent.to_path_buf(),
                source: without_path(source),
            })?;
        let owned = OwnedDir::lock(dir.path()).map_err(|source| SpillError::Io {
            path: dir.path().to_path_buf(),
            source,
        })?;
        Ok(SpillDir {
            dir,
            _owned: owned,
            next_id: AtomicU64::new(0),
            write_chunk: sluice_io::DIRECT_CHUNK,
            pool: None,
        })
    }

    /// Counts in `pool` what the writers and readers of this directory's spill files hold
    /// beyond their usual buffers: a record larger than a block gets a block of its own, which
    /// they hold whole (a writer twice over, with its compressed form) while they write or
    /// read it. Forced beyond the budget if it has no room: a record cannot be refused.
    #[must_use]
    pub fn with_pool(mut self, pool: MemoryPool) -> SpillDir {
        self.pool = Some(pool);
        self
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

    /// Bytes that may still be written on the disk holding the directory, if it says.
    pub fn available_bytes(&self) -> Option<u64> {
        sluice_io::available_bytes(self.dir.path())
    }

    /// A new scratch file in the directory, removed when dropped: for bytes a task keeps out
    /// of memory for a while, such as a reduce range's output waiting for the ranges before
    /// it.
    ///
    /// # Errors
    /// [`SpillError::Io`] naming the file if it cannot be created.
    pub fn scratch_file(&self) -> Result<ScratchFile, SpillError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.path().join(format!("scratch-{id:06}.tmp"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|source| SpillError::Io {
                path: path.clone(),
                source,
            })?;
        Ok(ScratchFile { file, path })
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
        let counting = self.pool.as_ref().map(|pool| Counting {
            pool: pool.clone(),
            baseline: usual_buffers(block_size),
        });
        Ok(SpillWriter {
            run: RunWriter::new(file, codec, block_size, name),
            block_size,
            account: counting.as_ref().map(Counting::account),
            counting,
            segments: vec![Segment::default(); partitions],
            current: None,
            raw_start: 0,
            path,
        })
    }
}

/// The operating system's error inside one of `tempfile`'s, which appends the path it tried
/// (a random name) to the message as ` at path "..."`: the spill error names the place once,
/// itself. An error in another form is kept whole.
fn without_path(e: std::io::Error) -> std::io::Error {
    let text = e.to_string();
    match text.rsplit_once(" at path \"") {
        Some((cause, _)) if e.get_ref().is_some() => std::io::Error::new(e.kind(), cause),
        _ => e,
    }
}

/// A scratch file of a [`SpillDir`], removed when dropped (and with the directory, whatever
/// happens).
#[derive(Debug)]
pub struct ScratchFile {
    file: File,
    path: PathBuf,
}

impl ScratchFile {
    /// The file, to write and read back.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Where it is, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes all of `bytes` at the end of the file (through the page cache).
    ///
    /// # Errors
    /// [`SpillError::Io`] naming the file (a full disk).
    pub fn append(&mut self, bytes: &[u8]) -> Result<(), SpillError> {
        std::io::Write::write_all(&mut self.file, bytes).map_err(|source| SpillError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// A reader of the file's bytes that lives on its own (its own descriptor): it reads on
    /// after the scratch file is dropped and its name removed.
    ///
    /// # Errors
    /// [`SpillError::Io`] naming the file if the descriptor cannot be duplicated.
    pub fn reader(&self) -> Result<ScratchReader, SpillError> {
        let file = self.file.try_clone().map_err(|source| SpillError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(ScratchReader {
            file,
            path: self.path.clone(),
        })
    }
}

/// Reads a [`ScratchFile`]'s bytes at any offset (see [`ScratchFile::reader`]).
#[derive(Debug)]
pub struct ScratchReader {
    file: File,
    path: PathBuf,
}

impl ScratchReader {
    /// Reads `buf.len()` bytes from `offset`, without moving any file position.
    ///
    /// # Errors
    /// [`SpillError::Io`] naming the file, also if it is shorter than asked.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<(), SpillError> {
        std::os::unix::fs::FileExt::read_exact_at(&self.file, buf, offset).map_err(|source| {
            SpillError::Io {
                path: self.path.clone(),
                source,
            }
        })
    }
}

impl std::io::Write for ScratchFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        // Best effort: the spill directory is removed at the end of the job anyway.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Writes one spill file. Records must arrive grouped by partition in increasing partition order,
/// each partition's records sorted.
///
/// The file is written past the page cache ([`DirectWriter`]): it is read back once, much later,
/// and caching it would cost a copy of every byte into the page cache and its reclaim.
pub struct SpillWriter {
    run: RunWriter<DirectWriter>,
    block_size: usize,
    /// What the writer's buffers hold beyond the usual, counted in the job's pool.
    account: Option<BufferAccount>,
    /// Passed on to the finished file's readers.
    counting: Option<Counting>,
    segments: Vec<Segment>,
    current: Option<usize>,
    /// [`RunWriter::raw_position`] where the current segment started.
    raw_start: u64,
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
        let huge = sluice_format::record::encoded_len(key.len(), value.len()) > self.block_size;
        if let Some(account) = &mut self.account {
            if huge {
                // Counted before it is copied: the record's own block, compressed when the
                // next record (or the segment's end) flushes it.
                let len = sluice_format::record::encoded_len(key.len(), value.len());
                let block = len.saturating_add(len / 128).saturating_add(64);
                account.update(
                    self.run
                        .buffered_bytes()
                        .saturating_add(len)
                        .saturating_add(block),
                );
            }
        }
        self.run.write_record(key, value)?;
        if let Some(account) = &mut self.account {
            if huge || account.counted() > 0 {
                // Until a block of the usual size has let the huge one's buffers go.
                account.update(self.run.buffered_bytes());
            }
        }
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
        self.raw_start = self.run.raw_position();
        self.current = Some(partition);
        Ok(())
    }

    fn close_segment(&mut self) -> Result<(), SpillError> {
        if let Some(current) = self.current.take() {
            self.run.finish_segment()?;
            let segment = &mut self.segments[current];
            segment.stored_len = self.run.position() - segment.offset;
            segment.raw_len = self.run.raw_position() - self.raw_start;
        }
        Ok(())
    }

    /// Flushes everything to the file, writes its index beside it and returns its description.
    ///
    /// # Errors
    /// I/O errors naming the file.
    pub fn finish(mut self) -> Result<SpillFile, SpillError> {
        self.close_segment()?;
        let bytes = self.run.position();
        let file = self.run.into_inner()?;
        file.finish().map_err(|source| SpillError::Io {
            path: self.path.clone(),
            source,
        })?;
        // A partition without records gets an empty segment where the next one starts, so that
        // the segments tile the file, as the index reader checks.
        let mut end = 0;
        for segment in &mut self.segments {
            if segment.records == 0 {
                segment.offset = end;
            }
            end = segment.offset + segment.stored_len;
        }
        let index = SpillIndex::write(&SpillIndex::path_for(&self.path), bytes, self.segments)?;
        Ok(SpillFile {
            path: self.path,
            index,
            owned: true,
            blocks: Mutex::new(None),
            counting: self.counting,
        })
    }
}

/// A finished spill file and its index.
///
/// One returned by [`SpillWriter::finish`] owns both files and deletes them when dropped; one
/// opened from disk ([`SpillFile::open`]) only reads them.
#[derive(Debug)]
pub struct SpillFile {
    path: PathBuf,
    index: SpillIndex,
    /// Whether dropping this deletes the files: only the writer's does.
    owned: bool,
    /// Where the blocks of the partition last asked about start ([`SpillFile::block_starts`]):
    /// a reduce task enters one partition of each file at several keys, and hops its block
    /// headers once.
    blocks: Mutex<Option<(usize, Arc<[u64]>)>>,
    /// Where readers count buffers a huge record grows (files a [`SpillDir::with_pool`]
    /// wrote).
    counting: Option<Counting>,
}

/// The comparator [`SpillFile::open_segment_at`] orders keys by: the order the run was sorted in.
pub type KeyCompare<'a> = &'a dyn Fn(&[u8], &[u8]) -> KeyOrdering;

/// Reads `pos..end` of a file with positioned reads: one block probed where it is, without the
/// read-ahead of a sequential reader.
struct ReadAt<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.pos)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos = self
            .pos
            .saturating_add(u64::try_from(n).unwrap_or(u64::MAX));
        Ok(n)
    }
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
    /// The reader stands on a record the next `advance` returns without moving (the first
    /// record at or after the key a reader was opened at).
    held: bool,
}

impl SegmentReader {
    /// Moves to the next record; `false` at the end of the segment.
    ///
    /// # Errors
    /// A corrupt or truncated block, or a segment shorter than written.
    #[inline]
    pub fn advance(&mut self) -> Result<bool, FormatError> {
        if self.held {
            self.held = false;
            return Ok(true);
        }
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
    /// Opens a spill file written by anyone, anywhere, through its index beside it
    /// ([`SpillIndex::path_for`]). Dropping the result deletes nothing.
    ///
    /// # Errors
    /// As for [`SpillFile::open_indexed`].
    pub fn open(data_path: &Path) -> Result<SpillFile, SpillError> {
        SpillFile::open_indexed(data_path, &SpillIndex::path_for(data_path))
    }

    /// Opens the spill file `data_path` through the index `index_path`. Dropping the result
    /// deletes nothing.
    ///
    /// # Errors
    /// [`SpillError::Io`] if either file cannot be read; [`SpillError::Index`] if the index is
    /// damaged or the data file is not as long as the index says.
    pub fn open_indexed(data_path: &Path, index_path: &Path) -> Result<SpillFile, SpillError> {
        let index = SpillIndex::read(index_path)?;
        let actual = std::fs::metadata(data_path)
            .map_err(|source| SpillError::Io {
                path: data_path.to_path_buf(),
                source,
            })?
            .len();
        if actual != index.data_len() {
            return Err(SpillError::Index {
                path: index_path.to_path_buf(),
                problem: IndexProblem::DataFileLength {
                    data_path: data_path.to_path_buf(),
                    actual,
                    expected: index.data_len(),
                },
            });
        }
        Ok(SpillFile {
            path: data_path.to_path_buf(),
            index,
            owned: false,
            blocks: Mutex::new(None),
            counting: None,
        })
    }

    /// The data file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The index file's path.
    pub fn index_path(&self) -> &Path {
        self.index.path()
    }

    /// Size of the data file in bytes.
    pub fn bytes(&self) -> u64 {
        self.index.data_len()
    }

    /// Number of partitions (segments) in the file.
    pub fn partitions(&self) -> usize {
        self.index.segments().len()
    }

    /// Where `partition`'s segment is and what it holds (`None` for a partition out of range).
    /// A server can ship `segment.stored_len` bytes from `segment.offset` as they are.
    pub fn segment(&self, partition: usize) -> Option<Segment> {
        self.index.segments().get(partition).copied()
    }

    /// Records of `partition` in this file (0 for a partition out of range).
    pub fn records(&self, partition: usize) -> u64 {
        self.segment(partition).map_or(0, |s| s.records)
    }

    /// Records in all partitions.
    pub fn total_records(&self) -> u64 {
        self.index.segments().iter().map(|s| s.records).sum()
    }

    /// Opens a cursor over `partition`'s records (none for a partition out of range). Each
    /// cursor has its own file handle, so many partitions can be read at once.
    ///
    /// # Errors
    /// [`SpillError::Io`] if the file cannot be opened or positioned.
    pub fn open_segment(&self, partition: usize) -> Result<SegmentReader, SpillError> {
        let segment = self.segment(partition).unwrap_or_default();
        let io_err = |source| SpillError::Io {
            path: self.path.clone(),
            source,
        };
        let file = File::open(&self.path).map_err(io_err)?;
        // Cannot overflow: the index was checked (or written) to lie within the file.
        let end = segment.offset + segment.stored_len;
        Ok(self.reader_from(file, segment.offset, end))
    }

    /// A reader of the blocks from `start` (a block's header) to `end` (its segment's end).
    fn reader_from(&self, file: File, start: u64, end: u64) -> SegmentReader {
        let mut run = RunReader::new(
            ReadAhead::new(file, start, end),
            self.path.display().to_string(),
            start,
        );
        self.count_buffers(&mut run);
        SegmentReader {
            run,
            end,
            path: self.path.clone(),
            held: false,
        }
    }

    /// Has `run`'s buffers counted in the pool beyond the usual, if this file's readers count
    /// them (a file [`SpillDir::with_pool`] wrote).
    fn count_buffers<R: std::io::Read>(&self, run: &mut RunReader<R>) {
        if let Some(counting) = &self.counting {
            run.watch_buffers(Box::new(counting.account()));
        }
    }

    /// Where each block of `partition`'s segment starts, in order (none for an empty segment
    /// or a partition out of range), found by hopping from header to header: no block body is
    /// read or decompressed. The last partition asked about is remembered.
    ///
    /// # Errors
    /// [`SpillError::Io`]; [`SpillError::Format`] naming the offset of a header no writer
    /// produces, or of a block that runs past its segment's end.
    pub fn block_starts(&self, partition: usize) -> Result<Arc<[u64]>, SpillError> {
        {
            let cached = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
            if let Some((p, starts)) = &*cached {
                if *p == partition {
                    return Ok(Arc::clone(starts));
                }
            }
        }
        let segment = self.segment(partition).unwrap_or_default();
        let name = self.path.display().to_string();
        let file = File::open(&self.path).map_err(|source| SpillError::Io {
            path: self.path.clone(),
            source,
        })?;
        let end = segment.offset + segment.stored_len;
        let mut starts = Vec::new();
        let mut at = segment.offset;
        let mut header = [0u8; BLOCK_HEADER_LEN];
        while at < end {
            let fits = end - at >= BLOCK_HEADER_LEN as u64;
            if !fits {
                return Err(SpillError::Format(FormatError::Corrupt {
                    source_name: name,
                    offset: at,
                    detail: format!(
                        "truncated block header at the end of partition {partition}'s segment"
                    ),
                }));
            }
            file.read_exact_at(&mut header, at)
                .map_err(|source| SpillError::Io {
                    path: self.path.clone(),
                    source,
                })?;
            let len = block_len(&header, &name, at)?;
            starts.push(at);
            at = at.saturating_add(len);
        }
        if at != end {
            return Err(SpillError::Format(FormatError::Corrupt {
                source_name: name,
                offset: starts.last().copied().unwrap_or(segment.offset),
                detail: format!("block runs past the end of partition {partition}'s segment"),
            }));
        }
        let starts: Arc<[u64]> = starts.into();
        *self.blocks.lock().unwrap_or_else(|e| e.into_inner()) =
            Some((partition, Arc::clone(&starts)));
        Ok(starts)
    }

    /// `look` at the first key of the block at `starts[i]` of a segment ending at `end`: that
    /// block alone is read, checked and decompressed (and counted in the pool while it is
    /// held, should it be a huge record's).
    fn with_first_key<T>(
        &self,
        file: &File,
        starts: &[u64],
        i: usize,
        end: u64,
        look: impl FnOnce(&[u8]) -> T,
    ) -> Result<T, SpillError> {
        let start = starts[i];
        let block_end = starts.get(i + 1).copied().unwrap_or(end);
        let mut run = RunReader::new(
            ReadAt {
                file,
                pos: start,
                end: block_end,
            },
            self.path.display().to_string(),
            start,
        );
        self.count_buffers(&mut run);
        if !run.advance()? {
            return Err(SpillError::Format(FormatError::Corrupt {
                source_name: self.path.display().to_string(),
                offset: start,
                detail: "a spill block without records".to_string(),
            }));
        }
        Ok(look(run.key()))
    }

    fn open_data(&self) -> Result<File, SpillError> {
        File::open(&self.path).map_err(|source| SpillError::Io {
            path: self.path.clone(),
            source,
        })
    }

    /// Up to `count` keys of `partition`, in order, spread evenly over its blocks: the first
    /// key of every `blocks / count`-th block (each block probed is read and decompressed,
    /// no other), unless it is longer than `max_key` bytes (left out, not copied). For
    /// choosing where to cut a partition into ranges of about equal size.
    ///
    /// # Errors
    /// As for [`SpillFile::block_starts`], and a corrupt block probed.
    pub fn sample_keys(
        &self,
        partition: usize,
        count: usize,
        max_key: usize,
    ) -> Result<Vec<Vec<u8>>, SpillError> {
        let starts = self.block_starts(partition)?;
        if starts.is_empty() || count == 0 {
            return Ok(Vec::new());
        }
        let segment = self.segment(partition).unwrap_or_default();
        let end = segment.offset + segment.stored_len;
        let file = self.open_data()?;
        let mut picked: Vec<usize> = (0..count)
            .map(|i| i.saturating_mul(starts.len()) / count)
            .collect();
        picked.dedup();
        let mut keys = Vec::with_capacity(picked.len());
        for i in picked {
            let key = self.with_first_key(&file, &starts, i, end, |key| {
                (key.len() <= max_key).then(|| key.to_vec())
            })?;
            keys.extend(key);
        }
        Ok(keys)
    }

    /// Opens a cursor over `partition`'s records from the first whose key is not less than
    /// `key` (in the order `compare` gives, the one the run was sorted in): the blocks are
    /// found by hopping their headers ([`SpillFile::block_starts`]) and binary-searched by
    /// their first keys, decompressing only the blocks probed; the records of the block where
    /// the key may start that come before it are skipped.
    ///
    /// # Errors
    /// As for [`SpillFile::block_starts`] and [`SpillFile::open_segment`], and a corrupt
    /// block probed or skipped.
    pub fn open_segment_at(
        &self,
        partition: usize,
        key: &[u8],
        compare: KeyCompare<'_>,
    ) -> Result<SegmentReader, SpillError> {
        let starts = self.block_starts(partition)?;
        let segment = self.segment(partition).unwrap_or_default();
        let end = segment.offset + segment.stored_len;
        let file = self.open_data()?;
        // Blocks are in key order, so "the first key is less than `key`" holds for a prefix
        // of them; `below` counts that prefix.
        let (mut low, mut high) = (0, starts.len());
        while low < high {
            let middle = low + (high - low) / 2;
            let below =
                self.with_first_key(&file, &starts, middle, end, |first| compare(first, key))?;
            if below == KeyOrdering::Less {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let below = low;
        // Records equal to `key` may end the last block that starts below it; none can be
        // in an earlier one.
        let start = match below.checked_sub(1) {
            Some(block) => starts[block],
            None => starts.first().copied().unwrap_or(end),
        };
        let mut reader = self.reader_from(file, start, end);
        while reader.advance()? {
            if compare(reader.key(), key) != KeyOrdering::Less {
                reader.held = true;
                break;
            }
        }
        Ok(reader)
    }

    /// Reads `partition`'s segment as stored (compressed blocks, headers included), for a
    /// server that ships it without decoding it, and checks it with
    /// [`SpillFile::verify_stored`].
    ///
    /// # Errors
    /// [`SpillError::NoSuchPartition`], [`SpillError::Io`], and those of `verify_stored`.
    pub fn read_stored(&self, partition: usize) -> Result<Vec<u8>, SpillError> {
        let segment = self.existing_segment(partition)?;
        let io_err = |source| SpillError::Io {
            path: self.path.clone(),
            source,
        };
        let mut file = File::open(&self.path).map_err(io_err)?;
        file.seek(SeekFrom::Start(segment.offset)).map_err(io_err)?;
        // Only a hint: a data file shorter than its index fails `verify_stored`, not this.
        let mut stored = Vec::with_capacity(usize::try_from(segment.stored_len).unwrap_or(0));
        file.take(segment.stored_len)
            .read_to_end(&mut stored)
            .map_err(io_err)?;
        self.verify_stored(partition, &stored)?;
        Ok(stored)
    }

    /// Checks bytes said to be `partition`'s stored segment without decompressing them: their
    /// length against the index, every block's header and CRC32C, and the blocks' raw length
    /// against the index.
    ///
    /// # Errors
    /// [`SpillError::NoSuchPartition`]; [`SpillError::Format`] naming the data file and the
    /// offset of the first bad block, or the segment's offset if the lengths disagree.
    pub fn verify_stored(&self, partition: usize, stored: &[u8]) -> Result<(), SpillError> {
        let segment = self.existing_segment(partition)?;
        let name = self.path.display().to_string();
        let corrupt = |detail| {
            SpillError::Format(FormatError::Corrupt {
                source_name: name.clone(),
                offset: segment.offset,
                detail,
            })
        };
        if stored.len() as u64 != segment.stored_len {
            return Err(corrupt(format!(
                "segment of partition {partition} is {} bytes, the index says {}",
                stored.len(),
                segment.stored_len
            )));
        }
        let raw_len = sluice_format::verify_blocks(stored, &name, segment.offset)?;
        if raw_len != segment.raw_len {
            return Err(corrupt(format!(
                "segment of partition {partition} holds {raw_len} raw bytes, the index says {}",
                segment.raw_len
            )));
        }
        Ok(())
    }

    fn existing_segment(&self, partition: usize) -> Result<Segment, SpillError> {
        self.segment(partition)
            .ok_or_else(|| SpillError::NoSuchPartition {
                path: self.path.clone(),
                partition,
                partitions: self.partitions() as u64,
            })
    }
}

impl Drop for SpillFile {
    fn drop(&mut self) {
        if self.owned {
            // Best effort: the whole spill directory is removed at the end of the job anyway.
            let _ = std::fs::remove_file(&self.path);
            let _ = std::fs::remove_file(self.index.path());
        }
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

    #[test]
    fn a_spill_directory_is_for_its_user_only() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
    }

    fn read_all(mut r: SegmentReader) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while r.advance().unwrap() {
            out.push((r.key().to_vec(), r.value().to_vec()));
        }
        out
    }

    #[test]
    fn a_spill_directory_that_cannot_be_made_is_named() {
        let parent = tempfile::tempdir().unwrap();
        let missing = parent.path().join("no-such-place");
        match SpillDir::create_in(&missing) {
            Err(e @ SpillError::CreateDir { .. }) => {
                let text = e.to_string();
                assert!(text.contains(&missing.display().to_string()), "{text}");
                // The cause is the operating system's, as making any directory there
                // gives it, without the random name tried.
                let source = std::error::Error::source(&e).unwrap().to_string();
                let os = std::fs::create_dir(missing.join("x")).unwrap_err();
                assert_eq!(source, os.to_string());
            }
            other => panic!("expected CreateDir, got {other:?}"),
        }
        assert!(!missing.exists());
    }

    #[test]
    fn segments_round_trip_and_files_are_removed_on_drop() {
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
        let (path, index) = (file.path().to_path_buf(), file.index_path().to_path_buf());
        assert!(path.exists() && index.exists());
        drop(file);
        assert!(!path.exists() && !index.exists());
    }

    #[test]
    fn a_huge_record_is_counted_while_it_is_written_and_read() {
        let parent = tempfile::tempdir().unwrap();
        let pool = MemoryPool::new(1 << 20);
        let dir = SpillDir::create_in(parent.path())
            .unwrap()
            .with_pool(pool.clone());
        // Blocks of 16 bytes: every small record below has one of its own.
        let usual = usual_buffers(16);
        let huge = vec![b'x'; 8 << 20];
        let mut w = dir.create_writer(1, Codec::Lz4, 16).unwrap();
        w.write(0, b"a", b"small").unwrap();
        assert_eq!(pool.used(), 0);
        w.write(0, b"b", &huge).unwrap();
        // The record's block, and the room to compress it when the next record flushes it.
        assert!(pool.used() + usual >= 2 * huge.len(), "{}", pool.used());
        for i in 0..4 {
            w.write(0, format!("c{i}").as_bytes(), b"small").unwrap();
        }
        assert_eq!(pool.used(), 0, "the writer still counts a huge block");
        let file = w.finish().unwrap();
        assert!(
            pool.forced_bytes() > 0,
            "beyond the budget, and not reported"
        );

        let mut r = file.open_segment(0).unwrap();
        assert!(r.advance().unwrap());
        assert_eq!(pool.used(), 0);
        assert!(r.advance().unwrap());
        assert_eq!(r.value(), &huge[..]);
        assert!(pool.used() + usual >= huge.len(), "{}", pool.used());
        assert!(r.advance().unwrap());
        assert_eq!(r.key(), b"c0");
        assert!(pool.used() < 1 << 20, "still counted: {}", pool.used());
        drop(r);
        assert_eq!(pool.used(), 0);

        // Sampling leaves a key longer than asked for out (and counts the block it probes
        // only while it looks at it).
        let mut w = dir.create_writer(1, Codec::Lz4, 16).unwrap();
        w.write(0, b"a", b"1").unwrap();
        w.write(0, &huge, b"2").unwrap();
        w.write(0, b"c", b"3").unwrap();
        let file = w.finish().unwrap();
        let keys = file.sample_keys(0, 3, 1024).unwrap();
        assert_eq!(keys, vec![b"a".to_vec(), b"c".to_vec()]);
        assert_eq!(file.sample_keys(0, 3, huge.len()).unwrap().len(), 3);
        assert_eq!(pool.used(), 0);
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
