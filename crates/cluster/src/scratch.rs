//! A worker's job directories in its scratch directory, and what killed workers left there.
//!
//! Each job on a worker gets a directory of its own, `SCRATCH/JOB` (`JOB.2`, `JOB.3`, ... when
//! another worker sharing the scratch directory runs the same job), which the worker holds
//! locked (`flock` on the directory itself) for as long as the job runs and removes when the job
//! ends. A worker killed outright removes nothing, but the kernel releases its locks: so a
//! directory whose lock can be taken belongs to no running worker. A worker starting on a
//! scratch directory removes those ([`remove_stale`]); a live worker's directory is never
//! touched, since its lock is held. Only directories a worker made are removed: each holds a
//! marker file, [`MARKER`], from the moment it is locked. The scratch directory may be a disk
//! the user keeps other things on (`--scratch /data`), and those are never touched.
//!
//! The lock is taken just after the directory is made; a worker cleaning up in that instant
//! could take it for stale and remove it. So the maker, once it holds the lock, checks that
//! the directory is still the one at the path, and makes another if it is not.

use std::fs;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use sluice_io::{remove_if_unowned, OwnedDir};

/// Most jobs of one id with a directory in one scratch directory at a time.
const MAX_SAME_JOB: usize = 1000;

/// How the directories streaming jobs make in a worker's scratch directory begin.
const STREAMING_PREFIX: &str = "sluice-";

/// Attempts at making a directory that a cleaner removes each time before it is locked.
const MAX_RACES: usize = 10;

/// The file in each job directory that marks it as a worker's (and so removable once no worker
/// holds it).
const MARKER: &str = ".sluice-worker-job";

/// A job's directory, locked while this value lives.
#[derive(Debug)]
pub(crate) struct JobDir {
    path: PathBuf,
    _lock: OwnedDir,
}

impl JobDir {
    /// Makes and locks a directory for job `job_id` (a plain name) in `scratch`.
    ///
    /// # Errors
    /// The directory cannot be made, opened or locked.
    pub(crate) fn create(scratch: &Path, job_id: &str) -> io::Result<JobDir> {
        for _ in 0..MAX_RACES {
            let path = make_unique(scratch, job_id)?;
            // Waiting: another worker holds the lock of a directory it has just made only
            // for as long as it takes to remove it, believing it stale.
            let lock = OwnedDir::lock_waiting(&path)?;
            if lock.is_at(&path)? {
                let dir = JobDir { path, _lock: lock };
                // Removed with the directory (`Drop`) should writing it fail.
                fs::File::create(dir.path.join(MARKER))?;
                return Ok(dir);
            }
            // Removed by a worker cleaning up before the lock was taken: make another.
        }
        Err(io::Error::other(format!(
            "cannot keep a directory in {}: it was removed {MAX_RACES} times as it was made",
            scratch.display()
        )))
    }

