//! The map side of sluice: a task's output collected under a memory reservation into sorted,
//! combined, partitioned runs.
//!
//! ```text
//!  Mapper ─► Emit ─► PartitioningCollector ─(partition, key, value)─► Collector
//!                                                                      │ budget full
//!                                      sort ─► combine ─► SpillTarget ◄┘ (spill file; later a
//!                                                                         push or an IFile)
//!                                      task end ─► memory run, if the held-runs share allows
//! ```
//!
//! The [`Collector`] takes records with their partition already assigned, as Hadoop hands its
//! collectors the partition: the local driver, a cluster worker and a Hadoop plugin decide
//! partitions their own way. Counted keys ([`MapCombine::SumCounts`]) are the exception: a
//! count table assigns each distinct key its partition once, when it is flushed, instead of
//! once per occurrence. Runs go where the job's [`Resources`](sluice_shuffle::Resources) send
//! them; nothing here knows of a driver.
#![forbid(unsafe_code)]

mod collector;

pub use collector::{Collector, CollectorSpec, MapCombine, PartitioningCollector};
