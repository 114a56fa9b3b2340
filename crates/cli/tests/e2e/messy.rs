//! Every job on the hand-made messy corpus (CRLF, lone CR, no final newline, empty files and
//! directories, hidden files, non-UTF-8 bytes, tabs, a 10 MiB line, runs of spaces, form
//! feeds, terminators on split boundaries), under several reducer / thread / split settings,
//! compared byte for byte with the Python references.

use std::path::Path;

use crate::corpus::messy_corpus;
use crate::util::Case;

/// A run configuration: reducers, engine options, and whether the corpus has the 10 MiB line
/// (left out with tiny splits, where every split inside the line would scan to its end).
struct Config {
    name: &'static str,
    reducers: usize,
    engine: &'static [&'static str],
    huge_line: bool,
}

const CONFIGS: [Config; 5] = [
    Config {
        name: "r1",
        reducers: 1,
        engine: &[],
        huge_line: true,
    },
    Config {
        name: "r3-t3-split1MiB",
        reducers: 3,
        engine: &["--threads", "3", "--split-size", "1MiB"],
        huge_line: true,
    },
    Config {
        name: "r3-t3-split1KiB",
        reducers: 3,
        engine: &["--threads", "3", "--split-size", "1KiB"],
        huge_line: false,
    },
    // The smallest budget accepted: the corpus spills, and the 10 MiB line (a 20 MiB sort
    // record, key and value) is larger than the whole budget.
    Config {
        name: "r2-t2-mem2MiB",
        reducers: 2,
        engine: &[
            "--threads",
            "2",
            "--memory",
            "2MiB",
            "--split-size",
            "256KiB",
        ],
        huge_line: true,
    },
    Config {
        name: "r2-t2-split37B",
        reducers: 2,
        engine: &[
            "--threads",
            "2",
            "--split-size",
            "37",
            "--spill-codec",
            "zstd",
        ],
        huge_line: false,
    },
];

/// Runs `job` (with `shared` arguments for both programs) under every configuration.
fn check_all_configs(job: &'static str, shared: Option<&[&str]>, configs: &[Config]) {
    let dir = tempfile::tempdir().unwrap();
    let huge = messy_corpus(&dir.path().join("huge"), true);
    let small = messy_corpus(&dir.path().join("small"), false);
    for config in configs {
        let corpus: &Path = if config.huge_line { &huge } else { &small };
        let mut case = Case::new(job, &[corpus])
            .reducers(config.reducers)
            .engine(config.engine);
        if let Some(shared) = shared {
            case = case.shared(shared);
        }
        case.check(dir.path(), &format!("{job}-{}", config.name));
    }
}

#[test]
fn wordcount_messy_matches_reference() {
    check_all_configs("wordcount", None, &CONFIGS);
}

#[test]
fn sort_messy_matches_reference() {
    check_all_configs("sort", None, &CONFIGS);
}

#[test]
fn invertedindex_messy_matches_reference() {
    check_all_configs("invertedindex", None, &CONFIGS);
}

/// Grep with several patterns (Python's `re` and Rust's `regex` agree on them), including a
/// capture group, a group that sometimes does not take part, and an anchor (start of line).
#[test]
fn grep_messy_matches_reference() {
    check_all_configs("grep", Some(&["--pattern", "[a-z]+ing"]), &CONFIGS);
    let patterns: [&[&str]; 5] = [
        &["--pattern", r"dfs[a-z.]+"],
        &["--pattern", r"\d+"],
        &["--pattern", r"(\d+)\.(\d+)", "--group", "2"],
        &["--pattern", r"([a-z]+)ing|(k)\d", "--group", "2"],
        &["--pattern", r"^k\d"],
    ];
    for pattern in patterns {
        check_all_configs("grep", Some(pattern), &CONFIGS[1..3]);
    }
}
