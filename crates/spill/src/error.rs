use std::io;
use std::path::PathBuf;

use sluice_format::FormatError;

use crate::IndexProblem;

/// Errors of spill files and the scratch directory.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// The job's spill directory could not be made in the place given for spills (a
    /// read-only or full file system, a place that does not exist). Reported before the job
    /// does any work.
    #[error("cannot create a spill directory in {path}")]
    CreateDir {
        /// Where spills were to go (`--spill-dir`, or the output's parent).
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The scratch directory or a spill file could not be created, written or read.
    #[error("spill I/O on {path}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error (e.g. no space left on device).
        #[source]
        source: io::Error,
    },
    /// A spill file's index is damaged, or does not match its data file.
    #[error("spill index {path}: {problem}")]
    Index {
        /// The index file.
        path: PathBuf,
        /// What is wrong with it.
        problem: IndexProblem,
    },
    /// A partition was asked of a spill file (or index) that has fewer partitions.
    #[error("{path} has no partition {partition}: it has {partitions}")]
    NoSuchPartition {
        /// The spill file or index.
        path: PathBuf,
        /// The partition asked for.
        partition: usize,
        /// How many partitions the file has.
        partitions: u64,
    },
    /// A block of a spill file is corrupt or failed its checksum.
    #[error(transparent)]
    Format(#[from] FormatError),
}
