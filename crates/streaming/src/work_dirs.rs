//! The working directories of a job's programs: every run of a program has one of its own, as
//! every task of Hadoop's has its container's directory.
//!
//! Programs write scratch files into their working directory under fixed names (`sort -T .`,
//! `open("out.tmp", "w")`, an unpacked package). Sharing one directory among the programs
//! that run at once let one run overwrite another's file and read back the other's data: a job
//! with wrong output and exit 0. So the job's entries (its `-files`, `-archives`, and the
//! links to the directory it was started from) are laid out once, in the job's `work/`
//! directory (the template), and each run gets a directory of links to them.
//!
//! Making a directory of links for every run costs a system call or two per entry, which adds
//! up for a job of many small tasks started from a large directory. So the directories are
//! kept for reuse: when a run ends, what it left is removed (anything that is not one of the
//! links made: a link of that name to that target, so a link the program replaced is replaced
//! back) and missing links are made again; the next run finds the directory as new. Resetting
//! a directory the run did not change costs one listing and one `stat`: a directory left ready
//! has its modification time set to the epoch, which any entry made or removed in it replaces
//! with the clock's time, and while it stays at the epoch the links are known by their inode
//! numbers; otherwise each is read again (a link replaced under its own name may get the old
//! one's inode number).

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The working directories of one job's program runs, made in `root` as runs need them, each
/// holding a link to every entry of the template.
#[derive(Debug)]
pub(super) struct WorkDirs {
    /// What each directory holds: a link named so, to this target.
    entries: HashMap<OsString, PathBuf>,
    /// Where the directories are made (`runs/` in the job's scratch directory).
    root: PathBuf,
    /// Directories whose run ended, reset and ready for another.
    free: Mutex<Vec<Prepared>>,
    /// Directories made so far (each named by its number).
    made: AtomicUsize,
}

/// A directory of links as it was left ready, and the inode number of each link.
#[derive(Debug)]
struct Prepared {
    path: PathBuf,
    links: HashMap<OsString, u64>,
}

/// Sets the directory's modification time to the epoch: left so, nothing was made or removed
/// in it since. A directory whose time cannot be set is read in full at each reset.
fn mark_ready(path: &Path) {
    let _ = fs::File::open(path).and_then(|dir| dir.set_modified(std::time::UNIX_EPOCH));
}

/// Whether nothing was made or removed in the directory since [`mark_ready`].
fn untouched(path: &Path) -> io::Result<bool> {
    let meta = fs::symlink_metadata(path)?;
    Ok(meta.mtime() == 0 && meta.mtime_nsec() == 0)
}

/// A run's working directory, returned to its [`WorkDirs`] (reset) when dropped.
#[derive(Debug)]
pub(super) struct WorkDir {
    dirs: Arc<WorkDirs>,
    dir: Option<Prepared>,
}

impl WorkDirs {
    /// The directories for the entries of `template` (a link there is followed to its target,
    /// anything else is linked to as it is), made in `root`, which is created.
    ///
    /// # Errors
    /// When `template` cannot be read or `root` cannot be made.
    pub(super) fn new(template: &Path, root: PathBuf) -> io::Result<WorkDirs> {
        // Absolute, so that links lead to the same place from every run's directory (a
        // relative TMPDIR makes a relative template).
        let template = &std::path::absolute(template)?;
        let root = std::path::absolute(root)?;
        let mut entries = HashMap::new();
        for entry in fs::read_dir(template)? {
            let entry = entry?;
            let path = entry.path();
            let target = if entry.file_type()?.is_symlink() {
                // A relative target is relative to the template, not to a run's directory.
                template.join(fs::read_link(&path)?)
            } else {
                path
            };
            entries.insert(entry.file_name(), target);
        }
        fs::create_dir(&root)?;
        Ok(WorkDirs {
            entries,
            root,
            free: Mutex::new(Vec::new()),
            made: AtomicUsize::new(0),
        })
    }

    /// A working directory for one run: a reset one if any is free, else a new one.
    ///
    /// # Errors
    /// When a new directory or one of its links cannot be made.
    pub(super) fn take(self: &Arc<Self>) -> io::Result<WorkDir> {
        let free = self.free.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let dir = match free {
            Some(dir) => dir,
            None => self.make()?,
        };
        Ok(WorkDir {
            dirs: Arc::clone(self),
            dir: Some(dir),
        })
    }

