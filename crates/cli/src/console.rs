//! Hadoop's console, as `hadoop jar hadoop-streaming.jar` prints it: log4j records on stderr
//! (`yyyy-MM-dd HH:mm:ss,SSS LEVEL logger: message`), the job id in `Running job:`, progress
//! as ` map N% reduce M%`, failed attempts as `Task Id : attempt_..., Status : FAILED` followed by
//! the error, the counters block, `Output directory:`, and `Job not successful!` /
//! `Streaming Command Failed!` on failure.
//!
//! Tools that drive Hadoop Streaming (job runners, workflow schedulers, shell wrappers) find the
//! job id, counters and failures in those lines; sluice's own summary follows as records of the
//! same layout, so that it cannot be mistaken for the continuation of another record.

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sluice_api::Counter;
use sluice_api::{
    AttemptFailure, CounterValues, JobStatus, NoteSource, Phase, TaskContext, UserCounters,
};

/// The logger of the job client's records.
pub(crate) const JOB: &str = "mapreduce.Job";
/// The logger of Hadoop Streaming's own records.
pub(crate) const STREAM_JOB: &str = "streaming.StreamJob";
/// The logger of sluice's additions (its summary, where the task logs are).
pub(crate) const SLUICE: &str = "sluice.Job";
/// The logger name of what the cluster manager says about a job's workers.
pub(crate) const CLUSTER: &str = "sluice.Cluster";

/// The logger of TestDFSIO's result block (`org.apache.hadoop.fs.TestDFSIO`).
pub(crate) const TEST_DFSIO: &str = "fs.TestDFSIO";

/// The line Hadoop Streaming prints, outside the log layout, when it exits non-zero.
pub(crate) const FAILED_LINE: &str = "Streaming Command Failed!";

/// How often progress may be printed: Hadoop's job client looks once a second.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Prints one log record to stderr in one write, so that records from different threads never
/// interleave. Continuation lines of `message` (a counters block, an error's lines) follow as
/// they are, as in Hadoop.
pub(crate) fn log(level: &str, logger: &str, message: &str) {
    let stamp = chrono::Local::now().format("%Y-%m-%d %H:%M:%S,%3f");
    let record = format!("{stamp} {level} {logger}: {message}\n");
    let _ = std::io::stderr().lock().write_all(record.as_bytes());
}

/// Prints the job client's records of a job it starts watching: `Running job: ID`, then that
/// the job does not run in uber mode (Hadoop's small jobs run in the application master's
/// container, which sluice has no need of).
pub(crate) fn running_job(job_id: &str) {
    log("INFO", JOB, &format!("Running job: {job_id}"));
    log(
        "INFO",
        JOB,
        &format!("Job {job_id} running in uber mode : false"),
    );
}

/// Prints the bare line Hadoop Streaming ends a failed run with.
pub(crate) fn failed_line() {
    let _ = writeln!(std::io::stderr().lock(), "{FAILED_LINE}");
}

/// The counters as Hadoop's `Counters.toString()` lays them out: `Counters: N`, then a tab and
/// each group's name, two tabs and each `name=value`. Groups in Hadoop's order: the framework's,
/// the job's own (by name), then the input and output format groups (whose names end with a
/// space in Hadoop).
pub(crate) fn counters_block(c: &CounterValues, user: &UserCounters, reduces: bool) -> String {
    let mut framework = vec![
        ("Map input records", c.map_input_records),
        ("Map output records", c.map_output_records),
    ];
    if reduces {
        framework.extend([
            ("Map output bytes", c.map_output_bytes),
            ("Combine input records", c.combine_input_records),
            ("Combine output records", c.combine_output_records),
            ("Reduce input groups", c.reduce_input_groups),
            ("Reduce input records", c.reduce_input_records),
            ("Reduce output records", c.output_records),
        ]);
    }
    framework.push(("Spilled Records", c.spilled_records));
    let user_count: usize = user.values().map(|g| g.len()).sum();
    let mut text = format!("Counters: {}", framework.len() + 2 + user_count);
    text.push_str("\n\tMap-Reduce Framework");
    for (name, value) in framework {
        let _ = write!(text, "\n\t\t{name}={value}");
    }
    for (group, counters) in user {
        let _ = write!(text, "\n\t{group}");
        for (name, value) in counters {
            let _ = write!(text, "\n\t\t{name}={value}");
        }
    }
    let _ = write!(
        text,
        "\n\tFile Input Format Counters \n\t\tBytes Read={}\
         \n\tFile Output Format Counters \n\t\tBytes Written={}",
        c.map_input_bytes, c.output_bytes
    );
    text
}

