//! Runs one command and watches it: wall time, CPU use and resident memory over time, of the
//! process and everything it starts (a pipeline's stages, a streaming job's programs).
//!
//! CPU time is read from `/proc` every [`INTERVAL`]: the command's own `utime + stime`, the
//! time of the children it has already waited for (`cutime + cstime`), and that of every live
//! descendant. The total over the run comes from `getrusage(RUSAGE_CHILDREN)` before and
//! after, which counts every process that was waited for, however short-lived. Memory is the
//! sum of the tree's resident sets at each sample; its peak is the largest sample (a process
//! living less than an interval can be missed, so the caller also takes the job's own
//! high-water mark where it reports one; the kernel's `ru_maxrss` is no help, as a child
//! started by `posix_spawn` inherits its parent's high-water mark).

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::resource::{getrusage, UsageWho};
use serde::Serialize;

/// Time between two samples.
pub(crate) const INTERVAL: Duration = Duration::from_millis(50);

/// Time from the start to the first sample.
const FIRST_SAMPLE: Duration = Duration::from_millis(10);

/// One sample of a running command.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Sample {
    /// Seconds since the command started.
    pub(crate) seconds: f64,
    /// Cores busy since the previous sample (CPU seconds over wall seconds).
    pub(crate) cores: f64,
    /// Resident bytes of the process tree.
    pub(crate) rss_bytes: u64,
}

/// What a finished command did.
#[derive(Debug)]
pub(crate) struct Watched {
    /// How it ended.
    pub(crate) status: ExitStatus,
    /// Wall seconds from start to exit.
    pub(crate) wall_seconds: f64,
    /// User plus system CPU seconds of the command and all its descendants.
    pub(crate) cpu_seconds: f64,
    /// The largest sampled resident size of the tree.
    pub(crate) peak_rss_bytes: u64,
    /// The samples, in time order (for a run shorter than the first sample, one at its end
    /// with its averages).
    pub(crate) samples: Vec<Sample>,
    /// Its standard error (the last 4 KiB), for the message of a failed run.
    pub(crate) stderr_tail: String,
}

/// Runs `command` (its standard output to `stdout_to` if given, else discarded; standard error
/// kept for messages) and samples it until it exits.
pub(crate) fn watch(mut command: Command, stdout_to: Option<&Path>) -> Result<Watched> {
    let stderr = tempfile::tempfile().context("cannot create a file for the command's errors")?;
    let stdout = match stdout_to {
        Some(path) => Stdio::from(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        ),
        None => Stdio::null(),
    };
    let mut stderr_reader = stderr
        .try_clone()
        .context("cannot reopen the errors' file")?;
    command
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::from(stderr));
    let ticks = clock_ticks();
    let before = children_cpu_seconds()?;
    let start = Instant::now();
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {:?}", command.get_program()))?;
    let pid = child.id();
    // A thread waits for the command, so that its end is seen at once rather than at the
    // next sample.
    let (ended, end) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let status = child.wait();
        let _ = ended.send((status, start.elapsed()));
    });
    let mut samples = Vec::new();
    let mut last = (0.0_f64, 0.0_f64);
    let (status, elapsed) = loop {
        // The first sample comes early, so that a short run has one.
        let wait = if samples.is_empty() {
            FIRST_SAMPLE
        } else {
            INTERVAL
        };
        match end.recv_timeout(wait) {
            Ok((status, elapsed)) => {
                break (status.context("cannot wait for the command")?, elapsed)
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                anyhow::bail!("lost the command's waiting thread")
            }
        }
        let (cpu_ticks, rss_bytes) = tree_usage(pid);
        let seconds = start.elapsed().as_secs_f64();
        let cpu = cpu_ticks as f64 / ticks;
        // A process reaped between two reads can make the tree's total step back: no negative
        // use is shown for it.
        let cores = ((cpu - last.1) / (seconds - last.0).max(1e-9)).max(0.0);
        samples.push(Sample {
            seconds,
            cores,
            rss_bytes,
        });
        last = (seconds, cpu.max(last.1));
    };
    let wall_seconds = elapsed.as_secs_f64();
    let cpu_seconds = (children_cpu_seconds()? - before).max(0.0);
    if samples.is_empty() {
        // A run that ended before the first sample: one point, of its average CPU use (its
        // memory is unknown: the kernel's `ru_maxrss` of a child started with posix_spawn
        // counts the parent's resident set as well).
        samples.push(Sample {
            seconds: wall_seconds,
            cores: cpu_seconds / wall_seconds.max(1e-9),
            rss_bytes: 0,
        });
    }
    let peak_rss_bytes = samples.iter().map(|s| s.rss_bytes).max().unwrap_or(0);
    let stderr_tail = {
        use std::io::{Read, Seek, SeekFrom};
        let length = stderr_reader.seek(SeekFrom::End(0)).unwrap_or(0);
        let _ = stderr_reader.seek(SeekFrom::Start(length.saturating_sub(4096)));
        let mut bytes = Vec::new();
        let _ = stderr_reader.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).trim().to_string()
    };
    Ok(Watched {
        status,
        wall_seconds,
        cpu_seconds,
        peak_rss_bytes,
        samples,
        stderr_tail,
    })
}

