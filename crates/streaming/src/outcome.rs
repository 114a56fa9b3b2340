//! How one run of a program ends: the rules that turn what was observed of it — its exit
//! status, how feeding it and reading it ended, whether the watchdog killed it, what it did
//! with its shared memory — into the task's result. No process, thread or I/O here: `process`
//! observes, [`outcome`] decides.

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use super::program::ProgramSpec;
use super::{program_error, ProgramError};
use sluice_api::ExecError;

/// Bytes of its input a program that exits with success may leave unread over a pipe: the
/// end of an input is often left unread by a program that has all it needs (`head`, a
/// reader that stops at a marker), and Hadoop forgives it too — it ignores the failure of
/// its last write, of up to its 128 KiB buffer, on top of what its 64 KiB pipe held.
pub(super) const UNREAD_ALLOWED: u64 = 256 * 1024;

/// Why the task killed the program's process group while the program was still wanted.
///
/// (Once the program has exited, the watchdog kills what is left of its group anyway; that is
/// no kill in this sense.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Kill {
    /// Not killed.
    None = 0,
    /// The job was cancelled (another task failed).
    Cancelled = 1,
    /// The program neither read, wrote nor reported for `mapreduce.task.timeout`.
    Timeout = 2,
    /// Reading the program's output failed, so the task stopped the program.
    ByTask = 3,
}

impl Kill {
    /// The kill stored as `self as u8`.
    pub(super) fn from_u8(value: u8) -> Kill {
        match value {
            1 => Kill::Cancelled,
            2 => Kill::Timeout,
            3 => Kill::ByTask,
            _ => Kill::None,
        }
    }
}

/// Reading the program's output failed.
#[derive(Debug)]
pub(super) struct DrainFailure {
    /// The reader's error (a full disk, output that breaks the `-io` framing, ...).
    pub(super) error: ExecError,
    /// Whether the program had already exited when the reader failed: then its own failure,
    /// if it failed, is the cause.
    pub(super) exited_first: bool,
}

/// What the program did with its shared memory (`stream.*=shm`), read after it was reaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ShmFacts {
    /// Whether it ever attached to the region.
    pub(super) attached: bool,
    /// Whether records it never consumed were left in its input ring.
    pub(super) unread_input: bool,
    /// Whether it closed its output ring (and the ring was read to its end); false without
    /// an output ring.
    pub(super) output_closed: bool,
}

/// What was observed of one run of a program, once it was reaped and every thread was done.
#[derive(Debug)]
pub(super) struct RunFacts {
    /// Whether, and why, the task killed the program.
    pub(super) kill: Kill,
    /// How reading its output ended.
    pub(super) drained: Result<(), DrainFailure>,
    /// How feeding its input ended: [`ProgramError::InputClosed`] when its stdin was closed
    /// while records remained.
    pub(super) fed: Result<(), ExecError>,
    /// Bytes written to its stdin pipe that nothing read (0 through a ring).
    pub(super) left_unread: u64,
    /// Its exit status, or why waiting for it failed.
    pub(super) exit: io::Result<ExitStatus>,
    /// Its use of the shared memory; `None` when the job uses none.
    pub(super) shm: Option<ShmFacts>,
    /// The last lines of its stderr, quoted in failures.
    pub(super) stderr_tail: Vec<String>,
    /// The counter limit it went past, if it did.
    pub(super) counters_exceeded: Option<String>,
}

