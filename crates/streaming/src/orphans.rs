//! Programs that die with the process that started them.
//!
//! A task kills its program's process group whenever it is done with it, but a process killed
//! outright (`SIGKILL`, the out-of-memory killer) runs no code: its programs — and whatever
//! they started in their groups — would run on, holding memory and files, until their pipes
//! close, or forever for a program that does not read them. So a process that runs programs
//! starts a **reaper** ([`start_reaper`]): a small process of its own (`sluice __reap`),
//! whose standard input is a pipe from this process. Each program's group is announced on the
//! pipe when it is started, and withdrawn just before the program is reaped (while its pid,
//! which is the group's id, is still reserved). When the process ends in any way the pipe
//! closes, and the reaper kills every group still announced ([`serve_reaper`]).
//!
//! `PR_SET_PDEATHSIG` was not used: it reaches only the program, not the processes it started,
//! and setting it needs code in the child before `exec`, which turns the `posix_spawn` that
//! starts programs into a full `fork` (see `sluice_shm::spawn`).
//!
//! A group is known to the reaper only once announced, and a process can be killed between
//! starting a program and announcing it (a start takes about a millisecond, until the program
//! is executed). So every program also gets [`TOKEN_VAR`] in its environment, a value unique
//! to the process that started it, and the reaper, once it has killed the groups, kills every
//! process whose environment holds that value, a few times over two seconds (a program being
//! started shows its environment once it is executed). That also reaches what a program
//! started outside its group, as long as it kept its environment.

use std::collections::BTreeSet;
use std::io::{self, BufRead, Write};
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The environment variable whose value marks the programs of one process.
pub const TOKEN_VAR: &str = "SLUICE_REAPER_TOKEN";

/// The reaper's pipe, once started; `None` without a reaper (or after it went away).
static REAPER: Mutex<Option<ChildStdin>> = Mutex::new(None);

/// The value of [`TOKEN_VAR`] in this process's programs, once a reaper is started.
static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// When the reaper looks for marked processes after the pipe closed, from then on.
const SWEEPS: [Duration; 4] = [
    Duration::ZERO,
    Duration::from_millis(100),
    Duration::from_millis(500),
    Duration::from_secs(2),
];

/// Starts `binary __reap` as this process's reaper: from now on, the programs this process
/// starts are killed, with their process groups, when it ends. `binary` must be a `sluice`
/// binary whose `__reap` command calls [`serve_reaper`] on its standard input.
///
/// The reaper runs in a process group of its own, so that a Ctrl-C in a terminal (this
/// process's to handle) does not end it first.
///
/// # Errors
/// The reaper cannot be started.
pub fn start_reaper(binary: &Path) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let token = TOKEN.get_or_init(|| format!("{}.{nanos}", std::process::id()));
    let mut child = Command::new(binary)
        .arg("__reap")
        .arg(std::process::id().to_string())
        .arg(token)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .process_group(0)
        .spawn()?;
    let pipe = child
        .stdin
        .take()
        .ok_or_else(|| io::Error::other("the reaper's stdin is not a pipe"))?;
    // Not waited for: it outlives this process by design, and is reaped by whoever inherits it.
    drop(child);
    *lock() = Some(pipe);
    Ok(())
}

/// The `(name, value)` to put in a program's environment, once a reaper is started.
pub(crate) fn token() -> Option<(&'static str, &'static str)> {
    TOKEN.get().map(|t| (TOKEN_VAR, t.as_str()))
}

/// Tells the reaper that group `pgid` is one of this process's programs (`true`) or is about
/// to be reaped (`false`). Without a reaper, nothing.
pub(crate) fn announce(pgid: i32, running: bool) {
    let mut reaper = lock();
    let Some(pipe) = reaper.as_mut() else {
        return;
    };
    let sign = if running { '+' } else { '-' };
    // One short line per write: well under `PIPE_BUF`, so it arrives whole.
    if pipe
        .write_all(format!("{sign}{pgid}\n").as_bytes())
        .is_err()
    {
        // The reaper is gone; nobody listens any more.
        *reaper = None;
    }
}

/// Lets the reaper go as this process ends as it means to (every program reaped): it then
/// exits at once, rather than looking for programs being started for two seconds while it
/// holds this process's standard error open (a caller reading that to its end would wait).
pub fn stop_reaper() {
    if let Some(mut pipe) = lock().take() {
        let _ = pipe.write_all(b"=\n");
    }
}

fn lock() -> std::sync::MutexGuard<'static, Option<ChildStdin>> {
    REAPER.lock().unwrap_or_else(|p| p.into_inner())
}

/// The reaper's work: reads `+PGID` and `-PGID` lines from `input` until it ends, then kills
/// (`SIGKILL`) every group announced and not withdrawn, then, for two seconds, the processes
/// whose environment has [`TOKEN_VAR`] set to `token`. Returns how many groups and processes
/// it signalled (those already gone not counted). Lines it does not understand are skipped.
pub fn serve_reaper(input: impl BufRead, token: &str) -> usize {
    let (mut killed, ended) = kill_groups(input);
    if ended {
        // The process ended as it meant to ([`stop_reaper`]): no program is being started.
        return killed;
    }
    let mark = format!("{TOKEN_VAR}={token}").into_bytes();
    let start = Instant::now();
    for at in SWEEPS {
        std::thread::sleep(at.saturating_sub(start.elapsed()));
        killed += kill_marked(&mark);
    }
    killed
}

