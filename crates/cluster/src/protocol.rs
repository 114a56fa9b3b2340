//! What the coordinator and the workers say to each other.
//!
//! Two kinds of connection, both through `sluice-net` (framed, checksummed, and opened only
//! by a peer that proves it knows a secret):
//!
//! * **control**: the coordinator connects to each worker's address with the cluster's
//!   secret; every frame is one JSON [`ToWorker`] or [`ToCoordinator`] message;
//! * **shuffle**: for each job a worker listens on an address of its own, opened only with
//!   the job's secret (which the coordinator made for the job and sent over the control
//!   connection). A request is a JSON [`ShuffleRequest`] frame: a task's output pushed to the
//!   worker that owns its partitions, or pulled from the worker that ran the task; the
//!   records follow as described in the `segments` module. A connection carries requests one
//!   after another: a pushing worker keeps it for its next push to the same worker (one per
//!   task thread), and the listener closes it after 30 s without a request.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sluice_api::{CounterValues, UserCounters};
use sluice_io::{IoError, Location};
use sluice_spec::JobSpec;

pub use crate::shipping::ShippedEntry;

/// Version of these messages; a worker refuses a coordinator of another.
pub const PROTOCOL_VERSION: u32 = 8;

/// An input file of a job, as the coordinator found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// Its location (a URI or a local path), as text.
    pub location: String,
    /// A local path's bytes, when they are not UTF-8 (a file name in Latin-1, say), which
    /// [`InputFile::location`] cannot carry whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_path: Option<Vec<u8>>,
    /// Its length in bytes.
    pub len: u64,
}

impl InputFile {
    /// The file at `location`, of `len` bytes.
    pub fn new(location: &Location, len: u64) -> InputFile {
        let local_path = location
            .as_local_path()
            .filter(|path| path.to_str().is_none())
            .map(|path| path.as_os_str().as_bytes().to_vec());
        InputFile {
            location: location.to_string(),
            local_path,
            len,
        }
    }

    /// Its location.
    ///
    /// # Errors
    /// [`IoError`] for a location that does not parse.
    pub fn location(&self) -> Result<Location, IoError> {
        let location = Location::parse(&self.location)?;
        Ok(match &self.local_path {
            Some(bytes) => {
                location.with_local_path(PathBuf::from(OsString::from_vec(bytes.clone())))
            }
            None => location,
        })
    }
}

