//! Running one external program over a stream of records: spawn, feed its stdin from one
//! thread while this thread drains its stdout, watch its stderr, enforce the timeout, and
//! make sure that nothing it started outlives the task.
//!
//! ```text
//!            ┌──────────── feeder thread: records ─► stdin (256 KiB writes)
//!  program ◄─┤
//!            ├──────────── task thread:   stdout ─► parse ─► emit
//!            ├──────────── stderr thread: reporter:counter/status lines, the rest to the log
//!            └──────────── watchdog:      cancelled job or timeout ─► kill the process group
//! ```
//!
//! The feeder and the reader run on different threads, so a program that writes a lot before
//! it reads (or reads everything before it writes) cannot deadlock the task.
//!
//! With `stream.*=shm` a direction goes through a shared-memory ring instead of a pipe
//! (`sluice_shm`, `docs/shm-protocol.md`): the same threads write into and read from the rings,
//! the program's stdin is then `/dev/null` and its stdout goes to its log. The program runs
//! in a process group of its own; when the task ends — normally or not — the whole group is
//! killed, so no grandchild is left behind. Should this process itself be killed first, its
//! reaper kills the group (`orphans`).

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::poll::{PollFd, PollFlags, PollTimeout};

use sluice_api::UserCounters;
use sluice_api::{ExecError, JobStatus};

use super::outcome::{outcome, DrainFailure, Kill, RunFacts, ShmFacts, UNREAD_ALLOWED};
use super::program::{cut_name, CounterLimits, ProgramSpec};
use super::{program_error, ProgramError};

/// Buffer size of the pipes' readers and writers: records cross in large writes.
const PIPE_BUFFER: usize = 256 * 1024;

/// Capacity asked of the kernel for each pipe (the default is 64 KiB): with larger pipes the
/// writer and the reader on each side wake each other up less often.
const PIPE_CAPACITY: i32 = 1 << 20;

/// Lines of a program's stderr quoted in a failure.
const STDERR_TAIL_LINES: usize = 20;

/// Longest stderr line kept for the tail, in bytes.
const STDERR_LINE_MAX: usize = 2000;

/// How long stderr is still read after the program's group is gone. Only a process that left
/// the group (`setsid`) can still hold it open; it must not keep the task waiting.
const STDERR_GRACE: Duration = Duration::from_secs(1);

/// The longest piece of a stderr line held in memory at once: a longer line (a program that
/// writes megabytes without a line end) goes to the log piece by piece, is never a
/// `reporter:` line, and only its first piece reaches the tail.
const STDERR_PIECE: usize = 64 * 1024;

/// The program's input as the feeder sees it: buffered, and noting activity for the timeout.
pub(super) struct ProgramInput<'t> {
    writer: BufWriter<InputSink<'t>>,
}

/// Where the program's input goes: its stdin, or the input ring.
enum InputSink<'t> {
    Pipe(ActivityWriter),
    Shm(sluice_shm::ChildInput<TaskWatch<'t>>),
}

impl Write for InputSink<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            InputSink::Pipe(pipe) => pipe.write(buf),
            InputSink::Shm(ring) => ring.write(buf),
        }
    }
    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            InputSink::Pipe(pipe) => pipe.write_all(buf),
            InputSink::Shm(ring) => ring.write_all(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            InputSink::Pipe(pipe) => pipe.flush(),
            InputSink::Shm(ring) => ring.flush(),
        }
    }
}

/// Where the program's output comes from: its stdout, or the output ring.
enum OutputSource<'t> {
    Pipe(PipeReader<std::process::ChildStdout>),
    Shm(sluice_shm::ChildOutput<TaskWatch<'t>>),
}

impl Read for OutputSource<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            OutputSource::Pipe(pipe) => pipe.read(buf),
            OutputSource::Shm(ring) => ring.read(buf),
        }
    }
}

/// What the rings need to know about the program between two waits: whether it has exited
/// or is being stopped; and when bytes move, for the timeout.
#[derive(Clone, Copy)]
struct TaskWatch<'t> {
    guard: &'t GroupGuard,
    activity: &'t Activity,
}

impl sluice_shm::ChildWatch for TaskWatch<'_> {
    fn status(&self) -> sluice_shm::ChildStatus {
        if self.activity.stopped.load(Ordering::SeqCst) {
            sluice_shm::ChildStatus::Stopped
        } else if self.guard.has_exited() {
            sluice_shm::ChildStatus::Exited
        } else {
            sluice_shm::ChildStatus::Running
        }
    }
    fn progressed(&self) {
        self.activity.touch();
    }
}

impl<'t> ProgramInput<'t> {
    /// The underlying writer, for framing code that writes through `std::io::Write`.
    pub(super) fn writer(&mut self) -> &mut (impl Write + 't) {
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
    inner: File,
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

/// Reads one of the program's output pipes, noting activity, and gives up when the watchdog
/// says so: a process outside the program's group (started with `setsid`) may hold the pipe
/// open after the program is gone, and a blocked read would then never return.
struct PipeReader<R> {
    inner: R,
    activity: Arc<Activity>,
    /// Whether what comes through is a sign of life once the program has exited: its output
    /// is (a process it left may still be writing it), its stderr is not (a process left
    /// behind writing only there, a keep-alive loop, would hold the task forever).
    alive_after_exit: bool,
}

impl<R: Read + AsFd> Read for PipeReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.activity.stopped.load(Ordering::SeqCst) {
                // Not `Interrupted`: buffered readers retry those.
                return Err(io::Error::other("the program was stopped"));
            }
            if self.alive_after_exit && self.activity.cut.load(Ordering::SeqCst) {
                // `stream.joindelay.milli` has passed since the program's exit.
                return Ok(0);
            }
            let mut fds = [nix::poll::PollFd::new(
                self.inner.as_fd(),
                nix::poll::PollFlags::POLLIN,
            )];
            match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(100u16)) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
                Ok(_) => break,
                Err(e) => return Err(io::Error::from(e)),
            }
        }
        let n = self.inner.read(buf)?;
        if self.alive_after_exit || !self.activity.exited.load(Ordering::SeqCst) {
            self.activity.touch();
        }
        Ok(n)
    }
}

