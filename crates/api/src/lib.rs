//! The programming model of sluice: what a job is, what its author implements, and what a run
//! reports.
//!
//! This crate sits between the format crates below it (`sluice-format`, `sluice-hadoop`,
//! `sluice-sort`, `sluice-io`) and everything that defines or runs jobs above it: the local
//! driver (`sluice-exec`), the map side (`sluice-mapside`), the shuffle (`sluice-shuffle`), and
//! the clients (`sluice-jobs`, `sluice-streaming`). It holds no execution logic.
//!
//! * [`Mapper`], [`Reducer`], [`Emit`], [`Partitioner`]: what a job author implements.
//! * [`Job`] / [`Stage`]: a mapper and a chain of reduce stages.
//! * [`JobConfig`]: how one run of a job is set up (inputs, output, memory, threads).
//! * [`JobStatus`] / [`Counters`]: progress and Hadoop-style counters, shared with the front end.
//! * [`ExecError`]: why a job failed.
#![forbid(unsafe_code)]

mod config;
mod counters;
mod error;
mod group;
mod job;
mod map_output;
mod model;
mod output;
mod partition;

pub use config::{
    JobConfig, PlannedInput, DEFAULT_MEMORY, DEFAULT_REDUCE_SPLIT_BYTES, DEFAULT_SPLIT_SIZE,
    MIN_MEMORY,
};
pub use counters::{
    AttemptCounters, AttemptFailure, Counter, CounterValues, Counters, JobStatus, Note, NoteSource,
    Phase, UserCounters,
};
pub use error::{ClientError, ExecError};
pub use group::Values;
pub use job::{InputFormat, Job, JobReport, PhaseTiming, SplitOrder, Stage};
pub use map_output::{MapOutputTypes, Writable};
pub use model::AttemptId;
pub use model::{
    decode_count, encode_count, Combine, CountSink, Emit, LineSource, MapInput, Mapper,
    MapperFactory, Partitioner, Reducer, ReducerFactory, SortedInput, TaskContext,
};
pub use output::{OutputFormat, PartNames, SequenceOutput, Serialized};
pub use partition::{HashPartitioner, TotalOrderPartitioner};
pub use sluice_io::OutputCodec;
pub use sluice_sort::{KeyComparator, KeyOrder, SortedCursor};
