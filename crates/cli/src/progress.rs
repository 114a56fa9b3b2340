//! What the user sees while and after a job runs: a progress bar on a terminal, then counters.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use sluice_api::Counter;
use sluice_api::{JobReport, JobStatus, Phase};

use crate::size::human_bytes;

/// A progress bar refreshed from the job's status by a background thread, which also prints the
/// job's notes and the task attempts that failed and are tried again, as they come.
pub(crate) struct Display {
    stop: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
}

impl Display {
    /// Starts the display unless `quiet`: a bar if stderr is a terminal and progress is
    /// wanted (`SLUICE_PROGRESS` is not `0`), notes and retried attempts in any case.
    pub(crate) fn start(status: Arc<JobStatus>, quiet: bool) -> Display {
        if quiet {
            return Display { stop: None };
        }
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let handle = if std::io::stderr().is_terminal() && progress_wanted() {
            std::thread::spawn(move || refresh(&status, &flag))
        } else {
            std::thread::spawn(move || print_notices(&status, &flag))
        };
        Display {
            stop: Some((done, handle)),
        }
    }

    /// Stops and clears the bar.
    pub(crate) fn stop(self) {
        if let Some((done, handle)) = self.stop {
            done.store(true, Ordering::Relaxed);
            let _ = handle.join();
        }
    }
}

/// What the user is told while the job runs: the job's notes (on a cluster, what happened to
/// its workers' containers), and the failed attempts that are tried again (an attempt that
/// fails for good fails the job, which says so at the end).
fn notices(status: &JobStatus) -> Vec<String> {
    let notes = status
        .take_notes()
        .into_iter()
        .map(|note| format!("sluice: {note}"));
    let retries = status
        .take_failures()
        .into_iter()
        .filter(|f| f.retried)
        .map(|f| {
            format!(
                "sluice: {}: attempt {} of {} failed, trying again: {}",
                f.task,
                f.attempt.attempt + 1,
                f.attempts,
                f.error
            )
        });
    notes.chain(retries).collect()
}

/// Prints notes and retried attempts until `done` (no terminal: no bar).
fn print_notices(status: &JobStatus, done: &AtomicBool) {
    loop {
        let finished = done.load(Ordering::Relaxed);
        for notice in notices(status) {
            eprintln!("{notice}");
        }
        if finished {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn refresh(status: &JobStatus, done: &AtomicBool) {
    let style = |template: &str| {
        ProgressStyle::with_template(template)
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> ")
    };
    let planning_style = style("{prefix:>7} {spinner} {elapsed} {wide_msg}");
    let bytes_style =
        style("{prefix:>7} [{bar:40}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}");
    let tasks_style = style("{prefix:>7} [{bar:40}] {pos}/{len} partitions");
    // One bar per phase, made when the phase starts with its length known, so that no bar
    // is drawn with another phase's numbers (or none yet).
    let mut shown: Option<(Phase, ProgressBar)> = None;
    loop {
        let finished = done.load(Ordering::Relaxed);
        for notice in notices(status) {
            match &shown {
                Some((_, bar)) => bar.println(notice),
                None => eprintln!("{notice}"),
            }
        }
        if finished {
            break;
        }
        let phase = status.phase();
        if phase == Phase::Done {
            // Nothing left to draw: a bar of the finished job would read 0/0.
            if let Some((_, bar)) = shown.take() {
                bar.finish_and_clear();
            }
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        if shown.as_ref().map(|(p, _)| *p) != Some(phase) {
            if let Some((_, bar)) = shown.take() {
                bar.finish_and_clear();
            }
            let prefix = format!("{phase:?}").to_lowercase();
            let bar = match phase {
                Phase::Planning => ProgressBar::new_spinner().with_style(planning_style.clone()),
                Phase::Map => {
                    ProgressBar::new(status.input_bytes_total()).with_style(bytes_style.clone())
                }
                _ => ProgressBar::new(status.tasks().1).with_style(tasks_style.clone()),
            };
            shown = Some((phase, bar.with_prefix(prefix)));
        }
        if let Some((_, bar)) = &shown {
            match phase {
                Phase::Planning => {
                    bar.set_message(status.waiting_for());
                    bar.tick();
                }
                Phase::Map => {
                    bar.set_length(status.input_bytes_total());
                    bar.set_position(status.counters.get(Counter::MapInputBytes));
                }
                _ => {
                    bar.set_length(status.tasks().1);
                    bar.set_position(status.tasks().0);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some((_, bar)) = shown {
        bar.finish_and_clear();
    }
}

/// Prints the job's counters and timings to stderr, Hadoop style.
pub(crate) fn print_summary(report: &JobReport) {
    let phases: Vec<String> = report
        .phases
        .iter()
        .map(|p| format!("{} {:.2} s", p.phase, p.seconds))
        .collect();
    eprintln!(
        "sluice: job {} done in {:.2} s ({}); output in {}",
        report.job,
        report.wall_seconds,
        phases.join(", "),
        report.output
    );
    eprintln!(
        "  input files={} splits={} reducers={} threads={} memory budget={} peak reserved={}",
        report.input_files,
        report.splits,
        report.reducers,
        report.threads,
        human_bytes(report.memory_budget as u64),
        human_bytes(report.peak_memory_reserved as u64),
    );
    if report.forced_memory > 0 {
        eprintln!(
            "  warning: {} beyond the budget were needed for records larger than it",
            human_bytes(report.forced_memory as u64)
        );
    }
    for (name, value) in report.counters.entries() {
        eprintln!("  {name}={value}");
    }
    if let Some(rss) = peak_rss_bytes() {
        eprintln!("  peak resident memory={}", human_bytes(rss));
    }
}

/// The process's peak resident set size, from `/proc/self/status` (Linux only).
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Set when the command line came through `sluice jar`: such a line is built by a wrapper or
/// a script, which logs the console, and a bar's escape codes would land in its log.
static BAR_UNWANTED: AtomicBool = AtomicBool::new(false);

/// Leaves out the progress bar for the rest of this process, whatever `SLUICE_PROGRESS` says
/// (notes and retried attempts are still printed).
pub(crate) fn leave_out_bar() {
    BAR_UNWANTED.store(true, Ordering::Relaxed);
}

/// Whether progress output is wanted: not for a `sluice jar` command line, and not when
/// `SLUICE_PROGRESS` is `0`, `false`, `no` or `off`.
pub(crate) fn progress_wanted() -> bool {
    if BAR_UNWANTED.load(Ordering::Relaxed) {
        return false;
    }
    match std::env::var("SLUICE_PROGRESS") {
        Ok(value) => !matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        ),
        Err(_) => true,
    }
}
