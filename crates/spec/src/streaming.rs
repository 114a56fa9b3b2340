//! A streaming job as data: its command line, and what building it takes from the process it
//! was submitted from.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_api::JobStatus;
use sluice_io::Stores;
use sluice_streaming::{Action, ShippedFiles, StreamingJob, Submission};

use crate::{hex, SpecError};

/// A Hadoop Streaming job: the command line after `sluice streaming`, exactly as given, and
/// what [`sluice_streaming::build`] would otherwise read from the process it runs in
/// ([`Submission`]).
///
/// The environment the programs inherit (beyond `PATH`, the job configuration and `-cmdenv`)
/// and the temporary directory they get (`TMPDIR`) are those of the process that runs them, as
/// a Hadoop task's are the node's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[non_exhaustive]
pub struct StreamingSpec {
    /// The arguments after `streaming`: generic options, then streaming options.
    pub args: Vec<String>,
    /// The directory the job was submitted from: its relative paths (`-input`, `-output`,
    /// `-files`, `-conf`) are resolved there, and its programs looked for there.
    #[serde(with = "hex::path")]
    pub working_dir: PathBuf,
    /// `PATH` where the job was submitted: where its programs are found.
    pub path: Option<String>,
    /// The job's id (`job_<digits>_<digits>`), the same in every process that builds it: the
    /// programs see it.
    pub job_id: String,
    /// Copies, in this process's machine, of the local files the command line names, when they
    /// were shipped here from the submitting machine (see
    /// [`sluice_streaming::StreamingArgs::local_files`]). Set by the process that rebuilds the
    /// job; never part of the description sent.
    #[serde(skip)]
    pub shipped: ShippedFiles,
    /// Where the job's scratch directory goes in this process (see
    /// [`Submission::scratch_root`]). Set by the process that rebuilds the job; never part of
    /// the description sent.
    #[serde(skip)]
    pub scratch_root: Option<PathBuf>,
    /// Where the programs' logs go in this process (see [`Submission::log_root`]). Set by the
    /// process that rebuilds the job; never part of the description sent.
    #[serde(skip)]
    pub log_root: Option<PathBuf>,
}

impl StreamingSpec {
    /// The job `args` describe, submitted from this process: its working directory and `PATH`,
    /// and a new job id.
    pub fn new(args: Vec<String>) -> StreamingSpec {
        let Submission {
            working_dir,
            path,
            job_id,
            ..
        } = Submission::current();
        StreamingSpec {
            args,
            working_dir,
            path,
            job_id,
            shipped: ShippedFiles::default(),
            scratch_root: None,
            log_root: None,
        }
    }

    /// What the job takes from where it was submitted, as [`sluice_streaming::build_with`]
    /// takes it.
    pub fn submission(&self) -> Submission {
        Submission {
            working_dir: self.working_dir.clone(),
            path: self.path.clone(),
            job_id: self.job_id.clone(),
            shipped: self.shipped.clone(),
            scratch_root: self.scratch_root.clone(),
            log_root: self.log_root.clone(),
        }
    }

    /// The local files and directories the job reads from the machine it is submitted from
    /// (`-conf`, `-files`, `-file`), as the command line names them.
    ///
    /// # Errors
    /// [`SpecError::Streaming`] for a command line that does not parse.
    pub fn local_files(&self) -> Result<Vec<String>, SpecError> {
        Ok(sluice_streaming::parse_shipped_args(&self.args, &self.shipped)?.local_files())
    }

    /// Builds the job: parses the command line and builds it as submitted. The job gets a
    /// scratch directory of its own (see [`StreamingJob::cleanup`]).
    ///
    /// # Errors
    /// [`SpecError::WorkingDir`] unless this process runs in the spec's working directory
    /// (the command line's relative paths are opened from the current directory);
    /// [`SpecError::NotAJob`] for `-help` or `-info`; [`SpecError::Streaming`] for a command
    /// line that does not parse or a job that does not build, with the error `sluice
    /// streaming` reports.
    pub fn build(&self, status: Arc<JobStatus>) -> Result<StreamingJob, SpecError> {
        self.build_in(&Stores::local(), status)
    }

    /// [`StreamingSpec::build`] for a job whose data is on `stores` (local files, and the
    /// remote stores a caller connected).
    ///
    /// # Errors
    /// As [`StreamingSpec::build`].
    pub fn build_in(
        &self,
        stores: &Stores,
        status: Arc<JobStatus>,
    ) -> Result<StreamingJob, SpecError> {
        // The same fallback as `Submission::current`, so that a process whose directory is gone
        // still builds the jobs it submits.
        let current = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        if !same_dir(&current, &self.working_dir) {
            return Err(SpecError::WorkingDir {
                submitted: self.working_dir.clone(),
                current,
            });
        }
        let args = sluice_streaming::parse_shipped_args(&self.args, &self.shipped)?;
        if args.action != Action::Run {
            return Err(SpecError::NotAJob);
        }
        Ok(sluice_streaming::build_with(
            &args,
            &self.submission(),
            stores,
            status,
        )?)
    }
}

/// Whether `a` and `b` name the same directory (equal paths, or the same file by device and
/// inode: one may be reached through a symbolic link).
fn same_dir(a: &Path, b: &Path) -> bool {
    if a == b {
        return true;
    }
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}
