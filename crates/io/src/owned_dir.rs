//! Scratch directories a process owns while it runs, and the removal of those a killed process
//! left behind.
//!
//! A job's staging directory (`.NAME.sluice-tmp-PID`) and its spill directory
//! (`.sluice-spill-PID-XXXXXX`) are removed when the job ends, however it fails — unless the
//! process is killed outright (`SIGKILL`, the out-of-memory killer, a power cut). Then they stay,
//! and a spill directory can hold gigabytes. The next job that makes one in the same place
//! removes them, but only when it can tell they are abandoned:
//!
//! * the creating process holds an exclusive `flock` on the directory for as long as it
//!   lives ([`OwnedDir`]); the kernel drops the lock when the process dies, however it dies;
//! * the directory's name carries the creating process's id, and that process is gone (or is
//!   the one looking, which holds no lock on it) — this covers the instant between creating a
//!   directory and locking it, in which another job must not take it for abandoned.
//!
//! Both must hold. A directory whose owner runs on another machine sharing the file system
//! keeps its lock there (where the file system supports locks), and one whose name carries no
//! process id is left alone.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use nix::sys::signal::kill;
use nix::unistd::Pid;

/// An exclusive lock on a directory this process made, held as long as the value lives (the
/// directory may be renamed meanwhile: the lock follows it).
#[derive(Debug)]
pub struct OwnedDir {
    _lock: Flock<File>,
}

impl OwnedDir {
    /// Locks `dir`, which this process has just created.
    ///
    /// # Errors
    /// The error of opening or locking it (a lock held by another process included).
    pub fn lock(dir: &Path) -> io::Result<OwnedDir> {
        Self::lock_with(dir, FlockArg::LockExclusiveNonblock)
    }

    /// Locks `dir`, waiting while another process holds its lock (one that has taken it for
    /// abandoned holds it only as long as it takes to remove it: see [`OwnedDir::is_at`]).
    ///
    /// # Errors
    /// The error of opening or locking it.
    pub fn lock_waiting(dir: &Path) -> io::Result<OwnedDir> {
        Self::lock_with(dir, FlockArg::LockExclusive)
    }

    fn lock_with(dir: &Path, how: FlockArg) -> io::Result<OwnedDir> {
        let file = File::open(dir)?;
        let lock = Flock::lock(file, how).map_err(|(_, errno)| io::Error::from(errno))?;
        Ok(OwnedDir { _lock: lock })
    }

    /// Whether the locked directory is still the one at `path`. Between making a directory and
    /// locking it, another process cleaning up may lock it, take it for abandoned and remove
    /// it; the maker then holds the lock of a removed directory, and must make another.
    ///
    /// # Errors
    /// The error of examining the locked directory.
    pub fn is_at(&self, path: &Path) -> io::Result<bool> {
        let held = self._lock.metadata()?;
        Ok(fs::symlink_metadata(path)
            .is_ok_and(|now| now.dev() == held.dev() && now.ino() == held.ino()))
    }
}

/// Removes directory `path` if no process holds its lock (its owner is gone), holding the
/// lock while it goes so that nobody takes part of it meanwhile. Returns whether it was
/// removed; a directory that is locked, or cannot be opened or removed, stays.
pub fn remove_if_unowned(path: &Path) -> bool {
    match OwnedDir::lock(path) {
        Ok(_lock) => fs::remove_dir_all(path).is_ok(),
        Err(_) => false,
    }
}

/// Removes the directories in `parent` named `PREFIX` + a process id (digits, then nothing or
/// `-` and anything) whose process is gone and whose lock is free: what killed jobs left there.
/// Returns the directories removed. Best effort: a directory that cannot be examined or removed
/// is left as it is, and an unreadable `parent` removes nothing.
pub fn remove_abandoned(parent: &Path, prefix: &OsStr) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = owner_pid(&name, prefix) else {
            continue;
        };
        if !entry.file_type().is_ok_and(|t| t.is_dir()) || process_alive(pid) {
            continue;
        }
        let path = entry.path();
        if remove_if_unowned(&path) {
            removed.push(path);
        }
    }
    removed
}

/// The process id in a name `PREFIX` + digits [+ `-` + anything].
fn owner_pid(name: &OsStr, prefix: &OsStr) -> Option<i32> {
    let rest = name.as_bytes().strip_prefix(prefix.as_bytes())?;
    let digits = match rest.iter().position(|&b| b == b'-') {
        Some(end) => &rest[..end],
        None => rest,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

/// Whether process `pid` runs on this machine, other than this process (which holds no lock
/// on a directory it did not make in this run, so one named with its id is stale).
fn process_alive(pid: i32) -> bool {
    if pid <= 0 || u32::try_from(pid).is_ok_and(|pid| pid == std::process::id()) {
        return false;
    }
    // Signal 0 checks for existence; EPERM means it exists but belongs to someone else.
    !matches!(kill(Pid::from_raw(pid), None), Err(Errno::ESRCH))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_give_their_owner_s_process_id() {
        let prefix = OsStr::new(".out.sluice-tmp-");
        assert_eq!(
            owner_pid(OsStr::new(".out.sluice-tmp-123"), prefix),
            Some(123)
        );
        assert_eq!(
            owner_pid(OsStr::new(".out.sluice-tmp-123-abc"), prefix),
            Some(123)
        );
        for other in [
            ".out.sluice-tmp-",
            ".out.sluice-tmp-x12",
            ".out.sluice-tmp--1",
            ".other.sluice-tmp-12",
            ".out.sluice-tmp-99999999999999999999",
        ] {
            assert_eq!(owner_pid(OsStr::new(other), prefix), None, "{other}");
        }
    }

    /// A process id no process has: beyond the kernel's largest (4194304).
    const NO_PROCESS: i32 = 4_194_305;

    #[test]
    fn only_unlocked_directories_of_gone_processes_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = OsStr::new(".sluice-spill-");
        let gone = dir.path().join(format!(".sluice-spill-{NO_PROCESS}-aaaa"));
        let gone_but_locked = dir.path().join(format!(".sluice-spill-{NO_PROCESS}-bbbb"));
        let parent_alive = dir.path().join(format!(
            ".sluice-spill-{}-cccc",
            std::os::unix::process::parent_id()
        ));
        let mine_unlocked = dir
            .path()
            .join(format!(".sluice-spill-{}-dddd", std::process::id()));
        let no_pid = dir.path().join(".sluice-spill-eeee");
        for d in [
            &gone,
            &gone_but_locked,
            &parent_alive,
            &mine_unlocked,
            &no_pid,
        ] {
            fs::create_dir(d).unwrap();
            fs::write(d.join("run-000000.spill"), "bytes").unwrap();
        }
        fs::write(
            dir.path().join(format!(".sluice-spill-{NO_PROCESS}-file")),
            "",
        )
        .unwrap();
        let _held = OwnedDir::lock(&gone_but_locked).unwrap();
        let mut removed = remove_abandoned(dir.path(), prefix);
        removed.sort();
        let mut expected = vec![gone.clone(), mine_unlocked.clone()];
        expected.sort();
        assert_eq!(removed, expected);
        assert!(!gone.exists() && !mine_unlocked.exists());
        assert!(gone_but_locked.exists() && parent_alive.exists() && no_pid.exists());
    }

    #[test]
    fn a_locked_directory_cannot_be_locked_again() {
        let dir = tempfile::tempdir().unwrap();
        let held = OwnedDir::lock(dir.path()).unwrap();
        assert!(OwnedDir::lock(dir.path()).is_err());
        drop(held);
        assert!(OwnedDir::lock(dir.path()).is_ok());
    }
}
