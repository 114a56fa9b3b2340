use std::io;

/// Errors of the transport. Each names the peer's address where there is one, so that a log
/// line says which worker or coordinator misbehaved, and says the operating system's reason
/// itself (not as a `source`): a log line or a message formatted with `{}` keeps it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// Reading from or writing to the connection failed (reset, refused, broken pipe...).
    #[error("connection with {peer}: {cause}")]
    Io {
        /// The peer's address.
        peer: String,
        /// The operating system's error.
        cause: io::Error,
    },
    /// The listening socket could not be bound (address in use, not an address of this host...).
    #[error("cannot listen on {addr}: {cause}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The operating system's error.
        cause: io::Error,
    },
    /// The handshake failed: the peer does not know the secret, or does not speak this protocol.
    #[error("handshake with {peer} failed: {reason}")]
    Auth {
        /// The peer's address.
        peer: String,
        /// What went wrong.
        reason: String,
    },
    /// A frame was damaged: bad checksum, cut short, or announcing more than
    /// [`MAX_FRAME`](crate::MAX_FRAME) bytes.
    #[error("corrupt frame from {peer}: {reason}")]
    Corrupt {
        /// The peer's address.
        peer: String,
        /// What is wrong with the frame.
        reason: String,
    },
    /// A frame to send is larger than [`MAX_FRAME`](crate::MAX_FRAME): the peer would refuse it,
    /// so it is refused here, before anything is written.
    #[error("frame of {len} bytes for {peer} is over the limit of {max} bytes")]
    TooLarge {
        /// The peer's address.
        peer: String,
        /// The frame's payload length.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The peer did not answer in time.
    #[error("{what} with {peer} timed out")]
    Timeout {
        /// The peer's address.
        peer: String,
        /// What was being waited for, e.g. "handshake".
        what: &'static str,
    },
    /// The listener stopped accepting peers (its task ended).
    #[error("listener on {addr} is closed")]
    Closed {
        /// The listening address.
        addr: String,
    },
    /// Secret bytes, text or file that cannot be used.
    #[error("unusable secret: {reason}")]
    Secret {
        /// What is wrong, with the file's path when there is one.
        reason: String,
    },
}

impl NetError {
    /// Wraps an I/O error of the connection with `peer`.
    pub(crate) fn io(peer: impl ToString, cause: io::Error) -> Self {
        NetError::Io {
            peer: peer.to_string(),
            cause,
        }
    }

    /// A damaged frame from `peer`.
    pub(crate) fn corrupt(peer: impl ToString, reason: impl Into<String>) -> Self {
        NetError::Corrupt {
            peer: peer.to_string(),
            reason: reason.into(),
        }
    }

    /// A failed handshake with `peer`.
    pub(crate) fn auth(peer: impl ToString, reason: impl Into<String>) -> Self {
        NetError::Auth {
            peer: peer.to_string(),
            reason: reason.into(),
        }
    }
}