    fn make(&self) -> io::Result<Prepared> {
        let number = self.made.fetch_add(1, Ordering::Relaxed);
        let path = self.root.join(number.to_string());
        fs::create_dir(&path)?;
        let mut links = HashMap::with_capacity(self.entries.len());
        for (name, target) in &self.entries {
            links.insert(name.clone(), link(&path, name, target)?);
        }
        mark_ready(&path);
        Ok(Prepared { path, links })
    }

    /// Makes `dir` as new: removes what is not one of its links, makes the missing ones.
    fn reset(&self, dir: &mut Prepared) -> io::Result<()> {
        // Changed since it was left ready: every link is read again, not only known by its
        // inode number.
        let changed = !untouched(&dir.path)?;
        let mut intact = HashSet::with_capacity(self.entries.len());
        for entry in fs::read_dir(&dir.path)? {
            let entry = entry?;
            let name = entry.file_name();
            let kind = entry.file_type()?;
            if kind.is_symlink() && dir.links.get(&name) == Some(&entry.ino()) {
                let same = !changed
                    || self.entries.get(&name).is_some_and(|target| {
                        fs::read_link(entry.path()).ok().as_ref() == Some(target)
                    });
                if same {
                    intact.insert(name);
                    continue;
                }
            }
            dir.links.remove(&name);
            if kind.is_dir() {
                fs::remove_dir_all(entry.path())?;
            } else {
                fs::remove_file(entry.path())?;
            }
        }
        for (name, target) in &self.entries {
            if !intact.contains(name) {
                dir.links
                    .insert(name.clone(), link(&dir.path, name, target)?);
            }
        }
        if changed || intact.len() < self.entries.len() {
            mark_ready(&dir.path);
        }
        Ok(())
    }
}

/// Makes the link `name` to `target` in `dir`; returns its inode number.
fn link(dir: &Path, name: &OsString, target: &Path) -> io::Result<u64> {
    let path = dir.join(name);
    std::os::unix::fs::symlink(target, &path)?;
    Ok(fs::symlink_metadata(&path)?.ino())
}

