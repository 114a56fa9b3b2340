//! A streaming job's scratch directory, `sluice-<job id>` in the system's temporary directory
//! (`sluice-<job id>.2`, `.3`, ... when another process that built the same job has the name):
//! `work/` (where the programs run) and `logs/` (their stderr), and a `lock` file the job holds
//! locked (`flock`) for as long as it runs.
//!
//! A job removes its directory when it ends, keeping only the logs of a failed job (or all
//! logs with `sluice.keep.logs=true`). A job that was killed cannot clean up; the next job
//! does: it removes every scratch directory whose lock is free — its job is gone, since the
//! kernel releases a lock with its last holder — and that is older than a minute (so that a
//! job which has just made its directory and not yet locked it is left alone). Directories
//! without a lock file (kept logs) and directories of other users are never touched.

use std::fs::{self, File};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::fcntl::{Flock, FlockArg};

use super::StreamingError;

/// Prefix of scratch directory names.
const PREFIX: &str = "sluice-job_";

/// Name of the lock file inside a scratch directory.
const LOCK: &str = "lock";

/// Age below which an unlocked scratch directory is not yet taken for stale.
const STALE_AFTER: Duration = Duration::from_secs(60);

/// Most builds of one job (one job id) with a scratch directory on one machine at a time.
const MAX_BUILDS: usize = 1000;

/// A job's scratch directory, locked while this value lives; removed when dropped unless
/// [`Scratch::finish`] kept its logs.
#[derive(Debug)]
pub(super) struct Scratch {
    path: PathBuf,
    /// Held until the job is done; `None` once finished.
    lock: Option<Flock<File>>,
}

