//! What one run of a streaming program is: the command, its environment and settings, and
//! which of its directions go through shared memory. `process` runs it; `outcome` judges it.

use std::path::PathBuf;
use std::time::Duration;

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
    /// How long to wait, after a successful exit, for the end of its output
    /// (`stream.joindelay.milli`; `None`: as long as it takes).
    pub(super) join_delay: Option<Duration>,
    /// Whether a non-zero exit status fails the task.
    pub(super) non_zero_is_failure: bool,
    /// Where its stderr goes (apart from `reporter:` lines).
    pub(super) log: PathBuf,
    /// What starts a counter or status line on stderr (`stream.stderr.reporter.prefix`).
    pub(super) reporter_prefix: String,
    /// How many counters it may report.
    pub(super) counter_limits: CounterLimits,
    /// Which directions go through shared memory instead of pipes.
    pub(super) shm: ShmSides,
}

/// How many distinct counters, and counter groups, one run of a program may report, as Hadoop
/// limits a task's (`mapreduce.job.counters.max`, 120; `mapreduce.job.counters.groups.max`,
/// 50): a program that makes a counter of every key it sees fails, rather than fill the
/// task's memory and the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CounterLimits {
    /// Counters, in all groups.
    pub(super) counters: usize,
    /// Groups.
    pub(super) groups: usize,
    /// A group name's length (in Java's UTF-16 units): a longer one is cut to it.
    pub(super) group_name: usize,
    /// A counter name's length, the same way.
    pub(super) counter_name: usize,
}

impl Default for CounterLimits {
    fn default() -> CounterLimits {
        CounterLimits {
            counters: 120,
            groups: 50,
            group_name: 128,
            counter_name: 64,
        }
    }
}

/// `name` as Hadoop's `Limits.filterName` keeps a counter's or group's name: whole up to
/// `limit` UTF-16 units, else cut to its first `limit - 1` (`name.substring(0, limit - 1)`,
/// one fewer than the limit, as Hadoop cuts it); a character that would be cut in half (one
/// outside the Basic Multilingual Plane) is left out whole.
pub(super) fn cut_name(name: String, limit: usize) -> String {
    let units: usize = name.chars().map(char::len_utf16).sum();
    if units <= limit {
        return name;
    }
    let keep = limit.saturating_sub(1);
    let mut kept = 0;
    for (at, c) in name.char_indices() {
        kept += c.len_utf16();
        if kept > keep {
            return name[..at].to_string();
        }
    }
    name
}

/// Which of a program's directions go through a shared-memory ring, and the rings' size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ShmSides {
    /// The records sent to the program.
    pub(super) input: bool,
    /// What the program writes.
    pub(super) output: bool,
    /// Capacity of each ring in bytes (`sluice.shm.ring.size`).
    pub(super) capacity: u64,
}

impl ShmSides {
    pub(super) fn any(&self) -> bool {
        self.input || self.output
    }

    /// Bytes of shared memory a running program holds: one ring per shared direction.
    pub(super) fn ring_bytes(&self) -> u64 {
        (u64::from(self.input) + u64::from(self.output)) * self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cut_in_java_characters() {
        // Up to the limit, whole; past it, one fewer than the limit (Hadoop's substring).
        assert_eq!(cut_name("abcd".into(), 4), "abcd");
        assert_eq!(cut_name("abcdef".into(), 4), "abc");
        assert_eq!(cut_name("abc".into(), 4), "abc");
        // é is one UTF-16 unit, as in Java; 😀 two, never cut in half.
        assert_eq!(cut_name("ééééé".into(), 4), "ééé");
        assert_eq!(cut_name("ab😀cd".into(), 4), "ab");
        assert_eq!(cut_name("ab😀cd".into(), 5), "ab😀");
    }
}
