//! The job's output: its committer, set up before any task and aborted unless the job commits.

use sluice_io::{IoError, JobCommitter, Location, Stores};

/// The job's output committer, aborted unless the job commits: a failed job leaves no output.
pub(crate) struct JobOutput {
    pub(crate) committer: Box<dyn JobCommitter>,
    committed: bool,
}

impl JobOutput {
    /// The committer of `output`, set up: an existing output is refused here, before any
    /// task runs.
    pub(crate) fn set_up(stores: &Stores, output: &Location) -> Result<JobOutput, IoError> {
        let mut committer = stores.committer(output)?;
        committer.setup_job()?;
        Ok(JobOutput {
            committer,
            committed: false,
        })
    }

    /// Makes the output visible; returns where it is.
    pub(crate) fn commit(mut self) -> Result<Location, IoError> {
        self.committer.commit_job()?;
        self.committed = true;
        Ok(self.committer.output().clone())
    }
}

impl Drop for JobOutput {
    fn drop(&mut self) {
        if !self.committed {
            // Nothing better to do with a failure to clean up than to leave the hidden
            // attempt directory behind: the job's own error is the one to report.
            let _ = self.committer.abort_job();
        }
    }
}
