//! The Hadoop side: Apache Hadoop 3.4.2 Streaming in local mode, run by
//! `tests/hadoop/StreamingBatch.java` (all uncached cases in one JVM, since starting the JVM
//! and the first job is what costs), with results cached under
//! `target/hadoop/results/<case>-<hash>/`:
//!
//! - `case/`: the scratch copy the job ran against,
//! - `output/`: the job's output directory (if it made one),
//! - `log`: everything the job printed (log, usage text, the programs' stderr),
//! - `exit`: the exit code, written last, so an entry without it is unfinished.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::case::Case;

/// The generic options that put Hadoop in local mode, given to both systems before a case's
/// own arguments; `{tmp}` is a scratch directory.
pub(crate) const LOCAL_MODE: [&str; 6] = [
    "-D",
    "mapreduce.framework.name=local",
    "-D",
    "fs.defaultFS=file:///",
    "-D",
    "hadoop.tmp.dir={tmp}",
];

/// The leading generic options with `tmp` as Hadoop's scratch directory.
pub(crate) fn local_mode_args(tmp: &Path) -> Vec<String> {
    let tmp = tmp.to_str().expect("scratch paths are UTF-8");
    LOCAL_MODE.iter().map(|a| a.replace("{tmp}", tmp)).collect()
}

/// Where things live, relative to the repository root.
pub(crate) struct Layout {
    pub(crate) root: PathBuf,
}

impl Layout {
    pub(crate) fn new() -> Layout {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        Layout {
            root: root.canonicalize().unwrap(),
        }
    }

    pub(crate) fn driver_dir(&self) -> PathBuf {
        self.root.join("tests/hadoop")
    }

    pub(crate) fn lib(&self) -> PathBuf {
        self.root.join("target/hadoop/lib")
    }

    pub(crate) fn results(&self) -> PathBuf {
        self.root.join("target/hadoop/results")
    }

    pub(crate) fn cases(&self) -> PathBuf {
        self.root.join("crates/cli/tests/streaming/cases")
    }

    /// Whether `tests/hadoop/fetch.sh` has put the jars in place (lz4-java too: a checkout
    /// fetched before it was added must fetch again).
    pub(crate) fn jars_present(&self) -> bool {
        self.lib().join(".complete").exists()
            && self.lib().join("hadoop-streaming-3.4.2.jar").exists()
            && self.lib().join("lz4-java-1.7.1.jar").exists()
    }

    /// The driver's sources: part of every case's hash, so changing how Hadoop is run
    /// invalidates the cache.
    pub(crate) fn salt(&self) -> Vec<u8> {
        let mut salt = b"hadoop-3.4.2\0".to_vec();
        for f in ["StreamingBatch.java", "log4j.properties"] {
            salt.extend(fs::read(self.driver_dir().join(f)).unwrap());
        }
        salt
    }

    /// The cache entry of `case`.
    pub(crate) fn entry(&self, case: &Case) -> PathBuf {
        self.results().join(format!("{}-{}", case.name, case.hash))
    }
}

/// What one system did with one case.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// The exit code; `None` if killed by a signal or timed out.
    pub(crate) exit: Option<i32>,
    pub(crate) output: PathBuf,
    /// stderr (and stdout) of the run: for Hadoop, the whole job log.
    pub(crate) log: String,
}

/// Reads a finished cache entry, or `None` if it is missing or unfinished.
pub(crate) fn cached(layout: &Layout, case: &Case) -> Option<Run> {
    let entry = layout.entry(case);
    let exit = fs::read_to_string(entry.join("exit")).ok()?;
    let log = fs::read(entry.join("log")).unwrap_or_default();
    Some(Run {
        exit: exit.trim().parse().ok(),
        output: entry.join("output"),
        log: String::from_utf8_lossy(&log).into_owned(),
    })
}

/// Runs every case in `cases` through Hadoop in one JVM, filling their cache entries.
pub(crate) fn run_batch(layout: &Layout, cases: &[&Case]) -> Result<(), String> {
    if cases.is_empty() {
        return Ok(());
    }
    let results = layout.results();
    fs::create_dir_all(&results).map_err(|e| e.to_string())?;
    let scratch = tempfile::Builder::new()
        .prefix("batch-")
        .tempdir_in(&results)
        .map_err(|e| e.to_string())?;
    let cwd = scratch.path().join("cwd");
    fs::create_dir_all(&cwd).unwrap();
    fs::write(cwd.join(".streaming-batch-cwd"), "").unwrap();

    let mut manifest = String::new();
    for case in cases {
        remove_stale_entries(layout, case);
        let entry = layout.entry(case);
        if entry.exists() {
            fs::remove_dir_all(&entry).map_err(|e| e.to_string())?;
        }
        let copy = entry.join("case");
        case.materialize(&copy)?;
        let tmp = scratch.path().join("tmp").join(&case.name);
        let mut args = local_mode_args(&tmp);
        args.extend(case.resolve_args(&copy, &entry.join("output")));
        writeln!(manifest, "case {}", case.name).unwrap();
        writeln!(manifest, "result {}", entry.display()).unwrap();
        for a in args {
            writeln!(manifest, "arg {a}").unwrap();
        }
        writeln!(manifest, "end").unwrap();
    }
    let manifest_path = scratch.path().join("manifest");
    fs::write(&manifest_path, manifest).unwrap();

    let dir = layout.driver_dir();
    let classpath = format!("{}:{}/*", dir.display(), layout.lib().display());
    eprintln!(
        "running {} case(s) through Hadoop in one JVM (about a second each; the results are \
         cached under target/hadoop/results for later runs)",
        cases.len()
    );
    let start = Instant::now();
    // The driver's own output is the JVM's warnings about the exit guard it installs (the
    // jobs' logs go to each case's entry): shown only if the driver fails.
    let out = Command::new("java")
        .arg("-Djava.security.manager=allow")
        .arg("-cp")
        .arg(classpath)
        .arg(dir.join("StreamingBatch.java"))
        .arg(&manifest_path)
        .current_dir(&cwd)
        .output()
        .map_err(|e| format!("cannot start java (Java 17 is required): {e}"))?;
    eprintln!("Hadoop batch took {:.1}s", start.elapsed().as_secs_f64());
    if !out.status.success() {
        return Err(format!(
            "the Hadoop driver failed: {}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    for case in cases {
        if cached(layout, case).is_none() {
            return Err(format!(
                "the Hadoop driver left case {} unfinished",
                case.name
            ));
        }
    }
    Ok(())
}

/// Removes cache entries of `case` made from other versions of it.
fn remove_stale_entries(layout: &Layout, case: &Case) {
    let Ok(entries) = fs::read_dir(layout.results()) else {
        return;
    };
    let prefix = format!("{}-", case.name);
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(hash) = name.strip_prefix(&prefix) else {
            continue;
        };
        // Only `<name>-<16 hex digits>`: case `wc` must not remove `wc-combiner-...`.
        if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}
