//! Running one external program over a stream of records: spawn, feed its stdin from one
//! thread while this thread drains its stdout, watch its stderr, enforce the timeout, and
//! make sure that nothing it started outlives the task.
//!
//! ```text
//!            ┌──────────── feeder thread: records ─► stdin (64 KiB writes)
//!  program ◄─┤
//!            ├──────────── task thread:   stdout ─► parse ─► emit
//!            ├──────────── stderr thread: reporter:counter/status lines, the rest to the log
//!            └──────────── watchdog:      cancelled job or timeout ─► kill the process group
//! ```
//!
//! The feeder and the reader run on different threads, so a program that writes a lot before
//! it reads (or reads everything before it writes) cannot deadlock the task. The program runs
//! in a process group of its own; when the task ends — normally or not — the whole group is
//! killed, so no grandchild is left behind.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::counters::UserCounters;
use crate::{ExecError, JobStatus};

use super::ProgramError;

/// Buffer size of the pipes' readers and writers: records cross in large writes.
const PIPE_BUFFER: usize = 256 * 1024;

/// Capacity asked of the kernel for each pipe (the default is 64 KiB): with larger pipes the
/// writer and the reader on each side wake each other up less often.
const PIPE_CAPACITY: i32 = 1 << 20;

/// Lines of a program's stderr quoted in a failure.
const STDERR_TAIL_LINES: usize = 20;

/// Longest stderr line kept for the tail, in bytes.
const STDERR_LINE_MAX: usize = 2000;

/// How to run one program.
#[derive(Debug, Clone)]
pub(super) struct ProgramSpec {
    /// The command as the user wrote it, for messages.
    pub(super) command: String,
    /// The program to execute.
    pub(super) program: PathBuf,
    /// Its arguments (without the program).
    pub(super) args: Vec<String>,
    /// Its working directory.
    pub(super) work_dir: PathBuf,
    /// Environment variables added to (or replacing) the inherited ones.
    pub(super) env: Vec<(String, String)>,
    /// Kill the program after this long without reading, writing or reporting.
    pub(super) timeout: Option<Duration>,
    /// Whether a non-zero exit status fails the task.
    pub(super) non_zero_is_failure: bool,
    /// Where its stderr goes (apart from `reporter:` lines).
    pub(super) log: PathBuf,
}

/// The program's stdin as the feeder sees it: buffered, and noting activity for the timeout.
pub(super) struct ProgramInput {
    writer: BufWriter<ActivityWriter>,
}

impl ProgramInput {
    /// The underlying writer, for framing code that writes through `std::io::Write`.
    pub(super) fn writer(&mut self) -> &mut impl Write {
        &mut self.writer
    }
}

/// Maps a write error on the program's stdin.
pub(super) fn input_error(e: io::Error) -> ExecError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        ExecError::from(ProgramError::InputClosed)
    } else {
        ExecError::from(ProgramError::Write(e))
    }
}

struct ActivityWriter {
    inner: std::process::ChildStdin,
    activity: Arc<Activity>,
}

impl Write for ActivityWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.activity.touch();
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

struct ActivityReader {
    inner: std::process::ChildStdout,
    activity: Arc<Activity>,
}

impl Read for ActivityReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.activity.touch();
        Ok(n)
    }
}

/// When the program last showed signs of life, and why the watchdog killed it (if it did).
struct Activity {
    started: Instant,
    last_ms: AtomicU64,
    killed: AtomicU8,
}

const NOT_KILLED: u8 = 0;
const KILLED_CANCELLED: u8 = 1;
const KILLED_TIMEOUT: u8 = 2;
const KILLED_BY_TASK: u8 = 3;

