//! Atomic job output.
//!
//! Like Hadoop's `FileOutputCommitter`, a job's output either appears complete, with `_SUCCESS`,
//! or not at all: readers that wait for the output directory (or for `_SUCCESS`) never see half a
//! result. Part files are written into a hidden temporary sibling of the output directory, which
//! is synced and renamed into place in one step; `rename` within one directory is atomic.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};

use crate::{IoError, OwnedDir};

/// Writes a job's output atomically.
///
/// Part files are created in a hidden sibling directory (`.NAME.sluice-tmp-PID` next to the output
/// directory `NAME`; a name of over 200 bytes is cut there, see [`staging_prefix`]).
/// [`OutputCommitter::commit`] renames it to the output path and then writes an
/// empty `_SUCCESS` file. If the committer is dropped without a commit (an error, a panic), the
/// temporary directory is removed, so a failed job leaves neither output nor `_SUCCESS`. One
/// left by a job killed outright is removed by the next job writing the same output (see
/// [`remove_abandoned`](crate::remove_abandoned)).
///
/// This is the local implementation of the rename commit; [`LocalRenameCommitter`] builds the
/// [`JobCommitter`] protocol (task attempts committed one by one) on it.
///
/// [`LocalRenameCommitter`]: crate::LocalRenameCommitter
/// [`JobCommitter`]: crate::JobCommitter
#[derive(Debug)]
pub struct OutputCommitter {
    final_dir: PathBuf,
    temp_dir: PathBuf,
    /// Set once the temporary directory is no longer ours to remove.
    finished: bool,
    /// The lock that tells other jobs the staging directory is in use (it follows the
    /// directory when it is renamed to the output).
    _owned: OwnedDir,
}

impl OutputCommitter {
    /// Prepares to write `output`.
    ///
    /// Missing parent directories of `output` are created (as Hadoop does).
    ///
    /// # Errors
    /// [`IoError::OutputExists`] if `output` exists (file, directory, or even a dangling symbolic
    /// link); [`IoError::CreateOutput`] if the parent or the temporary directory cannot be
    /// created (e.g. the parent is read-only, or a temporary directory of this process already
    /// exists); [`IoError::Write`] if the temporary directory cannot be locked.
    pub fn create(output: &Path) -> Result<OutputCommitter, IoError> {
        if exists(output).map_err(|source| write_error(output, source))? {
            return Err(IoError::OutputExists {
                path: output.to_path_buf(),
            });
        }
        let Some(name) = output.file_name() else {
            let source = io::Error::new(io::ErrorKind::InvalidInput, "output path has no name");
            return Err(write_error(output, source));
        };
        let parent = parent_dir(output);
        let cannot_make = |made: &Path, source| IoError::CreateOutput {
            path: output.to_path_buf(),
            made: made.to_path_buf(),
            source,
        };
        fs::create_dir_all(parent).map_err(|source| cannot_make(parent, source))?;
        // What a killed job left for this output goes first (see `owned_dir`).
        crate::remove_abandoned(parent, &temp_prefix(name));
        let mut temp_name = temp_prefix(name);
        temp_name.push(std::process::id().to_string());
        let temp_dir = parent.join(temp_name);
        fs::create_dir(&temp_dir).map_err(|source| cannot_make(&temp_dir, source))?;
        let owned = match OwnedDir::lock(&temp_dir) {
            Ok(owned) => owned,
            Err(source) => {
                let _ = fs::remove_dir(&temp_dir);
                return Err(write_error(&temp_dir, source));
            }
        };
        Ok(OutputCommitter {
            final_dir: output.to_path_buf(),
            temp_dir,
            finished: false,
            _owned: owned,
        })
    }

    /// The directory the part files are written into until commit.
    pub fn temp_dir(&self) -> &Path {
        &self.temp_dir
    }

    /// The output directory as it will be after commit.
    pub fn final_dir(&self) -> &Path {
        &self.final_dir
    }

