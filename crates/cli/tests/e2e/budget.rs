//! The memory budget: a 200 MiB generated corpus run with `--memory 8MiB --threads 2` must
//! spill, give exactly the reference output, reserve no more than the budget, and keep the
//! process's peak RSS (measured from outside with `/usr/bin/time -f %M`, else the report's
//! `peak_rss_bytes`) below the budget plus a fixed allowance for code, stacks and allocator
//! slack. These are the slow tests of the suite (run with `--nocapture` to see the numbers).
//!
//! Lines of 100 MB, far beyond the budget, must be let through (forced beyond the budget and
//! reported), and everything the process holds beyond the allowance must have been reserved.

use crate::util::{counter, gen_text, report_u64, Case};

const BUDGET: u64 = 8 << 20;
/// RSS allowed above the budget: binary, thread stacks, allocator slack, I/O buffers.
const RSS_ALLOWANCE: u64 = 40 << 20;
const MIB: f64 = (1 << 20) as f64;

fn mib(bytes: Option<u64>) -> String {
    bytes.map_or("n/a".into(), |b| format!("{:.1} MiB", b as f64 / MIB))
}

/// Runs `job` on 200 MiB under an 8 MiB budget against the reference, and checks the report
/// and the measured peak RSS.
fn check_budget(job: &'static str) {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("gen");
    gen_text(&corpus, "200MiB", 4, 42);
    let checked = Case::new(job, &[&corpus])
        .engine(&["--memory", "8MiB", "--threads", "2"])
        .measure_rss()
        .check(dir.path(), job);
    let report = &checked.report;
    let reported = report["peak_rss_bytes"].as_u64();
    let rss = checked
        .measured_rss
        .or(reported)
        .expect("no RSS measurement available");
    let peak_reserved = report_u64(report, "peak_memory_reserved");
    let forced = report_u64(report, "forced_memory");
    println!(
        "budget {job}: peak RSS /usr/bin/time={} report={} (limit {}); peak reserved {} of {}, \
         forced {forced} B; spilled_runs={} merge_passes={} wall={:.1}s",
        mib(checked.measured_rss),
        mib(reported),
        mib(Some(BUDGET + RSS_ALLOWANCE)),
        mib(Some(peak_reserved)),
        mib(Some(BUDGET)),
        counter(report, "spilled_runs"),
        counter(report, "merge_passes"),
        report["wall_seconds"].as_f64().unwrap_or(0.0),
    );
    assert_eq!(report_u64(report, "memory_budget"), BUDGET);
    assert!(
        counter(report, "spilled_runs") > 0,
        "{job}: nothing spilled"
    );
    assert!(
        counter(report, "spilled_records") > 0,
        "{job}: nothing spilled"
    );
    assert_eq!(forced, 0, "{job}: memory forced beyond the budget");
    assert!(
        peak_reserved <= BUDGET,
        "{job}: reserved {peak_reserved} > budget"
    );
    assert!(
        rss < BUDGET + RSS_ALLOWANCE,
        "{job}: peak RSS {rss} bytes exceeds budget + allowance"
    );
}

#[test]
fn wordcount_200mib_in_8mib() {
    check_budget("wordcount");
}

#[test]
fn sort_200mib_in_8mib() {
    check_budget("sort");
}

#[test]
fn invertedindex_200mib_in_8mib() {
    check_budget("invertedindex");
}

/// Length of the long lines of [`long_lines`]: far beyond the 8 MiB budget.
const LONG_LINE: usize = 100_000_000;

