//! Hadoop's checksum files beside local files.
//!
//! Hadoop's local file system (its `ChecksumFileSystem`) writes, next to each file `NAME` it
//! creates, a hidden `.NAME.crc` with a CRC of every 512 bytes of `NAME`, and checks them
//! whenever it reads `NAME`. It also hides such files from listings and globs, deletes a file's
//! checksum file with it, and moves it with it. Sites run sluice and Hadoop over the same local
//! directories, so [`LocalStorage`](crate::LocalStorage) keeps them in step the same way:
//!
//! * listings leave checksum files out (so `sluice fs -ls`, `-du`, `-cat 'out/*'` and
//!   `-getmerge` never show or merge them, and a copied directory does not carry them along);
//! * deleting a file deletes its checksum file;
//! * renaming a file moves its checksum file, or deletes the one the target had;
//! * creating a file deletes a checksum file left beside its name.
//!
//! The last two matter most: a file sluice writes over one Hadoop wrote, under Hadoop's old
//! `.NAME.crc`, would make every later read by Hadoop fail with a `ChecksumException`. sluice
//! writes no checksum files itself; Hadoop reads a file without one unchecked.
//!
//! Reads check what a checksum file covers, as Hadoop's do ([`verified`]): a file changed
//! behind Hadoop's back (edited, cut short, damaged on disk) fails to read with Hadoop's
//! `Checksum error: file:/path at OFFSET exp: N got: M` instead of serving what is there.
//! A checksum file with another header is not one (Hadoop ignores it too).

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// How a checksum file starts: `crc\0`, then the bytes each checksum covers (big-endian).
const MAGIC: &[u8; 4] = b"crc\0";
/// The length of that header.
const HEADER_LEN: u64 = 8;

/// Whether a file of this name (one path component) is a checksum file as Hadoop tells them:
/// it starts with `.` and ends with `.crc`.
pub fn is_checksum_file_name(name: impl AsRef<[u8]>) -> bool {
    let name = name.as_ref();
    name.starts_with(b".") && name.ends_with(b".crc")
}

/// The longest file name the system takes (`NAME_MAX`).
const NAME_MAX: usize = 255;

/// The checksum file Hadoop keeps for the file at `path`: `.NAME.crc` beside it; `None` for a
/// path without a file name (`/`, `..`), and for a name too long to have one (over 250 bytes:
/// `.NAME.crc` could not exist, and asking for it fails with "file name too long").
pub(crate) fn checksum_file_of(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    if name.len() + 5 > NAME_MAX {
        return None;
    }
    let mut checksum = OsString::with_capacity(name.len() + 5);
    checksum.push(".");
    checksum.push(name);
    checksum.push(".crc");
    Some(path.with_file_name(checksum))
}

/// Deletes the checksum file of the file at `path`, if there is one.
///
/// # Errors
/// The system's error other than "not found".
pub(crate) fn delete_checksum_of(path: &Path) -> io::Result<()> {
    let Some(checksum) = checksum_file_of(path) else {
        return Ok(());
    };
    match fs::remove_file(checksum) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// After the file at `from` was renamed to `to`: moves `from`'s checksum file to `to`'s, or,
/// when `from` had none, deletes the one `to` had (it belonged to the file `to` replaced).
///
/// # Errors
/// The system's error moving or deleting a checksum file.
pub(crate) fn follow_rename(from: &Path, to: &Path) -> io::Result<()> {
    let (Some(from_checksum), Some(to_checksum)) = (checksum_file_of(from), checksum_file_of(to))
    else {
        return Ok(());
    };
    match fs::rename(&from_checksum, &to_checksum) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => delete_checksum_of(to),
        Err(e) => Err(e),
    }
}

