//! Every store a job may touch, behind one [`Storage`]: the local file system, and the remote
//! stores (HDFS, S3) that a [`RemoteStores`] connects to.
//!
//! A job's inputs may be on several stores at once (a local file and an `hdfs://` directory),
//! and its output on yet another; the engine holds one [`Stores`] and hands each location to
//! it, and `Stores` routes every call to the storage of that location's scheme. The remote
//! side is a trait so that this crate does not depend on any network client: the crate that
//! implements HDFS and S3 (`sluice-stores`) provides it, configured from the job's settings.

use std::fmt;
use std::io::Read;
use std::sync::Arc;

use crate::{
    BlockLocation, CachePolicy, FileStatus, IoError, JobCommitter, LocalRenameCommitter,
    LocalStorage, Location, Scheme, Storage, StorageWriter,
};

/// The remote stores a job is configured for: hands out the [`Storage`] and the
/// [`JobCommitter`] of `hdfs://` and `s3://` locations.
///
/// Implementations connect lazily (a job that only reads HDFS never resolves S3 credentials)
/// and share one connection per store (name node, bucket) between calls.
pub trait RemoteStores: fmt::Debug + Send + Sync {
    /// The storage serving `location`, a location of a remote store.
    ///
    /// # Errors
    /// [`IoError::UnsupportedScheme`] for a store this build or configuration cannot serve
    /// (saying what to set), and the store's errors in connecting.
    fn storage(&self, location: &Location) -> Result<Arc<dyn Storage>, IoError>;

    /// The committer of a job's output at `output`, a location of a remote store.
    ///
    /// # Errors
    /// As for [`RemoteStores::storage`].
    fn committer(&self, output: &Location) -> Result<Box<dyn JobCommitter>, IoError>;

    /// A committer attached to the running job whose output is at `output`, a location of a
    /// remote store, staged at `staging`: see [`Stores::attach_committer`].
    ///
    /// # Errors
    /// As for [`RemoteStores::storage`]; [`IoError::UnsupportedScheme`] for a store whose
    /// committer cannot run tasks in another process; [`IoError::Write`] if `staging` is not
    /// a staging location that store's committer would make for `output`.
    fn attach_committer(
        &self,
        output: &Location,
        staging: &Location,
    ) -> Result<Box<dyn JobCommitter>, IoError>;
}

/// The stores of one job: local files always, remote ones when a [`RemoteStores`] is given.
///
/// Implements [`Storage`] by routing each call to the storage of the location it names, so
/// readers, discovery and split planning work across stores without knowing of them. Cheap to
/// clone (the remote side is shared).
#[derive(Debug, Clone, Default)]
pub struct Stores {
    local: LocalStorage,
    remote: Option<Arc<dyn RemoteStores>>,
}

impl Stores {
    /// Local files only: remote locations are refused with the reason.
    pub fn local() -> Stores {
        Stores::default()
    }

    /// Local files, and the remote stores `remote` connects to.
    pub fn with_remote(remote: Arc<dyn RemoteStores>) -> Stores {
        Stores {
            local: LocalStorage::new(),
            remote: Some(remote),
        }
    }

    /// Whether remote locations can be served at all.
    pub fn has_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// The storage serving `location`.
    ///
    /// # Errors
    /// [`IoError::UnsupportedScheme`] for a remote location without remote stores, and the
    /// remote stores' own errors.
    pub fn storage_of(&self, location: &Location) -> Result<Arc<dyn Storage>, IoError> {
        match (location.scheme(), &self.remote) {
            (Scheme::File, _) => Ok(Arc::new(self.local.clone())),
            (_, Some(remote)) => remote.storage(location),
            (_, None) => Err(LocalStorage::refuse(location)),
        }
    }

    /// The committer of a job's output at `output`: the rename committer for a local
    /// directory, the remote store's own otherwise.
    ///
    /// # Errors
    /// As for [`Stores::storage_of`].
    pub fn committer(&self, output: &Location) -> Result<Box<dyn JobCommitter>, IoError> {
        match (output.scheme(), &self.remote) {
            (Scheme::File, _) => Ok(Box::new(LocalRenameCommitter::new(output)?)),
            (_, Some(remote)) => remote.committer(output),
            (_, None) => Err(LocalStorage::refuse(output)),
        }
    }

