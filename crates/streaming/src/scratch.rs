//! A streaming job's scratch directory, `sluice-<job id>` in the system's temporary directory,
//! or in a worker's scratch directory (`sluice-<job id>.2`, `.3`, ... when another process
//! that built the same job has the name): `work/` (the job's entries, which every program's
//! own directory in `runs/` links to), `logs/` (the programs' stderr), and a `lock` file
//! marking it a job's. The job holds the directory itself locked
//! (`flock`) for as long as it runs.
//!
//! A job removes its directory when it ends, keeping only the logs of a failed job (or all
//! logs with `sluice.keep.logs=true`). A job that was killed cannot clean up; the next job
//! (or worker) does: it removes every scratch directory whose lock is free — its job is gone,
//! since the kernel releases a lock with its last holder — and that is a job's: one with its
//! `lock` marker, or an empty one (a job killed as it made it). Kept logs lose their marker
//! and are never touched, nor are directories of other users. A job making its directory may
//! find it removed, still empty, before it could lock it; it then makes another.
//!
//! A worker may give its jobs' logs a directory of their own (`sluice worker --log-dir`; on
//! YARN the container's log directory, which YARN keeps and aggregates after the container is
//! gone, but only the files directly in it). The logs then go there, named as always by their
//! attempt (`attempt_<job>_m_000003_0.mapper.stderr`), beside the worker's own files: a job
//! only ever removes logs that carry its attempts' prefix.

use std::fs::{self, File};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sluice_io::OwnedDir;

use super::StreamingError;

/// Prefix of scratch directory names.
const PREFIX: &str = "sluice-job_";

/// Name of the file that marks a job's scratch directory (kept logs have none).
const LOCK: &str = "lock";

/// Attempts at making a directory that a cleaner removes each time before it is locked.
const MAX_RACES: usize = 10;

/// Most builds of one job (one job id) with a scratch directory on one machine at a time.
const MAX_BUILDS: usize = 1000;

/// A job's scratch directory, locked while this value lives; removed when dropped unless
/// [`Scratch::finish`] kept its logs.
#[derive(Debug)]
pub(super) struct Scratch {
    path: PathBuf,
    /// The directory's lock, held until the job is done; `None` once finished.
    lock: Option<OwnedDir>,
    /// The directory the logs go to when it is not `logs/` here, and the prefix of the names
    /// of this job's logs in it.
    logs_elsewhere: Option<(PathBuf, String)>,
    /// What [`Scratch::finish`] returned, for a second call.
    kept_logs: Option<PathBuf>,
}

impl Scratch {
    /// Creates and locks the scratch directory of job `job_id` in `temp_dir`, with its `work`
    /// and `logs` directories, after removing stale ones of killed jobs. With `log_root`, the
    /// programs' logs go there instead of `logs` (made if it does not exist).
    pub(super) fn create(
        temp_dir: &Path,
        job_id: &str,
        log_root: Option<&Path>,
    ) -> Result<Scratch, StreamingError> {
        remove_stale(temp_dir);
        let setup = |what: &Path| {
            let context = format!("cannot create {}", what.display());
            move |source| StreamingError::Setup { context, source }
        };
        let logs_elsewhere = match log_root {
            Some(root) => {
                fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(root)
                    .map_err(setup(root))?;
                let base = job_id.strip_prefix("job_").unwrap_or(job_id);
                Some((root.to_path_buf(), format!("attempt_{base}_")))
            }
            None => None,
        };
        for _ in 0..MAX_RACES {
            let path = make_unique(temp_dir, job_id).map_err(setup(temp_dir))?;
            // A cleaner may take the directory, still empty, for a killed job's, and remove
            // it before it is locked here: then another is made.
            let lock = match OwnedDir::lock_waiting(&path) {
                Ok(lock) => lock,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(setup(&path)(e)),
            };
            if !lock.is_at(&path).map_err(setup(&path))? {
                continue;
            }
            // From here on, dropping `scratch` removes the directory again.
            let scratch = Scratch {
                path,
                lock: Some(lock),
                logs_elsewhere: logs_elsewhere.clone(),
                kept_logs: None,
            };
            let marker = scratch.path.join(LOCK);
            File::create(&marker).map_err(setup(&marker))?;
            fs::create_dir(scratch.work_dir()).map_err(setup(&scratch.work_dir()))?;
            if scratch.logs_elsewhere.is_none() {
                fs::create_dir(scratch.log_dir()).map_err(setup(&scratch.log_dir()))?;
            }
            return Ok(scratch);
        }
        Err(setup(temp_dir)(std::io::Error::other(format!(
            "a directory for job {job_id} was removed {MAX_RACES} times as it was made"
        ))))
    }

    /// Where the programs run.
    pub(super) fn work_dir(&self) -> PathBuf {
        self.path.join("work")
    }

    /// Where each program run gets a working directory of its own (see `work_dirs`).
    pub(super) fn runs_dir(&self) -> PathBuf {
        self.path.join("runs")
    }

