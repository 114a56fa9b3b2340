//! Memory budget and spill files.
//!
//! # Brief overview
//!
//! * [`MemoryPool`]: the job's `--memory` budget, shared by every task running at once. Tasks take
//!   [`MemoryReservation`]s from it; a reservation gives its bytes back when dropped, so memory
//!   cannot leak from the budget through an early return or an error.
//! * [`SpillDir`]: a private scratch directory for the job, removed when dropped.
//! * [`SpillWriter`] / [`SpillFile`]: one sorted run on disk, holding a segment per partition,
//!   every block checksummed (and compressed) by `sluice-format`.
//! * [`SpillMetrics`]: how much was spilled, for the job's counters.
//!
//! The policy of *when* to spill lives with the callers (the map-side collector and the merger);
//! this crate only guarantees that the budget is never exceeded except by an explicit
//! [`MemoryPool::reserve_forced`], which the job reports.
#![forbid(unsafe_code)]

mod error;
mod file;
mod pool;

pub use error::SpillError;
pub use file::{Segment, SegmentReader, SpillDir, SpillFile, SpillMetrics, SpillWriter};
pub use pool::{MemoryPool, MemoryReservation};