/// Kills every process (but this one) whose environment holds `mark` (`NAME=VALUE`); returns
/// how many it signalled.
fn kill_marked(mark: &[u8]) -> usize {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut killed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid <= 1 || u32::try_from(pid).is_ok_and(|p| p == me) {
            continue;
        }
        // Unreadable for another user's processes, which are not ours anyway.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ.split(|b| *b == 0).any(|var| var == mark)
            && nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
        {
            killed += 1;
        }
    }
    killed
}

/// Reads the announcements to their end, then kills the groups still announced; returns how
/// many it signalled, and whether the process said it ended as it meant to (a line `=`).
fn kill_groups(input: impl BufRead) -> (usize, bool) {
    let mut groups = BTreeSet::new();
    let mut ended = false;
    for line in input.split(b'\n') {
        let Ok(line) = line else { break };
        ended |= line == b"=";
        if let Some((running, pgid)) = parse(&line) {
            if running {
                groups.insert(pgid);
            } else {
                groups.remove(&pgid);
            }
        }
    }
    let killed = groups
        .into_iter()
        .filter(|pgid| {
            nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(*pgid),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
        })
        .count();
    (killed, ended)
}

/// `+PGID` or `-PGID`: whether the group runs, and its id; `None` for anything else (ids below
/// 2 included: signalling group 0 or 1 would reach the reaper's own group, or every process).
fn parse(line: &[u8]) -> Option<(bool, i32)> {
    let (running, digits) = match line.split_first()? {
        (b'+', rest) => (true, rest),
        (b'-', rest) => (false, rest),
        _ => return None,
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let pgid: i32 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    (pgid > 1).then_some((running, pgid))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn a_process_that_ends_as_meant_lets_the_reaper_go_at_once() {
        let started = Instant::now();
        assert_eq!(serve_reaper(&b"+4000000\n-4000000\n=\n"[..], "none"), 0);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn only_well_formed_group_ids_are_taken() {
        assert_eq!(parse(b"+1234"), Some((true, 1234)));
        assert_eq!(parse(b"-1234"), Some((false, 1234)));
        for bad in [
            &b""[..],
            b"+",
            b"1234",
            b"+-5",
            b"+ 5",
            b"+0",
            b"+1",
            b"+99999999999",
            b"*5",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    /// A process never announced, but marked with the token, is killed; one with another
    /// token is not.
    #[test]
    fn marked_processes_are_killed_without_an_announcement() {
        let token = format!("test.{}", std::process::id());
        let start = |value: &str| {
            std::process::Command::new("sleep")
                .arg("600")
                .env(TOKEN_VAR, value)
                .spawn()
                .expect("sleep")
        };
        let mut marked = start(&token);
        let mut other = start(&format!("{token}.other"));
        // Until `sleep` is executed, its environment is this process's.
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(serve_reaper(&b""[..], &token), 1);
        let status = marked.wait().expect("wait");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
        assert!(other.try_wait().expect("try_wait").is_none());
        let _ = other.kill();
        let _ = other.wait();
    }

    /// Whether `pid` is gone (or a zombie), within a few seconds.
    fn dies(pid: u32) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The state follows the command's closing parenthesis.
            let state = stat.rsplit_once(") ").map(|(_, rest)| &rest[..1]);
            if matches!(state, None | Some("Z")) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The groups still announced at the end are killed, every process in them; a group
    /// withdrawn is left alone.
    #[test]
    fn the_groups_still_announced_are_killed_at_the_end() {
        let start = || {
            // A shell whose own child is in its group, as a program's would be.
            std::process::Command::new("sh")
                .args(["-c", "sleep 600 & echo $!; wait"])
                .stdout(Stdio::piped())
                .process_group(0)
                .spawn()
                .expect("sh")
        };
        let grandchild = |child: &mut std::process::Child| -> u32 {
            let mut line = String::new();
            let stdout = child.stdout.as_mut().expect("stdout");
            io::BufReader::new(stdout)
                .read_line(&mut line)
                .expect("pid");
            line.trim().parse().expect("a pid")
        };
        let mut killed = start();
        let killed_grandchild = grandchild(&mut killed);
        let mut kept = start();
        let kept_grandchild = grandchild(&mut kept);
        let input = format!("+{}\n+{}\nnoise\n-{}\n", killed.id(), kept.id(), kept.id());
        assert_eq!(kill_groups(input.as_bytes()), (1, false));
        let _ = killed.wait();
        assert!(dies(killed_grandchild), "the program's own child lives on");
        assert!(
            !dies_quickly(kept_grandchild),
            "a withdrawn group was killed"
        );
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(i32::try_from(kept.id()).expect("pid")),
            nix::sys::signal::Signal::SIGKILL,
        );
        let _ = kept.wait();
    }

    /// Whether `pid` is gone within a moment (for processes expected to live).
    fn dies_quickly(pid: u32) -> bool {
        std::thread::sleep(Duration::from_millis(200));
        !Path::new(&format!("/proc/{pid}")).exists()
    }
}
