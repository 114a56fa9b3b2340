//! Writing large files past the page cache.
//!
//! Spill files and part files are written once and read at most once, much later: caching
//! them only makes the kernel copy every byte into page cache pages, account them as dirty,
//! write them back and reclaim them. On the machines measured, that copy alone cost more CPU
//! than sorting. [`DirectWriter`] instead collects bytes into large aligned chunks and writes
//! them with `O_DIRECT` (the device reads them straight from the chunk) on a background thread,
//! so that the task fills the next chunk while the previous one is being written.
//!
//! Where the file system refuses `O_DIRECT` (tmpfs, some network file systems) the same writer
//! falls back to ordinary writes of the same chunks.
//!
//! A file smaller than one chunk never starts the background thread: it is written at once,
//! through the page cache, when it is finished. A direct write of a few bytes is a device
//! round trip of its own, and a job of a million reducers writes a million such part files.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// Alignment of buffers, offsets and lengths that `O_DIRECT` asks for (the largest logical
/// block size in common use).
const ALIGN: usize = 4096;

/// Bytes written per system call: large enough for the device to stream, small enough that a
/// writer's two chunks stay a small fixed cost per thread.
pub const DIRECT_CHUNK: usize = 512 * 1024;

/// A `Vec` with room to start an aligned region of `len` bytes inside it. Safe code cannot ask
/// the allocator for alignment, so the chunk starts at the first aligned address.
struct AlignedChunk {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedChunk {
    fn new(len: usize) -> AlignedChunk {
        let storage = vec![0u8; len + ALIGN];
        let start = storage.as_ptr().align_offset(ALIGN).min(ALIGN);
        AlignedChunk {
            storage,
            start,
            len,
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// A chunk to write at a file offset, `len` bytes of it (a multiple of the alignment).
struct WriteJob {
    chunk: AlignedChunk,
    offset: u64,
    len: usize,
}

/// Writes a new file sequentially through aligned chunks, with `O_DIRECT` where the file system
/// allows it, the writes done on a background thread. Call [`DirectWriter::finish`] at the end:
/// it writes the last partial chunk, trims the file to the bytes written, and reports any error
/// of the background writes. A writer dropped without `finish` leaves an incomplete file.
pub struct DirectWriter {
    file: std::sync::Arc<File>,
    /// The chunk being filled, and how much of it is.
    chunk: Option<AlignedChunk>,
    filled: usize,
    /// File offset of the chunk being filled.
    offset: u64,
    /// The writer thread, started when the first chunk is full.
    background: Option<Background>,
    chunk_size: usize,
    /// Whether the file was opened with `O_DIRECT`.
    direct: bool,
}

/// The thread that writes a [`DirectWriter`]'s full chunks, and the queues to and from it.
struct Background {
    jobs: Option<SyncSender<WriteJob>>,
    /// Chunks coming back from the writer thread once written (or `Err` on a failed write).
    done: Receiver<io::Result<AlignedChunk>>,
    writer: Option<JoinHandle<()>>,
}

impl Background {
    /// Starts the writer thread of `file`, with a second chunk of `chunk_size` bytes: one is
    /// filled while the other is written.
    fn start(file: &std::sync::Arc<File>, chunk_size: usize) -> io::Result<Background> {
        let (jobs, job_queue) = sync_channel::<WriteJob>(1);
        let (done_sender, done) = sync_channel::<io::Result<AlignedChunk>>(2);
        done_sender
            .send(Ok(AlignedChunk::new(chunk_size)))
            .map_err(|_| io::Error::other("writer queue closed"))?;
        let writer_file = std::sync::Arc::clone(file);
        let writer = std::thread::Builder::new()
            .name("sluice-writer".into())
            .spawn(move || write_chunks(&writer_file, &job_queue, &done_sender))?;
        Ok(Background {
            jobs: Some(jobs),
            done,
            writer: Some(writer),
        })
    }

    /// Closes the queue and waits for every write and for the thread.
    ///
    /// # Errors
    /// The first failed write.
    fn finish(mut self) -> io::Result<()> {
        // Closing the queue ends the writer thread; its last result is the final chunk back.
        self.jobs = None;
        while let Ok(result) = self.done.recv() {
            result?;
        }
        if let Some(writer) = self.writer.take() {
            writer
                .join()
                .map_err(|_| io::Error::other("the writer thread panicked"))?;
        }
        Ok(())
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.jobs = None;
        // Drain so that the writer thread is not blocked on a full result queue.
        while self.done.recv().is_ok() {}
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

impl DirectWriter {
    /// Creates `path` (which must not exist) for writing.
    ///
    /// # Errors
    /// The operating system's error if the file cannot be created.
    pub fn create(path: &Path) -> io::Result<DirectWriter> {
        DirectWriter::create_with(path, DIRECT_CHUNK)
    }

    /// Like [`DirectWriter::create`], with chunks of `chunk_size` bytes (rounded up to the
    /// alignment).
    ///
    /// # Errors
    /// As for [`DirectWriter::create`].
    pub fn create_with(path: &Path, chunk_size: usize) -> io::Result<DirectWriter> {
        let chunk_size = chunk_size.max(ALIGN).div_ceil(ALIGN) * ALIGN;
        let (file, direct) = match open(path, true) {
            Ok(file) => (file, true),
            // EINVAL: the file system does not do direct I/O. The failed open created the file.
            Err(e) if e.raw_os_error() == Some(nix::libc::EINVAL) => {
                let _ = std::fs::remove_file(path);
                (open(path, false)?, false)
            }
            Err(e) => return Err(e),
        };
        Ok(DirectWriter {
            file: std::sync::Arc::new(file),
            chunk: Some(AlignedChunk::new(chunk_size)),
            filled: 0,
            offset: 0,
            background: None,
            chunk_size,
            direct,
        })
    }

    /// Whether the file bypasses the page cache (`O_DIRECT` was accepted). A file that ends
    /// smaller than one chunk is still written through the page cache, by [`DirectWriter::finish`].
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// Bytes written so far (buffered or not).
    pub fn position(&self) -> u64 {
        self.offset + self.filled as u64
    }

    /// Hands the current chunk (its first `len` bytes) to the writer thread and takes back a
    /// free one, waiting for its write if needed.
    fn submit(&mut self, len: usize) -> io::Result<()> {
        let Some(chunk) = self.chunk.take() else {
            return Err(io::Error::other("an earlier write of this file failed"));
        };
        let job = WriteJob {
            chunk,
            offset: self.offset,
            len,
        };
        let background = match &mut self.background {
            Some(background) => background,
            None => self
                .background
                .insert(Background::start(&self.file, self.chunk_size)?),
        };
        // If the writer thread stopped after a failed write, the send fails and the failure
        // is the next result waiting in `done`.
        if let Some(jobs) = &background.jobs {
            let _ = jobs.send(job);
        }
        let next = match background.done.recv() {
            Ok(result) => result?,
            Err(_) => return Err(io::Error::other("the writer thread stopped")),
        };
        self.chunk = Some(next);
        self.offset += self.filled as u64;
        self.filled = 0;
        Ok(())
    }

    /// Writes what is buffered, waits for every write, and trims the file to the bytes written.
    ///
    /// # Errors
    /// The first error of any write, or of trimming the file.
    pub fn finish(mut self) -> io::Result<u64> {
        let len = self.position();
        if self.background.is_none() {
            // Smaller than a chunk: written at once, through the page cache.
            if self.filled > 0 {
                if self.direct {
                    without_direct(&self.file)?;
                }
                let Some(chunk) = self.chunk.as_ref() else {
                    return Err(io::Error::other("an earlier write of this file failed"));
                };
                self.file.write_all_at(&chunk.bytes()[..self.filled], 0)?;
            }
            return Ok(len);
        }
        if self.filled > 0 {
            let filled = self.filled;
            let padded = filled.div_ceil(ALIGN) * ALIGN;
            if let Some(chunk) = self.chunk.as_mut() {
                chunk.bytes_mut()[filled..padded].fill(0);
            }
            self.submit(padded)?;
        }
        if let Some(background) = self.background.take() {
            background.finish()?;
        }
        if self.file.metadata()?.len() != len {
            self.file.set_len(len)?;
        }
        Ok(len)
    }
}

impl Write for DirectWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let Some(chunk) = self.chunk.as_mut() else {
            return Err(io::Error::other("an earlier write of this file failed"));
        };
        let room = chunk.len - self.filled;
        let n = room.min(buf.len());
        chunk.bytes_mut()[self.filled..self.filled + n].copy_from_slice(&buf[..n]);
        self.filled += n;
        if self.filled == chunk.len {
            let len = chunk.len;
            self.submit(len)?;
        }
        Ok(n)
    }

    /// Nothing to do: bytes reach the file chunk by chunk, and the last partial chunk only in
    /// [`DirectWriter::finish`] (a direct write must be whole aligned blocks).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn open(path: &Path, direct: bool) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    if direct {
        options.custom_flags(o_direct());
    }
    options.open(path)
}

/// Turns `O_DIRECT` off for `file`: its few bytes go through the page cache.
fn without_direct(file: &File) -> io::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, OFlag};
    let flags = OFlag::from_bits_truncate(fcntl(file, FcntlArg::F_GETFL)?);
    fcntl(
        file,
        FcntlArg::F_SETFL(flags & !OFlag::from_bits_truncate(o_direct())),
    )?;
    Ok(())
}

#[cfg(target_os = "linux")]
fn o_direct() -> i32 {
    nix::libc::O_DIRECT
}

#[cfg(not(target_os = "linux"))]
fn o_direct() -> i32 {
    0
}

/// The writer thread: writes each job's chunk at its offset and sends the chunk back for
/// reuse, or the error (after which it stops).
fn write_chunks(
    file: &File,
    jobs: &Receiver<WriteJob>,
    done: &SyncSender<io::Result<AlignedChunk>>,
) {
    while let Ok(job) = jobs.recv() {
        let result = file
            .write_all_at(&job.chunk.bytes()[..job.len], job.offset)
            .map(|()| job.chunk);
        let failed = result.is_err();
        if done.send(result).is_err() || failed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn the_writer_thread_starts_only_once_a_chunk_is_full() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small");
        let mut writer = DirectWriter::create_with(&path, 8192).unwrap();
        writer.write_all(&pattern(8191)).unwrap();
        assert!(writer.background.is_none());
        writer.write_all(&pattern(1)).unwrap();
        assert!(writer.background.is_some());
        assert_eq!(writer.finish().unwrap(), 8192);
        let mut expected = pattern(8191);
        expected.extend(pattern(1));
        assert_eq!(std::fs::read(&path).unwrap(), expected);
    }

    #[test]
    fn any_length_in_any_pieces_reads_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        for (len, piece) in [
            (0, 1),
            (1, 1),
            (4095, 100),
            (4096, 4096),
            (10_000, 333),
            (3 * 8192 + 5, 8192),
            (100_000, 70_000),
        ] {
            let path = dir.path().join(format!("f-{len}-{piece}"));
            let data = pattern(len);
            let mut writer = DirectWriter::create_with(&path, 8192).unwrap();
            for part in data.chunks(piece) {
                writer.write_all(part).unwrap();
            }
            assert_eq!(writer.position(), len as u64);
            assert_eq!(writer.finish().unwrap(), len as u64);
            assert_eq!(std::fs::read(&path).unwrap(), data, "length {len}");
        }
    }

    #[test]
    fn an_existing_file_is_not_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("exists");
        std::fs::write(&path, b"keep").unwrap();
        assert!(DirectWriter::create(&path).is_err());
        assert_eq!(std::fs::read(&path).unwrap(), b"keep");
    }
}
