//! `sluice streaming`: Hadoop Streaming's command line, run natively.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use sluice_exec::streaming::{self, Action, StreamingError};
use sluice_exec::{run_job, ExecError, JobReport, JobStatus};
use sluice_io::IoError;

use crate::progress;
use crate::size::{human_bytes, parse_size};

/// Runs `sluice streaming ARGS...`; returns the exit status as Hadoop Streaming's: 0 done, 1
/// usage error or failed job, 5 missing input or existing output.
pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let parsed = match streaming::parse_args(args) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(usage_error(&e)),
    };
    match parsed.action {
        Action::Help => {
            print!("{}", streaming::USAGE);
            return Ok(ExitCode::SUCCESS);
        }
        Action::Info => {
            print!("{}\n{}", streaming::USAGE, streaming::INFO);
            return Ok(ExitCode::SUCCESS);
        }
        Action::Run => {}
    }
    let status = Arc::new(JobStatus::default());
    let built = match streaming::build(&parsed, Arc::clone(&status)) {
        Ok(built) => built,
        Err(e @ StreamingError::Usage(_)) => return Ok(usage_error(&e)),
        Err(e) => return Err(e).context("cannot set up the streaming job"),
    };
    let mut config = built.config.clone();
    if let Some(memory) = parsed.conf.get("sluice.memory") {
        let bytes =
            parse_size(memory).map_err(|e| anyhow::anyhow!("-D sluice.memory={memory}: {e}"))?;
        config = config.with_memory(usize::try_from(bytes).context("sluice.memory is too large")?);
    }
    if let Some(threads) = parsed.conf.get("sluice.threads") {
        let n: usize = threads
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                anyhow::anyhow!("-D sluice.threads={threads}: expected a number of at least 1")
            })?;
        config = config.with_threads(n);
    }
    warn_unbuffered_python(&parsed);
    if parsed.verbose {
        eprintln!("sluice: job configuration:");
        for (key, value) in built.conf.entries_with_aliases() {
            eprintln!("  {key}={value}");
        }
        eprintln!("sluice: task logs go to {}", built.log_dir().display());
    }
    {
        let status = Arc::clone(&status);
        ctrlc::set_handler(move || status.cancel()).context("cannot install the Ctrl-C handler")?;
    }
    let display = progress::Display::start(Arc::clone(&status), false);
    let result = run_job(&built.job, &config, Arc::clone(&status));
    display.stop();
    // A failed job's logs stay whenever they hold something (an empty log says nothing).
    let kept_logs = built.cleanup(parsed.verbose);
    match result {
        Ok(report) => {
            print_counters(&report);
            if let Some(dir) = kept_logs {
                eprintln!("sluice: the programs' stderr is in {}", dir.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ExecError::Cancelled) => {
            eprintln!("sluice: error: streaming job was interrupted; no output was written");
            Ok(ExitCode::from(1))
        }
        Err(e) => {
            eprintln!(
                "sluice: error: streaming job failed; no output was written: {}",
                e.chain()
            );
            if let Some(dir) = kept_logs {
                eprintln!("sluice: the programs' stderr is in {}", dir.display());
            }
            Ok(ExitCode::from(exit_status(&e)))
        }
    }
}

/// Python programs write every line with a system call when `PYTHONUNBUFFERED` is set, which
/// can make a streaming job several times slower; say so when a Python program is about to
/// inherit it.
fn warn_unbuffered_python(args: &streaming::StreamingArgs) {
    let set = |name: &str| {
        args.cmdenv
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| !v.is_empty())
            .or_else(|| std::env::var_os(name).map(|v| !v.is_empty()))
            .unwrap_or(false)
    };
    let python = [&args.mapper, &args.combiner, &args.reducer]
        .into_iter()
        .flatten()
        .any(|c| c.contains("python") || c.contains(".py"));
    if python && set("PYTHONUNBUFFERED") {
        eprintln!(
            "sluice: note: PYTHONUNBUFFERED is set, so the Python programs write each line with \
             a system call; unset it (or -cmdenv PYTHONUNBUFFERED=) for much faster jobs"
        );
    }
}

/// Hadoop Streaming's exit status for a job that did not run: 5 when the job could not be
/// submitted because an input is missing or the output exists, 1 otherwise.
fn exit_status(e: &ExecError) -> u8 {
    match e {
        ExecError::Io(IoError::InputNotFound { .. } | IoError::OutputExists { .. }) => 5,
        _ => 1,
    }
}

/// Reports a usage error; Hadoop Streaming exits 1 for these.
fn usage_error(e: &StreamingError) -> ExitCode {
    eprintln!("sluice streaming: {e}");
    eprintln!("Try 'sluice streaming -help' for more information.");
    ExitCode::from(1)
}

/// Prints the counters in the layout of Hadoop's job log (`\tGroup\n\t\tName=value`), so that
/// tools which read those lines keep working.
fn print_counters(report: &JobReport) {
    let c = &report.counters;
    let framework = [
        ("Map input records", c.map_input_records),
        ("Map output records", c.map_output_records),
        ("Map output bytes", c.map_output_bytes),
        ("Combine input records", c.combine_input_records),
        ("Combine output records", c.combine_output_records),
        ("Reduce input groups", c.reduce_input_groups),
        ("Reduce input records", c.reduce_input_records),
        ("Spilled Records", c.spilled_records),
    ];
    let user: usize = report.user_counters.values().map(|g| g.len()).sum();
    eprintln!(
        "sluice: job {} completed successfully in {:.2} s; output in {}",
        report.job,
        report.wall_seconds,
        report.output.display()
    );
    // Hadoop's order: the framework's group, the job's own groups by name, then the input and
    // output format groups (whose names end with a space in Hadoop).
    eprintln!("\tCounters: {}", framework.len() + 2 + user);
    eprintln!("\tMap-Reduce Framework");
    for (name, value) in framework {
        eprintln!("\t\t{name}={value}");
    }
    for (group, counters) in &report.user_counters {
        eprintln!("\t{group}");
        for (name, value) in counters {
            eprintln!("\t\t{name}={value}");
        }
    }
    eprintln!("\tFile Input Format Counters ");
    eprintln!("\t\tBytes Read={}", c.map_input_bytes);
    eprintln!("\tFile Output Format Counters ");
    eprintln!("\t\tBytes Written={}", c.output_bytes);
    let rss = progress::peak_rss_bytes()
        .map_or_else(String::new, |r| format!(", peak RSS {}", human_bytes(r)));
    let phases: Vec<String> = report
        .phases
        .iter()
        .map(|p| format!("{} {:.2} s", p.phase, p.seconds))
        .collect();
    eprintln!(
        "sluice: {} map tasks, {} reduce tasks, {} threads, memory budget {}{rss}; {}",
        report.splits,
        report.reducers,
        report.threads,
        human_bytes(report.memory_budget as u64),
        phases.join(", ")
    );
}
