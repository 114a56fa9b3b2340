//! `--cluster yarn` on a cluster that cannot give every container asked for: the job starts on
//! the workers that connected within the wait, and writes what one machine writes.
//!
//! A file of its own, so that its cluster (`sluice-testkit`'s `MiniYarn`: two NodeManagers of
//! 4096 MB) serves it alone: the container it cannot have stays asked for until the job ends,
//! and would hold back other tests' containers. Needs `make yarn`; ignored, with the reason,
//! without the `test-yarn` feature.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use sluice_testkit::{without_proxies, MiniYarn};

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

/// `sluice ARGS` as a user of `yarn` runs it.
fn sluice(yarn: Option<&MiniYarn>, args: &[&str], cwd: &Path) -> Output {
    let mut cmd = Command::new(SLUICE);
    cmd.args(args).current_dir(cwd).stdin(Stdio::null());
    match yarn {
        Some(yarn) => yarn.as_client(&mut cmd),
        None => without_proxies(&mut cmd),
    }
    .output()
    .unwrap()
}

/// The part files of a local output directory, by name.
fn parts(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("part-"))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs a YARN cluster: make yarn; cargo test --features test-yarn"
)]
fn a_job_starts_on_the_workers_yarn_gives_within_the_wait() {
    let yarn = MiniYarn::start().unwrap_or_else(|e| panic!("MiniYarn: {e}"));
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in");
    fs::create_dir_all(&input).unwrap();
    for f in 0..4 {
        let text: String = (0..2_000)
            .map(|i| format!("word{} w{f} common\n", i % 97))
            .collect();
        fs::write(input.join(format!("f{f}.txt")), text).unwrap();
    }
    let input_uri = format!("file://{}", input.display());
    let expected = dir.path().join("expected");
    let out = sluice(
        None,
        &[
            "run",
            "wordcount",
            "-q",
            "-i",
            &input_uri,
            "-r",
            "3",
            "-o",
            expected.to_str().unwrap(),
        ],
        dir.path(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A container for a 3 GiB budget takes 3456 MB: one fits on each NodeManager, and the
    // third asked for never comes.
    let output = dir.path().join("out");
    let output_uri = format!("file://{}", output.display());
    let out = sluice(
        Some(&yarn),
        &[
            "run",
            "wordcount",
            "-i",
            &input_uri,
            "-r",
            "3",
            "-o",
            &output_uri,
            "--cluster",
            "yarn:3",
            "--memory",
            "3GiB",
            "--threads",
            "1",
            "-Dsluice.coordinator.address=127.0.0.1",
            "-Dsluice.yarn.wait.seconds=15",
        ],
        dir.path(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("YARN: 2 of 3 workers connected within 15 s")
            && stderr.contains("the job starts on them"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("  worker ").count(), 2, "{stderr}");
    assert_eq!(parts(&expected), parts(&output));
    assert!(output.join("_SUCCESS").exists());
}
