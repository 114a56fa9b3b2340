//! The local file system as a [`Storage`].

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::checksum_file::{checksum_file_of, delete_checksum_of, follow_rename, listed, verified};
use crate::input::is_hidden;
use crate::storage::glob_syntax;
use crate::{CachePolicy, DirectWriter, FileStatus, IoError, Location, Storage, StorageWriter};

/// The local file system: plain paths and `file:` URIs.
///
/// It keeps exactly the semantics sluice had before the [`Storage`] trait: listings follow
/// symbolic links (a directory reached twice through a link cycle is walked once per chain,
/// never forever) and skip entries that vanish meanwhile and dangling links ([`Storage::list`]
/// also links in a loop, and entries of a directory that cannot be searched, as Hadoop's
/// listings do); globs are
/// expanded by the `glob` crate in one pass (not by listings); anything that is not a
/// directory (a FIFO, a device) counts as a file.
///
/// Reads are a plain [`File`] positioned at the range's start (bounded by [`Read::take`]
/// unless the range runs to the end): the one sequential stream of a task is what the
/// kernel's own read-ahead serves well, and it is the reader the line and record readers
/// always had, so the hot input path has no extra layer. ([`ReadAhead`](crate::ReadAhead),
/// with its explicit hints, pays where hundreds of streams are read at once: the spill merge,
/// which reads its own local files directly.) [`CachePolicy::DropBehind`] drops the pages read
/// from the page cache every 8 MiB. Files are created with [`DirectWriter`] (past the page
/// cache), never over an existing file.
///
/// Hadoop's checksum files (`.NAME.crc`) are kept in step as Hadoop's own local file system
/// keeps them (see [`is_checksum_file_name`](crate::is_checksum_file_name)): listings leave
/// them out, deleting, renaming or creating a file deletes or moves the checksum file of its
/// name, and a file that has one is read through it, each chunk checked.
#[derive(Debug, Clone, Default)]
pub struct LocalStorage {
    _private: (),
}

impl LocalStorage {
    /// The local file system.
    pub fn new() -> LocalStorage {
        LocalStorage { _private: () }
    }

    /// The error for a location of another store.
    pub(crate) fn refuse(location: &Location) -> IoError {
        let scheme = location.scheme_name();
        IoError::UnsupportedScheme {
            location: location.to_string(),
            scheme: scheme.to_string(),
            reason: format!(
                "the local file system cannot serve {scheme}:// locations (this job or build \
                 has no remote stores)"
            ),
        }
    }

    fn path<'a>(&self, location: &'a Location) -> Result<&'a Path, IoError> {
        location
            .as_local_path()
            .ok_or_else(|| LocalStorage::refuse(location))
    }
}

/// Bytes consumed between two page-cache releases of [`CachePolicy::DropBehind`].
pub(crate) const RELEASE_STEP: u64 = 8 << 20;

fn read_error(path: &Path, source: io::Error) -> IoError {
    IoError::Read {
        path: path.to_path_buf(),
        source,
    }
}

fn write_error(path: &Path, source: io::Error) -> IoError {
    IoError::Write {
        path: path.to_path_buf(),
        source,
    }
}

fn status_of(location: Location, meta: &fs::Metadata) -> FileStatus {
    let status = if meta.is_dir() {
        FileStatus::directory(location)
    } else {
        FileStatus::file(location, meta.len())
    };
    let status = match meta.modified() {
        Ok(time) => status.with_modified(time),
        Err(_) => status,
    };
    match meta.accessed() {
        Ok(time) => status.with_accessed(time),
        Err(_) => status,
    }
}

/// The path to hand the system for a directory to list: the empty path (what a relative
/// glob's literal prefix can be) is the current directory.
fn dir_path(path: &Path) -> &Path {
    if path.as_os_str().is_empty() {
        Path::new(".")
    } else {
        path
    }
}