    /// Where it is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for JobDir {
    fn drop(&mut self) {
        // Removed while still locked, so that no cleaner takes part of it meanwhile.
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Makes `scratch/job_id`, or the first of `job_id.2`, `job_id.3`, ... that does not exist.
fn make_unique(scratch: &Path, job_id: &str) -> io::Result<PathBuf> {
    for n in 1..=MAX_SAME_JOB {
        let name = match n {
            1 => job_id.to_string(),
            n => format!("{job_id}.{n}"),
        };
        let path = scratch.join(name);
        // The job's spills and received runs are its users' data: for this user only.
        match fs::DirBuilder::new().mode(0o700).create(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{MAX_SAME_JOB} directories of job {job_id} are in {} already",
        scratch.display()
    )))
}

/// Removes the job directories in `scratch` that no running worker holds (left by workers
/// that were killed); returns those removed. Only directories holding the [`MARKER`] a worker
/// writes in its job directories are taken: files, and every other directory, are left alone
/// (a worker killed between making a directory and marking it leaves an empty directory).
pub(crate) fn remove_stale(scratch: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(scratch) else {
        return removed;
    };
    for entry in entries.flatten() {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        // Streaming jobs' directories (`sluice-job_...`) are locked and cleared by the
        // streaming jobs themselves, the kept logs of failed attempts among them.
        let named_like_a_job = entry
            .file_name()
            .to_str()
            .is_some_and(|name| is_plain_id(name) && !name.starts_with(STREAMING_PREFIX));
        if !is_dir || !named_like_a_job {
            continue;
        }
        let path = entry.path();
        let marked = fs::symlink_metadata(path.join(MARKER)).is_ok_and(|m| m.is_file());
        if !marked {
            continue;
        }
        // A running worker holds its directory's lock; a worker making a directory of this
        // name now waits for the lock, then sees the directory gone and makes another.
        if remove_if_unowned(&path) {
            removed.push(path);
        }
    }
    removed
}

/// Whether `id` can name a directory: letters, digits, `_`, `-` and `.`, not only dots.
pub(crate) fn is_plain_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id.chars().any(|c| c != '.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_whose_lock_is_free_is_removed_and_a_held_one_is_not() {
        let scratch = tempfile::tempdir().expect("temp dir");
        // Left by a worker that is gone: nobody holds its lock.
        let stale = left_by_a_killed_worker(scratch.path(), "job_1_0001");
        fs::create_dir_all(stale.join("spill")).expect("stale dir");
        fs::write(stale.join("spill/run-0"), b"records").expect("stale file");
        // A running worker's (this process holds its lock).
        let live = JobDir::create(scratch.path(), "job_2_0001").expect("live dir");
        fs::write(live.path().join("run-0"), b"records").expect("live file");
        assert!(
            live.path().join(MARKER).is_file(),
            "a job directory without its marker"
        );
        // Not a job's: left alone.
        fs::write(scratch.path().join("notes.txt"), b"mine").expect("file");
        let odd = scratch.path().join("has space");
        fs::create_dir(&odd).expect("odd dir");

        assert_eq!(remove_stale(scratch.path()), vec![stale.clone()]);
        assert!(!stale.exists());
        assert!(
            live.path().join("run-0").exists(),
            "a live job's files went"
        );
        assert!(scratch.path().join("notes.txt").exists());
        assert!(odd.exists());

        let live_path = live.path().to_path_buf();
        drop(live);
        assert!(!live_path.exists(), "a job's directory stays after the job");
    }

    /// A job directory as a worker killed outright leaves it: marked, and not locked.
    fn left_by_a_killed_worker(scratch: &Path, job_id: &str) -> PathBuf {
        let path = scratch.join(job_id);
        fs::create_dir(&path).expect("job dir");
        fs::write(path.join(MARKER), b"").expect("marker");
        path
    }

    /// A scratch directory on a disk that holds the user's own directories, named as jobs
    /// could be: none of them is removed, only what a worker left.
    #[test]
    fn the_users_directories_in_a_scratch_directory_are_never_removed() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let mut theirs = Vec::new();
        for name in [
            "photos",
            "projects",
            "backup-2024",
            "job_5_0001",
            "job_5_0001.2",
        ] {
            let dir = scratch.path().join(name);
            fs::create_dir(&dir).expect("dir");
            fs::write(dir.join("f"), b"precious").expect("file");
            theirs.push(dir);
        }
        let stale = left_by_a_killed_worker(scratch.path(), "job_6_0001");
        assert_eq!(remove_stale(scratch.path()), vec![stale]);
        for dir in theirs {
            assert!(dir.join("f").exists(), "{} was removed", dir.display());
        }
    }

    /// Two workers sharing a scratch directory, running the same job, get a directory each.
    #[test]
    fn the_same_job_twice_in_one_scratch_gets_two_directories() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let a = JobDir::create(scratch.path(), "job_3_0001").expect("first");
        let b = JobDir::create(scratch.path(), "job_3_0001").expect("second");
        assert_eq!(a.path(), scratch.path().join("job_3_0001"));
        assert_eq!(b.path(), scratch.path().join("job_3_0001.2"));
        assert!(remove_stale(scratch.path()).is_empty());
        drop(a);
        assert!(b.path().exists());
    }

    /// A lock held by another process (as a live worker's is) keeps its directory.
    #[test]
    fn a_directory_locked_by_another_process_is_kept() {
        let scratch = tempfile::tempdir().expect("temp dir");
        let dir = left_by_a_killed_worker(scratch.path(), "job_4_0001");
        // `flock` the directory in a child process that then waits on its stdin.
        let mut holder = std::process::Command::new("flock")
            .arg(&dir)
            .args(["-c", "echo locked; read _"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("flock(1)");
        let mut line = String::new();
        let stdout = holder.stdout.as_mut().expect("stdout");
        io::BufRead::read_line(&mut io::BufReader::new(stdout), &mut line).expect("read");
        assert_eq!(line.trim(), "locked");
        assert!(remove_stale(scratch.path()).is_empty());
        assert!(dir.exists());
        drop(holder.stdin.take());
        let _ = holder.wait();
        assert_eq!(remove_stale(scratch.path()), vec![dir.clone()]);
    }
}
