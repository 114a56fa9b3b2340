//! Blocking messages over `sluice-net`'s asynchronous connections.
//!
//! Tasks are blocking code on threads of their own; the transport is asynchronous. A [`Link`]
//! runs each send and receive on the process's runtime ([`Net`]) and waits for it, so that
//! task code reads as plain calls.

use std::net::SocketAddr;
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::Serialize;
use sluice_net::{Connection, FrameReader, FrameWriter, NetError, Secret};
use tokio::runtime::{Handle, Runtime};

use crate::{ClusterError, WorkerStop};

/// The runtime every connection of this process runs on.
#[derive(Debug)]
pub(crate) struct Net {
    runtime: Runtime,
}

impl Net {
    /// A runtime of two threads: the transport only moves bytes; tasks run on their own.
    pub(crate) fn new() -> Result<Net, ClusterError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("sluice-net")
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| ClusterError::Setup(format!("cannot start the network runtime: {e}")))?;
        Ok(Net { runtime })
    }

    pub(crate) fn handle(&self) -> &Handle {
        self.runtime.handle()
    }
}

/// Connects to `addr` with `secret`, within `timeout`.
pub(crate) fn connect(
    handle: &Handle,
    addr: SocketAddr,
    secret: &Secret,
    timeout: Duration,
) -> Result<Link, ClusterError> {
    let conn = handle.block_on(sluice_net::connect(addr, secret, timeout))?;
    Ok(Link::new(handle.clone(), conn))
}

/// How long a send or a receive on a [`Link`] may wait for its peer before it fails: a peer
/// that takes no data and sends none for this long is stopped, hung or cut off (a connection
/// to a host that died without a word stays open for hours), and a transfer with it would
/// otherwise wait forever.
pub(crate) const STALL_LIMIT: Duration = Duration::from_secs(60);

/// A connection used from blocking code.
pub(crate) struct Link {
    handle: Handle,
    conn: Connection,
}

impl Link {
    pub(crate) fn new(handle: Handle, conn: Connection) -> Link {
        Link { handle, conn }
    }

    pub(crate) fn peer(&self) -> SocketAddr {
        self.conn.peer()
    }

    /// This end's address.
    pub(crate) fn local_addr(&self) -> SocketAddr {
        self.conn.local_addr()
    }

    /// Sends `message` as one JSON frame.
    pub(crate) fn send<T: Serialize>(&mut self, message: &T) -> Result<(), ClusterError> {
        let json = to_json(message)?;
        let peer = self.peer();
        let sent = self
            .handle
            .block_on(async { tokio::time::timeout(STALL_LIMIT, self.conn.send(&json)).await });
        Ok(sent.map_err(|_| stalled(peer))??)
    }

    /// Sends one frame of `parts`.
    pub(crate) fn send_parts(&mut self, parts: &[&[u8]]) -> Result<(), ClusterError> {
        let peer = self.peer();
        let sent = self.handle.block_on(async {
            tokio::time::timeout(STALL_LIMIT, self.conn.send_parts(parts)).await
        });
        Ok(sent.map_err(|_| stalled(peer))??)
    }

    /// [`Link::recv_within`], or `None` (as if the peer had closed the connection) once
    /// `ended` completes first.
    pub(crate) fn recv_within_unless<T: DeserializeOwned>(
        &mut self,
        timeout: Duration,
        ended: impl std::future::Future<Output = ()>,
    ) -> Result<Option<T>, ClusterError> {
        let peer = self.peer();
        let frame = self
            .handle
            .block_on(async {
                tokio::select! {
                    biased;
                    () = ended => Ok(Ok(None)),
                    frame = tokio::time::timeout(timeout, self.conn.recv()) => frame,
                }
            })
            .map_err(|_| ClusterError::Protocol {
                peer: peer.to_string(),
                reason: format!("no answer within {} s", timeout.as_secs()),
            })??;
        match frame {
            Some(frame) => from_json(&frame, peer).map(Some),
            None => Ok(None),
        }
    }

