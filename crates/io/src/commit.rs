//! Job output behind a trait: Hadoop's `OutputCommitter` protocol.
//!
//! A job's output must appear whole or not at all, but how that is done depends on the store:
//! a rename of a directory where renames are atomic (local, HDFS), other tricks where they
//! are not (S3's multipart uploads completed at job commit). [`JobCommitter`] is the protocol
//! the engine follows; [`LocalRenameCommitter`] implements it for the local file system.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::output::{is_plain_name, is_temp_dir_of, write_error};
use crate::{DirectWriter, IoError, LocalStorage, Location, OutputCommitter, StorageWriter};

/// One attempt of a task at writing one part file: the file's name in the output directory
/// (`part-r-00003`, `part-00000.gz`) and the attempt's number. Two attempts of one task (a
/// retry, a speculative copy) write apart, and only the committed one is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartAttempt<'a> {
    /// The part file's name: one plain file name, no `/`.
    pub name: &'a str,
    /// The attempt's number, distinct among the attempts of one task.
    pub attempt: u32,
}

impl<'a> PartAttempt<'a> {
    /// Attempt `attempt` at part file `name`.
    pub fn new(name: &'a str, attempt: u32) -> PartAttempt<'a> {
        PartAttempt { name, attempt }
    }
}

/// Writes a job's output so that it becomes visible whole, with `_SUCCESS`, or not at all:
/// Hadoop's `OutputCommitter` protocol.
///
/// The engine calls, in order: [`setup_job`](JobCommitter::setup_job) once before any task;
/// for each task attempt, [`create_part`](JobCommitter::create_part), then (once the writer is
/// finished) [`commit_task`](JobCommitter::commit_task) if the attempt succeeded or
/// [`abort_task`](JobCommitter::abort_task) if it failed; at the end
/// [`commit_job`](JobCommitter::commit_job) or [`abort_job`](JobCommitter::abort_job). Task
/// methods take `&self` and may be called from many threads at once.
///
/// Every implementation documents what a job killed at any point (no destructor run) leaves
/// visible at the output location; the contract is that the output never shows part of a
/// job's part files, and `_SUCCESS` only appears after all of them.
///
/// In a cluster, the process that sets the job up also commits or aborts it, and workers in
/// other processes run its tasks: each holds a committer *attached* to the running job
/// ([`Stores::attach_committer`](crate::Stores::attach_committer), given the owner's
/// [`staging`](JobCommitter::staging)), whose task methods write exactly where the owner's
/// would. An attached committer refuses [`setup_job`](JobCommitter::setup_job) and
/// [`commit_job`](JobCommitter::commit_job), its [`abort_job`](JobCommitter::abort_job) does
/// nothing, and dropping it removes nothing: the job's output is the owner's to publish or
/// discard.
///
/// (Named `JobCommitter` because [`OutputCommitter`] is the local committer's name already.)
pub trait JobCommitter: Send + Sync {
    /// Where the output becomes visible.
    fn output(&self) -> &Location;

    /// Prepares the job's output: checks that nothing is at the output location yet and
    /// creates the staging area.
    ///
    /// # Errors
    /// [`IoError::OutputExists`] if the output location is taken; [`IoError::Write`] if the
    /// staging area cannot be created or the job was set up already.
    fn setup_job(&mut self) -> Result<(), IoError>;

