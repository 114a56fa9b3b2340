//! The job's output: its committer, set up before any task and aborted unless the job commits.

use sluice_api::{Job, OutputFormat};
use sluice_io::{DiscardingCommitter, IoError, JobCommitter, Location, Stores};

/// A job's output committer, set up, and aborted unless the job commits: a failed job leaves
/// no output.
///
/// [`run_job`](crate::run_job) holds one; work that is not a MapReduce job but writes a job's
/// output (TeraGen's generator, a generated corpus) holds its own, so that its output appears
/// whole, with `_SUCCESS`, or not at all, on any store.
pub struct JobOutput {
    pub(crate) committer: Box<dyn JobCommitter>,
    committed: bool,
}

impl JobOutput {
    /// The committer of `output` from `stores`, set up: an existing output is refused here,
    /// before anything is written.
    ///
    /// # Errors
    /// [`IoError::OutputExists`] if something is at `output`; the store's errors in setting
    /// up the output ([`IoError::UnsupportedScheme`], [`IoError::Write`], ...).
    pub fn set_up(stores: &Stores, output: &Location) -> Result<JobOutput, IoError> {
        let mut committer = stores.committer(output)?;
        committer.setup_job()?;
        Ok(JobOutput {
            committer,
            committed: false,
        })
    }

    /// The committer of `job`'s output at `output`, set up: [`JobOutput::set_up`], except that
    /// a job whose records go nowhere ([`OutputFormat::Discard`]) takes an existing output
    /// directory as it is and leaves only `_SUCCESS` in it, as Hadoop's `NullOutputFormat`
    /// does.
    ///
    /// # Errors
    /// As for [`JobOutput::set_up`]; a discarding job's output is refused only when it cannot
    /// be a directory ([`IoError::CreateOutput`]).
    pub fn set_up_for(job: &Job, stores: &Stores, output: &Location) -> Result<JobOutput, IoError> {
        if job.output != OutputFormat::Discard {
            return JobOutput::set_up(stores, output);
        }
        let mut committer = DiscardingCommitter::new(Box::new(stores.clone()), output.clone());
        committer.setup_job()?;
        Ok(JobOutput {
            committer: Box::new(committer),
            committed: false,
        })
    }

    /// The committer, for its task methods
    /// ([`create_part`](JobCommitter::create_part), [`commit_task`](JobCommitter::commit_task),
    /// [`abort_task`](JobCommitter::abort_task)); the job's own are this type's to call.
    pub fn committer(&self) -> &dyn JobCommitter {
        &*self.committer
    }

    /// Where the output becomes visible.
    pub fn location(&self) -> &Location {
        self.committer.output()
    }

    /// Makes the output visible; returns where it is.
    ///
    /// # Errors
    /// The committer's [`commit_job`](JobCommitter::commit_job) errors; the job is then
    /// aborted, leaving nothing at the output location.
    pub fn commit(mut self) -> Result<Location, IoError> {
        self.committer.commit_job()?;
        self.committed = true;
        Ok(self.committer.output().clone())
    }
}

impl std::fmt::Debug for JobOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JobOutput")
            .field("output", self.committer.output())
            .field("committed", &self.committed)
            .finish()
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
