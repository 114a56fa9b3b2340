//! The authenticated, framed TCP transport of sluice's cluster mode.
//!
//! The coordinator and the workers of a job talk over TCP. Every connection opens with a mutual
//! handshake in which each side proves it knows the job's [`Secret`], and then carries frames:
//! whole payloads, each checked against its CRC32C. This crate knows nothing of what the
//! payloads mean.
//!
//! # Brief overview
//!
//! * [`Secret`]: the shared secret, generated, read from a private file or passed as hex.
//! * [`Listener`]: binds an address the caller chooses and yields peers that completed the
//!   handshake; handshakes run concurrently, each under a timeout, and failures are counted.
//! * [`connect`]: dials a listener and runs the handshake within a timeout.
//! * [`Connection`]: sends and receives frames; [`Connection::split`] gives a
//!   [`FrameReader`] and a [`FrameWriter`] for two tasks.
//! * [`Transport`]: what a transport provides, implemented by [`Tcp`], so that another (RDMA,
//!   UCX) can be added without touching the code that uses it.
//! * [`FrameDecoder`] and [`write_frame`]: the frame layer over any byte stream.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), sluice_net::NetError> {
//! use std::time::Duration;
//! use sluice_net::{connect, Listener, Secret};
//!
//! let secret = Secret::generate()?;
//! let listener = Listener::bind("127.0.0.1:0".parse().unwrap(), secret.clone()).await?;
//! let mut client = connect(listener.local_addr(), &secret, Duration::from_secs(5)).await?;
//! let mut server = listener.accept().await?;
//!
//! client.send_parts(&[b"hello, ", b"worker"]).await?;
//! assert_eq!(server.recv().await?.as_deref(), Some(&b"hello, worker"[..]));
//! drop(client);
//! assert_eq!(server.recv().await?, None);
//! # Ok(())
//! # }
//! ```
//!
//! # Wire format
//!
//! Version 1; `docs/net-protocol.md` is the normative text. All integers are big-endian.
//!
//! ## Handshake
//!
//! Before any frame, the listener ("server") and the connecting side ("client") exchange:
//!
//! ```text
//! server -> client   "SLCN" | version 1 (1 byte) | nonce_s (32 random bytes)
//! client -> server   "SLCN" | version 1 | nonce_c (32 random bytes)
//!                    | HMAC-SHA256(secret, "sluice client" || nonce_s || nonce_c)
//! server -> client   HMAC-SHA256(secret, "sluice server" || nonce_c || nonce_s)
//! ```
//!
//! Each side checks the other's magic and version, then its proof, in constant time. On any
//! mismatch it closes the connection: the server before sending its proof, so a client without
//! the secret learns nothing but the server's random nonce. The fresh nonces make every proof
//! good for one connection; the distinct labels keep a proof in one direction from being
//! replayed in the other. The secret itself never crosses the wire. There is no encryption:
//! the handshake keeps out peers that do not belong to the job, not eavesdroppers.
//!
//! ## Frames
//!
//! ```text
//! payload length (u32) | CRC32C (Castagnoli) of the payload (u32) | payload
//! ```
//!
//! A payload may be empty and holds at most [`MAX_FRAME`] bytes. A frame announcing more is
//! refused ([`NetError::Corrupt`]) before anything is allocated, and a reader never allocates
//! more than the announced length. The end of the stream between two frames is a clean close;
//! inside one it is [`NetError::Corrupt`].
#![forbid(unsafe_code)]

mod conn;
mod error;
mod frame;
mod handshake;
mod listener;
mod secret;
mod transport;

pub use conn::{connect, Connection, FrameReader, FrameWriter};
pub use error::NetError;
pub use frame::{write_frame, FrameDecoder, HEADER_LEN};
pub use listener::{Listener, DEFAULT_HANDSHAKE_TIMEOUT};
pub use secret::Secret;
pub use transport::{Acceptor, FramedConnection, Tcp, Transport};

/// The largest frame payload, 8 MiB: a peer announcing a larger frame is refused
/// ([`NetError::Corrupt`]), and sending one is refused ([`NetError::TooLarge`]). Large data
/// (shuffle segments) travels as a sequence of frames.
pub const MAX_FRAME: usize = 8 << 20;
