//! Records per second through a ring between two processes, against a pipe with large
//! buffered writes: the microbenchmark of `docs/BENCHMARKS.md`.
//!
//! ```text
//! cargo run --release -p sluice-shm --example ringbench -- [TOTAL_MIB] [SIZES...]
//! ```
//!
//! For each record size, the engine side writes TOTAL_MIB (default 512) of records, one write
//! per record, into (a) the input ring of a region (1 MiB), (b) a pipe of the kernel's default
//! size (64 KiB) and (c) a pipe of 1 MiB, as sluice's own pipe transport asks for; the pipes
//! through a 256 KiB `BufWriter`. The child (this program again) reads everything in 256 KiB reads through the
//! Rust client or from its stdin, and checks the byte count. Time runs from the start of the
//! child to its exit.

use std::io::{self, BufWriter, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use sluice_shm::{ChildStatus, ChildWatch, EngineRegion};

const CHILD_ENV: &str = "RINGBENCH_CHILD";
const BUFFER: usize = 256 * 1024;

struct Watch(i32);

impl ChildWatch for Watch {
    fn status(&self) -> ChildStatus {
        use nix::sys::wait::{waitid, Id, WaitPidFlag, WaitStatus};
        let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
        match waitid(Id::Pid(nix::unistd::Pid::from_raw(self.0)), flags) {
            Ok(WaitStatus::StillAlive) => ChildStatus::Running,
            _ => ChildStatus::Exited,
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if let Ok(expected) = std::env::var(CHILD_ENV) {
        return child(expected.parse()?);
    }
    let mut args = std::env::args().skip(1);
    let total_mib: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(512);
    let sizes: Vec<usize> = args.map(|a| a.parse()).collect::<Result<_, _>>()?;
    let sizes = if sizes.is_empty() {
        vec![16, 64, 256, 4096]
    } else {
        sizes
    };
    println!("| record | transport | records/s | MB/s | time | shm speed-up |");
    println!("|---:|---|---:|---:|---:|---:|");
    for size in sizes {
        let records = (total_mib << 20) / size as u64;
        let default_pipe = run(size, records, Transport::Pipe(None))?;
        let big_pipe = run(size, records, Transport::Pipe(Some(1 << 20)))?;
        let shm = run(size, records, Transport::Shm)?;
        for (name, time) in [
            ("pipe, 64 KiB", default_pipe),
            ("pipe, 1 MiB", big_pipe),
            ("shm, 1 MiB ring", shm),
        ] {
            let secs = time.as_secs_f64();
            let speed_up = if name.starts_with("shm") {
                String::new()
            } else {
                format!("{:.2}×", secs / shm.as_secs_f64())
            };
            println!(
                "| {size} B | {name} | {:.1} M | {:.0} | {secs:.3} s | {speed_up} |",
                records as f64 / secs / 1e6,
                (records * size as u64) as f64 / secs / 1e6,
            );
        }
    }
    Ok(())
}

/// How the records travel.
#[derive(Clone, Copy)]
enum Transport {
    /// A pipe, resized to this many bytes if given.
    Pipe(Option<i32>),
    /// The input ring of a region.
    Shm,
}

/// Sends `records` records of `size` bytes to a child; returns the time until it has read
/// them all and exited.
fn run(
    size: usize,
    records: u64,
    transport: Transport,
) -> Result<Duration, Box<dyn std::error::Error>> {
    let shm = matches!(transport, Transport::Shm);
    let record: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
    let region = if shm {
        Some(EngineRegion::create(
            Some(sluice_shm::DEFAULT_CAPACITY),
            None,
        )?)
    } else {
        None
    };
    let mut command = Command::new(std::env::current_exe()?);
    command
        .env(CHILD_ENV, (records * size as u64).to_string())
        .stdin(if shm { Stdio::null() } else { Stdio::piped() });
    let started = Instant::now();
    let mut child = sluice_shm::spawn(&mut command, region.as_ref())?;
    let pid = child.id() as i32;
    match (&region, child.stdin.take()) {
        (Some(region), _) => {
            let mut ring = region.input(Watch(pid)).ok_or("no input ring")?;
            for _ in 0..records {
                ring.write_all(&record)?;
            }
        }
        (None, Some(pipe)) => {
            if let Transport::Pipe(Some(bytes)) = transport {
                nix::fcntl::fcntl(&pipe, nix::fcntl::FcntlArg::F_SETPIPE_SZ(bytes))?;
            }
            let mut pipe = BufWriter::with_capacity(BUFFER, pipe);
            for _ in 0..records {
                pipe.write_all(&record)?;
            }
            pipe.flush()?;
        }
        (None, None) => return Err("no stdin".into()),
    }
    let status = child.wait()?;
    let elapsed = started.elapsed();
    if !status.success() {
        return Err(format!("the child failed: {status}").into());
    }
    Ok(elapsed)
}

/// Reads everything and checks that `expected` bytes arrived.
fn child(expected: u64) -> Result<(), Box<dyn std::error::Error>> {
    let mut buf = vec![0u8; BUFFER];
    let mut total = 0u64;
    if std::env::var_os(sluice_shm::ENV_FD).is_some() {
        let mut channel = sluice_shm::Channel::open()?;
        loop {
            let n = channel.read(&mut buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        channel.close()?;
    } else {
        let mut stdin = io::stdin().lock();
        loop {
            let n = stdin.read(&mut buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    if total != expected {
        return Err(format!("read {total} bytes, expected {expected}").into());
    }
    Ok(())
}
