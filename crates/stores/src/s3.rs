//! S3 and S3-compatible stores as a [`Storage`], through `object_store`'s S3 client.
//!
//! An object store has keys, not directories; like Hadoop's S3A, a "directory" is a prefix
//! that keys are under (`out/` for `out/part-00000`), and a listing is a delimited listing of
//! that prefix. Reads are one ranged GET streamed through a [`PrefetchReader`]; writes are
//! multipart uploads of [`PART_SIZE`] parts, uploaded while the writer produces the next one,
//! completed when the writer finishes, or handed to the job's committer, which completes them
//! at job commit ([`crate::S3MagicCommitter`]).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::BytesMut;
use futures::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path;
use object_store::{
    ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload, RetryConfig,
};
use serde::{Deserialize, Serialize};
use sluice_io::{FileStatus, IoError, Location, ObjectWriter, Storage, StorageWriter};
use tokio::task::JoinHandle;

use crate::error::{io_error, read_error, unavailable, write_error};
use crate::journal::{note, Journal, JournalEntry};
use crate::read::{OpenAt, PrefetchReader};
use crate::runtime::{block_on, block_on_timeout, runtime};
use crate::s3_uploads::{bucket_url, OpenUpload, UploadLister};
use crate::StoreConfig;

/// Bytes of one uploaded part (S3 wants at least 5 MiB for every part but the last).
pub(crate) const PART_SIZE: usize = 8 << 20;
/// Parts uploading at once per writer; the writer waits beyond this.
const PARTS_IN_FLIGHT: usize = 4;
/// Uploads aborted at once when open ones are cleaned up.
const CONCURRENT_ABORTS: usize = 16;
/// How long one data request (a part, a whole streamed GET) may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(600);

/// One bucket of an S3 (or S3-compatible) store. (Its `Debug` form names the bucket and the
/// endpoint only: the client's holds the credentials.)
#[derive(Clone)]
pub struct S3Storage {
    store: Arc<AmazonS3>,
    bucket: String,
    /// The endpoint as messages name it.
    endpoint: String,
    timeout: Duration,
    journal: Option<Arc<Journal>>,
    /// The listing of open uploads, which `object_store` lacks.
    uploads: UploadLister,
}

