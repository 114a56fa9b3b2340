//! An in-JVM HDFS: Apache Hadoop 3.4.3's MiniDFSCluster, run by `tests/stores/MiniDfs.java`
//! with the jars `tests/stores/fetch.sh` puts in `target/stores/lib`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::java::{self, JVM_OPTIONS};
use crate::process::{server_dir, without_proxies, ServerProcess};
use crate::{stores_sources, stores_target};

/// How long a MiniDFS may take to start (about 5 s alone, more when several start at once).
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A jar that only a finished fetch of the right Hadoop version leaves.
const MARKER_JAR: &str = "hadoop-minicluster-3.4.3.jar";

/// How to start a [`MiniDfs`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MiniDfsOptions {
    /// Number of DataNodes, from 1. Files get this many replicas, at most 3.
    pub datanodes: usize,
    /// The cluster's default block size in bytes (`dfs.blocksize`): at least 1 MiB, a multiple
    /// of 512. Blocks that small are allowed, so tests can make files of many blocks cheaply.
    /// The client decides each file's block size when it creates it: [`MiniDfs::fs`] passes
    /// this one to FsShell.
    pub block_size: u64,
}

impl Default for MiniDfsOptions {
    /// One DataNode, 1 MiB blocks.
    fn default() -> Self {
        MiniDfsOptions {
            datanodes: 1,
            block_size: 1 << 20,
        }
    }
}

/// A running in-JVM HDFS, with a NameNode and [`MiniDfsOptions::datanodes`] DataNodes, all on
/// 127.0.0.1. Permissions are checked; the superuser is the user running the tests. Dropping it
/// kills the JVM and removes its storage.
pub struct MiniDfs {
    server: ServerProcess,
    uri: String,
    webhdfs: String,
    options: MiniDfsOptions,
}

impl MiniDfs {
    /// Starts a cluster and waits until it is up (about 5 s; up to 60 s before giving up).
    ///
    /// Fails with a message saying what to do when the jars are missing (`make stores`) or
    /// Java is, and with the end of the cluster's log when it does not come up.
    pub fn start(options: MiniDfsOptions) -> Result<MiniDfs, String> {
        if options.datanodes == 0 {
            return Err("MiniDFS needs at least one DataNode".to_owned());
        }
        if options.block_size < 1 << 20 || !options.block_size.is_multiple_of(512) {
            return Err(format!(
                "MiniDFS block size must be at least 1 MiB and a multiple of 512, not {}",
                options.block_size
            ));
        }
        let classpath = launcher_classpath()?;
        let dir = server_dir("minidfs-")?;
        let base = dir.path().to_owned();

        let mut cmd = Command::new("java");
        cmd.args(JVM_OPTIONS)
            .arg("-Xmx1g")
            .arg(log4j_option())
            .arg("-Dstores.root.logger=INFO,file")
            .arg(format!(
                "-Dstores.log.file={}",
                base.join("minidfs.log").display()
            ))
            .arg("-cp")
            .arg(&classpath)
            .arg("MiniDfs")
            .arg("--base")
            .arg(&base)
            .arg("--datanodes")
            .arg(options.datanodes.to_string())
            .arg("--block-size")
            .arg(options.block_size.to_string())
            .current_dir(&base);
        let (server, ready) =
            ServerProcess::start("MiniDFS", cmd, dir, &["minidfs.log"], START_TIMEOUT, |_| {
                None
            })?;
        let Some((uri, webhdfs)) = ready.split_once(' ') else {
            return Err(format!("MiniDFS printed an unexpected READY line: {ready}"));
        };
        Ok(MiniDfs {
            uri: uri.to_owned(),
            webhdfs: webhdfs.to_owned(),
            server,
            options,
        })
    }

    /// The NameNode's RPC address as a file system URI: `hdfs://127.0.0.1:PORT`.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The NameNode's HTTP address, which serves WebHDFS under `/webhdfs/v1`: `127.0.0.1:PORT`.
    pub fn webhdfs(&self) -> &str {
        &self.webhdfs
    }

    /// The options the cluster was started with.
    pub fn options(&self) -> &MiniDfsOptions {
        &self.options
    }

    /// The cluster's own directory: its storage (`data/`) and logs (`minidfs.log`, and
    /// `stderr.log` for what the JVM printed). Removed when the cluster is dropped.
    pub fn base_dir(&self) -> &Path {
        self.server.dir()
    }

    /// Runs Hadoop's FsShell (`hadoop fs`) against this cluster as the user running the tests
    /// (the superuser): `dfs.fs(&["-ls", "-R", "/"])`. Paths without a scheme are on this
    /// cluster; files it writes get the cluster's block size and replication. Takes about a
    /// second (a JVM start). Check the output's status: a failing command is not a panic.
    pub fn fs(&self, args: &[&str]) -> Output {
        self.fs_command(None, args)
    }