    /// Creates (truncating) a file named `name` in the temporary directory.
    ///
    /// `name` must be a plain file name (no `/`, not `.` or `..`).
    ///
    /// # Errors
    /// [`IoError::Write`] naming the file.
    pub fn create_file(&self, name: &str) -> Result<File, IoError> {
        let path = self.temp_dir.join(name);
        if !is_plain_name(name) {
            let source = io::Error::new(io::ErrorKind::InvalidInput, "not a plain file name");
            return Err(write_error(&path, source));
        }
        File::create(&path).map_err(|source| write_error(&path, source))
    }

    /// Removes part file `name` from the temporary directory if it is there (a failed task
    /// attempt's output).
    ///
    /// # Errors
    /// [`IoError::Write`] if it exists and cannot be removed.
    pub fn remove_file(&self, name: &str) -> Result<(), IoError> {
        let path = self.temp_dir.join(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(write_error(&path, e)),
            _ => Ok(()),
        }
    }

    /// Syncs the part files, renames the temporary directory to the output path and writes
    /// `_SUCCESS`. Returns the output path.
    ///
    /// # Errors
    /// [`IoError::OutputExists`] if the output appeared meanwhile; [`IoError::Write`] otherwise. On
    /// error nothing is left at the output path.
    pub fn commit(mut self) -> Result<PathBuf, IoError> {
        sync_tree(&self.temp_dir)?;
        if exists(&self.final_dir).map_err(|source| write_error(&self.final_dir, source))? {
            return Err(self.output_exists());
        }
        if let Err(source) = fs::rename(&self.temp_dir, &self.final_dir) {
            // Renaming a directory replaces an empty one, fails on anything else.
            return Err(match exists(&self.final_dir) {
                Ok(true) => self.output_exists(),
                _ => write_error(&self.final_dir, source),
            });
        }
        self.finished = true;
        if let Err(e) = self.finish_committed() {
            let _ = fs::remove_dir_all(&self.final_dir);
            return Err(e);
        }
        Ok(self.final_dir.clone())
    }

    /// Removes the temporary directory and everything written into it, reporting failures (a
    /// plain drop does the same silently).
    ///
    /// # Errors
    /// [`IoError::Write`] naming the temporary directory.
    pub fn abort(mut self) -> Result<(), IoError> {
        self.finished = true;
        match fs::remove_dir_all(&self.temp_dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(write_error(&self.temp_dir, e)),
            _ => Ok(()),
        }
    }

    fn output_exists(&self) -> IoError {
        IoError::OutputExists {
            path: self.final_dir.clone(),
        }
    }

    /// Writes `_SUCCESS` into the renamed directory and makes the result durable.
    fn finish_committed(&self) -> Result<(), IoError> {
        let success = self.final_dir.join("_SUCCESS");
        let file = File::create(&success).map_err(|source| write_error(&success, source))?;
        file.sync_all()
            .map_err(|source| write_error(&success, source))?;
        sync_dir(&self.final_dir)?;
        match self.final_dir.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
            _ => sync_dir(Path::new(".")),
        }
    }
}

impl Drop for OutputCommitter {
    fn drop(&mut self) {
        if !self.finished {
            let _ = fs::remove_dir_all(&self.temp_dir);
        }
    }
}

/// The start of the temporary directory's name for output `name`: `.NAME.sluice-tmp-`, the
/// creating process's id follows.
fn temp_prefix(name: &OsStr) -> OsString {
    OsString::from_vec(staging_prefix(name.as_bytes()))
}

/// Longest output name kept whole in its staging directory's name: file systems allow 255 bytes
/// a name (so does HDFS by default), and the staging directory's name adds its marks, a process
/// id and a nonce.
const WHOLE_NAME_MAX: usize = 200;

