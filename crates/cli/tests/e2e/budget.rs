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
