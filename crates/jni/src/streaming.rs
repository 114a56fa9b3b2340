//! Hadoop Streaming over shared memory: the engine side of one streaming program's rings,
//! driven by the plugin's Java writer and reader (`org.sluice.hadoop.streaming`).
//!
//! The Java writer does the handshake of `docs/shm-protocol.md` ("Setting up under Hadoop
//! Streaming") on the program's pipes; this side makes the region, tells the attach line,
//! waits for the program to attach, and then moves ~1 MB batches: the writer's into the input
//! ring, the output ring's into the reader's buffer. The two directions are driven by two Java
//! threads (the task's and Hadoop's output thread), so each has its own lock and neither waits
//! for the other.

use std::io::{Read, Write};
use std::sync::Mutex;
use std::time::Duration;

use sluice_shm::{ChildInput, ChildOutput, ChildStatus, ChildWatch, EngineRegion};

use crate::error::JniError;

/// The program as the rings see it: a process of this JVM, alive while `kill(pid, 0)` finds
/// it (Java reaps its children at once, so an exited program soon is not found).
#[derive(Debug, Clone, Copy)]
pub struct ProcessWatch {
    pid: i32,
}

impl ChildWatch for ProcessWatch {
    fn status(&self) -> ChildStatus {
        let pid = nix::unistd::Pid::from_raw(self.pid);
        match nix::sys::signal::kill(pid, None) {
            Err(nix::errno::Errno::ESRCH) => ChildStatus::Exited,
            _ => ChildStatus::Running,
        }
    }
}

/// One streaming program's region and the engine's ends of its rings.
#[derive(Debug)]
pub struct StreamingSession {
    region: EngineRegion,
    watch: ProcessWatch,
    input: Mutex<Option<ChildInput<ProcessWatch>>>,
    output: Mutex<Option<ChildOutput<ProcessWatch>>>,
}

/// Locks a mutex whose holder may have panicked (the panic was reported as an exception; the
/// ring itself is still consistent, since no ring operation leaves it half-updated).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

fn shm(error: sluice_shm::ShmError) -> JniError {
    JniError::Streaming(error.to_string())
}

impl StreamingSession {
    /// A region for the program with process id `pid`: an input ring of `input` bytes and, if
    /// `output` is given, an output ring.
    ///
    /// # Errors
    /// A capacity the protocol does not allow, or a region that cannot be made.
    pub fn new(pid: i32, input: u64, output: Option<u64>) -> Result<StreamingSession, JniError> {
        if pid <= 0 {
            return Err(JniError::Config(format!("process id {pid}")));
        }
        let region = EngineRegion::create(Some(input), output).map_err(shm)?;
        let watch = ProcessWatch { pid };
        let input = region.input(watch);
        let output = region.output(watch);
        Ok(StreamingSession {
            region,
            watch,
            input: Mutex::new(input),
            output: Mutex::new(output),
        })
    }

    /// The line that tells the program where the region is.
    ///
    /// # Errors
    /// If the region's descriptor is already closed (the handshake happened).
    pub fn attach_line(&self) -> Result<Vec<u8>, JniError> {
        let path = self
            .region
            .attach_path()
            .ok_or_else(|| JniError::Streaming("the region was attached already".into()))?;
        Ok(sluice_shm::handshake::attach_line(&path))
    }

    /// Waits until the program has attached, then closes the region's descriptor so that no
    /// path opens it any more.
    ///
    /// # Errors
    /// The program exited, or did not attach within `timeout`.
    pub fn await_attach(&self, timeout: Duration) -> Result<(), JniError> {
        let attached = self.region.wait_attached(timeout, &self.watch);
        self.region.close_descriptor();
        attached.map_err(|e| {
            JniError::Streaming(format!(
                "the streaming program offered shared memory but did not attach: {e}"
            ))
        })
    }

    /// Writes `bytes` into the input ring (waiting while it is full) and wakes the program.
    ///
    /// # Errors
    /// The program exited (a broken pipe, as with pipes), or the input was closed.
    pub fn write(&self, bytes: &[u8]) -> Result<(), JniError> {
        let mut input = lock(&self.input);
        let ring = input
            .as_mut()
            .ok_or_else(|| JniError::Streaming("the program's input is closed".into()))?;
        ring.write_all(bytes)
            .and_then(|()| ring.flush())
            .map_err(|e| JniError::Streaming(format!("writing to the streaming program: {e}")))
    }

    /// Closes the input ring: the program sees the end of its input.
    pub fn close_input(&self) {
        drop(lock(&self.input).take());
    }

    /// Reads what the program wrote into `buf`: the number of bytes, 0 at the end.
    ///
    /// # Errors
    /// A protocol violation, or a program that exited without closing its output ring (some
    /// output may be lost, which must fail the task, not pass it with less output).
    pub fn read(&self, buf: &mut [u8]) -> Result<usize, JniError> {
        let mut output = lock(&self.output);
        let Some(ring) = output.as_mut() else {
            return Ok(0);
        };
        let n = ring
            .read(buf)
            .map_err(|e| JniError::Streaming(format!("reading the streaming program: {e}")))?;
        if n == 0 && !buf.is_empty() && !self.region.output_closed() {
            return Err(JniError::Streaming(
                "the streaming program exited without closing its shared-memory output \
                 (it may have lost output): it must close its sluice_shm channel"
                    .into(),
            ));
        }
        Ok(n)
    }
}

impl Drop for StreamingSession {
    /// A session dropped before both directions ended tells the program to stop.
    fn drop(&mut self) {
        let input_open = lock(&self.input).is_some();
        let output_unread = lock(&self.output).is_some() && !self.region.output_closed();
        if input_open || output_unread {
            self.region.abort();
        }
    }
}