/// A file of ordinary lines with two lines of [`LONG_LINE`] bytes among them, each made of
/// words of a small vocabulary (so that a word count holds few keys but the sort's record is
/// the whole line).
fn long_lines(path: &std::path::Path) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let ordinary = |out: &mut std::io::BufWriter<std::fs::File>, from: usize| {
        for i in from..from + 20_000 {
            writeln!(out, "short line {i} of words\tvalue {}", i % 97).unwrap();
        }
    };
    for (n, first) in [(0usize, b'a'), (1, b'm')] {
        ordinary(&mut out, n * 20_000);
        let mut line = Vec::with_capacity(LONG_LINE + 1);
        let mut i = 0usize;
        while line.len() < LONG_LINE {
            // Words like "a17 " from 26 letters x 100 numbers.
            let word = format!("{}{} ", char::from(first + (i % 13) as u8), i % 100);
            line.extend_from_slice(word.as_bytes());
            i += 1;
        }
        line.truncate(LONG_LINE);
        line.push(b'\n');
        out.write_all(&line).unwrap();
    }
    ordinary(&mut out, 40_000);
    out.flush().unwrap();
}

/// Runs `job` under the 8 MiB budget on [`long_lines`] against the reference: the lines'
/// memory must be seen by the budget (reserved, forced beyond it and reported), and the
/// process must hold no more than what was reserved plus the usual allowance.
fn check_long_lines(job: &'static str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("long.txt");
    long_lines(&input);
    let checked = Case::new(job, &[&input])
        .engine(&["--memory", "8MiB", "--threads", "2"])
        .measure_rss()
        .check(dir.path(), job);
    let report = &checked.report;
    let rss = checked
        .measured_rss
        .or(report["peak_rss_bytes"].as_u64())
        .expect("no RSS measurement available");
    let peak_reserved = report_u64(report, "peak_memory_reserved");
    let forced = report_u64(report, "forced_memory");
    println!(
        "long lines {job}: peak RSS {} (limit {}); peak reserved {}, forced {}",
        mib(Some(rss)),
        mib(Some(peak_reserved.max(BUDGET) + RSS_ALLOWANCE)),
        mib(Some(peak_reserved)),
        mib(Some(forced)),
    );
    // A line larger than the budget is let through, beyond the budget, and reported.
    assert!(forced > 0, "{job}: a 100 MB line was not counted as forced");
    assert!(
        peak_reserved > LONG_LINE as u64,
        "{job}: peak reserved {peak_reserved} does not hold a {LONG_LINE}-byte line"
    );
    // What was reserved is what the lines need, not a multiple of the input: each of the two
    // threads may hold a long line's buffer (up to twice the line) and, of a record holding the
    // line (`record` times its length: sort's is key and value, the line twice), the
    // collector's copy and the spill writer's two (the block and its compressed form), or
    // a merge's reader's copy and its writer's two.
    let record = match job {
        "sort" => 2,
        _ => 1,
    };
    let per_thread = (2 + 3 * record) * LONG_LINE as u64;
    assert!(
        peak_reserved < BUDGET + 2 * per_thread,
        "{job}: reserved {peak_reserved} for {LONG_LINE}-byte lines"
    );
    // Everything resident beyond the allowance was reserved (and so seen and reported).
    assert!(
        rss < peak_reserved.max(BUDGET) + RSS_ALLOWANCE,
        "{job}: peak RSS {rss} bytes exceeds the peak reserved {peak_reserved} + allowance"
    );
}

#[test]
fn wordcount_100mb_lines_in_8mib() {
    check_long_lines("wordcount");
}

#[test]
fn sort_100mb_lines_in_8mib() {
    check_long_lines("sort");
}

#[test]
fn grep_100mb_lines_in_8mib() {
    check_long_lines("grep");
}

