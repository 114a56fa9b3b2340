//! Memory budget and spill files.
//!
//! It sits on `sluice-format` and `sluice-io` and under the shuffle, the map side and the
//! drivers: the memory pool they all reserve from, and the local files runs spill to.
//!
//! # Brief overview
//!
//! * [`MemoryPool`]: the job's `--memory` budget, shared by every task running at once. Tasks take
//!   [`MemoryReservation`]s from it; a reservation gives its bytes back when dropped, so memory
//!   cannot leak from the budget through an early return or an error.
//! * [`SpillDir`]: a private scratch directory for the job, removed when dropped.
//! * [`SpillWriter`] / [`SpillFile`]: one sorted run on disk, holding a segment per partition,
//!   every block checksummed (and compressed) by `sluice-format`.
//! * [`SpillIndex`]: the segment table every spill file gets beside it on disk
//!   (`run-000001.spill` + `run-000001.index`), checksummed and written atomically. With it
//!   another process can open a spill file from its path alone ([`SpillFile::open`]) and read
//!   one partition, decoded ([`SpillFile::open_segment`]) or as stored, e.g. to ship it
//!   ([`SpillFile::segment`], [`SpillFile::read_stored`], [`SpillFile::verify_stored`]).
//!   Opening a file this way never deletes it: only the [`SpillFile`] its writer returned does.
//! * [`SpillMetrics`]: how much was spilled, for the job's counters.
//!
//! The policy of *when* to spill lives with the callers (the map-side collector and the merger);
//! this crate only guarantees that the budget is never exceeded except by an explicit
//! [`MemoryPool::reserve_forced`], which the job reports.
#![forbid(unsafe_code)]

mod error;
mod file;
mod index;
mod pool;

pub use error::SpillError;
pub use file::{
    KeyCompare, ScratchFile, ScratchReader, SegmentReader, SpillDir, SpillFile, SpillMetrics,
    SpillWriter,
};
pub use index::{IndexProblem, Segment, SpillIndex};
pub use pool::{BufferAccount, MemoryPool, MemoryReservation};
