//! Atomic job output on S3, which has no rename: part files are multipart uploads that are
//! completed only at job commit (the idea of Hadoop S3A's "magic" committer).
//!
//! A task attempt's writer uploads every part of its file but does not complete the upload:
//! S3 shows nothing of an upload until it is completed. Committing the task only records the
//! upload as the part file's; committing the job completes the recorded uploads, then writes
//! `_SUCCESS` holding a manifest of the files, in the JSON form S3A's committers write
//! (`SuccessData`). Aborting a task or the job aborts its uploads.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use futures::StreamExt;
use serde::Serialize;
use sluice_io::{IoError, JobCommitter, Location, PartAttempt, Storage, StorageWriter};

use crate::error::{io_error, write_error};
use crate::journal::{note, Journal, JournalEntry};
use crate::runtime::block_on;
use crate::s3::{Completion, PendingUpload};
use crate::{is_plain_name, S3Storage};

/// Uploads completed (or aborted) at once at job commit.
const CONCURRENT_COMPLETIONS: usize = 16;

/// The committer of a job's output on S3: see the module documentation.
///
/// What is visible at the output if the job stops at any point:
/// * before job commit, nothing: the part files are uploads not yet completed. A failed or
///   aborted job, or a committer dropped without a commit, aborts them, and any other upload
///   left open under the output (a dead worker's). A job killed outright leaves its uploads
///   open (invisible, but billed until aborted): `sluice`'s clean-up watcher aborts every one
///   under the output, which the journal names at set-up before any is started (see
///   [`JournalEntry::Output`]), and a bucket lifecycle rule for incomplete uploads is the
///   store's own safety net;
/// * during job commit the part files appear one by one, and `_SUCCESS` only after all of
///   them: readers that wait for `_SUCCESS` never take a partial output. If completing fails,
///   the files completed so far are deleted and the rest aborted.
///
/// Its tasks may run in other processes (a cluster's workers), through committers attached to
/// its staging prefix ([`S3MagicCommitter::attach`]): there a committed task's upload is
/// recorded as a manifest, `STAGING/NAME.ATTEMPT.pending` (the upload's key, id and parts),
/// which the job commit reads and completes as its own, keeping one attempt of each part file
/// and aborting the others. The staging prefix is a hidden sibling of the output,
/// `.NAME.sluice-pending-JOB`, removed at job commit or abort.
#[derive(Debug)]
pub struct S3MagicCommitter {
    storage: S3Storage,
    output: Location,
    state: State,
    uploads: Arc<Mutex<Uploads>>,
    job_id: String,
    journal: Option<Arc<Journal>>,
    /// Where attached committers leave their committed tasks' manifests (`None` for an
    /// output without a parent, the bucket itself: its tasks run in this process only).
    staging: Option<Location>,
    /// Whether this committer is attached to a job another process owns.
    attached: bool,
}

/// The suffix of a committed task's manifest in the staging prefix.
const PENDING: &str = ".pending";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    New,
    Running,
    Committed,
    Aborted,
}

/// The uploads of the job's attempts.
#[derive(Debug, Default)]
struct Uploads {
    /// Finished writers' uploads, by (part name, attempt), not yet committed or aborted.
    written: HashMap<(String, u32), PendingUpload>,
    /// The committed attempt's upload of each part file.
    committed: BTreeMap<String, PendingUpload>,
}

impl S3MagicCommitter {
    /// A committer of output at `output` in `storage`'s bucket; nothing is touched until
    /// [`JobCommitter::setup_job`].
    pub fn new(storage: S3Storage, output: &Location, job_id: &str) -> S3MagicCommitter {
        let staging = match (output.parent(), output.file_name()) {
            (Some(parent), Some(name)) if is_plain_name(job_id) => Some(parent.join(format!(
                ".{}.sluice-pending-{job_id}",
                name.to_string_lossy()
            ))),
            _ => None,
        };
        S3MagicCommitter {
            storage,
            output: output.clone(),
            state: State::New,
            uploads: Arc::default(),
            job_id: job_id.to_string(),
            journal: None,
            staging,
            attached: false,
        }
    }

