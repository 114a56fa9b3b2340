//! What can go wrong on the native side; each becomes a Java `IOException` carrying the
//! message (see `entry`).

use sluice_api::ExecError;
use sluice_hadoop::writable::WritableError;

/// An error of the native collector.
#[derive(Debug, thiserror::Error)]
pub enum JniError {
    /// The engine (collector, spill files, merge) failed.
    #[error("sluice: {0}")]
    Exec(#[from] ExecError),
    /// A key is not a well-formed serialised key of the job's key class.
    #[error("sluice: a map output key is malformed: {0}")]
    Key(#[from] WritableError),
    /// A batch from Java is malformed (never, unless the Java side is broken).
    #[error("sluice: malformed record batch at offset {offset}: {reason}")]
    Batch {
        /// Offset in the batch of the record header.
        offset: usize,
        /// What is wrong.
        reason: String,
    },
    /// Writing the map output file failed.
    #[error("sluice: cannot write {path}: {source}")]
    Output {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A fetched map output segment is not what the merge can take: malformed IFile records,
    /// keys out of the job's order, or a stream cut short.
    #[error("sluice: native merge: {0}")]
    Segment(String),
    /// A streaming program's shared-memory channel failed (the program exited, did not
    /// attach, or broke the protocol).
    #[error("sluice: {0}")]
    Streaming(String),
    /// An argument from Java is out of range.
    #[error("sluice: {0}")]
    Config(String),
    /// A call from Java that the JVM could not complete (a pending exception is thrown).
    #[error("sluice: JNI call failed: {0}")]
    Jni(#[from] jni::errors::Error),
}