/// CPU seconds of the children this process has waited for, so far.
fn children_cpu_seconds() -> Result<f64> {
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).context("getrusage failed")?;
    let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    Ok(seconds(usage.user_time()) + seconds(usage.system_time()))
}

/// Clock ticks per second of `/proc`'s times.
fn clock_ticks() -> f64 {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK) {
        Ok(Some(ticks)) if ticks > 0 => ticks as f64,
        _ => 100.0,
    }
}

/// One process's line of `/proc/PID/stat`, the fields used here.
struct ProcStat {
    parent: u32,
    /// utime + stime + cutime + cstime, in clock ticks.
    cpu_ticks: u64,
    rss_pages: u64,
}

/// Parses `/proc/PID/stat`; `None` for a process gone or a line not understood.
fn read_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

/// The fields after the command name (which may hold spaces and parentheses: the last `)`
/// ends it): state is field 3, ppid 4, utime 14 ... cstime 17, rss 24 (`proc(5)`).
fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_ascii_whitespace().collect();
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    Some(ProcStat {
        parent: u32::try_from(field(4)?).ok()?,
        cpu_ticks: (14..=17).map(field).sum::<Option<u64>>()?,
        rss_pages: field(24)?,
    })
}

/// CPU ticks and resident bytes of `root` and its live descendants.
fn tree_usage(root: u32) -> (u64, u64) {
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE)
        .ok()
        .flatten()
        .and_then(|p| u64::try_from(p).ok())
        .unwrap_or(4096);
    let mut stats: HashMap<u32, ProcStat> = HashMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            if let Some(stat) = read_stat(pid) {
                stats.insert(pid, stat);
            }
        }
    }
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (&pid, stat) in &stats {
        children.entry(stat.parent).or_default().push(pid);
    }
    let (mut ticks, mut pages) = (0u64, 0u64);
    let mut stack = vec![root];
    while let Some(pid) = stack.pop() {
        if let Some(stat) = stats.get(&pid) {
            ticks += stat.cpu_ticks;
            pages += stat.rss_pages;
        }
        if let Some(kids) = children.get(&pid) {
            stack.extend(kids);
        }
    }
    (ticks, pages.saturating_mul(page))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_with_spaces_and_parentheses_in_the_name() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        // utime stime cutime cstime priority nice threads itrealvalue starttime vsize rss
        let line = "42 (a (b) c) S 7 42 42 0 -1 4194560 100 0 0 0 11 22 33 44 20 0 1 0 5 \
                    1000 77 18446744073709551615";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.parent, 7);
        assert_eq!(stat.cpu_ticks, 11 + 22 + 33 + 44);
        assert_eq!(stat.rss_pages, 77);
        assert!(parse_stat("42 (x) S").is_none());
    }

    #[test]
    fn a_busy_pipeline_is_seen_with_its_stages() {
        // Two stages burning CPU for about half a second: the samples see the shell's
        // children, and the total counts them.
        let mut command = Command::new("sh");
        command.args([
            "-c",
            "timeout 0.6 sh -c 'while :; do :; done' | timeout 0.6 sh -c 'while :; do :; done'; true",
        ]);
        let watched = watch(command, None).unwrap();
        assert!(watched.status.success());
        // Loose bounds: other tests may share the cores.
        assert!(watched.wall_seconds >= 0.5, "{watched:?}");
        assert!(watched.cpu_seconds >= 0.1, "{watched:?}");
        assert!(watched.samples.len() >= 5, "{watched:?}");
        assert!(
            watched.samples.iter().any(|s| s.cores > 0.1),
            "{:?}",
            watched.samples
        );
        assert!(watched.peak_rss_bytes > 0);
    }

    #[test]
    fn standard_error_is_kept_for_the_message() {
        let mut command = Command::new("sh");
        command.args(["-c", "echo 'it broke' >&2; exit 3"]);
        let watched = watch(command, None).unwrap();
        assert_eq!(watched.status.code(), Some(3));
        assert_eq!(watched.stderr_tail, "it broke");
    }
}