impl Storage for LocalStorage {
    fn status(&self, location: &Location) -> Result<Option<FileStatus>, IoError> {
        let path = self.path(location)?;
        match fs::metadata(path) {
            Ok(meta) => Ok(Some(status_of(location.clone(), &meta))),
            // A link in a loop names nothing, as for Hadoop; nor does a path below a file
            // (`f.txt/x`), which Hadoop's local file system reports as not found.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) || is_link_loop(&e) =>
            {
                Ok(None)
            }
            Err(source) => Err(read_error(path, source)),
        }
    }

    fn list(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        let path = self.path(dir)?;
        let mut entries = Vec::new();
        let listing = fs::read_dir(dir_path(path)).map_err(|e| read_error(path, e))?;
        for entry in listing {
            let entry = entry.map_err(|e| read_error(path, e))?;
            if !listed(&entry.file_name()) {
                continue;
            }
            let child = dir.join(entry.file_name());
            let meta = match fs::metadata(entry.path()) {
                Ok(meta) => meta,
                // Gone since the directory was read, a link in a loop, or in a directory
                // whose entries cannot be looked at: left out, as Hadoop's listings leave
                // out what Java cannot see.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied
                    ) || is_link_loop(&e) =>
                {
                    continue
                }
                Err(source) => return Err(read_error(&entry.path(), source)),
            };
            entries.push(status_of(child, &meta));
        }
        Ok(entries)
    }

    fn walk_visible(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        let path = self.path(dir)?;
        let meta = fs::metadata(path).map_err(|e| read_error(path, e))?;
        let mut ancestors = vec![(meta.dev(), meta.ino())];
        let mut files = Vec::new();
        walk_dir(dir, path, &mut ancestors, &mut files)?;
        Ok(files)
    }

    fn glob_visible(&self, pattern: &Location) -> Result<Vec<FileStatus>, IoError> {
        let path = self.path(pattern)?;
        let Some(text) = path.to_str() else {
            return Err(IoError::BadPattern {
                pattern: path.to_string_lossy().into_owned(),
                detail: "pattern is not valid UTF-8".to_owned(),
            });
        };
        crate::storage::check_escapes(text).map_err(|detail| IoError::BadPattern {
            pattern: text.to_owned(),
            detail,
        })?;
        let options = glob::MatchOptions {
            case_sensitive: true,
            require_literal_separator: true,
            require_literal_leading_dot: false,
        };
        let paths =
            glob::glob_with(&glob_syntax(text), options).map_err(|e| IoError::BadPattern {
                pattern: text.to_owned(),
                detail: format!("{} at character {}", e.msg, e.pos),
            })?;
        let mut found = Vec::new();
        for entry in paths {
            let path = entry.map_err(|e| IoError::Read {
                path: e.path().to_path_buf(),
                source: io::Error::from(e),
            })?;
            if path.file_name().is_some_and(is_hidden) {
                continue;
            }
            let meta = match fs::metadata(&path) {
                Ok(meta) => meta,
                // A dangling link or a file deleted since the glob listed it.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(source) => return Err(IoError::Read { path, source }),
            };
            found.push(status_of(pattern.with_local_path(path), &meta));
        }
        Ok(found)
    }

    fn open_range(
        &self,
        location: &Location,
        start: u64,
        len: u64,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        let path = self.path(location)?;
        if let Some(checked) = verified(path, start, len).map_err(|e| read_error(path, e))? {
            return Ok(checked);
        }
        let file = open_at(path, start)?;
        Ok(if len == u64::MAX {
            Box::new(file)
        } else {
            Box::new(file.take(len))
        })
    }

    fn open_range_with(
        &self,
        location: &Location,
        start: u64,
        len: u64,
        cache: CachePolicy,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        match cache {
            CachePolicy::DropBehind => {
                let path = self.path(location)?;
                if let Some(checked) =
                    verified(path, start, len).map_err(|e| read_error(path, e))?
                {
                    return Ok(checked);
                }
                let file = open_at(path, start)?;
                Ok(Box::new(DropBehind {
                    file,
                    pos: start,
                    end: start.saturating_add(len),
                    released: start,
                }))
            }
            _ => self.open_range(location, start, len),
        }
    }

    fn create_with(&self, location: &Location, buffer: usize) -> Result<StorageWriter, IoError> {
        let path = self.path(location)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            fs::create_dir_all(parent).map_err(|e| write_error(parent, e))?;
        }
        let writer = DirectWriter::create_with(path, buffer).map_err(|e| write_error(path, e))?;
        // Only once the file is ours: a create refused (the file exists) changes nothing.
        delete_checksum_of(path).map_err(|e| write_error(path, e))?;
        Ok(StorageWriter::from(writer))
    }

    fn delete(&self, location: &Location) -> Result<bool, IoError> {
        let path = self.path(location)?;
        match fs::remove_file(path) {
            Ok(()) => {
                delete_checksum_of(path).map_err(|e| write_error(path, e))?;
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(write_error(path, source)),
        }
    }

    fn rename(&self, from: &Location, to: &Location) -> Result<(), IoError> {
        let (source, target) = (self.path(from)?, self.path(to)?);
        let is_dir = fs::symlink_metadata(source).is_ok_and(|m| m.is_dir());
        fs::rename(source, target).map_err(|e| write_error(target, e))?;
        if is_dir {
            // A directory's checksum files are inside it, and move with it.
            return Ok(());
        }
        follow_rename(source, target).map_err(|e| write_error(target, e))
    }

    fn make_dirs(&self, location: &Location) -> Result<(), IoError> {
        let path = self.path(location)?;
        fs::create_dir_all(path).map_err(|e| write_error(path, e))
    }

    fn delete_tree(&self, location: &Location) -> Result<bool, IoError> {
        let path = self.path(location)?;
        // The entry itself, not what a link names: a link to a directory goes, the directory
        // stays.
        let removed = match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
            Ok(_) => fs::remove_file(path).and_then(|()| delete_checksum_of(path)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => Err(e),
        };
        match removed {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(write_error(path, source)),
        }
    }

    /// As Hadoop's local file system: through a link to what it names, and the file's
    /// checksum file too, so the two stay readable together. A directory keeps its setuid and
    /// setgid bits, as `chmod` with an octal mode leaves them (the setgid bit makes new files
    /// take the directory's group, which shared trees rely on).
    fn set_permission(&self, location: &Location, bits: u16) -> Result<(), IoError> {
        use std::os::unix::fs::PermissionsExt as _;
        let path = self.path(location)?;
        let kept = match fs::metadata(path) {
            Ok(meta) if meta.is_dir() => meta.permissions().mode() & 0o6000,
            Ok(_) => 0,
            Err(e) => return Err(write_error(path, e)),
        };
        let mode = fs::Permissions::from_mode(u32::from(bits & 0o1777) | kept);
        fs::set_permissions(path, mode.clone()).map_err(|e| write_error(path, e))?;
        if let Some(checksum) = checksum_file_of(path).filter(|c| c.is_file()) {
            fs::set_permissions(&checksum, mode).map_err(|e| write_error(&checksum, e))?;
        }
        Ok(())
    }

    /// Users and groups by name, or by number for one the system does not name (as `chown`
    /// takes them); the checksum file follows, as for [`LocalStorage::set_permission`].
    fn set_owner(
        &self,
        location: &Location,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), IoError> {
        let path = self.path(location)?;
        let refused =
            |what: String| write_error(path, io::Error::new(io::ErrorKind::InvalidInput, what));
        let uid = match owner {
            Some(name) => Some(
                user_id(name).ok_or_else(|| refused(format!("chown: invalid user: '{name}'")))?,
            ),
            None => None,
        };
        let gid = match group {
            Some(name) => Some(
                group_id(name)
                    .ok_or_else(|| refused(format!("chown: invalid group: ':{name}'")))?,
            ),
            None => None,
        };
        nix::unistd::chown(path, uid, gid).map_err(|e| write_error(path, io::Error::from(e)))?;
        if let Some(checksum) = checksum_file_of(path).filter(|c| c.is_file()) {
            nix::unistd::chown(&checksum, uid, gid)
                .map_err(|e| write_error(&checksum, io::Error::from(e)))?;
        }
        Ok(())
    }
}

