//! The Rust client: what an external mapper or reducer written in Rust links to exchange its
//! records with sluice over shared memory, or over stdin and stdout when it runs anywhere
//! else (a shell pipeline, Hadoop Streaming).
//!
//! ```no_run
//! use std::io::{BufRead, Write};
//! let mut channel = sluice_shm::Channel::open()?;
//! let mut line = Vec::new();
//! while channel.read_until(b'\n', &mut line)? > 0 {
//!     channel.write_all(&line)?;
//!     line.clear();
//! }
//! channel.close()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, BufRead, BufWriter, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use linux_futex::{AsFutex, Futex, Shared};

use crate::handshake;
use crate::layout::*;
use crate::region::Region;
use crate::ring::{Consumer, Producer, Ring, Sleeper};
use crate::ShmError;

/// Size of the buffer lines are read from.
const READ_BUFFER: usize = 64 * 1024;

/// The child's end of the channel to the engine: [`BufRead`] for its input, [`Write`] for its
/// output. Dropping it closes it (see [`Channel::close`]).
#[derive(Debug)]
pub struct Channel {
    input: Input,
    output: Output,
    engine: Option<Engine>,
    buffer: Box<[u8]>,
    pos: usize,
    filled: usize,
    closed: bool,
}

#[derive(Debug)]
enum Input {
    Ring(Consumer),
    Stdin(io::Stdin),
}

#[derive(Debug)]
enum Output {
    Ring(Producer),
    Stdout(BufWriter<io::Stdout>),
}

/// The engine, as the child can observe it.
#[derive(Debug)]
struct Engine {
    region: Arc<Region>,
    pid: i32,
}

impl Engine {
    /// The checks after a wake-up: the engine has not given up; and after a timeout, it
    /// still exists.
    fn check(&self, timed_out: bool) -> Result<(), ShmError> {
        if self.region.u32(H_ENGINE_STATE).load(Ordering::Acquire) == ENGINE_ABORTED {
            return Err(ShmError::Aborted);
        }
        if !timed_out {
            return Ok(());
        }
        let pid = nix::unistd::Pid::from_raw(self.pid);
        match nix::sys::signal::kill(pid, None) {
            Err(nix::errno::Errno::ESRCH) => Err(ShmError::PeerGone),
            _ => Ok(()),
        }
    }
}

impl Output {
    /// The flush-before-sleep rule for the output side.
    fn announce(&mut self) {
        match self {
            Output::Ring(producer) => producer.flush(),
            // An error here shows again on the next write or flush.
            Output::Stdout(out) => {
                let _ = out.flush();
            }
        }
    }
}

/// Sleeping for input: first tell the engine about all the output written.
struct InputSleeper<'a> {
    output: &'a mut Output,
    engine: &'a Engine,
}

impl Sleeper for InputSleeper<'_> {
    fn before_sleep(&mut self) {
        self.output.announce();
    }
    fn after_wake(&mut self, timed_out: bool) -> Result<(), ShmError> {
        self.engine.check(timed_out)
    }
}

/// Sleeping for output space: first tell the engine about all the input consumed.
struct OutputSleeper<'a> {
    input: &'a mut Input,
    engine: &'a Engine,
}

impl Sleeper for OutputSleeper<'_> {
    fn before_sleep(&mut self) {
        if let Input::Ring(consumer) = self.input {
            consumer.flush();
        }
    }
    fn after_wake(&mut self, timed_out: bool) -> Result<(), ShmError> {
        self.engine.check(timed_out)
    }
}

