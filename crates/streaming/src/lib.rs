//! `sluice streaming`: Hadoop Streaming jobs — external programs as mapper, combiner and
//! reducer — run natively with Hadoop's options, keys and output.
//!
//! A client of the engine, like `sluice-jobs`: it builds a `sluice_api::Job` whose mappers and
//! reducers run programs, and the engine knows nothing of it (a program's failure travels
//! through the engine as an `ExecError::Client`). It uses `sluice-shm` for `-io shm`.
//!
//! ```text
//!  argv ─► options::parse_args ─► StreamingArgs ─► job::build ─► Job + JobConfig ─► run_job
//!                                                                   │
//!   map task:    split lines ─► RecordWriter ─► [program] ─► RecordReader ─► collector
//!   combine:     sorted spill partition ─► [program] ─► spill run
//!   reduce task: merged partition ─► RecordWriter ─► [program] ─► RecordReader ─► part-NNNNN
//! ```
//!
//! * [`options`]: the command line (generic options, then streaming options).
//! * [`conf`]: the job configuration with Hadoop's deprecated key names.
//! * [`compress`]: the output compression keys and codecs.
//! * [`seqout`]: SequenceFile output: its formats, classes and compression.
//! * [`command`]: splitting a command line and finding its program (no shell).
//! * [`protocol`]: the `-io` framings (text, rawbytes, typedbytes, keyonlytext).
//! * `process`: one program run — feeder and reader threads, stderr, timeout, cleanup.
//! * [`orphans`]: the reaper that kills a process's programs when the process dies.
//! * `task`: the mappers and reducers that run programs, and native identity stand-ins.
//! * `aggregate`: `-reducer aggregate` (Hadoop's value aggregators).
//! * [`keys`]: the configuration keys honoured, refused and ignored.
//! * [`job`]: turns the parsed command line into a job.
//! * [`submission`]: what the job takes from where it is submitted (working directory, `PATH`,
//!   job id), explicit so that another process can rebuild the same job.

mod aggregate;
mod archive;
mod combine;
pub mod command;
pub mod compress;
pub mod conf;
pub mod deprecated;
pub mod job;
pub mod keys;
mod localise;
mod nline;
pub mod options;
pub mod orphans;
mod outcome;
mod process;
mod program;
pub mod protocol;
mod scratch;
pub mod seqout;
pub mod submission;
mod task;
mod task_env;
mod work_dirs;

use std::io;
use std::path::PathBuf;
use std::time::Duration;

pub use job::{build, build_with, StreamingJob};
pub use scratch::remove_stale as remove_stale_scratch;
pub use submission::{ShippedFiles, Submission};

/// Hadoop's id of the task of an attempt of job `job_id`: `task_<digits>_0001_m_000003` for
/// `job_<digits>_0001`.
pub fn task_id(job_id: &str, attempt: &sluice_api::TaskContext) -> String {
    task::task_ids(job_id, attempt.is_map, attempt.task, attempt.attempt).0
}

/// Hadoop's id of a task attempt of job `job_id`: `attempt_<digits>_0001_m_000003_0` for
/// `job_<digits>_0001`.
pub fn attempt_id(job_id: &str, attempt: &sluice_api::TaskContext) -> String {
    task::task_ids(job_id, attempt.is_map, attempt.task, attempt.attempt).1
}
pub use options::{
    parse_args, parse_shipped_args, split_input_list, Action, StreamingArgs, INFO, USAGE,
};

use sluice_api::{ClientError, ExecError};

