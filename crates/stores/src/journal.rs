//! What a job has left open on remote stores, written down as it happens, so that a watcher
//! process can undo it if the job's process dies without cleaning up (`SIGKILL`, a crash).
//!
//! A job killed outright runs no destructor: an HDFS job leaves its hidden staging directory,
//! an S3 job its uploads (invisible, but stored and billed until aborted). The job's
//! committers append each thing they open to a local journal file (JSON lines, readable by the
//! user only), and `Done` once the job's output is committed or aborted. `sluice` starts a
//! watcher beside a job that writes to a remote store; when the job's process ends, the
//! watcher reads the journal and, unless it ends in `Done`, undoes what it lists
//! ([`clean_up`]).
//!
//! Each thing is named before it is opened, not after: S3 tells an upload's id only in its
//! answer to the request that starts the upload, so a process killed between that answer and
//! the journal's line would leave an upload nobody can name. What is written first is where
//! uploads will be: an S3 output's prefix when its committer sets the job up
//! ([`JournalEntry::Output`]), a standalone object's key before its upload starts
//! ([`JournalEntry::Opening`]). The watcher lists the uploads open there and aborts them.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sluice_io::{IoError, Location, RemoteStores};

use crate::{RemoteConnector, StoreConfig};

/// One line of the journal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JournalEntry {
    /// The job's store settings (the `-D` properties), to connect to the stores again.
    Config {
        /// The properties.
        properties: BTreeMap<String, String>,
    },
    /// A staging directory the job created (HDFS), or the staging prefix where its workers
    /// leave manifests (S3): deleted unless the job finished.
    Staging {
        /// Its location.
        location: String,
    },
    /// An S3 output the job set up, written before any of its part files is started: every
    /// multipart upload under it (`location/…`) is aborted unless the job finished, those
    /// whose ids the journal never got included.
    ///
    /// The uploads under the output are the job's because the output is: setting the job up
    /// refused an output that existed, part files are uploads to keys under it (the keys a
    /// completed upload gets: S3 has no rename, so a key cannot carry the job's name), and
    /// uploads of the job's tasks on other processes are under it too. Only the output's own
    /// prefix with its `/` is listed, never a shared parent: `out2/` and `output/` beside
    /// `out/` are other jobs'. (A second job started on the same output before this one
    /// ends would lose its uploads and fail its commit, leaving nothing partial: Hadoop S3A's
    /// committers treat the uploads under a destination the same way.)
    Output {
        /// The output's location.
        location: String,
    },
    /// A standalone S3 object (written outside a committer) whose multipart upload is about to
    /// start, written before the request: every upload of exactly this key is aborted unless
    /// the job finished. The key is the job's: the writer was refused if anything was there.
    Opening {
        /// The object's location.
        location: String,
    },
    /// A multipart upload the job started (S3): aborted unless the job finished.
    Upload {
        /// The object's location.
        location: String,
        /// The upload's id.
        upload_id: String,
    },
    /// An upload that needs nothing more from this process: completed by its writer (a file
    /// written outside a committer), aborted, or handed to the job's owner (a worker's
    /// committed task). Its [`JournalEntry::Upload`] is left alone.
    Closed {
        /// The upload's id.
        upload_id: String,
    },
    /// An object the job's commit made visible: deleted unless the job finished.
    Completed {
        /// Its location.
        location: String,
    },
    /// An output directory the job's commit made visible, before its `_SUCCESS`: deleted
    /// unless the job finished.
    Published {
        /// Its location.
        location: String,
    },
    /// The job's output is committed or aborted: nothing to undo.
    Done,
}

/// What to do when a journal is first written to: start the watcher of
/// [`Journal::new`]'s documentation.
pub type OnFirstEntry = Box<dyn FnOnce(&Path) -> io::Result<()> + Send>;

/// The journal of one job: see the module documentation. Shared by its committers.
///
/// Nothing is created until the first entry: a job that opens nothing on a remote store
/// leaves no file and starts no watcher.
pub struct Journal {
    path: PathBuf,
    properties: BTreeMap<String, String>,
    state: Mutex<JournalState>,
}