/// The user `name` names: by name, else a number.
fn user_id(name: &str) -> Option<nix::unistd::Uid> {
    match nix::unistd::User::from_name(name) {
        Ok(Some(user)) => Some(user.uid),
        _ => name.parse().ok().map(nix::unistd::Uid::from_raw),
    }
}

/// The group `name` names: by name, else a number.
fn group_id(name: &str) -> Option<nix::unistd::Gid> {
    match nix::unistd::Group::from_name(name) {
        Ok(Some(group)) => Some(group.gid),
        _ => name.parse().ok().map(nix::unistd::Gid::from_raw),
    }
}

/// Whether `error` says a symbolic link is in a loop (or too deep a chain of them).
fn is_link_loop(error: &io::Error) -> bool {
    error.raw_os_error() == Some(nix::libc::ELOOP)
}

/// `path` opened and positioned at `start`.
fn open_at(path: &Path, start: u64) -> Result<File, IoError> {
    let mut file = File::open(path).map_err(|e| read_error(path, e))?;
    if start != 0 {
        file.seek(SeekFrom::Start(start))
            .map_err(|e| read_error(path, e))?;
    }
    Ok(file)
}

/// Lists `dir` (at `path`) recursively. `ancestors` holds the (device, inode) of every
/// directory on the current chain so that a symbolic link back up the tree is not followed
/// forever.
fn walk_dir(
    dir: &Location,
    path: &Path,
    ancestors: &mut Vec<(u64, u64)>,
    files: &mut Vec<FileStatus>,
) -> Result<(), IoError> {
    for entry in fs::read_dir(path).map_err(|e| read_error(path, e))? {
        let entry = entry.map_err(|e| read_error(path, e))?;
        let name = entry.file_name();
        if is_hidden(&name) {
            continue;
        }
        let child_path = entry.path();
        let meta = match fs::metadata(&child_path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(read_error(&child_path, source)),
        };
        let child = dir.join(&name);
        if !meta.is_dir() {
            files.push(status_of(child, &meta));
            continue;
        }
        let id = (meta.dev(), meta.ino());
        if ancestors.contains(&id) {
            continue;
        }
        ancestors.push(id);
        walk_dir(&child, &child_path, ancestors, files)?;
        ancestors.pop();
    }
    Ok(())
}

