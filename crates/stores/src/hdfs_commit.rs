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
///
/// A committer [attached](HdfsRenameCommitter::attach) to the staging directory (in a worker
/// process) writes and commits task attempts there; the process that set the job up commits
/// or aborts it.
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
    /// Attached to the staging directory of a job another committer set up: task methods
    /// only, and nothing of the job's is deleted on drop.
    Attached,
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
            "{}{}-{nonce:x}",
            staging_prefix(name),
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

    /// A committer attached to the running job whose output is at `output` on `storage`'s
    /// name node and whose staging directory is `staging` (its owner's
    /// [`JobCommitter::staging`]), for running the job's tasks in another process: see
    /// [`JobCommitter`]. Nothing is touched here; if the job is not running (`staging` is
    /// gone), its task methods fail.
    ///
    /// # Errors
    /// [`IoError::Write`] if `output` has no name, or `staging` is not a staging directory
    /// [`HdfsRenameCommitter::new`] would make for `output` (`.NAME.sluice-tmp-PID-N` in the
    /// same directory of the same name node), so that a worker sent a wrong location writes
    /// nothing anywhere.
    pub fn attach(
        storage: HdfsStorage,
        output: &Location,
        staging: &Location,
    ) -> Result<HdfsRenameCommitter, IoError> {
        let Some(name) = output.file_name() else {
            return Err(write_error(
                output,
                io_error(std::io::ErrorKind::InvalidInput, "the output needs a name"),
            ));
        };
        if !is_staging_of(output, staging) {
            return Err(write_error(
                staging,
                io_error(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "not the staging directory of output {output} (a hidden \
                         {}PID-N beside it)",
                        staging_prefix(name)
                    ),
                ),
            ));
        }
        // No journal: the staging directory is the owner's, and so is cleaning it up should
        // the job die.
        Ok(HdfsRenameCommitter {
            storage,
            output: output.clone(),
            staging: staging.clone(),
            state: State::Attached,
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

    fn misuse(&self) -> IoError {
        let what = match self.state {
            State::New => "the job's output is not set up",
            State::Running => "the job's output is set up already",
            State::Attached => {
                "the job's output is committed by the process that set it up (this committer \
                 is attached to it, for its tasks)"
            }
            State::Committed => "the job's output is committed already",
            State::Aborted => "the job's output was aborted",
        };
        write_error(
            &self.output,
            io_error(std::io::ErrorKind::InvalidInput, what),
        )
    }

    fn attempt(&self, part: PartAttempt<'_>) -> Result<Location, IoError> {
        if !matches!(self.state, State::Running | State::Attached) {
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
        if let Err(e) = self.storage.mkdirs(&self.staging.join(ATTEMPTS)) {
            // Refused (permission denied, a quota) the staging directory may not exist at
            // all; when it is not there, or is deleted now, the watcher has nothing to undo.
            let gone = match self.storage.status(&self.staging) {
                Ok(None) => true,
                Ok(Some(_)) => self.storage.delete_tree(&self.staging).is_ok(),
                Err(_) => false,
            };
            if gone {
                self.note(JournalEntry::Done);
            }
            return Err(e);
        }
        self.state = State::Running;
        Ok(())
    }

    fn create_part(&self, part: PartAttempt<'_>, _buffer: usize) -> Result<StorageWriter, IoError> {
        let attempt = self.attempt(part)?;
        // A file of an earlier run of the same attempt number is replaced. An attached
        // committer creates no directory: a worker late for a job its owner has published or
        // discarded must fail, not leave a new staging directory behind that nobody removes.
        let parents = self.state == State::Running;
        self.storage.create_file(&attempt, true, parents)
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
                .create_file(&success, true, true)
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
            // The owner discards the job; a worker giving up on it leaves the other workers'
            // attempts alone.
            State::Attached => Ok(()),
        }
    }

    fn staging(&self) -> Option<Location> {
        matches!(self.state, State::Running | State::Attached).then(|| self.staging.clone())
    }
}

/// The start of the staging directory's name for output `name`: `.NAME.sluice-tmp-`; the
/// creating process's id and a nonce follow.
fn staging_prefix(name: &std::ffi::OsStr) -> String {
    use std::os::unix::ffi::OsStrExt;
    String::from_utf8_lossy(&sluice_io::staging_prefix(name.as_bytes())).into_owned()
}

/// Whether `staging` is a staging directory that [`HdfsRenameCommitter::new`] in some process
/// would make for `output`: in the same directory of the same name node, named
/// `.NAME.sluice-tmp-PID-N` (`N` in hexadecimal).
fn is_staging_of(output: &Location, staging: &Location) -> bool {
    let (Some(name), Some(staging_name)) = (output.file_name(), staging.file_name()) else {
        return false;
    };
    let same_directory = matches!(
        (output.parent(), staging.parent()),
        (Some(a), Some(b)) if a == b
    );
    let suffix = staging_name
        .to_str()
        .and_then(|n| n.strip_prefix(&staging_prefix(name)));
    same_directory
        && suffix
            .and_then(|s| s.split_once('-'))
            .is_some_and(|(pid, nonce)| {
                !pid.is_empty()
                    && pid.bytes().all(|b| b.is_ascii_digit())
                    && !nonce.is_empty()
                    && nonce.bytes().all(|b| b.is_ascii_hexdigit())
            })
}

impl Drop for HdfsRenameCommitter {
    fn drop(&mut self) {
        if self.state == State::Running {
            let _ = self.storage.delete_tree(&self.staging);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(path: &str) -> Location {
        Location::parse(&format!("hdfs://nn:8020{path}")).unwrap()
    }

    #[test]
    fn only_a_staging_directory_of_the_output_is_one() {
        let output = at("/data/out");
        for staging in ["/data/.out.sluice-tmp-42-1f", "/data/.out.sluice-tmp-7-0"] {
            assert!(is_staging_of(&output, &at(staging)), "{staging}");
        }
        for staging in [
            "/data/out",
            "/data",
            "/data/out/.out.sluice-tmp-42-1f",
            "/other/.out.sluice-tmp-42-1f",
            "/data/.other.sluice-tmp-42-1f",
            "/data/.out.sluice-tmp-42",
            "/data/.out.sluice-tmp-42-",
            "/data/.out.sluice-tmp--1f",
            "/data/.out.sluice-tmp-4x-1f",
            "/data/.out.sluice-tmp-42-1g",
            "/data/.out.sluice-tmp-42-1f/_temporary",
        ] {
            assert!(!is_staging_of(&output, &at(staging)), "{staging}");
        }
        // The same path on another name node, or on the local file system.
        let other = Location::parse("hdfs://other:8020/data/.out.sluice-tmp-42-1f").unwrap();
        assert!(!is_staging_of(&output, &other));
        let local = Location::from_path("/data/.out.sluice-tmp-42-1f");
        assert!(!is_staging_of(&output, &local));
        assert!(!is_staging_of(&at("/"), &at("/.sluice-tmp-42-1f")));
    }
}
