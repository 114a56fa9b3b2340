use std::io;
use std::path::PathBuf;

/// Errors of input discovery, reading and output commit. Every variant names the path involved.
///
/// For a location of a store other than the local file system, a `path` field holds the
/// location's URI text ([`Location::error_path`](crate::Location::error_path)).
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// An input path names nothing.
    #[error("input path does not exist: {path}")]
    InputNotFound {
        /// The path as the user gave it.
        path: PathBuf,
    },
    /// An input pattern (`*`, `?`, `[...]` or `{a,b}`) matched nothing. Hadoop's job client
    /// words this refusal apart from a missing path ("Input Pattern ... matches 0 files"), and
    /// the message ends in the same words, which wrappers look for.
    #[error("input pattern {path} matches 0 files")]
    PatternMatchesNothing {
        /// The pattern as the user gave it.
        path: PathBuf,
    },
    /// An input named outright whose last name starts with `_` or `.`: Hadoop's input formats
    /// hide such a file or directory from jobs even when it is named, and refuse the input as
    /// missing.
    #[error(
        "input path does not exist: {path} (a name starting with '_' or '.' is hidden from jobs, \
         as in Hadoop, even when named; rename it, or name what is inside it)"
    )]
    HiddenInput {
        /// The path as the user gave it.
        path: PathBuf,
    },
    /// A glob pattern is malformed.
    #[error("invalid input pattern {pattern:?}: {detail}")]
    BadPattern {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        detail: String,
    },
    /// Reading (or listing, or opening) a path failed.
    #[error("cannot read {path}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// A compressed input could not be decoded.
    #[error("cannot decompress {path} ({codec}) near uncompressed byte {offset}")]
    Decompress {
        /// The compressed file.
        path: PathBuf,
        /// Its codec name.
        codec: &'static str,
        /// Uncompressed bytes successfully read before the failure.
        offset: u64,
        /// The decoder's error.
        #[source]
        source: io::Error,
    },
    /// A SequenceFile is malformed or cannot be read by sluice: what is wrong and where.
    #[error("{path}: bad SequenceFile at byte {offset}: {reason}")]
    SequenceFile {
        /// The file.
        path: PathBuf,
        /// Where in the file the problem was found.
        offset: u64,
        /// What is wrong.
        reason: String,
    },
    /// A location names something other than a local file (another scheme, another host).
    #[error("{location}: {reason}")]
    UnsupportedLocation {
        /// The location as the user gave it.
        location: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// A location cannot be parsed: empty, a `file:` URI that names no local file, or a
    /// malformed remote location.
    #[error("{location}: {reason}")]
    BadLocation {
        /// The location as the user gave it.
        location: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A location's scheme is not one sluice knows, or not one the storage asked to serve it
    /// can serve (the local storage and `hdfs://`).
    #[error("{location}: {reason}")]
    UnsupportedScheme {
        /// The location.
        location: String,
        /// Its scheme, in lower case (`hdfs`, `s3a`, `gs`).
        scheme: String,
        /// Why it cannot be used, and what to do instead.
        reason: String,
    },
    /// A compressed file cannot be cut into splits by byte ranges: a decoder can only start at
    /// its beginning.
    #[error(
        "cannot cut {path} into splits of lines: it is {codec}-compressed and can only be read \
         from its start"
    )]
    Unsplittable {
        /// The compressed file.
        path: PathBuf,
        /// Its codec name.
        codec: &'static str,
    },
    /// A remote store cannot serve a location: it is misconfigured or unreachable, or
    /// credentials are missing (the reason says which setting or variable to give).
    #[error("{location}: {reason}")]
    Store {
        /// The location.
        location: String,
        /// Why, and what to do.
        reason: String,
    },
    /// The output directory exists already; sluice never overwrites results.
    #[error("output directory {path} already exists")]
    OutputExists {
        /// The output directory.
        path: PathBuf,
    },
    /// The output directory cannot be created: its parent, or the staging directory beside it
    /// where its files are written until the commit, cannot be made (a read-only or full file
    /// system, no permission). Reported before the job does any work.
    #[error("cannot create output directory {path}: cannot make {made}")]
    CreateOutput {
        /// The output directory.
        path: PathBuf,
        /// The directory that could not be made (a parent of the output, or its staging
        /// directory).
        made: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Creating, writing or renaming output failed.
    #[error("cannot write {path}")]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
}

impl IoError {
    /// Whether the error says the file is not there (a missing input, or a read whose
    /// operating system or store answered "not found").
    pub fn is_not_found(&self) -> bool {
        match self {
            IoError::InputNotFound { .. }
            | IoError::PatternMatchesNothing { .. }
            | IoError::HiddenInput { .. } => true,
            IoError::Read { source, .. } => source.kind() == std::io::ErrorKind::NotFound,
            _ => false,
        }
    }

    /// Whether another attempt at the same work could succeed. A path that does not exist,
    /// a location that cannot be used, or a file whose bytes are corrupt will be the same on
    /// the next attempt, so a task failing with one fails at once instead of being retried;
    /// reads, writes and stores can fail for a passing reason (a full disk being cleared, a
    /// flaky connection) and are retried.
    pub fn is_retryable(&self) -> bool {
        match self {
            IoError::Read { .. }
            | IoError::Write { .. }
            | IoError::CreateOutput { .. }
            | IoError::Store { .. } => true,
            IoError::Decompress { source, .. } => !matches!(
                source.kind(),
                std::io::ErrorKind::InvalidData
                    | std::io::ErrorKind::InvalidInput
                    | std::io::ErrorKind::UnexpectedEof
            ),
            IoError::InputNotFound { .. }
            | IoError::PatternMatchesNothing { .. }
            | IoError::HiddenInput { .. }
            | IoError::BadPattern { .. }
            | IoError::SequenceFile { .. }
            | IoError::UnsupportedLocation { .. }
            | IoError::BadLocation { .. }
            | IoError::UnsupportedScheme { .. }
            | IoError::Unsplittable { .. }
            | IoError::OutputExists { .. } => false,
        }
    }
}
