//! Independent tasks of the commands that are not jobs (`run dfsio`, `gen random`): one per
//! file, a few threads at once, all stopped at the first failure or at Ctrl-C.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use anyhow::Result;
use sluice_api::JobStatus;

use crate::Interrupted;

/// Bytes of the buffer each thread is given: what the tasks write or read per call.
pub(crate) const CHUNK: usize = 1 << 20;

/// Locks `m`, ignoring poisoning: what is kept here stays consistent between statements.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The error of a task stopped by Ctrl-C or by another task's failure; `name` is the
/// command's.
pub(crate) fn interrupted(name: &str) -> anyhow::Error {
    anyhow::Error::new(Interrupted(name.to_string()))
}

/// Runs `task(index, buffer)` for every index in `0..count`, `threads` at once, each thread
/// with its own buffer of [`CHUNK`] bytes; returns the results in index order.
///
/// The first task to fail cancels `status`: the others start no new task, and the tasks
/// themselves are expected to stop at their next chunk when `status.is_cancelled()` (with
/// [`interrupted`]). The first failure is returned, never the interruptions it caused; if
/// Ctrl-C cancelled `status`, an [`Interrupted`] error named `name`.
pub(crate) fn run_parallel<T, F>(
    name: &str,
    count: usize,
    threads: usize,
    status: &JobStatus,
    task: F,
) -> Result<Vec<T>>
where
    T: Send,
    F: Fn(usize, &mut [u8]) -> Result<T> + Sync,
{
    let next = AtomicUsize::new(0);
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let results: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::with_capacity(count));
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, count.max(1)) {
            scope.spawn(|| {
                let mut buffer = vec![0u8; CHUNK];
                while !status.is_cancelled() {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    if index >= count {
                        return;
                    }
                    match task(index, &mut buffer) {
                        Ok(result) => {
                            lock(&results).push((index, result));
                            status.task_done();
                        }
                        Err(error) => {
                            // Recorded before the others are stopped, so that their
                            // interruption never takes the place of the cause.
                            lock(&failure).get_or_insert(error);
                            status.cancel();
                            return;
                        }
                    }
                }
            });
        }
    });
    if let Some(error) = lock(&failure).take() {
        return Err(error);
    }
    if status.is_cancelled() {
        return Err(interrupted(name));
    }
    let mut results = std::mem::take(&mut *lock(&results));
    results.sort_by_key(|(index, _)| *index);
    Ok(results.into_iter().map(|(_, result)| result).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_in_index_order() {
        let status = JobStatus::default();
        let out = run_parallel("t", 50, 4, &status, |i, buffer| {
            assert_eq!(buffer.len(), CHUNK);
            Ok(i * 2)
        })
        .unwrap();
        assert_eq!(out, (0..50).map(|i| i * 2).collect::<Vec<_>>());
        assert_eq!(status.tasks().0, 50);
    }

    #[test]
    fn the_first_failure_is_returned_and_stops_the_rest() {
        let status = JobStatus::default();
        let started = AtomicUsize::new(0);
        let error = run_parallel("t", 1000, 2, &status, |i, _| {
            started.fetch_add(1, Ordering::Relaxed);
            if i == 3 {
                anyhow::bail!("file 3 is broken");
            }
            if status.is_cancelled() {
                return Err(interrupted("t"));
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(error.to_string(), "file 3 is broken");
        assert!(started.load(Ordering::Relaxed) < 1000);
    }

    #[test]
    fn cancelling_interrupts() {
        let status = JobStatus::default();
        status.cancel();
        let error = run_parallel("t", 3, 2, &status, |_, _| Ok(())).unwrap_err();
        assert!(error.is::<Interrupted>());
    }
}
