//! What goes wrong between machines.

use sluice_api::ExecError;
use sluice_net::NetError;

/// Why a cluster job, or a worker, failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// The network failed: a peer could not be reached, did not authenticate, or sent a
    /// corrupt frame.
    #[error(transparent)]
    Net(#[from] NetError),
    /// A peer said something this side does not understand or did not expect.
    #[error("{peer}: {reason}")]
    Protocol {
        /// The peer's address.
        peer: String,
        /// What was wrong.
        reason: String,
    },
    /// A worker went away while the job needed it.
    #[error("worker {worker} was lost: {reason}")]
    WorkerLost {
        /// The worker (`host (address)`).
        worker: String,
        /// What was seen.
        reason: String,
    },
    /// The job could not be set up on a worker.
    #[error("worker {worker} cannot run the job: {error}")]
    Worker {
        /// The worker.
        worker: String,
        /// Its error, with causes.
        error: String,
    },
    /// The job failed (a task failed its last attempt, or the output could not be committed).
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// The worker was asked to stop (a signal), and ended its session.
    #[error("the worker was asked to stop")]
    Stopped,
    /// This process could not set itself up (a listener, a runtime, a directory).
    #[error("{0}")]
    Setup(String),
}