impl std::fmt::Debug for S3Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Storage")
            .field("bucket", &self.bucket)
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl S3Storage {
    /// A client of `location`'s bucket, configured from `config` (see [`StoreConfig`]).
    /// Nothing is sent until the first call.
    ///
    /// # Errors
    /// [`IoError::Store`] if no credentials are found (naming the variables to set) or the
    /// settings are malformed.
    pub fn connect(location: &Location, config: &StoreConfig) -> Result<S3Storage, IoError> {
        let bucket = location.authority().unwrap_or_default().to_string();
        let settings = S3Settings::resolve(config).map_err(|e| unavailable(location, e))?;
        let timeout = config
            .timeout()
            .map_err(|e| unavailable(location, e.to_string()))?;
        let client_options = ClientOptions::new()
            .with_connect_timeout(timeout.min(Duration::from_secs(10)))
            .with_timeout(REQUEST_TIMEOUT)
            .with_allow_http(true);
        let mut builder = AmazonS3Builder::new()
            .with_bucket_name(&bucket)
            .with_region(&settings.region)
            .with_retry(RetryConfig {
                max_retries: 3,
                retry_timeout: timeout,
                ..RetryConfig::default()
            })
            .with_client_options(client_options.clone());
        if let Some((key, secret, token)) = &settings.credentials {
            builder = builder
                .with_access_key_id(key)
                .with_secret_access_key(secret);
            if let Some(token) = token {
                builder = builder.with_token(token);
            }
        }
        let endpoint = match &settings.endpoint {
            Some(endpoint) => {
                builder = builder
                    .with_endpoint(endpoint)
                    .with_virtual_hosted_style_request(!settings.path_style);
                endpoint.clone()
            }
            None => format!("s3.{}.amazonaws.com", settings.region),
        };
        let store = builder
            .build()
            .map_err(|e| unavailable(location, format!("cannot set up an S3 client: {e}")))?;
        let uploads = UploadLister::new(
            bucket_url(
                settings.endpoint.as_deref(),
                settings.path_style,
                &settings.region,
                &bucket,
            ),
            settings.region.clone(),
            Arc::clone(store.credentials()),
            client_options,
            timeout,
        );
        Ok(S3Storage {
            store: Arc::new(store),
            bucket,
            endpoint,
            timeout,
            journal: None,
            uploads,
        })
    }

    /// The same storage, recording every upload its writers start in `journal` (see
    /// [`Journal`]).
    #[must_use]
    pub fn with_journal(mut self, journal: Option<Arc<Journal>>) -> S3Storage {
        self.journal = journal;
        self
    }

    /// The key of `location` in this bucket.
    pub(crate) fn path(&self, location: &Location) -> Result<Path, IoError> {
        let same = location.scheme() == sluice_io::Scheme::S3
            && location.authority() == Some(self.bucket.as_str());
        let key = match location.path_str() {
            Some(key) if same => key.trim_end_matches('/'),
            _ => {
                return Err(IoError::UnsupportedScheme {
                    location: location.to_string(),
                    scheme: location.scheme_name().to_string(),
                    reason: format!("not a location of bucket {}", self.bucket),
                })
            }
        };
        Path::parse(key).map_err(|e| IoError::BadLocation {
            location: location.to_string(),
            reason: format!("not a key S3 can hold as given: {e}"),
        })
    }

    /// Runs a metadata call within the timeout, its error translated.
    fn call<T>(
        &self,
        what: &str,
        future: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> io::Result<T> {
        let what = format!("{what} (bucket {} at {})", self.bucket, self.endpoint);
        let bucket = self.bucket.clone();
        block_on_timeout(self.timeout, &what, async move {
            future.await.map_err(|e| s3_io_error(&e, &bucket))
        })
    }

    /// Whether the empty object listed as `path` (under `like`) is a directory marker: its key
    /// is `path/` (the store lists it without the slash), so no object is at `path` itself.
    fn is_marker(&self, like: &Location, path: &Path) -> Result<bool, IoError> {
        match self.call("head", self.store.head(path)) {
            Ok(_) => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(true),
            Err(e) => Err(read_error(&S3Storage::located(like, path), e)),
        }
    }

    /// The location of key `path` in this bucket, named like `like`.
    fn located(like: &Location, path: &Path) -> Location {
        like.with_path_str(path.as_ref())
    }

    fn file_status(like: &Location, meta: &object_store::ObjectMeta) -> FileStatus {
        let modified = SystemTime::UNIX_EPOCH
            + Duration::from_millis(
                u64::try_from(meta.last_modified.timestamp_millis()).unwrap_or(0),
            );
        FileStatus::file(S3Storage::located(like, &meta.location), meta.size)
            .with_modified(modified)
    }

    /// A writer of a new object at `location`: completed by `finish` ([`Completion::Now`]),
    /// or left pending for a committer.
    pub(crate) fn writer(
        &self,
        location: &Location,
        completion: Completion,
    ) -> Result<S3Writer, IoError> {
        Ok(S3Writer {
            standalone: matches!(completion, Completion::Now),
            store: Arc::clone(&self.store),
            bucket: self.bucket.clone(),
            path: self.path(location)?,
            location: location.clone(),
            upload: None,
            uploading: VecDeque::new(),
            parts: Vec::new(),
            buffer: BytesMut::new(),
            written: 0,
            completion: Some(completion),
            timeout: self.timeout,
            journal: self.journal.clone(),
        })
    }

    /// Completes a pending upload, making its object visible.
    pub(crate) async fn complete(&self, upload: &PendingUpload) -> Result<(), io::Error> {
        let path = Path::parse(&upload.key)
            .map_err(|e| io_error(io::ErrorKind::InvalidInput, e.to_string()))?;
        match &upload.upload_id {
            Some(id) => {
                let parts = upload
                    .parts
                    .iter()
                    .map(|etag| PartId {
                        content_id: etag.clone(),
                    })
                    .collect();
                self.store
                    .complete_multipart(&path, id, parts)
                    .await
                    .map_err(|e| s3_io_error(&e, &self.bucket))?;
            }
            None => {
                self.store
                    .put(&path, PutPayload::new())
                    .await
                    .map_err(|e| s3_io_error(&e, &self.bucket))?;
            }
        }
        Ok(())
    }

    /// Aborts a pending upload (an upload that is gone already is fine).
    pub(crate) async fn abort(&self, upload: &PendingUpload) -> Result<(), io::Error> {
        let (Some(id), Ok(path)) = (&upload.upload_id, Path::parse(&upload.key)) else {
            return Ok(());
        };
        match self.store.abort_multipart(&path, id).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(s3_io_error(&e, &self.bucket)),
        }
    }

    /// Deletes the object at key `key` (used to take back completed uploads).
    pub(crate) async fn delete_key(&self, key: &str) -> Result<(), io::Error> {
        let path =
            Path::parse(key).map_err(|e| io_error(io::ErrorKind::InvalidInput, e.to_string()))?;
        match self.store.delete(&path).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(s3_io_error(&e, &self.bucket)),
        }
    }

    /// Aborts every multipart upload open at `location`'s key, or with `tree` every one under
    /// it as a directory (`KEY/…`, not `KEY…`: a sibling `KEY2/` is not under it). Returns
    /// how many were aborted.
    ///
    /// The listing finds uploads whose ids nobody wrote down (a process killed between
    /// starting an upload and recording it); the caller decides which keys are its own.
    ///
    /// # Errors
    /// If the uploads cannot be listed, or one cannot be aborted (the first error, after
    /// trying every one); the bucket itself is refused.
    pub(crate) fn abort_open_uploads(
        &self,
        location: &Location,
        tree: bool,
    ) -> Result<usize, IoError> {
        let path = self.path(location)?;
        if path.as_ref().is_empty() {
            return Err(write_error(
                location,
                io_error(
                    io::ErrorKind::InvalidInput,
                    "refusing to abort every upload of a whole bucket",
                ),
            ));
        }
        let prefix = if tree {
            format!("{path}/")
        } else {
            path.to_string()
        };
        let open = block_on(self.uploads.list(&prefix))
            .and_then(|r| r)
            .map_err(|e| write_error(location, e))?;
        let mine: Vec<OpenUpload> = open
            .into_iter()
            .filter(|u| tree || u.key == prefix)
            .collect();
        let results: Vec<io::Result<()>> = block_on(
            futures::stream::iter(mine)
                .map(|upload| async move {
                    self.abort(&PendingUpload {
                        key: upload.key,
                        upload_id: Some(upload.upload_id),
                        parts: Vec::new(),
                        len: 0,
                    })
                    .await
                })
                .buffer_unordered(CONCURRENT_ABORTS)
                .collect(),
        )
        .map_err(|e| write_error(location, e))?;
        let mut aborted = 0;
        let mut first_error = None;
        for result in results {
            match result {
                Ok(()) => aborted += 1,
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            None => Ok(aborted),
            Some(e) => Err(write_error(location, e)),
        }
    }

    /// Deletes every object under `location` as a directory (`KEY/…`); how many. For a
    /// prefix that is the job's alone (its staging prefix).
    ///
    /// # Errors
    /// If the objects cannot be listed or one cannot be deleted.
    pub(crate) fn delete_prefix(&self, location: &Location) -> Result<usize, IoError> {
        let path = self.path(location)?;
        if path.as_ref().is_empty() {
            return Err(write_error(
                location,
                io_error(
                    io::ErrorKind::InvalidInput,
                    "refusing to delete a whole bucket",
                ),
            ));
        }
        let objects: Vec<object_store::ObjectMeta> = self
            .call("list", self.store.list(Some(&path)).try_collect())
            .map_err(|e| read_error(location, e))?;
        let mut deleted = 0;
        for meta in objects {
            match self.call("delete", self.store.delete(&meta.location)) {
                Ok(()) => deleted += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(write_error(location, e)),
            }
        }
        Ok(deleted)
    }

    /// Writes `bytes` as the object at `location` in one request.
    pub(crate) fn put(&self, location: &Location, bytes: Vec<u8>) -> Result<(), IoError> {
        let path = self.path(location)?;
        self.call("put", self.store.put(&path, PutPayload::from(bytes)))
            .map(drop)
            .map_err(|e| write_error(location, e))
    }

    /// The bucket's name.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }
}

