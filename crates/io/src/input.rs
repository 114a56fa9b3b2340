//! Turning `--input` arguments into a list of files.
//!
//! Hadoop's `FileInputFormat` decides what a job reads: named files are taken as they are,
//! directories are listed (recursively here) with the hidden-file filter that drops names starting
//! with `_` or `.` (`_SUCCESS`, `_logs`, `.crc` files, editors' swap files), and globs are expanded
//! with that same filter applied to each match. We reproduce those rules so that pointing sluice at
//! the output directory of a previous job reads the part files and nothing else.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::IoError;

/// How an input file is compressed, decided by its extension (as Hadoop's codec factory does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Plain bytes; can be split.
    None,
    /// `.gz` (multi-member gzip streams are read to the end).
    Gzip,
    /// `.zst`.
    Zstd,
    /// `.lz4`: the LZ4 frame format (the `lz4` tool's) or Hadoop's `Lz4Codec` block framing,
    /// told apart by the frame format's magic number.
    Lz4,
    /// `.bz2`.
    Bzip2,
    /// `.deflate`: zlib streams (Hadoop's `DefaultCodec` and `DeflateCodec`).
    Deflate,
    /// `.snappy`: Hadoop's `SnappyCodec` block framing of raw snappy.
    Snappy,
}

/// File-name suffixes and their codecs. Matching is case-sensitive, as in Hadoop.
const SUFFIXES: &[(&[u8], Compression)] = &[
    (b".gz", Compression::Gzip),
    (b".zst", Compression::Zstd),
    (b".zstd", Compression::Zstd),
    (b".lz4", Compression::Lz4),
    (b".bz2", Compression::Bzip2),
    (b".deflate", Compression::Deflate),
    (b".snappy", Compression::Snappy),
];

impl Compression {
    /// The compression implied by a file name's extension.
    ///
    /// The suffix is matched case-sensitively on the file name (`a.gz` is gzip, `a.GZ` is plain),
    /// as Hadoop's `CompressionCodecFactory` does; `.zst` and `.zstd` are both zstd.
    pub fn from_path(path: &Path) -> Compression {
        let Some(name) = path.file_name() else {
            return Compression::None;
        };
        let name = name.as_bytes();
        SUFFIXES
            .iter()
            .find(|(suffix, _)| name.ends_with(suffix))
            .map_or(Compression::None, |&(_, codec)| codec)
    }

    /// Short name for messages (`none`, `gzip`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
            Compression::Lz4 => "lz4",
            Compression::Bzip2 => "bzip2",
            Compression::Deflate => "deflate",
            Compression::Snappy => "snappy",
        }
    }
}

/// One file to read, found by [`discover_inputs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// The path, spelled from the user's argument (a directory argument `docs/` yields `docs/a.txt`).
    pub path: PathBuf,
    /// Size on disk in bytes.
    pub len: u64,
    /// Compression implied by the extension.
    pub compression: Compression,
}

impl InputFile {
    fn new(path: PathBuf, meta: &fs::Metadata) -> InputFile {
        let compression = Compression::from_path(&path);
        InputFile {
            path,
            len: meta.len(),
            compression,
        }
    }
}

/// Expands input arguments into files.
///
/// * A file is taken as it is (even if its name starts with `_` or `.`).
/// * A directory is walked recursively; entries whose names start with `_` or `.` are skipped.
/// * An argument containing `*`, `?` or `[` is a glob; each match is treated as above, except that
///   a match whose own name starts with `_` or `.` is skipped (Hadoop applies its hidden-file
///   filter to glob results). `*` and `?` do not match `/`; `[[]` matches a literal `[`.
///
/// Symbolic links are followed (a directory reached twice through a link cycle is walked once per
/// chain, never forever). Entries that vanish while a directory is listed, and dangling links
/// inside directories, are skipped, as Hadoop's local file system does. Anything that is not a
/// directory (a FIFO, a device) counts as a file. An empty directory contributes no files.
///
/// The result is sorted by path bytes, without duplicates.
///
/// # Errors
/// [`IoError::InputNotFound`] for a missing path or a glob matching nothing, [`IoError::BadPattern`],
/// [`IoError::Read`] when a directory cannot be listed or a file's metadata cannot be read.
pub fn discover_inputs(args: &[PathBuf]) -> Result<Vec<InputFile>, IoError> {
    let mut files = Vec::new();
    for arg in args {
        if is_glob(arg) {
            expand_glob(arg, &mut files)?;
        } else {
            let meta = fs::metadata(arg).map_err(|source| missing_or_read(arg, source))?;
            add_path(arg.clone(), &meta, &mut files)?;
        }
    }
    files.sort_by(|a, b| {
        a.path
            .as_os_str()
            .as_bytes()
            .cmp(b.path.as_os_str().as_bytes())
    });
    files.dedup_by(|a, b| a.path.as_os_str().as_bytes() == b.path.as_os_str().as_bytes());
    Ok(files)
}