/// When the program last showed signs of life, and why the task killed it (if it did).
struct Activity {
    started: Instant,
    last_ms: AtomicU64,
    /// A [`Kill`], as its byte.
    killed: AtomicU8,
    /// Set with a kill for cancellation or timeout: readers stop waiting for the pipes.
    stopped: AtomicBool,
    /// Set once the program has exited and its group is kept (it succeeded).
    exited: AtomicBool,
    /// Set once the feeder has written all of the input (before it closes the program's
    /// input, so before the program can see its end).
    fed: AtomicBool,
    /// Set once the task has read the program's output to its end (or given up on it).
    drained: AtomicBool,
    /// Set when the task stops waiting for the end of the output of a program that has
    /// exited (`stream.joindelay.milli`): the output ends there.
    cut: AtomicBool,
    /// Bytes written to the program's stdin that nothing read, counted by the [`Witness`]
    /// when it lets the pipe go.
    left_unread: AtomicU64,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            started: Instant::now(),
            last_ms: AtomicU64::new(0),
            killed: AtomicU8::new(Kill::None as u8),
            stopped: AtomicBool::new(false),
            exited: AtomicBool::new(false),
            fed: AtomicBool::new(false),
            drained: AtomicBool::new(false),
            cut: AtomicBool::new(false),
            left_unread: AtomicU64::new(0),
        }
    }
    /// Records `kill` as the reason the program is killed, unless a reason was recorded
    /// first; returns whether this one was.
    fn claim_kill(&self, kill: Kill) -> bool {
        let none = Kill::None as u8;
        self.killed
            .compare_exchange(none, kill as u8, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }
    /// Why the program was killed.
    fn kill(&self) -> Kill {
        Kill::from_u8(self.killed.load(Ordering::SeqCst))
    }
    fn touch(&self) {
        let now = self.started.elapsed().as_millis() as u64;
        self.last_ms.store(now, Ordering::Relaxed);
    }
    fn idle(&self) -> Duration {
        let now = self.started.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_ms.load(Ordering::Relaxed)))
    }
}

/// The running program and its process group. The group is killed whenever the task is done
/// with the program — normally or not — so nothing it started keeps running.
///
/// The program is reaped only after its group was killed: until then its pid, which is also the
/// group's id, cannot be given to another process, so a kill never reaches a stranger.
struct GroupGuard {
    /// Shared with the watchdog. Killing and reaping both hold the lock, so they cannot cross.
    child: Mutex<Child>,
    pgid: nix::unistd::Pid,
    /// Set once the program is reaped; the group is not signalled after that.
    reaped: AtomicBool,
    /// Becomes readable when the program exits (`pidfd_open`): waits for the exit sleep on it
    /// instead of polling, so a task loses no time between its program's exit and its end.
    /// `None` where the kernel offers none (before Linux 5.3); waits then poll.
    exit_fd: Option<OwnedFd>,
}