impl Storage for S3Storage {
    fn status(&self, location: &Location) -> Result<Option<FileStatus>, IoError> {
        let path = self.path(location)?;
        if !path.as_ref().is_empty() {
            match self.call("head", self.store.head(&path)) {
                Ok(meta) => return Ok(Some(S3Storage::file_status(location, &meta))),
                Err(e) if e.kind() == io::ErrorKind::NotFound && !is_no_bucket(&e) => {}
                Err(e) => return Err(read_error(location, e)),
            }
        }
        // A directory is a prefix with keys under it (the bucket itself always is one).
        let prefix = (!path.as_ref().is_empty()).then_some(&path);
        let listed = self
            .call("list", self.store.list_with_delimiter(prefix))
            .map_err(|e| read_error(location, e))?;
        let is_dir = path.as_ref().is_empty()
            || !listed.objects.is_empty()
            || !listed.common_prefixes.is_empty();
        Ok(is_dir.then(|| FileStatus::directory(location.clone())))
    }

    fn list(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        let path = self.path(dir)?;
        let prefix = (!path.as_ref().is_empty()).then_some(&path);
        let listed = self
            .call("list", self.store.list_with_delimiter(prefix))
            .map_err(|e| read_error(dir, e))?;
        let mut entries: Vec<FileStatus> = listed
            .common_prefixes
            .iter()
            .map(|p| FileStatus::directory(S3Storage::located(dir, p)))
            .collect();
        entries.extend(
            listed
                .objects
                .iter()
                .filter(|meta| meta.location != path)
                .map(|meta| S3Storage::file_status(dir, meta)),
        );
        // In key order, as the store lists keys (and Hadoop's S3 client lists them).
        entries.sort_by_key(|e| e.location.to_string());
        Ok(entries)
    }

