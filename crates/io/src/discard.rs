//! The committer of a job whose records go nowhere: Hadoop's `NullOutputFormat`.
//!
//! Hadoop runs such a job for what its tasks do elsewhere (a database, a side file, counters).
//! Its output format checks nothing and writes nothing, but the job's committer is still
//! `FileOutputCommitter`, so the output directory is made when missing, an existing one is
//! kept with everything in it, and `_SUCCESS` is written into it when the job succeeds.
//! [`DiscardingCommitter`] does the same on any store.

use std::io::{self, Write};

use crate::{IoError, JobCommitter, Location, ObjectWriter, PartAttempt, Storage, StorageWriter};

/// Commits a job that writes no records: task attempts get writers that drop their bytes; the
/// job's commit writes `_SUCCESS` into the output directory, made if it was missing.
///
/// What is visible at the output location if the job stops at any point: what was there
/// before, and the directory made at set-up when it was missing (Hadoop makes it at set-up
/// too); `_SUCCESS` only once the job commits. An abort removes nothing, as Hadoop's removes
/// only its own `_temporary`: such a job's programs often write their own files into the
/// output directory, and another job may share it, so nothing there is this committer's to
/// delete.
pub struct DiscardingCommitter {
    /// `None` for a committer of tasks only ([`DiscardingCommitter::for_tasks`]).
    storage: Option<Box<dyn Storage>>,
    output: Location,
    set_up: bool,
    finished: bool,
}

impl DiscardingCommitter {
    /// A committer of `output` on `storage`, not set up yet.
    pub fn new(storage: Box<dyn Storage>, output: Location) -> DiscardingCommitter {
        DiscardingCommitter {
            storage: Some(storage),
            output,
            set_up: false,
            finished: false,
        }
    }

    /// The task side of a discarding job's committer, for a worker that runs tasks of a job
    /// set up and committed elsewhere (as an attached committer is: see [`JobCommitter`]). Its
    /// writers drop their bytes; it refuses to set up or commit the job, and its abort does
    /// nothing.
    pub fn for_tasks(output: Location) -> DiscardingCommitter {
        DiscardingCommitter {
            storage: None,
            output,
            set_up: true,
            finished: false,
        }
    }

    /// The store, for the job's own methods; refused for a committer of tasks only.
    fn storage(&self) -> Result<&dyn Storage, IoError> {
        self.storage
            .as_deref()
            .ok_or_else(|| self.refused("the job is set up and committed by its coordinator"))
    }

    fn refused(&self, why: &str) -> IoError {
        IoError::Write {
            path: self.output.error_path(),
            source: io::Error::other(why.to_string()),
        }
    }
}

impl std::fmt::Debug for DiscardingCommitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscardingCommitter")
            .field("output", &self.output)
            .field("set_up", &self.set_up)
            .field("finished", &self.finished)
            .finish()
    }
}

impl JobCommitter for DiscardingCommitter {
    fn output(&self) -> &Location {
        &self.output
    }

    /// Makes the output directory when it is missing, so that a file in its way (or a
    /// read-only parent) is reported before the job runs, as Hadoop's set-up reports it. An
    /// existing directory is taken as it is.
    fn setup_job(&mut self) -> Result<(), IoError> {
        if self.set_up {
            return Err(self.refused("the job's output is set up already"));
        }
        let storage = self.storage()?;
        // A file above the output ("not a directory") is found by making the directory.
        let existing = match storage.status(&self.output) {
            Err(IoError::Read { source, .. }) if source.kind() == io::ErrorKind::NotADirectory => {
                None
            }
            other => other?,
        };
        match existing {
            Some(status) if !status.is_dir => {
                return Err(IoError::CreateOutput {
                    path: self.output.error_path(),
                    made: self.output.error_path(),
                    source: io::Error::new(io::ErrorKind::AlreadyExists, "a file is there"),
                });
            }
            Some(_) => {}
            None => {
                storage.make_dirs(&self.output).map_err(|e| match e {
                    IoError::Write { path, source } => IoError::CreateOutput {
                        path: self.output.error_path(),
                        made: path,
                        source,
                    },
                    other => other,
                })?;
            }
        }
        self.set_up = true;
        Ok(())
    }

    fn create_part(&self, part: PartAttempt<'_>, buffer: usize) -> Result<StorageWriter, IoError> {
        let _ = (part, buffer);
        if !self.set_up || self.finished {
            return Err(self.refused("the job's output is not set up"));
        }
        Ok(StorageWriter::new(Box::new(Dropped)))
    }