impl Activity {
    fn touch(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }
    fn idle(&self) -> Duration {
        let now = self.started.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// Kills the program's process group when dropped: whatever happens to the task, nothing it
/// started keeps running.
struct GroupGuard {
    /// Shared with the watchdog, which polls it for the program's exit.
    child: Mutex<Child>,
    pgid: nix::unistd::Pid,
}

impl GroupGuard {
    fn kill(&self) {
        kill_group(self.pgid);
    }
}

/// Kills every process of the group `pgid`.
fn kill_group(pgid: nix::unistd::Pid) {
    // ESRCH (the group is gone) is the normal case after a clean exit.
    let _ = nix::sys::signal::killpg(pgid, nix::sys::signal::Signal::SIGKILL);
}

impl GroupGuard {
    /// Whether the program has exited (reaping it if so); `None` while it runs.
    fn try_wait(&self) -> io::Result<Option<ExitStatus>> {
        self.child
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .try_wait()
    }

    /// Waits for the program to exit, polling (the watchdog must be able to look at it too).
    fn wait(&self) -> io::Result<ExitStatus> {
        let mut pause = Duration::from_micros(100);
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
        let _ = self.wait();
    }
}

/// What a finished program left behind.
pub(super) struct ProgramOutcome {
    /// Its `reporter:counter:` totals.
    pub(super) counters: UserCounters,
}

/// Runs `spec`: `feed` writes the program's input on a separate thread (its return closes the
/// program's stdin), while `drain` reads the program's output on this thread. Returns when the
/// program has exited and both sides are done.
///
/// # Errors
/// In order of precedence: a cancelled job; `drain`'s own error (e.g. a full disk); a timeout;
/// `feed`'s error other than a closed pipe (e.g. unreadable input); the program's failure
/// (non-zero exit status or a signal, with the tail of its stderr); the program exiting before
/// it read all of its input.
pub(super) fn run_program(
    spec: &ProgramSpec,
    status: &JobStatus,
    feed: impl FnOnce(&mut ProgramInput) -> Result<(), ExecError> + Send,
    drain: impl FnOnce(&mut dyn BufRead) -> Result<(), ExecError>,
) -> Result<ProgramOutcome, ExecError> {
    let log = File::create(&spec.log).map_err(|e| ProgramError::Log {
        path: spec.log.clone(),
        source: e,
    })?;
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.work_dir)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let child = command.spawn().map_err(|source| ProgramError::Spawn {
        command: spec.command.clone(),
        program: spec.program.clone(),
        source,
    })?;
    let pgid = nix::unistd::Pid::from_raw(child.id() as i32);
    let mut child = child;
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let guard = GroupGuard {
        child: Mutex::new(child),
        pgid,
    };
    for pipe in [
        pipes.0.as_ref().map(|p| p.as_fd()),
        pipes.1.as_ref().map(|p| p.as_fd()),
    ]
    .into_iter()
    .flatten()
    {
        // Only a hint: an unprivileged process may be limited to a smaller size.
        let _ = nix::fcntl::fcntl(pipe, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY));
    }
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        return Err(ExecError::from(ProgramError::Read(io::Error::other(
            "the program's pipes were not set up",
        ))));
    };
    let activity = Arc::new(Activity {
        started: Instant::now(),
        last_ms: AtomicU64::new(0),
        killed: AtomicU8::new(NOT_KILLED),
    });
    let finished = AtomicBool::new(false);

    let (drain_result, feed_result, exit, stderr_report) = std::thread::scope(|scope| {
        let feeder = {
            let activity = Arc::clone(&activity);
            scope.spawn(move || {
                let mut input = ProgramInput {
                    writer: BufWriter::with_capacity(
                        PIPE_BUFFER,
                        ActivityWriter {
                            inner: stdin,
                            activity,
                        },
                    ),
                };
                let fed = feed(&mut input);
                let flushed = input.writer.flush().map_err(input_error);
                // Dropping the writer closes the pipe: the program sees the end of its input.
                drop(input);
                fed.and(flushed)
            })
        };
        let watcher = {
            let activity = Arc::clone(&activity);
            let (finished, guard) = (&finished, &guard);
            scope.spawn(move || {
                watch(guard, &activity, finished, status, spec.timeout);
            })
        };
        let errors = {
            let activity = Arc::clone(&activity);
            scope.spawn(move || read_stderr(stderr, log, &activity, status))
        };

        let mut reader = BufReader::with_capacity(
            PIPE_BUFFER,
            ActivityReader {
                inner: stdout,
                activity: Arc::clone(&activity),
            },
        );
        let drained = drain(&mut reader);
        if drained.is_err() {
            // Stop the program so that the feeder's writes fail instead of blocking forever.
            activity
                .killed
                .compare_exchange(
                    NOT_KILLED,
                    KILLED_BY_TASK,
                    Ordering::SeqCst,
                    Ordering::SeqCst,
                )
                .ok();
            guard.kill();
        }
        drop(reader);
        let fed = feeder
            .join()
            .unwrap_or_else(|_| Err(ExecError::user("the feeding thread panicked")));
        let exit = guard.wait();
        // Whatever the program left running in its group goes with it.
        guard.kill();
        finished.store(true, Ordering::SeqCst);
        let _ = watcher.join();
        let report = errors.join().unwrap_or_default();
        (drained, fed, exit, report)
    });

    let tail = || stderr_report.tail.iter().cloned().collect::<Vec<_>>();
    match activity.killed.load(Ordering::SeqCst) {
        KILLED_CANCELLED => return Err(ExecError::Cancelled),
        KILLED_BY_TASK => return Err(drain_result.err().unwrap_or(ExecError::Cancelled)),
        KILLED_TIMEOUT => {
            return Err(ProgramError::TimedOut {
                command: spec.command.clone(),
                after: spec.timeout.unwrap_or_default(),
                stderr_tail: tail(),
                log: spec.log.clone(),
            }
            .into())
        }
        _ => {}
    }
    drain_result?;
    let exit = exit.map_err(ProgramError::Read)?;
    let input_closed = match feed_result {
        Ok(()) => false,
        Err(ExecError::Program(e)) if matches!(*e, ProgramError::InputClosed) => true,
        Err(e) => return Err(e),
    };
    let failed = !exit.success() && (spec.non_zero_is_failure || exit.code().is_none());
    if failed {
        return Err(ProgramError::Failed {
            command: spec.command.clone(),
            status: describe(exit),
            stderr_tail: tail(),
            log: spec.log.clone(),
        }
        .into());
    }
    if input_closed {
        return Err(ProgramError::ExitedEarly {
            command: spec.command.clone(),
            status: describe(exit),
            stderr_tail: tail(),
            log: spec.log.clone(),
        }
        .into());
    }
    Ok(ProgramOutcome {
        counters: stderr_report.counters,
    })
}