    /// [`MiniDfs::fs`] as the HDFS user `user` (any name: the cluster does not authenticate),
    /// to see what permissions let another user do.
    pub fn fs_as(&self, user: &str, args: &[&str]) -> Output {
        self.fs_command(Some(user), args)
    }

    fn fs_command(&self, user: Option<&str>, args: &[&str]) -> Output {
        let replication = self.options.datanodes.min(3);
        let mut full = vec![
            "-fs".to_owned(),
            self.uri.clone(),
            "-D".to_owned(),
            format!("dfs.blocksize={}", self.options.block_size),
            "-D".to_owned(),
            format!("dfs.replication={replication}"),
        ];
        full.extend(args.iter().map(|a| (*a).to_owned()));
        run_fs_shell(user, &full)
    }
}

impl std::fmt::Debug for MiniDfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniDfs")
            .field("uri", &self.uri)
            .field("webhdfs", &self.webhdfs)
            .field("options", &self.options)
            .field("base_dir", &self.base_dir())
            .finish()
    }
}

/// Runs Hadoop 3.4.3's FsShell (`hadoop fs ARGS`) in a new JVM with the minicluster's jars, as
/// the user running the tests, and returns what it did: stdout holds the command's results,
/// stderr its errors and warnings. The arguments name the cluster themselves
/// (`-fs hdfs://127.0.0.1:PORT`, or full `hdfs://` paths); [`MiniDfs::fs`] does that for you.
///
/// # Panics
///
/// When the jars are missing (run `make stores`) or Java cannot be started: the caller is a
/// test, which then fails saying so.
pub fn hadoop_fs(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    run_fs_shell(None, &args)
}

/// Runs the `main` of Hadoop's class `class` with `args` in directory `dir`, Hadoop's jars
/// of the harness on its class path (those of `make stores`, which hold the job client's
/// tests jar too): for comparing sluice with a Hadoop tool, such as TestDFSIO's driver
/// `org.apache.hadoop.test.MapredTestDriver`.
///
/// # Panics
/// If the jars are missing or java cannot be started.
pub fn hadoop_main(class: &str, args: &[&str], dir: &Path) -> Output {
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    run_main(class, None, &args, Some(dir))
}

fn run_fs_shell(user: Option<&str>, args: &[String]) -> Output {
    run_main("org.apache.hadoop.fs.FsShell", user, args, None)
}

fn run_main(class: &str, user: Option<&str>, args: &[String], dir: Option<&Path>) -> Output {
    let classpath = match launcher_classpath() {
        Ok(cp) => cp,
        Err(e) => panic!("{e}"),
    };
    let mut cmd = Command::new("java");
    cmd.args(JVM_OPTIONS)
        .arg("-Xmx256m")
        .arg(log4j_option())
        .arg("-cp")
        .arg(classpath)
        .arg(class)
        .args(args)
        .stdin(Stdio::null())
        .env_remove("HADOOP_USER_NAME");
    if let Some(user) = user {
        cmd.env("HADOOP_USER_NAME", user);
    }
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    without_proxies(&mut cmd)
        .output()
        .unwrap_or_else(|e| panic!("cannot start java for {class} (Java 17 is required): {e}"))
}

/// `-Dlog4j.configuration=...`: the harness's logging configuration, quiet on the console.
fn log4j_option() -> String {
    format!(
        "-Dlog4j.configuration=file:{}",
        stores_sources().join("conf/log4j.properties").display()
    )
}

/// The classpath of the harness's JVMs (the compiled launcher, the configuration directory,
/// the jars), compiling `MiniDfs.java` first if this version of it has not been compiled yet.
fn launcher_classpath() -> Result<String, String> {
    static CLASSES: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let classes = CLASSES.get_or_init(compile_launcher).clone()?;
    Ok(format!(
        "{}:{}:{}/*",
        classes.display(),
        stores_sources().join("conf").display(),
        lib_dir().display()
    ))
}

/// `target/stores/lib`, where `tests/stores/fetch.sh` puts the jars.
fn lib_dir() -> PathBuf {
    stores_target().join("lib")
}

/// Compiles `tests/stores/MiniDfs.java` into `target/stores/classes/<hash of the source>`,
/// unless that directory exists (see [`java::compile`]).
fn compile_launcher() -> Result<PathBuf, String> {
    let lib = lib_dir();
    if !lib.join(".complete").exists() || !lib.join(MARKER_JAR).exists() {
        return Err(format!(
            "Hadoop's minicluster jars are missing from {}: run `make stores` \
             (tests/stores/fetch.sh; it needs Maven and Java 17), or leave out the feature test-stores \
             to ignore the tests that need HDFS",
            lib.display()
        ));
    }
    java::compile(
        &stores_sources().join("MiniDfs.java"),
        "MiniDfs",
        &lib,
        &stores_target().join("classes"),
    )
}