impl GroupGuard {
    fn new(mut child: Child) -> io::Result<GroupGuard> {
        let Ok(pid) = i32::try_from(child.id()) else {
            // Not a pid Linux hands out; never signal a group by a wrapped number.
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other(format!("unexpected pid {}", child.id())));
        };
        // The child is not reaped yet, so its pid cannot have been reused.
        let exit_fd = rustix::process::Pid::from_raw(pid).and_then(|pid| {
            rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
        });
        // Should this process die before reaping it, the reaper kills the group.
        super::orphans::announce(pid, true);
        Ok(GroupGuard {
            child: Mutex::new(child),
            pgid: nix::unistd::Pid::from_raw(pid),
            reaped: AtomicBool::new(false),
            exit_fd,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Kills every process of the program's group (unless the program was already reaped).
    fn kill(&self) {
        let _child = self.lock();
        if !self.reaped.load(Ordering::SeqCst) {
            // ESRCH (the group is gone) is the normal case after a clean exit.
            let _ = nix::sys::signal::killpg(self.pgid, nix::sys::signal::Signal::SIGKILL);
        }
    }

    /// Whether the program has exited; it is not reaped, so its group id stays reserved.
    fn has_exited(&self) -> bool {
        self.exited_cleanly().is_some()
    }

    /// How the program ended, once it has (it is not reaped): `Some(true)` for an exit with
    /// status 0, `Some(false)` for another status or a signal (or once reaped), `None` while
    /// it runs.
    fn exited_cleanly(&self) -> Option<bool> {
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
        if self.reaped.load(Ordering::SeqCst) {
            return Some(false);
        }
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(self.pgid), flags) {
            Ok(WaitStatus::StillAlive) | Err(_) => None,
            Ok(WaitStatus::Exited(_, code)) => Some(code == 0),
            Ok(_) => Some(false),
        }
    }

    /// Waits until the program has exited, or `limit` has passed; returns whether it exited.
    fn wait_exit(&self, limit: Option<Duration>) -> bool {
        let deadline = limit.map(|l| Instant::now() + l);
        let mut pause = Duration::from_micros(100);
        loop {
            if self.has_exited() {
                return true;
            }
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return false;
            }
            match &self.exit_fd {
                Some(fd) => {
                    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
                    // Readable once the program has exited; EINTR and the limit loop back.
                    let _ = nix::poll::poll(&mut fds, poll_timeout(left));
                }
                None => {
                    std::thread::sleep(left.map_or(pause, |l| l.min(pause)));
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
            }
        }
    }

    /// Waits for the program to exit, kills what is left of its group, then reaps it.
    fn finish(&self) -> io::Result<ExitStatus> {
        self.wait_exit(None);
        let mut child = self.lock();
        if !self.reaped.load(Ordering::SeqCst) {
            let _ = nix::sys::signal::killpg(self.pgid, nix::sys::signal::Signal::SIGKILL);
            // Withdrawn while the pid is still reserved: once reaped, it may name a stranger.
            super::orphans::announce(self.pgid.as_raw(), false);
        }
        let status = child.wait();
        self.reaped.store(true, Ordering::SeqCst);
        status
    }
}

/// A poll timeout of `limit` (rounded up to whole milliseconds, so that a wait never ends
/// early and spins), or none.
fn poll_timeout(limit: Option<Duration>) -> PollTimeout {
    match limit {
        None => PollTimeout::NONE,
        Some(limit) => {
            let ms = limit.as_micros().div_ceil(1000);
            PollTimeout::try_from(ms.min(i32::MAX as u128) as i32).unwrap_or(PollTimeout::MAX)
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if !self.reaped.load(Ordering::SeqCst) {
            self.kill();
            let _ = self.finish();
        }
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
/// Setting up the program's log, shared memory, process or pipes; then whatever [`outcome`]
/// decides from how the run went. In order of precedence: a cancelled job; a timeout;
/// `drain`'s own error (e.g. a full disk, or output that breaks the framing — reported as the
/// program's failure if the program had already failed); `feed`'s error other than a closed
/// pipe (e.g. unreadable input); the program's failure (non-zero exit status or a signal, with
/// the tail of its stderr); the program exiting before it read all of its input.
pub(super) fn run_program(
    spec: &ProgramSpec,
    status: &JobStatus,
    feed: impl FnOnce(&mut ProgramInput<'_>) -> Result<(), ExecError> + Send,
    drain: impl FnOnce(&mut dyn BufRead) -> Result<(), ExecError>,
) -> Result<ProgramOutcome, ExecError> {
    // The log is created when the program first writes to it: most programs write nothing to
    // stderr, and creating (then deleting) a file per task was a third of the time of a job of
    // many small tasks.
    let mut log = TaskLog::new(spec.log.clone());
    let Launched {
        shm,
        guard,
        stdin,
        stdout,
        stderr,
    } = launch(spec, &mut log)?;
    let activity = Arc::new(Activity::new());
    let (stdin, witness) = match stdin {
        Some(StdinPipe { write, witness }) => (Some(write), Some(witness)),
        None => (None, None),
    };
    let (input, output) = connect(shm.as_ref(), &guard, &activity, stdin, stdout)?;
    let run = Running {
        spec,
        status,
        guard: &guard,
        shm: shm.as_ref(),
        activity: &activity,
    };
    let ends = Ends {
        input,
        witness,
        output,
        stderr,
        log,
    };
    let (facts, counters) = supervise(run, ends, feed, drain)?;
    outcome(spec, facts)?;
    Ok(ProgramOutcome { counters })
}

/// A started program: its shared memory, its process group and the ends of its pipes.
struct Launched {
    shm: Option<sluice_shm::EngineRegion>,
    guard: GroupGuard,
    /// `None` when its input goes through a ring.
    stdin: Option<StdinPipe>,
    /// `None` only if its stdout did not become a pipe (the output then goes through a ring).
    stdout: Option<ChildStdout>,
    stderr: ChildStderr,
}

/// The task's ends of the program's stdin pipe. The task makes this pipe itself, rather than
/// leaving it to `Command`, to keep a read end of its own: the [`Witness`].
struct StdinPipe {
    /// Where the feeder writes.
    write: File,
    /// A second read end, for counting what the program leaves unread.
    witness: OwnedFd,
}

impl StdinPipe {
    /// A new pipe, enlarged, and the read end to give the program.
    fn new() -> io::Result<(StdinPipe, OwnedFd)> {
        // Close-on-exec: no other program the process starts may hold an end.
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        enlarge(&write);
        let witness = read.try_clone()?;
        let pipe = StdinPipe {
            write: File::from(write),
            witness,
        };
        Ok((pipe, read))
    }
}

/// Asks the kernel for [`PIPE_CAPACITY`] for `pipe`: only a hint, as an unprivileged process
/// may be limited to a smaller size.
fn enlarge(pipe: impl AsFd) {
    let _ = nix::fcntl::fcntl(pipe, nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_CAPACITY));
}

/// Starts `spec`'s program in a process group of its own, with the shared-memory region the
/// job asks for, and enlarges its pipes.
fn launch(spec: &ProgramSpec, log: &mut TaskLog) -> Result<Launched, ExecError> {
    // A program whose stdout goes to the log needs the log from the start.
    if spec.shm.output {
        log.open().map_err(|e| ProgramError::Log {
            path: spec.log.clone(),
            source: e,
        })?;
    }
    let ring = |on: bool| on.then_some(spec.shm.capacity);
    let shm = spec
        .shm
        .any()
        .then(|| sluice_shm::EngineRegion::create(ring(spec.shm.input), ring(spec.shm.output)))
        .transpose()
        .map_err(|e| ProgramError::Shm {
            command: spec.command.clone(),
            source: e,
        })?;
    let mut command = command(spec, shm.is_some(), log)?;
    let stdin = if spec.shm.input {
        None
    } else {
        let (pipe, program_end) = StdinPipe::new().map_err(|e| {
            ProgramError::Write(io::Error::new(
                e.kind(),
                format!("cannot create the program's input pipe: {e}"),
            ))
        })?;
        command.stdin(Stdio::from(program_end));
        Some(pipe)
    };
    let mut child =
        sluice_shm::spawn(&mut command, shm.as_ref()).map_err(|source| ProgramError::Spawn {
            command: spec.command.clone(),
            program: spec.program.clone(),
            source,
        })?;
    // The program's end of its stdin goes with the command: only the program holds it now.
    drop(command);
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let guard = GroupGuard::new(child).map_err(ProgramError::Read)?;
    if let Some(stdout) = &stdout {
        enlarge(stdout);
    }
    let Some(stderr) = stderr else {
        return Err(ExecError::from(ProgramError::Read(io::Error::other(
            "the program's stderr was not set up",
        ))));
    };
    Ok(Launched {
        shm,
        guard,
        stdin,
        stdout,
        stderr,
    })
}

/// The command that runs `spec`'s program in a process group of its own, with its stdout and
/// stderr piped and its stdin `/dev/null` (the caller gives it its input pipe) — except, with
/// shared memory (`shm`), when its output goes through a ring: then stdout goes to `log`.
fn command(spec: &ProgramSpec, shm: bool, log: &mut TaskLog) -> Result<Command, ProgramError> {
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.work_dir)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // Marks the program, and what it starts, as this process's for the reaper.
    if let Some((name, value)) = super::orphans::token() {
        command.env(name, value);
    }
    if shm && spec.shm.output {
        // Not lost, and not mistaken for records: whatever it prints goes to its log.
        let log_copy = log
            .open()
            .and_then(|f| f.try_clone())
            .map_err(|e| ProgramError::Log {
                path: spec.log.clone(),
                source: e,
            })?;
        command.stdout(Stdio::from(log_copy));
    }
    Ok(command)
}

/// The program's input and output as the task's threads use them: its rings where the job
/// uses shared memory, else its pipes, noting activity for the timeout either way.
fn connect<'t>(
    shm: Option<&'t sluice_shm::EngineRegion>,
    guard: &'t GroupGuard,
    activity: &'t Arc<Activity>,
    stdin: Option<File>,
    stdout: Option<ChildStdout>,
) -> Result<(InputSink<'t>, OutputSource<'t>), ExecError> {
    let task_watch = TaskWatch { guard, activity };
    let input = match (shm.and_then(|r| r.input(task_watch)), stdin) {
        (Some(ring), _) => InputSink::Shm(ring),
        (None, Some(pipe)) => InputSink::Pipe(ActivityWriter {
            inner: pipe,
            activity: Arc::clone(activity),
        }),
        (None, None) => {
            return Err(ExecError::from(ProgramError::Write(io::Error::other(
                "the program's stdin was not set up",
            ))))
        }
    };
    let output = match (shm.and_then(|r| r.output(task_watch)), stdout) {
        (Some(ring), _) => OutputSource::Shm(ring),
        (None, Some(pipe)) => OutputSource::Pipe(PipeReader {
            inner: pipe,
            activity: Arc::clone(activity),
            alive_after_exit: true,
        }),
        (None, None) => {
            return Err(ExecError::from(ProgramError::Read(io::Error::other(
                "the program's stdout was not set up",
            ))))
        }
    };
    Ok((input, output))
}

/// The running program as the task's threads share it.
#[derive(Clone, Copy)]
struct Running<'t> {
    spec: &'t ProgramSpec,
    status: &'t JobStatus,
    guard: &'t GroupGuard,
    shm: Option<&'t sluice_shm::EngineRegion>,
    activity: &'t Arc<Activity>,
}

/// The program's ends, each for the thread that uses it.
struct Ends<'t> {
    /// For the feeder.
    input: InputSink<'t>,
    /// For the watchdog: a read end of the program's stdin pipe (none through a ring).
    witness: Option<OwnedFd>,
    /// For the task's thread.
    output: OutputSource<'t>,
    /// For the stderr reader.
    stderr: ChildStderr,
    /// Where the stderr reader writes.
    log: TaskLog,
}

