//! What the user sees while and after a job runs: a progress bar on a terminal, then counters;
//! or, for command lines that came through `sluice jar`, Hadoop's job client console.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use sluice_api::Counter;
use sluice_api::{JobReport, JobStatus, Phase};

use crate::console;
use crate::size::human_bytes;

/// What is shown while a job runs: a progress bar refreshed from the job's status by a
/// background thread, which also prints the job's notes and the task attempts that failed and
/// are tried again, as they come; or, for a command line that came through `sluice jar`,
/// Hadoop's job client records ([`use_hadoop_console`]).
pub(crate) struct Display {
    stop: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    hadoop: Option<HadoopConsole>,
}

/// A job shown in Hadoop's console layout.
struct HadoopConsole {
    monitor: console::Monitor,
    status: Arc<JobStatus>,
    job_id: String,
    shape: JobShape,
}

/// What Hadoop's console says of a job: whether it has reducers (its last ` map 100% reduce
/// N%`) and whether its status holds Hadoop's counters (TeraGen and TeraValidate count in their
/// own terms, so their counters block is left out rather than printed wrong).
#[derive(Clone, Copy)]
pub(crate) struct JobShape {
    /// The job has reduce tasks.
    pub(crate) reduces: bool,
    /// The job's status counts map input and output records and bytes as Hadoop does.
    pub(crate) hadoop_counters: bool,
}

impl Display {
    /// Starts the display unless `quiet`: a bar if stderr is a terminal and progress is
    /// wanted (`SLUICE_PROGRESS` is not `0`), notes and retried attempts in any case.
    pub(crate) fn start(status: Arc<JobStatus>, quiet: bool) -> Display {
        if quiet {
            return Display {
                stop: None,
                hadoop: None,
            };
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
            hadoop: None,
        }
    }

    /// Starts the display of a job that Hadoop's examples jar has too: in Hadoop's console
    /// layout after [`use_hadoop_console`] (`Running job:` once the job is past planning,
    /// ` map N% reduce M%` once a second, failed attempts), else as [`Display::start`].
    pub(crate) fn start_job(status: Arc<JobStatus>, quiet: bool, shape: JobShape) -> Display {
        if quiet || !in_hadoop_console() {
            return Display::start(status, quiet);
        }
        let job_id = sluice_streaming::submission::new_job_id();
        let monitor = console::Monitor::start(
            Arc::clone(&status),
            &job_id,
            shape.reduces,
            progress_wanted(),
            console::RunningLine::AtSubmission,
        );
        Display {
            stop: None,
            hadoop: Some(HadoopConsole {
                monitor,
                status,
                job_id,
                shape,
            }),
        }
    }

    /// Stops and clears the bar. In Hadoop's layout: the last percentages, then `Job ...
    /// completed successfully` and the counters if the job got to its end, or `Job ... failed
    /// with state FAILED` (`KILLED` when interrupted) and the counters so far (counters only
    /// for a job that keeps Hadoop's, see [`JobShape`]).
    pub(crate) fn stop(self) {
        if let Some((done, handle)) = self.stop {
            done.store(true, Ordering::Relaxed);
            let _ = handle.join();
        }
        if let Some(hadoop) = self.hadoop {
            let succeeded = hadoop.status.phase() == Phase::Done;
            let end = hadoop.monitor.stop(succeeded);
            if !end.submitted {
                // Refused before submission: the error alone says why, as in Hadoop.
                return;
            }
            let failed_task = end.failed_task;
            let id = &hadoop.job_id;
            if succeeded {
                console::log(
                    "INFO",
                    console::JOB,
                    &format!("Job {id} completed successfully"),
                );
            } else {
                // A failing task cancels the others too: KILLED only when nothing failed.
                let state = if failed_task.is_none() && hadoop.status.is_cancelled() {
                    "KILLED"
                } else {
                    "FAILED"
                };
                let cause = failed_task.map_or_else(
                    || "NA".to_string(),
                    |attempt| format!("Task failed {}", sluice_streaming::task_id(id, &attempt)),
                );
                console::log(
                    "INFO",
                    console::JOB,
                    &format!("Job {id} failed with state {state} due to: {cause}"),
                );
            }
            if hadoop.shape.hadoop_counters {
                let block = console::counters_block(
                    &hadoop.status.counters.snapshot(),
                    &hadoop.status.user_counters(),
                    hadoop.shape.reduces,
                );
                console::log("INFO", console::JOB, &block);
            }
        }
    }
}