/// The result of the task that ran `spec`, from what was observed of the run.
///
/// The first rule that applies decides:
///
/// 1. The job was cancelled: [`ExecError::Cancelled`], whatever else happened (the kill
///    explains a broken output, a failed feed and the signal).
/// 2. The watchdog killed the program for `mapreduce.task.timeout`:
///    [`ProgramError::TimedOut`] — not the SIGKILL it caused, nor what broke after it.
/// 3. The program reported more counters than the job allows:
///    [`ProgramError::TooManyCounters`], as Hadoop's task fails on its `LimitExceededException`.
/// 4. Reading the output failed: if the program had already exited by then and its exit is a
///    failure (rule 7), [`ProgramError::Failed`] with `"STATUS (its output was cut short:
///    ERROR)"` — a dying program explains its broken output; otherwise the reader's error as
///    it is (the task then killed the program, so its status tells nothing).
/// 5. Waiting for the program failed: [`ProgramError::Read`].
/// 6. With shared memory, the program never attached: if its exit is a failure (rule 7),
///    [`ProgramError::Failed`] with `"STATUS, before it attached to the shared memory"`
///    (retried like any failure); otherwise [`ProgramError::NotShm`] (not retried) — even when
///    its non-zero status is forgiven by `stream.non.zero.exit.is.failure=false`.
/// 7. Feeding failed other than by the program closing its input (unreadable input, a write
///    error other than a broken pipe): that error.
/// 8. The exit is a failure: [`ProgramError::Failed`] with `"exit status N"` or `"killed by
///    signal N (SIGNAME)"`. A non-zero status or a signal is a failure unless
///    `stream.non.zero.exit.is.failure` is false (Hadoop sees a signal as status 128 + N, so
///    that forgives signals too). This beats rule 9: a program that died while it was fed is
///    reported by its exit, not by the broken pipe that followed.
/// 9. The program stopped reading its input — more than [`UNREAD_ALLOWED`] bytes of it left
///    unread in its stdin pipe (or a broken pipe while it was fed), or records left unread in
///    its input ring: [`ProgramError::ExitedEarly`], even after a successful or forgiven exit
///    (Hadoop fails the task on the broken pipe too, as `stream.minRecWrittenToEnableSkip` is
///    unset by default).
/// 10. The program exited with success, its output goes through a ring and it did not close
///     it (its last writes may be lost): [`ProgramError::OutputNotClosed`].
/// 11. Otherwise the task succeeded.
///
/// A kill by the task itself ([`Kill::ByTask`]) only follows a failed read, which rule 4
/// reports.
pub(super) fn outcome(spec: &ProgramSpec, facts: RunFacts) -> Result<(), ExecError> {
    let RunFacts {
        kill,
        drained,
        fed,
        left_unread,
        exit,
        shm,
        stderr_tail,
        counters_exceeded,
    } = facts;
    let culprit = Culprit { spec, stderr_tail };
    // 1, 2: a kill by the watchdog explains whatever broke after it.
    match kill {
        Kill::Cancelled => return Err(ExecError::Cancelled),
        Kill::Timeout => return Err(culprit.timed_out()),
        Kill::None | Kill::ByTask => {}
    }
    // 3
    if let Some(limit) = counters_exceeded {
        return Err(culprit.too_many_counters(limit));
    }
    // 4: a program that failed on its own is the cause; its output broke because of it.
    if let Err(DrainFailure {
        error,
        exited_first,
    }) = drained
    {
        if let (true, Ok(exit)) = (exited_first, &exit) {
            if let Some(status) = failure(spec, *exit) {
                let chain = error.chain();
                return Err(culprit.failed(format!("{status} (its output was cut short: {chain})")));
            }
        }
        return Err(error);
    }
    // 5
    let exit = exit.map_err(ProgramError::Read)?;
    // 6: a program that failed before attaching (killed, a crash at start-up) failed like any
    // program, and another attempt may succeed.
    if shm.is_some_and(|s| !s.attached) {
        return Err(match failure(spec, exit) {
            Some(status) => {
                culprit.failed(format!("{status}, before it attached to the shared memory"))
            }
            None => culprit.not_shm(exit),
        });
    }
    // 7: a pipe tells of unread input by what was left in it (or a failed write); a ring, by
    // what the program consumed.
    let input_closed = match fed {
        Ok(()) => left_unread > UNREAD_ALLOWED || shm.is_some_and(|s| s.unread_input),
        Err(e) if matches!(program_error(&e), Some(ProgramError::InputClosed)) => true,
        Err(e) => return Err(e),
    };
    // 8
    if let Some(status) = failure(spec, exit) {
        return Err(culprit.failed(status));
    }
    // 9
    if input_closed {
        return Err(culprit.exited_early(exit));
    }
    // 10: over a pipe, an exit ends the output; over a ring, only closing it does.
    let ring_left_open = shm.is_some_and(|s| !s.output_closed);
    if exit.success() && spec.shm.output && ring_left_open {
        return Err(culprit.output_not_closed());
    }
    Ok(())
}