/// A reader of the bytes `start..start + len` of the file at `path` (to its end for a `len`
/// of `u64::MAX`) that checks every chunk it reads against the file's checksum file; `None`
/// when the file has none (or one with another header), to be read as it is.
///
/// # Errors
/// The file or its checksum file cannot be opened or positioned. A chunk whose checksum
/// differs fails the read itself, with [`io::ErrorKind::InvalidData`].
pub(crate) fn verified(
    path: &Path,
    start: u64,
    len: u64,
) -> io::Result<Option<Box<dyn Read + Send>>> {
    let Some(checksum_path) = checksum_file_of(path) else {
        return Ok(None);
    };
    let mut sums = match File::open(&checksum_path) {
        Ok(file) => BufReader::new(file),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut header = [0u8; 8];
    if sums.read_exact(&mut header).is_err() || &header[..4] != MAGIC {
        return Ok(None);
    }
    let chunk = u64::from(u32::from_be_bytes([
        header[4], header[5], header[6], header[7],
    ]));
    if chunk == 0 || chunk > 1 << 30 {
        return Ok(None);
    }
    let first = start / chunk;
    let mut data = File::open(path)?;
    data.seek(SeekFrom::Start(first * chunk))?;
    sums.seek(SeekFrom::Start(HEADER_LEN + first * 4))?;
    Ok(Some(Box::new(Verified {
        name: format!(
            "file:{}",
            std::path::absolute(path)
                .unwrap_or_else(|_| path.to_path_buf())
                .display()
        ),
        data: BufReader::with_capacity(1 << 16, data),
        sums,
        chunk: usize::try_from(chunk).unwrap_or(usize::MAX),
        at: first * chunk,
        skip: usize::try_from(start - first * chunk).unwrap_or(0),
        left: len,
        buffer: Vec::new(),
        used: 0,
        stored: Vec::new(),
        checking: true,
    })))
}

/// The reader [`verified`] gives.
struct Verified {
    /// The file, as Hadoop names it in the error.
    name: String,
    data: BufReader<File>,
    sums: BufReader<File>,
    /// Bytes per checksum.
    chunk: usize,
    /// Where the next chunk starts in the file.
    at: u64,
    /// Bytes of the first chunk before the range.
    skip: usize,
    /// Bytes of the range not yet given.
    left: u64,
    /// The chunks being given out, and how much of them is.
    buffer: Vec<u8>,
    used: usize,
    /// Their checksums, as the checksum file holds them.
    stored: Vec<u8>,
    /// Whether checksums are left to check against (a checksum file cut short checks no
    /// further).
    checking: bool,
}

/// Chunks read and checked at a time: 64 KiB of 512-byte chunks, so that a checked read
/// costs a CRC and a copy, not a call per chunk.
const CHUNKS_AT_ONCE: usize = 128;

impl Verified {
    /// Reads and checks the next chunks; false at the end of the file.
    fn next_chunk(&mut self) -> io::Result<bool> {
        self.buffer.clear();
        self.used = 0;
        // As many chunks at once as the range still needs, up to the batch: a chunk past the
        // range is not read, and so not checked.
        let chunk = self.chunk as u64;
        let needed = (self.skip as u64).saturating_add(self.left);
        let chunks = needed.div_ceil(chunk).min(CHUNKS_AT_ONCE as u64);
        (&mut self.data)
            .take(chunks * chunk)
            .read_to_end(&mut self.buffer)?;
        if self.buffer.is_empty() {
            return Ok(false);
        }
        if self.checking {
            let count = self.buffer.len().div_ceil(self.chunk);
            self.stored.resize(count * 4, 0);
            let got = read_full(&mut self.sums, &mut self.stored)?;
            let checked = got / 4;
            for (i, piece) in self.buffer.chunks(self.chunk).enumerate().take(checked) {
                let stored: [u8; 4] = self.stored[i * 4..i * 4 + 4].try_into().unwrap_or_default();
                let computed = crc32fast::hash(piece).to_be_bytes();
                if computed != stored {
                    let at = self.at + (i * self.chunk) as u64;
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "Checksum error: {} at {at} exp: {} got: {}",
                            self.name,
                            i32::from_be_bytes(stored),
                            i32::from_be_bytes(computed)
                        ),
                    ));
                }
            }
            // A checksum file cut short checks no further.
            self.checking = checked == count;
        }
        self.at += self.buffer.len() as u64;
        self.used = std::mem::take(&mut self.skip).min(self.buffer.len());
        Ok(true)
    }
}

/// Reads into all of `buf` unless the end comes first; how many bytes were read.
fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match reader.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl Read for Verified {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || out.is_empty() {
            return Ok(0);
        }
        while self.used == self.buffer.len() {
            if !self.next_chunk()? {
                return Ok(0);
            }
        }
        let available = &self.buffer[self.used..];
        let wanted = usize::try_from(self.left)
            .unwrap_or(usize::MAX)
            .min(out.len());
        let n = available.len().min(wanted);
        out[..n].copy_from_slice(&available[..n]);
        self.used += n;
        self.left -= n as u64;
        Ok(n)
    }
}

