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
}

impl Default for CounterLimits {
    fn default() -> CounterLimits {
        CounterLimits {
            counters: 120,
            groups: 50,
        }
    }
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
