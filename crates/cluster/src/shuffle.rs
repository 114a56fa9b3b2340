//! The shuffle between workers: each worker serves, for every partition of a stage, its own
//! tasks' runs merged into one sorted stream; a reduce task reads that stream from every other
//! worker as a run ([`RemoteRun`]) beside its own worker's runs.
//!
//! A stream is data frames of whole encoded records (`varint klen, varint vlen, key, value`,
//! as in sluice's runs), about [`FRAME_TARGET`] bytes each, then an end frame with the record
//! count, which the reader checks: a stream cut short is an error, never a shorter partition.
//! A record too large for one frame travels in pieces ([`PIECE`] frames, then the last piece
//! in a data frame), which the reader joins.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use sluice_api::{ExecError, Job};
use sluice_exec::TaskHost;
use sluice_format::record;
use sluice_net::Secret;
use sluice_shuffle::{RunCursor, RunKind, RunSource};
use sluice_sort::{BytesCursor, CursorError, SortedCursor};
use tokio::runtime::Handle;

use crate::link::{connect, Link};
use crate::protocol::{End, Fetch, DATA, END, FAILED};
use crate::ClusterError;

/// Bytes of records a data frame carries, about.
pub const FRAME_TARGET: usize = 1 << 20;

/// First byte of a frame holding a piece of a record too large for one frame; the record's
/// last piece comes in a [`DATA`] frame.
pub const PIECE: u8 = b'P';

/// How long a fetch waits to connect to a worker.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a served stream waits for its request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Serves one fetch on `link`: reads the request, streams the merged partition.
pub(crate) fn serve_fetch(
    mut link: Link,
    job_id: &str,
    job: &Job,
    host: &TaskHost,
) -> Result<(), ClusterError> {
    let peer = link.peer().to_string();
    let Some(fetch) = link.recv_within::<Fetch>(REQUEST_TIMEOUT)? else {
        return Ok(());
    };
    if fetch.job_id != job_id {
        let reason = format!(
            "asks for job {}, this listener is job {job_id}'s",
            fetch.job_id
        );
        let _ = link.send_parts(&[&[FAILED], reason.as_bytes()]);
        return Err(ClusterError::Protocol { peer, reason });
    }
    match stream_partition(&mut link, job, host, &fetch) {
        Ok(()) => Ok(()),
        Err(Served::Net(e)) => Err(e),
        Err(Served::Exec(e)) => {
            // The reader fails its task with this reason.
            let reason = e.chain();
            let _ = link.send_parts(&[&[FAILED], reason.as_bytes()]);
            Err(ClusterError::Exec(e))
        }
    }
}

enum Served {
    Net(ClusterError),
    Exec(ExecError),
}

fn stream_partition(
    link: &mut Link,
    job: &Job,
    host: &TaskHost,
    fetch: &Fetch,
) -> Result<(), Served> {
    let index = fetch
        .stage
        .checked_sub(1)
        .ok_or_else(|| Served::Exec(ExecError::Config("stages are numbered from 1".into())))?;
    let mut merged = host
        .merged(job, index, fetch.partition)
        .map_err(Served::Exec)?;
    let mut frame = Vec::with_capacity(FRAME_TARGET + 1024);
    frame.push(DATA);
    let mut records = 0u64;
    while merged
        .advance()
        .map_err(|e| Served::Exec(ExecError::from(e)))?
    {
        let (key, value) = (merged.key(), merged.value());
        let len = record::encoded_len(key.len(), value.len());
        if frame.len() > 1 && frame.len() + len > FRAME_TARGET {
            link.send_parts(&[&frame]).map_err(Served::Net)?;
            frame.truncate(1);
        }
        record::encode(&mut frame, key, value);
        records += 1;
        if frame.len() > FRAME_TARGET {
            // One record larger than a frame: all but its last piece as pieces.
            let mut rest = &frame[1..];
            while rest.len() > FRAME_TARGET {
                let (piece, tail) = rest.split_at(FRAME_TARGET);
                link.send_parts(&[&[PIECE], piece]).map_err(Served::Net)?;
                rest = tail;
            }
            link.send_parts(&[&[DATA], rest]).map_err(Served::Net)?;
            frame.truncate(1);
        }
    }
    if frame.len() > 1 {
        link.send_parts(&[&frame]).map_err(Served::Net)?;
    }
    let end = serde_json::to_vec(&End { records })
        .map_err(|e| Served::Net(ClusterError::Setup(e.to_string())))?;
    link.send_parts(&[&[END], &end]).map_err(Served::Net)?;
    Ok(())
}