/// Supervises the program until it is done: feeds it on one thread, reads its stderr on
/// another, watches it from a third (cancellation, timeout, its exit), and reads its output on
/// this one; then reaps it, kills what it left in its group, and collects the facts of the run
/// for [`outcome`], with its counters.
fn supervise<'t>(
    run: Running<'t>,
    ends: Ends<'t>,
    feed: impl FnOnce(&mut ProgramInput<'_>) -> Result<(), ExecError> + Send,
    drain: impl FnOnce(&mut dyn BufRead) -> Result<(), ExecError>,
) -> Result<(RunFacts, UserCounters), ExecError> {
    let Ends {
        input,
        witness,
        output,
        stderr,
        log,
    } = ends;
    // Closing the write end tells the watchdog that the task is done with the program.
    let (done_reader, done_writer) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)
        .map_err(|e| ProgramError::Read(io::Error::other(format!("cannot create a pipe: {e}"))))?;

    let (drained, fed, exit, report) = std::thread::scope(|scope| {
        let feeder = scope.spawn(move || feed_program(input, run.activity, feed));
        let done = &done_reader;
        let watcher = scope.spawn(move || {
            let witness = witness.map(Witness::new);
            watch(run, done, witness);
        });
        // The stderr reader's report comes through a channel, so that waiting for it can end
        // the moment it is ready, or after the grace period.
        let (report_sender, report_receiver) = std::sync::mpsc::sync_channel(1);
        let errors = scope.spawn(move || {
            let report = read_stderr(stderr, log, run.activity, run.status, run.spec);
            let _ = report_sender.send(report);
        });

        let drained = collect(run, output, drain);
        run.activity.drained.store(true, Ordering::SeqCst);
        let fed = feeder
            .join()
            .unwrap_or_else(|_| Err(ExecError::user("the feeding thread panicked")));
        // Whatever the program left running in its group goes with it.
        let exit = run.guard.finish();
        drop(done_writer);
        let _ = watcher.join();
        let report = stderr_report(&report_receiver, run.activity);
        let _ = errors.join();
        (drained, fed, exit, report)
    });

    let facts = RunFacts {
        kill: run.activity.kill(),
        drained,
        fed,
        left_unread: run.activity.left_unread.load(Ordering::SeqCst),
        exit,
        shm: run.shm.map(|region| ShmFacts {
            attached: region.child_attached(),
            unread_input: region.unread_input() > 0,
            output_closed: region.output_closed(),
        }),
        stderr_tail: report.tail.into(),
        counters_exceeded: report.exceeded,
    };
    Ok((facts, report.counters))
}