/// The map and reduce percentages Hadoop's job client prints.
fn percentages(status: &JobStatus, reduces: bool) -> (u64, u64) {
    let ratio = |done: u64, total: u64| {
        done.min(total)
            .saturating_mul(100)
            .checked_div(total)
            .unwrap_or(0)
    };
    let all_reduced = if reduces { 100 } else { 0 };
    match status.phase() {
        Phase::Planning => (0, 0),
        Phase::Map => {
            let read = status.counters.get(Counter::MapInputBytes);
            let total = status.input_bytes_total();
            (ratio(read, total), 0)
        }
        Phase::Reduce => {
            let (done, total) = status.tasks();
            (100, ratio(done, total))
        }
        Phase::Commit | Phase::Done => (100, all_reduced),
    }
}

/// Prints a failed attempt as Hadoop's job client prints a failed task's completion event.
fn print_failure(job_id: &str, failure: &AttemptFailure) {
    let attempt = sluice_streaming::attempt_id(job_id, &failure.attempt);
    let number = failure.attempt.attempt + 1;
    let next = if failure.retried {
        format!(
            "attempt {number} of {} failed, trying again",
            failure.attempts
        )
    } else {
        format!("attempt {number} of {} failed", failure.attempts)
    };
    log(
        "INFO",
        JOB,
        &format!(
            "Task Id : {attempt}, Status : FAILED\nError: {} ({next})",
            failure.error
        ),
    );
}

/// Who prints the job's `Running job: ID` line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunningLine {
    /// The caller printed it before starting the monitor.
    Printed,
    /// The monitor prints it once the job leaves planning, with its inputs found and its
    /// output set up: where Hadoop's job client prints it, after submission. A job refused
    /// before that (its output exists, an input is missing) prints no job lines at all, only
    /// the error, as Hadoop's does.
    AtSubmission,
}

/// How a watched job ended, for the caller's closing lines.
pub(crate) struct MonitorEnd {
    /// Whether the job got past planning (`Running job:` was printed).
    pub(crate) submitted: bool,
    /// The first task attempt that failed for good, if one did.
    pub(crate) failed_task: Option<TaskContext>,
}

/// While a job runs: prints its failed attempts as they happen and, once a second when they
/// changed, the map and reduce percentages.
pub(crate) struct Monitor {
    state: Arc<MonitorState>,
    thread: Option<JoinHandle<()>>,
}