    fn walk_visible(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        // One flat listing of the prefix, instead of one listing per "directory".
        let path = self.path(dir)?;
        let prefix = (!path.as_ref().is_empty()).then_some(&path);
        let objects: Vec<object_store::ObjectMeta> = self
            .call("list", self.store.list(prefix).try_collect())
            .map_err(|e| read_error(dir, e))?;
        let skip = path.parts().count();
        // Every "directory" some listed key lies in: an empty object listed under one of these
        // names is a directory marker (a key `NAME/`, which Hadoop's S3 client and the AWS
        // console write for an empty directory, and which the store lists as `NAME`).
        let parents: std::collections::HashSet<&str> = objects
            .iter()
            .flat_map(|meta| {
                let key = meta.location.as_ref();
                key.match_indices('/').map(move |(at, _)| &key[..at])
            })
            .collect();
        let mut visible = Vec::new();
        for meta in &objects {
            let hidden = meta
                .location
                .parts()
                .skip(skip)
                .any(|part| sluice_io::is_hidden_name(part.as_ref()));
            if hidden || meta.location == path {
                continue;
            }
            if meta.size == 0
                && (parents.contains(meta.location.as_ref())
                    || self.is_marker(dir, &meta.location)?)
            {
                continue;
            }
            visible.push(S3Storage::file_status(dir, meta));
        }
        Ok(visible)
    }