/// The feeder thread's work: `feed` writes the program's input through a large buffer, which
/// is then flushed and closed, so that the program sees the end of its input; `activity`
/// learns when all of it is written.
fn feed_program(
    sink: InputSink<'_>,
    activity: &Activity,
    feed: impl FnOnce(&mut ProgramInput<'_>) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    let mut input = ProgramInput {
        writer: BufWriter::with_capacity(PIPE_BUFFER, sink),
    };
    let fed = feed(&mut input);
    // Whether a program that stops reading early failed is decided from what it left unread
    // (the `Witness` counts it), so this write fails only once the task has let the pipe go.
    let flushed = input.writer.flush().map_err(input_error);
    // Before the close: a program that exits having seen the end of its input finds it set.
    activity.fed.store(true, Ordering::SeqCst);
    // Dropping the writer closes the pipe: the program sees the end of its input.
    drop(input);
    fed.and(flushed)
}

/// Reads the program's output with `drain`. If that fails, notes whether the program had
/// already exited (then its exit status and stderr explain a broken output better than the
/// broken output does) and stops it, so that the feeder's writes fail instead of blocking
/// forever.
fn collect(
    run: Running<'_>,
    output: OutputSource<'_>,
    drain: impl FnOnce(&mut dyn BufRead) -> Result<(), ExecError>,
) -> Result<(), DrainFailure> {
    let mut reader = BufReader::with_capacity(PIPE_BUFFER, output);
    let drained = drain(&mut reader).map_err(|error| {
        if program_error(&error).is_some() {
            // Output that ends mid-record usually means the program is dying: give it a
            // moment to finish exiting, so that its status can be told.
            run.guard.wait_exit(Some(Duration::from_millis(200)));
        }
        let exited_first = run.guard.has_exited();
        run.activity.claim_kill(Kill::ByTask);
        if let Some(region) = run.shm {
            region.abort();
        }
        run.guard.kill();
        DrainFailure {
            error,
            exited_first,
        }
    });
    drop(reader);
    drained
}

/// The stderr reader's report: as soon as it is ready, or after [`STDERR_GRACE`] once the
/// program's group is gone — only a process that escaped the group can still hold stderr
/// open then, and the reader is stopped.
fn stderr_report(receiver: &Receiver<StderrReport>, activity: &Activity) -> StderrReport {
    match receiver.recv_timeout(STDERR_GRACE) {
        Ok(report) => report,
        Err(_) => {
            activity.stopped.store(true, Ordering::SeqCst);
            receiver.recv().unwrap_or_default()
        }
    }
}

/// How often the watchdog looks at the job's cancellation flag.
const CANCEL_CHECK: Duration = Duration::from_millis(100);

/// How long after a successful program's exit its output may stay open before the user is
/// told why the task waits.
const LINGER_NOTICE: Duration = Duration::from_secs(10);

/// Kills the program's process group when the program itself has failed (a background
/// process it left could otherwise hold its pipes open and stall a task that has failed
/// anyway), or has exited while its input was still being written (nothing will read the
/// rest), and when the job is cancelled or the program has been idle longer than the timeout;
/// the last two also stop the readers. A program that succeeded after reading its input keeps
/// its group until the task has read its output to the end: a process it left behind may
/// still write there, and, as in Hadoop, what it writes is part of the task's output (the
/// group is killed when the task is done with the program). From then on only that output
/// counts as a sign of life, not stderr. Runs until `done` (the read end of a pipe) reports
/// that the task is done with the program: the watchdog sleeps on it and on the program's
/// exit, so it never delays the task.
///
/// It also holds the [`Witness`] and lets it go once nothing but the witness can read the
/// program's input: when the program has failed or was killed, when the task is done with
/// it, and, when it exited with success while its input was still being written, once the
/// feeder has finished or more than [`UNREAD_ALLOWED`] was left unread.
fn watch(run: Running<'_>, done: &OwnedFd, mut witness: Option<Witness>) {
    let Running {
        spec,
        status,
        guard,
        activity,
        ..
    } = run;
    let timeout = spec.timeout;
    // When the program exited, once it has and its group is kept.
    let mut exited: Option<Instant> = None;
    let mut exit_seen = false;
    let mut told = false;
    loop {
        let idle_left = timeout.map(|t| t.saturating_sub(activity.idle()));
        let wait = idle_left.map_or(CANCEL_CHECK, |left| left.min(CANCEL_CHECK));
        let exit_fd = guard.exit_fd.as_ref().filter(|_| !exit_seen);
        let mut fds = vec![PollFd::new(done.as_fd(), PollFlags::POLLIN)];
        if let Some(fd) = exit_fd {
            fds.push(PollFd::new(fd.as_fd(), PollFlags::POLLIN));
        }
        if let Some(draining) = witness.as_ref().filter(|w| w.draining) {
            fds.push(PollFd::new(draining.fd.as_fd(), PollFlags::POLLIN));
        }
        // Without an exit descriptor the program's exit is noticed at the next look.
        let wait = if exit_fd.is_none() && !exit_seen {
            wait.min(Duration::from_millis(20))
        } else {
            wait
        };
        let _ = nix::poll::poll(&mut fds, poll_timeout(Some(wait)));
        if fds[0].any().unwrap_or(true) {
            // The write end was closed: the task is done with the program, and its group
            // is gone.
            Witness::release(&mut witness, activity);
            return;
        }
        if !exit_seen {
            if let Some(clean) = guard.exited_cleanly() {
                exit_seen = true;
                let succeeded = clean || !spec.non_zero_is_failure;
                let fed = activity.fed.load(Ordering::SeqCst);
                if succeeded && fed {
                    activity.exited.store(true, Ordering::SeqCst);
                    exited = Some(Instant::now());
                } else {
                    guard.kill();
                    match witness.as_mut() {
                        // What the feeder still writes is counted as it comes.
                        Some(w) if succeeded => w.start_draining(),
                        _ => Witness::release(&mut witness, activity),
                    }
                }
            }
        }
        if witness.as_mut().is_some_and(|w| w.draining && w.drain()) {
            Witness::release(&mut witness, activity);
        }
        let past_join_delay = |at: &Instant| spec.join_delay.is_some_and(|d| at.elapsed() >= d);
        if exited.as_ref().is_some_and(past_join_delay) && !activity.cut.load(Ordering::SeqCst) {
            // What the processes it left write from now on is not read, and they go.
            activity.cut.store(true, Ordering::SeqCst);
            guard.kill();
        }
        if let Some(at) = exited.filter(|at| !told && at.elapsed() >= LINGER_NOTICE) {
            told = true;
            if !activity.drained.load(Ordering::SeqCst) {
                status.task_note(linger_note(spec, at.elapsed()));
            }
        }
        let reason = if status.is_cancelled() {
            Kill::Cancelled
        } else if timeout.is_some_and(|t| activity.idle() > t) {
            Kill::Timeout
        } else {
            continue;
        };
        if activity.claim_kill(reason) {
            guard.kill();
            activity.stopped.store(true, Ordering::SeqCst);
        }
        // The feeder's writes fail from now on, instead of waiting for a reader.
        Witness::release(&mut witness, activity);
        return;
    }
}

