use std::io;
use std::path::PathBuf;

use sluice_format::FormatError;

/// Errors of spill files and the scratch directory.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// The scratch directory or a spill file could not be created, written or read.
    #[error("spill I/O on {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error (e.g. no space left on device).
        #[source]
        source: io::Error,
    },
    /// A block of a spill file is corrupt or failed its checksum.
    #[error(transparent)]
    Format(#[from] FormatError),
}
