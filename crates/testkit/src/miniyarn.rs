//! An in-JVM YARN cluster with its own HDFS: Apache Hadoop 3.4.3's MiniYARNCluster and
//! MiniDFSCluster, run by `tests/yarn/MiniYarn.java` with the jars `tests/yarn/fetch.sh` puts
//! in `target/yarn/lib`, for the tests of sluice's YARN submitter (`target/yarn/sluice-yarn.jar`,
//! built from `yarn/` by `make yarn`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::java::{self, JVM_OPTIONS};
use crate::process::{server_dir_in, without_proxies, ServerProcess};
use crate::{yarn_sources, yarn_target};

/// How long the clusters may take to start (about 10 s alone, more on a busy machine).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Jars that only a finished fetch of the right Hadoop version leaves.
const MARKER_JARS: [&str; 2] = [
    "hadoop-minicluster-3.4.3.jar",
    "hadoop-yarn-server-tests-3.4.3-tests.jar",
];

/// A running YARN cluster (one ResourceManager, two NodeManagers) and HDFS (one NameNode, one
/// DataNode) in one JVM. Containers run as the user running the tests, on this machine.
/// Dropping it kills the JVM and removes its directory; containers still running then are not
/// the cluster's to stop (each runs in a session of its own), so tests end their applications
/// first.
pub struct MiniYarn {
    server: ServerProcess,
    conf_dir: PathBuf,
}

impl MiniYarn {
    /// Starts the clusters and waits until they are up (about 10 s; up to 120 s before giving
    /// up).
    ///
    /// Fails with a message saying what to do when the jars or `sluice-yarn.jar` are missing
    /// (`make yarn`) or Java is, and with the end of the cluster's log when it does not come
    /// up.
    pub fn start() -> Result<MiniYarn, String> {
        let classes = launcher_classes()?;
        let jar = yarn_jar();
        if !jar.is_file() {
            return Err(format!(
                "{} is missing: run `make yarn` (it needs Maven and Java 17), or \
                 leave out the feature test-yarn to ignore the tests that need YARN",
                jar.display()
            ));
        }
        let dir = server_dir_in(&yarn_target(), "miniyarn-")?;
        let base = dir.path().to_owned();
        let conf_dir = base.join("conf");
        let tmp = base.join("tmp");
        fs::create_dir_all(&tmp).map_err(|e| format!("cannot create {}: {e}", tmp.display()))?;

        let mut cmd = Command::new("java");
        cmd.args(JVM_OPTIONS)
            .arg("-Xmx2g")
            // The ResourceManager's web app needs it on Java 17 (Hadoop 3.4).
            .arg("--add-opens=java.base/java.lang=ALL-UNNAMED")
            // The web servers unpack themselves into temporary directories: keep them here.
            .arg(format!("-Djava.io.tmpdir={}", tmp.display()))
            .arg(log4j_option())
            .arg("-Dyarn.root.logger=INFO,file")
            .arg(format!(
                "-Dyarn.log.file={}",
                base.join("miniyarn.log").display()
            ))
            .arg("-cp")
            .arg(format!("{}:{}/*", classes.display(), lib_dir().display()))
            .arg("MiniYarn")
            .arg("--base")
            .arg(&base)
            .arg("--conf")
            .arg(&conf_dir)
            .arg("--lib")
            .arg(lib_dir())
            .current_dir(&base);
        let (server, ready) = ServerProcess::start(
            "MiniYarn",
            cmd,
            dir,
            &["miniyarn.log"],
            START_TIMEOUT,
            |_| None,
        )?;
        if Path::new(&ready) != conf_dir {
            return Err(format!(
                "MiniYarn printed an unexpected READY line: {ready}"
            ));
        }
        Ok(MiniYarn { server, conf_dir })
    }

    /// The directory holding `core-site.xml`, `hdfs-site.xml` and `yarn-site.xml`: with it on
    /// its classpath, a Hadoop client reaches these clusters.
    pub fn conf_dir(&self) -> &Path {
        &self.conf_dir
    }

    /// The classpath of a client of these clusters that runs sluice's submitter: the
    /// configuration directory, Hadoop's jars and `sluice-yarn.jar` (what
    /// `$(hadoop classpath):sluice-yarn.jar` is on a real cluster).
    pub fn classpath(&self) -> String {
        format!(
            "{}:{}/*:{}",
            self.conf_dir.display(),
            lib_dir().display(),
            yarn_jar().display()
        )
    }

