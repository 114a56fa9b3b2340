//! The job's `-files` and `-archives` entries found on this machine, as YARN's localiser finds
//! them: a local path is used where it is (or its copy shipped from the submitting machine);
//! one on HDFS or S3 (`hdfs:///apps/env.tgz#env`, as mrjob and Oozie pass them) is downloaded
//! into the job's scratch directory first, a directory with everything below it. Downloaded
//! files are made `r-xr-xr-x` and directories `rwxr-xr-x`, as Hadoop leaves them.

use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sluice_io::{Location, Scheme, Stores};

use super::submission::Submission;
use super::StreamingError;

/// Whether the `-files`/`-archives` path `path` names a file on a remote store (HDFS, S3)
/// rather than on the submitting machine.
pub(crate) fn is_remote(path: &str) -> bool {
    Location::parse(path).is_ok_and(|l| l.scheme() != Scheme::File)
}

/// Where the file (or directory) that `option`'s entry names as `path` is on this machine:
/// downloaded below `downloads` (made if need be) when it is remote, its shipped copy or its
/// own path when it is local.
///
/// # Errors
/// [`StreamingError::Usage`] when the path names nothing (local or remote);
/// [`StreamingError::Setup`] when a download fails.
pub(crate) fn locate(
    option: &str,
    path: &str,
    stores: &Stores,
    submission: &Submission,
    downloads: &Path,
) -> Result<PathBuf, StreamingError> {
    if !is_remote(path) {
        let local = submission.shipped.locate(option, path)?;
        return std::path::absolute(&local).map_err(|source| StreamingError::Setup {
            context: format!("{option} {path}: bad path"),
            source,
        });
    }
    let location = Location::parse(path)
        .map_err(|e| StreamingError::Usage(format!("{option} {path}: {e}")))?;
    let failed = |source: io::Error| StreamingError::Setup {
        context: format!("{option} {path}: cannot download it"),
        source,
    };
    let storage = stores
        .storage_of(&location)
        .map_err(|e| StreamingError::Usage(format!("{option} {path}: {e}")))?;
    let status = storage
        .status(&location)
        .map_err(|e| failed(io::Error::other(e)))?
        .ok_or_else(|| StreamingError::Usage(format!("{option} {path}: it does not exist")))?;
    let name = location
        .file_name()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| std::ffi::OsStr::new("root"))
        .to_owned();
    // A directory per download: two entries may share a file name.
    fs::create_dir_all(downloads).map_err(failed)?;
    let slot = new_numbered_dir(downloads).map_err(failed)?;
    let target = slot.join(name);
    download(&*storage, &location, status.is_dir, &target).map_err(failed)?;
    Ok(target)
}

/// A new, empty numbered directory in `parent`.
fn new_numbered_dir(parent: &Path) -> io::Result<PathBuf> {
    for n in 0u32.. {
        let dir = parent.join(n.to_string());
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free directory name"))
}

/// Copies the file or directory tree at `from` to the new path `to`.
fn download(
    storage: &dyn sluice_io::Storage,
    from: &Location,
    is_dir: bool,
    to: &Path,
) -> io::Result<()> {
    let mut pending = vec![(from.clone(), is_dir, to.to_path_buf())];
    while let Some((from, is_dir, to)) = pending.pop() {
        if is_dir {
            fs::create_dir(&to)?;
            fs::set_permissions(&to, fs::Permissions::from_mode(0o755))?;
            for child in storage.list(&from).map_err(io::Error::other)? {
                let Some(name) = child.location.file_name() else {
                    continue;
                };
                let target = to.join(name);
                pending.push((child.location.clone(), child.is_dir, target));
            }
        } else {
            let mut reader = storage
                .open_range(&from, 0, u64::MAX)
                .map_err(io::Error::other)?;
            let mut file = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&to)?;
            // No sync: the copy lives in the job's scratch directory and dies with it.
            io::copy(&mut reader, &mut file)?;
            fs::set_permissions(&to, fs::Permissions::from_mode(0o555))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_paths_are_told_by_their_scheme() {
        for remote in [
            "hdfs://nn:8020/a/env.tgz",
            "hdfs:///a",
            "s3://bucket/key.zip",
        ] {
            assert!(is_remote(remote), "{remote}");
        }
        for local in [
            "env.tgz",
            "/abs/env.tgz",
            "file:///abs/env.tgz",
            "dir/x#name",
        ] {
            assert!(!is_remote(local), "{local}");
        }
    }

    #[test]
    fn a_remote_path_without_remote_stores_is_refused_naming_the_option() {
        let dir = tempfile::tempdir().unwrap();
        let error = locate(
            "-archives",
            "hdfs://nn:8020/env.tgz",
            &Stores::local(),
            &Submission::current(),
            dir.path(),
        )
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("-archives hdfs://nn:8020/env.tgz: "),
            "{error}"
        );
    }

    #[test]
    fn local_paths_are_used_where_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f.txt");
        fs::write(&file, "x").unwrap();
        let found = locate(
            "-files",
            &format!("file://{}", file.display()),
            &Stores::local(),
            &Submission::current(),
            &dir.path().join("downloads"),
        )
        .unwrap();
        assert_eq!(found, file);
        assert!(!dir.path().join("downloads").exists());
    }
}
