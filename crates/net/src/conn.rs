use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use tokio::io::BufReader;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;

use crate::frame::{write_frame, FrameDecoder};
use crate::{handshake, NetError, Secret};

/// Read buffer of a connection: many small frames then cost one system call, not two each.
/// Payloads larger than it are read straight into their own buffer.
const READ_BUFFER: usize = 64 << 10;

/// Connects to `addr` and runs the handshake, within `timeout`.
///
/// # Errors
///
/// [`NetError::Io`] if the connection fails, [`NetError::Auth`] if the handshake fails (the
/// listener does not know `secret`, or is not a sluice listener), [`NetError::Timeout`] if the
/// whole does not finish within `timeout`.
pub async fn connect(
    addr: SocketAddr,
    secret: &Secret,
    timeout: Duration,
) -> Result<Connection, NetError> {
    let attempt = async {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|e| NetError::io(addr, e))?;
        Connection::handshake(stream, addr, secret, Role::Client).await
    };
    tokio::time::timeout(timeout, attempt)
        .await
        .map_err(|_| NetError::Timeout {
            peer: addr.to_string(),
            what: "connect and handshake",
        })?
}

/// Which side of the handshake a connection plays.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Role {
    Client,
    Server,
}

/// A framed, authenticated connection.
///
/// Its frames are whole payloads: [`send`](Connection::send) one, [`recv`](Connection::recv)
/// one, each checked against its CRC32C. Dropping it closes the connection; the peer's `recv`
/// then returns `None`.
#[derive(Debug)]
pub struct Connection {
    reader: FrameReader,
    writer: FrameWriter,
    local: SocketAddr,
}

impl Connection {
    /// Runs the handshake on `stream` as `role`; the connection once it succeeded.
    pub(crate) async fn handshake(
        mut stream: TcpStream,
        peer: SocketAddr,
        secret: &Secret,
        role: Role,
    ) -> Result<Connection, NetError> {
        // Frames are whole messages, written with one vectored write each: waiting to coalesce
        // them (Nagle) would only add latency, to the handshake's ping-pong first of all.
        stream
            .set_nodelay(true)
            .map_err(|e| NetError::io(peer, e))?;
        match role {
            Role::Client => handshake::client(&mut stream, secret, peer).await?,
            Role::Server => handshake::server(&mut stream, secret, peer).await?,
        }
        let local = stream.local_addr().map_err(|e| NetError::io(peer, e))?;
        let (read, write) = stream.into_split();
        Ok(Connection {
            reader: FrameReader {
                inner: BufReader::with_capacity(READ_BUFFER, read),
                decoder: FrameDecoder::new(),
                peer,
            },
            writer: FrameWriter { inner: write, peer },
            local,
        })
    }

    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.reader.peer
    }

    /// This end's address: the local interface that reaches the peer.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Sends one frame; returns once it is written to the socket (flushed).
    ///
    /// # Errors
    ///
    /// See [`FrameWriter::send_parts`].
    pub async fn send(&mut self, payload: &[u8]) -> Result<(), NetError> {
        self.writer.send(payload).await
    }

    /// Sends one frame whose payload is the concatenation of `parts`, with vectored writes (no
    /// copy into one buffer).
    ///
    /// # Errors
    ///
    /// See [`FrameWriter::send_parts`].
    pub async fn send_parts(&mut self, parts: &[&[u8]]) -> Result<(), NetError> {
        self.writer.send_parts(parts).await
    }

    /// The next frame's payload, checked; `None` when the peer closed cleanly between frames.
    ///
    /// # Errors
    ///
    /// See [`FrameReader::recv`].
    pub async fn recv(&mut self) -> Result<Option<Bytes>, NetError> {
        self.reader.recv().await
    }

    /// Halves for reading and writing at once from two tasks.
    pub fn split(self) -> (FrameReader, FrameWriter) {
        (self.reader, self.writer)
    }
}

/// The reading half of a [`Connection`].
#[derive(Debug)]
pub struct FrameReader {
    inner: BufReader<OwnedReadHalf>,
    decoder: FrameDecoder,
    peer: SocketAddr,
}

impl FrameReader {
    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The next frame's payload, checked; `None` when the peer closed cleanly between frames.
    ///
    /// Cancel-safe: a `recv` dropped before it completes (e.g. losing a `select!`) loses no
    /// bytes, and the next `recv` carries on with the same frame.
    ///
    /// # Errors
    ///
    /// [`NetError::Corrupt`] if the connection closed inside a frame, a checksum does not match
    /// or a frame announces more than [`MAX_FRAME`](crate::MAX_FRAME) bytes;
    /// [`NetError::Io`] if reading fails. After an error the connection must be dropped.
    pub async fn recv(&mut self) -> Result<Option<Bytes>, NetError> {
        self.decoder.read_frame(&mut self.inner, self.peer).await
    }
}

/// The writing half of a [`Connection`]. Dropping it shuts down the sending direction: the
/// peer's `recv` returns `None` while this side can still read.
#[derive(Debug)]
pub struct FrameWriter {
    inner: OwnedWriteHalf,
    peer: SocketAddr,
}

impl FrameWriter {
    /// The peer's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// Sends one frame; returns once it is written to the socket (flushed).
    ///
    /// # Errors
    ///
    /// See [`send_parts`](FrameWriter::send_parts).
    pub async fn send(&mut self, payload: &[u8]) -> Result<(), NetError> {
        self.send_parts(&[payload]).await
    }

    /// Sends one frame whose payload is the concatenation of `parts`, with vectored writes (no
    /// copy into one buffer); returns once it is written to the socket.
    ///
    /// Not cancel-safe: dropped before it completes, it may leave part of a frame on the
    /// connection, which must then be dropped.
    ///
    /// # Errors
    ///
    /// [`NetError::TooLarge`] (nothing sent) if the payload is over
    /// [`MAX_FRAME`](crate::MAX_FRAME); [`NetError::Io`] if writing fails.
    pub async fn send_parts(&mut self, parts: &[&[u8]]) -> Result<(), NetError> {
        write_frame(&mut self.inner, parts, self.peer).await
    }

    /// Shuts down the sending direction now, as dropping this half would: the peer's `recv`
    /// returns `None` once it has read what was sent before.
    ///
    /// # Errors
    ///
    /// [`NetError::Io`] if the socket cannot be shut down (it is closed already, say).
    pub async fn shutdown(&mut self) -> Result<(), NetError> {
        tokio::io::AsyncWriteExt::shutdown(&mut self.inner)
            .await
            .map_err(|e| NetError::io(self.peer, e))
    }
}
