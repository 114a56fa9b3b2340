//! Every job on clean corpora from `sluice gen text` (several files, Zipf words), with 1 and
//! several reducers, several threads and small splits, compared with the Python references.
//! Sort also gets a derived `key\tvalue` corpus with many equal keys spread over several files,
//! so that its stability (files in path-byte order, then position) is observable.

use std::fs;
use std::path::Path;

use crate::util::{gen_text, Case};

/// Engine settings each job is run under: (name, reducers, engine arguments).
const CONFIGS: [(&str, usize, &[&str]); 4] = [
    ("r1", 1, &[]),
    (
        "r3-t2-split64KiB",
        3,
        &["--threads", "2", "--split-size", "64KiB"],
    ),
    (
        "r2-t2-mem2MiB",
        2,
        &[
            "--threads",
            "2",
            "--memory",
            "2MiB",
            "--split-size",
            "512KiB",
        ],
    ),
    (
        "r4-t3-split4KiB",
        4,
        &[
            "--threads",
            "3",
            "--split-size",
            "4KiB",
            "--spill-codec",
            "none",
        ],
    ),
];

fn check_configs(job: &'static str, corpus: &Path, shared: Option<&[&str]>, scratch: &Path) {
    for (name, reducers, engine) in CONFIGS {
        let mut case = Case::new(job, &[corpus]).reducers(reducers).engine(engine);
        if let Some(shared) = shared {
            case = case.shared(shared);
        }
        case.check(scratch, &format!("{job}-{name}"));
    }
}

#[test]
fn wordcount_generated_matches_reference() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("gen");
    gen_text(&corpus, "4MiB", 3, 1);
    check_configs("wordcount", &corpus, None, dir.path());
}

#[test]
fn invertedindex_generated_matches_reference() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("gen");
    gen_text(&corpus, "2MiB", 8, 2);
    check_configs("invertedindex", &corpus, None, dir.path());
}

#[test]
fn grep_generated_matches_reference() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("gen");
    gen_text(&corpus, "3MiB", 2, 3);
    let patterns: [&[&str]; 3] = [
        &["--pattern", "[a-z]+ing"],
        &["--pattern", "q[a-z]"],
        &["--pattern", "^([a-z]+) ([a-z]+)", "--group", "2"],
    ];
    for pattern in patterns {
        check_configs("grep", &corpus, Some(pattern), dir.path());
    }
}

/// Rewrites a generated corpus as `first-word \t file:line:rest` lines in several files whose
/// path order (`B.txt` < `a.txt` < `b.txt` < `sub/c.txt`) differs from creation order.
fn key_value_corpus(generated: &Path, out: &Path) {
    let names = ["b.txt", "sub/c.txt", "a.txt", "B.txt"];
    let mut sources: Vec<_> = fs::read_dir(generated)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    sources.sort();
    for (i, source) in sources.iter().enumerate() {
        let text = fs::read(source).unwrap();
        let mut kv = Vec::new();
        for (n, line) in text.split(|&b| b == b'\n').enumerate() {
            let (key, rest) = match line.iter().position(|&b| b == b' ') {
                Some(p) => (&line[..p], &line[p + 1..]),
                None => (line, &b""[..]),
            };
            kv.extend_from_slice(key);
            kv.extend_from_slice(format!("\t{i}:{n}:").as_bytes());
            kv.extend_from_slice(rest);
            kv.push(b'\n');
        }
        let path = out.join(names[i % names.len()]);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, kv).unwrap();
    }
}

#[test]
fn sort_generated_matches_reference() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("gen");
    gen_text(&corpus, "3MiB", 4, 4);
    check_configs("sort", &corpus, None, dir.path());
    let kv = dir.path().join("kv");
    key_value_corpus(&corpus, &kv);
    for (name, reducers, engine) in CONFIGS {
        Case::new("sort", &[&kv])
            .reducers(reducers)
            .engine(engine)
            .check(dir.path(), &format!("sort-kv-{name}"));
    }
}
