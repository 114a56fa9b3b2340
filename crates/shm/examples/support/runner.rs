//! A small engine: runs one program with its input and output going through a shared-memory
//! region, as `sluice streaming` does, but without the rest of a job. Shared by the `drive`
//! example and the conformance tests.

use std::io::{self, Read, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_shm::{ChildStatus, ChildWatch, EngineRegion};

/// How to run the program.
pub(crate) struct RunOptions {
    /// Ring capacity in bytes.
    pub(crate) capacity: u64,
    /// Use a ring for the program's input (else its stdin).
    pub(crate) input_ring: bool,
    /// Use a ring for the program's output (else its stdout).
    pub(crate) output_ring: bool,
    /// Stop the program after this long: no run can hang.
    pub(crate) timeout: Duration,
}

/// How the run ended.
pub(crate) struct RunReport {
    /// The program's exit status.
    pub(crate) status: ExitStatus,
    /// Whether the program attached to the region.
    pub(crate) attached: bool,
    /// Input bytes the program did not consume.
    pub(crate) unread: u64,
    /// Whether the watchdog had to stop it.
    pub(crate) timed_out: bool,
    /// Whether the program closed its output ring (always false without one).
    pub(crate) output_closed: bool,
}

/// The child as the rings see it: exited (observed without reaping) or stopped.
#[derive(Clone)]
struct Watch {
    pid: i32,
    stopped: Arc<AtomicBool>,
}

impl ChildWatch for Watch {
    fn status(&self) -> ChildStatus {
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
        if self.stopped.load(Ordering::SeqCst) {
            return ChildStatus::Stopped;
        }
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(nix::unistd::Pid::from_raw(self.pid)), flags) {
            Ok(WaitStatus::StillAlive) => ChildStatus::Running,
            _ => ChildStatus::Exited,
        }
    }
}

fn kill(pid: i32) {
    let pid = nix::unistd::Pid::from_raw(pid);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
}

/// Runs `command`, feeding it `input` and copying what it writes to `output`.
///
/// # Errors
/// A message if the region cannot be made, the program cannot start, the input cannot be read,
/// or a ring fails (a protocol violation, the program stopped).
pub(crate) fn run(
    mut command: Command,
    options: &RunOptions,
    input: &mut (dyn Read + Send),
    output: &mut dyn Write,
) -> Result<RunReport, String> {
    let capacity = |on: bool| on.then_some(options.capacity);
    let region = EngineRegion::create(capacity(options.input_ring), capacity(options.output_ring))
        .map_err(|e| e.to_string())?;
    command
        .stdin(if options.input_ring {
            Stdio::null()
        } else {
            Stdio::piped()
        })
        .stdout(if options.output_ring {
            Stdio::null()
        } else {
            Stdio::piped()
        });
    let mut child =
        sluice_shm::spawn(&mut command, Some(&region)).map_err(|e| format!("{command:?}: {e}"))?;
    let watch = Watch {
        pid: child.id() as i32,
        stopped: Arc::new(AtomicBool::new(false)),
    };
    let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
    let started = Instant::now();
    let done = AtomicBool::new(false);
    let (fed, drained) = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if started.elapsed() > options.timeout {
                    watch.stopped.store(true, Ordering::SeqCst);
                    region.abort();
                    kill(watch.pid);
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let feeder = scope.spawn(|| -> Result<(), String> {
            let mut sink: Box<dyn Write> = match (region.input(watch.clone()), stdin) {
                (Some(ring), _) => Box::new(ring),
                (None, Some(pipe)) => Box::new(pipe),
                (None, None) => return Ok(()),
            };
            match io::copy(input, &mut sink) {
                Ok(_) => Ok(()),
                // The program stopped reading: the report's `unread` and status tell the rest.
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
                Err(e) => Err(format!("feeding the program: {e}")),
            }
        });
        let drained = match (region.output(watch.clone()), stdout) {
            (Some(mut ring), _) => io::copy(&mut ring, output),
            (None, Some(mut pipe)) => io::copy(&mut pipe, output),
            (None, None) => Ok(0),
        }
        .and_then(|_| output.flush())
        .map_err(|e| format!("reading the program's output: {e}"));
        if drained.is_err() {
            region.abort();
            kill(watch.pid);
        }
        let fed = feeder
            .join()
            .unwrap_or_else(|_| Err("the feeder panicked".into()));
        let status = child.wait().map_err(|e| e.to_string());
        done.store(true, Ordering::SeqCst);
        (fed.and(status), drained)
    });
    drained?;
    let status = fed?;
    Ok(RunReport {
        status,
        attached: region.child_attached(),
        unread: region.unread_input(),
        timed_out: watch.stopped.load(Ordering::SeqCst),
        output_closed: region.output_closed(),
    })
}