/// A read end of the program's stdin pipe that the task keeps, to count what the program
/// leaves unread: bytes still in the pipe once the program's group is gone were never read.
/// Over a pipe, a program that exits early is otherwise seen only when a write fails, and a
/// write fails only when the pipe is full — up to [`PIPE_CAPACITY`] plus the feeder's buffer
/// of input would be lost without a word.
///
/// While the task holds it, writes to the pipe do not fail when the program stops reading:
/// so the watchdog lets it go (after counting) as soon as nothing else will read the pipe.
struct Witness {
    fd: OwnedFd,
    /// Whether the program has exited with success while its input was still being written:
    /// the witness then reads what the feeder still writes, so that the feeder can finish.
    draining: bool,
    /// Bytes read while draining.
    drained: u64,
}

impl Witness {
    fn new(fd: OwnedFd) -> Witness {
        Witness {
            fd,
            draining: false,
            drained: 0,
        }
    }

    fn start_draining(&mut self) {
        // A read must never block the watchdog; if this fails, reading waits for `poll`.
        let _ = rustix::io::ioctl_fionbio(&self.fd, true);
        self.draining = true;
    }

    /// Reads and counts what is in the pipe. Returns whether draining is over: the feeder
    /// closed the pipe (its count is then exact), or more than [`UNREAD_ALLOWED`] was unread
    /// (the program failed then, and the rest of its input need not be written).
    fn drain(&mut self) -> bool {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match rustix::io::read(&self.fd, &mut buf) {
                Ok(0) => return true,
                Ok(n) => {
                    self.drained = self.drained.saturating_add(n as u64);
                    if self.drained > UNREAD_ALLOWED {
                        return true;
                    }
                }
                Err(rustix::io::Errno::INTR) => continue,
                Err(rustix::io::Errno::AGAIN) => return false,
                Err(_) => return true,
            }
        }
    }

    /// Counts what `witness` read and what is still in the pipe into `activity`, and closes
    /// it (if it is still held).
    fn release(witness: &mut Option<Witness>, activity: &Activity) {
        if let Some(w) = witness.take() {
            let in_pipe = rustix::io::ioctl_fionread(&w.fd).unwrap_or(0);
            let unread = w.drained.saturating_add(in_pipe);
            activity.left_unread.store(unread, Ordering::SeqCst);
        }
    }
}

/// What the console says of a program that exited `since` ago while a process it left still
/// holds its output open.
fn linger_note(spec: &ProgramSpec, since: Duration) -> String {
    // The log is named after the attempt (`attempt_…_m_000000_0.mapper.stderr`).
    let log = spec
        .log
        .file_name()
        .map(|n| n.to_string_lossy().into_owned());
    let attempt = log
        .as_deref()
        .and_then(|n| n.split('.').next())
        .unwrap_or("a task");
    let limit = match spec.timeout {
        Some(timeout) => format!(
            "it fails once that output has been silent for mapreduce.task.timeout ({} s)",
            timeout.as_secs()
        ),
        None => "mapreduce.task.timeout is 0: it waits as long as that takes".to_string(),
    };
    format!(
        "{attempt}: `{}` exited {} s ago, but a process it started still holds its output \
         open; the task reads that output to its end, as Hadoop does ({limit})",
        spec.command,
        since.as_secs(),
    )
}

/// What the stderr thread collected.
#[derive(Default)]
struct StderrReport {
    counters: UserCounters,
    tail: VecDeque<String>,
    /// The counter limit the program went past, if it did (its counters beyond are dropped).
    exceeded: Option<String>,
}

impl StderrReport {
    /// Adds `amount` to a counter, unless it is a new one past `limits`.
    fn count(&mut self, group: String, name: String, amount: i64, limits: CounterLimits) {
        // Long names are cut as Hadoop cuts them, and names equal once cut are one counter.
        let group = cut_name(group, limits.group_name);
        let name = cut_name(name, limits.counter_name);
        let known = self
            .counters
            .get(&group)
            .is_some_and(|g| g.contains_key(&name));
        if !known {
            if !self.counters.contains_key(&group) && self.counters.len() >= limits.groups {
                self.exceed(format!(
                    "more than {} counter groups (mapreduce.job.counters.groups.max)",
                    limits.groups
                ));
                return;
            }
            let counters: usize = self.counters.values().map(BTreeMap::len).sum();
            if counters >= limits.counters {
                self.exceed(format!(
                    "more than {} counters (mapreduce.job.counters.max)",
                    limits.counters
                ));
                return;
            }
        }
        let slot = self
            .counters
            .entry(group)
            .or_default()
            .entry(name)
            .or_default();
        *slot = slot.wrapping_add(amount);
    }

    fn exceed(&mut self, what: String) {
        self.exceeded.get_or_insert(what);
    }
}