struct MonitorState {
    status: Arc<JobStatus>,
    job_id: String,
    reduces: bool,
    /// Whether `Running job:` has been printed.
    submitted: Mutex<bool>,
    /// Whether the percentages are printed.
    progress: bool,
    /// The percentages printed last.
    shown: Mutex<Option<(u64, u64)>>,
    /// The first attempt that failed for good: the job's failure.
    failed_task: Mutex<Option<TaskContext>>,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl MonitorState {
    /// Whether the job has been submitted; prints `Running job:` (see [`running_job`]) the
    /// first time it is found past planning.
    fn submitted(&self) -> bool {
        let mut submitted = self.submitted.lock().unwrap_or_else(|p| p.into_inner());
        if !*submitted && self.status.phase() != Phase::Planning {
            running_job(&self.job_id);
            *submitted = true;
            if self.progress {
                // Hadoop's first percentages, whatever a fast job has done by now.
                self.print_progress((0, 0));
            }
        }
        *submitted
    }

    fn print_notes(&self) {
        for note in self.status.take_notes() {
            match note.source {
                NoteSource::Cluster => log("INFO", CLUSTER, &note.text),
                NoteSource::Task => log("WARN", SLUICE, &note.text),
            }
        }
    }

    fn print_failures(&self) {
        self.print_notes();
        for failure in self.status.take_failures() {
            print_failure(&self.job_id, &failure);
            if !failure.retried {
                let mut first = self.failed_task.lock().unwrap_or_else(|p| p.into_inner());
                first.get_or_insert(failure.attempt);
            }
        }
    }

    fn print_progress(&self, (map, reduce): (u64, u64)) {
        let mut shown = self.shown.lock().unwrap_or_else(|p| p.into_inner());
        if *shown != Some((map, reduce)) {
            *shown = Some((map, reduce));
            log("INFO", JOB, &format!(" map {map}% reduce {reduce}%"));
        }
    }
}

impl Monitor {
    /// Starts watching `status`; with `progress` false only failures are printed while the job
    /// runs. Nothing of the job is printed before its `Running job:` line (see [`RunningLine`]).
    pub(crate) fn start(
        status: Arc<JobStatus>,
        job_id: &str,
        reduces: bool,
        progress: bool,
        running_line: RunningLine,
    ) -> Monitor {
        let state = Arc::new(MonitorState {
            status,
            job_id: job_id.to_string(),
            reduces,
            submitted: Mutex::new(running_line == RunningLine::Printed),
            progress,
            shown: Mutex::new(None),
            failed_task: Mutex::new(None),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let thread = {
            let state = Arc::clone(&state);
            std::thread::spawn(move || {
                let mut last_progress: Option<Instant> = None;
                let mut stop = state.stop.lock().unwrap_or_else(|p| p.into_inner());
                while !*stop {
                    if state.submitted() {
                        state.print_failures();
                        if state.progress
                            && last_progress.is_none_or(|t| t.elapsed() >= PROGRESS_EVERY)
                        {
                            last_progress = Some(Instant::now());
                            state.print_progress(percentages(&state.status, state.reduces));
                        }
                    } else {
                        // What the cluster says of its workers may come before submission.
                        state.print_notes();
                    }
                    stop = state
                        .wake
                        .wait_timeout(stop, Duration::from_millis(100))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            })
        };
        Monitor {
            state,
            thread: Some(thread),
        }
    }

    /// Stops watching; prints the failures not yet printed and, when the job `succeeded`, the
    /// final percentages (all of the map and, with reducers, all of the reduce). A job that
    /// never got past planning prints nothing more (its notes aside).
    pub(crate) fn stop(mut self, succeeded: bool) -> MonitorEnd {
        *self.state.stop.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.state.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        if !self.state.submitted() {
            self.state.print_notes();
            return MonitorEnd {
                submitted: false,
                failed_task: None,
            };
        }
        self.state.print_failures();
        if succeeded {
            let reduced = if self.state.reduces { 100 } else { 0 };
            self.state.print_progress((100, reduced));
        }
        // A failed or interrupted job's status no longer says how far it got: the last
        // percentages printed stand.
        let failed_task = *self
            .state
            .failed_task
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        MonitorEnd {
            submitted: true,
            failed_task,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_laid_out_as_hadoop_prints_them() {
        let values = CounterValues {
            map_input_records: 5,
            map_output_records: 5,
            map_input_bytes: 20,
            output_bytes: 15,
            ..CounterValues::default()
        };
        let mut user = UserCounters::new();
        user.entry("MyGroup".into())
            .or_default()
            .insert("MyCounter".into(), 6);
        let block = counters_block(&values, &user, false);
        assert_eq!(
            block,
            "Counters: 6\n\tMap-Reduce Framework\n\t\tMap input records=5\n\t\t\
             Map output records=5\n\t\tSpilled Records=0\n\tMyGroup\n\t\tMyCounter=6\n\t\
             File Input Format Counters \n\t\tBytes Read=20\n\tFile Output Format Counters \
             \n\t\tBytes Written=15"
        );
        let with_reduces = counters_block(&values, &user, true);
        assert!(with_reduces.starts_with("Counters: 12\n"), "{with_reduces}");
        assert_eq!(with_reduces.matches("=").count(), 12);
    }
}
