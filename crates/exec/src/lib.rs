//! The sluice engine: job model, operations and executor.
//!
//! # Architecture
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
//! * [`Mapper`], [`Reducer`], [`Emit`], [`Partitioner`]: what a job author implements (see
//!   `examples/` for a custom job).
//! * [`Job`] / [`Stage`]: a mapper and a chain of reduce stages; [`run_job`] runs one under a
//!   [`JobConfig`] and returns a [`JobReport`] with Hadoop-style counters.
//! * [`jobs`]: the built-in jobs (word count, grep, sort, inverted index).
#![forbid(unsafe_code)]

mod api;
mod collector;
mod config;
mod counters;
mod engine;
mod error;
mod group;
pub mod jobs;
mod output;
mod partition;
mod shuffle;
pub mod streaming;

pub use api::{
    decode_count, encode_count, Combine, Emit, LineSource, MapInput, Mapper, MapperFactory,
    Partitioner, Reducer, ReducerFactory, SortedInput, TaskContext, Values,
};
pub use config::{JobConfig, PlannedInput, DEFAULT_MEMORY, DEFAULT_SPLIT_SIZE, MIN_MEMORY};
pub use counters::{AttemptFailure, CounterValues, Counters, JobStatus, Phase, UserCounters};
pub use engine::{run_job, InputFormat, Job, JobReport, PhaseTiming, SplitOrder, Stage};
pub use error::ExecError;
pub use output::{OutputFormat, PartNames};
pub use partition::{hadoop_text_hash, HashPartitioner, TotalOrderPartitioner};
pub use sluice_io::OutputCodec;
pub use sluice_sort::{KeyComparator, KeyOrder, SortedCursor};