impl Channel {
    /// Attaches to the region the engine named in [`ENV_FD`]; or, under Hadoop Streaming fed
    /// by sluice's plugin, offers the [`handshake`](crate::handshake) and attaches to the
    /// region the answer names; or else uses stdin and stdout (input read during the handshake
    /// stays the first input). A direction without a ring uses stdin or stdout.
    ///
    /// # Errors
    /// [`ShmError::Env`], [`ShmError::Version`], [`ShmError::BadHeader`] or
    /// [`ShmError::Setup`] if the engine offered shared memory that this client cannot use.
    /// The protocol asks such a program to report the error and exit with status 2.
    pub fn open() -> Result<Channel, ShmError> {
        let (mut input, mut output) = (None, None);
        // Input read from stdin during the handshake that turned out to be records.
        let mut pending = Vec::new();
        let attached = match attach()? {
            Some(attached) => Some(attached),
            None if handshake::offers(|name| std::env::var(name).ok()) => {
                attach_by_handshake(&mut pending)?
            }
            None => None,
        };
        let engine = match attached {
            None => None,
            Some((region, layout)) => {
                let region = Arc::new(region);
                if let Some(ring) = layout.input {
                    let ring = Ring::new(Arc::clone(&region), ring);
                    input = Some(Input::Ring(Consumer::new(ring, false)));
                }
                if let Some(ring) = layout.output {
                    let ring = Ring::new(Arc::clone(&region), ring);
                    output = Some(Output::Ring(Producer::new(ring, false)));
                }
                let pid = region.u32(H_ENGINE_PID).load(Ordering::Acquire) as i32;
                if pid <= 0 {
                    return Err(ShmError::BadHeader(format!("engine_pid is {pid}")));
                }
                let state = region.u32(H_CHILD_STATE);
                // One process attaches, once.
                if let Err(found) = state.compare_exchange(
                    CHILD_NOT_ATTACHED,
                    CHILD_ATTACHED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    return Err(ShmError::BadHeader(format!(
                        "child_state is {found}: another process attached already"
                    )));
                }
                let futex: &Futex<Shared> = state.as_futex();
                futex.wake(i32::MAX);
                Some(Engine { region, pid })
            }
        };
        Ok(Channel {
            input: input.unwrap_or_else(|| Input::Stdin(io::stdin())),
            output: output.unwrap_or_else(|| {
                Output::Stdout(BufWriter::with_capacity(READ_BUFFER, io::stdout()))
            }),
            engine,
            filled: pending.len(),
            buffer: prefilled(pending),
            pos: 0,
            closed: false,
        })
    }

    /// Whether any direction goes through shared memory.
    pub fn is_shm(&self) -> bool {
        self.engine.is_some()
    }

    /// Reads from the input into `buf`, bypassing the line buffer.
    fn read_input(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match (&mut self.input, &self.engine) {
            (Input::Ring(consumer), Some(engine)) => consumer
                .read(
                    buf,
                    &mut InputSleeper {
                        output: &mut self.output,
                        engine,
                    },
                )
                .map_err(io::Error::other),
            (Input::Stdin(stdin), _) => {
                // Reading stdin may block: the engine hears of the output in the ring first
                // (the flush-before-sleep rule).
                if let Output::Ring(producer) = &mut self.output {
                    producer.flush();
                }
                stdin.read(buf)
            }
            (Input::Ring(_), None) => Err(io::Error::other("shm input without a region")),
        }
    }

    /// Flushes the output, closes the output ring (the engine sees the end of the stream) and
    /// tells the engine that this side is done.
    ///
    /// # Errors
    /// A failure to flush stdout.
    pub fn close(mut self) -> io::Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        self.closed = true;
        let flushed = match &mut self.output {
            Output::Ring(producer) => {
                producer.close();
                Ok(())
            }
            Output::Stdout(out) => out.flush(),
        };
        if let Input::Ring(consumer) = &mut self.input {
            consumer.flush();
        }
        if let Some(engine) = &self.engine {
            engine
                .region
                .u32(H_CHILD_STATE)
                .store(CHILD_DETACHED, Ordering::Release);
        }
        flushed
    }
}

/// The read buffer, holding `pending` (records read during the handshake) at its start.
fn prefilled(mut pending: Vec<u8>) -> Box<[u8]> {
    let len = pending.len().max(READ_BUFFER);
    pending.resize(len, 0);
    pending.into_boxed_slice()
}

/// Offers the handshake of `docs/shm-protocol.md` ("Setting up under Hadoop Streaming"): the
/// hello line on stdout, then the first line of stdin says where the region is, or is the
/// first record (kept in `pending`), in which case this side stays on pipes.
fn attach_by_handshake(pending: &mut Vec<u8>) -> Result<Option<(Region, Layout)>, ShmError> {
    let io_error = |what| move |e: io::Error| ShmError::Setup(what, e);
    {
        let mut stdout = io::stdout().lock();
        stdout
            .write_all(handshake::HELLO)
            .and_then(|()| stdout.flush())
            .map_err(io_error("writing the handshake to stdout"))?;
    }
    let mut stdin = io::stdin().lock();
    let mut chunk = vec![0; READ_BUFFER];
    loop {
        let n = match stdin.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_error("reading the handshake from stdin")(e)),
        };
        pending.extend_from_slice(&chunk[..n]);
        match handshake::first_line(pending)? {
            handshake::FirstLine::Undecided if n > 0 => continue,
            handshake::FirstLine::Undecided | handshake::FirstLine::Record => return Ok(None),
            handshake::FirstLine::Attach { path, len } => {
                if pending.len() > len {
                    return Err(ShmError::Violation(format!(
                        "{} bytes followed the attach line on stdin",
                        pending.len() - len
                    )));
                }
                pending.clear();
                let fd = nix::fcntl::open(
                    path.as_str(),
                    nix::fcntl::OFlag::O_RDWR | nix::fcntl::OFlag::O_CLOEXEC,
                    nix::sys::stat::Mode::empty(),
                )
                .map_err(|e| ShmError::Env(format!("cannot open the region {path}: {e}")))?;
                return attach_fd(fd).map(Some);
            }
        }
    }
}

