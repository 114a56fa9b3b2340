//! The local files a job's command line names (a streaming job's `-files`, `-file` and
//! `-conf`), shipped from the submitting machine to every worker, so that a job runs on
//! machines that do not share the submitter's disk.
//!
//! The coordinator lists each named path ([`list`]): a file, or a directory with everything
//! below it. The list goes in [`JobStart::files`](crate::protocol::JobStart); the files'
//! bytes follow the `Start` message on the control connection, file after file in the list's
//! order, each in frames of at most [`CHUNK`] bytes (an empty file has none). The worker
//! writes them below the job's directory ([`Incoming::receive`]) and builds the job with
//! its copies in place of the paths named ([`sluice_streaming::ShippedFiles`]). A worker
//! that cannot take the files still reads them all ([`Incoming::drain`]): the connection
//! stays in step, and the worker answers that the job cannot start.

use std::fs::{self, File};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use sluice_streaming::ShippedFiles;

use crate::link::LinkReader;
use crate::ClusterError;

/// Bytes of a file in one frame.
pub(crate) const CHUNK: usize = 1 << 20;

/// How deep below a shipped directory files are looked for (a symbolic link may make a loop).
const MAX_DEPTH: usize = 32;

/// Entries below one shipped directory, at most (a guard against shipping a home directory).
const MAX_ENTRIES: usize = 100_000;

/// One file or directory shipped, as the worker needs to place it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShippedEntry {
    /// The path as the command line names it.
    pub given: String,
    /// Where below that path (`/`-separated; empty for the path itself).
    pub path: String,
    /// A directory (its files are entries of their own), or a file.
    pub dir: bool,
    /// The file's length in bytes.
    pub len: u64,
    /// Whether the file may be run (its owner may execute it).
    pub executable: bool,
}

/// The entries of the local paths `given`, and the file each entry's bytes are read from.
///
/// # Errors
/// [`ClusterError::Setup`] naming the path if it is not a local path, does not exist, cannot
/// be read, or is a directory too large or too deep to ship.
pub(crate) fn list(given: &[String]) -> Result<Vec<(ShippedEntry, PathBuf)>, ClusterError> {
    let mut entries = Vec::new();
    for name in given {
        let fail = |what: String| {
            ClusterError::Setup(format!("cannot ship {name} to the workers: {what}"))
        };
        let path = sluice_io::local_path(name).map_err(|e| fail(e.to_string()))?;
        let before = entries.len();
        add(name, &path, String::new(), 0, &mut entries).map_err(fail)?;
        if entries.len() - before > MAX_ENTRIES {
            return Err(fail(format!("more than {MAX_ENTRIES} files")));
        }
    }
    Ok(entries)
}