    /// A committer attached to the running job whose output is at `output` and whose task
    /// attempts write at `staging` (the owner's [`JobCommitter::staging`]), for a process that
    /// runs some of the job's tasks while another set the job up and will commit it.
    ///
    /// Its [`create_part`](JobCommitter::create_part),
    /// [`commit_task`](JobCommitter::commit_task) and [`abort_task`](JobCommitter::abort_task)
    /// act exactly as the owner's would; [`setup_job`](JobCommitter::setup_job) and
    /// [`commit_job`](JobCommitter::commit_job) are refused, [`abort_job`](JobCommitter::abort_job)
    /// does nothing and dropping it removes nothing (the owner publishes or discards the
    /// output). `staging` is checked to be the hidden sibling of `output` that the store's
    /// committer makes, so that a wrong location sent by a peer cannot make this process
    /// write anywhere else.
    ///
    /// # Errors
    /// As for [`Stores::committer`]; [`IoError::UnsupportedScheme`] for a store whose task
    /// side cannot run in another process (S3, for now); [`IoError::Write`] if `staging` is not
    /// a staging location of `output`.
    pub fn attach_committer(
        &self,
        output: &Location,
        staging: &Location,
    ) -> Result<Box<dyn JobCommitter>, IoError> {
        match (output.scheme(), &self.remote) {
            (Scheme::File, _) => Ok(Box::new(LocalRenameCommitter::attach(output, staging)?)),
            (_, Some(remote)) => remote.attach_committer(output, staging),
            (_, None) => Err(LocalStorage::refuse(output)),
        }
    }

    /// Calls `f` with the storage of `location`, without an `Arc` for local files.
    fn with<T>(
        &self,
        location: &Location,
        f: impl FnOnce(&dyn Storage) -> Result<T, IoError>,
    ) -> Result<T, IoError> {
        if location.scheme() == Scheme::File {
            return f(&self.local);
        }
        f(&*self.storage_of(location)?)
    }
}

impl Storage for Stores {
    fn status(&self, location: &Location) -> Result<Option<FileStatus>, IoError> {
        self.with(location, |s| s.status(location))
    }

    fn list(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        self.with(dir, |s| s.list(dir))
    }

    fn walk_visible(&self, dir: &Location) -> Result<Vec<FileStatus>, IoError> {
        self.with(dir, |s| s.walk_visible(dir))
    }

    fn glob_visible(&self, pattern: &Location) -> Result<Vec<FileStatus>, IoError> {
        self.with(pattern, |s| s.glob_visible(pattern))
    }

    fn open_range(
        &self,
        location: &Location,
        start: u64,
        len: u64,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        self.with(location, |s| s.open_range(location, start, len))
    }

    fn open_range_with(
        &self,
        location: &Location,
        start: u64,
        len: u64,
        cache: CachePolicy,
    ) -> Result<Box<dyn Read + Send>, IoError> {
        self.with(location, |s| s.open_range_with(location, start, len, cache))
    }

    fn create_with(&self, location: &Location, buffer: usize) -> Result<StorageWriter, IoError> {
        self.with(location, |s| s.create_with(location, buffer))
    }

    fn delete(&self, location: &Location) -> Result<bool, IoError> {
        self.with(location, |s| s.delete(location))
    }

    fn rename(&self, from: &Location, to: &Location) -> Result<(), IoError> {
        self.with(to, |s| s.rename(from, to))
    }

    fn make_dirs(&self, location: &Location) -> Result<(), IoError> {
        self.with(location, |s| s.make_dirs(location))
    }

    fn delete_tree(&self, location: &Location) -> Result<bool, IoError> {
        self.with(location, |s| s.delete_tree(location))
    }

    fn set_permission(&self, location: &Location, bits: u16) -> Result<(), IoError> {
        self.with(location, |s| s.set_permission(location, bits))
    }

    fn set_replication(&self, location: &Location, replication: u16) -> Result<(), IoError> {
        self.with(location, |s| s.set_replication(location, replication))
    }

    fn set_owner(
        &self,
        location: &Location,
        owner: Option<&str>,
        group: Option<&str>,
    ) -> Result<(), IoError> {
        self.with(location, |s| s.set_owner(location, owner, group))
    }

    fn block_locations(&self, location: &Location) -> Result<Vec<BlockLocation>, IoError> {
        self.with(location, |s| s.block_locations(location))
    }
}
