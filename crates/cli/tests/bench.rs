//! `sluice bench`: the whole suite runs at a small size with the coreutils baselines, every
//! output is checked, and the report (JSON and HTML) says what happened; a failing run fails
//! the bench but is still reported; the HTML page renders in a headless browser with data in
//! every plot.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const SLUICE: &str = env!("CARGO_BIN_EXE_sluice");

fn bench(work: &Path, args: &[&str]) -> Output {
    Command::new(SLUICE)
        .arg("bench")
        .arg("--work")
        .arg(work)
        .args(args)
        .output()
        .unwrap()
}

fn report(work: &Path) -> Value {
    let text = std::fs::read_to_string(work.join("report/report.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_whole_suite_runs_checks_and_reports() {
    let work = tempfile::tempdir().unwrap();
    let out = bench(
        work.path(),
        &["--size", "1MiB", "--baselines", "--threads", "2"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = work.path().join("report/report.html");
    assert_eq!(text(&out.stdout).trim(), page.display().to_string());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("[9/9] kmeans"), "{stderr}");

    let report = report(work.path());
    assert_eq!(report["settings"]["size_bytes"], 1 << 20);
    assert_eq!(report["settings"]["threads"], 2);
    let names: Vec<&str> = report["workloads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["workload"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "wordcount",
            "grep",
            "sort",
            "invertedindex",
            "streaming",
            "terasort",
            "pagerank",
            "connected-components",
            "kmeans"
        ]
    );
    for workload in report["workloads"].as_array().unwrap() {
        let name = workload["workload"].as_str().unwrap();
        let systems: Vec<&str> = workload["systems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["system"].as_str().unwrap())
            .collect();
        let expected: &[&str] = if ["wordcount", "grep", "sort"].contains(&name) {
            &["sluice", "coreutils"]
        } else {
            &["sluice"]
        };
        assert_eq!(systems, expected, "{name}");
        let input_bytes = workload["input_bytes"].as_f64().unwrap();
        // Generated inputs are about the size asked (whole lines, rows, edges or points).
        assert!(
            (0.8..1.2).contains(&(input_bytes / f64::from(1 << 20))),
            "{name}: {input_bytes} bytes"
        );
        for system in workload["systems"].as_array().unwrap() {
            let who = format!("{name} by {}", system["system"]);
            assert_eq!(system["ok"], true, "{who}: {}", system["check"]);
            assert_eq!(system["check"], "matches the reference", "{who}");
            let wall = system["wall_seconds"].as_f64().unwrap();
            assert!(wall > 0.0, "{who}");
            let throughput = system["throughput_mb_per_s"].as_f64().unwrap();
            assert!(
                (throughput - input_bytes / 1e6 / wall).abs() < 1e-6 * throughput,
                "{who}"
            );
            assert!(!system["samples"].as_array().unwrap().is_empty(), "{who}");
            if system["system"] == "sluice" {
                // At least the job's own high-water mark (a pipeline's run may be too short
                // for a sample).
                assert!(
                    system["peak_rss_bytes"].as_u64().unwrap() > 1 << 20,
                    "{who}"
                );
            }
            let phases = system["phases"].as_array().unwrap();
            let sum: f64 = phases.iter().map(|p| p["seconds"].as_f64().unwrap()).sum();
            assert!(sum <= wall, "{who}: phases {sum} s in {wall} s");
            let reports_phases = system["system"] == "sluice" && name != "streaming";
            assert_eq!(!phases.is_empty(), reports_phases, "{who}");
            if ["pagerank", "kmeans"].contains(&name) {
                assert_eq!(phases.len(), 10, "{who}: {phases:?}");
                assert_eq!(phases[9]["name"], "iteration 10");
            }
            let iterative = ["pagerank", "connected-components", "kmeans"].contains(&name);
            if iterative {
                let each = phases.iter().enumerate();
                assert!(
                    each.clone()
                        .all(|(i, p)| p["name"] == format!("iteration {}", i + 1)),
                    "{who}: {phases:?}"
                );
            } else if reports_phases {
                assert!(phases.iter().any(|p| p["name"] == "map"), "{who}");
            }
        }
    }
    // The outputs are gone once checked; the inputs stay for the next run.
    let runs: Vec<_> = std::fs::read_dir(work.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(runs.is_empty(), "{runs:?}");
    let inputs = std::fs::read_dir(work.path().join("inputs"))
        .unwrap()
        .count();
    assert_eq!(inputs, 4);

    // A second run of part of the suite reuses the inputs, and its best of two runs keeps
    // both times.
    let out = bench(
        work.path(),
        &[
            "--size",
            "1MiB",
            "--suite",
            "wordcount,terasort",
            "--runs",
            "2",
            "-q",
        ],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).is_empty(), "{}", text(&out.stderr));
    let report = self::report(work.path());
    for workload in report["workloads"].as_array().unwrap() {
        let system = &workload["systems"][0];
        let runs: Vec<f64> = system["run_seconds"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert_eq!(runs.len(), 2);
        let best = runs.iter().cloned().fold(f64::INFINITY, f64::min);
        assert_eq!(system["wall_seconds"].as_f64().unwrap(), best);
    }
}

#[test]
fn a_failing_job_fails_the_bench_and_is_reported() {
    let work = tempfile::tempdir().unwrap();
    // Far too little memory for two threads' tasks: the job refuses to start.
    let out = bench(
        work.path(),
        &[
            "--size",
            "64KiB",
            "--suite",
            "wordcount",
            "--memory",
            "1KiB",
            "-q",
        ],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("1 run(s) failed or gave a wrong output") && stderr.contains("wordcount"),
        "{stderr}"
    );
    let report = report(work.path());
    let system = &report["workloads"][0]["systems"][0];
    assert_eq!(system["ok"], false);
    let check = system["check"].as_str().unwrap();
    assert!(check.starts_with("failed (exit status: "), "{check}");
    assert!(work.path().join("report/report.html").is_file());
}

#[test]
fn an_unknown_workload_is_refused_with_the_names() {
    let work = tempfile::tempdir().unwrap();
    let out = bench(work.path(), &["--suite", "wordcount,pagernak"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("pagernak") && stderr.contains("connected-components"),
        "{stderr}"
    );
    assert!(!work.path().join("inputs").exists());
}

/// Chromium as the tests run it: headless, nothing fetched from the network, a profile of
/// its own.
fn chromium(profile: &Path, args: &[&str]) -> Output {
    let binary = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("needs Chromium (apt-get install chromium)");
    Command::new(binary)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .output()
        .unwrap()
}

#[test]
#[cfg_attr(
    not(feature = "test-browser"),
    ignore = "needs Chromium: apt-get install chromium; cargo test --features test-browser"
)]
fn the_html_report_renders_with_data_in_every_plot() {
    let work = tempfile::tempdir().unwrap();
    let out = bench(work.path(), &["--size", "1MiB", "--baselines", "-q"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let page = work.path().join("report/report.html");
    let url = format!("file://{}", page.display());
    let profile = work.path().join("chromium");
    let dom = chromium(&profile, &["--dump-dom", &url]);
    assert!(dom.status.success(), "{}", text(&dom.stderr));
    let dom = text(&dom.stdout);
    // Three bar charts, and CPU and memory over time for each of the nine workloads; the
    // page's own script counted, after layout, the plots whose marks have a size.
    let body = dom
        .lines()
        .find(|l| l.contains("<body"))
        .unwrap_or_else(|| panic!("no body in {dom}"));
    assert!(
        body.contains(r#"data-plots="21""#) && body.contains(r#"data-plots-drawn="21""#),
        "{body}"
    );
    assert_eq!(dom.matches("matches the reference").count(), 12);
    let png = work.path().join("report.png");
    let shot = chromium(
        &profile,
        &[
            "--window-size=1000,3000",
            &format!("--screenshot={}", png.display()),
            &url,
        ],
    );
    assert!(shot.status.success(), "{}", text(&shot.stderr));
    let bytes = std::fs::read(&png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "{} bytes",
        bytes.len()
    );
}
