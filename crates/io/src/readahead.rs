//! Reading a byte range of a file sequentially with the kernel reading ahead of it.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use crate::local::release_pages;

/// Bytes asked of the kernel ahead of the reader, in one hint.
const WINDOW: u64 = 1 << 20;

/// Reads `start..end` of a file, telling the kernel (`posix_fadvise(WILLNEED)`) to start
/// reading each next megabyte into its cache while the current one is consumed.
///
/// A merge reads hundreds of runs at once, a block of each at a time; without the hints each
/// block read waits for the device, and the kernel's own read-ahead does not keep up with so
/// many streams. The hints cost no memory of the job's budget: the pages are the kernel's.
pub struct ReadAhead {
    file: File,
    pos: u64,
    end: u64,
    /// Everything below this offset has been hinted.
    hinted: u64,
    /// Everything below this offset has been read and given back to the kernel.
    released: u64,
}

impl ReadAhead {
    /// A reader of `file`'s bytes `start..end`.
    pub fn new(file: File, start: u64, end: u64) -> ReadAhead {
        ReadAhead {
            file,
            pos: start,
            end: end.max(start),
            hinted: start,
            released: start,
        }
    }

    fn hint(&mut self) {
        // Keep at least one window ahead of the reader.
        if self.hinted >= self.end || self.hinted > self.pos + WINDOW {
            return;
        }
        let len = WINDOW.min(self.end - self.hinted);
        // Only a hint: an error (e.g. on a file system without read-ahead), or an offset past
        // what the call can express, changes nothing.
        if let Ok(offset) = i64::try_from(self.hinted) {
            let _ = nix::fcntl::posix_fadvise(
                &self.file,
                offset,
                // At most WINDOW.
                i64::try_from(len).unwrap_or(i64::MAX),
                nix::fcntl::PosixFadviseAdvice::POSIX_FADV_WILLNEED,
            );
        }
        self.hinted += len;
    }

    /// Drops the pages already read from the kernel's cache: the run is read once, and pages
    /// freed promptly are reused for the next reads instead of the kernel taking fresh ones
    /// (which on virtual machines can cost more than the copy itself).
    fn release(&mut self) {
        if self.pos - self.released < WINDOW && self.pos < self.end {
            return;
        }
        release_pages(&self.file, self.released, self.pos - self.released);
        self.released = self.pos;
    }
}

impl Read for ReadAhead {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end - self.pos;
        if left == 0 || buf.is_empty() {
            return Ok(0);
        }
        self.hint();
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        self.release();
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_exactly_its_range() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        for (start, end) in [(0, 0), (0, 10), (5, 2_500_001), (1_000_000, 3_000_000)] {
            let mut reader = ReadAhead::new(File::open(&path).unwrap(), start, end);
            let mut out = Vec::new();
            reader.read_to_end(&mut out).unwrap();
            assert!(out == data[start as usize..end as usize], "{start}..{end}");
        }
    }
}