impl WorkDir {
    /// The directory.
    pub(super) fn path(&self) -> &Path {
        match &self.dir {
            Some(dir) => &dir.path,
            None => Path::new("."),
        }
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let Some(mut dir) = self.dir.take() else {
            return;
        };
        match self.dirs.reset(&mut dir) {
            Ok(()) => self
                .dirs
                .free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(dir),
            // What the run left cannot be removed now (a directory it made unreadable): the
            // directory is not used again, and goes with the job's scratch directory.
            Err(_) => {
                let _ = fs::remove_dir_all(&dir.path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A template with a linked file, a linked directory and a plain file.
    fn template() -> (tempfile::TempDir, Arc<WorkDirs>) {
        let dir = tempfile::tempdir().unwrap();
        let shipped = dir.path().join("shipped");
        fs::create_dir_all(shipped.join("lib")).unwrap();
        fs::write(shipped.join("lookup.txt"), b"table").unwrap();
        fs::write(shipped.join("lib/module.py"), b"x = 1").unwrap();
        let work = dir.path().join("work");
        fs::create_dir(&work).unwrap();
        std::os::unix::fs::symlink(shipped.join("lookup.txt"), work.join("lookup.txt")).unwrap();
        std::os::unix::fs::symlink("../shipped/lib", work.join("lib")).unwrap();
        fs::write(work.join("mapper.sh"), b"#!/bin/sh\n").unwrap();
        let dirs = WorkDirs::new(&work, dir.path().join("runs")).unwrap();
        (dir, Arc::new(dirs))
    }

    fn listing(dir: &Path) -> Vec<(String, String)> {
        let mut names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let contents = fs::read(e.path().join("module.py"))
                    .or_else(|_| fs::read(e.path()))
                    .unwrap_or_default();
                (
                    e.file_name().to_string_lossy().into_owned(),
                    String::from_utf8_lossy(&contents).into_owned(),
                )
            })
            .collect();
        names.sort();
        names
    }

    fn fresh() -> Vec<(String, String)> {
        vec![
            ("lib".into(), "x = 1".into()),
            ("lookup.txt".into(), "table".into()),
            ("mapper.sh".into(), "#!/bin/sh\n".into()),
        ]
    }

    #[test]
    fn runs_at_once_have_directories_of_their_own_with_every_entry() {
        let (_dir, dirs) = template();
        let a = dirs.take().unwrap();
        let b = dirs.take().unwrap();
        assert_ne!(a.path(), b.path());
        fs::write(a.path().join("scratch.tmp"), b"a's").unwrap();
        fs::write(b.path().join("scratch.tmp"), b"b's").unwrap();
        assert_eq!(fs::read(a.path().join("scratch.tmp")).unwrap(), b"a's");
        for d in [&a, &b] {
            let mut expected = fresh();
            expected.push((
                "scratch.tmp".into(),
                String::from_utf8_lossy(&fs::read(d.path().join("scratch.tmp")).unwrap())
                    .into_owned(),
            ));
            expected.sort();
            assert_eq!(listing(d.path()), expected);
        }
    }

    #[test]
    fn a_reused_directory_is_as_new_whatever_the_run_did() {
        let (dir, dirs) = template();
        let path = {
            let run = dirs.take().unwrap();
            let p = run.path().to_path_buf();
            fs::write(p.join("out.tmp"), b"left").unwrap();
            fs::create_dir_all(p.join("unpacked/deep")).unwrap();
            fs::write(p.join("unpacked/deep/f"), b"").unwrap();
            fs::remove_file(p.join("lookup.txt")).unwrap();
            fs::remove_file(p.join("lib")).unwrap();
            std::os::unix::fs::symlink("/nowhere", p.join("lib")).unwrap();
            std::os::unix::fs::symlink("/elsewhere", p.join("mine")).unwrap();
            p
        };
        let again = dirs.take().unwrap();
        assert_eq!(again.path(), path, "the directory is reused");
        assert_eq!(listing(again.path()), fresh());
        // What the links lead to is untouched.
        assert_eq!(
            fs::read(dir.path().join("shipped/lookup.txt")).unwrap(),
            b"table"
        );
        assert!(dir.path().join("work/mapper.sh").is_file());
    }

    /// A directory left ready says so until anything is made or removed in it, however soon
    /// after (the clock's coarse ticks do not hide a change).
    #[test]
    fn a_change_right_after_the_directory_is_ready_is_seen() {
        let (dir, dirs) = template();
        let run = dirs.take().unwrap();
        assert!(untouched(run.path()).unwrap());
        fs::remove_file(run.path().join("lib")).unwrap();
        std::os::unix::fs::symlink("/nowhere", run.path().join("lib")).unwrap();
        assert!(!untouched(run.path()).unwrap());
        let path = run.path().to_path_buf();
        drop(run);
        assert!(untouched(&path).unwrap(), "ready again after the reset");
        assert_eq!(
            fs::read_link(path.join("lib")).unwrap(),
            dir.path().join("work/../shipped/lib")
        );
    }

    #[test]
    fn a_directory_that_cannot_be_reset_is_not_reused() {
        let (_dir, dirs) = template();
        let run = dirs.take().unwrap();
        let gone = run.path().to_path_buf();
        // The run took its directory away (`rm -rf "$PWD"`): it cannot be reset.
        fs::remove_dir_all(&gone).unwrap();
        drop(run);
        assert!(dirs.free.lock().unwrap().is_empty());
        let next = dirs.take().unwrap();
        assert_ne!(next.path(), gone);
        assert_eq!(listing(next.path()), fresh());
    }

    #[test]
    fn many_threads_never_share_a_directory() {
        let (_dir, dirs) = template();
        std::thread::scope(|scope| {
            for t in 0..8 {
                let dirs = &dirs;
                scope.spawn(move || {
                    for i in 0..50 {
                        let run = dirs.take().unwrap();
                        let mine = format!("{t}-{i}");
                        let file = run.path().join("scratch");
                        assert!(!file.exists(), "a run found another's file");
                        fs::write(&file, &mine).unwrap();
                        std::thread::yield_now();
                        assert_eq!(fs::read_to_string(&file).unwrap(), mine);
                    }
                });
            }
        });
        assert!(dirs.made.load(Ordering::Relaxed) <= 8);
    }
}