/// Reads the program's stderr: `reporter:counter:GROUP,NAME,AMOUNT` and `reporter:status:MSG`
/// lines are acted on (and count as activity); every other line goes to the task log and the
/// tail kept for error messages.
fn read_stderr(
    stderr: ChildStderr,
    mut log: TaskLog,
    activity: &Arc<Activity>,
    status: &JobStatus,
    spec: &ProgramSpec,
) -> StderrReport {
    let reporter = Reporter::new(&spec.reporter_prefix);
    let mut report = StderrReport::default();
    let mut reader = BufReader::new(PipeReader {
        inner: stderr,
        activity: Arc::clone(activity),
        alive_after_exit: false,
    });
    let mut line = Vec::new();
    // Whether the last piece read ended short of its line's end.
    let mut in_long_line = false;
    loop {
        line.clear();
        match (&mut reader)
            .take(STDERR_PIECE as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let continued = std::mem::replace(&mut in_long_line, !line.ends_with(b"\n"));
        if continued {
            log.write(&line, &mut report);
            continue;
        }
        if in_long_line && line.len() >= STDERR_PIECE {
            // The start of a long line: never a `reporter:` line.
            push_tail(&mut report, tail_line(&line));
            log.write(&line, &mut report);
            continue;
        }
        // Any line on stderr is a sign of life, as in Hadoop (the read noted it).
        match reporter.line(&line) {
            StderrLine::Counter {
                group,
                name,
                amount,
            } => report.count(group, name, amount, spec.counter_limits),
            StderrLine::BadCounter(text) => {
                let note = format!(
                    "sluice: cannot parse counter line (expected reporter:counter:GROUP,NAME,AMOUNT): {}\n",
                    String::from_utf8_lossy(text)
                );
                log.write(note.as_bytes(), &mut report);
            }
            StderrLine::Status(message) => status.set_task_status(&message),
            StderrLine::Other(text) => {
                let shown = tail_line(text);
                log.write(&line, &mut report);
                push_tail(&mut report, shown);
            }
        }
    }
    log.flush();
    report
}

/// What starts the lines of a program's stderr that talk to the task
/// (`stream.stderr.reporter.prefix`, `reporter:` by default).
struct Reporter {
    counter: String,
    status: String,
}

/// One line of a program's stderr, as the task takes it.
#[derive(Debug, PartialEq, Eq)]
enum StderrLine<'l> {
    /// `reporter:counter:GROUP,NAME,AMOUNT`: add to a counter.
    Counter {
        group: String,
        name: String,
        amount: i64,
    },
    /// A counter line that does not parse (its text, for a note in the log).
    BadCounter(&'l [u8]),
    /// `reporter:status:MSG`: the task's status, trimmed.
    Status(String),
    /// Anything else, without its line end: for the log and the tail.
    Other(&'l [u8]),
}

impl Reporter {
    fn new(prefix: &str) -> Reporter {
        Reporter {
            counter: format!("{prefix}counter:"),
            status: format!("{prefix}status:"),
        }
    }

    /// What `line` (with its `\n` or `\r\n`, if any) says.
    fn line<'l>(&self, line: &'l [u8]) -> StderrLine<'l> {
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if let Some(rest) = text.strip_prefix(self.counter.as_bytes()) {
            return match parse_counter(rest) {
                Some((group, name, amount)) => StderrLine::Counter {
                    group,
                    name,
                    amount,
                },
                None => StderrLine::BadCounter(text),
            };
        }
        if let Some(rest) = text.strip_prefix(self.status.as_bytes()) {
            return StderrLine::Status(String::from_utf8_lossy(rest).trim().to_string());
        }
        StderrLine::Other(text)
    }
}

/// A stderr line as the tail quotes it: at most [`STDERR_LINE_MAX`] bytes, marked when cut.
fn tail_line(text: &[u8]) -> String {
    let mut shown = String::from_utf8_lossy(&text[..text.len().min(STDERR_LINE_MAX)]).into_owned();
    if text.len() > STDERR_LINE_MAX {
        shown.push_str(" [...]");
    }
    shown
}

/// A program's stderr log, created on the first write.
struct TaskLog {
    path: PathBuf,
    file: Option<BufWriter<File>>,
    /// Set once creating the file failed: the lines then only reach the tail.
    failed: bool,
}

impl TaskLog {
    fn new(path: PathBuf) -> TaskLog {
        TaskLog {
            path,
            file: None,
            failed: false,
        }
    }

    /// The file, created now if it was not yet.
    fn open(&mut self) -> io::Result<&File> {
        if self.file.is_none() {
            self.file = Some(BufWriter::new(File::create(&self.path)?));
        }
        match &self.file {
            Some(file) => Ok(file.get_ref()),
            None => Err(io::Error::other("the log was not created")),
        }
    }

    /// Appends `bytes`; a log that cannot be created is reported once, in the tail of
    /// `report` (which failure messages quote).
    fn write(&mut self, bytes: &[u8], report: &mut StderrReport) {
        if self.failed {
            return;
        }
        if let Err(e) = self.open() {
            self.failed = true;
            push_tail(
                report,
                format!("sluice: cannot create the log {}: {e}", self.path.display()),
            );
            return;
        }
        if let Some(file) = &mut self.file {
            let _ = file.write_all(bytes);
        }
    }

    fn flush(&mut self) {
        if let Some(file) = &mut self.file {
            let _ = file.flush();
        }
    }
}

/// Keeps `line` among the last [`STDERR_TAIL_LINES`] lines of the report.
fn push_tail(report: &mut StderrReport, line: String) {
    if report.tail.len() == STDERR_TAIL_LINES {
        report.tail.pop_front();
    }
    report.tail.push_back(line);
}

