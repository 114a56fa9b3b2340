//! The transport abstraction: the cluster code is written against [`Transport`], so that a
//! transport other than TCP (RDMA, UCX) can be added as another implementation.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;

use crate::{connect, Connection, Listener, NetError, Secret};

/// What a transport provides: listening and connecting, both authenticated with the job's
/// [`Secret`], yielding connections that carry checked frames of at most
/// [`MAX_FRAME`](crate::MAX_FRAME) bytes.
///
/// An implementation must give the guarantees [`Tcp`] gives: a connection is yielded only once
/// both sides proved they know the secret; a received frame is exactly a frame the peer sent,
/// in order; a damaged or cut frame is an error, never data.
pub trait Transport: Send + Sync {
    /// The listening side.
    type Listener: Acceptor<Connection = Self::Connection>;
    /// One authenticated connection.
    type Connection: FramedConnection;

    /// Listens on `addr` for peers that know `secret`.
    fn bind(
        &self,
        addr: SocketAddr,
        secret: Secret,
    ) -> impl Future<Output = Result<Self::Listener, NetError>> + Send;

    /// Connects to `addr` and authenticates with `secret`, within `timeout`.
    fn connect(
        &self,
        addr: SocketAddr,
        secret: &Secret,
        timeout: Duration,
    ) -> impl Future<Output = Result<Self::Connection, NetError>> + Send;
}

/// The listening side of a [`Transport`].
pub trait Acceptor: Send + Sync {
    /// The connections it yields.
    type Connection;

    /// The address it listens on.
    fn local_addr(&self) -> SocketAddr;

    /// The next authenticated peer.
    fn accept(&self) -> impl Future<Output = Result<Self::Connection, NetError>> + Send;
}

/// A connection of a [`Transport`]: frames in, frames out.
pub trait FramedConnection: Send {
    /// The peer's address.
    fn peer(&self) -> SocketAddr;

    /// Sends one frame.
    fn send(&mut self, payload: &[u8]) -> impl Future<Output = Result<(), NetError>> + Send;

    /// Sends one frame whose payload is the concatenation of `parts`.
    fn send_parts(&mut self, parts: &[&[u8]]) -> impl Future<Output = Result<(), NetError>> + Send;

    /// The next frame, or `None` if the peer closed cleanly between frames.
    fn recv(&mut self) -> impl Future<Output = Result<Option<Bytes>, NetError>> + Send;
}

/// The TCP transport: [`Listener`], [`connect`] and [`Connection`] of this crate.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp;

impl Transport for Tcp {
    type Listener = Listener;
    type Connection = Connection;

    fn bind(
        &self,
        addr: SocketAddr,
        secret: Secret,
    ) -> impl Future<Output = Result<Listener, NetError>> + Send {
        Listener::bind(addr, secret)
    }

    fn connect(
        &self,
        addr: SocketAddr,
        secret: &Secret,
        timeout: Duration,
    ) -> impl Future<Output = Result<Connection, NetError>> + Send {
        connect(addr, secret, timeout)
    }
}

impl Acceptor for Listener {
    type Connection = Connection;

    fn local_addr(&self) -> SocketAddr {
        Listener::local_addr(self)
    }

    fn accept(&self) -> impl Future<Output = Result<Connection, NetError>> + Send {
        Listener::accept(self)
    }
}

impl FramedConnection for Connection {
    fn peer(&self) -> SocketAddr {
        Connection::peer(self)
    }

    fn send(&mut self, payload: &[u8]) -> impl Future<Output = Result<(), NetError>> + Send {
        Connection::send(self, payload)
    }

    fn send_parts(&mut self, parts: &[&[u8]]) -> impl Future<Output = Result<(), NetError>> + Send {
        Connection::send_parts(self, parts)
    }

    fn recv(&mut self) -> impl Future<Output = Result<Option<Bytes>, NetError>> + Send {
        Connection::recv(self)
    }
}
