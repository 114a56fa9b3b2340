//! Real servers for sluice's tests: an in-JVM HDFS ([`MiniDfs`], Apache Hadoop's
//! MiniDFSCluster), an S3-compatible server ([`S3Server`], moto) and an in-JVM YARN cluster
//! with its own HDFS ([`MiniYarn`], MiniYARNCluster and MiniDFSCluster), each started by the
//! test that needs it and gone when the value is dropped; and `sluice worker` processes for
//! the tests of cluster mode ([`Workers`]); the reading of the counters job clients print
//! ([`console`]); [`wait_until`] for what another process does, and [`spill_dirs`] for the
//! spill directories a running job made.
//!
//! No protocol is spoken here: the servers are the real thing, and what a test checks on them
//! goes through their own clients (Hadoop's `FsShell` in a JVM, boto3 in Python). See
//! `tests/stores/README.md` for what the storage servers need (`make stores`,
//! `pip install 'moto[server]'`) and what they cost, and `tests/yarn/README.md` for YARN
//! (`make yarn`).
//!
//! A test that needs them is ignored, with the reason, unless its crate's `test-stores` (or
//! `test-yarn`) feature is on, as `make test` turns it on; with the feature a missing
//! prerequisite fails the test, saying what to install. It never passes without running.
//!
//! ```no_run
//! let dfs = sluice_testkit::MiniDfs::start(Default::default()).expect("MiniDFS starts");
//! let out = dfs.fs(&["-mkdir", "-p", "/in"]);
//! assert!(out.status.success());
//! ```
//!
//! Servers started from parallel tests do not collide: each listens on ports the system
//! picks, and keeps its files in a directory of its own. None outlives its test process: each
//! runs in its own process group, killed when the value is dropped (also while a failing test
//! unwinds), and each server also stops by itself when its stdin, a pipe from the test
//! process, reaches end of file, which happens when the test process dies.

pub mod console;
mod java;
mod minidfs;
mod miniyarn;
mod outputs;
mod process;
mod s3;
mod spills;
mod wait;
mod workers;

use std::path::{Path, PathBuf};

pub use minidfs::{hadoop_fs, hadoop_main, MiniDfs, MiniDfsOptions};
pub use miniyarn::{yarn_jar, MiniYarn};
pub use outputs::sorted_part_lines;
pub use process::{with_default_interrupts, without_proxies};
pub use s3::{botocore_signature, S3Options, S3Server};
pub use spills::spill_dirs;
pub use wait::wait_until;
pub use workers::Workers;

/// The repository's root directory (this crate lives in `crates/testkit`).
fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// `target/stores` of the repository: the jars, the compiled launcher, the servers'
/// directories.
fn stores_target() -> PathBuf {
    repo_root().join("target/stores")
}

/// `tests/stores` of the repository: the launcher's source, its logging configuration, the
/// S3 script.
fn stores_sources() -> PathBuf {
    repo_root().join("tests/stores")
}

/// `target/yarn` of the repository: the jars, `sluice-yarn.jar`, the compiled launcher, the
/// clusters' directories.
fn yarn_target() -> PathBuf {
    repo_root().join("target/yarn")
}

/// `tests/yarn` of the repository: the launcher's source and its logging configuration.
fn yarn_sources() -> PathBuf {
    repo_root().join("tests/yarn")
}