    fn open_range(
        &self,
        location: &Location,
        start: u64,
        len: u64,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        let path = self.path(location)?;
        let meta = self
            .call("head", self.store.head(&path))
            .map_err(|e| read_error(location, e))?;
        let end = start.saturating_add(len).min(meta.size);
        let start = start.min(end);
        if start == end {
            return Ok(Box::new(io::empty()));
        }
        let store = Arc::clone(&self.store);
        let bucket = self.bucket.clone();
        let version = meta.e_tag.clone();
        let open: OpenAt = Box::new(move |at| {
            let store = Arc::clone(&store);
            let path = path.clone();
            let bucket = bucket.clone();
            // The object must not change under a reader that reopens it.
            let options = GetOptions {
                range: Some(GetRange::Bounded(at..end)),
                if_match: version.clone(),
                ..GetOptions::default()
            };
            Box::pin(async move {
                let got = store
                    .get_opts(&path, options)
                    .await
                    .map_err(|e| s3_io_error(&e, &bucket))?;
                let stream = got
                    .into_stream()
                    .map_err(move |e| s3_io_error(&e, &bucket))
                    .boxed();
                Ok(stream)
            })
        });
        let reader =
            PrefetchReader::start(start, end - start, open).map_err(|e| read_error(location, e))?;
        Ok(Box::new(reader))
    }

    fn create_with(&self, location: &Location, _buffer: usize) -> Result<StorageWriter, IoError> {
        if self.status(location)?.is_some() {
            return Err(write_error(
                location,
                io_error(
                    io::ErrorKind::AlreadyExists,
                    "an object or prefix is there already",
                ),
            ));
        }
        Ok(StorageWriter::new(Box::new(
            self.writer(location, Completion::Now)?,
        )))
    }

    fn delete(&self, location: &Location) -> Result<bool, IoError> {
        let path = self.path(location)?;
        match self.call("head", self.store.head(&path)) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(write_error(location, e)),
        }
        self.call("delete", self.store.delete(&path))
            .map_err(|e| write_error(location, e))?;
        Ok(true)
    }

    fn rename(&self, from: &Location, to: &Location) -> Result<(), IoError> {
        // A copy, then the source deleted: S3 moves nothing.
        let (source, target) = (self.path(from)?, self.path(to)?);
        self.call("rename", self.store.rename(&source, &target))
            .map_err(|e| write_error(to, e))
    }

    fn delete_tree(&self, location: &Location) -> Result<bool, IoError> {
        // An object, else every object under the location as a prefix (a "directory").
        if self.delete(location)? {
            return Ok(true);
        }
        Ok(self.delete_prefix(location)? > 0)
    }
}

/// What a writer does with its upload when it finishes.
pub(crate) enum Completion {
    /// Completes it: the object appears.
    Now,
    /// Hands it, not completed, to `sink`: the committer completes it at job commit.
    Pending(Box<dyn FnOnce(PendingUpload) + Send>),
}

/// A multipart upload written in full but not completed: invisible until
/// [`S3Storage::complete`], discarded by [`S3Storage::abort`]. Serialisable, so that
/// another process (a job's coordinator) can complete what a task wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingUpload {
    /// The object's key.
    pub key: String,
    /// The upload's id; `None` for an empty object, which is written at completion.
    pub upload_id: Option<String>,
    /// The parts' ids (ETags), in order.
    pub parts: Vec<String>,
    /// The object's length in bytes.
    pub len: u64,
}

/// A new S3 object being written as a multipart upload.
pub(crate) struct S3Writer {
    /// Whether the object is written outside a committer ([`Completion::Now`]): its key is
    /// then named in the journal before its upload starts. (A committer's part files are under
    /// an output the committer named when it set the job up.)
    standalone: bool,
    store: Arc<AmazonS3>,
    bucket: String,
    path: Path,
    location: Location,
    upload: Option<String>,
    uploading: VecDeque<JoinHandle<object_store::Result<PartId>>>,
    parts: Vec<PartId>,
    buffer: BytesMut,
    written: u64,
    /// `None` once finished.
    completion: Option<Completion>,
    timeout: Duration,
    journal: Option<Arc<Journal>>,
}

