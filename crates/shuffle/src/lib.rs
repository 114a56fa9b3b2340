//! The runs between sluice's map side and its reduce side, and how they are merged.
//!
//! ```text
//!   collector flush ──► SpillTarget ──► RunWriter ──► Run (spill file)  ─┐
//!   collector end   ──► MemRunBuilder ─────────────► Run (memory)       ─┤
//!                                                                         ▼
//!                        RunCatalog: every task's runs in (task, sequence) order
//!                          │  early merges while map tasks run (policy: windows, fan-in)
//!                          ▼
//!                        merge_partition: one sorted stream per partition ──► reducer
//! ```
//!
//! * [`RunSource`] / [`Run`]: a sorted run readable one partition at a time — a [`MemRun`] or a
//!   local spill file today; a segment on another machine or a Hadoop IFile later.
//! * [`MemoryImage`] / [`EncodedPartition`]: a memory run as its encoded bytes, and one of its
//!   partitions in chunks of whole records cut without decoding them: what a process writes
//!   out or a shuffle sends as it is.
//! * [`RunSink`] / [`RunWriter`] / [`SpillTarget`]: where runs are written; [`LocalSpills`]
//!   writes spill files in the job's private directory.
//! * [`RunCatalog`]: the runs of one stage, in the stable order the merge relies on.
//! * [`policy`]: which runs to merge before the final merge, within a memory budget.
//! * [`merge_partition`], [`merge_early`], [`merge_memory_early`]: the merges.
//! * [`split_points`], [`prepare_partition`], [`merge_range`]: one partition's merge cut
//!   into key ranges merged apart (a skewed partition's reduce on several threads).
//! * [`Resources`]: the memory pool, the share for held runs and the spill target every task
//!   of a job shares.
//!
//! It depends on the programming model (`sluice-api`) and the formats below it, never on a
//! driver: the local driver, a cluster worker and the Hadoop plugin all use it as it is.
#![forbid(unsafe_code)]

mod catalog;
mod encoded;
mod merge;
pub mod policy;
mod quota;
mod resources;
mod run;
mod split;

pub use catalog::{PlacedRun, RunCatalog};
pub use encoded::{Chunks, EncodedPartition, MemoryImage};
pub use merge::{
    merge_early, merge_memory_early, merge_partition, merge_range, prepare_partition, KeyRange,
    MergeSpec, PartitionMerge, MEMORY_MERGE_WIDTH,
};
pub use quota::{MemRunQuota, QuotaReservation, Reclaim};
pub use resources::{Resources, SORT_BLOCK};
pub use run::{
    spill_table_bytes, DumpedRun, LocalSpills, MemRun, MemRunBuilder, MemSlice, ReservedRun, Run,
    RunCursor, RunKind, RunSink, RunSource, RunWriter, SpillTarget,
};
pub use split::{partition_size, split_points, MAX_CUT_KEY};

/// Block size of spill files: large enough for sequential I/O and good compression, small enough
/// that a merge can read many runs at once within the budget.
pub const SPILL_BLOCK: usize = 64 * 1024;
