//! HDFS and S3 for sluice: the remote stores behind [`sluice_io::Storage`] and
//! [`sluice_io::JobCommitter`].
//!
//! * [`HdfsStorage`] serves `hdfs://namenode:port/path` (and `hdfs:///path` on the
//!   configured `fs.defaultFS`) through the pure-Rust `hdfs-native` client;
//!   [`HdfsRenameCommitter`] publishes a job's output with one rename.
//! * [`S3Storage`] serves `s3://bucket/key` (also `s3a://`, `s3n://`) through `object_store`'s
//!   S3 client; [`S3MagicCommitter`] publishes a job's output by completing multipart uploads
//!   at job commit.
//! * [`RemoteConnector`] is the [`sluice_io::RemoteStores`] a job is given: it connects to
//!   each store on first use, configured by a [`StoreConfig`] (Hadoop's `-D` settings and
//!   site files, the AWS variables).
//!
//! The clients are asynchronous; the engine's tasks are threads. Every call blocks on one
//! shared runtime (`runtime`), reads stream ahead of their reader (`read`), and every
//! metadata call is bounded by a timeout, so that an unreachable store is an error, not a
//! hang. Spill files never come here: they always stay on local disks.
//!
//! Each back-end is a cargo feature (`hdfs`, `s3`, both on by default); a location of a store
//! left out of the build is refused with the reason.

// Built without a back-end, the crate only refuses remote locations.
#![cfg_attr(not(any(feature = "hdfs", feature = "s3")), allow(unused))]

mod config;
mod error;
#[cfg(feature = "hdfs")]
mod hdfs;
#[cfg(feature = "hdfs")]
mod hdfs_commit;
mod journal;
mod read;
mod runtime;
#[cfg(feature = "s3")]
mod s3;
#[cfg(feature = "s3")]
mod s3_commit;
#[cfg(feature = "s3")]
mod s3_uploads;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sluice_io::{IoError, JobCommitter, Location, RemoteStores, Scheme, Storage};

pub use config::{StoreConfig, DEFAULT_FS, DEFAULT_TIMEOUT, TIMEOUT_KEY};
pub use error::StoreError;
#[cfg(feature = "hdfs")]
pub use hdfs::HdfsStorage;
#[cfg(feature = "hdfs")]
pub use hdfs_commit::HdfsRenameCommitter;
pub use journal::{clean_up, CleanUp, Journal, JournalEntry, OnFirstEntry};
#[cfg(feature = "s3")]
pub use s3::{PendingUpload, S3Storage};
#[cfg(feature = "s3")]
pub use s3_commit::S3MagicCommitter;

/// The remote stores of a job, connected on first use and shared by its tasks.
#[derive(Debug)]
pub struct RemoteConnector {
    config: StoreConfig,
    #[cfg_attr(not(feature = "s3"), allow(dead_code))]
    job_id: String,
    journal: Option<Arc<Journal>>,
    /// One storage per store: `(scheme, authority)`.
    connected: Mutex<HashMap<(Scheme, String), Connected>>,
}

#[derive(Debug, Clone)]
enum Connected {
    #[cfg(feature = "hdfs")]
    Hdfs(Arc<HdfsStorage>),
    #[cfg(feature = "s3")]
    S3(Arc<S3Storage>),
}

impl RemoteConnector {
    /// The remote stores as `config` describes them; `job_id` names the job in what the
    /// stores keep of it (S3's `_SUCCESS` manifest).
    pub fn new(config: StoreConfig, job_id: &str) -> RemoteConnector {
        RemoteConnector {
            config,
            job_id: job_id.to_string(),
            journal: None,
            connected: Mutex::new(HashMap::new()),
        }
    }

    /// The same stores, writing what the job opens on them into `journal` (see [`Journal`]).
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<Journal>) -> RemoteConnector {
        self.journal = Some(journal);
        self
    }

    /// The HDFS storage of `location`.
    ///
    /// # Errors
    /// As [`RemoteStores::storage`]; [`IoError::UnsupportedScheme`] for another store.
    #[cfg(feature = "hdfs")]
    pub fn hdfs(&self, location: &Location) -> Result<Arc<HdfsStorage>, IoError> {
        match self.connect(location)? {
            Connected::Hdfs(storage) => Ok(storage),
            #[allow(unreachable_patterns)]
            _ => Err(not_built(location)),
        }
    }

    /// The S3 storage of `location`.
    ///
    /// # Errors
    /// As [`RemoteStores::storage`]; [`IoError::UnsupportedScheme`] for another store.
    #[cfg(feature = "s3")]
    pub fn s3(&self, location: &Location) -> Result<Arc<S3Storage>, IoError> {
        match self.connect(location)? {
            Connected::S3(storage) => Ok(storage),
            #[allow(unreachable_patterns)]
            _ => Err(not_built(location)),
        }
    }

    /// The settings the stores are configured with.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    #[allow(unreachable_code)]
    fn connect(&self, location: &Location) -> Result<Connected, IoError> {
        let key = (
            location.scheme(),
            location.authority().unwrap_or_default().to_string(),
        );
        let mut connected = self
            .connected
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(store) = connected.get(&key) {
            return Ok(store.clone());
        }
        let store: Connected = match location.scheme() {
            #[cfg(feature = "hdfs")]
            Scheme::Hdfs => {
                Connected::Hdfs(Arc::new(HdfsStorage::connect(location, &self.config)?))
            }
            #[cfg(feature = "s3")]
            Scheme::S3 => Connected::S3(Arc::new(
                S3Storage::connect(location, &self.config)?.with_journal(self.journal.clone()),
            )),
            _ => return Err(not_built(location)),
        };
        connected.insert(key, store.clone());
        Ok(store)
    }
}