    /// A writer of `part`'s file for one task attempt, buffering about `buffer` bytes per
    /// chunk. What it writes is not part of the output until
    /// [`commit_task`](JobCommitter::commit_task) (and then [`commit_job`](JobCommitter::commit_job)).
    ///
    /// # Errors
    /// [`IoError::Write`] if the file cannot be created, the name is not a plain file name,
    /// or the job is not set up.
    fn create_part(&self, part: PartAttempt<'_>, buffer: usize) -> Result<StorageWriter, IoError>;

    /// Makes the attempt's file (its writer finished) the task's part file, replacing any
    /// earlier committed attempt's.
    ///
    /// # Errors
    /// [`IoError::Write`] if the file cannot be moved (or the attempt wrote no file).
    fn commit_task(&self, part: PartAttempt<'_>) -> Result<(), IoError>;

    /// Discards what the attempt wrote (nothing to discard is fine).
    ///
    /// # Errors
    /// [`IoError::Write`] if the attempt's file exists and cannot be removed.
    fn abort_task(&self, part: PartAttempt<'_>) -> Result<(), IoError>;

    /// Makes the committed part files visible at the output location at once, then writes
    /// `_SUCCESS`. Uncommitted attempts' files are discarded.
    ///
    /// # Errors
    /// [`IoError::OutputExists`] if the output location was taken meanwhile;
    /// [`IoError::Write`] otherwise (also when the job was not set up, or is finished). On
    /// error nothing is left at the output location.
    fn commit_job(&mut self) -> Result<(), IoError>;

    /// Discards everything the job wrote. A job never set up has nothing to discard.
    ///
    /// # Errors
    /// [`IoError::Write`] if the staging area cannot be removed, or the job was committed.
    fn abort_job(&mut self) -> Result<(), IoError>;

    /// Where task attempts write while the job runs: what a committer attached to the job in
    /// another process is given (see [`Stores::attach_committer`](crate::Stores::attach_committer)).
    ///
    /// `None` before the job is set up and once it is committed or aborted, and always for a
    /// committer whose task side cannot run in another process.
    fn staging(&self) -> Option<Location> {
        None
    }
}

/// The committer of an output at `output`: the rename committer for a local directory; other
/// stores are refused with the reason, as [`storage_for`](crate::storage_for) refuses them.
///
/// # Errors
/// [`IoError::UnsupportedScheme`] for a location on a store that is not built in, or the
/// rename committer's own errors.
pub fn committer_for(output: &Location) -> Result<Box<dyn JobCommitter>, IoError> {
    match output.scheme() {
        crate::Scheme::File => Ok(Box::new(LocalRenameCommitter::new(output)?)),
        _ => Err(LocalStorage::refuse(output)),
    }
}

/// The local file system's committer: part files are staged in a hidden sibling of the output
/// directory, which is synced and renamed into place at job commit. Built on
/// [`OutputCommitter`], which is the same commit without the task protocol.
///
/// Layout while the job runs, for output `out`: the staging directory `.out.sluice-tmp-PID`
/// (hidden: input discovery never reads it) holds committed part files under their names, and
/// each attempt writes `_temporary/NAME.ATTEMPT` inside it; committing a task renames that
/// file to `NAME` (atomic within a directory).
///
/// What is visible at `out` if the job stops at any point:
/// * a job that fails or is aborted, or whose committer is dropped without a commit (an error
///   unwinding, a panic), leaves nothing: the staging directory is removed;
/// * a job killed outright (`SIGKILL`, a power cut) before its commit leaves nothing at `out`,
///   and its staging directory behind as a hidden sibling, which the next job writing `out`
///   removes (see [`remove_abandoned`](crate::remove_abandoned));
/// * the commit syncs the part files, then renames the staging directory to `out` in one
///   step, so `out` appears with every committed part file complete or not at all; a kill
///   between the rename and `_SUCCESS` leaves `out` complete but without `_SUCCESS`, which
///   readers that wait for `_SUCCESS` do not take (and a rerun refuses, as `out` exists);
/// * part files of attempts that were not committed never appear in `out`.
///
/// A committer [attached](LocalRenameCommitter::attach) to the staging directory (in a worker
/// process on the same machine, or one sharing the file system) writes and commits task
/// attempts there; the process that set the job up commits or aborts it.
#[derive(Debug)]
pub struct LocalRenameCommitter {
    output: Location,
    path: PathBuf,
    state: State,
}

#[derive(Debug)]
enum State {
    New,
    Running(OutputCommitter),
    /// Attached to the staging directory `dir` (at `staging`) of a job that another committer
    /// set up: task methods only, and nothing of the job's is removed on drop.
    Attached {
        dir: PathBuf,
        staging: Location,
    },
    Committed,
    Aborted,
}

/// The staging area's subdirectory for attempts' files (hidden, and removed at commit).
const ATTEMPTS: &str = "_temporary";

impl LocalRenameCommitter {
    /// A committer of output at `output`, a local location; nothing is touched until
    /// [`JobCommitter::setup_job`].
    ///
    /// # Errors
    /// [`IoError::UnsupportedScheme`] for a location of another store.
    pub fn new(output: &Location) -> Result<LocalRenameCommitter, IoError> {
        let path = output
            .as_local_path()
            .ok_or_else(|| LocalStorage::refuse(output))?;
        Ok(LocalRenameCommitter {
            output: output.clone(),
            path: path.to_path_buf(),
            state: State::New,
        })
    }

    /// A committer attached to the running job whose output is at `output` and whose staging
    /// directory is `staging` (its owner's [`JobCommitter::staging`]), for running the job's
    /// tasks in another process: see [`JobCommitter`]. Nothing is touched here; if the job is
    /// not running (`staging` is gone), its task methods fail.
    ///
    /// # Errors
    /// [`IoError::UnsupportedScheme`] if `output` is not local; [`IoError::Write`] if
    /// `staging` is not a staging directory the owner's committer would have made for
    /// `output` (`.NAME.sluice-tmp-PID` in the same directory), so that a worker sent a wrong
    /// location writes nothing anywhere.
    pub fn attach(output: &Location, staging: &Location) -> Result<LocalRenameCommitter, IoError> {
        let mut committer = LocalRenameCommitter::new(output)?;
        let Some(dir) = staging
            .as_local_path()
            .filter(|dir| is_temp_dir_of(&committer.path, dir))
        else {
            let name = committer
                .path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy();
            let source = io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "not the staging directory of output {output} (a hidden .{name}.sluice-tmp-PID \
                     beside it)"
                ),
            );
            return Err(write_error(&staging.error_path(), source));
        };
        committer.state = State::Attached {
            dir: dir.to_path_buf(),
            staging: staging.clone(),
        };
        Ok(committer)
    }

    /// The staging directory, once the job is set up (or, attached, the job's).
    pub fn temp_dir(&self) -> Option<&Path> {
        match &self.state {
            State::Running(committer) => Some(committer.temp_dir()),
            State::Attached { dir, .. } => Some(dir),
            _ => None,
        }
    }

    /// The staging directory task attempts write into, if they may write now.
    fn task_dir(&self) -> Result<&Path, IoError> {
        self.temp_dir().ok_or_else(|| self.misuse(&self.state))
    }

    fn misuse(&self, state: &State) -> IoError {
        let what = match state {
            State::New => "the job's output is not set up",
            State::Running(_) => "the job's output is set up already",
            State::Attached { .. } => {
                "the job's output is committed by the process that set it up (this committer \
                 is attached to it, for its tasks)"
            }
            State::Committed => "the job's output is committed already",
            State::Aborted => "the job's output was aborted",
        };
        write_error(
            &self.path,
            io::Error::new(io::ErrorKind::InvalidInput, what),
        )
    }

    /// The file `part`'s attempt writes, and the part file's final name in the staging
    /// directory.
    fn attempt_paths(&self, part: PartAttempt<'_>) -> Result<(PathBuf, PathBuf), IoError> {
        let temp = self.task_dir()?;
        let final_path = temp.join(part.name);
        if !is_plain_name(part.name) {
            let source = io::Error::new(io::ErrorKind::InvalidInput, "not a plain file name");
            return Err(write_error(&final_path, source));
        }
        let attempt = temp
            .join(ATTEMPTS)
            .join(format!("{}.{}", part.name, part.attempt));
        Ok((attempt, final_path))
    }
}

impl JobCommitter for LocalRenameCommitter {
    fn output(&self) -> &Location {
        &self.output
    }

