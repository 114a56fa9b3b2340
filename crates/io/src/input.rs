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
    /// `.lz4` (LZ4 frame format).
    Lz4,
    /// `.bz2`.
    Bzip2,
}

impl Compression {
    /// The compression implied by a file name's extension.
    pub fn from_path(path: &Path) -> Compression {
        todo!("{}", path.display())
    }

    /// Short name for messages (`none`, `gzip`, ...).
    pub fn name(self) -> &'static str {
        todo!()
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

/// Expands input arguments into files.
///
/// * A file is taken as it is (even if its name starts with `_` or `.`).
/// * A directory is walked recursively; entries whose names start with `_` or `.` are skipped.
/// * An argument containing `*`, `?` or `[` is a glob; each match is treated as above.
///
/// The result is sorted by path bytes, without duplicates.
///
/// # Errors
/// [`IoError::InputNotFound`] for a missing path or a glob matching nothing, [`IoError::BadPattern`],
/// [`IoError::Read`] when a directory cannot be listed or a file's metadata cannot be read.
pub fn discover_inputs(args: &[PathBuf]) -> Result<Vec<InputFile>, IoError> {
    todo!("{}", args.len())
}
