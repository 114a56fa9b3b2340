//! The task pool: tasks `0..n` on a fixed number of threads, and the attempts of one task.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use sluice_api::{AttemptFailure, ExecError, JobStatus, TaskContext};

/// Runs tasks `0..count` on `threads` threads, each thread taking the next task when it is done.
/// The first error cancels the remaining tasks and is returned.
pub fn run_tasks(
    threads: usize,
    count: usize,
    status: &JobStatus,
    task: impl Fn(usize) -> Result<(), ExecError> + Sync,
) -> Result<(), ExecError> {
    let next = AtomicUsize::new(0);
    let first_error = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads.min(count) {
            scope.spawn(|| loop {
                if status.is_cancelled() {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    break;
                }
                match task(i) {
                    Ok(()) => status.task_done(),
                    Err(e) => {
                        if !matches!(e, ExecError::Cancelled) {
                            let mut slot = first_error.lock().unwrap_or_else(|p| p.into_inner());
                            slot.get_or_insert(e);
                        }
                        status.cancel();
                        break;
                    }
                }
            });
        }
    });
    if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    if status.is_cancelled() {
        return Err(ExecError::Cancelled);
    }
    Ok(())
}

/// Runs one task up to `attempts` times until it succeeds. A failed attempt's output is
/// discarded by the attempt itself (its collector deletes its spill files when dropped, a part
/// file is recreated) and so are its counters (the job status takes back what it counted, and
/// drops its user counters); the job status records each failed attempt for the front end.
pub(crate) fn with_attempts(
    attempts: usize,
    status: &JobStatus,
    name: impl Fn() -> String,
    context: impl Fn(usize) -> TaskContext,
    mut run: impl FnMut(&TaskContext) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    let mut attempt = 0;
    loop {
        let ctx = context(attempt);
        let result = run(&ctx);
        if result.is_ok() {
            status.commit_attempt(&ctx);
        } else {
            status.discard_attempt(&ctx);
        }
        // The front end hears of every failed attempt (a cancelled one is no failure).
        if let Err(e) = &result {
            if !matches!(e, ExecError::Cancelled) {
                status.attempt_failed(AttemptFailure {
                    attempt: ctx,
                    task: name(),
                    error: e.chain(),
                    attempts,
                    retried: attempt + 1 < attempts && e.is_retryable() && !status.is_cancelled(),
                });
            }
        }
        match result {
            Ok(()) => return Ok(()),
            Err(e) if attempt + 1 < attempts && e.is_retryable() && !status.is_cancelled() => {
                attempt += 1;
            }
            Err(e) if attempts > 1 && e.is_retryable() => {
                return Err(e.in_task(format!("{} (failed {attempts} attempts)", name())));
            }
            Err(e) => return Err(e.in_task(name())),
        }
    }
}
