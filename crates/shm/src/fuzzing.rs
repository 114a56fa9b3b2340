//! The engine's side of one ring pair, with the peer's counters under the caller's control:
//! for the fuzz targets only (cargo feature `fuzzing`), which play a hostile child.
//!
//! The engine writes the input ring and reads the output ring, validating every counter the
//! child publishes. Here the "child" is whoever calls [`HostilePeer::set_input_head`] and
//! [`HostilePeer::set_output_tail`]: it can store any value, and the engine must answer with
//! [`ShmError::Violation`], never with an access outside a ring.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::layout::Layout;
use crate::region::Region;
use crate::ring::{Consumer, Producer, Ring, Sleeper};
use crate::ShmError;

/// Ends every wait at once: a single-threaded fuzz target has nobody to wait for.
struct NoWait;

impl Sleeper for NoWait {
    fn before_sleep(&mut self) {}
    fn after_wake(&mut self, _timed_out: bool) -> Result<(), ShmError> {
        Err(ShmError::Stopped)
    }
}

/// The engine's checked producer (input ring) and consumer (output ring) of one region, and
/// the words a child would write.
pub struct HostilePeer {
    producer: Producer,
    consumer: Consumer,
    input: Ring,
    output: Ring,
    capacity: u64,
}

impl HostilePeer {
    /// A fresh region with both rings of `capacity` bytes (a power of two, 4 KiB to 1 GiB).
    ///
    /// # Errors
    /// [`ShmError::Capacity`] for another capacity; the system's errors creating the region.
    pub fn new(capacity: u64) -> Result<HostilePeer, ShmError> {
        let layout = Layout::new(Some(capacity), Some(capacity))?;
        let (Some(input), Some(output)) = (layout.input, layout.output) else {
            return Err(ShmError::Capacity(capacity));
        };
        let region = Arc::new(Region::create(&layout)?);
        let ring = |layout| Ring::new(Arc::clone(&region), layout);
        Ok(HostilePeer {
            producer: Producer::new(ring(input), true).with_wait_timeout(Duration::ZERO),
            consumer: Consumer::new(ring(output), true).with_wait_timeout(Duration::ZERO),
            input: ring(input),
            output: ring(output),
            capacity,
        })
    }

    /// The capacity of each ring.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The engine writes `buf` to the child's input: how many bytes it copied (0 when the ring
    /// is full by the child's `head`), or the error a bad `head` is met with.
    ///
    /// # Errors
    /// [`ShmError::Violation`] for a `head` the child could not have published;
    /// [`ShmError::Stopped`] when the engine would have waited for space.
    pub fn engine_write(&mut self, buf: &[u8]) -> Result<usize, ShmError> {
        self.producer.write(buf, &mut NoWait)
    }

    /// The engine reads the child's output into `buf` without waiting: how many bytes it got.
    ///
    /// # Errors
    /// [`ShmError::Violation`] for a `tail` the child could not have published.
    pub fn engine_read(&mut self, buf: &mut [u8]) -> Result<usize, ShmError> {
        self.consumer.try_read(buf)
    }

    /// Bytes the engine has written to the input ring.
    pub fn engine_written(&self) -> u64 {
        self.producer.written()
    }

    /// Bytes the engine has read from the output ring.
    pub fn engine_consumed(&self) -> u64 {
        self.consumer.consumed()
    }

    /// The child stores `head` as its position in the input ring.
    pub fn set_input_head(&self, head: u64) {
        self.input.head().store(head, Ordering::Release);
    }

    /// The child stores `tail` as its position in the output ring.
    pub fn set_output_tail(&self, tail: u64) {
        self.output.tail().store(tail, Ordering::Release);
    }
}
