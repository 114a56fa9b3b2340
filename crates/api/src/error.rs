use sluice_format::FormatError;
use sluice_io::IoError;
use sluice_spill::SpillError;

/// Errors that end a job. Messages name the file, the task and, where known, the record offset.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// Reading input or writing output failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A spill file could not be written or read, or is corrupt.
    #[error(transparent)]
    Spill(#[from] SpillError),
    /// An intermediate run is corrupt, or a record is too long to be one.
    #[error(transparent)]
    Format(#[from] FormatError),
    /// A task failed; `source` says why.
    #[error("{task}")]
    Task {
        /// Which task, e.g. `map task 3 (corpus/a.txt, bytes 0..33554432)`.
        task: String,
        /// The cause.
        #[source]
        source: Box<ExecError>,
    },
    /// A mapper, combiner or reducer rejected a record.
    #[error("{message}")]
    User {
        /// What the user code reported (including the record offset where it knows it).
        message: String,
    },
    /// The job's configuration is invalid.
    #[error("invalid job configuration: {0}")]
    Config(String),
    /// Another task failed first, so this one stopped early.
    #[error("cancelled because another task failed")]
    Cancelled,
    /// A failure of a client's own kind (a streaming program that failed), which the client
    /// reports as it sees fit.
    #[error(transparent)]
    Client(ClientError),
    /// A sorted input could not be read for another reason than a corrupt run (a segment
    /// fetched from another process, for instance).
    #[error(transparent)]
    Source(Box<dyn std::error::Error + Send + Sync>),
    /// A record is too large for the in-memory index.
    #[error(transparent)]
    RecordTooLarge(#[from] sluice_sort::RecordTooLarge),
}

impl ExecError {
    /// Wraps `self` with the name of the task it happened in.
    pub fn in_task(self, task: impl Into<String>) -> ExecError {
        match self {
            ExecError::Cancelled => ExecError::Cancelled,
            other => ExecError::Task {
                task: task.into(),
                source: Box::new(other),
            },
        }
    }

    /// Whether running the task again could succeed: not for a cancelled job, a bad
    /// configuration, or input that is corrupt or missing ([`IoError::is_retryable`]).
    pub fn is_retryable(&self) -> bool {
        match self {
            ExecError::Cancelled | ExecError::Config(_) => false,
            ExecError::Task { source, .. } => source.is_retryable(),
            ExecError::Io(e) => e.is_retryable(),
            // A program that is not there will not be there on the next attempt either, nor
            // will a program without a shm client learn the protocol.
            ExecError::Client(e) => e.retryable,
            _ => true,
        }
    }

    /// The message of this error and of every cause, joined by `: `.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }

    /// An error reported by user code.
    pub fn user(message: impl Into<String>) -> ExecError {
        ExecError::User {
            message: message.into(),
        }
    }
}

/// An error of a client of the engine (such as a streaming program's failure), carried through
/// the engine unchanged: its message and causes are the client's own.
#[derive(Debug)]
pub struct ClientError {
    error: Box<dyn std::error::Error + Send + Sync>,
    retryable: bool,
}

impl ClientError {
    /// Wraps `error`; `retryable` says whether running the task again could succeed (a
    /// program that is not there will not be there on the next attempt either).
    pub fn new(error: impl std::error::Error + Send + Sync + 'static, retryable: bool) -> Self {
        ClientError {
            error: Box::new(error),
            retryable,
        }
    }

    /// The client's error, to look at with `<dyn Error>::downcast_ref`.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.error
    }

    /// The client's error, to take back with `Box::<dyn Error>::downcast`.
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync> {
        self.error
    }
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl From<sluice_sort::CursorError> for ExecError {
    fn from(e: sluice_sort::CursorError) -> ExecError {
        match e {
            sluice_sort::CursorError::Format(e) => ExecError::Format(e),
            sluice_sort::CursorError::Cancelled => ExecError::Cancelled,
            sluice_sort::CursorError::Source(e) => ExecError::Source(e),
            // A kind added later: keep its message.
            other => ExecError::Source(Box::new(other)),
        }
    }
}