/// Errors of a streaming job before it runs.
#[derive(Debug, thiserror::Error)]
pub enum StreamingError {
    /// The command line or configuration is wrong; the message says how.
    #[error("{0}")]
    Usage(String),
    /// The job cannot be submitted, where Hadoop fails with "Error Launching job" and exit
    /// status 5 (for example a directory among the input files); the message says why.
    #[error("{0}")]
    Launch(String),
    /// The job's configuration is one Hadoop's output format rejects when the job is
    /// submitted ("Invalid job conf", exit status 3); the message says why.
    #[error("{0}")]
    InvalidConf(String),
    /// Setting up the job's working directory failed.
    #[error("{context}")]
    Setup {
        /// What was being done.
        context: String,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// What to add when a program cannot be found and its name shows why: `NAME=value cmd` is
/// shell syntax for a variable.
fn not_found_hint(program: &str) -> &'static str {
    if program.contains('=') {
        "; there is no shell to set a variable: use -cmdenv NAME=VALUE"
    } else {
        ""
    }
}

/// Why an external program failed its task.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    /// The command's program is nowhere to be found.
    #[error(
        "cannot find program '{program}' of command '{command}' in the task's working directory \
         (where -files entries go) or on PATH{}",
        not_found_hint(program)
    )]
    NotFound {
        /// The command as given.
        command: String,
        /// Its first word.
        program: String,
    },
    /// The program could not be started.
    #[error("cannot run '{command}' ({}): {source}", program.display())]
    Spawn {
        /// The command as given.
        command: String,
        /// The resolved program.
        program: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The program exited with a failure status or was killed by a signal.
    #[error("'{command}' failed with {status}{}", tail_text(stderr_tail, log))]
    Failed {
        /// The command as given.
        command: String,
        /// `exit status 1`, `killed by signal 9 (SIGKILL)`.
        status: String,
        /// Its last stderr lines.
        stderr_tail: Vec<String>,
        /// The file with all of its stderr.
        log: PathBuf,
    },
    /// The program exited before it read all of its input (Hadoop fails the task too).
    #[error(
        "'{command}' exited ({status}) before reading all of its input{}",
        tail_text(stderr_tail, log)
    )]
    ExitedEarly {
        /// The command as given.
        command: String,
        /// Its exit status.
        status: String,
        /// Its last stderr lines.
        stderr_tail: Vec<String>,
        /// The file with all of its stderr.
        log: PathBuf,
    },
    /// The program reported more counters, or counter groups, than the job allows.
    #[error(
        "'{command}' reported {limit}; a counter for every key or value is usually a mistake, \
         else raise the limit with -D{}",
        tail_text(stderr_tail, log)
    )]
    TooManyCounters {
        /// The command as given.
        command: String,
        /// The limit it went past, and its key.
        limit: String,
        /// Its last stderr lines.
        stderr_tail: Vec<String>,
        /// The file with all of its stderr.
        log: PathBuf,
    },
    /// The program neither read, wrote nor reported for `mapreduce.task.timeout`.
    #[error(
        "'{command}' was killed after {} s without reading input, writing output or reporting \
         status (mapreduce.task.timeout){}",
        after.as_secs_f64(), tail_text(stderr_tail, log)
    )]
    TimedOut {
        /// The command as given.
        command: String,
        /// The timeout.
        after: Duration,
        /// Its last stderr lines.
        stderr_tail: Vec<String>,
        /// The file with all of its stderr.
        log: PathBuf,
    },
    /// The program closed its stdin while records remained (reported as [`Self::ExitedEarly`]
    /// once its exit status is known).
    #[error("the program stopped reading its input")]
    InputClosed,
    /// Writing to the program failed.
    #[error("writing to the program failed")]
    Write(#[source] io::Error),
    /// Reading the program's output failed.
    #[error("reading the program's output failed")]
    Read(#[source] io::Error),
    /// The program's output does not follow its `-io` framing.
    #[error("the program's output is malformed: {0}")]
    BadOutput(String),
    /// The job asked for shared memory, but the program exited with success without ever
    /// attaching to it.
    #[error(
        "'{command}' exited ({status}) without attaching to the shared memory: it does not speak \
         the sluice shm protocol; link it with a sluice shm client library (clients/c, \
         clients/python, the sluice-shm crate) or drop the shm settings (-io shm, \
         stream.*=shm){}",
        tail_text(stderr_tail, log)
    )]
    NotShm {
        /// The command as given.
        command: String,
        /// Its exit status.
        status: String,
        /// Its last stderr lines.
        stderr_tail: Vec<String>,
        /// The file with all of its stderr.
        log: PathBuf,
    },
    /// The program exited with success without closing its output ring.
    #[error(
        "'{command}' exited without closing its shared-memory output (its client library \
         closes it at the end: sluice_shm_close in C, close() or the end of the interpreter in \
         Python, Channel::close or drop in Rust); some of its output may be lost{}",
        tail_text(stderr_tail, log)
    )]
    OutputNotClosed {
        /// The command as given.
        command: String,
        /// Its last stderr lines.
        stderr_tail: Vec<String>,
        /// The file with all of its stderr.
        log: PathBuf,
    },
    /// The shared memory for a program could not be set up.
    #[error("cannot set up shared memory for '{command}'")]
    Shm {
        /// The command as given.
        command: String,
        /// What failed.
        source: sluice_shm::ShmError,
    },
    /// The task's log file could not be created.
    #[error("cannot create the task log {}", path.display())]
    Log {
        /// The log file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
}

impl From<ProgramError> for ExecError {
    fn from(e: ProgramError) -> ExecError {
        // A program that is not there will not be there on the next attempt either, nor will
        // a program without a shm client learn the protocol.
        let retryable = !matches!(
            e,
            ProgramError::NotFound { .. } | ProgramError::NotShm { .. }
        );
        ExecError::Client(ClientError::new(e, retryable))
    }
}

/// The program failure `error` carries, if it is one.
fn program_error(error: &ExecError) -> Option<&ProgramError> {
    match error {
        ExecError::Client(e) => e.get().downcast_ref::<ProgramError>(),
        _ => None,
    }
}

/// "; last lines of its stderr: ..." for a failure message.
fn tail_text(tail: &[String], log: &std::path::Path) -> String {
    if tail.is_empty() {
        // Its log was never created: there is nothing to point to.
        return "; it wrote nothing to stderr".to_string();
    }
    let mut text = String::from("; last lines of its stderr:");
    for line in tail {
        text.push_str("\n    ");
        text.push_str(line);
    }
    text.push_str(&format!("\n  (all of its stderr: {})", log.display()));
    let missing_file = tail
        .iter()
        .any(|l| l.contains("No such file or directory") || l.contains("can't open file"));
    if missing_file {
        text.push_str(
            "\n  hint: programs run in the task's working directory, which holds the -files and \
             -file entries; ship the files a program opens with -files, or use absolute paths",
        );
    }
    text
}