/// A file read once: the pages read are dropped from the page cache every [`RELEASE_STEP`]
/// bytes, so that the kernel reuses them for the next reads instead of taking fresh ones.
struct DropBehind {
    file: File,
    pos: u64,
    /// The range's end (`u64::MAX`: the end of the file).
    end: u64,
    /// Everything below this offset has been handed back to the kernel.
    released: u64,
}

impl Read for DropBehind {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end - self.pos;
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.file.read(&mut buf[..want])?;
        self.pos += n as u64;
        if self.pos - self.released >= RELEASE_STEP {
            release_pages(&self.file, self.released, self.pos - self.released);
            self.released = self.pos;
        }
        Ok(n)
    }
}

/// Tells the kernel that `len` bytes of `file` from `offset` will not be read again. Only a
/// hint: an error, or a range beyond what the call can express, changes nothing.
pub(crate) fn release_pages(file: &File, offset: u64, len: u64) {
    if let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) {
        let _ = nix::fcntl::posix_fadvise(
            file,
            offset,
            len,
            nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
        );
    }
}

/// Bytes an unprivileged process may still write on the file system holding `path`, or
/// `None` if it cannot be told (the path is gone, the file system does not say).
// The C types of the counts are u64 on 64-bit Linux, narrower elsewhere.
#[allow(clippy::useless_conversion)]
pub fn available_bytes(path: &Path) -> Option<u64> {
    let stats = nix::sys::statvfs::statvfs(path).ok()?;
    u64::from(stats.blocks_available()).checked_mul(u64::from(stats.fragment_size()))
}