/// The program to blame for a failure: each error names its command and quotes its stderr.
struct Culprit<'s> {
    spec: &'s ProgramSpec,
    stderr_tail: Vec<String>,
}

impl Culprit<'_> {
    fn failed(self, status: String) -> ExecError {
        ProgramError::Failed {
            command: self.spec.command.clone(),
            status,
            stderr_tail: self.stderr_tail,
            log: self.spec.log.clone(),
        }
        .into()
    }

    fn too_many_counters(self, limit: String) -> ExecError {
        ProgramError::TooManyCounters {
            command: self.spec.command.clone(),
            limit,
            stderr_tail: self.stderr_tail,
            log: self.spec.log.clone(),
        }
        .into()
    }

    fn timed_out(self) -> ExecError {
        ProgramError::TimedOut {
            command: self.spec.command.clone(),
            after: self.spec.timeout.unwrap_or_default(),
            stderr_tail: self.stderr_tail,
            log: self.spec.log.clone(),
        }
        .into()
    }

    fn not_shm(self, exit: ExitStatus) -> ExecError {
        ProgramError::NotShm {
            command: self.spec.command.clone(),
            status: describe(exit),
            stderr_tail: self.stderr_tail,
            log: self.spec.log.clone(),
        }
        .into()
    }

    fn exited_early(self, exit: ExitStatus) -> ExecError {
        ProgramError::ExitedEarly {
            command: self.spec.command.clone(),
            status: describe(exit),
            stderr_tail: self.stderr_tail,
            log: self.spec.log.clone(),
        }
        .into()
    }

    fn output_not_closed(self) -> ExecError {
        ProgramError::OutputNotClosed {
            command: self.spec.command.clone(),
            stderr_tail: self.stderr_tail,
            log: self.spec.log.clone(),
        }
        .into()
    }
}

/// The description of `exit` if it fails the task: a non-zero status or a signal, unless
/// `stream.non.zero.exit.is.failure` is false.
fn failure(spec: &ProgramSpec, exit: ExitStatus) -> Option<String> {
    let failed = !exit.success() && spec.non_zero_is_failure;
    failed.then(|| describe(exit))
}