/// A byte range of an input file that a map task reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRange {
    /// Index of the input file.
    pub file: usize,
    /// First byte of the range.
    pub start: u64,
    /// Length of the range.
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
    /// The size from which a last-stage partition is reduced as key ranges on several threads
    /// (`None`: never), as `--reduce-split` gave it.
    pub reduce_split_bytes: Option<u64>,
    /// The job's secret (hex): the worker's shuffle listener admits only peers that know it.
    pub job_secret: String,
    /// The directory the job was submitted from: a streaming job's programs are looked for
    /// there, when a worker has it.
    pub working_dir: String,
    /// The local files the job's command line names, shipped to the worker: their bytes
    /// follow this message (see the `shipping` module).
    #[serde(default)]
    pub files: Vec<ShippedEntry>,
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
    /// Get ready to run a job's tasks; the worker answers [`ToCoordinator::JobReady`]. The
    /// bytes of the files the job ships follow, as frames of their own.
    Start(Box<JobStart>),
    /// The shuffle addresses of the job's workers, by worker number (`None` for a worker
    /// lost); the last list replaces the earlier.
    Peers {
        /// `host:port` of each worker's shuffle listener.
        peers: Vec<Option<String>>,
        /// This worker's number.
        me: usize,
    },
    /// Which worker reduces each partition of stage `stage` (1-based): where the tasks that
    /// make the stage's input push it. The last table replaces the earlier.
    Owners {
        /// The stage.
        stage: usize,
        /// The worker of each partition.
        owners: Vec<usize>,
    },
    /// Run one attempt of a map task, and push its output to the owners of its partitions.
    Map {
        /// The task's number.
        task: usize,
        /// The attempt's number (distinct among the task's attempts on all workers).
        attempt: usize,
        /// The byte ranges the task reads, in order.
        ranges: Vec<InputRange>,
        /// Whether the ranges are a combined split (the task is told of its first range, as
        /// with one file's split, but a single range is read as Hadoop reads a
        /// `CombineFileSplit`'s).
        combined: bool,
    },
    /// Every task making stage `stage`'s input has run: push what is still held back for
    /// other workers (small outputs waiting to be batched), then answer
    /// [`ToCoordinator::Flushed`]. Sent to every worker before any is asked to seal, so that
    /// nothing sealing pulls is still on its way.
    Flush {
        /// The stage (1-based).
        stage: usize,
    },
    /// Every task making stage `stage`'s input has run: fetch what did not arrive of the
    /// partitions this worker owns (from `holders`), then seal the stage here. The worker
    /// answers [`ToCoordinator::Sealed`].
    Seal {
        /// The stage (1-based).
        stage: usize,
        /// For each task making the stage's input, the worker holding its output (`None`
        /// if that worker was lost).
        holders: Vec<Option<usize>>,
    },
    /// Run one attempt of a reduce task: partition `partition` of stage `stage` (1-based),
    /// over the stage's input this worker holds; push its output to the next stage's owners.
    Reduce {
        /// The stage.
        stage: usize,
        /// The partition.
        partition: usize,
        /// The attempt's number.
        attempt: usize,
    },
    /// Stage `stage` (1-based), sealed, takes more runs: tasks whose output was lost run
    /// again and push it. The next [`ToWorker::Seal`] seals it again.
    Reopen {
        /// The stage.
        stage: usize,
    },
    /// Stage `stage`'s input is read: let it go (and the outputs kept for it).
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
        /// The YARN container it runs in, if it does (`CONTAINER_ID`): what the cluster
        /// manager's messages about it name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        container: Option<String>,
    },
    /// The answer to [`ToWorker::Hello`] of a worker that works for another coordinator: it
    /// runs one job at a time, and says so at once rather than leave the hello unanswered.
    Busy {
        /// The address of the coordinator it works for.
        coordinator: String,
    },
    /// Ready for the job's tasks; its shuffle listener is at `shuffle`.
    JobReady {
        /// `host:port` of the worker's shuffle listener for this job.
        shuffle: String,
    },
    /// The answer to [`ToWorker::Flush`]: what was held back for stage `stage` has been
    /// pushed (or its push failed: it will be pulled).
    Flushed {
        /// The stage.
        stage: usize,
    },
    /// The answer to [`ToWorker::Seal`]: sealed, unless some tasks' output could not be
    /// had (their worker was lost): those run again, then the stage is sealed again.
    Sealed {
        /// The stage.
        stage: usize,
        /// Tasks whose output this worker lacks.
        missing: Vec<usize>,
        /// Why the first of them could not be had (a pull that failed, a full disk).
        #[serde(default)]
        why: Option<String>,
        /// Whether this worker itself has no room for them (its disk is full): it is then
        /// left out of the job, and its partitions go to the others.
        #[serde(default)]
        out_of_room: bool,
    },
    /// A task attempt has computed its output and is delivering it (keeping it, pushing it
    /// to the owners of its partitions): its thread is free for another task. Its
    /// [`ToCoordinator::Done`] (or `Failed`) follows.
    Ran {
        /// Which.
        task: TaskRef,
    },
    /// A task attempt succeeded: its output is delivered.
    Done {
        /// Which.
        task: TaskRef,
        /// The worker's counters for the job so far (all its successful attempts).
        counters: CounterValues,
        /// The worker's user counters for the job so far.
        user_counters: UserCounters,
        /// What this attempt counted itself: the job keeps it should the worker be lost and
        /// the task's output not be made again.
        #[serde(default)]
        task_counters: Box<CounterValues>,
        /// The user counters this attempt counted.
        #[serde(default)]
        task_user_counters: UserCounters,
    },
    /// The worker's counters for the job so far, about once a second while it has a job:
    /// progress between tasks.
    Progress {
        /// Its counters, running attempts' input read so far included.
        counters: CounterValues,
        /// Its user counters.
        user_counters: UserCounters,
        /// What its tasks noted for the user since its last report
        /// ([`JobStatus::task_note`](sluice_api::JobStatus::task_note)).
        #[serde(default)]
        notes: Vec<String>,
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
    Ended {
        /// What the worker's shuffle did for the job.
        shuffle: ShuffleStats,
        /// The most bytes the job reserved at once from the worker's budget, what its tasks
        /// hold outside their buffers included (as `JobReport::peak_memory_reserved`).
        #[serde(default)]
        peak_memory_reserved: u64,
        /// The worker process's peak resident set size during the job (`VmHWM`, reset when
        /// the job started where the kernel allows it, else the process's lifetime peak);
        /// `None` where the system does not tell.
        #[serde(default)]
        peak_rss_bytes: Option<u64>,
    },
}

