//! What the coordinator and the workers say to each other.
//!
//! Two kinds of connection, both through `sluice-net` (framed, checksummed, and opened only
//! by a peer that proves it knows a secret):
//!
//! * **control**: the coordinator connects to each worker's address with the cluster's
//!   secret; every frame is one JSON [`ToWorker`] or [`ToCoordinator`] message;
//! * **shuffle**: for each job a worker listens on an address of its own, opened only with
//!   the job's secret (which the coordinator made for the job and sent over the control
//!   connection); a reduce task asks each worker for its merged partition with a JSON
//!   [`Fetch`], and the answer is data frames ([`DATA`]: encoded records), then one end frame
//!   ([`END`]: the record count, JSON) or an error frame ([`FAILED`]: the reason).

use serde::{Deserialize, Serialize};
use sluice_api::{CounterValues, UserCounters};
use sluice_spec::JobSpec;

/// Version of these messages; a worker refuses a coordinator of another.
pub const PROTOCOL_VERSION: u32 = 1;

/// An input file of a job, as the coordinator found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// Its location (a URI or a local path).
    pub location: String,
    /// Its length in bytes.
    pub len: u64,
}

/// A job, as a worker needs it to run the job's tasks.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobStart {
    /// The job's id: names its directories and its part files' attempts.
    pub job_id: String,
    /// The job itself, rebuilt by the worker.
    pub spec: JobSpec,
    /// The job's store settings (`-D` keys): the worker reads them over its own
    /// `HADOOP_CONF_DIR`.
    pub defines: Vec<(String, String)>,
    /// The input files; a map task's split names one by index.
    pub inputs: Vec<InputFile>,
    /// Where the output becomes visible.
    pub output: String,
    /// Where the output's committer stages the part files (see
    /// `sluice_io::JobCommitter::staging`).
    pub staging: String,
    /// Compression of spill files (`none`, `lz4`, `zstd:LEVEL`).
    pub spill_codec: String,
    /// The job's secret (hex): the worker's shuffle listener admits only peers that know it.
    pub job_secret: String,
    /// The directory the job was submitted from: relative local paths (inputs, output, a
    /// streaming job's programs) name files there, on every worker as on the submitter.
    pub working_dir: String,
}

/// A message from the coordinator to a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToWorker {
    /// The first message: who is asking.
    Hello {
        /// [`PROTOCOL_VERSION`] of the coordinator.
        version: u32,
    },
    /// Get ready to run a job's tasks; the worker answers [`ToCoordinator::JobReady`].
    Start(Box<JobStart>),
    /// The shuffle addresses of every worker still in the job, by worker number: sent before
    /// each stage's reduce tasks, the last list replacing the earlier.
    Peers {
        /// `host:port` of each worker's shuffle listener.
        peers: Vec<String>,
        /// This worker's number among them.
        me: usize,
    },
    /// Run one attempt of a map task.
    Map {
        /// The task's number.
        task: usize,
        /// The attempt's number (distinct among the task's attempts on all workers).
        attempt: usize,
        /// Index of the input file.
        file: usize,
        /// First byte of the split.
        start: u64,
        /// Length of the split.
        len: u64,
    },
    /// The input of stage `stage` (1-based) is complete on every worker: seal it here.
    Seal {
        /// The stage.
        stage: usize,
    },
    /// Run one attempt of a reduce task: partition `partition` of stage `stage` (1-based),
    /// reading that partition from every worker.
    Reduce {
        /// The stage.
        stage: usize,
        /// The partition.
        partition: usize,
        /// The attempt's number.
        attempt: usize,
    },
    /// Stage `stage` (1-based), sealed, takes more runs: map tasks of a lost worker run
    /// again here. The next [`ToWorker::Seal`] seals it again.
    Reopen {
        /// The stage.
        stage: usize,
    },
    /// Stage `stage`'s input is read: let it go.
    Release {
        /// The stage.
        stage: usize,
    },
    /// The job is over (committed or not): drop everything it left on this worker.
    End,
}

/// A message from a worker to the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToCoordinator {
    /// The answer to [`ToWorker::Hello`].
    Hello {
        /// [`PROTOCOL_VERSION`] of the worker.
        version: u32,
        /// The worker's host name.
        host: String,
        /// Tasks it runs at once.
        threads: usize,
        /// Its memory budget in bytes.
        memory: u64,
    },
    /// Ready for the job's tasks; its shuffle listener is at `shuffle`.
    JobReady {
        /// `host:port` of the worker's shuffle listener for this job.
        shuffle: String,
    },
    /// Stage sealed (the answer to [`ToWorker::Seal`]).
    Sealed {
        /// The stage.
        stage: usize,
    },
    /// A task attempt succeeded.
    Done {
        /// Which.
        task: TaskRef,
        /// The worker's counters for the job so far (all its successful attempts).
        counters: CounterValues,
        /// The worker's user counters for the job so far.
        user_counters: UserCounters,
    },
    /// A task attempt failed.
    Failed {
        /// Which.
        task: TaskRef,
        /// Why, with its causes.
        error: String,
        /// Whether another attempt may succeed.
        retryable: bool,
    },
    /// The job could not be set up or continued on this worker.
    JobFailed {
        /// Why.
        error: String,
    },
    /// The job's traces are gone from the worker (the answer to [`ToWorker::End`]).
    Ended,
}

/// A task attempt, as both sides name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskRef {
    /// 0 for a map task, else the reduce stage (1-based).
    pub stage: usize,
    /// The task's number: the map task's, or the partition.
    pub task: usize,
    /// The attempt's number.
    pub attempt: usize,
}

/// A reduce task's request for one partition of a stage from a worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetch {
    /// The job's id, checked against the listener's.
    pub job_id: String,
    /// The stage (1-based).
    pub stage: usize,
    /// The partition.
    pub partition: usize,
}

/// First byte of a shuffle frame of encoded records.
pub const DATA: u8 = b'D';
/// First byte of the shuffle frame that ends a partition: JSON `{"records": N}`.
pub const END: u8 = b'E';
/// First byte of a shuffle frame saying the partition could not be served: the reason.
pub const FAILED: u8 = b'X';

/// The end frame's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    /// Records sent in the data frames.
    pub records: u64,
}
