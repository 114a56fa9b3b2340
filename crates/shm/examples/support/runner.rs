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

/// How long the engine waits for a program's offer: a program that makes none costs this.
const OFFER_WAIT: Duration = Duration::from_secs(2);

/// How the engine answers a program that offers the handshake (`docs/shm-protocol.md`,
/// "Setting up under Hadoop Streaming").
#[allow(dead_code)] // Each user of this module answers in its own ways.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answer {
    /// With the attach line: the rings carry the records.
    Attach {
        /// Also a ring for the program's output (else its stdout).
        output_ring: bool,
    },
    /// With records: the program stays on pipes (an engine whose wait for the offer ran out).
    Records,
}

/// How a run through the handshake ended.
#[allow(dead_code)]
pub(crate) struct HandshakeReport {
    /// The program's exit status.
    pub(crate) status: ExitStatus,
    /// Whether the program's stdout began with the hello line.
    pub(crate) offered: bool,
    /// Whether it attached to the region (false without one).
    pub(crate) attached: bool,
    /// What it wrote, from the ring or its stdout, without the hello line.
    pub(crate) output: Vec<u8>,
    /// Whether the watchdog had to stop it.
    pub(crate) timed_out: bool,
}

/// Runs `command` as sluice's plugin inside Hadoop Streaming does: on pipes, reading the
/// program's offer from its stdout and answering it as `answer` says.
///
/// # Errors
/// A message if the program cannot start, the region cannot be made, the program does not
/// attach after an attach line, or a ring fails.
#[allow(dead_code)]
pub(crate) fn run_handshake(
    mut command: Command,
    answer: Answer,
    input: &[u8],
    timeout: Duration,
) -> Result<HandshakeReport, String> {
    use sluice_shm::handshake::{attach_line, HELLO};
    command.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = command.spawn().map_err(|e| format!("{command:?}: {e}"))?;
    let watch = Watch {
        pid: child.id() as i32,
        stopped: Arc::new(AtomicBool::new(false)),
    };
    let (mut stdin, mut stdout) = match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => (stdin, stdout),
        _ => return Err("no pipes to the program".into()),
    };
    let started = Instant::now();
    let done = AtomicBool::new(false);
    let region = std::sync::OnceLock::<EngineRegion>::new();
    let outcome = std::thread::scope(|scope| {
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                if started.elapsed() > timeout {
                    watch.stopped.store(true, Ordering::SeqCst);
                    if let Some(region) = region.get() {
                        region.abort();
                    }
                    kill(watch.pid);
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        // All of stdout, read on a thread that says as soon as it can tell whether it began
        // with the hello line; the engine waits for that a bounded time, as the plugin does.
        let (told, offer) = std::sync::mpsc::channel();
        let reader = scope.spawn(move || -> io::Result<Vec<u8>> {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 65536];
            let mut telling = Some(told);
            loop {
                let n = stdout.read(&mut buf)?;
                all.extend_from_slice(&buf[..n]);
                let decided = n == 0 || all.len() >= HELLO.len() || !HELLO.starts_with(&all);
                if decided {
                    if let Some(told) = telling.take() {
                        let _ = told.send(all.starts_with(HELLO));
                    }
                }
                if n == 0 {
                    return Ok(all);
                }
            }
        });
        let result = (|| -> Result<(bool, Vec<u8>), String> {
            let offered = offer.recv_timeout(OFFER_WAIT).unwrap_or(false);
            let stdout_output = |reader: std::thread::ScopedJoinHandle<'_, io::Result<Vec<u8>>>| {
                let mut all = reader
                    .join()
                    .map_err(|_| "the reader panicked".to_string())?
                    .map_err(|e| format!("reading the output: {e}"))?;
                // The engine drops a first line equal to the hello, however late it came.
                if all.starts_with(HELLO) {
                    all.drain(..HELLO.len());
                }
                Ok::<_, String>(all)
            };
            let attach = match answer {
                Answer::Attach { output_ring } if offered => Some(output_ring),
                _ => None,
            };
            let Some(output_ring) = attach else {
                // Pipes: the records on stdin, the output on stdout.
                let _ = stdin.write_all(input);
                drop(stdin);
                return Ok((offered, stdout_output(reader)?));
            };
            let made = EngineRegion::create(Some(65536), output_ring.then_some(65536))
                .map_err(|e| e.to_string())?;
            let region = region.get_or_init(|| made);
            let path = region.attach_path().ok_or("the region has no path")?;
            stdin
                .write_all(&attach_line(&path))
                .and_then(|()| stdin.flush())
                .map_err(|e| format!("writing the attach line: {e}"))?;
            region
                .wait_attached(timeout, &watch)
                .map_err(|e| format!("waiting for the attach: {e}"))?;
            region.close_descriptor();
            if std::fs::File::open(&path).is_ok() {
                return Err(format!("{path} still opens after the attach"));
            }
            let ring_input = region.input(watch.clone()).ok_or("no input ring")?;
            let feeder = scope.spawn(move || {
                let mut ring_input = ring_input;
                let fed = ring_input.write_all(input);
                // The ring closes, then stdin, as the plugin does at the end of the task.
                drop(ring_input);
                drop(stdin);
                fed
            });
            let output = match region.output(watch.clone()) {
                Some(mut ring) => {
                    let mut output = Vec::new();
                    ring.read_to_end(&mut output)
                        .map_err(|e| format!("reading the output ring: {e}"))?;
                    let stray = stdout_output(reader)?;
                    if !stray.is_empty() {
                        return Err(format!("{} bytes on stdout besides the ring", stray.len()));
                    }
                    output
                }
                None => stdout_output(reader)?,
            };
            match feeder.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Ok(Err(e)) => return Err(format!("feeding the program: {e}")),
                Err(_) => return Err("the feeder panicked".into()),
            }
            Ok((offered, output))
        })();
        if result.is_err() {
            kill(watch.pid);
        }
        let status = child.wait().map_err(|e| e.to_string());
        done.store(true, Ordering::SeqCst);
        result.and_then(|r| Ok((r, status?)))
    });
    let ((offered, output), status) = outcome?;
    Ok(HandshakeReport {
        status,
        offered,
        attached: region.get().is_some_and(EngineRegion::child_attached),
        output,
        timed_out: watch.stopped.load(Ordering::SeqCst),
    })
}