/// Set when the command line came through `sluice jar`, from a wrapper or a script built for
/// `hadoop jar`: such tools read Hadoop's console (the job id, `completed successfully`, the
/// counters), and a bar's escape codes would land in their logs.
static HADOOP_CONSOLE: AtomicBool = AtomicBool::new(false);

/// Shows the jobs of this process in Hadoop's console layout ([`Display::start_job`],
/// [`print_summary`], [`say`]).
pub(crate) fn use_hadoop_console() {
    HADOOP_CONSOLE.store(true, Ordering::Relaxed);
}

/// Tells the user `text`, which belongs with the summary printed before it: `  TEXT` on a
/// line, or a record as [`say`] makes.
pub(crate) fn say_more(text: &str) {
    say_after("  ", text);
}

/// Whether this process shows its jobs in Hadoop's console layout.
pub(crate) fn in_hadoop_console() -> bool {
    HADOOP_CONSOLE.load(Ordering::Relaxed)
}

/// Tells the user `text` after a job: `sluice: TEXT` on a line, or in Hadoop's console layout
/// a record of sluice's logger (so that a tool reading the records cannot take it for the
/// continuation of the one before).
pub(crate) fn say(text: &str) {
    say_after("sluice: ", text);
}

/// `PREFIX TEXT` on a line of stderr, or in Hadoop's console layout a record of sluice's logger
/// at level INFO.
fn say_after(prefix: &str, text: &str) {
    if in_hadoop_console() {
        console::log("INFO", console::SLUICE, text);
    } else {
        eprintln!("{prefix}{text}");
    }
}

/// What the user is told while the job runs: the job's notes (on a cluster, what happened to
/// its workers' containers), and the failed attempts that are tried again (an attempt that
/// fails for good fails the job, which says so at the end).
fn notices(status: &JobStatus) -> Vec<String> {
    let notes = status
        .take_notes()
        .into_iter()
        .map(|note| format!("sluice: {}", note.text));
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

/// The job's shape and timings on one line, for a console whose counters were printed apart:
/// `N map tasks, N reduce tasks, N threads, memory budget X, peak RSS Y; map 1.00 s, ...`.
pub(crate) fn one_line_summary(report: &JobReport) -> String {
    let rss =
        peak_rss_bytes().map_or_else(String::new, |r| format!(", peak RSS {}", human_bytes(r)));
    format!(
        "{} map tasks, {} reduce tasks, {} threads, memory budget {}{rss}; {}",
        report.splits,
        report.reducers,
        report.threads,
        human_bytes(report.memory_budget as u64),
        phases_line(report)
    )
}

/// The job's phases and their times: `map 1.00 s, reduce 0.20 s`.
fn phases_line(report: &JobReport) -> String {
    let phases: Vec<String> = report
        .phases
        .iter()
        .map(|p| format!("{} {:.2} s", p.phase, p.seconds))
        .collect();
    phases.join(", ")
}

/// Prints the job's counters and timings to stderr, Hadoop style. In Hadoop's console layout
/// (whose counters [`Display::stop`] printed) one record of sluice's logger with the timings.
pub(crate) fn print_summary(report: &JobReport) {
    if in_hadoop_console() {
        let text = format!(
            "job {} done in {:.2} s: {}; output in {}",
            report.job,
            report.wall_seconds,
            one_line_summary(report),
            report.output
        );
        console::log("INFO", console::SLUICE, &text);
        return;
    }
    eprintln!(
        "sluice: job {} done in {:.2} s ({}); output in {}",
        report.job,
        report.wall_seconds,
        phases_line(report),
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

/// Whether `SLUICE_PROGRESS` allows progress output (anything but `0`, `false`, `no`, `off`).
pub(crate) fn progress_wanted() -> bool {
    match std::env::var("SLUICE_PROGRESS") {
        Ok(value) => !matches!(
            value.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "no" | "off"
        ),
        Err(_) => true,
    }
}