    /// A committer for task attempts of a job that another process set up at `output` with
    /// its staging prefix `staging` ([`JobCommitter::staging`]): its committed tasks are
    /// manifests in `staging`, which that process's job commit completes. It cannot commit or
    /// set up the job; aborting it (or dropping it) aborts its uncommitted uploads only.
    ///
    /// # Errors
    /// [`IoError::Write`] if `staging` is not the staging prefix of a job writing `output`.
    pub fn attach(
        storage: S3Storage,
        output: &Location,
        staging: &Location,
    ) -> Result<S3MagicCommitter, IoError> {
        let fits = match (output.parent(), output.file_name(), staging.file_name()) {
            (Some(parent), Some(name), Some(staging_name)) => {
                let prefix = format!(".{}.sluice-pending-", name.to_string_lossy());
                staging.parent().as_ref() == Some(&parent)
                    && staging_name
                        .to_str()
                        .and_then(|n| n.strip_prefix(&prefix))
                        .is_some_and(is_plain_name)
            }
            _ => false,
        };
        if !fits {
            return Err(write_error(
                staging,
                io_error(
                    std::io::ErrorKind::InvalidInput,
                    format!(
                        "not the staging prefix of output {output} (a hidden \
                         .NAME.sluice-pending-JOB beside it)"
                    ),
                ),
            ));
        }
        Ok(S3MagicCommitter {
            storage,
            output: output.clone(),
            state: State::Running,
            uploads: Arc::default(),
            job_id: String::new(),
            journal: None,
            staging: Some(staging.clone()),
            attached: true,
        })
    }

    /// The same committer, recording in `journal` (see [`Journal`]) the output it sets up and
    /// what its commit publishes, or, attached, the uploads it hands to the job's owner (the
    /// uploads themselves are recorded by the storage's writers).
    #[must_use]
    pub fn with_journal(mut self, journal: Option<Arc<Journal>>) -> S3MagicCommitter {
        self.journal = journal;
        self
    }

    /// Every upload the job has open (written and committed, not yet completed), for a
    /// watcher that aborts them should this process die.
    pub fn open_uploads(&self) -> Vec<PendingUpload> {
        let uploads = lock(&self.uploads);
        uploads
            .written
            .values()
            .chain(uploads.committed.values())
            .cloned()
            .collect()
    }

