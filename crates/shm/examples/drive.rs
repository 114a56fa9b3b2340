//! Runs one program as the engine would, with its input and output going through a
//! shared-memory region: a tool to try a client by hand.
//!
//! ```text
//! cargo run --release -p sluice-shm --example drive -- \
//!     [--input FILE] [--capacity BYTES] [--rings both|input|output] [--timeout SECS] -- CMD ARGS...
//! ```
//!
//! FILE's bytes go to the program (through the input ring, or its stdin without one); what the
//! program writes (through the output ring, or its stdout) goes to this tool's stdout. The exit
//! status is non-zero, with a message, if the program fails, leaves input unread, never
//! attaches, or breaks the protocol.

#[path = "support/runner.rs"]
mod runner;

use std::fs::File;
use std::io::{self, Read};
use std::process::{Command, ExitCode};
use std::time::Duration;

use runner::{run, RunOptions};

const USAGE: &str = "usage: drive [--input FILE] [--capacity BYTES] [--rings both|input|output] [--timeout SECS] -- CMD ARGS...";

fn main() -> ExitCode {
    match parse().and_then(|(options, input, command)| drive(options, input, command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("drive: {message}");
            ExitCode::FAILURE
        }
    }
}

fn parse() -> Result<(RunOptions, Option<String>, Vec<String>), String> {
    let mut args = std::env::args().skip(1);
    let mut options = RunOptions {
        capacity: sluice_shm::DEFAULT_CAPACITY,
        input_ring: true,
        output_ring: true,
        timeout: Duration::from_secs(600),
    };
    let mut input = None;
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--input" => input = Some(value("--input")?),
            "--capacity" => {
                options.capacity = value("--capacity")?
                    .parse()
                    .map_err(|e| format!("--capacity: {e}"))?
            }
            "--timeout" => {
                let secs = value("--timeout")?
                    .parse()
                    .map_err(|e| format!("--timeout: {e}"))?;
                options.timeout = Duration::from_secs(secs);
            }
            "--rings" => {
                (options.input_ring, options.output_ring) = match value("--rings")?.as_str() {
                    "both" => (true, true),
                    "input" => (true, false),
                    "output" => (false, true),
                    other => {
                        return Err(format!("--rings {other}: expected both, input or output"))
                    }
                }
            }
            "--" => {
                let command: Vec<String> = args.collect();
                if command.is_empty() {
                    return Err(USAGE.into());
                }
                return Ok((options, input, command));
            }
            other => return Err(format!("unknown option {other}\n{USAGE}")),
        }
    }
    Err(USAGE.into())
}

fn drive(options: RunOptions, input: Option<String>, command: Vec<String>) -> Result<(), String> {
    let mut source: Box<dyn Read + Send> = match &input {
        Some(path) => Box::new(File::open(path).map_err(|e| format!("{path}: {e}"))?),
        None => Box::new(io::empty()),
    };
    let mut program = Command::new(&command[0]);
    program.args(&command[1..]);
    let report = run(program, &options, &mut source, &mut io::stdout().lock())?;
    if report.timed_out {
        return Err(format!("stopped after {:?}", options.timeout));
    }
    if !report.attached && (options.input_ring || options.output_ring) {
        return Err(format!(
            "the program exited ({}) without attaching: it does not speak the sluice shm protocol",
            report.status
        ));
    }
    if !report.status.success() {
        return Err(format!("the program failed: {}", report.status));
    }
    if options.output_ring && !report.output_closed {
        return Err("the program exited without closing its output ring".into());
    }
    if report.unread > 0 {
        return Err(format!(
            "the program exited with {} bytes of input unread",
            report.unread
        ));
    }
    Ok(())
}