impl S3Writer {
    fn error(&self, e: &object_store::Error) -> io::Error {
        let e = s3_io_error(e, &self.bucket);
        io_error(e.kind(), format!("{}: {e}", self.location))
    }

    /// The upload's id, starting the upload on first use.
    fn upload_id(&mut self) -> io::Result<String> {
        if let Some(id) = &self.upload {
            return Ok(id.clone());
        }
        if self.standalone {
            // Before the request: killed after it, the process could not say which upload
            // it started, only where (see `Journal`).
            note(
                self.journal.as_deref(),
                JournalEntry::Opening {
                    location: self.location.to_string(),
                },
            );
        }
        let what = format!("start an upload to {}", self.location);
        let store = Arc::clone(&self.store);
        let path = self.path.clone();
        let bucket = self.bucket.clone();
        let id = block_on_timeout(self.timeout, &what, async move {
            store
                .create_multipart(&path)
                .await
                .map_err(|e| s3_io_error(&e, &bucket))
        })?;
        note(
            self.journal.as_deref(),
            JournalEntry::Upload {
                location: self.location.to_string(),
                upload_id: id.clone(),
            },
        );
        self.upload = Some(id.clone());
        Ok(id)
    }

    /// Starts uploading the buffer as the next part; waits for the oldest part when too many
    /// are in flight.
    fn send_part(&mut self) -> io::Result<()> {
        let id = self.upload_id()?;
        let index = self.parts.len() + self.uploading.len();
        let payload = PutPayload::from(self.buffer.split().freeze());
        let store = Arc::clone(&self.store);
        let path = self.path.clone();
        let handle =
            runtime()?.spawn(async move { store.put_part(&path, &id, index, payload).await });
        self.uploading.push_back(handle);
        while self.uploading.len() >= PARTS_IN_FLIGHT {
            self.wait_oldest()?;
        }
        Ok(())
    }

    fn wait_oldest(&mut self) -> io::Result<()> {
        let Some(handle) = self.uploading.pop_front() else {
            return Ok(());
        };
        let part = block_on(handle)?
            .map_err(|e| io_error(io::ErrorKind::Other, e.to_string()))?
            .map_err(|e| self.error(&e))?;
        self.parts.push(part);
        Ok(())
    }

    fn finish_upload(&mut self) -> io::Result<u64> {
        let completion = self
            .completion
            .take()
            .ok_or_else(|| io_error(io::ErrorKind::BrokenPipe, "the upload is finished"))?;
        let small = self.upload.is_none() && self.buffer.len() < PART_SIZE;
        match completion {
            Completion::Now if small => {
                // One request for a small object.
                let payload = PutPayload::from(self.buffer.split().freeze());
                let (store, path, bucket) = (
                    Arc::clone(&self.store),
                    self.path.clone(),
                    self.bucket.clone(),
                );
                let what = format!("write {}", self.location);
                block_on_timeout(REQUEST_TIMEOUT, &what, async move {
                    store
                        .put(&path, payload)
                        .await
                        .map_err(|e| s3_io_error(&e, &bucket))
                })?;
                Ok(self.written)
            }
            Completion::Pending(sink) if self.written == 0 => {
                sink(PendingUpload {
                    key: self.path.to_string(),
                    upload_id: None,
                    parts: Vec::new(),
                    len: 0,
                });
                Ok(0)
            }
            completion => {
                if !self.buffer.is_empty() || self.upload.is_none() {
                    self.send_part()?;
                }
                while !self.uploading.is_empty() {
                    self.wait_oldest()?;
                }
                let id = self.upload_id()?;
                match completion {
                    Completion::Now => {
                        let parts = std::mem::take(&mut self.parts);
                        let (store, path, bucket) = (
                            Arc::clone(&self.store),
                            self.path.clone(),
                            self.bucket.clone(),
                        );
                        let what = format!("complete {}", self.location);
                        let upload_id = id.clone();
                        block_on_timeout(REQUEST_TIMEOUT, &what, async move {
                            store
                                .complete_multipart(&path, &id, parts)
                                .await
                                .map_err(|e| s3_io_error(&e, &bucket))
                        })?;
                        note(self.journal.as_deref(), JournalEntry::Closed { upload_id });
                    }
                    Completion::Pending(sink) => sink(PendingUpload {
                        key: self.path.to_string(),
                        upload_id: Some(id),
                        parts: self.parts.iter().map(|p| p.content_id.clone()).collect(),
                        len: self.written,
                    }),
                }
                // Handed over or completed: nothing for `drop` to abort.
                self.upload = None;
                Ok(self.written)
            }
        }
    }
}

