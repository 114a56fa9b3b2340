//! The engine's side: create the region, let the child inherit it, and move a task's records
//! through it as [`std::io::Write`] (to the child) and [`std::io::Read`] (from the child).
//!
//! The engine trusts nothing the child can write (`docs/shm-protocol.md`, "A dead or hostile
//! peer"): it keeps its own copy of the layout, validates every counter the child publishes,
//! and waits only in bounded sleeps after which it asks a [`ChildWatch`] whether the child is
//! still running.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use nix::fcntl::{fcntl, FcntlArg};

use linux_futex::{AsFutex, Futex, Shared};

use crate::layout::*;
use crate::region::Region;
use crate::ring::{Consumer, Producer, Ring, Sleeper};
use crate::ShmError;

/// What the engine knows about the child between two waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildStatus {
    /// Still running: keep waiting.
    Running,
    /// The child has exited: nothing more will be read or written.
    Exited,
    /// The task is being stopped (cancelled, timed out): give up at once.
    Stopped,
}

/// Tells the rings about the child process, which only the caller can observe.
pub trait ChildWatch {
    /// Whether the child can still make progress; asked after every wake-up or timeout.
    fn status(&self) -> ChildStatus;
    /// Called when bytes moved, for an inactivity timeout.
    fn progressed(&self) {}
}

/// A shared region set up by the engine for one run of a child program.
#[derive(Debug)]
pub struct EngineRegion {
    region: Arc<Region>,
    layout: Layout,
    input_taken: AtomicBool,
    output_taken: AtomicBool,
    /// Bytes written to the input ring, kept in private memory.
    input_written: Arc<AtomicU64>,
    /// Set when the output ring was read to its end and the child had closed it.
    output_closed: Arc<AtomicBool>,
}