struct JournalState {
    file: Option<File>,
    on_first_entry: Option<OnFirstEntry>,
    /// Whether a watcher took the journal on: only a watcher removes it once the job's
    /// process is gone. Without one, the job removes it itself when it records `Done`.
    watched: bool,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal").field("path", &self.path).finish()
    }
}

impl Journal {
    /// A journal at `path` of a job with `config`'s settings. On the first entry the file is
    /// created (readable and writable by the user only: it holds the job's store settings,
    /// credentials among them), starting with the settings, and `on_first_entry` is called
    /// with its path (to start the watcher).
    pub fn new(path: &Path, config: &StoreConfig, on_first_entry: OnFirstEntry) -> Journal {
        Journal {
            path: path.to_path_buf(),
            properties: config
                .properties()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            state: Mutex::new(JournalState {
                file: None,
                on_first_entry: Some(on_first_entry),
                watched: false,
            }),
        }
    }

    /// Where the journal is (once written).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entry`. Each entry is one `write` of a whole line, so a watcher reading after
    /// the process died sees whole lines.
    ///
    /// If the watcher could not be started, nothing will remove the journal after the job;
    /// so recording `Done` then removes it (there is nothing left to undo), and a job killed
    /// before that leaves it behind with what it lists.
    ///
    /// # Errors
    /// If the file cannot be created or written, or the watcher not started.
    pub fn record(&self, entry: &JournalEntry) -> io::Result<()> {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.file.is_none() {
            let mut file = OpenOptions::new()
                .create_new(true)
                .append(true)
                .mode(0o600)
                .open(&self.path)?;
            file.write_all(&line(&JournalEntry::Config {
                properties: self.properties.clone(),
            })?)?;
            state.file = Some(file);
        }
        // The entry is written even when the watcher does not start: the journal is then
        // the only record of what a killed job left.
        let started = match state.on_first_entry.take() {
            Some(start) => start(&self.path).map(|()| state.watched = true),
            None => Ok(()),
        };
        let written = match state.file.as_mut() {
            Some(file) => file.write_all(&line(entry)?),
            None => Ok(()),
        };
        if matches!(entry, JournalEntry::Done) && !state.watched {
            // The open file stays: entries after this go to the unlinked file, out of sight.
            match std::fs::remove_file(&self.path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        written.and(started)
    }
}

/// `entry` as one line of JSON.
fn line(entry: &JournalEntry) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(entry).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Records `entry` in `journal` if there is one; a journal that cannot be written only
/// weakens the clean-up after a kill, so the job goes on.
pub(crate) fn note(journal: Option<&Journal>, entry: JournalEntry) {
    if let Some(journal) = journal {
        let _ = journal.record(&entry);
    }
}

/// How long [`clean_up`] waits before deleting a commit's files a second time: a completion
/// the dead process had sent may still land.
const LATE_COMPLETION: std::time::Duration = std::time::Duration::from_secs(3);

/// What [`clean_up`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CleanUp {
    /// Whether the journal said the job finished (then nothing was done).
    pub finished: bool,
    /// Staging directories and published outputs deleted.
    pub deleted_dirs: Vec<String>,
    /// Uploads aborted.
    pub aborted_uploads: usize,
    /// Completed objects deleted.
    pub deleted_objects: usize,
    /// What could not be undone, with the reason.
    pub failures: Vec<String>,
}

/// Undoes what the journal at `path` lists, unless it ends with [`JournalEntry::Done`]; then
/// removes the journal. The stores are configured from the journal's settings and the
/// process environment.
///
/// # Errors
/// If the journal cannot be read.
pub fn clean_up(path: &Path) -> io::Result<CleanUp> {
    let entries = read_journal(path)?;
    let mut report = CleanUp::default();
    if entries.contains(&JournalEntry::Done) {
        report.finished = true;
        let _ = std::fs::remove_file(path);
        return Ok(report);
    }
    let properties = entries
        .iter()
        .find_map(|e| match e {
            JournalEntry::Config { properties } => Some(properties.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let config = StoreConfig::from_env(properties.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .map_err(io::Error::other)?;
    let stores = RemoteConnector::new(config, "clean-up");
    let mut fail = |what: &str, e: IoError| report_failure(&mut report.failures, what, &e);
    let mut deleted_dirs = Vec::new();
    #[cfg_attr(not(feature = "s3"), allow(unused_variables))]
    let closed: std::collections::HashSet<&str> = entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Closed { upload_id } => Some(upload_id.as_str()),
            _ => None,
        })
        .collect();
    #[cfg_attr(not(feature = "s3"), allow(unused_mut))]
    let mut aborted = 0;
    let mut deleted_objects = 0;
    // Uploads first: one the job was completing when it died may still complete, so files a
    // commit published are deleted after the aborts, and once more a little later. First
    // where uploads were to be: the open ones there are aborted whatever their ids, and the
    // ids noted there need nothing more once that listing succeeded.
    #[cfg_attr(not(feature = "s3"), allow(unused_mut))]
    let mut listed: Vec<String> = Vec::new();
    #[cfg(feature = "s3")]
    for entry in &entries {
        let (location, tree) = match entry {
            JournalEntry::Output { location } => (location, true),
            JournalEntry::Opening { location } => (location, false),
            _ => continue,
        };
        match abort_open_uploads(&stores, location, tree) {
            Ok(count) => {
                aborted += count;
                listed.push(if tree {
                    format!("{location}/")
                } else {
                    location.clone()
                });
            }
            Err(e) => fail(location, e),
        }
    }
    #[cfg_attr(not(feature = "s3"), allow(unused_variables))]
    let covered = |location: &str| {
        listed
            .iter()
            .any(|l| l == location || (l.ends_with('/') && location.starts_with(l.as_str())))
    };
    for entry in &entries {
        match entry {
            #[cfg(feature = "s3")]
            JournalEntry::Upload {
                location,
                upload_id,
            } if !closed.contains(upload_id.as_str()) && !covered(location) => {
                match abort_upload(&stores, location, upload_id) {
                    Ok(()) => aborted += 1,
                    Err(e) => fail(location, e),
                }
            }
            JournalEntry::Staging { location } | JournalEntry::Published { location } => {
                match delete_dir(&stores, location) {
                    Ok(true) => deleted_dirs.push(location.clone()),
                    Ok(false) => {}
                    Err(e) => fail(location, e),
                }
            }
            _ => {}
        }
    }
    let published: Vec<&String> = entries
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Completed { location } => Some(location),
            _ => None,
        })
        .collect();
    for round in 0..2 {
        if round > 0 && !published.is_empty() {
            std::thread::sleep(LATE_COMPLETION);
        }
        for location in &published {
            match parse(location).and_then(|l| stores.storage(&l)?.delete(&l)) {
                Ok(true) => deleted_objects += 1,
                Ok(false) => {}
                Err(e) => fail(location, e),
            }
        }
    }
    report.deleted_dirs = deleted_dirs;
    report.aborted_uploads = aborted;
    report.deleted_objects = deleted_objects;
    if report.failures.is_empty() {
        let _ = std::fs::remove_file(path);
    }
    Ok(report)
}

fn report_failure(failures: &mut Vec<String>, what: &str, error: &IoError) {
    let mut text = format!("{what}: {error}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    failures.push(text);
}

fn read_journal(path: &Path) -> io::Result<Vec<JournalEntry>> {
    let file = File::open(path)?;
    let mut entries = Vec::new();
    for line in BufReader::new(file).lines() {
        // A torn last line (the process died mid-write) is skipped.
        if let Ok(entry) = serde_json::from_str(&line?) {
            entries.push(entry);
        }
    }
    Ok(entries)
}

fn parse(location: &str) -> Result<Location, IoError> {
    Location::parse(location)
}

/// Deletes a directory tree of the job's (on S3, the objects under the prefix); `false` if
/// nothing was there.
fn delete_dir(stores: &RemoteConnector, location: &str) -> Result<bool, IoError> {
    let location = parse(location)?;
    match location.scheme() {
        #[cfg(feature = "hdfs")]
        sluice_io::Scheme::Hdfs => stores.hdfs(&location)?.delete_tree(&location),
        #[cfg(feature = "s3")]
        sluice_io::Scheme::S3 => Ok(stores.s3(&location)?.delete_prefix(&location)? > 0),
        _ => {
            let _ = stores;
            Ok(false)
        }
    }
}

/// Aborts the uploads open at `location` (with `tree`, under it); how many. Only S3 has
/// uploads: a location elsewhere has none.
#[cfg(feature = "s3")]
fn abort_open_uploads(
    stores: &RemoteConnector,
    location: &str,
    tree: bool,
) -> Result<usize, IoError> {
    let location = parse(location)?;
    if location.scheme() != sluice_io::Scheme::S3 {
        return Ok(0);
    }
    stores.s3(&location)?.abort_open_uploads(&location, tree)
}

#[cfg(feature = "s3")]
fn abort_upload(stores: &RemoteConnector, location: &str, upload_id: &str) -> Result<(), IoError> {
    let location = parse(location)?;
    let storage = stores.s3(&location)?;
    let key = location.path_str().unwrap_or_default().to_string();
    let upload = crate::PendingUpload {
        key,
        upload_id: Some(upload_id.to_string()),
        parts: Vec::new(),
        len: 0,
    };
    crate::runtime::block_on(storage.abort(&upload))
        .and_then(|r| r)
        .map_err(|e| crate::error::write_error(&location, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(lines: &[&str]) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("journal.jsonl");
        std::fs::write(&path, lines.join("\n")).expect("written");
        (dir, path)
    }

    #[test]
    fn a_finished_job_is_left_alone() {
        let (_dir, path) = write(&[
            r#"{"config":{"properties":{}}}"#,
            r#"{"staging":{"location":"hdfs://127.0.0.1:1/x"}}"#,
            r#""done""#,
        ]);
        let report = clean_up(&path).expect("reads");
        assert!(report.finished);
        assert!(!path.exists(), "the journal is removed");
    }

    #[test]
    fn closed_uploads_and_a_torn_last_line_are_skipped() {
        // Nothing is left to undo: no store is contacted (none could be: no credentials).
        let (_dir, path) = write(&[
            r#"{"config":{"properties":{}}}"#,
            r#"{"upload":{"location":"s3://bkt/k","upload_id":"u1"}}"#,
            r#"{"closed":{"upload_id":"u1"}}"#,
            r#"{"upload":{"locat"#,
        ]);
        let report = clean_up(&path).expect("reads");
        assert!(!report.finished);
        assert_eq!(report.aborted_uploads, 0);
        assert!(report.failures.is_empty(), "{:?}", report.failures);
    }

    #[test]
    fn entries_are_whole_lines_written_once_the_first_comes() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("j.jsonl");
        let started = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = std::sync::Arc::clone(&started);
        let journal = Journal::new(
            &path,
            &StoreConfig::from_parts([("a", "b")], []),
            Box::new(move |_| {
                seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(())
            }),
        );
        assert!(!path.exists(), "nothing before the first entry");
        journal.record(&JournalEntry::Done).expect("records");
        journal.record(&JournalEntry::Done).expect("records");
        assert_eq!(started.load(std::sync::atomic::Ordering::SeqCst), 1);
        let text = std::fs::read_to_string(&path).expect("reads");
        assert_eq!(
            text,
            "{\"config\":{\"properties\":{\"a\":\"b\"}}}\n\"done\"\n\"done\"\n"
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .expect("exists")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_journal_no_watcher_took_on_is_removed_when_the_job_is_done() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let path = dir.path().join("j.jsonl");
        let journal = Journal::new(
            &path,
            &StoreConfig::from_parts([("a", "b")], []),
            Box::new(|_| Err(io::Error::other("cannot start the watcher"))),
        );
        let staging = JournalEntry::Staging {
            location: "hdfs://127.0.0.1:1/x".to_string(),
        };
        assert!(
            journal.record(&staging).is_err(),
            "the failed start is told"
        );
        journal.record(&staging).expect("records");
        let text = std::fs::read_to_string(&path).expect("kept while the job runs");
        assert_eq!(text.lines().count(), 3, "{text}");
        journal.record(&JournalEntry::Done).expect("records");
        assert!(!path.exists(), "nothing else would remove it");
        journal.record(&staging).expect("records");
        assert!(!path.exists(), "not made again by a later entry");
    }
}