/// Adds `path` (named `below` under `given`) and, for a directory, what it holds.
fn add(
    given: &str,
    path: &Path,
    below: String,
    depth: usize,
    entries: &mut Vec<(ShippedEntry, PathBuf)>,
) -> Result<(), String> {
    if depth > MAX_DEPTH || entries.len() > MAX_ENTRIES {
        return Err(format!(
            "{} is too deep or holds too much (a symbolic link loop?)",
            path.display()
        ));
    }
    // Symbolic links are followed: what a task would read through them is shipped.
    let meta = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let entry = ShippedEntry {
        given: given.to_string(),
        path: below.clone(),
        dir: meta.is_dir(),
        len: if meta.is_dir() { 0 } else { meta.len() },
        executable: meta.permissions().mode() & 0o100 != 0,
    };
    if !meta.is_dir() && !meta.is_file() {
        return Err(format!("{} is not a file or a directory", path.display()));
    }
    entries.push((entry, path.to_path_buf()));
    if meta.is_dir() {
        let mut children = fs::read_dir(path)
            .and_then(|list| {
                list.map(|e| e.map(|e| e.file_name()))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(|e| format!("{}: {e}", path.display()))?;
        // The same order on every run: the workers' copies are made alike.
        children.sort();
        for child in children {
            let Some(text) = child.to_str() else {
                return Err(format!(
                    "{} has a name that is not UTF-8",
                    path.join(&child).display()
                ));
            };
            let below = if below.is_empty() {
                text.to_string()
            } else {
                format!("{below}/{text}")
            };
            add(given, &path.join(&child), below, depth + 1, entries)?;
        }
    }
    Ok(())
}

/// Sends the bytes of the files in `entries` (after the `Start` that lists them), each frame
/// through `send_frame`.
///
/// # Errors
/// [`ClusterError::Setup`] naming the file if it cannot be read or changed length since it
/// was listed; what `send_frame` returns (the worker cannot be reached).
pub(crate) fn send(
    entries: &[(ShippedEntry, PathBuf)],
    send_frame: &mut dyn FnMut(&[u8]) -> Result<(), ClusterError>,
) -> Result<(), ClusterError> {
    let mut buffer = vec![0u8; CHUNK];
    for (entry, path) in entries.iter().filter(|(e, _)| !e.dir) {
        let fail = |what: String| {
            ClusterError::Setup(format!(
                "cannot ship {} to the workers: {what}",
                path.display()
            ))
        };
        let mut file = File::open(path).map_err(|e| fail(e.to_string()))?;
        let mut left = entry.len;
        while left > 0 {
            let want = usize::try_from(left).map_or(CHUNK, |left| left.min(CHUNK));
            let n = file
                .read(&mut buffer[..want])
                .map_err(|e| fail(e.to_string()))?;
            if n == 0 {
                return Err(fail(format!(
                    "it became shorter while being shipped ({} bytes, not {})",
                    entry.len - left,
                    entry.len
                )));
            }
            send_frame(&buffer[..n])?;
            left -= n as u64;
        }
    }
    Ok(())
}

/// The shipped files of a job arriving at a worker, after its `Start`.
pub(crate) struct Incoming<'a> {
    reader: &'a mut LinkReader,
    entries: Vec<ShippedEntry>,
    /// The entry whose bytes come next.
    next: usize,
    /// Bytes of that entry still to come.
    left: u64,
}

impl<'a> Incoming<'a> {
    /// The files `entries` lists, to come over `reader`.
    pub(crate) fn new(reader: &'a mut LinkReader, entries: Vec<ShippedEntry>) -> Incoming<'a> {
        let left = entries.first().map_or(0, |e| e.len);
        Incoming {
            reader,
            entries,
            next: 0,
            left,
        }
    }

    /// Whether no file is shipped.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Writes the files below `dir` (created): the `n`th path named on the command line
    /// becomes `dir/n/NAME`, `NAME` its own last component.
    ///
    /// # Errors
    /// [`ClusterError::Setup`] if a file cannot be written (the rest can still be drained);
    /// [`ClusterError::Protocol`] if the list or the frames are not what the protocol says.
    pub(crate) fn receive(&mut self, dir: &Path) -> Result<ShippedFiles, ClusterError> {
        let mut shipped = ShippedFiles::default();
        let mut roots: Vec<(String, PathBuf)> = Vec::new();
        while self.next < self.entries.len() {
            let entry = self.entries[self.next].clone();
            let root = match roots.iter().find(|(given, _)| *given == entry.given) {
                Some((_, root)) => root.clone(),
                None => {
                    let root = dir
                        .join(roots.len().to_string())
                        .join(base_name(&entry.given));
                    shipped.insert(entry.given.clone(), root.clone());
                    roots.push((entry.given.clone(), root.clone()));
                    root
                }
            };
            let target = below(&root, &entry.path).ok_or_else(|| self.bad_list(&entry))?;
            let fail = |e: std::io::Error| {
                ClusterError::Setup(format!("cannot write {}: {e}", target.display()))
            };
            if entry.dir {
                fs::create_dir_all(&target).map_err(fail)?;
                self.advance();
                continue;
            }
            if let Some(parent) = target.parent() {
                fs::create_dir_all(parent).map_err(fail)?;
            }
            let mut file = File::create_new(&target).map_err(fail)?;
            while self.left > 0 {
                let frame = self.frame()?;
                file.write_all(&frame).map_err(fail)?;
            }
            let mode = if entry.executable { 0o755 } else { 0o644 };
            file.set_permissions(fs::Permissions::from_mode(mode))
                .map_err(fail)?;
            self.advance();
        }
        Ok(shipped)
    }

    /// Reads and drops what was not received.
    ///
    /// # Errors
    /// [`ClusterError::Protocol`] or [`ClusterError::Net`]: the connection is out of step.
    pub(crate) fn drain(&mut self) -> Result<(), ClusterError> {
        while self.next < self.entries.len() {
            while self.left > 0 {
                self.frame()?;
            }
            self.advance();
        }
        Ok(())
    }

    /// The next frame of the current file, counted off what is left of it.
    fn frame(&mut self) -> Result<bytes::Bytes, ClusterError> {
        let peer = || "the coordinator".to_string();
        let frame = self
            .reader
            .recv_frame()?
            .ok_or_else(|| ClusterError::Protocol {
                peer: peer(),
                reason: "closed the connection while shipping the job's files".into(),
            })?;
        let len = frame.len() as u64;
        if len == 0 || len > self.left {
            return Err(ClusterError::Protocol {
                peer: peer(),
                reason: format!(
                    "sent {len} bytes of a shipped file where {} were left",
                    self.left
                ),
            });
        }
        self.left -= len;
        Ok(frame)
    }

    fn advance(&mut self) {
        self.next += 1;
        self.left = self
            .entries
            .get(self.next)
            .map_or(0, |e| if e.dir { 0 } else { e.len });
    }

    fn bad_list(&self, entry: &ShippedEntry) -> ClusterError {
        ClusterError::Protocol {
            peer: "the coordinator".into(),
            reason: format!(
                "listed a shipped file outside its directory: {:?} below {:?}",
                entry.path, entry.given
            ),
        }
    }
}

/// The name a shipped path's copy gets: its last component, as a task would see it.
fn base_name(given: &str) -> String {
    sluice_io::local_path(given)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "shipped".to_string())
}

/// `root` joined with the `/`-separated `path`, unless that would leave `root`.
fn below(root: &Path, path: &str) -> Option<PathBuf> {
    let mut target = root.to_path_buf();
    if path.is_empty() {
        return Some(target);
    }
    for part in path.split('/') {
        let mut components = Path::new(part).components();
        match (components.next(), components.next()) {
            (Some(Component::Normal(name)), None) => target.push(name),
            _ => return None,
        }
    }
    Some(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_below_a_shipped_directory_stay_below_it() {
        let root = Path::new("/s/0/lib");
        assert_eq!(below(root, ""), Some(root.to_path_buf()));
        assert_eq!(below(root, "a/b.py"), Some(root.join("a/b.py")));
        for bad in ["..", "a/../../x", "/etc/passwd", "a/./b/..", "a//b", "a/"] {
            assert_eq!(below(root, bad), None, "{bad}");
        }
    }

    #[test]
    fn shipped_copies_are_named_by_the_last_component() {
        assert_eq!(base_name("lib/map.py"), "map.py");
        assert_eq!(base_name("file:///data/dict.txt"), "dict.txt");
        assert_eq!(base_name("/"), "shipped");
    }

    #[test]
    fn directories_are_listed_with_everything_below_them_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("lib");
        fs::create_dir_all(lib.join("pkg/empty")).unwrap();
        fs::write(lib.join("pkg/b.py"), "b").unwrap();
        fs::write(lib.join("a.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(lib.join("a.sh"), fs::Permissions::from_mode(0o700)).unwrap();
        let single = dir.path().join("dict.txt");
        fs::write(&single, "words").unwrap();
        let given = vec![lib.display().to_string(), single.display().to_string()];
        let listed = list(&given).unwrap();
        let seen: Vec<(&str, bool, u64, bool)> = listed
            .iter()
            .map(|(e, _)| (e.path.as_str(), e.dir, e.len, e.executable))
            .collect();
        assert_eq!(
            seen,
            [
                ("", true, 0, true),
                ("a.sh", false, 10, true),
                ("pkg", true, 0, true),
                ("pkg/b.py", false, 1, false),
                ("pkg/empty", true, 0, true),
                ("", false, 5, false),
            ]
        );
        let missing = list(&["no/such/file".to_string()]).unwrap_err().to_string();
        assert!(missing.contains("no/such/file"), "{missing}");
    }
}