    fn commit_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        let _ = part;
        Ok(())
    }

    fn abort_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        let _ = part;
        Ok(())
    }

    fn commit_job(&mut self) -> Result<(), IoError> {
        if !self.set_up || self.finished {
            return Err(self.refused("the job's output is not set up, or is finished"));
        }
        let storage = self.storage()?;
        // A store without directories has nothing to make; the others have the directory
        // from set-up, unless something removed it meanwhile.
        storage.make_dirs(&self.output)?;
        let success = self.output.join("_SUCCESS");
        let written = storage
            .create(&success)
            .and_then(|writer| {
                writer.finish().map_err(|source| IoError::Write {
                    path: success.error_path(),
                    source,
                })
            })
            .map(drop);
        if written.is_err() {
            self.finished = true;
            return written;
        }
        self.finished = true;
        Ok(())
    }

    /// Removes nothing (see [`DiscardingCommitter`]): what the job's programs wrote into the
    /// output directory stays, as in Hadoop.
    fn abort_job(&mut self) -> Result<(), IoError> {
        self.finished = true;
        Ok(())
    }

    /// The output itself: workers of the job write nothing, so they need no place of their
    /// own; each discards with a [`DiscardingCommitter`] of its own, never set up.
    fn staging(&self) -> Option<Location> {
        (self.set_up && !self.finished && self.storage.is_some()).then(|| self.output.clone())
    }
}

/// A part file's writer that drops its bytes and reports none written.
struct Dropped;

impl Write for Dropped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }

    fn write_all(&mut self, _buf: &[u8]) -> io::Result<()> {
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectWriter for Dropped {
    fn finish(self: Box<Self>) -> io::Result<u64> {
        Ok(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalStorage;

    fn committer(output: &std::path::Path) -> DiscardingCommitter {
        DiscardingCommitter::new(
            Box::new(LocalStorage::default()),
            Location::from_path(output),
        )
    }

    fn write_a_part(c: &DiscardingCommitter) {
        let part = PartAttempt::new("part-00000", 0);
        let mut writer = c.create_part(part, 4096).unwrap();
        writer.write_all(b"dropped\n").unwrap();
        assert_eq!(writer.finish().unwrap(), 0);
        c.commit_task(part).unwrap();
    }

    fn names(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_existing_output_keeps_what_it_holds_and_gets_success() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("old.txt"), b"keep").unwrap();
        let mut c = committer(&out);
        c.setup_job().unwrap();
        write_a_part(&c);
        c.commit_job().unwrap();
        assert_eq!(names(&out), ["_SUCCESS", "old.txt"]);
        assert_eq!(std::fs::read(out.join("old.txt")).unwrap(), b"keep");
        assert_eq!(std::fs::read(out.join("_SUCCESS")).unwrap(), b"");
    }

    #[test]
    fn a_missing_output_is_made_with_parents_and_an_abort_removes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("a/b/out");
        let mut c = committer(&out);
        c.setup_job().unwrap();
        assert!(out.is_dir(), "made at set-up, as Hadoop makes it");
        write_a_part(&c);
        // A program of the job (or another job sharing the output) wrote a file of its own.
        std::fs::write(out.join("side.txt"), b"a program's").unwrap();
        c.abort_job().unwrap();
        assert_eq!(names(&out), ["side.txt"]);
        std::fs::remove_file(out.join("side.txt")).unwrap();

        let mut c = committer(&out);
        c.setup_job().unwrap();
        write_a_part(&c);
        c.commit_job().unwrap();
        assert_eq!(names(&out), ["_SUCCESS"]);
    }

    #[test]
    fn an_aborted_job_leaves_an_existing_output_alone() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("old.txt"), b"keep").unwrap();
        let mut c = committer(&out);
        c.setup_job().unwrap();
        c.abort_job().unwrap();
        assert_eq!(names(&out), ["old.txt"]);
    }

    #[test]
    fn a_file_in_the_way_is_refused_at_set_up() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("out");
        std::fs::write(&file, b"a file").unwrap();
        assert!(matches!(
            committer(&file).setup_job(),
            Err(IoError::CreateOutput { .. })
        ));
        assert!(matches!(
            committer(&file.join("below")).setup_job(),
            Err(IoError::CreateOutput { .. })
        ));
        assert_eq!(std::fs::read(&file).unwrap(), b"a file");
    }

    #[test]
    fn a_committer_of_tasks_drops_parts_and_leaves_the_job_alone() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let mut c = DiscardingCommitter::for_tasks(Location::from_path(&out));
        write_a_part(&c);
        assert!(c.setup_job().is_err());
        assert!(c.commit_job().is_err());
        c.abort_job().unwrap();
        assert!(!out.exists());
        assert_eq!(c.staging(), None);
    }

    #[test]
    fn parts_are_refused_before_set_up_and_after_the_commit() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = committer(&dir.path().join("out"));
        assert!(c.create_part(PartAttempt::new("p", 0), 16).is_err());
        c.setup_job().unwrap();
        c.commit_job().unwrap();
        assert!(c.create_part(PartAttempt::new("p", 0), 16).is_err());
        assert!(c.commit_job().is_err());
    }
}