/// What a worker's shuffle did for a job, and what the worker read from and wrote to its
/// local disks meanwhile.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShuffleStats {
    /// Bytes of records pushed to other workers (encoded).
    pub pushed_bytes: u64,
    /// Pushes that failed (their partitions were pulled instead).
    pub failed_pushes: u64,
    /// Pushes made (transfers: a batch of small outputs is one).
    #[serde(default)]
    pub pushes: u64,
    /// Task outputs pushed in a batch with others to the same worker.
    #[serde(default)]
    pub batched_outputs: u64,
    /// Connections opened for them (a connection is kept for the next push to its worker).
    #[serde(default)]
    pub push_connections: u64,
    /// Bytes of records received by pushes.
    pub received_bytes: u64,
    /// Of those, bytes that had to go to a spill file (no room in memory).
    pub received_to_disk_bytes: u64,
    /// Bytes of the copies of this worker's task outputs, kept for pulls, that moved to disk
    /// to make room in memory (map-side writes: read again only if something failed).
    #[serde(default)]
    pub kept_to_disk_bytes: u64,
    /// Bytes of records pulled from other workers.
    pub pulled_bytes: u64,
    /// Microseconds during which at least one of this worker's pushes was under way:
    /// `pushed_bytes` over this time is the rate its pushes got out of its link whenever it
    /// had something to push.
    #[serde(default)]
    pub pushing_micros: u64,
    /// Microseconds during which at least one push to this worker was being received.
    #[serde(default)]
    pub receiving_micros: u64,
    /// Bytes the worker process read from storage (`/proc/self/io` `read_bytes`).
    pub disk_read_bytes: u64,
    /// Bytes the worker process wrote to storage (`write_bytes`).
    pub disk_write_bytes: u64,
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

impl std::fmt::Display for TaskRef {
    /// `map task 3 (attempt 1)`, `reduce task 2 (attempt 1)`, or for a job of several reduce
    /// stages `reduce task 2 of stage 2 (attempt 1)`: attempts counted from 1, as in messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let attempt = self.attempt.saturating_add(1);
        match self.stage {
            0 => write!(f, "map task {} (attempt {attempt})", self.task),
            1 => write!(f, "reduce task {} (attempt {attempt})", self.task),
            stage => write!(
                f,
                "reduce task {} of stage {stage} (attempt {attempt})",
                self.task
            ),
        }
    }
}

/// A request on a connection to a worker's shuffle listener (the first frame, and the frame
/// after each transfer).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShuffleRequest {
    /// Here come some tasks' outputs for stage `stage` (1-based), one after the other: one
    /// task's, or several small ones batched.
    Push {
        /// The job's id, checked against the listener's.
        job_id: String,
        /// The stage the outputs are input of.
        stage: usize,
        /// The tasks, in the order their outputs follow.
        tasks: Vec<PushedTask>,
    },
    /// Send task `task`'s output for `partitions` of stage `stage`.
    Pull {
        /// The job's id.
        job_id: String,
        /// The stage.
        stage: usize,
        /// The task.
        task: usize,
        /// The partitions wanted (ascending).
        partitions: Vec<usize>,
    },
}

/// One task's output in a [`ShuffleRequest::Push`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushedTask {
    /// The task that made it.
    pub task: usize,
    /// The partitions sent (ascending); those without records have none.
    pub partitions: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_refs_read_as_messages_name_tasks() {
        let task = |stage, task, attempt| TaskRef {
            stage,
            task,
            attempt,
        };
        assert_eq!(task(0, 3, 0).to_string(), "map task 3 (attempt 1)");
        assert_eq!(task(1, 2, 1).to_string(), "reduce task 2 (attempt 2)");
        assert_eq!(
            task(2, 0, 0).to_string(),
            "reduce task 0 of stage 2 (attempt 1)"
        );
    }
}
