//! What the plugin's tests against Hadoop share: the collector setting, the jars they need,
//! deterministic text, the Java driver (its manifest, compiling and running it), and the
//! reading of output directories.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// The setting that puts the native collector first, Hadoop's own after it as the fallback.
pub(crate) const COLLECTOR: &str = "mapreduce.job.map.output.collector.class=\
    org.sluice.hadoop.NativeMapOutputCollector,org.apache.hadoop.mapred.MapTask$MapOutputBuffer";

/// The setting that replaces Hadoop's reduce-side merge with the native one (the shuffle
/// consumer plugin; Hadoop's own merge stays its fallback inside it).
pub(crate) const SHUFFLE: &str =
    "mapreduce.job.reduce.shuffle.consumer.plugin.class=org.sluice.hadoop.NativeShuffle";

/// The package of Hadoop's example jobs.
pub(crate) const EXAMPLES: &str = "org.apache.hadoop.examples";

/// The repository's root.
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Panics with the way to get them unless the files (relative to the root) are there: a test
/// that needs Hadoop never passes without it (without its feature it is ignored, with the
/// reason). Each file comes with what to run when it is missing.
pub(crate) fn require(files: &[(&str, &str)]) {
    let root = root();
    for (file, how) in files {
        assert!(root.join(file).exists(), "{file} is missing: run {how}");
    }
}

/// A deterministic generator (64-bit LCG), so that the inputs are the same on every run.
pub(crate) struct Lcg(pub(crate) u64);

impl Lcg {
    /// A number in `0..below`.
    pub(crate) fn next(&mut self, below: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % below
    }
}

/// `lines` lines of `words` words each, drawn from `vocabulary` words, skewed towards the
/// first ones as real text is.
pub(crate) fn text(lines: usize, words: usize, vocabulary: u64, seed: u64) -> String {
    let mut rng = Lcg(seed);
    let mut out = String::new();
    for _ in 0..lines {
        for w in 0..words {
            let a = rng.next(vocabulary);
            let b = rng.next(vocabulary);
            if w > 0 {
                out.push(' ');
            }
            out.push_str(&format!("w{}", a * b / vocabulary));
        }
        out.push('\n');
    }
    out
}

/// Pairs of small numbers, one per line (secondarysort's input).
pub(crate) fn pairs(count: usize, seed: u64) -> String {
    let mut rng = Lcg(seed);
    (0..count)
        .map(|_| format!("{} {}\n", rng.next(50), rng.next(1000) as i64 - 500))
        .collect()
}

/// Appends a case to the manifest `tests/plugin/ExamplesBatch.java` reads.
pub(crate) fn case(manifest: &mut String, name: &str, result: &Path, args: &[String]) {
    manifest.push_str(&format!("case {name}\nresult {}\n", result.display()));
    for a in args {
        manifest.push_str(&format!("arg {a}\n"));
    }
    manifest.push_str("end\n");
}

/// Compiles `tests/plugin/ExamplesBatch.java` into `classes` against `classpath`. The driver
/// is compiled to class files (not run as a source file) so that Hadoop's tasks can load its
/// job classes by name.
pub(crate) fn compile_driver(classes: &Path, classpath: &str) {
    let javac = Command::new("javac")
        .arg("-d")
        .arg(classes)
        .arg("-cp")
        .arg(classpath)
        .arg(root().join("tests/plugin/ExamplesBatch.java"))
        .status()
        .unwrap_or_else(|e| panic!("cannot start javac (a Java 17 JDK is required): {e}"));
    assert!(javac.success(), "ExamplesBatch.java does not compile");
}

/// Runs the compiled driver on `classpath` in `scratch` with `jvm_options` before its class
/// and `args` after it, its standard error going to `stderr`; returns how it ended.
pub(crate) fn run_driver(
    classpath: &str,
    jvm_options: &[String],
    args: &[&Path],
    scratch: &Path,
    stderr: Stdio,
) -> ExitStatus {
    Command::new("java")
        // The driver installs a security manager to turn the examples' System.exit into an
        // exception (Java 17 allows that only when asked).
        .arg("-Djava.security.manager=allow")
        .args(jvm_options)
        .arg("-cp")
        .arg(classpath)
        .arg("ExamplesBatch")
        .args(args)
        .current_dir(scratch)
        .stderr(stderr)
        .status()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"))
}

/// The visible files of an output directory: name → bytes.
pub(crate) fn outputs(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            !name.starts_with('.') && !name.starts_with('_')
        })
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}