/// "exit status 3" or "killed by signal 9 (SIGKILL)".
pub(super) fn describe(exit: ExitStatus) -> String {
    match (exit.code(), exit.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => match nix::sys::signal::Signal::try_from(signal) {
            Ok(name) => format!("killed by signal {signal} ({name})"),
            Err(_) => format!("killed by signal {signal}"),
        },
        _ => exit.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::program::{CounterLimits, ShmSides};

    /// A mapper `cmd` that fails on a non-zero exit, without shared memory or timeout.
    fn spec() -> ProgramSpec {
        ProgramSpec {
            command: "cmd".into(),
            program: PathBuf::from("/bin/cmd"),
            args: Vec::new(),
            // The rules never look at the directory.
            work_dir: PathBuf::new(),
            env: Vec::new(),
            timeout: None,
            join_delay: None,
            non_zero_is_failure: true,
            log: PathBuf::from("/logs/stderr"),
            reporter_prefix: "reporter:".into(),
            counter_limits: CounterLimits::default(),
            shm: ShmSides {
                input: false,
                output: false,
                capacity: 0,
            },
        }
    }

    /// [`spec`] with both directions through shared memory.
    fn shm_spec() -> ProgramSpec {
        ProgramSpec {
            shm: ShmSides {
                input: true,
                output: true,
                capacity: 1 << 20,
            },
            ..spec()
        }
    }

    /// A run that went well: exit status 0, everything fed and read, nothing on stderr.
    fn clean() -> RunFacts {
        RunFacts {
            kill: Kill::None,
            drained: Ok(()),
            fed: Ok(()),
            left_unread: 0,
            exit: Ok(exited(0)),
            shm: None,
            stderr_tail: Vec::new(),
            counters_exceeded: None,
        }
    }

    /// [`clean`] for a program that attached, consumed its input and closed its output ring.
    fn clean_shm() -> RunFacts {
        RunFacts {
            shm: Some(ShmFacts {
                attached: true,
                unread_input: false,
                output_closed: true,
            }),
            ..clean()
        }
    }

    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    fn killed(signal: i32) -> ExitStatus {
        ExitStatus::from_raw(signal)
    }

    fn input_closed() -> Result<(), ExecError> {
        Err(ProgramError::InputClosed.into())
    }

    /// A framing error of the kind `drain` reports for output cut mid-record.
    fn bad_output(exited_first: bool) -> Result<(), DrainFailure> {
        Err(DrainFailure {
            error: ProgramError::BadOutput("a typed bytes record ends early".into()).into(),
            exited_first,
        })
    }

    /// The message of a failed outcome.
    fn message(spec: &ProgramSpec, facts: RunFacts) -> String {
        match outcome(spec, facts) {
            Ok(()) => panic!("the run should have failed"),
            Err(e) => e.chain(),
        }
    }

    /// The `ProgramError` of a failed outcome.
    fn program_error(spec: &ProgramSpec, facts: RunFacts) -> ProgramError {
        match outcome(spec, facts) {
            Err(ExecError::Client(e)) => match e.into_inner().downcast::<ProgramError>() {
                Ok(e) => *e,
                Err(other) => panic!("expected a program error, got {other:?}"),
            },
            other => panic!("expected a program error, got {other:?}"),
        }
    }

    const NOTHING: &str = "; it wrote nothing to stderr";

    #[test]
    fn a_clean_exit_after_all_input_and_output_succeeds() {
        assert!(outcome(&spec(), clean()).is_ok());
        assert!(outcome(&shm_spec(), clean_shm()).is_ok());
    }

    #[test]
    fn a_non_zero_exit_fails_the_task_quoting_its_stderr() {
        let facts = RunFacts {
            exit: Ok(exited(3)),
            stderr_tail: vec!["Traceback".into(), "KeyError: 'x'".into()],
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            "'cmd' failed with exit status 3; last lines of its stderr:\n    Traceback\n    \
             KeyError: 'x'\n  (all of its stderr: /logs/stderr)"
        );
    }

    #[test]
    fn a_signal_fails_the_task_with_its_name() {
        let facts = RunFacts {
            exit: Ok(killed(11)),
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            format!("'cmd' failed with killed by signal 11 (SIGSEGV){NOTHING}")
        );
    }

    /// `stream.non.zero.exit.is.failure=false`: Hadoop logs the status and the task succeeds;
    /// Java reports a signal as status 128 + N, so a signal is forgiven as well.
    #[test]
    fn non_zero_exits_and_signals_are_forgiven_when_configured() {
        let forgiving = ProgramSpec {
            non_zero_is_failure: false,
            ..spec()
        };
        for exit in [exited(1), exited(255), killed(9)] {
            let facts = RunFacts {
                exit: Ok(exit),
                ..clean()
            };
            assert!(outcome(&forgiving, facts).is_ok(), "{exit}");
        }
    }

    #[test]
    fn a_cancelled_job_beats_every_other_fact() {
        let facts = RunFacts {
            kill: Kill::Cancelled,
            drained: bad_output(true),
            fed: input_closed(),
            exit: Ok(killed(9)),
            ..clean()
        };
        assert!(matches!(outcome(&spec(), facts), Err(ExecError::Cancelled)));
        let facts = RunFacts {
            kill: Kill::Cancelled,
            ..clean_shm()
        };
        assert!(matches!(
            outcome(&shm_spec(), facts),
            Err(ExecError::Cancelled)
        ));
    }

    /// The watchdog's SIGKILL, the output it cut and the feed it broke are all its doing.
    #[test]
    fn a_timeout_beats_the_kill_it_caused_and_what_broke_after_it() {
        let spec = ProgramSpec {
            timeout: Some(Duration::from_millis(1500)),
            join_delay: None,
            ..spec()
        };
        let facts = RunFacts {
            kill: Kill::Timeout,
            drained: bad_output(true),
            fed: input_closed(),
            exit: Ok(killed(9)),
            ..clean()
        };
        assert_eq!(
            message(&spec, facts),
            format!(
                "'cmd' was killed after 1.5 s without reading input, writing output or reporting \
                 status (mapreduce.task.timeout){NOTHING}"
            )
        );
    }

    /// A broken output from a program that was still running is the reader's error: the task
    /// then killed the program, so its SIGKILL says nothing.
    #[test]
    fn a_read_error_while_the_program_runs_is_reported_as_it_is() {
        let facts = RunFacts {
            kill: Kill::ByTask,
            drained: bad_output(false),
            exit: Ok(killed(9)),
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            "the program's output is malformed: a typed bytes record ends early"
        );
    }

    /// A program that crashed mid-record explains its broken output.
    #[test]
    fn a_read_error_after_the_program_failed_is_the_program_failure() {
        let facts = RunFacts {
            kill: Kill::ByTask,
            drained: bad_output(true),
            exit: Ok(killed(6)),
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            format!(
                "'cmd' failed with killed by signal 6 (SIGABRT) (its output was cut short: the \
                 program's output is malformed: a typed bytes record ends early){NOTHING}"
            )
        );
    }

    /// Only a failure takes the blame: after a clean (or forgiven) exit the output itself is
    /// wrong.
    #[test]
    fn a_read_error_after_a_clean_or_forgiven_exit_is_the_read_error() {
        let facts = RunFacts {
            drained: bad_output(true),
            ..clean()
        };
        assert!(matches!(
            program_error(&spec(), facts),
            ProgramError::BadOutput(_)
        ));
        let forgiving = ProgramSpec {
            non_zero_is_failure: false,
            ..spec()
        };
        let facts = RunFacts {
            drained: bad_output(true),
            exit: Ok(exited(2)),
            ..clean()
        };
        assert!(matches!(
            program_error(&forgiving, facts),
            ProgramError::BadOutput(_)
        ));
    }

    #[test]
    fn a_read_error_beats_feeding_errors_and_shm_faults() {
        let facts = RunFacts {
            drained: bad_output(false),
            fed: Err(ExecError::user("cannot read split")),
            shm: Some(ShmFacts {
                attached: false,
                unread_input: true,
                output_closed: false,
            }),
            ..clean()
        };
        assert!(matches!(
            program_error(&shm_spec(), facts),
            ProgramError::BadOutput(_)
        ));
    }

    #[test]
    fn a_failed_wait_is_a_read_error() {
        let facts = RunFacts {
            exit: Err(io::Error::other("ECHILD")),
            fed: input_closed(),
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            "reading the program's output failed: ECHILD"
        );
    }

    /// A feed that failed on its own side (here the input could not be read) is the cause,
    /// whatever the program did once its input ended.
    #[test]
    fn a_feeding_error_beats_the_program_exit() {
        let facts = RunFacts {
            fed: Err(ExecError::user(
                "corpus/a.txt: unexpected end of gzip stream",
            )),
            exit: Ok(exited(1)),
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            "corpus/a.txt: unexpected end of gzip stream"
        );
        let facts = RunFacts {
            fed: Err(ProgramError::Write(io::Error::other("EIO")).into()),
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            "writing to the program failed: EIO"
        );
    }

    /// `head -n 1` exits 0 after one line: the records it never read would be lost, so the
    /// task fails, as Hadoop's does on the broken pipe.
    #[test]
    fn a_program_that_closed_its_input_early_fails_the_task() {
        let spec = ProgramSpec {
            command: "head -n 1".into(),
            ..spec()
        };
        let facts = RunFacts {
            fed: input_closed(),
            ..clean()
        };
        assert_eq!(
            message(&spec, facts),
            format!("'head -n 1' exited (exit status 0) before reading all of its input{NOTHING}")
        );
    }

    /// Over a pipe, what a successful program left unread is forgiven up to
    /// [`UNREAD_ALLOWED`] bytes (the end of an input a `head` had no need for), and fails the
    /// task beyond, even after a forgiven exit; a failed exit is reported as the failure.
    #[test]
    fn input_left_in_the_pipe_counts_beyond_the_allowance() {
        let left = |left_unread| RunFacts {
            left_unread,
            ..clean()
        };
        assert!(outcome(&spec(), left(UNREAD_ALLOWED)).is_ok());
        assert_eq!(
            message(&spec(), left(UNREAD_ALLOWED + 1)),
            format!("'cmd' exited (exit status 0) before reading all of its input{NOTHING}")
        );
        let forgiving = ProgramSpec {
            non_zero_is_failure: false,
            ..spec()
        };
        let forgiven = RunFacts {
            exit: Ok(exited(3)),
            ..left(UNREAD_ALLOWED + 1)
        };
        assert_eq!(
            message(&forgiving, forgiven),
            format!("'cmd' exited (exit status 3) before reading all of its input{NOTHING}")
        );
        let failed = RunFacts {
            exit: Ok(exited(3)),
            ..left(1 << 20)
        };
        assert_eq!(
            message(&spec(), failed),
            format!("'cmd' failed with exit status 3{NOTHING}")
        );
    }

    /// Counters past the limit fail the attempt whatever the program did, naming the limit.
    #[test]
    fn too_many_counters_fail_the_task() {
        let facts = RunFacts {
            counters_exceeded: Some("more than 120 counters (mapreduce.job.counters.max)".into()),
            ..clean()
        };
        let text = message(&spec(), facts);
        assert!(
            text.starts_with("'cmd' reported more than 120 counters (mapreduce.job.counters.max)"),
            "{text}"
        );
    }

    /// The broken pipe follows from the exit: the exit is what is reported.
    #[test]
    fn a_failed_exit_beats_the_input_it_left_unread() {
        let facts = RunFacts {
            fed: input_closed(),
            exit: Ok(exited(2)),
            ..clean()
        };
        assert_eq!(
            message(&spec(), facts),
            format!("'cmd' failed with exit status 2{NOTHING}")
        );
    }

    /// `stream.non.zero.exit.is.failure=false` forgives the status, not the lost records.
    #[test]
    fn unread_input_fails_even_after_a_forgiven_exit() {
        let forgiving = ProgramSpec {
            non_zero_is_failure: false,
            ..spec()
        };
        let facts = RunFacts {
            fed: input_closed(),
            exit: Ok(exited(1)),
            ..clean()
        };
        assert_eq!(
            message(&forgiving, facts),
            format!("'cmd' exited (exit status 1) before reading all of its input{NOTHING}")
        );
    }

    /// Over a ring no write fails: what the program left unconsumed tells instead.
    #[test]
    fn input_left_in_the_ring_is_unread_input() {
        let facts = RunFacts {
            shm: Some(ShmFacts {
                unread_input: true,
                ..clean_shm().shm.unwrap_or_else(|| unreachable!())
            }),
            ..clean_shm()
        };
        assert!(matches!(
            program_error(&shm_spec(), facts),
            ProgramError::ExitedEarly { .. }
        ));
    }

    /// A program that never attached does not speak the protocol: another attempt would not
    /// help, so the error is not retried.
    #[test]
    fn a_clean_exit_without_attaching_is_not_shm() {
        let facts = RunFacts {
            shm: Some(ShmFacts {
                attached: false,
                unread_input: true,
                output_closed: false,
            }),
            ..clean()
        };
        let error = outcome(&shm_spec(), facts).expect_err("not shm");
        assert!(!error.is_retryable());
        assert_eq!(
            error.to_string(),
            format!(
                "'cmd' exited (exit status 0) without attaching to the shared memory: it does \
                 not speak the sluice shm protocol; link it with a sluice shm client library \
                 (clients/c, clients/python, the sluice-shm crate) or drop the shm settings (-io \
                 shm, stream.*=shm){NOTHING}"
            )
        );
    }

    /// Killed or crashed before attaching: a failure like any other, and retried.
    #[test]
    fn a_failure_before_attaching_is_a_retryable_failure() {
        let facts = RunFacts {
            exit: Ok(killed(9)),
            fed: input_closed(),
            shm: Some(ShmFacts {
                attached: false,
                unread_input: true,
                output_closed: false,
            }),
            ..clean()
        };
        let error = outcome(&shm_spec(), facts).expect_err("failed");
        assert!(error.is_retryable());
        assert_eq!(
            error.to_string(),
            format!(
                "'cmd' failed with killed by signal 9 (SIGKILL), before it attached to the \
                 shared memory{NOTHING}"
            )
        );
    }

    /// Today's rule: with `stream.non.zero.exit.is.failure=false` a crash before attaching is
    /// not a failure, so it is taken for a program without the protocol.
    #[test]
    fn a_forgiven_failure_before_attaching_is_not_shm() {
        let forgiving = ProgramSpec {
            non_zero_is_failure: false,
            ..shm_spec()
        };
        let facts = RunFacts {
            exit: Ok(killed(11)),
            shm: Some(ShmFacts {
                attached: false,
                unread_input: false,
                output_closed: false,
            }),
            ..clean()
        };
        assert!(matches!(
            program_error(&forgiving, facts),
            ProgramError::NotShm { ref status, .. } if status == "killed by signal 11 (SIGSEGV)"
        ));
    }

    #[test]
    fn not_attaching_beats_a_feeding_error() {
        let facts = RunFacts {
            fed: Err(ExecError::user("cannot read split")),
            shm: Some(ShmFacts {
                attached: false,
                unread_input: false,
                output_closed: false,
            }),
            ..clean()
        };
        assert!(matches!(
            program_error(&shm_spec(), facts),
            ProgramError::NotShm { .. }
        ));
    }

    #[test]
    fn a_clean_exit_without_closing_the_output_ring_fails() {
        let facts = RunFacts {
            shm: Some(ShmFacts {
                output_closed: false,
                ..clean_shm().shm.unwrap_or_else(|| unreachable!())
            }),
            ..clean_shm()
        };
        assert_eq!(
            message(&shm_spec(), facts),
            format!(
                "'cmd' exited without closing its shared-memory output (its client library \
                 closes it at the end: sluice_shm_close in C, close() or the end of the \
                 interpreter in Python, Channel::close or drop in Rust); some of its output may \
                 be lost{NOTHING}"
            )
        );
    }

    /// The output ring's end is only checked after a success, after unread input, and only
    /// when the output goes through a ring.
    #[test]
    fn an_unclosed_output_ring_comes_last() {
        let unclosed = || ShmFacts {
            attached: true,
            unread_input: false,
            output_closed: false,
        };
        // Unread input is reported first.
        let facts = RunFacts {
            shm: Some(ShmFacts {
                unread_input: true,
                ..unclosed()
            }),
            ..clean()
        };
        assert!(matches!(
            program_error(&shm_spec(), facts),
            ProgramError::ExitedEarly { .. }
        ));
        // A forgiven failure is not checked for it.
        let forgiving = ProgramSpec {
            non_zero_is_failure: false,
            ..shm_spec()
        };
        let facts = RunFacts {
            exit: Ok(exited(4)),
            shm: Some(unclosed()),
            ..clean()
        };
        assert!(outcome(&forgiving, facts).is_ok());
        // Output through the pipe (only the input through a ring): there is no ring to close.
        let input_only = ProgramSpec {
            shm: ShmSides {
                output: false,
                ..shm_spec().shm
            },
            ..spec()
        };
        let facts = RunFacts {
            shm: Some(unclosed()),
            ..clean()
        };
        assert!(outcome(&input_only, facts).is_ok());
    }

    #[test]
    fn exits_are_described_as_statuses_and_named_signals() {
        assert_eq!(describe(exited(0)), "exit status 0");
        assert_eq!(describe(exited(127)), "exit status 127");
        assert_eq!(describe(killed(9)), "killed by signal 9 (SIGKILL)");
        assert_eq!(describe(killed(15)), "killed by signal 15 (SIGTERM)");
        // Real-time signals have no name.
        assert_eq!(describe(killed(40)), "killed by signal 40");
    }

    #[test]
    fn kills_round_trip_through_their_byte() {
        for kill in [Kill::None, Kill::Cancelled, Kill::Timeout, Kill::ByTask] {
            assert_eq!(Kill::from_u8(kill as u8), kill);
        }
        assert_eq!(Kill::from_u8(200), Kill::None);
    }
}
