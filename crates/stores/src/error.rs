//! Errors of the remote stores, and how they become the [`IoError`]s the engine reports.

use std::io;

use sluice_io::{IoError, Location};

/// An error in setting up a remote store: its configuration.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A setting or a configuration file is wrong.
    #[error("{what}: {detail}")]
    Config {
        /// The setting (`-D key=value`) or the file.
        what: String,
        /// What is wrong with it.
        detail: String,
    },
}

/// The error of an operation on `location` that cannot be carried out: the store is
/// misconfigured or unreachable, or credentials are missing.
pub(crate) fn unavailable(location: &Location, reason: impl Into<String>) -> IoError {
    IoError::Store {
        location: location.to_string(),
        reason: reason.into(),
    }
}

/// A read-side failure on `location` with `source`.
pub(crate) fn read_error(location: &Location, source: io::Error) -> IoError {
    IoError::Read {
        path: location.error_path(),
        source,
    }
}

/// A write-side failure on `location` with `source`.
pub(crate) fn write_error(location: &Location, source: io::Error) -> IoError {
    IoError::Write {
        path: location.error_path(),
        source,
    }
}

/// An `io::Error` of `kind` whose message is `message`.
pub(crate) fn io_error(kind: io::ErrorKind, message: impl Into<String>) -> io::Error {
    io::Error::new(kind, message.into())
}