/// One worker's merged stream of a stage's partition, read over the network: a run like any
/// other to the reduce task's merge.
pub(crate) struct RemoteRun {
    /// The worker, for messages (`host (address)`).
    pub(crate) worker: String,
    pub(crate) addr: SocketAddr,
    pub(crate) secret: Arc<Secret>,
    pub(crate) handle: Handle,
    pub(crate) job_id: String,
    pub(crate) stage: usize,
}

impl std::fmt::Debug for RemoteRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteRun")
            .field("worker", &self.worker)
            .field("stage", &self.stage)
            .finish()
    }
}

impl RunSource for RemoteRun {
    fn kind(&self) -> RunKind {
        // Reading it holds a frame, as reading a spill file holds a block.
        RunKind::Stored
    }
    fn has_records(&self, _partition: usize) -> bool {
        // Unknown until asked; an empty stream costs one round trip.
        true
    }
    fn bytes(&self) -> u64 {
        0
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        let fail = |e: ClusterError| {
            ExecError::Source(Box::new(e)).in_task(format!(
                "fetching partition {partition} of stage {} from worker {}",
                self.stage, self.worker
            ))
        };
        let mut link =
            connect(&self.handle, self.addr, &self.secret, CONNECT_TIMEOUT).map_err(fail)?;
        link.send(&Fetch {
            job_id: self.job_id.clone(),
            stage: self.stage,
            partition,
        })
        .map_err(fail)?;
        Ok(RunCursor::Other(Box::new(RemoteCursor {
            link,
            worker: self.worker.clone(),
            current: BytesCursor::new(Chunk::Frame(Bytes::new())),
            pieces: Vec::new(),
            records: 0,
            done: false,
        })))
    }
}

/// The records of one frame (or of pieces joined), without the frame's tag.
enum Chunk {
    Frame(Bytes),
    Joined(Vec<u8>),
}

impl AsRef<[u8]> for Chunk {
    fn as_ref(&self) -> &[u8] {
        match self {
            Chunk::Frame(bytes) => bytes,
            Chunk::Joined(bytes) => bytes,
        }
    }
}

/// Reads a served stream record by record.
struct RemoteCursor {
    link: Link,
    worker: String,
    current: BytesCursor<Chunk>,
    pieces: Vec<u8>,
    records: u64,
    done: bool,
}

impl RemoteCursor {
    fn error(&self, reason: impl Into<String>) -> CursorError {
        CursorError::Source(Box::new(ClusterError::Protocol {
            peer: self.worker.clone(),
            reason: reason.into(),
        }))
    }
}

impl SortedCursor for RemoteCursor {
    fn advance(&mut self) -> Result<bool, CursorError> {
        loop {
            if self.current.advance()? {
                self.records += 1;
                return Ok(true);
            }
            if self.done {
                return Ok(false);
            }
            let frame = match self.link.recv_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => return Err(self.error("the stream ended before its end frame")),
                Err(e) => return Err(CursorError::Source(Box::new(e))),
            };
            let Some((&tag, _)) = frame.split_first() else {
                return Err(self.error("an empty frame"));
            };
            let body = frame.slice(1..);
            match tag {
                DATA if self.pieces.is_empty() => {
                    self.current = BytesCursor::new(Chunk::Frame(body));
                }
                DATA => {
                    let mut joined = std::mem::take(&mut self.pieces);
                    joined.extend_from_slice(&body);
                    self.current = BytesCursor::new(Chunk::Joined(joined));
                }
                PIECE => self.pieces.extend_from_slice(&body),
                END => {
                    let end: End = serde_json::from_slice(&body)
                        .map_err(|e| self.error(format!("a bad end frame: {e}")))?;
                    if end.records != self.records || !self.pieces.is_empty() {
                        return Err(self.error(format!(
                            "{} records sent, {} received",
                            end.records, self.records
                        )));
                    }
                    self.done = true;
                    return Ok(false);
                }
                FAILED => {
                    return Err(self.error(format!(
                        "cannot serve the partition: {}",
                        String::from_utf8_lossy(&body)
                    )))
                }
                other => return Err(self.error(format!("a frame of unknown kind {other:#04x}"))),
            }
        }
    }
    fn key(&self) -> &[u8] {
        self.current.key()
    }
    fn value(&self) -> &[u8] {
        self.current.value()
    }
}
