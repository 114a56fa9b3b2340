//! How the plugin's `NativeLoader` takes its library out of the jar: into a cache of the
//! user's own in `java.io.tmpdir` (`sluice-USER/<hash>/`), made private to the user, whose copy
//! is loaded only when its bytes are the jar's; and never from a `sluice-USER` that another
//! user owns or may write to (a library planted there would run as this user), but from a
//! private directory of the JVM's own, removed when it exits.
//!
//! Each run is a fresh JVM (`LoadNative` below, with the plugin jar from `make plugin`) that
//! loads the library and prints the file the process mapped.
#![allow(clippy::unwrap_used)]

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)] // Shared by the plugin tests; this one uses part of it.
mod common;
use common::*;

const DRIVER: &str = r#"
import java.nio.file.Files;
import java.nio.file.Paths;

/** Loads sluice's library as the plugin does, then prints the file the process mapped. */
public class LoadNative {
  public static void main(String[] args) throws Exception {
    org.sluice.hadoop.NativeLoader.load();
    for (String line : Files.readAllLines(Paths.get("/proc/self/maps"))) {
      if (line.endsWith("libsluice_jni.so")) {
        System.out.println(line.substring(line.indexOf('/')));
        return;
      }
    }
    throw new IllegalStateException("libsluice_jni.so is not mapped");
  }
}
"#;

/// The plugin jar and the compiled driver (in `classes`): the classpath of a run.
fn setup(classes: &Path) -> String {
    require(&[("target/plugin/sluice-plugin.jar", "`make plugin`")]);
    let jar = root().join("target/plugin/sluice-plugin.jar");
    fs::write(classes.join("LoadNative.java"), DRIVER).unwrap();
    let javac = Command::new("javac")
        .arg("-cp")
        .arg(&jar)
        .arg("-d")
        .arg(classes)
        .arg(classes.join("LoadNative.java"))
        .status()
        .unwrap_or_else(|e| panic!("cannot start javac (a Java 17 JDK is required): {e}"));
    assert!(javac.success(), "LoadNative.java does not compile");
    format!("{}:{}", classes.display(), jar.display())
}

/// Runs the driver with `java.io.tmpdir` at `tmp`: the library file it loaded.
fn load(classpath: &str, tmp: &Path) -> PathBuf {
    let out = Command::new("java")
        .arg(format!("-Djava.io.tmpdir={}", tmp.display()))
        .arg("-cp")
        .arg(classpath)
        .arg("LoadNative")
        .output()
        .unwrap_or_else(|e| panic!("cannot start java (Java 17 is required): {e}"));
    assert!(
        out.status.success(),
        "the library did not load:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// The name Java knows this user by (`user.name`).
fn user_name() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A temporary directory whose `sluice-USER` holds garbage where the cache keeps the library
/// (the place learnt from a clean load), the size of the real one.
struct Planted {
    _scratch: tempfile::TempDir,
    classpath: String,
    /// The `java.io.tmpdir` of the runs.
    tmp: PathBuf,
    /// The garbage.
    library: PathBuf,
}

impl Planted {
    /// With `sluice-USER` of `mode`.
    fn new(mode: u32) -> Planted {
        let scratch = tempfile::tempdir().unwrap();
        let classpath = setup(scratch.path());
        let clean = scratch.path().join("clean");
        fs::create_dir(&clean).unwrap();
        let real = load(&classpath, &clean);
        let relative = real.strip_prefix(&clean).unwrap();
        let tmp = scratch.path().join("tmp");
        let library = tmp.join(relative);
        fs::create_dir_all(library.parent().unwrap()).unwrap();
        fs::write(&library, garbage(&real)).unwrap();
        fs::set_permissions(Self::shared(&tmp), fs::Permissions::from_mode(mode)).unwrap();
        Planted {
            _scratch: scratch,
            classpath,
            tmp,
            library,
        }
    }

    fn shared(tmp: &Path) -> PathBuf {
        tmp.join(format!("sluice-{}", user_name()))
    }

    /// Loads the library with this `java.io.tmpdir`: it must not be the garbage, but a copy
    /// in a directory of the JVM's own, gone when it exits (the garbage left as it was).
    fn assert_not_used(&self) {
        let before = fs::read(&self.library).unwrap();
        let loaded = load(&self.classpath, &self.tmp);
        assert_ne!(loaded, self.library);
        assert!(loaded.starts_with(&self.tmp), "{}", loaded.display());
        assert_eq!(fs::read(&self.library).unwrap(), before);
        assert_eq!(names(&self.tmp), [format!("sluice-{}", user_name())]);
    }
}

/// Bytes of the length of the file at `library`, which no loader takes for a library.
fn garbage(library: &Path) -> Vec<u8> {
    let size = fs::metadata(library).unwrap().len();
    vec![b'x'; usize::try_from(size).unwrap()]
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Java 17 and `make plugin` (the test-hadoop feature)"
)]
fn the_library_is_cached_privately_and_its_copy_checked() {
    let scratch = tempfile::tempdir().unwrap();
    let classpath = setup(scratch.path());
    let tmp = scratch.path().join("tmp");
    fs::create_dir(&tmp).unwrap();
    let shared = tmp.join(format!("sluice-{}", user_name()));

    let first = load(&classpath, &tmp);
    assert!(first.starts_with(&shared), "{}", first.display());
    assert_eq!(fs::metadata(&shared).unwrap().mode() & 0o777, 0o700);
    // The next JVM finds it there.
    assert_eq!(load(&classpath, &tmp), first);

    // A copy whose bytes are not the jar's (same length) is written again, not loaded.
    let bad = garbage(&first);
    fs::write(&first, &bad).unwrap();
    assert_eq!(load(&classpath, &tmp), first);
    assert_ne!(fs::read(&first).unwrap(), bad);
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Java 17 and `make plugin` (the test-hadoop feature)"
)]
fn a_cache_others_may_write_to_is_not_used() {
    Planted::new(0o777).assert_not_used();
}

#[test]
#[cfg_attr(
    not(feature = "test-root"),
    ignore = "needs root, to give a directory to another user (the test-root feature), and `make plugin`"
)]
fn a_cache_another_user_owns_is_not_used() {
    let planted = Planted::new(0o755);
    // `nobody`'s, the way another user's directory of that name would be.
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(Planted::shared(&planted.tmp))
        .status()
        .unwrap();
    assert!(chown.success(), "chown needs root");
    planted.assert_not_used();
}
