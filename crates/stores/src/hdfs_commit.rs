//! Atomic job output on HDFS: part files staged in a hidden directory beside the output,
//! which is renamed into place at job commit.
//!
//! This is Hadoop's `FileOutputCommitter` idea (task attempts write apart, a committed
//! attempt's file is renamed into the job's staging area), with one change that makes the
//! whole output appear at once: instead of moving the part files into the output directory
//! one by one at job commit, the staging directory *is* the output directory-to-be, and one
//! rename (atomic on the name node) publishes it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sluice_io::{IoError, JobCommitter, Location, PartAttempt, Storage, StorageWriter};

use std::sync::Arc;

use crate::error::{io_error, write_error};
use crate::journal::{note, Journal, JournalEntry};
use crate::{is_plain_name, HdfsStorage};

/// The staging directory's subdirectory for attempts' files.
const ATTEMPTS: &str = "_temporary";

/// The committer of a job's output on HDFS.
///
/// Layout while the job runs, for output `/data/out`: the staging directory
/// `/data/.out.sluice-tmp-PID-N` (hidden: input discovery never reads it) holds committed
/// part files under their names; attempt `A` of part `NAME` writes `_temporary/NAME.A` inside
/// it, and committing the task renames that file to `NAME`.
///
/// What is visible at the output if the job stops at any point:
/// * a failed or aborted job, or one whose committer is dropped without a commit, leaves
///   nothing: the staging directory is deleted;
/// * a job killed outright before its commit leaves nothing at the output, and its staging
///   directory behind as a hidden sibling (deleted by `sluice`'s clean-up watcher when one
///   runs, else to be removed by hand);
/// * the commit renames the staging directory to the output in one name-node operation, so
///   the output appears with every part file complete or not at all; `_SUCCESS` is written
///   right after (a kill between the two leaves the output without `_SUCCESS`, which readers
///   that wait for `_SUCCESS` do not take).
#[derive(Debug)]
pub struct HdfsRenameCommitter {
    storage: HdfsStorage,
    output: Location,
    staging: Location,
    state: State,
    journal: Option<Arc<Journal>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    New,
    Running,
    Committed,
    Aborted,
}

impl HdfsRenameCommitter {
    /// A committer of output at `output` on `storage`'s name node; nothing is touched until
    /// [`JobCommitter::setup_job`].
    ///
    /// # Errors
    /// [`IoError::Write`] if `output` has no name (the root).
    pub fn new(storage: HdfsStorage, output: &Location) -> Result<HdfsRenameCommitter, IoError> {
        let (Some(parent), Some(name)) = (output.parent(), output.file_name()) else {
            return Err(write_error(
                output,
                io_error(std::io::ErrorKind::InvalidInput, "the output needs a name"),
            ));
        };
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let nonce = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
            ^ SEQUENCE.fetch_add(1, Ordering::Relaxed);
        let staging = parent.join(format!(
            ".{}.sluice-tmp-{}-{nonce:x}",
            name.to_string_lossy(),
            std::process::id()
        ));
        Ok(HdfsRenameCommitter {
            storage,
            output: output.clone(),
            staging,
            state: State::New,
            journal: None,
        })
    }

    /// The same committer, recording its staging directory in `journal` (see [`Journal`]).
    #[must_use]
    pub fn with_journal(mut self, journal: Option<Arc<Journal>>) -> HdfsRenameCommitter {
        self.journal = journal;
        self
    }

    fn note(&self, entry: JournalEntry) {
        note(self.journal.as_deref(), entry);
    }

    /// The staging directory (hidden, beside the output).
    pub fn staging(&self) -> &Location {
        &self.staging
    }

    fn misuse(&self) -> IoError {
        let what = match self.state {
            State::New => "the job's output is not set up",
            State::Running => "the job's output is set up already",
            State::Committed => "the job's output is committed already",
            State::Aborted => "the job's output was aborted",
        };
        write_error(
            &self.output,
            io_error(std::io::ErrorKind::InvalidInput, what),
        )
    }

    fn attempt(&self, part: PartAttempt<'_>) -> Result<Location, IoError> {
        if self.state != State::Running {
            return Err(self.misuse());
        }
        if !is_plain_name(part.name) {
            return Err(write_error(
                &self.staging.join(part.name),
                io_error(std::io::ErrorKind::InvalidInput, "not a plain file name"),
            ));
        }
        Ok(self
            .staging
            .join(ATTEMPTS)
            .join(format!("{}.{}", part.name, part.attempt)))
    }
}

impl JobCommitter for HdfsRenameCommitter {
    fn output(&self) -> &Location {
        &self.output
    }

    fn setup_job(&mut self) -> Result<(), IoError> {
        if self.state != State::New {
            return Err(self.misuse());
        }
        if self.storage.status(&self.output)?.is_some() {
            return Err(IoError::OutputExists {
                path: self.output.error_path(),
            });
        }
        self.note(JournalEntry::Staging {
            location: self.staging.to_string(),
        });
        self.storage.mkdirs(&self.staging.join(ATTEMPTS))?;
        self.state = State::Running;
        Ok(())
    }

    fn create_part(&self, part: PartAttempt<'_>, _buffer: usize) -> Result<StorageWriter, IoError> {
        let attempt = self.attempt(part)?;
        // A file of an earlier run of the same attempt number is replaced.
        self.storage.create_file(&attempt, true)
    }

    fn commit_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        let attempt = self.attempt(part)?;
        self.storage
            .rename(&attempt, &self.staging.join(part.name), true)
    }

    fn abort_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        let attempt = self.attempt(part)?;
        self.storage.delete_tree(&attempt).map(drop)
    }

    fn commit_job(&mut self) -> Result<(), IoError> {
        if self.state != State::Running {
            return Err(self.misuse());
        }
        // From here on the job ends committed or aborted; on error the staging is deleted.
        self.state = State::Aborted;
        let result = (|| {
            self.storage.delete_tree(&self.staging.join(ATTEMPTS))?;
            match self.storage.rename(&self.staging, &self.output, false) {
                Ok(()) => {}
                Err(e) if self.storage.status(&self.output)?.is_some() => {
                    drop(e);
                    return Err(IoError::OutputExists {
                        path: self.output.error_path(),
                    });
                }
                Err(e) => return Err(e),
            }
            self.note(JournalEntry::Published {
                location: self.output.to_string(),
            });
            let success = self.output.join("_SUCCESS");
            match self
                .storage
                .create_file(&success, true)
                .and_then(|w| w.finish().map_err(|e| write_error(&success, e)))
            {
                Ok(_) => Ok(()),
                Err(e) => {
                    let _ = self.storage.delete_tree(&self.output);
                    Err(e)
                }
            }
        })();
        match result {
            Ok(()) => {
                self.state = State::Committed;
                self.note(JournalEntry::Done);
                Ok(())
            }
            Err(e) => {
                if self.storage.delete_tree(&self.staging).is_ok() {
                    self.note(JournalEntry::Done);
                }
                Err(e)
            }
        }
    }

    fn abort_job(&mut self) -> Result<(), IoError> {
        match self.state {
            State::Running => {
                self.state = State::Aborted;
                self.storage.delete_tree(&self.staging)?;
                self.note(JournalEntry::Done);
                Ok(())
            }
            State::New | State::Aborted => {
                self.state = State::Aborted;
                Ok(())
            }
            State::Committed => Err(self.misuse()),
        }
    }
}

impl Drop for HdfsRenameCommitter {
    fn drop(&mut self) {
        if self.state == State::Running {
            let _ = self.storage.delete_tree(&self.staging);
        }
    }
}
