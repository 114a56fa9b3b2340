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

use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Whether a file of this name (one path component) is a checksum file as Hadoop tells them:
/// it starts with `.` and ends with `.crc`.
pub fn is_checksum_file_name(name: impl AsRef<[u8]>) -> bool {
    let name = name.as_ref();
    name.starts_with(b".") && name.ends_with(b".crc")
}

/// The checksum file Hadoop keeps for the file at `path`: `.NAME.crc` beside it; `None` for a
/// path without a file name (`/`, `..`).
pub(crate) fn checksum_file_of(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
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