/// "exit status 3" or "killed by signal 9 (SIGKILL)".
fn describe(exit: ExitStatus) -> String {
    match (exit.code(), exit.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => match nix::sys::signal::Signal::try_from(signal) {
            Ok(name) => format!("killed by signal {signal} ({name})"),
            Err(_) => format!("killed by signal {signal}"),
        },
        _ => exit.to_string(),
    }
}

/// Kills the program's process group when the job is cancelled, when the program has been
/// idle longer than `timeout`, or as soon as the program itself has exited: a background
/// process it left behind could otherwise hold its output pipes open and stall the task.
fn watch(
    guard: &GroupGuard,
    activity: &Activity,
    finished: &AtomicBool,
    status: &JobStatus,
    timeout: Option<Duration>,
) {
    while !finished.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        if matches!(guard.try_wait(), Ok(Some(_))) {
            guard.kill();
            return;
        }
        let reason = if status.is_cancelled() {
            KILLED_CANCELLED
        } else if timeout.is_some_and(|t| activity.idle() > t) {
            KILLED_TIMEOUT
        } else {
            continue;
        };
        if activity
            .killed
            .compare_exchange(NOT_KILLED, reason, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            guard.kill();
        }
        return;
    }
}

/// What the stderr thread collected.
#[derive(Default)]
struct StderrReport {
    counters: UserCounters,
    tail: VecDeque<String>,
}

/// Reads the program's stderr: `reporter:counter:GROUP,NAME,AMOUNT` and `reporter:status:MSG`
/// lines are acted on (and count as activity); every other line goes to the task log and the
/// tail kept for error messages.
fn read_stderr(
    stderr: std::process::ChildStderr,
    log: File,
    activity: &Activity,
    status: &JobStatus,
) -> StderrReport {
    let mut report = StderrReport::default();
    let mut reader = BufReader::new(stderr);
    let mut log = BufWriter::new(log);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if let Some(rest) = text.strip_prefix(b"reporter:counter:") {
            activity.touch();
            match parse_counter(rest) {
                Some((group, name, amount)) => {
                    let slot = report
                        .counters
                        .entry(group)
                        .or_default()
                        .entry(name)
                        .or_default();
                    *slot = slot.wrapping_add(amount);
                }
                None => {
                    let _ = writeln!(
                        log,
                        "sluice: cannot parse counter line (expected reporter:counter:GROUP,NAME,AMOUNT): {}",
                        String::from_utf8_lossy(text)
                    );
                }
            }
            continue;
        }
        if let Some(rest) = text.strip_prefix(b"reporter:status:") {
            activity.touch();
            status.set_task_status(String::from_utf8_lossy(rest).trim());
            continue;
        }
        let _ = log.write_all(&line);
        let mut shown =
            String::from_utf8_lossy(&text[..text.len().min(STDERR_LINE_MAX)]).into_owned();
        if text.len() > STDERR_LINE_MAX {
            shown.push_str(" [...]");
        }
        if report.tail.len() == STDERR_TAIL_LINES {
            report.tail.pop_front();
        }
        report.tail.push_back(shown);
    }
    let _ = log.flush();
    report
}

/// Parses `GROUP,NAME,AMOUNT` of a counter line as Hadoop does: the trimmed text must split
/// into exactly three comma-separated columns, the last a whole number.
fn parse_counter(rest: &[u8]) -> Option<(String, String, i64)> {
    let text = String::from_utf8_lossy(rest);
    let columns: Vec<&str> = text.trim().split(',').collect();
    let [group, name, amount] = columns[..] else {
        return None;
    };
    let amount = amount.strip_prefix('+').unwrap_or(amount).parse().ok()?;
    Some((group.to_string(), name.to_string(), amount))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_lines_are_parsed() {
        assert_eq!(
            parse_counter(b"MyGroup,words,12"),
            Some(("MyGroup".into(), "words".into(), 12))
        );
        assert_eq!(
            parse_counter(b" G,n,-3 "),
            Some(("G".into(), "n".into(), -3))
        );
        assert_eq!(parse_counter(b"G,a,b,3"), None);
        assert_eq!(parse_counter(b"G,name"), None);
        assert_eq!(parse_counter(b"G,name,many"), None);
    }
}