    /// The next JSON message, within `timeout`.
    pub(crate) fn recv_within<T: DeserializeOwned>(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<T>, ClusterError> {
        self.recv_within_unless(timeout, std::future::pending())
    }

    /// The next frame as it came; `None` when the peer closed the connection.
    pub(crate) fn recv_frame(&mut self) -> Result<Option<bytes::Bytes>, NetError> {
        let peer = self.peer();
        self.handle
            .block_on(async { tokio::time::timeout(STALL_LIMIT, self.conn.recv()).await })
            .map_err(|_| stalled(peer))?
    }

    /// The next frame, within `timeout`.
    #[cfg(test)]
    pub(crate) fn recv_frame_within(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<bytes::Bytes>, ClusterError> {
        let peer = self.peer();
        self.handle
            .block_on(async { tokio::time::timeout(timeout, self.conn.recv()).await })
            .map_err(|_| ClusterError::Protocol {
                peer: peer.to_string(),
                reason: format!("sent nothing for {} s", timeout.as_secs()),
            })?
            .map_err(ClusterError::from)
    }

    /// Halves for receiving on one thread while others send.
    pub(crate) fn split(self) -> (LinkReader, LinkWriter) {
        let peer = self.conn.peer();
        let (reader, writer) = self.conn.split();
        (
            LinkReader {
                handle: self.handle.clone(),
                reader,
                peer,
            },
            LinkWriter {
                handle: self.handle,
                writer,
            },
        )
    }
}

/// The receiving half of a [`Link`].
pub(crate) struct LinkReader {
    handle: Handle,
    reader: FrameReader,
    peer: SocketAddr,
}

impl LinkReader {
    /// The next JSON message; `None` when the peer closed the connection.
    pub(crate) fn recv<T: DeserializeOwned>(&mut self) -> Result<Option<T>, ClusterError> {
        match self.handle.block_on(self.reader.recv())? {
            Some(frame) => from_json(&frame, self.peer).map(Some),
            None => Ok(None),
        }
    }

    /// The next frame as it came; `None` when the peer closed the connection.
    pub(crate) fn recv_frame(&mut self) -> Result<Option<bytes::Bytes>, NetError> {
        self.handle.block_on(self.reader.recv())
    }

    /// [`LinkReader::recv`], given up for [`ClusterError::Stopped`] once `stop` is asked for.
    /// A message half read is lost then, which is why this is only for a connection that ends
    /// when the worker stops.
    pub(crate) fn recv_unless_stopped<T: DeserializeOwned>(
        &mut self,
        stop: &WorkerStop,
    ) -> Result<Option<T>, ClusterError> {
        let frame = self.handle.block_on(async {
            tokio::select! {
                biased;
                () = stop.requested() => None,
                frame = self.reader.recv() => Some(frame),
            }
        });
        match frame.ok_or(ClusterError::Stopped)?? {
            Some(frame) => from_json(&frame, self.peer).map(Some),
            None => Ok(None),
        }
    }
}

/// The sending half of a [`Link`].
pub(crate) struct LinkWriter {
    handle: Handle,
    writer: FrameWriter,
}

impl LinkWriter {
    /// Sends `message` as one JSON frame.
    pub(crate) fn send<T: Serialize>(&mut self, message: &T) -> Result<(), ClusterError> {
        let json = to_json(message)?;
        Ok(self.handle.block_on(self.writer.send(&json))?)
    }

    /// Sends `bytes` as one frame.
    pub(crate) fn send_frame(&mut self, bytes: &[u8]) -> Result<(), ClusterError> {
        Ok(self.handle.block_on(self.writer.send(bytes))?)
    }

    /// Ends the sending direction: the peer reads the end of the connection after what was
    /// sent.
    pub(crate) fn shutdown(&mut self) -> Result<(), ClusterError> {
        Ok(self.handle.block_on(self.writer.shutdown())?)
    }
}

/// The error of an operation on a link whose peer made no progress within [`STALL_LIMIT`].
fn stalled(peer: SocketAddr) -> NetError {
    NetError::Io {
        peer: peer.to_string(),
        cause: std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no progress for {} s", STALL_LIMIT.as_secs()),
        ),
    }
}

fn to_json<T: Serialize>(message: &T) -> Result<Vec<u8>, ClusterError> {
    serde_json::to_vec(message)
        .map_err(|e| ClusterError::Setup(format!("cannot serialise a message: {e}")))
}

fn from_json<T: DeserializeOwned>(frame: &[u8], peer: SocketAddr) -> Result<T, ClusterError> {
    serde_json::from_slice(frame).map_err(|e| ClusterError::Protocol {
        peer: peer.to_string(),
        reason: format!("a message that does not parse: {e}"),
    })
}

/// Links for the tests of this crate.
#[cfg(test)]
pub(crate) mod testing {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A connected pair of links on loopback: (the connecting end, the accepting end).
    pub(crate) fn pair(net: &Net) -> (Link, Link) {
        let secret = Secret::generate().unwrap();
        let listener = net
            .handle()
            .block_on(sluice_net::Listener::bind(
                SocketAddr::from(([127, 0, 0, 1], 0)),
                secret.clone(),
            ))
            .unwrap();
        let addr = listener.local_addr();
        let handle = net.handle().clone();
        let accept = std::thread::spawn(move || handle.block_on(listener.accept()).unwrap());
        let sender = connect(net.handle(), addr, &secret, Duration::from_secs(5)).unwrap();
        let receiver = Link::new(net.handle().clone(), accept.join().unwrap());
        (sender, receiver)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Instant;

    use super::testing::pair;
    use super::*;

    /// A wait for a message ends, as if the connection had closed, as soon as `ended` does (a
    /// job dropped while a connection to its shuffle was kept open), not at its timeout.
    #[test]
    fn a_wait_ends_when_its_job_does() {
        let net = Net::new().unwrap();
        let (_sender, mut receiver) = pair(&net);
        let job = tokio::sync::watch::Sender::new(());
        let mut ended = job.subscribe();
        let dropper = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(job);
        });
        let started = Instant::now();
        let got = receiver.recv_within_unless::<String>(Duration::from_secs(30), async {
            let _ = ended.changed().await;
        });
        assert!(matches!(got, Ok(None)), "{got:?}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        dropper.join().unwrap();
        // A message that comes first is received.
        let (mut sender, mut receiver) = pair(&net);
        sender.send(&"hello".to_string()).unwrap();
        let got =
            receiver.recv_within_unless::<String>(Duration::from_secs(30), std::future::pending());
        assert_eq!(got.unwrap().as_deref(), Some("hello"));
    }
}