impl Write for S3Writer {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        self.written += buf.len() as u64;
        if self.buffer.len() >= PART_SIZE {
            self.send_part()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl ObjectWriter for S3Writer {
    fn finish(mut self: Box<Self>) -> io::Result<u64> {
        self.finish_upload()
    }
}

impl Drop for S3Writer {
    fn drop(&mut self) {
        // A writer dropped unfinished (an error, a cancelled task) leaves no upload behind.
        for handle in self.uploading.drain(..) {
            handle.abort();
        }
        if let Some(id) = self.upload.take() {
            let (store, path) = (Arc::clone(&self.store), self.path.clone());
            let upload_id = id.clone();
            let aborted = block_on(async move { store.abort_multipart(&path, &id).await });
            if matches!(aborted, Ok(Ok(()))) {
                note(self.journal.as_deref(), JournalEntry::Closed { upload_id });
            }
        }
    }
}

/// The S3 settings of a job.
struct S3Settings {
    region: String,
    endpoint: Option<String>,
    path_style: bool,
    credentials: Option<(String, String, Option<String>)>,
}

impl S3Settings {
    /// Gathers the settings, Hadoop's `fs.s3a.*` keys first, then the AWS variables, then the
    /// AWS shared files (`AWS_PROFILE`, default `default`).
    fn resolve(config: &StoreConfig) -> Result<S3Settings, String> {
        let profile_name = config.env("AWS_PROFILE").unwrap_or("default").to_string();
        let home = config.home();
        let shared = |file: &str, section: &str| {
            let path = match (
                file,
                config.env("AWS_SHARED_CREDENTIALS_FILE"),
                config.env("AWS_CONFIG_FILE"),
            ) {
                ("credentials", Some(p), _) | ("config", _, Some(p)) => {
                    Some(std::path::PathBuf::from(p))
                }
                _ => home.as_ref().map(|h| h.join(".aws").join(file)),
            };
            path.and_then(|p| read_ini_section(&p, section))
        };
        let credentials_file = shared("credentials", &profile_name).unwrap_or_default();
        let config_section = if profile_name == "default" {
            "default".to_string()
        } else {
            format!("profile {profile_name}")
        };
        let config_file = shared("config", &config_section).unwrap_or_default();
        let from_files = |key: &str| {
            credentials_file
                .iter()
                .chain(config_file.iter())
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let pick = |keys: &[&str], vars: &[&str], file_key: &str| -> Option<String> {
            keys.iter()
                .find_map(|k| config.get(k).filter(|v| !v.is_empty()).map(str::to_string))
                .or_else(|| vars.iter().find_map(|v| config.env(v).map(str::to_string)))
                .or_else(|| from_files(file_key))
        };
        let region = pick(
            &["fs.s3a.endpoint.region", "fs.s3a.region"],
            &["AWS_REGION", "AWS_DEFAULT_REGION"],
            "region",
        )
        .unwrap_or_else(|| "us-east-1".to_string());
        let ssl = config
            .get("fs.s3a.connection.ssl.enabled")
            .is_none_or(|v| !v.eq_ignore_ascii_case("false"));
        let endpoint = pick(
            &["fs.s3a.endpoint"],
            &["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"],
            "endpoint_url",
        )
        .map(|e| {
            if e.contains("://") {
                e
            } else if ssl {
                format!("https://{e}")
            } else {
                format!("http://{e}")
            }
        });
        let path_style = config
            .get("fs.s3a.path.style.access")
            .map_or(endpoint.is_some(), |v| v.eq_ignore_ascii_case("true"));
        let key = pick(
            &["fs.s3a.access.key"],
            &["AWS_ACCESS_KEY_ID"],
            "aws_access_key_id",
        );
        let secret = pick(
            &["fs.s3a.secret.key"],
            &["AWS_SECRET_ACCESS_KEY"],
            "aws_secret_access_key",
        );
        let token = pick(
            &["fs.s3a.session.token"],
            &["AWS_SESSION_TOKEN"],
            "aws_session_token",
        );
        let credentials = match (key, secret) {
            (Some(key), Some(secret)) => Some((key, secret, token)),
            (Some(_), None) => {
                return Err(
                    "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not (or set \
                            -D fs.s3a.secret.key)"
                        .to_string(),
                )
            }
            (None, Some(_)) => {
                return Err(
                    "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not (or set \
                            -D fs.s3a.access.key)"
                        .to_string(),
                )
            }
            (None, None) => {
                // Credentials the client finds by itself: a container's or a web identity's.
                let ambient = [
                    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                    "AWS_WEB_IDENTITY_TOKEN_FILE",
                ]
                .iter()
                .any(|v| config.env(v).is_some())
                    || config
                        .get("fs.s3a.aws.credentials.provider")
                        .is_some_and(|p| {
                            p.contains("InstanceProfile") || p.contains("IAMInstance")
                        });
                if !ambient {
                    return Err(format!(
                        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or \
                         AWS_PROFILE naming a profile of ~/.aws/credentials (looked for profile \
                         '{profile_name}'), or -D fs.s3a.access.key=... -D fs.s3a.secret.key=..."
                    ));
                }
                None
            }
        };
        Ok(S3Settings {
            region,
            endpoint,
            path_style,
            credentials,
        })
    }
}

/// The `key = value` lines of `[section]` in an INI file (the AWS shared files), `None` if
/// the file cannot be read or has no such section.
fn read_ini_section(path: &FsPath, section: &str) -> Option<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut found = None;
    let mut current = false;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            current = name.trim() == section;
            if current {
                found.get_or_insert_with(Vec::new);
            }
            continue;
        }
        if current {
            if let Some((key, value)) = line.split_once('=') {
                found
                    .get_or_insert_with(Vec::new)
                    .push((key.trim().to_string(), value.trim().to_string()));
            }
        }
    }
    found
}

