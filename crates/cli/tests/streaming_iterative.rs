//! Iterative jobs as Hadoop Streaming users write them (`bench/streaming/graph.py`, driven by
//! `bench/streaming_iterative.sh`): PageRank and connected components, one streaming job per
//! iteration, the driver reading the vertex count, the dangling rank and the changed labels
//! from the `reporter:counter:` totals in each job's console output, as wrappers of Hadoop do.
//! Run through `sluice streaming` (and, with the `test-hadoop` feature, through Hadoop), they
//! must give the built-in jobs' ranks (to a millionth) and labels (exactly); the script fails
//! otherwise.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

#[test]
fn streaming_scripts_give_the_built_in_jobs_results() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let work = tempfile::tempdir().unwrap();
    let mut command = Command::new("bash");
    command
        .arg(root.join("bench/streaming_iterative.sh"))
        .args(["--scale", "8", "--iterations", "4", "--threads", "2"])
        .arg("--work")
        .arg(work.path())
        .arg("--sluice")
        .arg(SLUICE)
        .stdin(std::process::Stdio::null());
    if !cfg!(feature = "test-hadoop") {
        command.arg("--skip-hadoop");
    }
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // A row per job and system, each result the same as the built-in job's.
    let systems = if cfg!(feature = "test-hadoop") { 2 } else { 1 };
    assert_eq!(stdout.matches("| same |").count(), 2 * systems, "{stdout}");
    let pagerank = stdout
        .lines()
        .find(|l| l.starts_with("| pagerank | sluice streaming |"))
        .unwrap();
    assert!(pagerank.contains("| 4 |"), "{pagerank}");
    // Components end with an iteration that changes no label.
    assert!(stderr.contains("changed 0 labels"), "{stderr}");
}
