//! The local driver of sluice: runs a [`Job`](sluice_api::Job) on one machine, with every core.
//!
//! It sits on the map side (`sluice-mapside`), the shuffle (`sluice-shuffle`) and storage
//! (`sluice-io`), and wires them together for one process; a cluster worker and the Hadoop
//! plugin will wire the same pieces their own way.
//!
//! ```text
//!  plan: inputs ─► Storage: discover + split; the budget divided (plan)
//!              │
//!              ▼  one map task per split, `threads` at a time (tasks, map)
//!     LineReader ─► Mapper ─► PartitioningCollector ─► Collector ─► spill files, memory run
//!              │
//!              ▼  RunCatalog: every task's runs, in task order
//!     per partition, `threads` at a time (reduce):
//!        merge_partition (through disk in passes if too many for the task's memory)
//!          ─► group equal keys ─► Reducer ─┬─► part-r-NNNNN           (last stage)
//!                                          └─► Collector of next stage (chained stages)
//!              │
//!              ▼
//!     JobCommitter: attempt files ─► commit ─► _SUCCESS (commit)
//! ```
//!
//! [`run_job`] runs a job under a [`JobConfig`](sluice_api::JobConfig) and returns a
//! [`JobReport`](sluice_api::JobReport); [`run_tasks`] is its task pool, and [`JobOutput`] its
//! committed output, for work that is not a MapReduce job (TeraGen's generator).
#![forbid(unsafe_code)]

mod commit;
mod engine;
mod host;
mod map;
mod part_file;
mod plan;
mod ranges;
mod reduce;
mod shared;
mod sink;
mod tasks;

pub use commit::JobOutput;
pub use engine::{check_places, run_job};
pub use host::{HostSettings, MapAttempt, TaskHost};
pub use plan::{check_reducers, spill_parent, spill_parents, InputPlan, COMBINE_FROM_FILES};
pub use tasks::run_tasks;