/// Parses `GROUP,NAME,AMOUNT` of a counter line as Hadoop does: the trimmed text must split
/// into exactly three comma-separated columns (Java's `split` drops trailing empty ones), the
/// last a whole number with at most one sign.
fn parse_counter(rest: &[u8]) -> Option<(String, String, i64)> {
    let text = String::from_utf8_lossy(rest);
    let mut columns: Vec<&str> = text.trim().split(',').collect();
    while columns.len() > 1 && columns.last() == Some(&"") {
        columns.pop();
    }
    let [group, name, amount] = columns[..] else {
        return None;
    };
    let amount = amount.parse().ok()?;
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
        assert_eq!(parse_counter(b"G,n,1,,"), Some(("G".into(), "n".into(), 1)));
        assert_eq!(parse_counter(b"G,n,+2"), Some(("G".into(), "n".into(), 2)));
        assert_eq!(parse_counter(b"G,n,++2"), None);
        assert_eq!(parse_counter(b"G,name"), None);
        assert_eq!(parse_counter(b"G,name,many"), None);
    }

    fn counter(group: &str, name: &str, amount: i64) -> StderrLine<'static> {
        StderrLine::Counter {
            group: group.into(),
            name: name.into(),
            amount,
        }
    }

    #[test]
    fn reporter_lines_are_told_from_the_rest() {
        let reporter = Reporter::new("reporter:");
        assert_eq!(
            reporter.line(b"reporter:counter:Words,seen,3\n"),
            counter("Words", "seen", 3)
        );
        // Windows line ends too.
        assert_eq!(
            reporter.line(b"reporter:counter:Words,seen,-1\r\n"),
            counter("Words", "seen", -1)
        );
        // Hadoop trims the status it reports.
        assert_eq!(
            reporter.line(b"reporter:status: 40% done \n"),
            StderrLine::Status("40% done".into())
        );
        assert_eq!(
            reporter.line(b"reporter:counter:Words,seen\n"),
            StderrLine::BadCounter(b"reporter:counter:Words,seen")
        );
        // The last line may lack its line end.
        assert_eq!(
            reporter.line(b"Traceback (most recent call last):"),
            StderrLine::Other(b"Traceback (most recent call last):")
        );
        // Only at the start of a line, and only counter: or status: after the prefix.
        assert_eq!(
            reporter.line(b"note reporter:status:x\n"),
            StderrLine::Other(b"note reporter:status:x")
        );
        assert_eq!(
            reporter.line(b"reporter:progress:1\n"),
            StderrLine::Other(b"reporter:progress:1")
        );
    }

    /// `stream.stderr.reporter.prefix` replaces `reporter:`, which is then an ordinary line.
    #[test]
    fn the_reporter_prefix_is_configurable() {
        let reporter = Reporter::new("my:");
        assert_eq!(reporter.line(b"my:counter:G,n,1\n"), counter("G", "n", 1));
        assert_eq!(
            reporter.line(b"my:status:busy\n"),
            StderrLine::Status("busy".into())
        );
        assert_eq!(
            reporter.line(b"reporter:status:busy\n"),
            StderrLine::Other(b"reporter:status:busy")
        );
    }

    #[test]
    fn long_stderr_lines_are_cut_for_the_tail() {
        assert_eq!(tail_line(b"KeyError: 'x'"), "KeyError: 'x'");
        let long = vec![b'a'; STDERR_LINE_MAX + 1];
        let shown = tail_line(&long);
        assert!(shown.ends_with("a [...]"), "{shown}");
        assert_eq!(shown.len(), STDERR_LINE_MAX + " [...]".len());
        assert_eq!(tail_line(&long[..STDERR_LINE_MAX]).len(), STDERR_LINE_MAX);
        // Invalid UTF-8 is shown, not dropped.
        assert_eq!(tail_line(b"caf\xe9"), "caf\u{fffd}");
    }

    #[test]
    fn the_tail_keeps_the_last_lines() {
        let mut report = StderrReport::default();
        for i in 0..STDERR_TAIL_LINES + 5 {
            push_tail(&mut report, format!("line {i}"));
        }
        assert_eq!(report.tail.len(), STDERR_TAIL_LINES);
        assert_eq!(report.tail.front().map(String::as_str), Some("line 5"));
        let last = format!("line {}", STDERR_TAIL_LINES + 4);
        assert_eq!(report.tail.back(), Some(&last));
    }

    /// Most programs write nothing to stderr: their log is never created.
    #[test]
    fn the_task_log_is_created_on_the_first_write() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("stderr");
        let mut report = StderrReport::default();
        let mut log = TaskLog::new(path.clone());
        log.flush();
        assert!(!path.exists());
        log.write(b"one\n", &mut report);
        log.write(b"two\n", &mut report);
        log.flush();
        assert_eq!(std::fs::read(&path).expect("log"), b"one\ntwo\n");
        assert!(report.tail.is_empty());
    }

    /// A log that cannot be created is said once, in the tail that failures quote.
    #[test]
    fn a_log_that_cannot_be_created_is_reported_once_in_the_tail() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("missing").join("stderr");
        let mut report = StderrReport::default();
        let mut log = TaskLog::new(path.clone());
        log.write(b"one\n", &mut report);
        log.write(b"two\n", &mut report);
        assert_eq!(report.tail.len(), 1);
        let note = format!("sluice: cannot create the log {}: ", path.display());
        assert!(report.tail[0].starts_with(&note), "{:?}", report.tail);
    }

    /// Waits never end early: a limit is rounded up to whole milliseconds.
    #[test]
    fn poll_timeouts_round_up() {
        assert_eq!(poll_timeout(None), PollTimeout::NONE);
        assert_eq!(poll_timeout(Some(Duration::ZERO)), PollTimeout::from(0u16));
        assert_eq!(
            poll_timeout(Some(Duration::from_micros(1))),
            PollTimeout::from(1u16)
        );
        assert_eq!(
            poll_timeout(Some(Duration::from_micros(1001))),
            PollTimeout::from(2u16)
        );
        assert_eq!(
            poll_timeout(Some(Duration::from_secs(1 << 40))),
            PollTimeout::MAX
        );
    }
}