impl Scratch {
    /// Creates and locks the scratch directory of job `job_id` in `temp_dir`, with its `work`
    /// and `logs` directories, after removing stale ones of killed jobs.
    pub(super) fn create(temp_dir: &Path, job_id: &str) -> Result<Scratch, StreamingError> {
        remove_stale(temp_dir, STALE_AFTER);
        let setup = |what: &Path| {
            let context = format!("cannot create {}", what.display());
            move |source| StreamingError::Setup { context, source }
        };
        // The same job can be built by several processes on one machine (a job rebuilt from
        // its description): each gets a directory of its own.
        let mut build = 1;
        let path = loop {
            let name = match build {
                1 => format!("sluice-{job_id}"),
                n => format!("sluice-{job_id}.{n}"),
            };
            let path = temp_dir.join(name);
            // Holds the job's files, its programs' working directories and their logs: for
            // this user only.
            match fs::DirBuilder::new().mode(0o700).create(&path) {
                Ok(()) => break path,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && build < MAX_BUILDS => {
                    build += 1;
                }
                Err(e) => return Err(setup(&path)(e)),
            }
        };
        // From here on, dropping `scratch` removes the directory again.
        let mut scratch = Scratch { path, lock: None };
        let lock_path = scratch.path.join(LOCK);
        let file = File::create(&lock_path).map_err(setup(&lock_path))?;
        let lock = Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| {
            StreamingError::Setup {
                context: format!("cannot lock {}", lock_path.display()),
                source: errno.into(),
            }
        })?;
        scratch.lock = Some(lock);
        for dir in [scratch.work_dir(), scratch.log_dir()] {
            fs::create_dir(&dir).map_err(setup(&dir))?;
        }
        Ok(scratch)
    }

    /// Where the programs run.
    pub(super) fn work_dir(&self) -> PathBuf {
        self.path.join("work")
    }

    /// Where the programs' stderr logs go.
    pub(super) fn log_dir(&self) -> PathBuf {
        self.path.join("logs")
    }

    /// The job is done: removes everything but, if `keep_logs`, the logs that are not empty.
    /// Returns the log directory if it was kept. Kept logs are the user's: their directory
    /// loses its lock file, so that no later job takes it for a killed job's.
    pub(super) fn finish(&mut self, keep_logs: bool) -> Option<PathBuf> {
        if self.lock.is_none() {
            return self.log_dir().is_dir().then(|| self.log_dir());
        }
        let _ = fs::remove_dir_all(self.work_dir());
        let log_dir = self.log_dir();
        let mut kept = 0;
        for entry in fs::read_dir(&log_dir).into_iter().flatten().flatten() {
            if keep_logs && entry.metadata().is_ok_and(|m| m.len() > 0) {
                kept += 1;
            } else {
                let _ = fs::remove_file(entry.path());
            }
        }
        if kept == 0 {
            let _ = fs::remove_dir_all(&self.path);
            self.lock = None;
            return None;
        }
        let _ = fs::remove_file(self.path.join(LOCK));
        self.lock = None;
        Some(log_dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.lock.is_some() {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Removes the scratch directories in `temp_dir` of jobs that are gone: a lock file that is
/// older than `min_age` and that no process holds. Errors are ignored: this is housekeeping,
/// and a directory that cannot be removed now may be next time.
pub(super) fn remove_stale(temp_dir: &Path, min_age: Duration) {
    let Ok(entries) = fs::read_dir(temp_dir) else {
        return;
    };
    let uid = rustix::process::geteuid().as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        // Never a symlink, never another user's directory.
        let owned_dir = entry.file_type().is_ok_and(|t| t.is_dir())
            && std::os::unix::fs::MetadataExt::uid(&match entry.metadata() {
                Ok(m) => m,
                Err(_) => continue,
            }) == uid;
        if !owned_dir {
            continue;
        }
        let dir = entry.path();
        let lock_path = dir.join(LOCK);
        let old_enough = fs::symlink_metadata(&lock_path)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age >= min_age);
        if !old_enough {
            continue;
        }
        let Ok(file) = File::open(&lock_path) else {
            continue;
        };
        if let Ok(held) = Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            // Holding the lock while removing: a job cannot be using this directory.
            let _ = fs::remove_dir_all(&dir);
            drop(held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_job_keeps_its_directory_and_a_dead_one_loses_it() {
        let temp = tempfile::tempdir().unwrap();
        let running = Scratch::create(temp.path(), "job_1_0001").unwrap();
        // A killed job: its lock file is there but nobody holds it.
        let dead = temp.path().join("sluice-job_2_0001");
        fs::create_dir_all(dead.join("work")).unwrap();
        File::create(dead.join(LOCK)).unwrap();
        // Kept logs of a failed job: no lock file.
        let kept = temp.path().join("sluice-job_3_0001");
        fs::create_dir_all(kept.join("logs")).unwrap();
        // Not ours.
        let other = temp.path().join("sluice-other");
        fs::create_dir_all(&other).unwrap();
        File::create(other.join(LOCK)).unwrap();

        remove_stale(temp.path(), Duration::ZERO);
        assert!(
            running.work_dir().is_dir(),
            "a running job lost its directory"
        );
        assert!(!dead.exists(), "a killed job's directory stayed");
        assert!(kept.is_dir(), "kept logs were removed");
        assert!(other.is_dir());
    }

    #[test]
    fn builds_of_one_job_get_a_directory_each() {
        let temp = tempfile::tempdir().unwrap();
        let first = Scratch::create(temp.path(), "job_6_0001").unwrap();
        let second = Scratch::create(temp.path(), "job_6_0001").unwrap();
        assert_eq!(first.path, temp.path().join("sluice-job_6_0001"));
        assert_eq!(second.path, temp.path().join("sluice-job_6_0001.2"));
        assert!(first.work_dir().is_dir() && second.work_dir().is_dir());
    }

    #[test]
    fn young_directories_are_left_alone() {
        let temp = tempfile::tempdir().unwrap();
        let young = temp.path().join("sluice-job_4_0001");
        fs::create_dir_all(&young).unwrap();
        File::create(young.join(LOCK)).unwrap();
        remove_stale(temp.path(), Duration::from_secs(3600));
        assert!(young.is_dir());
    }

    #[test]
    fn finishing_keeps_only_logs_with_something_in_them() {
        let temp = tempfile::tempdir().unwrap();
        let mut scratch = Scratch::create(temp.path(), "job_5_0001").unwrap();
        fs::write(scratch.log_dir().join("a.stderr"), "oops\n").unwrap();
        fs::write(scratch.log_dir().join("b.stderr"), "").unwrap();
        let kept = scratch.finish(true).unwrap();
        assert!(kept.join("a.stderr").is_file());
        assert!(!kept.join("b.stderr").exists());
        assert!(!scratch.work_dir().exists());
        assert!(!scratch.path.join(LOCK).exists());
        drop(scratch);
        assert!(
            kept.join("a.stderr").is_file(),
            "dropping removed kept logs"
        );

        let mut scratch = Scratch::create(temp.path(), "job_6_0001").unwrap();
        fs::write(scratch.log_dir().join("a.stderr"), "oops\n").unwrap();
        assert_eq!(scratch.finish(false), None);
        assert!(!temp.path().join("sluice-job_6_0001").exists());
    }

    #[test]
    fn a_scratch_dropped_unfinished_is_removed() {
        let temp = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(temp.path(), "job_7_0001").unwrap();
        let path = scratch.path.clone();
        drop(scratch);
        assert!(!path.exists());
    }
}