/// The start of the staging directory's name for an output named `name` (bytes of one path
/// component): `.NAME.sluice-tmp-`. A name longer than 200 bytes is cut to its first
/// 150 bytes and a hash of the whole (`.NAME~HASH.sluice-tmp-`), so that the staging directory
/// of an output whose name the file system takes has a name it takes too, and outputs whose
/// long names share a start still get their own.
pub fn staging_prefix(name: &[u8]) -> Vec<u8> {
    let mut prefix = vec![b'.'];
    if name.len() <= WHOLE_NAME_MAX {
        prefix.extend_from_slice(name);
    } else {
        prefix.extend_from_slice(&name[..150]);
        prefix.extend_from_slice(format!("~{:016x}", fnv1a(name)).as_bytes());
    }
    prefix.extend_from_slice(b".sluice-tmp-");
    prefix
}

/// The 64-bit FNV-1a hash of `bytes`: fixed, so that every process of a job (and every
/// version of sluice) names the same output's staging directory alike.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The directory `path` is in: its parent, or `.` for a bare name.
fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Whether `candidate` is a temporary directory that [`OutputCommitter::create`] in some
/// process would make for `output`: in the same directory, named `.NAME.sluice-tmp-PID`.
///
/// What a process attached to another's job writes goes there, so a location it is sent is
/// checked against this before anything is written: nothing else can be made to receive part
/// files (the output itself, another directory, another output's staging).
pub(crate) fn is_temp_dir_of(output: &Path, candidate: &Path) -> bool {
    let (Some(name), Some(candidate_name)) = (output.file_name(), candidate.file_name()) else {
        return false;
    };
    let prefix = temp_prefix(name);
    parent_dir(output) == parent_dir(candidate)
        && candidate_name
            .as_bytes()
            .strip_prefix(prefix.as_bytes())
            .is_some_and(|pid| !pid.is_empty() && pid.iter().all(u8::is_ascii_digit))
}

/// Whether `name` is one plain file name: no `/`, not `.` or `..`, not empty.
pub(crate) fn is_plain_name(name: &str) -> bool {
    let mut components = Path::new(name).components();
    matches!(components.next(), Some(Component::Normal(_)))
        && components.next().is_none()
        && !name.contains('/')
}

pub(crate) fn write_error(path: &Path, source: io::Error) -> IoError {
    IoError::Write {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether anything (even a dangling symbolic link) is at `path`.
fn exists(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Past this many files, committing an output syncs its whole file system at once (`syncfs`)
/// rather than each file: a million part files' syncs cost a minute, each a device flush.
const SYNC_EACH_UP_TO: usize = 256;

/// Syncs every regular file below `dir`, and the directories: each on its own, or the whole
/// file system at once when there are more than [`SYNC_EACH_UP_TO`] files.
fn sync_tree(dir: &Path) -> Result<(), IoError> {
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    list_tree(dir, &mut files, &mut dirs)?;
    if files.len() > SYNC_EACH_UP_TO {
        let handle = File::open(dir).map_err(|source| write_error(dir, source))?;
        return nix::unistd::syncfs(&handle)
            .map_err(|errno| write_error(dir, io::Error::from(errno)));
    }
    for path in &files {
        File::open(path)
            .and_then(|file| file.sync_all())
            .map_err(|source| write_error(path, source))?;
    }
    dirs.iter().try_for_each(|dir| sync_dir(dir))
}

/// Adds the regular files below `dir` to `files` and the directories (`dir` too, after
/// those inside it) to `dirs`.
fn list_tree(dir: &Path, files: &mut Vec<PathBuf>, dirs: &mut Vec<PathBuf>) -> Result<(), IoError> {
    let entries = fs::read_dir(dir).map_err(|source| write_error(dir, source))?;
    for entry in entries {
        let entry = entry.map_err(|source| write_error(dir, source))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .map_err(|source| write_error(&path, source))?;
        if kind.is_dir() {
            list_tree(&path, files, dirs)?;
        } else if kind.is_file() {
            files.push(path);
        }
    }
    dirs.push(dir.to_path_buf());
    Ok(())
}

/// Syncs a directory's entries. File systems that cannot sync directories are tolerated.
fn sync_dir(dir: &Path) -> Result<(), IoError> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e)
            if !matches!(
                e.kind(),
                io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
            ) =>
        {
            Err(write_error(dir, e))
        }
        _ => Ok(()),
    }
}
