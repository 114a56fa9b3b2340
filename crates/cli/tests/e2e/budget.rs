//! The memory budget: a 200 MiB generated corpus run with `--memory 8MiB --threads 2` must
//! spill, give exactly the reference output, reserve no more than the budget, and keep the
//! process's peak RSS (measured from outside with `/usr/bin/time -f %M`, else the report's
//! `peak_rss_bytes`) below the budget plus a fixed allowance for code, stacks and allocator
//! slack. These are the slow tests of the suite (run with `--nocapture` to see the numbers).

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
