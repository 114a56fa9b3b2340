//! What the JVM-based harnesses share: the JVM options, and compiling a launcher's source
//! (`tests/stores/MiniDfs.java`, `tests/yarn/MiniYarn.java`) against the jars Maven fetched.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The JVM options of every JVM the harness starts: IPv4 sockets only, and a small,
/// quick-starting JVM (the servers hold test data, the shells run one command).
pub(crate) const JVM_OPTIONS: [&str; 3] = [
    "-Djava.net.preferIPv4Stack=true",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
];

/// Compiles the single Java file `source` (whose top-level class is `class`) against the jars
/// in `lib` into `classes_root/<hash of the source>`, unless that directory already holds the
/// class, and returns that directory. Safe when several test processes do it at once: each
/// compiles into a scratch directory and renames it into place; the first rename wins.
pub(crate) fn compile(
    source: &Path,
    class: &str,
    lib: &Path,
    classes_root: &Path,
) -> Result<PathBuf, String> {
    let text = fs::read(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    let classes = classes_root.join(format!("{:016x}", fnv1a(&text)));
    let class_file = format!("{class}.class");
    if classes.join(&class_file).exists() {
        return Ok(classes);
    }
    fs::create_dir_all(classes_root)
        .map_err(|e| format!("cannot create {}: {e}", classes_root.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix(".javac-")
        .tempdir_in(classes_root)
        .map_err(|e| {
            format!(
                "cannot create a directory in {}: {e}",
                classes_root.display()
            )
        })?;
    let out = Command::new("javac")
        .arg("-nowarn")
        .arg("-d")
        .arg(scratch.path())
        .arg("-cp")
        .arg(format!("{}/*", lib.display()))
        .arg(source)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot start javac (a Java 17 JDK is required: \
                 apt-get install openjdk-17-jdk-headless): {e}"
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "javac failed on {}:\n{}{}",
            source.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let compiled = scratch.keep();
    if fs::rename(&compiled, &classes).is_err() {
        // Another process put the same classes in place first.
        let _ = fs::remove_dir_all(&compiled);
    }
    if classes.join(&class_file).exists() {
        Ok(classes)
    } else {
        Err(format!(
            "cannot put the compiled launcher in {}",
            classes.display()
        ))
    }
}

/// 64-bit FNV-1a: names a version of a launcher's source.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
