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

/// The sorted lines of a job's part files, and how many part files there are.
fn part_lines(dir: &Path) -> (usize, Vec<String>) {
    let mut parts = 0;
    let mut lines = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("part-")
        {
            parts += 1;
            lines.extend(fs::read_to_string(&path).unwrap().lines().map(String::from));
        }
    }
    lines.sort();
    (parts, lines)
}

/// Wrappers built for Hadoop give the number of reducers as `-D mapreduce.job.reduces` (HiBench
/// does): without `--reducers` it is taken from there (or from the old `mapred.reduce.tasks`);
/// `--reducers` wins over it; zero is refused as a usage error.
#[test]
fn reducers_come_from_hadoops_key_unless_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_text(&d.join("in"), "200KiB", 2, 5);
    let run = |name: &str, args: &[&str]| {
        let out = d.join(name);
        let mut all = vec!["run", "wordcount", "-q", "--input"];
        let input = d.join("in");
        let (input, output) = (input.to_str().unwrap(), out.to_str().unwrap());
        all.extend([input, "--output", output]);
        all.extend(args);
        (crate::util::sluice(&all, None), out)
    };
    let (outcome, one) = run("one", &[]);
    outcome.assert_code(0, "one reducer");
    let (parts, expected) = part_lines(&one);
    assert_eq!(parts, 1);
    for (name, args, reducers) in [
        ("new-key", &["-D", "mapreduce.job.reduces=3"][..], 3),
        ("old-key", &["-D", "mapred.reduce.tasks=4"][..], 4),
        (
            "flag-wins",
            &["-D", "mapreduce.job.reduces=3", "-r", "2"][..],
            2,
        ),
    ] {
        let (outcome, out) = run(name, args);
        outcome.assert_code(0, name);
        let (parts, lines) = part_lines(&out);
        assert_eq!(parts, reducers, "{name}");
        assert!(lines == expected, "{name}: other lines than one reducer's");
    }
    let (outcome, out) = run("zero", &["-D", "mapreduce.job.reduces=0"]);
    outcome.assert_code(2, "zero reducers");
    assert!(
        outcome.stderr.contains("mapreduce.job.reduces=0"),
        "{}",
        outcome.stderr
    );
    assert!(!out.exists());
}

/// `-D sluice.memory` and `-D sluice.threads` set a built-in job's budget and threads, as they
/// do a streaming job's (one wrapper can drive both); `--memory` and `--threads` win over
/// them, and a value that is not one is a usage error.
#[test]
fn memory_and_threads_come_from_sluice_keys_unless_given() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    gen_text(&d.join("in"), "200KiB", 2, 6);
    let input = d.join("in").to_str().unwrap().to_string();
    let run = |name: &str, args: &[&str]| {
        let out = d.join(name).to_str().unwrap().to_string();
        let mut all = vec!["run", "wordcount", "--input", &input, "--output", &out];
        all.extend(args);
        crate::util::sluice(&all, None)
    };
    for (name, args, summary) in [
        (
            "keys",
            &["-D", "sluice.memory=64MiB", "-D", "sluice.threads=1"][..],
            "threads=1 memory budget=64.0 MiB",
        ),
        (
            "flags-win",
            &[
                "-D",
                "sluice.memory=64MiB",
                "-D",
                "sluice.threads=1",
                "-m",
                "32MiB",
                "-t",
                "2",
            ][..],
            "threads=2 memory budget=32.0 MiB",
        ),
    ] {
        let outcome = run(name, args);
        outcome.assert_code(0, name);
        assert!(
            outcome.stderr.contains(summary),
            "{name}: {}",
            outcome.stderr
        );
    }
    for (name, define) in [
        ("bad-memory", "sluice.memory=lots"),
        ("bad-threads", "sluice.threads=0"),
    ] {
        let outcome = run(name, &["-D", define]);
        outcome.assert_code(2, name);
        assert!(
            outcome.stderr.contains(define),
            "{name}: {}",
            outcome.stderr
        );
        assert!(!d.join(name).exists());
    }
}
