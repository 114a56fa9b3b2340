//! sluice on many machines: a coordinator that plans a job and hands its tasks to workers,
//! and the workers that run them with the same engine as one machine does
//! ([`sluice_exec::TaskHost`]) and shuffle between themselves.
//!
//! ```text
//!  coordinator (the submitting `sluice` process)
//!    │ control: JSON messages over sluice-net, cluster secret
//!    ▼
//!  worker 0 ─┐   map tasks ─► runs on the worker (memory, spill files)
//!  worker 1 ─┼─► reduce task of partition p: its own runs + every other worker's
//!  worker 2 ─┘   partition p, merged and streamed over its shuffle listener (job secret)
//!                ─► part files through the output's committer, attached on the worker
//! ```
//!
//! Workers are started by something else (`sluice worker`, from systemd, a container, a test
//! harness) and joined by address; the output is committed by the coordinator, which set it
//! up. A job's tasks, counters and errors look as they do on one machine.
#![forbid(unsafe_code)]

mod busy;
mod coordinator;
mod error;
mod link;
pub mod protocol;
mod scratch;
mod segments;
mod shipping;
mod turns;
mod worker;
mod yarn;

pub use coordinator::{
    new_job_id, run_on_workers, ClusterJob, ClusterReport, WorkerList, WorkerSummary,
    DEFAULT_WORKER_TIMEOUT,
};
pub use error::ClusterError;
pub use protocol::ShuffleStats;
pub use segments::{FRAME_TARGET, WINDOW};
pub use worker::{Log, PortRange, StoresFactory, Worker, WorkerSettings, WorkerStop};
pub use yarn::{container_mb, run_on_yarn, YarnSettings};
