//! The one asynchronous runtime the remote stores' clients run on.
//!
//! The engine's tasks are plain threads that read and write synchronously; the HDFS and S3
//! clients are asynchronous. Every call into a store is made by [`block_on`] from the calling
//! thread, on a runtime shared by all stores of the process, whose few worker threads drive
//! the network: the read-ahead of open readers, uploads of parts, and the clients' own
//! connections.

use std::future::Future;
use std::io;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};

use crate::error::io_error;

/// The process's runtime for store I/O, started on first use.
///
/// # Errors
/// If the operating system refuses the runtime's threads.
pub(crate) fn runtime() -> io::Result<&'static Runtime> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    let started = RUNTIME.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
        Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("sluice-store-io")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    });
    started
        .as_ref()
        .map_err(|e| io_error(io::ErrorKind::Other, format!("cannot start store I/O: {e}")))
}

/// Runs `future` to completion on the store runtime, blocking the calling thread.
///
/// Must not be called from one of the runtime's own threads (no store code does).
///
/// # Errors
/// If the runtime cannot be started.
pub(crate) fn block_on<F: Future>(future: F) -> io::Result<F::Output> {
    Ok(runtime()?.block_on(future))
}

/// [`block_on`] with a time limit: an operation that takes longer is abandoned and reported
/// as [`io::ErrorKind::TimedOut`], saying what it was doing.
///
/// # Errors
/// `what` timed out, the runtime cannot be started, or the future's own error.
pub(crate) fn block_on_timeout<F, T>(limit: Duration, what: &str, future: F) -> io::Result<T>
where
    F: Future<Output = io::Result<T>>,
{
    // The timer is made inside the runtime: it needs the runtime's clock.
    match block_on(async move { tokio::time::timeout(limit, future).await })? {
        Ok(result) => result,
        Err(_) => Err(io_error(
            io::ErrorKind::TimedOut,
            format!(
                "{what}: no answer within {:.0} s (is the store reachable? \
                 -D sluice.store.timeout=SECONDS waits longer)",
                limit.as_secs_f64()
            ),
        )),
    }
}