    /// Where the job's `-archives` are unpacked.
    pub(super) fn archive_dir(&self) -> PathBuf {
        self.path.join("archives")
    }

    /// Where the job's `-files` and `-archives` on remote stores are downloaded.
    pub(super) fn download_dir(&self) -> PathBuf {
        self.path.join("downloads")
    }

    /// Where the programs' stderr logs go.
    pub(super) fn log_dir(&self) -> PathBuf {
        match &self.logs_elsewhere {
            Some((dir, _)) => dir.clone(),
            None => self.path.join("logs"),
        }
    }

    /// The job is done: removes everything but, if `keep_logs`, the logs that are not empty.
    /// Returns the log directory if it was kept. Kept logs are the user's: their directory
    /// loses its lock file, so that no later job takes it for a killed job's (logs elsewhere
    /// leave nothing of the job here). A second call returns what the first did.
    pub(super) fn finish(&mut self, keep_logs: bool) -> Option<PathBuf> {
        if self.lock.is_none() {
            return self.kept_logs.clone();
        }
        for dir in [
            self.work_dir(),
            self.runs_dir(),
            self.archive_dir(),
            self.download_dir(),
        ] {
            let _ = fs::remove_dir_all(dir);
        }
        let log_dir = self.log_dir();
        let prefix = self.logs_elsewhere.as_ref().map(|(_, prefix)| prefix);
        let mut kept = 0;
        for entry in fs::read_dir(&log_dir).into_iter().flatten().flatten() {
            // Beside the worker's own files: only this job's logs are the job's to remove.
            if prefix.is_some_and(|p| !entry.file_name().as_bytes().starts_with(p.as_bytes())) {
                continue;
            }
            if keep_logs && entry.metadata().is_ok_and(|m| m.len() > 0) {
                kept += 1;
            } else {
                let _ = fs::remove_file(entry.path());
            }
        }
        // Under the lock still: released first, a cleaner would take the directory, kept
        // logs and all, for a killed job's.
        if kept == 0 || prefix.is_some() {
            let _ = fs::remove_dir_all(&self.path);
        } else {
            let _ = fs::remove_file(self.path.join(LOCK));
        }
        self.lock = None;
        self.kept_logs = (kept > 0).then_some(log_dir);
        self.kept_logs.clone()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.lock.is_some() {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// Makes `temp_dir/sluice-JOB`, or the first of `sluice-JOB.2`, `.3`, ... that does not exist:
/// the same job can be built by several processes on one machine (a job rebuilt from its
/// description), each with a directory of its own. It holds the job's files, its programs'
/// working directories and their logs: for this user only.
fn make_unique(temp_dir: &Path, job_id: &str) -> std::io::Result<PathBuf> {
    for build in 1..=MAX_BUILDS {
        let name = match build {
            1 => format!("sluice-{job_id}"),
            n => format!("sluice-{job_id}.{n}"),
        };
        let path = temp_dir.join(name);
        match fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "{MAX_BUILDS} directories of job {job_id} exist already"
    )))
}

/// Whether the directory at `dir` is a job's (its marker is there) or an empty one (a job
/// killed as it made it, or one making it now, which its lock tells apart); not kept logs.
fn is_a_jobs(dir: &Path) -> bool {
    fs::symlink_metadata(dir.join(LOCK)).is_ok_and(|m| m.is_file())
        || fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_none())
}