    fn setup_job(&mut self) -> Result<(), IoError> {
        if !matches!(self.state, State::New) {
            return Err(self.misuse(&self.state));
        }
        let committer = OutputCommitter::create(&self.path)?;
        let attempts = committer.temp_dir().join(ATTEMPTS);
        fs::create_dir(&attempts).map_err(|source| write_error(&attempts, source))?;
        self.state = State::Running(committer);
        Ok(())
    }

    fn create_part(&self, part: PartAttempt<'_>, buffer: usize) -> Result<StorageWriter, IoError> {
        let (attempt, _) = self.attempt_paths(part)?;
        // A file of an earlier run of the same attempt number: start over.
        match fs::remove_file(&attempt) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(write_error(&attempt, e));
            }
            _ => {}
        }
        let writer =
            DirectWriter::create_with(&attempt, buffer).map_err(|e| write_error(&attempt, e))?;
        Ok(StorageWriter::from(writer))
    }

    fn commit_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        let (attempt, final_path) = self.attempt_paths(part)?;
        fs::rename(&attempt, &final_path).map_err(|source| write_error(&final_path, source))
    }

    fn abort_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        let (attempt, _) = self.attempt_paths(part)?;
        match fs::remove_file(&attempt) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(write_error(&attempt, e)),
            _ => Ok(()),
        }
    }

    fn commit_job(&mut self) -> Result<(), IoError> {
        if !matches!(self.state, State::Running(_)) {
            return Err(self.misuse(&self.state));
        }
        // From here on the job ends either committed or aborted.
        let State::Running(committer) = std::mem::replace(&mut self.state, State::Aborted) else {
            return Err(self.misuse(&State::Aborted));
        };
        // Attempts that were not committed. On error the committer is dropped, which removes
        // the staging directory.
        let attempts = committer.temp_dir().join(ATTEMPTS);
        match fs::remove_dir_all(&attempts) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                return Err(write_error(&attempts, e));
            }
            _ => {}
        }
        committer.commit()?;
        self.state = State::Committed;
        Ok(())
    }

    fn abort_job(&mut self) -> Result<(), IoError> {
        match std::mem::replace(&mut self.state, State::Aborted) {
            State::Running(committer) => committer.abort(),
            State::New | State::Aborted => Ok(()),
            State::Committed => {
                self.state = State::Committed;
                Err(self.misuse(&State::Committed))
            }
            // The owner discards the job; a worker giving up on it leaves the other workers'
            // attempts alone.
            attached @ State::Attached { .. } => {
                self.state = attached;
                Ok(())
            }
        }
    }

    fn staging(&self) -> Option<Location> {
        match &self.state {
            State::Running(committer) => Some(
                self.output
                    .with_local_path(committer.temp_dir().to_path_buf()),
            ),
            State::Attached { staging, .. } => Some(staging.clone()),
            _ => None,
        }
    }
}
