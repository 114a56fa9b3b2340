//! A job runner of the kind that drives Hadoop Streaming (`wrapper.py`, written from what such
//! tools parse) runs a three-step chain through `sluice streaming` under a pseudo-terminal:
//! `file://` URIs everywhere, each step's output read from where the console said it is, the
//! job id, progress, counters and failed attempts taken from the console. The expected results
//! are computed here from the input.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read as _;
use std::process::Command;

use super::harness::{Scratch, SLUICE};

const CORPUS_A: &str = "the quick brown fox\njumps over the lazy dog\nthe end\n";
const CORPUS_B: &str = "a dog and a fox\n\nthe dog\n";

const COUNT_MAP: &str = "\
import sys
for line in sys.stdin:
    sys.stderr.write('reporter:counter:Wrapper,lines,1\\n')
    for word in line.split():
        print(word + '\\t1')
";

const SUM_REDUCE: &str = "\
import sys
current, total = None, 0
for line in sys.stdin:
    word, count = line.rstrip('\\n').split('\\t')
    if word != current:
        if current is not None:
            print(current + '\\t' + str(total))
        current, total = word, 0
    total += int(count)
if current is not None:
    print(current + '\\t' + str(total))
";

const SWAP_MAP: &str = "\
import sys
for line in sys.stdin:
    offset, word, count = line.rstrip('\\n').split('\\t')
    print(count + '\\t' + word)
";

fn step<'v>(result: &'v serde_json::Value, name: &str) -> &'v serde_json::Value {
    let step = &result[name];
    assert!(step.is_object(), "no step {name} in {result:#}");
    step
}

/// Panics with the step's console unless `check` holds.
fn expect(step: &serde_json::Value, check: bool, what: &str) {
    assert!(
        check,
        "{what}; console:\n{}",
        step["console"].as_str().unwrap_or("")
    );
}

#[test]
fn a_job_chain_driven_like_hadoop_through_a_pseudo_terminal() {
    let s = Scratch::new();
    s.write("corpus/a.txt", CORPUS_A);
    s.write("corpus/b.txt", CORPUS_B);
    s.write("count_map.py", COUNT_MAP);
    s.write("sum_reduce.py", SUM_REDUCE);
    s.write("swap_map.py", SWAP_MAP);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/wrapper.py");
    let status = Command::new("python3")
        .args([script, SLUICE, &s.arg("")])
        .env("TMPDIR", s.dir.path())
        .env_remove("SLUICE_PROGRESS")
        .status()
        .unwrap();
    assert!(status.success(), "the wrapper itself failed");
    let result: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(s.path("result.json")).unwrap()).unwrap();

    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for word in CORPUS_A
        .split_whitespace()
        .chain(CORPUS_B.split_whitespace())
    {
        *counts.entry(word).or_default() += 1;
    }
    let lines = (CORPUS_A.lines().count() + CORPUS_B.lines().count()) as u64;

    for (name, dir, last_progress) in [
        ("count", "step1", [100, 100]),
        ("swap", "step2", [100, 0]),
        ("rank", "step3", [100, 100]),
    ] {
        let step = step(&result, name);
        expect(step, step["exit"] == 0, &format!("step {name} failed"));
        let job_id = step["job_id"].as_str().unwrap_or("");
        expect(step, job_id.starts_with("job_"), "no job id found");
        let output = format!("file://{}", s.arg(dir));
        expect(
            step,
            step["output_dir"] == output.as_str(),
            "wrong output dir",
        );
        expect(
            step,
            step["escape_codes"] == false,
            "escape codes on the console",
        );
        let progress = step["progress"].as_array().unwrap();
        expect(
            step,
            progress
                .last()
                .is_some_and(|p| p == &serde_json::json!(last_progress)),
            "wrong last progress",
        );
        let framework = &step["counters"]["Map-Reduce Framework"];
        expect(step, framework.is_object(), "no framework counters");
    }

    // Step 1: the counts, and the programs' own counter.
    let count = step(&result, "count");
    let framework = &count["counters"]["Map-Reduce Framework"];
    expect(
        count,
        framework["Map input records"] == lines,
        "map input records",
    );
    expect(
        count,
        count["counters"]["Wrapper"]["lines"] == lines,
        "user counter",
    );
    let mut found: BTreeMap<String, u64> = BTreeMap::new();
    for name in count["part_files"].as_array().unwrap() {
        let text = fs::read_to_string(s.path("step1").join(name.as_str().unwrap())).unwrap();
        for line in text.lines() {
            let (word, n) = line.split_once('\t').unwrap();
            found.insert(word.to_string(), n.parse().unwrap());
        }
    }
    let expected: BTreeMap<String, u64> = counts.iter().map(|(w, n)| (w.to_string(), *n)).collect();
    assert_eq!(found, expected);
    expect(
        count,
        count["part_files"] == serde_json::json!(["part-00000", "part-00001"]),
        "parts",
    );

    // Step 2: one map task per two lines of step 1's output, so one part file each.
    let swap = step(&result, "swap");
    let tasks = counts.len().div_ceil(2);
    expect(
        swap,
        swap["part_files"].as_array().unwrap().len() >= tasks,
        "NLine tasks",
    );

    // Step 3: by count descending, then word; one gzip part file.
    let rank = step(&result, "rank");
    expect(
        rank,
        rank["part_files"] == serde_json::json!(["part-00000.gz"]),
        "gzip part",
    );
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(fs::File::open(s.path("step3/part-00000.gz")).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    let mut ranked: Vec<(&str, u64)> = counts.iter().map(|(w, n)| (*w, *n)).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let expected: String = ranked
        .iter()
        .map(|(w, n)| format!("{n}\t{w}\t\n"))
        .collect();
    assert_eq!(text, expected);

    // The failing step: non-zero exit, each failed attempt found with the program's stderr.
    let broken = step(&result, "broken");
    expect(broken, broken["exit"] == 1, "a failed job must exit 1");
    let failures = broken["failures"].as_array().unwrap();
    expect(broken, failures.len() == 2, "two failed attempts expected");
    let job_id = broken["job_id"].as_str().unwrap();
    for (n, failure) in failures.iter().enumerate() {
        let attempt = failure["attempt_id"].as_str().unwrap();
        let base = job_id.strip_prefix("job_").unwrap();
        expect(
            broken,
            attempt == format!("attempt_{base}_m_000000_{n}"),
            "attempt id",
        );
        let error = failure["error"].as_str().unwrap();
        expect(
            broken,
            error.contains("wrapper-marker"),
            "the program's stderr",
        );
        expect(broken, error.contains("exit status 3"), "the exit status");
    }
    expect(
        broken,
        !s.path("never").exists(),
        "a failed job left output",
    );
}