/// Removes the scratch directories in `temp_dir` of jobs that are gone (their lock is free,
/// and they are not kept logs); returns those removed. Errors are ignored: this is
/// housekeeping, and a directory that cannot be removed now may be next time.
pub fn remove_stale(temp_dir: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(temp_dir) else {
        return removed;
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
        if !is_a_jobs(&dir) {
            continue;
        }
        if let Ok(_held) = OwnedDir::lock(&dir) {
            // Looked at again under the lock: a job that finished meanwhile kept its logs.
            if is_a_jobs(&dir) && fs::remove_dir_all(&dir).is_ok() {
                removed.push(dir);
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_job_keeps_its_directory_and_a_dead_one_loses_it() {
        let temp = tempfile::tempdir().unwrap();
        let running = Scratch::create(temp.path(), "job_1_0001", None).unwrap();
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

        assert_eq!(remove_stale(temp.path()), vec![dead.clone()]);
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
        let first = Scratch::create(temp.path(), "job_6_0001", None).unwrap();
        let second = Scratch::create(temp.path(), "job_6_0001", None).unwrap();
        assert_eq!(first.path, temp.path().join("sluice-job_6_0001"));
        assert_eq!(second.path, temp.path().join("sluice-job_6_0001.2"));
        assert!(first.work_dir().is_dir() && second.work_dir().is_dir());
    }

    #[test]
    fn a_directory_being_made_is_left_alone_and_an_empty_abandoned_one_goes() {
        let temp = tempfile::tempdir().unwrap();
        // Made and locked by a job, its marker not yet there: left alone.
        let making = temp.path().join("sluice-job_4_0001");
        fs::create_dir_all(&making).unwrap();
        let held = OwnedDir::lock(&making).unwrap();
        // Made by a job killed before it locked it: empty, its lock free.
        let abandoned = temp.path().join("sluice-job_4_0002");
        fs::create_dir_all(&abandoned).unwrap();
        assert_eq!(remove_stale(temp.path()), vec![abandoned.clone()]);
        assert!(making.is_dir());
        // Its maker killed before the marker: the next job's cleaning takes it.
        drop(held);
        let running = Scratch::create(temp.path(), "job_8_0001", None).unwrap();
        assert!(!making.exists());
        // A running job's directory has its marker, and is locked.
        assert!(running.path.join(LOCK).is_file());
        assert_eq!(remove_stale(temp.path()), Vec::<PathBuf>::new());
        assert!(running.work_dir().is_dir());
    }

    /// Many threads making, finishing (logs kept) and cleaning at once: a running job's
    /// directory and kept logs are never removed.
    #[test]
    fn cleaning_while_jobs_start_and_finish_removes_only_the_dead() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().to_path_buf();
        std::thread::scope(|scope| {
            for t in 0..4 {
                let root = root.clone();
                scope.spawn(move || {
                    for i in 0..50 {
                        let mut scratch =
                            Scratch::create(&root, &format!("job_{t}_{i:04}"), None).unwrap();
                        fs::write(scratch.log_dir().join("a.stderr"), "kept\n").unwrap();
                        assert!(
                            scratch.work_dir().is_dir(),
                            "a running job lost its work dir"
                        );
                        let kept = scratch.finish(true).unwrap();
                        assert!(kept.join("a.stderr").is_file(), "kept logs went");
                    }
                });
            }
            scope.spawn(|| {
                for _ in 0..200 {
                    remove_stale(&root);
                }
            });
        });
        assert_eq!(fs::read_dir(&root).unwrap().count(), 200);
    }

    #[test]
    fn finishing_keeps_only_logs_with_something_in_them() {
        let temp = tempfile::tempdir().unwrap();
        let mut scratch = Scratch::create(temp.path(), "job_5_0001", None).unwrap();
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

        let mut scratch = Scratch::create(temp.path(), "job_6_0001", None).unwrap();
        fs::write(scratch.log_dir().join("a.stderr"), "oops\n").unwrap();
        assert_eq!(scratch.finish(false), None);
        assert!(!temp.path().join("sluice-job_6_0001").exists());
    }

    #[test]
    fn logs_elsewhere_are_kept_there_beside_files_not_the_jobs() {
        let temp = tempfile::tempdir().unwrap();
        let logs = temp.path().join("container-logs");
        fs::create_dir(&logs).unwrap();
        // The worker's own files, empty or not, and another job's log.
        fs::write(logs.join("stdout"), "").unwrap();
        fs::write(logs.join("stderr"), "worker\n").unwrap();
        fs::write(logs.join("attempt_5_00012_m_000000_0.mapper.stderr"), "").unwrap();
        let mut scratch = Scratch::create(temp.path(), "job_5_0001", Some(&logs)).unwrap();
        assert_eq!(scratch.log_dir(), logs);
        assert!(!scratch.path.join("logs").exists());
        fs::write(
            logs.join("attempt_5_0001_m_000000_0.mapper.stderr"),
            "oops\n",
        )
        .unwrap();
        fs::write(logs.join("attempt_5_0001_m_000001_0.mapper.stderr"), "").unwrap();
        let path = scratch.path.clone();
        assert_eq!(scratch.finish(true), Some(logs.clone()));
        assert_eq!(
            scratch.finish(true),
            Some(logs.clone()),
            "a second call says the same"
        );
        assert!(!path.exists(), "the job left its scratch directory");
        let mut left: Vec<String> = fs::read_dir(&logs)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "attempt_5_00012_m_000000_0.mapper.stderr",
                "attempt_5_0001_m_000000_0.mapper.stderr",
                "stderr",
                "stdout"
            ]
        );

        // Nothing kept: the job's logs go, the others stay.
        let mut scratch = Scratch::create(temp.path(), "job_5_0002", Some(&logs)).unwrap();
        fs::write(logs.join("attempt_5_0002_r_000000_0.reducer.stderr"), "x\n").unwrap();
        assert_eq!(scratch.finish(false), None);
        assert_eq!(scratch.finish(false), None, "a second call says the same");
        assert!(!logs
            .join("attempt_5_0002_r_000000_0.reducer.stderr")
            .exists());
        assert_eq!(fs::read_dir(&logs).unwrap().count(), 4);
        assert_eq!(fs::read_dir(temp.path()).unwrap().count(), 1);
    }

    #[test]
    fn a_scratch_dropped_unfinished_is_removed() {
        let temp = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(temp.path(), "job_7_0001", None).unwrap();
        let path = scratch.path.clone();
        drop(scratch);
        assert!(!path.exists());
    }
}