impl EngineRegion {
    /// Creates a region with an input ring of `input` bytes and an output ring of `output`
    /// bytes; `None` leaves that direction to a pipe.
    ///
    /// # Errors
    /// [`ShmError::Capacity`] for a capacity that is not a power of two between 4 KiB and
    /// 1 GiB; [`ShmError::Setup`] if the memory file cannot be created, sealed or mapped.
    pub fn create(input: Option<u64>, output: Option<u64>) -> Result<EngineRegion, ShmError> {
        let layout = Layout::new(input, output)?;
        let region = Arc::new(Region::create(&layout)?);
        Ok(EngineRegion {
            region,
            layout,
            input_taken: AtomicBool::new(false),
            output_taken: AtomicBool::new(false),
            input_written: Arc::new(AtomicU64::new(0)),
            output_closed: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The layout the engine wrote (and keeps trusting, whatever the header now says).
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The writer of the input ring, once; `None` if the region has no input ring or it was
    /// already taken. Dropping it closes the ring: the child sees the end of its input.
    pub fn input<W: ChildWatch>(&self, watch: W) -> Option<ChildInput<W>> {
        let ring = self.layout.input?;
        if self.input_taken.swap(true, Ordering::SeqCst) {
            return None;
        }
        Some(ChildInput {
            producer: Producer::new(Ring::new(Arc::clone(&self.region), ring), true),
            watch,
            written: Arc::clone(&self.input_written),
        })
    }

    /// The reader of the output ring, once; `None` if the region has no output ring or it was
    /// already taken.
    pub fn output<W: ChildWatch>(&self, watch: W) -> Option<ChildOutput<W>> {
        let ring = self.layout.output?;
        if self.output_taken.swap(true, Ordering::SeqCst) {
            return None;
        }
        Some(ChildOutput {
            consumer: Consumer::new(Ring::new(Arc::clone(&self.region), ring), true),
            watch,
            child_gone: false,
            closed: Arc::clone(&self.output_closed),
        })
    }

    /// Whether the child ever attached. The child writes this word, so it is only its claim:
    /// enough to tell a program that does not speak the protocol from one that does.
    pub fn child_attached(&self) -> bool {
        self.region.u32(H_CHILD_STATE).load(Ordering::Acquire) != CHILD_NOT_ATTACHED
    }

    /// Whether the output ring was read to its end and the child had closed it: the normal end
    /// of a child's output. A child that exits without closing may have lost output it meant to
    /// write (a failed write, a crash between writes).
    pub fn output_closed(&self) -> bool {
        self.output_closed.load(Ordering::SeqCst)
    }

    /// Bytes of input the child has not consumed. Meaningful once the input writer is dropped
    /// and the child has exited; 0 without an input ring. The child writes `head`, so a lying
    /// child can only make this smaller, which fails nothing it should not.
    pub fn unread_input(&self) -> u64 {
        let Some(ring) = self.layout.input else {
            return 0;
        };
        let written = self.input_written.load(Ordering::SeqCst);
        let head = self
            .region
            .u64(ring.offset as usize + R_HEAD)
            .load(Ordering::Acquire);
        written.saturating_sub(head)
    }

    /// The path a child opens to attach without inheriting a descriptor (the handshake under
    /// Hadoop Streaming): `/proc/<engine pid>/fd/<descriptor>`, which only processes of the
    /// engine's user can open. `None` once [`EngineRegion::close_descriptor`] ran.
    pub fn attach_path(&self) -> Option<String> {
        let fd = self.region.raw_fd()?;
        Some(format!("/proc/{}/fd/{fd}", std::process::id()))
    }

    /// Closes the engine's descriptor of the region (its mapping stays): after the child has
    /// attached, no path opens the region any more.
    pub fn close_descriptor(&self) {
        self.region.close_fd();
    }

    /// Waits until the child has attached, at most `timeout`, asking `watch` about the child
    /// every 100 ms.
    ///
    /// # Errors
    /// [`ShmError::PeerGone`] if the child exits first, [`ShmError::Stopped`] if the task is
    /// stopped, [`ShmError::Env`] after the timeout.
    pub fn wait_attached<W: ChildWatch>(
        &self,
        timeout: std::time::Duration,
        watch: &W,
    ) -> Result<(), ShmError> {
        let start = std::time::Instant::now();
        let state = self.region.u32(H_CHILD_STATE);
        loop {
            let seen = state.load(Ordering::Acquire);
            if seen != CHILD_NOT_ATTACHED {
                return Ok(());
            }
            match watch.status() {
                ChildStatus::Running => {}
                ChildStatus::Exited => return Err(ShmError::PeerGone),
                ChildStatus::Stopped => return Err(ShmError::Stopped),
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Err(ShmError::Env(format!(
                    "the program offered shared memory but did not attach within {} ms",
                    timeout.as_millis()
                )));
            }
            let futex: &Futex<Shared> = state.as_futex();
            // A wake-up, a timeout or a changed value all lead back to the checks above.
            let _ = futex.wait_for(seen, left.min(std::time::Duration::from_millis(100)));
        }
    }

    /// Tells the child that the engine gives up on the task and wakes every sleeper, so that
    /// a child still running notices at once.
    pub fn abort(&self) {
        self.region
            .u32(H_ENGINE_STATE)
            .store(ENGINE_ABORTED, Ordering::SeqCst);
        for ring in [self.layout.input, self.layout.output]
            .into_iter()
            .flatten()
        {
            for field in [R_DATA_SEQ, R_SPACE_SEQ] {
                let word = self.region.u32(ring.offset as usize + field);
                word.fetch_add(1, Ordering::SeqCst);
                let futex: &Futex<Shared> = word.as_futex();
                futex.wake(i32::MAX);
            }
        }
    }
}

/// Held while a child is started: see [`spawn`].
static SPAWNING: Mutex<()> = Mutex::new(());

/// Starts a program, handing it `region` if given. A process that uses [`EngineRegion`]s starts
/// all of its programs through this function, with or without a region.
///
/// The region's descriptor is created close-on-exec, so that no program inherits it by
/// accident. For the child that must, a duplicate without the flag is made just before the
/// spawn and closed right after; starts are serialized, so no other program of this process can
/// be started while the duplicate exists and inherit it too. This keeps the spawn a
/// `posix_spawn`: clearing the flag in the child instead (`pre_exec`) would force a full
/// `fork`, which copies the page tables of a process that may hold gigabytes of record buffers.
///
/// # Errors
/// The error of duplicating the descriptor or of starting the program.
pub fn spawn(command: &mut Command, region: Option<&EngineRegion>) -> io::Result<Child> {
    let _one_at_a_time = SPAWNING.lock().unwrap_or_else(|p| p.into_inner());
    let Some(region) = region else {
        return command.spawn();
    };
    // `F_DUPFD` (not `F_DUPFD_CLOEXEC`): the duplicate stays open across `exec`.
    let inherited = region
        .region
        .with_fd(|fd| fcntl(fd, FcntlArg::F_DUPFD(3)))
        .ok_or_else(|| io::Error::other("the shared region's descriptor is closed"))?
        .map_err(io::Error::from)?;
    // SAFETY: `F_DUPFD` returned a new descriptor that nothing else owns.
    let inherited = unsafe { OwnedFd::from_raw_fd(inherited) };
    command
        .env(ENV_FD, inherited.as_raw_fd().to_string())
        .env(ENV_VERSION, VERSION.to_string());
    let child = command.spawn();
    drop(inherited);
    child
}

/// The engine's sleeps: nothing to flush (the engine drives each direction from its own
/// thread, and neither waits for the other), and after each wake-up, ask about the child.
struct EngineSleeper<'w, W: ChildWatch>(&'w W);

impl<W: ChildWatch> Sleeper for EngineSleeper<'_, W> {
    fn before_sleep(&mut self) {}
    /// The child's status is asked after every wake-up, not only after timeouts: it is one
    /// `waitid`, and a batch of bytes comes between two wake-ups.
    fn after_wake(&mut self, _timed_out: bool) -> Result<(), ShmError> {
        match self.0.status() {
            ChildStatus::Running => Ok(()),
            ChildStatus::Exited => Err(ShmError::PeerGone),
            ChildStatus::Stopped => Err(ShmError::Stopped),
        }
    }
}

/// An [`io::Error`] carrying a [`ShmError`]; a child that is gone is a broken pipe, as it
/// would be with pipes.
fn io_error(error: ShmError) -> io::Error {
    let kind = match error {
        ShmError::PeerGone => io::ErrorKind::BrokenPipe,
        ShmError::Violation(_) => io::ErrorKind::InvalidData,
        _ => io::ErrorKind::Other,
    };
    io::Error::new(kind, error)
}

/// Writes the child's input into the input ring.
#[derive(Debug)]
pub struct ChildInput<W: ChildWatch> {
    producer: Producer,
    watch: W,
    written: Arc<AtomicU64>,
}

impl<W: ChildWatch> io::Write for ChildInput<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self
            .producer
            .write(buf, &mut EngineSleeper(&self.watch))
            .map_err(io_error)?;
        self.watch.progressed();
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.producer
            .write_all(buf, &mut EngineSleeper(&self.watch))
            .map_err(io_error)?;
        self.watch.progressed();
        Ok(())
    }

    /// Wakes the child if it sleeps without knowing of every byte written.
    fn flush(&mut self) -> io::Result<()> {
        self.producer.flush();
        Ok(())
    }
}