/// Whether Hadoop's hidden-file filter drops this name.
fn is_hidden(name: &OsStr) -> bool {
    matches!(name.as_bytes().first(), Some(b'_' | b'.'))
}

fn is_glob(arg: &Path) -> bool {
    arg.as_os_str()
        .as_bytes()
        .iter()
        .any(|b| matches!(b, b'*' | b'?' | b'['))
}

fn missing_or_read(path: &Path, source: io::Error) -> IoError {
    if source.kind() == io::ErrorKind::NotFound {
        IoError::InputNotFound {
            path: path.to_path_buf(),
        }
    } else {
        IoError::Read {
            path: path.to_path_buf(),
            source,
        }
    }
}

fn expand_glob(arg: &Path, files: &mut Vec<InputFile>) -> Result<(), IoError> {
    let lossy = arg.to_string_lossy();
    let Some(pattern) = arg.to_str() else {
        return Err(IoError::BadPattern {
            pattern: lossy.into_owned(),
            detail: "pattern is not valid UTF-8".to_owned(),
        });
    };
    let options = glob::MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let paths = glob::glob_with(pattern, options).map_err(|e| IoError::BadPattern {
        pattern: pattern.to_owned(),
        detail: format!("{} at character {}", e.msg, e.pos),
    })?;
    let mut matched = false;
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
        matched = true;
        add_path(path, &meta, files)?;
    }
    if matched {
        Ok(())
    } else {
        Err(IoError::InputNotFound {
            path: arg.to_path_buf(),
        })
    }
}

/// Adds a file, or every visible file below a directory.
fn add_path(path: PathBuf, meta: &fs::Metadata, files: &mut Vec<InputFile>) -> Result<(), IoError> {
    if meta.is_dir() {
        let mut ancestors = vec![(meta.dev(), meta.ino())];
        walk_dir(&path, &mut ancestors, files)
    } else {
        files.push(InputFile::new(path, meta));
        Ok(())
    }
}

/// Lists `dir` recursively. `ancestors` holds the (device, inode) of every directory on the
/// current chain so that a symbolic link back up the tree is not followed forever.
fn walk_dir(
    dir: &Path,
    ancestors: &mut Vec<(u64, u64)>,
    files: &mut Vec<InputFile>,
) -> Result<(), IoError> {
    let read_error = |source| IoError::Read {
        path: dir.to_path_buf(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(read_error)? {
        let entry = entry.map_err(read_error)?;
        if is_hidden(&entry.file_name()) {
            continue;
        }
        let path = entry.path();
        let meta = match fs::metadata(&path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(IoError::Read { path, source }),
        };
        if !meta.is_dir() {
            files.push(InputFile::new(path, &meta));
            continue;
        }
        let id = (meta.dev(), meta.ino());
        if ancestors.contains(&id) {
            continue;
        }
        ancestors.push(id);
        walk_dir(&path, ancestors, files)?;
        ancestors.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_by_suffix() {
        let c = |p: &str| Compression::from_path(Path::new(p));
        assert_eq!(c("a/b.gz"), Compression::Gzip);
        assert_eq!(c("b.zst"), Compression::Zstd);
        assert_eq!(c("b.zstd"), Compression::Zstd);
        assert_eq!(c("b.lz4"), Compression::Lz4);
        assert_eq!(c("b.tar.bz2"), Compression::Bzip2);
        assert_eq!(c("part-00000.deflate"), Compression::Deflate);
        assert_eq!(c("part-00000.snappy"), Compression::Snappy);
        assert_eq!(c("b.GZ"), Compression::None);
        assert_eq!(c("b.gz.txt"), Compression::None);
        assert_eq!(c("gz"), Compression::None);
        assert_eq!(c("/"), Compression::None);
        assert_eq!(Compression::Bzip2.name(), "bzip2");
        assert_eq!(Compression::None.name(), "none");
    }
}
