//! The local driver of sluice: runs a [`Job`](sluice_api::Job) on one machine, with every core.
//!
//! ```text
//!  inputs ─► discover + split (sluice-io)
//!              │
//!              ▼  one map task per split, `threads` at a time
//!     LineReader ─► Mapper ─► Collector ──(budget full)──► sort ─► combine ─► spill file
//!                                 └──────(task end)──────► sort ─► combine ─► memory run
//!              │
//!              ▼  ShuffleStore: every task's runs, in task order
//!     per partition, `threads` at a time:
//!        k-way merge of its runs (through disk in passes if too many for the budget)
//!          ─► group equal keys ─► Reducer ─┬─► part-r-NNNNN           (last stage)
//!                                          └─► Collector of next stage (chained stages)
//!              │
//!              ▼
//!     OutputCommitter: temporary directory ─► rename ─► _SUCCESS
//! ```
//!
//! [`run_job`] runs a job under a [`JobConfig`](sluice_api::JobConfig) and returns a
//! [`JobReport`](sluice_api::JobReport); [`run_tasks`] is its task pool, for work that is not a
//! MapReduce job (TeraGen's generator).
#![forbid(unsafe_code)]

mod commit;
mod engine;
mod map;
mod part_file;
mod plan;
mod reduce;
mod shared;
mod sink;
mod tasks;

pub use engine::run_job;
pub use tasks::run_tasks;
