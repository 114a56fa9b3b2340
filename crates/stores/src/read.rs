//! A synchronous reader of a remote byte range, fetched ahead of the reader.
//!
//! A task reads its split with plain `Read` calls; behind them, a task on the store runtime
//! pulls the range from the store as one streaming request (an HTTP ranged GET, a sequence of
//! HDFS block reads) and hands the bytes over in pieces of about [`PIECE`] bytes through a
//! bounded channel. The store streams while the task parses, and at most [`AHEAD`] pieces wait
//! unread: a reader dropped early (a line reader stops one line past its split) leaves little
//! fetched for nothing. A stream that breaks mid-way is reopened at the byte it broke at, a
//! few times, before the error reaches the reader.

use std::io::{self, Read};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::runtime::runtime;

/// A store's bytes as they arrive.
pub(crate) type ByteStream = BoxStream<'static, io::Result<Bytes>>;

/// Opens the stream of the range's bytes from the given file offset on (the range's start,
/// or where a broken stream stopped).
pub(crate) type OpenAt = Box<dyn Fn(u64) -> BoxFuture<'static, io::Result<ByteStream>> + Send>;

/// Bytes handed to the reader at a time (smaller pieces from the network are gathered).
pub(crate) const PIECE: usize = 1 << 20;
/// Pieces fetched ahead of the reader.
pub(crate) const AHEAD: usize = 4;
/// Times a broken stream is reopened before its error is reported.
const REOPENS: u32 = 3;

/// The reader: see the module documentation.
pub(crate) struct PrefetchReader {
    pieces: mpsc::Receiver<io::Result<Bytes>>,
    current: Bytes,
    fetcher: JoinHandle<()>,
    done: bool,
}

impl PrefetchReader {
    /// Starts fetching from `start` with `open`, at most `len` bytes (`u64::MAX`: to the end).
    ///
    /// # Errors
    /// If the store runtime cannot be started.
    pub(crate) fn start(start: u64, len: u64, open: OpenAt) -> io::Result<PrefetchReader> {
        let (sender, pieces) = mpsc::channel(AHEAD);
        let fetcher = runtime()?.spawn(fetch(start, len, open, sender));
        Ok(PrefetchReader {
            pieces,
            current: Bytes::new(),
            fetcher,
            done: false,
        })
    }
}

impl Read for PrefetchReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.current.is_empty() {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            match self.pieces.blocking_recv() {
                Some(Ok(piece)) => self.current = piece,
                Some(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                None => self.done = true,
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current.split_to(n));
        Ok(n)
    }
}

impl Drop for PrefetchReader {
    fn drop(&mut self) {
        // Stops the request: nothing more is fetched for a reader that is gone.
        self.fetcher.abort();
    }
}

/// The fetching side: streams `start..start + len` into `sender` in pieces.
async fn fetch(start: u64, len: u64, open: OpenAt, sender: mpsc::Sender<io::Result<Bytes>>) {
    let end = start.saturating_add(len);
    let mut position = start;
    let mut reopens = 0;
    let mut piece = BytesMut::new();
    'streams: loop {
        let mut stream = match open(position).await {
            Ok(stream) => stream,
            Err(e) => {
                let _ = sender.send(Err(e)).await;
                return;
            }
        };
        loop {
            match stream.next().await {
                Some(Ok(bytes)) => {
                    let room = end.saturating_sub(position);
                    let bytes = match usize::try_from(room) {
                        Ok(room) if room < bytes.len() => bytes.slice(..room),
                        _ => bytes,
                    };
                    position += bytes.len() as u64;
                    piece.extend_from_slice(&bytes);
                    if piece.len() >= PIECE {
                        if sender.send(Ok(piece.split().freeze())).await.is_err() {
                            return;
                        }
                        reopens = 0;
                    }
                    if position >= end {
                        break 'streams;
                    }
                }
                Some(Err(e)) if reopens < REOPENS && is_transient(&e) => {
                    reopens += 1;
                    tokio::time::sleep(Duration::from_millis(200 << reopens)).await;
                    continue 'streams;
                }
                Some(Err(e)) => {
                    if !piece.is_empty() {
                        let _ = sender.send(Ok(piece.split().freeze())).await;
                    }
                    let _ = sender.send(Err(e)).await;
                    return;
                }
                None => break 'streams,
            }
        }
    }
    if !piece.is_empty() {
        let _ = sender.send(Ok(piece.freeze())).await;
    }
}

/// Whether a broken stream is worth reopening: the connection failed, not the request.
fn is_transient(error: &io::Error) -> bool {
    !matches!(
        error.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied | io::ErrorKind::InvalidData
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::stream;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 % 251) as u8).collect()
    }

    /// A store serving `bytes` in pieces of `step`, failing once after `fail_after` bytes.
    fn opener(bytes: Arc<Vec<u8>>, step: usize, fail_after: Option<u64>) -> OpenAt {
        let failed = Arc::new(AtomicU32::new(0));
        Box::new(move |at| {
            let bytes = Arc::clone(&bytes);
            let failed = Arc::clone(&failed);
            Box::pin(async move {
                let at = usize::try_from(at).unwrap();
                let mut items: Vec<io::Result<Bytes>> = bytes[at..]
                    .chunks(step)
                    .map(|c| Ok(Bytes::copy_from_slice(c)))
                    .collect();
                if let Some(limit) = fail_after {
                    if failed.fetch_add(1, Ordering::SeqCst) == 0 {
                        let keep = usize::try_from(limit).unwrap().saturating_sub(at) / step;
                        items.truncate(keep);
                        items.push(Err(io::Error::new(io::ErrorKind::ConnectionReset, "reset")));
                    }
                }
                Ok(stream::iter(items).boxed())
            })
        })
    }

    #[test]
    fn reads_the_range_exactly() {
        let bytes = Arc::new(data(3 * PIECE + 12345));
        for (start, len) in [
            (0, u64::MAX),
            (5, 100),
            (PIECE as u64 - 3, 2 * PIECE as u64),
        ] {
            let mut reader =
                PrefetchReader::start(start, len, opener(Arc::clone(&bytes), 7000, None)).unwrap();
            let mut got = Vec::new();
            reader.read_to_end(&mut got).unwrap();
            let s = usize::try_from(start).unwrap();
            let e = s
                .saturating_add(usize::try_from(len).unwrap_or(usize::MAX))
                .min(bytes.len());
            assert_eq!(got, bytes[s..e]);
        }
    }

    #[test]
    fn a_broken_stream_is_reopened_where_it_broke() {
        let bytes = Arc::new(data(2 * PIECE + 999));
        let open = opener(Arc::clone(&bytes), 4096, Some(PIECE as u64 + 5000));
        let mut reader = PrefetchReader::start(0, u64::MAX, open).unwrap();
        let mut got = Vec::new();
        reader.read_to_end(&mut got).unwrap();
        assert_eq!(got, *bytes);
    }

    #[test]
    fn a_failure_to_open_reaches_the_reader() {
        let open: OpenAt = Box::new(|_| {
            Box::pin(async { Err(io::Error::new(io::ErrorKind::NotFound, "no such key")) })
        });
        let mut reader = PrefetchReader::start(0, 10, open).unwrap();
        let err = reader.read(&mut [0; 4]).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