/// Whether a not-found error is about the bucket rather than a key.
fn is_no_bucket(error: &io::Error) -> bool {
    error.to_string().contains("NoSuchBucket")
}

/// An `object_store` error as an `io::Error` of the matching kind, with advice where the
/// cause is a common one.
pub(crate) fn s3_io_error(error: &object_store::Error, bucket: &str) -> io::Error {
    let text = error_chain(error);
    let kind = match error {
        object_store::Error::NotFound { .. } => io::ErrorKind::NotFound,
        object_store::Error::AlreadyExists { .. } => io::ErrorKind::AlreadyExists,
        object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => io::ErrorKind::PermissionDenied,
        _ if text.contains("NoSuchBucket") => io::ErrorKind::NotFound,
        _ if text.contains("InvalidAccessKeyId") || text.contains("SignatureDoesNotMatch") => {
            io::ErrorKind::PermissionDenied
        }
        _ if text.contains("Connection refused") || text.contains("connect") => {
            io::ErrorKind::ConnectionRefused
        }
        _ => io::ErrorKind::Other,
    };
    let advice = if text.contains("NoSuchBucket") {
        format!(" (bucket '{bucket}' does not exist)")
    } else if text.contains("InvalidAccessKeyId") || text.contains("SignatureDoesNotMatch") {
        " (the credentials were refused: check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
            .to_string()
    } else {
        String::new()
    };
    io_error(kind, format!("{text}{advice}"))
}

/// An error and its sources, joined by `: `.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