    fn misuse(&self) -> IoError {
        let what = match self.state {
            State::Running if self.attached => {
                "the job's output is committed by the process that set it up (this committer \
                 is attached to it, for its tasks)"
            }
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

    fn check_part(&self, part: PartAttempt<'_>) -> Result<Location, IoError> {
        if self.state != State::Running {
            return Err(self.misuse());
        }
        let location = self.output.join(part.name);
        if !is_plain_name(part.name) {
            return Err(write_error(
                &location,
                io_error(std::io::ErrorKind::InvalidInput, "not a plain file name"),
            ));
        }
        Ok(location)
    }

    /// Aborts `uploads`, several at once; the first error, after trying all.
    fn abort_all(&self, uploads: Vec<PendingUpload>) -> Result<(), IoError> {
        let storage = &self.storage;
        let results: Vec<(Option<String>, std::io::Result<()>)> =
            block_on(
                futures::stream::iter(uploads)
                    .map(|upload| async move {
                        (upload.upload_id.clone(), storage.abort(&upload).await)
                    })
                    .buffer_unordered(CONCURRENT_COMPLETIONS)
                    .collect(),
            )
            .map_err(|e| write_error(&self.output, e))?;
        let mut first_error = None;
        for (upload_id, result) in results {
            match result {
                // Nothing left for the watcher to abort.
                Ok(()) => {
                    if let Some(upload_id) = upload_id {
                        note(self.journal.as_deref(), JournalEntry::Closed { upload_id });
                    }
                }
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        first_error.map_or(Ok(()), |e| Err(write_error(&self.output, e)))
    }

    /// The manifests attached committers left in the staging prefix: each part file's
    /// committed upload (the lowest attempt's, when several attempts committed), the uploads
    /// of the other attempts, and the manifests' locations.
    #[allow(clippy::type_complexity)]
    fn pending_manifests(
        &self,
    ) -> Result<
        (
            BTreeMap<String, PendingUpload>,
            Vec<PendingUpload>,
            Vec<Location>,
        ),
        IoError,
    > {
        let mut chosen: BTreeMap<String, (u32, PendingUpload)> = BTreeMap::new();
        let mut others = Vec::new();
        let mut manifests = Vec::new();
        let Some(staging) = &self.staging else {
            return Ok((BTreeMap::new(), others, manifests));
        };
        for file in self.storage.list(staging)? {
            if file.is_dir {
                continue;
            }
            let location = file.location.clone();
            let Some(stem) = location
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(PENDING))
                .map(str::to_string)
            else {
                continue;
            };
            manifests.push(location.clone());
            let (name, attempt) = match stem.rsplit_once('.') {
                Some((name, attempt)) => (name.to_string(), attempt.parse::<u32>().ok()),
                None => (stem.clone(), None),
            };
            let bad = |what: String| {
                write_error(&location, io_error(std::io::ErrorKind::InvalidData, what))
            };
            let Some(attempt) = attempt.filter(|_| is_plain_name(&name)) else {
                return Err(bad("not a manifest of a part file's attempt".into()));
            };
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(
                &mut self.storage.open_range(&location, 0, file.len)?,
                &mut bytes,
            )
            .map_err(|e| bad(e.to_string()))?;
            let upload: PendingUpload =
                serde_json::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
            // The manifest names its upload: it must be the part file's own key.
            let expected = self.storage.path(&self.output.join(&name))?;
            if upload.key != expected.as_ref() {
                let key = upload.key.clone();
                return Err(bad(format!("its upload is for {key}, not {name}")));
            }
            match chosen.get(&name) {
                Some((kept, _)) if *kept <= attempt => others.push(upload),
                _ => {
                    if let Some((_, replaced)) = chosen.insert(name, (attempt, upload)) {
                        others.push(replaced);
                    }
                }
            }
        }
        let chosen = chosen.into_iter().map(|(n, (_, u))| (n, u)).collect();
        Ok((chosen, others, manifests))
    }

    /// Deletes the manifests in the staging prefix (best effort: they hold no data, and a
    /// failure here is not the job's).
    fn remove_manifests(&self, manifests: &[Location]) {
        for manifest in manifests {
            let _ = self.storage.delete(manifest);
        }
    }

    /// Completes the committed uploads and writes `_SUCCESS`; on failure takes back what was
    /// completed.
    fn publish(&self, committed: BTreeMap<String, PendingUpload>) -> Result<(), IoError> {
        let storage = &self.storage;
        let uploads: Vec<PendingUpload> = committed.into_values().collect();
        for upload in &uploads {
            note(
                self.journal.as_deref(),
                JournalEntry::Completed {
                    location: self.output.with_path_str(&upload.key).to_string(),
                },
            );
        }
        let results: Vec<(PendingUpload, std::io::Result<()>)> = block_on(
            futures::stream::iter(uploads)
                .map(|upload| async move {
                    let result = storage.complete(&upload).await;
                    (upload, result)
                })
                .buffer_unordered(CONCURRENT_COMPLETIONS)
                .collect(),
        )
        .map_err(|e| write_error(&self.output, e))?;
        let failed = results.iter().find_map(|(_, r)| r.as_ref().err());
        if let Some(error) = failed {
            let error = io_error(error.kind(), error.to_string());
            self.take_back(&results);
            return Err(write_error(&self.output, error));
        }
        let mut files: Vec<String> = results.iter().map(|(u, _)| format!("/{}", u.key)).collect();
        files.sort();
        let success = self.output.join("_SUCCESS");
        // Named first, as the part files were: killed after writing it, the job must not
        // leave `_SUCCESS` over an output its watcher takes back.
        note(
            self.journal.as_deref(),
            JournalEntry::Completed {
                location: success.to_string(),
            },
        );
        let manifest = SuccessData::new(&self.job_id, files);
        let json = serde_json::to_vec_pretty(&manifest).map_err(|e| {
            write_error(&success, io_error(std::io::ErrorKind::Other, e.to_string()))
        })?;
        if let Err(e) = self.storage.put(&success, json) {
            self.take_back(&results);
            return Err(e);
        }
        Ok(())
    }

    /// Deletes the objects of completed uploads and aborts the others (best effort: the
    /// commit's own error is the one reported).
    fn take_back(&self, results: &[(PendingUpload, std::io::Result<()>)]) {
        let storage = &self.storage;
        let _ = block_on(
            futures::stream::iter(results)
                .map(|(upload, result)| async move {
                    match result {
                        Ok(()) => storage.delete_key(&upload.key).await,
                        Err(_) => storage.abort(upload).await,
                    }
                })
                .buffer_unordered(CONCURRENT_COMPLETIONS)
                .collect::<Vec<_>>(),
        );
    }
}

fn lock(uploads: &Mutex<Uploads>) -> MutexGuard<'_, Uploads> {
    // The table stays consistent whatever a panicking holder did: each change is one insert
    // or remove.
    uploads
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl JobCommitter for S3MagicCommitter {
    fn output(&self) -> &Location {
        &self.output
    }

    fn setup_job(&mut self) -> Result<(), IoError> {
        if self.state != State::New || self.attached {
            return Err(self.misuse());
        }
        if self.storage.status(&self.output)?.is_some() {
            return Err(IoError::OutputExists {
                path: self.output.error_path(),
            });
        }
        // Before any part file is started: a watcher then finds every upload of the job,
        // including one whose id this process died before writing down.
        note(
            self.journal.as_deref(),
            JournalEntry::Output {
                location: self.output.to_string(),
            },
        );
        if let Some(staging) = &self.staging {
            note(
                self.journal.as_deref(),
                JournalEntry::Staging {
                    location: staging.to_string(),
                },
            );
        }
        self.state = State::Running;
        Ok(())
    }

    fn create_part(&self, part: PartAttempt<'_>, _buffer: usize) -> Result<StorageWriter, IoError> {
        let location = self.check_part(part)?;
        let uploads = Arc::clone(&self.uploads);
        let storage = self.storage.clone();
        let key = (part.name.to_string(), part.attempt);
        let sink = Box::new(move |upload: PendingUpload| {
            let replaced = lock(&uploads).written.insert(key, upload);
            if let Some(old) = replaced {
                // An earlier run of the same attempt: its upload is not wanted.
                let _ = block_on(storage.abort(&old));
            }
        });
        let writer = self.storage.writer(&location, Completion::Pending(sink))?;
        Ok(StorageWriter::new(Box::new(writer)))
    }

    fn commit_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        let location = self.check_part(part)?;
        let mut uploads = lock(&self.uploads);
        let upload = uploads
            .written
            .remove(&(part.name.to_string(), part.attempt))
            .ok_or_else(|| {
                write_error(
                    &location,
                    io_error(std::io::ErrorKind::NotFound, "the attempt wrote no file"),
                )
            })?;
        if self.attached {
            drop(uploads);
            // Handed to the job's owner: a manifest it reads at job commit.
            let manifest = self
                .staging
                .as_ref()
                .ok_or_else(|| self.misuse())?
                .join(format!("{}.{}{PENDING}", part.name, part.attempt));
            let json = serde_json::to_vec(&upload).map_err(|e| {
                write_error(
                    &manifest,
                    io_error(std::io::ErrorKind::Other, e.to_string()),
                )
            })?;
            if let Err(e) = self.storage.put(&manifest, json) {
                let _ = self.abort_all(vec![upload]);
                return Err(e);
            }
            // The upload is the owner's now: this process's watcher must not abort it
            // should this process die (the owner's commit completes it, its abort or its
            // own watcher aborts it).
            if let Some(upload_id) = upload.upload_id {
                note(self.journal.as_deref(), JournalEntry::Closed { upload_id });
            }
            return Ok(());
        }
        let replaced = uploads.committed.insert(part.name.to_string(), upload);
        drop(uploads);
        if let Some(old) = replaced {
            self.abort_all(vec![old])?;
        }
        Ok(())
    }

    fn abort_task(&self, part: PartAttempt<'_>) -> Result<(), IoError> {
        self.check_part(part)?;
        let upload = lock(&self.uploads)
            .written
            .remove(&(part.name.to_string(), part.attempt));
        self.abort_all(upload.into_iter().collect())
    }

    fn commit_job(&mut self) -> Result<(), IoError> {
        if self.state != State::Running || self.attached {
            return Err(self.misuse());
        }
        self.state = State::Aborted;
        let (mut leftover, mut committed) = {
            let mut uploads = lock(&self.uploads);
            let leftover: Vec<PendingUpload> = uploads.written.drain().map(|(_, u)| u).collect();
            (leftover, std::mem::take(&mut uploads.committed))
        };
        // What tasks committed elsewhere; a part file committed here too keeps this one.
        let (elsewhere, others, manifests) = match self.pending_manifests() {
            Ok(found) => found,
            Err(e) => {
                leftover.extend(committed.into_values());
                let _ = self.abort_all(leftover);
                return Err(e);
            }
        };
        leftover.extend(others);
        for (name, upload) in elsewhere {
            match committed.entry(name) {
                std::collections::btree_map::Entry::Occupied(_) => leftover.push(upload),
                std::collections::btree_map::Entry::Vacant(slot) => {
                    slot.insert(upload);
                }
            }
        }
        self.remove_manifests(&manifests);
        self.abort_all(leftover)?;
        // Someone may have written to the output meanwhile.
        if self.storage.status(&self.output)?.is_some() {
            self.abort_all(committed.into_values().collect())?;
            return Err(IoError::OutputExists {
                path: self.output.error_path(),
            });
        }
        self.publish(committed)?;
        self.state = State::Committed;
        // What is still open under the output is no part file's: uploads of attempts on
        // workers that died before handing them over (or before this process knew their ids).
        // The output is committed whatever becomes of them, so this is best effort; a bucket
        // lifecycle rule for incomplete uploads is the store's own safety net.
        let _ = self.storage.abort_open_uploads(&self.output, true);
        note(self.journal.as_deref(), JournalEntry::Done);
        Ok(())
    }

    fn abort_job(&mut self) -> Result<(), IoError> {
        match self.state {
            State::Committed => Err(self.misuse()),
            _ => {
                let was_running = self.state == State::Running;
                self.state = State::Aborted;
                let mut open = {
                    let mut uploads = lock(&self.uploads);
                    let mut open: Vec<PendingUpload> =
                        uploads.written.drain().map(|(_, u)| u).collect();
                    open.extend(std::mem::take(&mut uploads.committed).into_values());
                    open
                };
                // The job's owner also aborts what its attached committers committed (an
                // attached one leaves that to it).
                if !self.attached {
                    if let Ok((elsewhere, others, manifests)) = self.pending_manifests() {
                        open.extend(elsewhere.into_values());
                        open.extend(others);
                        self.remove_manifests(&manifests);
                    }
                }
                let aborted = self.abort_all(open);
                // Uploads the job's tasks started that nobody recorded (a worker that died
                // before handing its task over): the output is the job's once set up, and
                // every upload under it too (see `JournalEntry::Output`).
                let swept = if was_running && !self.attached {
                    self.storage
                        .abort_open_uploads(&self.output, true)
                        .map(drop)
                } else {
                    Ok(())
                };
                aborted.and(swept)?;
                note(self.journal.as_deref(), JournalEntry::Done);
                Ok(())
            }
        }
    }

    /// The staging prefix where attached committers leave their committed tasks' manifests,
    /// while the job runs.
    fn staging(&self) -> Option<Location> {
        (self.state == State::Running)
            .then(|| self.staging.clone())
            .flatten()
    }
}

impl Drop for S3MagicCommitter {
    fn drop(&mut self) {
        if self.state == State::Running {
            let _ = self.abort_job();
        }
    }
}

/// `_SUCCESS`'s manifest, in the JSON form of S3A's `SuccessData`.
#[derive(Debug, Serialize)]
struct SuccessData {
    name: &'static str,
    timestamp: u64,
    date: String,
    hostname: String,
    committer: &'static str,
    description: String,
    #[serde(rename = "jobId")]
    job_id: String,
    #[serde(rename = "jobIdSource")]
    job_id_source: &'static str,
    metrics: BTreeMap<String, u64>,
    diagnostics: BTreeMap<String, String>,
    filenames: Vec<String>,
}

impl SuccessData {
    fn new(job_id: &str, filenames: Vec<String>) -> SuccessData {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let millis = u64::try_from(now.as_millis()).unwrap_or(u64::MAX);
        SuccessData {
            name: "org.apache.hadoop.fs.s3a.commit.files.SuccessData/1",
            timestamp: millis,
            date: format!("{} ms since the epoch", millis),
            hostname: hostname(),
            committer: "sluice-magic",
            description: "sluice job output, committed by completing multipart uploads".to_string(),
            job_id: job_id.to_string(),
            job_id_source: "sluice",
            metrics: BTreeMap::new(),
            diagnostics: BTreeMap::new(),
            filenames,
        }
    }
}

/// This machine's name, for the manifest.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}