impl RemoteStores for RemoteConnector {
    fn storage(&self, location: &Location) -> Result<Arc<dyn Storage>, IoError> {
        match self.connect(location)? {
            #[cfg(feature = "hdfs")]
            Connected::Hdfs(storage) => Ok(storage),
            #[cfg(feature = "s3")]
            Connected::S3(storage) => Ok(storage),
        }
    }

    fn committer(&self, output: &Location) -> Result<Box<dyn JobCommitter>, IoError> {
        match self.connect(output)? {
            #[cfg(feature = "hdfs")]
            Connected::Hdfs(storage) => Ok(Box::new(
                HdfsRenameCommitter::new((*storage).clone(), output)?
                    .with_journal(self.journal.clone()),
            )),
            #[cfg(feature = "s3")]
            Connected::S3(storage) => Ok(Box::new(
                S3MagicCommitter::new((*storage).clone(), output, &self.job_id)
                    .with_journal(self.journal.clone()),
            )),
        }
    }

    // Without HDFS there is no store to attach to, and `staging` goes unread.
    #[cfg_attr(not(feature = "hdfs"), allow(unused_variables))]
    fn attach_committer(
        &self,
        output: &Location,
        staging: &Location,
    ) -> Result<Box<dyn JobCommitter>, IoError> {
        match self.connect(output)? {
            #[cfg(feature = "hdfs")]
            Connected::Hdfs(storage) => Ok(Box::new(HdfsRenameCommitter::attach(
                (*storage).clone(),
                output,
                staging,
            )?)),
            // The journal learns which uploads were handed to the job's owner.
            #[cfg(feature = "s3")]
            Connected::S3(storage) => Ok(Box::new(
                S3MagicCommitter::attach((*storage).clone(), output, staging)?
                    .with_journal(self.journal.clone()),
            )),
        }
    }
}

/// The error for a location of a store this build leaves out.
#[allow(dead_code)]
fn not_built(location: &Location) -> IoError {
    IoError::UnsupportedScheme {
        location: location.to_string(),
        scheme: location.scheme_name().to_string(),
        reason: format!(
            "this build of sluice has no {} support (it was built without that cargo feature \
             of sluice-stores)",
            location.scheme_name()
        ),
    }
}

/// Whether `name` is one plain file name (a part file's): no `/`, not `.` or `..`, not empty.
#[allow(dead_code)]
pub(crate) fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "s3")]
    #[test]
    fn s3_tasks_attach_only_to_the_staging_prefix_beside_their_output() {
        // Connecting makes a client; nothing is sent until a request.
        let connector = RemoteConnector::new(
            StoreConfig::from_parts(
                [
                    ("fs.s3a.endpoint", "http://127.0.0.1:9"),
                    ("fs.s3a.access.key", "k"),
                    ("fs.s3a.secret.key", "s"),
                ],
                [],
            ),
            "job_1_0001",
        );
        let output = Location::parse("s3a://bkt/dir/out").unwrap();
        let owner = connector.committer(&output).unwrap();
        assert_eq!(owner.staging(), None, "no staging before the job is set up");
        let staging = Location::parse("s3a://bkt/dir/.out.sluice-pending-job_1_0001").unwrap();
        assert!(connector.attach_committer(&output, &staging).is_ok());
        for bad in [
            "s3a://bkt/.out.sluice-pending-job_1_0001",
            "s3a://bkt/dir/.other.sluice-pending-job_1_0001",
            "s3a://bkt/dir/.out.sluice-tmp-1-a",
            "s3a://bkt/dir/out/x",
        ] {
            let staging = Location::parse(bad).unwrap();
            match connector.attach_committer(&output, &staging) {
                Err(IoError::Write { .. }) => {}
                Err(other) => panic!("{bad}: expected a refusal of the prefix, got {other:?}"),
                Ok(_) => panic!("{bad}: attached"),
            }
        }
    }
}