/// A million reducers: every run a task writes keeps a partition table of a million entries
/// (32 MB), counted in the budget, and the reduce phase writes a million part files. Checked
/// against word counts made here: each part file sorted, every key in the file Hadoop's hash
/// partitioner gives it, the counts those of the input, and memory within the budget.
#[test]
fn wordcount_into_a_million_reducers() {
    use std::collections::HashMap;
    use std::io::Write;
    const REDUCERS: usize = 1_000_000;
    // The smallest budget whose task shares (a quarter each on two threads) can track a
    // million partitions (128 bytes each).
    const MEMORY: u64 = 512 << 20;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("words.txt");
    let mut expected: HashMap<String, u64> = HashMap::new();
    {
        // About a million distinct words: a partition's worth of keys for each reducer.
        let mut out = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..150_000 {
            let mut line = Vec::new();
            for _ in 0..10 {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let word = format!("w{}", (state >> 33) % 2_000_000);
                *expected.entry(word.clone()).or_default() += 1;
                line.push(word);
            }
            writeln!(out, "{}", line.join(" ")).unwrap();
        }
        out.flush().unwrap();
    }
    let output = dir.path().join("out");
    let report = dir.path().join("report.json");
    let run = crate::util::JobRun::new("wordcount")
        .input(&input)
        .output(&output)
        .args(&["--reducers", &REDUCERS.to_string()])
        .args(&["--memory", &MEMORY.to_string(), "--threads", "2"])
        .args(&[std::ffi::OsStr::new("--report"), report.as_os_str()]);
    let (outcome, measured_rss) = run.run_timed(dir.path());
    outcome.assert_code(0, "wordcount into a million reducers");
    let report = crate::util::read_report(&report);

    let mut found: HashMap<String, u64> = HashMap::new();
    let mut parts = 0usize;
    for entry in std::fs::read_dir(&output).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        if name == "_SUCCESS" {
            continue;
        }
        let part: usize = name
            .strip_prefix("part-r-")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected file {name}"));
        parts += 1;
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let mut last: Option<&str> = None;
        for line in text.lines() {
            let (word, count) = line.split_once('\t').unwrap();
            assert!(last < Some(word), "{name}: {word} out of order");
            last = Some(word);
            assert_eq!(
                hadoop_text_partition(word.as_bytes(), REDUCERS),
                part,
                "{word} in {name}"
            );
            assert!(found.insert(word.into(), count.parse().unwrap()).is_none());
        }
    }
    assert_eq!(parts, REDUCERS, "part files");
    assert!(output.join("_SUCCESS").exists());
    assert_eq!(found.len(), expected.len(), "distinct words");
    assert!(found == expected, "counts differ from the input's");

    let rss = measured_rss
        .or(report["peak_rss_bytes"].as_u64())
        .expect("no RSS measurement available");
    let peak_reserved = report_u64(&report, "peak_memory_reserved");
    println!(
        "a million reducers: peak RSS {} (limit {}); peak reserved {}, forced {} B, wall {:.1}s",
        mib(Some(rss)),
        mib(Some(MEMORY + RSS_ALLOWANCE)),
        mib(Some(peak_reserved)),
        report_u64(&report, "forced_memory"),
        report["wall_seconds"].as_f64().unwrap_or(0.0),
    );
    // A run's table of a million partitions (16 bytes each in memory, 32 on disk) was seen.
    assert!(
        peak_reserved >= 16 * REDUCERS as u64,
        "peak reserved {peak_reserved} holds no partition table"
    );
    assert!(peak_reserved <= MEMORY, "reserved {peak_reserved} > budget");
    assert_eq!(report_u64(&report, "forced_memory"), 0);
    assert!(
        rss < MEMORY + RSS_ALLOWANCE,
        "peak RSS {rss} bytes exceeds budget + allowance"
    );
}

/// Hadoop's `HashPartitioner` for a `Text` key: `(hashCode & MAX_INT) % reducers`, where
/// `Text.hashCode` is `WritableComparator.hashBytes`: `h = 31 * h + b` over signed bytes,
/// from 1.
fn hadoop_text_partition(key: &[u8], reducers: usize) -> usize {
    let hash = key.iter().fold(1i32, |h, &b| {
        h.wrapping_mul(31).wrapping_add(i32::from(b as i8))
    });
    (hash & i32::MAX) as usize % reducers
}