    /// Sets `cmd` up as a user of these clusters runs `sluice --cluster yarn`:
    /// `HADOOP_CONF_DIR` pointing at them, Hadoop's client jars and `sluice-yarn.jar` found
    /// through `SLUICE_YARN_CLASSPATH` and `SLUICE_YARN_JAR`, and no proxy variables.
    pub fn as_client<'a>(&self, cmd: &'a mut Command) -> &'a mut Command {
        cmd.env("HADOOP_CONF_DIR", &self.conf_dir)
            .env(
                "SLUICE_YARN_CLASSPATH",
                format!("{}/*", lib_dir().display()),
            )
            .env("SLUICE_YARN_JAR", yarn_jar());
        without_proxies(cmd)
    }

    /// `java -cp CLASSPATH org.sluice.yarn.Submit`, to which the test adds the submitter's
    /// options (and its stdin, stdout and stderr).
    pub fn submit(&self) -> Command {
        let mut cmd = Command::new("java");
        cmd.args(JVM_OPTIONS)
            .arg("-Xmx256m")
            .arg("-cp")
            .arg(self.classpath())
            .arg("org.sluice.yarn.Submit")
            .env_remove("HADOOP_USER_NAME");
        without_proxies(&mut cmd);
        cmd
    }

    /// Runs Hadoop's FsShell (`hadoop fs`) against the cluster's HDFS as the user running the
    /// tests: `yarn.fs(&["-ls", "-R", "/user"])`. About a second (a JVM start). Check the
    /// output's status: a failing command is not a panic.
    pub fn fs(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("java");
        cmd.args(JVM_OPTIONS)
            .arg("-Xmx256m")
            .arg(log4j_option())
            .arg("-cp")
            .arg(format!(
                "{}:{}/*",
                self.conf_dir.display(),
                lib_dir().display()
            ))
            .arg("org.apache.hadoop.fs.FsShell")
            .args(args)
            .stdin(Stdio::null())
            .env_remove("HADOOP_USER_NAME");
        without_proxies(&mut cmd)
            .output()
            .unwrap_or_else(|e| panic!("cannot start java for FsShell (Java 17 is required): {e}"))
    }

    /// Everything the containers of application `app` (`application_..._0001`) wrote to
    /// their log directories (each worker's `stdout` and `stderr`, the NodeManagers'
    /// `prelaunch.*`), each file under a header naming it: for the message of a failing test.
    pub fn app_logs(&self, app: &str) -> String {
        let mut files = Vec::new();
        find_app_logs(self.server.dir(), app, false, &mut files);
        files.sort();
        let mut out = String::new();
        for file in files {
            let text = fs::read(&file).unwrap_or_default();
            out.push_str(&format!("--- {} ---\n", file.display()));
            out.push_str(&String::from_utf8_lossy(&text));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
        out
    }

    /// The cluster's own directory: storage, NodeManager directories (under `target/`), the
    /// configuration, the log (`miniyarn.log`) and what the JVM printed (`stderr.log`).
    /// Removed when the cluster is dropped.
    pub fn base_dir(&self) -> &Path {
        self.server.dir()
    }
}

impl std::fmt::Debug for MiniYarn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MiniYarn")
            .field("conf_dir", &self.conf_dir)
            .field("base_dir", &self.base_dir())
            .finish()
    }
}

/// The files under `dir` that lie in a directory named `app` (the NodeManagers' log
/// directories are `.../<application>/<container>/<file>`).
fn find_app_logs(dir: &Path, app: &str, inside: bool, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            let name_is_app = entry.file_name() == app;
            find_app_logs(&path, app, inside || name_is_app, out);
        } else if inside && kind.is_file() && path.to_string_lossy().contains("logDir") {
            out.push(path);
        }
    }
}

/// `target/yarn/sluice-yarn.jar` of the repository, which `make yarn` builds from `yarn/`.
pub fn yarn_jar() -> PathBuf {
    yarn_target().join("sluice-yarn.jar")
}

/// `target/yarn/lib`, where `tests/yarn/fetch.sh` puts the jars.
fn lib_dir() -> PathBuf {
    yarn_target().join("lib")
}

/// `-Dlog4j.configuration=...`: the harness's logging configuration, quiet on the console.
fn log4j_option() -> String {
    format!(
        "-Dlog4j.configuration=file:{}",
        yarn_sources().join("conf/log4j.properties").display()
    )
}

/// The compiled `tests/yarn/MiniYarn.java` (compiled on first use in this process, and only
/// when this version of the source has not been compiled before).
fn launcher_classes() -> Result<PathBuf, String> {
    static CLASSES: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    CLASSES
        .get_or_init(|| {
            let lib = lib_dir();
            if !lib.join(".complete").exists()
                || MARKER_JARS.iter().any(|jar| !lib.join(jar).exists())
            {
                return Err(format!(
                    "Hadoop's minicluster jars are missing from {}: run `make yarn` \
                     (tests/yarn/fetch.sh; it needs Maven and Java 17), or \
                     leave out the feature test-yarn to ignore the tests that need YARN",
                    lib.display()
                ));
            }
            java::compile(
                &yarn_sources().join("MiniYarn.java"),
                "MiniYarn",
                &lib,
                &yarn_target().join("classes"),
            )
        })
        .clone()
}