/// Finds and maps the region the engine passed, if any.
fn attach() -> Result<Option<(Region, Layout)>, ShmError> {
    let Some(fd) = std::env::var_os(ENV_FD) else {
        return Ok(None);
    };
    let version = std::env::var_os(ENV_VERSION);
    // Programs this one starts must not try to attach: the region is this process's.
    // (`remove_var` is not thread-safe: open the channel before starting threads.)
    std::env::remove_var(ENV_FD);
    std::env::remove_var(ENV_VERSION);
    if let Some(version) = version {
        let text = version.to_string_lossy();
        match text.trim().parse::<u32>() {
            Ok(v) if v == VERSION => {}
            Ok(v) => return Err(ShmError::Version(v)),
            Err(_) => {
                return Err(ShmError::Env(format!(
                    "{ENV_VERSION}={text:?} is not a version number"
                )))
            }
        }
    }
    // 0, 1 and 2 are stdin, stdout and stderr, never the region.
    let fd: i32 = fd
        .to_str()
        .and_then(|s| s.trim().parse().ok())
        .filter(|fd| *fd > 2)
        .ok_or_else(|| {
            ShmError::Env(format!(
                "{ENV_FD}={fd:?} is not a descriptor number above 2"
            ))
        })?;
    // SAFETY: F_GETFD only reads the flags of descriptor `fd`, whatever it is.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(ShmError::Env(format!(
            "{ENV_FD}={fd} names no open descriptor (was it closed, or is this a program started by the mapper?)"
        )));
    }
    // SAFETY: the descriptor is open (checked above) and was handed to this process by the
    // engine for this purpose alone; nothing else in the process owns it.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // Programs this one starts must not inherit it.
    nix::fcntl::fcntl(
        &fd,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .map_err(|e| ShmError::Setup("fcntl", e.into()))?;
    attach_fd(fd).map(Some)
}

/// Maps the region of a memory file the engine made, after checking it is sealed.
fn attach_fd(fd: OwnedFd) -> Result<(Region, Layout), ShmError> {
    // The engine seals the file before the child exists: a file that could still shrink is not
    // one an engine made, and mapping it could fault.
    let seals = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GET_SEALS)
        .map_err(|e| ShmError::Setup("F_GET_SEALS", e.into()))?;
    let needed = nix::fcntl::SealFlag::F_SEAL_SHRINK
        | nix::fcntl::SealFlag::F_SEAL_GROW
        | nix::fcntl::SealFlag::F_SEAL_SEAL;
    if nix::fcntl::SealFlag::from_bits_truncate(seals) & needed != needed {
        return Err(ShmError::BadHeader(format!(
            "the memory file is not sealed against resizing (seals {seals:#x})"
        )));
    }
    Region::attach(fd)
}

impl Read for Channel {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos < self.filled {
            let n = buf.len().min(self.filled - self.pos);
            buf[..n].copy_from_slice(&self.buffer[self.pos..self.pos + n]);
            self.pos += n;
            return Ok(n);
        }
        self.read_input(buf)
    }
}

impl BufRead for Channel {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.filled {
            let mut buffer = std::mem::take(&mut self.buffer);
            let read = self.read_input(&mut buffer);
            self.buffer = buffer;
            self.filled = read?;
            self.pos = 0;
        }
        Ok(&self.buffer[self.pos..self.filled])
    }

    fn consume(&mut self, amount: usize) {
        self.pos = (self.pos + amount).min(self.filled);
    }
}

impl Write for Channel {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match (&mut self.output, &self.engine) {
            (Output::Ring(producer), Some(engine)) => producer
                .write(
                    buf,
                    &mut OutputSleeper {
                        input: &mut self.input,
                        engine,
                    },
                )
                .map_err(io::Error::other),
            (Output::Stdout(out), _) => out.write(buf),
            (Output::Ring(_), None) => Err(io::Error::other("shm output without a region")),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.output {
            Output::Ring(producer) => {
                producer.flush();
                Ok(())
            }
            Output::Stdout(out) => out.flush(),
        }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}