/// Whether the entry named `name` in a listing is one a listing shows (not a checksum file).
pub(crate) fn listed(name: &std::ffi::OsStr) -> bool {
    !is_checksum_file_name(name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_files_are_named_as_hadoop_names_them() {
        assert!(is_checksum_file_name(".part-00000.crc"));
        assert!(is_checksum_file_name("..crc"));
        assert!(!is_checksum_file_name("part-00000.crc"));
        assert!(!is_checksum_file_name(".part-00000"));
        assert!(!is_checksum_file_name("_SUCCESS"));
        assert_eq!(
            checksum_file_of(Path::new("out/part-00000")),
            Some(PathBuf::from("out/.part-00000.crc"))
        );
        assert_eq!(
            checksum_file_of(Path::new("a.txt")),
            Some(PathBuf::from(".a.txt.crc"))
        );
        assert_eq!(checksum_file_of(Path::new("/")), None);
        // `.NAME.crc` of a 250-byte name is 255 bytes; of a longer one, it cannot exist.
        let longest = "n".repeat(250);
        assert!(checksum_file_of(Path::new(&longest)).is_some());
        assert_eq!(checksum_file_of(Path::new(&format!("{longest}x"))), None);
    }

    /// Files of the longest names the system takes are read, renamed and deleted: no
    /// checksum file is looked for (asking fails with "file name too long").
    #[test]
    fn the_longest_names_have_no_checksum_file_to_look_for() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("n".repeat(255));
        fs::write(&file, b"long").unwrap();
        let mut read = Vec::new();
        assert!(verified(&file, 0, u64::MAX).unwrap().is_none());
        fs::File::open(&file)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert_eq!(read, b"long");
        let moved = dir.path().join("m".repeat(255));
        fs::rename(&file, &moved).unwrap();
        follow_rename(&file, &moved).unwrap();
        delete_checksum_of(&moved).unwrap();
    }

    /// A checksum file as Hadoop writes one: the header, then a CRC-32 per 512 bytes.
    fn hadoop_checksums(data: &[u8]) -> Vec<u8> {
        let mut out = b"crc\0".to_vec();
        out.extend_from_slice(&512u32.to_be_bytes());
        for chunk in data.chunks(512) {
            out.extend_from_slice(&crc32fast::hash(chunk).to_be_bytes());
        }
        out
    }

    #[test]
    fn reads_are_checked_chunk_by_chunk_and_ranges_stay_ranges() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..1300u32).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &data).unwrap();
        assert!(
            verified(&path, 0, u64::MAX).unwrap().is_none(),
            "no checksum file"
        );
        fs::write(dir.path().join(".f.crc"), hadoop_checksums(&data)).unwrap();
        let read = |start: u64, len: u64| -> io::Result<Vec<u8>> {
            let mut out = Vec::new();
            verified(&path, start, len)?
                .unwrap()
                .read_to_end(&mut out)?;
            Ok(out)
        };
        assert_eq!(read(0, u64::MAX).unwrap(), data);
        assert_eq!(read(700, 300).unwrap(), &data[700..1000]);
        assert_eq!(read(1299, 10).unwrap(), &data[1299..]);
        // A byte changed in the last chunk: what does not reach it still reads.
        let mut changed = data.clone();
        changed[1100] ^= 1;
        fs::write(&path, &changed).unwrap();
        assert_eq!(read(0, 600).unwrap(), &data[..600]);
        let error = read(0, u64::MAX).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
        assert!(
            error.to_string().starts_with("Checksum error: file:/"),
            "{error}"
        );
        assert!(error.to_string().contains(" at 1024 exp: "), "{error}");
        // Not a checksum file: read as it is.
        fs::write(dir.path().join(".f.crc"), b"nope").unwrap();
        assert!(verified(&path, 0, u64::MAX).unwrap().is_none());
    }

    #[test]
    fn a_rename_moves_the_checksum_or_drops_the_targets() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // The source has a checksum file: it moves along, over the target's.
        fs::write(d.join(".a.crc"), "a").unwrap();
        fs::write(d.join(".b.crc"), "old b").unwrap();
        follow_rename(&d.join("a"), &d.join("b")).unwrap();
        assert!(!d.join(".a.crc").exists());
        assert_eq!(fs::read_to_string(d.join(".b.crc")).unwrap(), "a");
        // It has none: the target's goes, as it checked the file now replaced.
        follow_rename(&d.join("c"), &d.join("b")).unwrap();
        assert!(!d.join(".b.crc").exists());
        // Neither has one.
        follow_rename(&d.join("c"), &d.join("b")).unwrap();
    }
}