impl<W: ChildWatch> Drop for ChildInput<W> {
    fn drop(&mut self) {
        self.written
            .store(self.producer.written(), Ordering::SeqCst);
        self.producer.close();
    }
}

/// Reads the child's output from the output ring. After the child has exited, what it
/// published is still read; then the stream ends, as a pipe would.
#[derive(Debug)]
pub struct ChildOutput<W: ChildWatch> {
    consumer: Consumer,
    watch: W,
    child_gone: bool,
    closed: Arc<AtomicBool>,
}

impl<W: ChildWatch> ChildOutput<W> {
    /// Bytes read so far.
    pub fn consumed(&self) -> u64 {
        self.consumer.consumed()
    }
}

impl<W: ChildWatch> io::Read for ChildOutput<W> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if !self.child_gone {
            match self.consumer.read(buf, &mut EngineSleeper(&self.watch)) {
                Ok(n) => {
                    self.watch.progressed();
                    // `Consumer::read` returns 0 only for a closed, drained ring.
                    if n == 0 {
                        self.closed.store(true, Ordering::SeqCst);
                    }
                    return Ok(n);
                }
                Err(ShmError::PeerGone) => self.child_gone = true,
                Err(e) => return Err(io_error(e)),
            }
        }
        // The child has exited: what it published is still read. `closed` is loaded before
        // `tail`, as in `Consumer::read`: a grandchild that attached may still be writing, and
        // the end counts as marked only if `closed` came with the last `tail`.
        let closed = self.consumer.is_closed();
        let n = self.consumer.try_read(buf).map_err(io_error)?;
        if n == 0 && closed {
            self.closed.store(true, Ordering::SeqCst);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The descriptors of memory files named `sluice-shm` that a program started by `spawn`
    /// holds, as `/proc/self/fd` shows them to the program itself.
    fn inherited(region: Option<&EngineRegion>) -> usize {
        let mut command = Command::new("sh");
        command
            .args(["-c", "ls -l /proc/self/fd/"])
            .stdout(std::process::Stdio::piped());
        let child = spawn(&mut command, region).expect("spawn sh");
        let out = child.wait_with_output().expect("wait for sh");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| l.contains("memfd:sluice-shm"))
            .count()
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri can neither create a memory file nor start a process"
    )]
    fn only_the_child_of_a_region_inherits_it() {
        let region = EngineRegion::create(Some(4096), Some(4096)).expect("region");
        assert_eq!(inherited(Some(&region)), 1);
        // Another program started while the region exists does not get it.
        assert_eq!(inherited(None), 0);
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "Miri can neither create a memory file nor start a process"
    )]
    fn programs_started_at_the_same_time_get_only_their_own_region() {
        std::thread::scope(|scope| {
            let runs: Vec<_> = (0..8u32)
                .map(|i| {
                    scope.spawn(move || {
                        let region = i
                            .is_multiple_of(2)
                            .then(|| EngineRegion::create(Some(4096), None).expect("region"));
                        (0..10)
                            .map(|_| inherited(region.as_ref()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            for (i, run) in runs.into_iter().enumerate() {
                let seen = run.join().expect("thread");
                let want = usize::from(i.is_multiple_of(2));
                assert!(seen.iter().all(|&n| n == want), "thread {i}: {seen:?}");
            }
        });
    }
}
