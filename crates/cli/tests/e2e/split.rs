//! A partition split into key ranges reduced at once (`--reduce-split`): skewed inputs whose
//! records mostly go to one partition, run with a split threshold small enough to split it
//! and with splitting off. Both runs are compared byte for byte with the Python reference,
//! so they are identical to each other too; the report's `reduce_ranges` says the first did
//! split and the second did not.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use crate::util::{counter, Case};

/// Writes a skewed corpus (`tests/reference/skewed.py`) of `kind` into `dir`.
fn skewed(dir: &Path, kind: &str, reducers: usize, lines: usize) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/reference/skewed.py");
    let status = Command::new("python3")
        .arg(&script)
        .args([OsStr::new("--out"), dir.as_os_str()])
        .args(["--kind", kind, "--reducers", &reducers.to_string()])
        .args(["--lines", &lines.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "{} failed", script.display());
}

/// Engine settings: (name, reducers, threads, more arguments). With more threads than
/// reducers, the large partition's task always finds threads left by the others.
const CONFIGS: [(&str, usize, usize, &[&str]); 3] = [
    ("r1-t3", 1, 3, &[]),
    ("r3-t5", 3, 5, &["--split-size", "256KiB"]),
    // Spill files of many map tasks, merged in passes within a small budget.
    (
        "r3-t5-mem8MiB",
        3,
        5,
        &["--memory", "8MiB", "--split-size", "128KiB"],
    ),
];

/// Runs `job` on `corpus` under every configuration, split at `threshold` and unsplit.
fn check_split(job: &'static str, corpus: &Path, shared: &[&str], threshold: &str, scratch: &Path) {
    for (name, reducers, threads, engine) in CONFIGS {
        let threads = threads.to_string();
        for (mode, split) in [("split", threshold), ("whole", "off")] {
            let checked = Case::new(job, &[corpus])
                .reducers(reducers)
                .shared(shared)
                .engine(engine)
                .engine(&["--threads", &threads, "--reduce-split", split])
                .check(scratch, &format!("{job}-{name}-{mode}"));
            let ranges = counter(&checked.report, "reduce_ranges");
            if mode == "split" {
                assert!(ranges >= 2, "{job} {name}: no partition was split");
            } else {
                assert_eq!(ranges, 0, "{job} {name}: split with --reduce-split off");
            }
        }
    }
}

#[test]
fn skewed_wordcount_split_matches_unsplit_and_reference() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("words");
    skewed(&corpus, "words", 3, 20_000);
    // Word counts are summed before the reduce: a partition holds a record per word and run.
    check_split("wordcount", &corpus, &[], "16KiB", dir.path());
}

#[test]
fn skewed_sort_split_matches_unsplit_and_reference() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("pairs");
    skewed(&corpus, "pairs", 3, 20_000);
    check_split("sort", &corpus, &[], "64KiB", dir.path());
}

#[test]
fn skewed_grep_and_invertedindex_split_match_unsplit_and_reference() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("words");
    skewed(&corpus, "words", 3, 5_000);
    // grep's last stage (one partition, by count) is the one split.
    check_split(
        "grep",
        &corpus,
        &["--pattern", "[a-z]+e[a-z]"],
        "4KiB",
        dir.path(),
    );
    check_split("invertedindex", &corpus, &[], "16KiB", dir.path());
}
