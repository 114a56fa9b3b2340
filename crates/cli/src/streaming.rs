//! `sluice streaming`: Hadoop Streaming's command line, run natively.
//!
//! The console is Hadoop's by default (`console`): the job id, progress, failed attempts,
//! counters and the output directory as log records on stderr, so that tools which parse
//! `hadoop jar hadoop-streaming.jar`'s console keep working, under a pseudo-terminal too.
//! `-D sluice.console=sluice` gives sluice's own layout instead (a progress bar on a terminal,
//! then a summary).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use sluice_api::{ExecError, JobConfig, JobReport, JobStatus};
use sluice_exec::run_job;
use sluice_io::{IoError, Storage as _};
use sluice_spec::{SpecError, StreamingSpec};
use sluice_streaming::{self, Action, StreamingArgs, StreamingError, StreamingJob};

use crate::cluster::ClusterTarget;
use crate::console::{self, JOB, SLUICE, STREAM_JOB};
use crate::progress;
use crate::size::{human_bytes, parse_size};

/// Exit status of a job stopped by Ctrl-C (SIGINT), as a shell reports a process it killed.
pub(crate) const INTERRUPTED: u8 = 130;

/// What the console looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Hadoop's job client and StreamJob records (the default).
    Hadoop,
    /// sluice's own: a progress bar on a terminal, then a summary.
    Sluice,
}

/// The console's settings: `sluice.console`, and whether progress is shown (`sluice.progress`,
/// `SLUICE_PROGRESS`).
#[derive(Debug, Clone, Copy)]
struct Console {
    layout: Layout,
    progress: bool,
}

impl Console {
    fn read(args: &StreamingArgs) -> Result<Console, StreamingError> {
        let layout = match args.conf.get("sluice.console").map(str::trim) {
            None | Some("hadoop") => Layout::Hadoop,
            Some("sluice") => Layout::Sluice,
            Some(other) => {
                return Err(StreamingError::Usage(format!(
                    "-D sluice.console={other}: expected hadoop or sluice"
                )))
            }
        };
        let progress =
            args.conf.get_bool("sluice.progress", true)? && crate::progress::progress_wanted();
        Ok(Console { layout, progress })
    }

    /// The layout to report a command line that could not be parsed in: sluice's if the
    /// arguments ask for it, else Hadoop's.
    fn for_unparsed(args: &[String]) -> Console {
        let sluice = args.iter().any(|a| a.ends_with("sluice.console=sluice"));
        Console {
            layout: if sluice {
                Layout::Sluice
            } else {
                Layout::Hadoop
            },
            progress: false,
        }
    }
}

/// Where `sluice streaming` runs the job: this machine, or a cluster's workers with the
/// secret from a file.
type ClusterOptions = Option<(ClusterTarget, Option<PathBuf>)>;

/// Takes sluice's own options for running on a cluster (`--cluster workers=...`,
/// `--secret-file FILE`) from the front of the command line; Hadoop's options follow them.
fn take_cluster_options(args: &[String]) -> Result<(ClusterOptions, Vec<String>), String> {
    let mut target = None;
    let mut secret = None;
    let mut rest = args;
    loop {
        let (name, value, used) = match rest {
            [first, ..]
                if first.starts_with("--cluster=") || first.starts_with("--secret-file=") =>
            {
                let (name, value) = first.split_once('=').unwrap_or_default();
                (name, value.to_string(), 1)
            }
            [first, value, ..] if first == "--cluster" || first == "--secret-file" => {
                (first.as_str(), value.clone(), 2)
            }
            [first] if first == "--cluster" || first == "--secret-file" => {
                return Err(format!("{first} needs a value"))
            }
            _ => break,
        };
        match name {
            "--cluster" => target = Some(crate::cluster::parse_cluster(&value)?),
            _ => secret = Some(PathBuf::from(value)),
        }
        rest = &rest[used..];
    }
    let is_own = |a: &String| {
        ["--cluster", "--secret-file"]
            .iter()
            .any(|own| a == own || a.strip_prefix(own).is_some_and(|r| r.starts_with('=')))
    };
    if let Some(late) = rest.iter().find(|a| is_own(a)) {
        return Err(format!(
            "{late}: sluice's own options come before Hadoop's: sluice streaming --cluster \
             TARGET [--secret-file FILE] [generic options] -input ..."
        ));
    }
    match (target, secret) {
        (Some(target), secret) => Ok((Some((target, secret)), rest.to_vec())),
        (None, Some(_)) => Err("--secret-file is for --cluster jobs".into()),
        (None, None) => Ok((None, rest.to_vec())),
    }
}

/// Runs the streaming job here, or on the cluster's workers: failures of the cluster itself
/// (a worker lost, a peer refused) end the job as a task's failure would.
fn run_here_or_on(
    cluster: &ClusterOptions,
    spec: &StreamingSpec,
    built: &StreamingJob,
    config: &JobConfig,
    defines: &[(String, String)],
    status: &Arc<JobStatus>,
) -> Result<(JobReport, Vec<sluice_cluster::WorkerSummary>), ExecError> {
    let Some((target, secret)) = cluster else {
        return run_job(&built.job, config, Arc::clone(status)).map(|report| (report, Vec::new()));
    };
    let job_spec = sluice_spec::JobSpec::Streaming(spec.clone());
    let job = sluice_cluster::ClusterJob {
        spec: &job_spec,
        job: &built.job,
        config,
        defines: defines.to_vec(),
        job_id: built.job_id().to_string(),
        worker_timeout: crate::cluster::worker_timeout()
            .map_err(|e| ExecError::Config(format!("{e:#}")))?,
    };
    crate::cluster::run_on(
        target,
        secret.as_deref(),
        job,
        u64::try_from(config.memory).unwrap_or(u64::MAX),
        config.threads,
        Arc::clone(status),
    )
    .map(|report| (report.report, report.workers))
    .map_err(|e| match e.downcast::<sluice_cluster::ClusterError>() {
        Ok(sluice_cluster::ClusterError::Exec(e)) => e,
        Ok(other) => ExecError::Source(Box::new(other)),
        Err(other) => ExecError::Source(other.into()),
    })
}

/// `-conf` and `HADOOP_CONF_DIR`'s `mapred-site.xml`, when there is one; nothing otherwise,
/// as Hadoop does without the file.
fn site_conf_args() -> Vec<String> {
    crate::stores::mapred_site()
        .map(|site| vec!["-conf".to_string(), site.display().to_string()])
        .unwrap_or_default()
}

/// Runs `sluice streaming ARGS...`; returns the exit status as Hadoop Streaming's: 0 done, 1
/// usage error or failed job, 5 missing input or existing output; 130 when interrupted.
pub(crate) fn run(args: &[String]) -> Result<ExitCode> {
    let (cluster, args) = match take_cluster_options(args) {
        Ok(split) => split,
        Err(e) => {
            return Ok(usage_error(
                Console::for_unparsed(args),
                &StreamingError::Usage(e),
            ))
        }
    };
    let parsed = match sluice_streaming::parse_args(&args) {
        Ok(parsed) => parsed,
        Err(e) => return Ok(usage_error(Console::for_unparsed(&args), &e)),
    };
    // HADOOP_CONF_DIR's mapred-site.xml first, as the first -conf file: Hadoop's job reads it
    // beneath the command line's settings. Shipped to workers as any -conf file is. (Not
    // before -help: a site file that does not parse must not hide the usage.)
    let site = site_conf_args();
    let (args, parsed) = if site.is_empty() || parsed.action != Action::Run {
        (args, parsed)
    } else {
        let args: Vec<String> = site.into_iter().chain(args).collect();
        match sluice_streaming::parse_args(&args) {
            Ok(parsed) => (args, parsed),
            Err(e) => {
                let e = StreamingError::Usage(format!(
                    "{e} (HADOOP_CONF_DIR's site file: mend it, or unset HADOOP_CONF_DIR)"
                ));
                return Ok(usage_error(Console::for_unparsed(&args), &e));
            }
        }
    };
    let args = &args[..];
    match parsed.action {
        Action::Help => {
            print!("{}", sluice_streaming::USAGE);
            return Ok(ExitCode::SUCCESS);
        }
        Action::Info => {
            print!("{}\n{}", sluice_streaming::USAGE, sluice_streaming::INFO);
            return Ok(ExitCode::SUCCESS);
        }
        Action::Run => {}
    }
    let console = match Console::read(&parsed) {
        Ok(console) => console,
        Err(e) => return Ok(usage_error(Console::for_unparsed(args), &e)),
    };
    let status = Arc::new(JobStatus::default());
    // The job is built from its description (the command line, this directory, PATH and a new
    // job id), as every process that runs its tasks builds it; that parses the command line
    // once more.
    // The stores the job's locations are on: configured by HADOOP_CONF_DIR's site files and
    // the job's -D settings. A default file system taken from the site files is written into
    // the job's own settings, so that every process building the job resolves its paths alike.
    let defines: Vec<(String, String)> = parsed
        .conf
        .entries()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let store_config = match crate::stores::store_config(&defines) {
        Ok(config) => config,
        Err(e) => return Ok(launch_error(console, &format!("{e:#}"), 1)),
    };
    let mut spec_args = args.to_vec();
    if parsed.conf.get("fs.defaultFS").is_none() {
        if let Some(default_fs) = store_config.default_fs() {
            spec_args.splice(
                0..0,
                ["-D".to_string(), format!("fs.defaultFS={default_fs}")],
            );
        }
    }
    let stores = crate::stores::stores(&store_config, "streaming");
    let spec = StreamingSpec::new(spec_args);
    let built = match spec.build_in(&stores, Arc::clone(&status)) {
        Ok(built) => built,
        Err(SpecError::Streaming(e @ StreamingError::Usage(_))) => {
            return Ok(usage_error(console, &e))
        }
        Err(SpecError::Streaming(e @ StreamingError::Launch(_))) => {
            return Ok(launch_error(console, &e.to_string(), 5))
        }
        Err(SpecError::Streaming(e @ StreamingError::InvalidConf(_))) => {
            let message = format!("Invalid job conf : {e}");
            return Ok(launch_error(console, &message, 3));
        }
        Err(e) => {
            let error = anyhow::Error::new(e).context("cannot set up the streaming job");
            return Ok(launch_error(console, &format!("{error:#}"), 1));
        }
    };
    let config = match job_config(console, &built, cluster.is_none()) {
        Ok(config) => config,
        Err(e) => {
            built.cleanup(false);
            return Ok(usage_error(
                console,
                &StreamingError::Usage(format!("{e:#}")),
            ));
        }
    };
    // Hadoop refuses these before the job starts ("Error Launching job"), with exit status 5.
    let discards = built.job.output == sluice_api::OutputFormat::Discard;
    if let Err(e) = check_launch(&config, discards) {
        built.cleanup(false);
        let status = exit_status(&e);
        // With its causes: "cannot read in/f/: Not a directory", not only what it was doing.
        let message = format!("{:#}", anyhow::Error::new(e));
        return Ok(launch_error(console, &message, status));
    }
    for setting in &parsed.ignored_defines {
        say(
            console,
            "WARN",
            &format!("-D {setting}: not NAME=VALUE; ignored, as Hadoop ignores it"),
        );
    }
    for (left_out, kept) in &parsed.shadowed_files {
        say(
            console,
            "WARN",
            &format!(
                "-files {left_out}: {kept} has the same name in the working directory and comes \
                 first; {left_out} is not shipped, as Hadoop ships only the first"
            ),
        );
    }
    warn_unbuffered_python(console, &parsed);
    warn_small_splits(console, &built);
    if parsed.verbose {
        let mut text = String::from("job configuration:");
        for (key, value) in built.conf.entries() {
            text.push_str(&format!("\n  {key}={value}"));
        }
        say(console, "INFO", &text);
        say(
            console,
            "INFO",
            &format!("task logs go to {}", built.log_dir().display()),
        );
    }
    crate::cancel_on_ctrl_c(&status)?;
    let reduces = built.job.stages.first().is_some_and(|s| s.partitions > 0);
    let mut failed_task = None;
    let result = match console.layout {
        Layout::Hadoop => {
            let maps = built.conf.get("mapreduce.job.maps").unwrap_or("0");
            console::log(
                "INFO",
                "mapreduce.JobSubmitter",
                &format!("number of splits:{maps}"),
            );
            console::running_job(built.job_id());
            let monitor = console::Monitor::start(
                Arc::clone(&status),
                built.job_id(),
                reduces,
                console.progress,
                console::RunningLine::Printed,
            );
            let result = run_here_or_on(&cluster, &spec, &built, &config, &defines, &status);
            failed_task = monitor.stop(result.is_ok()).failed_task;
            result
        }
        Layout::Sluice => {
            let display = progress::Display::start(Arc::clone(&status), !console.progress);
            let result = run_here_or_on(&cluster, &spec, &built, &config, &defines, &status);
            display.stop();
            result
        }
    };
    let keep_logs = result.is_err() || parsed.conf.get_bool("sluice.keep.logs", false)?;
    let kept_logs = built.cleanup(keep_logs);
    let output = parsed.output.as_deref().unwrap_or_default();
    match result {
        Ok((report, workers)) => {
            report_success(console, &built, &report, output);
            // On workers, each one's part, after the job's own lines.
            for worker in &workers {
                let line = crate::cluster::worker_line(worker);
                match console.layout {
                    Layout::Hadoop => console::log("INFO", SLUICE, &line),
                    Layout::Sluice => eprintln!("  {line}"),
                }
            }
            if let Some(dir) = kept_logs {
                say(
                    console,
                    "INFO",
                    &format!("the programs' stderr is in {}", dir.display()),
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let interrupted = matches!(e, ExecError::Cancelled);
            let why = if interrupted {
                "streaming job was interrupted; no output was written".to_string()
            } else {
                format!("streaming job failed; no output was written: {}", e.chain())
            };
            if console.layout == Layout::Hadoop {
                let cause = failed_task.map_or_else(
                    || "NA".to_string(),
                    |attempt| {
                        let task = sluice_streaming::task_id(built.job_id(), &attempt);
                        format!("Task failed {task}")
                    },
                );
                console::log(
                    "INFO",
                    JOB,
                    &format!(
                        "Job {} failed with state FAILED due to: {cause}",
                        built.job_id()
                    ),
                );
                let block = console::counters_block(
                    &status.counters.snapshot(),
                    &status.user_counters(),
                    reduces,
                );
                console::log("INFO", JOB, &block);
            }
            say(console, "ERROR", &why);
            if let Some(dir) = kept_logs {
                say(
                    console,
                    "INFO",
                    &format!("the programs' stderr is in {}", dir.display()),
                );
            }
            if console.layout == Layout::Hadoop {
                console::log("ERROR", STREAM_JOB, "Job not successful!");
                console::failed_line();
            }
            let code = if interrupted {
                INTERRUPTED
            } else {
                exit_status(&e)
            };
            Ok(ExitCode::from(code))
        }
    }
}

/// The engine's configuration of the job: inputs, output and attempts as the command line
/// says, with `sluice.memory` and `sluice.threads`, and, for a job run `here` (workers use
/// their own), the spill directories of `mapreduce.cluster.local.dir` (by default Hadoop's,
/// under `hadoop.tmp.dir`, when that is set).
fn job_config(console: Console, built: &StreamingJob, here: bool) -> Result<JobConfig> {
    let mut config = built.config.clone();
    // Read as the job reads its settings: `${...}` substituted.
    let conf = &built.conf;
    let local_dirs = conf.get(LOCAL_DIRS);
    // Named as the user gave it (MR1-era scripts give mapred.local.dir).
    let local_dirs_key = conf.given_name(LOCAL_DIRS);
    if local_dirs.is_some() && !here {
        say(
            console,
            "WARN",
            &format!(
                "{local_dirs_key} is not used on a cluster: each worker spills where it was \
                 told to (sluice worker --spill-dirs; on YARN, the node's local directories)"
            ),
        );
    }
    // Hadoop's default local directory is under hadoop.tmp.dir; sluice's own default (beside
    // a local output, else TMPDIR) stands unless the user moved Hadoop's scratch space.
    let local_dirs = local_dirs.map(str::to_string).or_else(|| {
        conf.get("hadoop.tmp.dir")
            .map(|tmp| format!("{}/mapred/local", tmp.trim_end_matches('/')))
    });
    if let Some(dirs) = local_dirs.filter(|_| here) {
        // A file that set them is named (a site file's directories may not exist here).
        let (origin, key) = match conf.get(LOCAL_DIRS) {
            Some(_) => (conf.origin(LOCAL_DIRS), local_dirs_key),
            None => (conf.origin("hadoop.tmp.dir"), LOCAL_DIRS),
        };
        let (usable, passed_over) = usable_local_dirs(key, &dirs).map_err(|e| match origin {
            Some(file) => e.context(format!("from {file}")),
            None => e,
        })?;
        for problem in &passed_over {
            say(console, "WARN", &format!("{key}: {problem}; not used"));
        }
        config = config.with_spill_parents(usable);
    }
    if let Some(memory) = conf.get("sluice.memory") {
        let bytes =
            parse_size(memory).map_err(|e| anyhow::anyhow!("-D sluice.memory={memory}: {e}"))?;
        config = config.with_memory(usize::try_from(bytes).context("sluice.memory is too large")?);
    }
    if let Some(threads) = conf.get("sluice.threads") {
        let n = crate::thread_count(threads.trim()).map_err(|e| {
            anyhow::anyhow!(
                "-D sluice.threads={threads}: expected a number from 1 to {}: {e}",
                crate::MAX_THREADS
            )
        })?;
        config = config.with_threads(n);
    }
    Ok(config)
}

/// Where a streaming job spills: Hadoop's local directories.
const LOCAL_DIRS: &str = "mapreduce.cluster.local.dir";

/// The directories of `list`, the value of `key` (comma-separated paths or `file:` URIs),
/// that exist or can be made, as Hadoop's local directory allocator takes them: one that
/// cannot be made or written to is passed over (returned second, with why); none usable fails
/// the job.
fn usable_local_dirs(key: &str, list: &str) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let mut usable = Vec::new();
    let mut problems = Vec::new();
    for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let checked = sluice_io::local_path(entry)
            .map_err(|e| e.to_string())
            .and_then(|dir| {
                std::fs::create_dir_all(&dir)
                    .and_then(|()| tempfile::tempfile_in(&dir).map(drop))
                    .map(|()| dir)
                    .map_err(|e| e.to_string())
            });
        match checked {
            Ok(dir) => usable.push(dir),
            Err(e) => problems.push(format!("{entry}: {e}")),
        }
    }
    if usable.is_empty() {
        anyhow::bail!(
            "{key}={list}: no directory can be used ({})",
            problems.join("; ")
        );
    }
    Ok((usable, problems))
}

/// What Hadoop checks before it submits a job: the output must not exist (unless the job
/// `discards` its records: `NullOutputFormat` checks nothing) and every input must.
fn check_launch(config: &JobConfig, discards: bool) -> Result<(), ExecError> {
    if !discards && config.stores.status(&config.output)?.is_some() {
        return Err(ExecError::Io(IoError::OutputExists {
            path: config.output.error_path(),
        }));
    }
    for input in &config.inputs {
        sluice_io::discover(&config.stores, std::slice::from_ref(input))?;
    }
    Ok(())
}

/// Prints one of sluice's own messages: a record of Hadoop's layout, or `sluice: ...`.
fn say(console: Console, level: &str, message: &str) {
    match console.layout {
        Layout::Hadoop => console::log(level, SLUICE, message),
        Layout::Sluice if level == "ERROR" => eprintln!("sluice: error: {message}"),
        Layout::Sluice => eprintln!("sluice: {message}"),
    }
}

/// Reports a job that could not start; returns `code`.
fn launch_error(console: Console, message: &str, code: u8) -> ExitCode {
    match console.layout {
        Layout::Hadoop => {
            console::log(
                "ERROR",
                STREAM_JOB,
                &format!("Error Launching job : {message}"),
            );
            console::failed_line();
        }
        Layout::Sluice => eprintln!("sluice: error: {message}"),
    }
    ExitCode::from(code)
}

/// Python programs write every line with a system call when `PYTHONUNBUFFERED` is set, which
/// can make a streaming job several times slower; say so when a Python program is about to
/// inherit it.
fn warn_unbuffered_python(console: Console, args: &StreamingArgs) {
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
        say(
            console,
            "WARN",
            "note: PYTHONUNBUFFERED is set, so the Python programs write each line with a \
             system call; unset it (or -cmdenv PYTHONUNBUFFERED=) for much faster jobs",
        );
    }
}

/// A mapper program started once for each of thousands of small splits spends most of the job
/// starting; say how to read the small files in a few splits instead.
fn warn_small_splits(console: Console, built: &StreamingJob) {
    let Some(small) = built.small_splits() else {
        return;
    };
    let average = small.bytes / u64::try_from(small.splits.max(1)).unwrap_or(u64::MAX);
    say(
        console,
        "WARN",
        &format!(
            "note: the input makes {} map tasks of {} on average, and the mapper program starts \
             once for each; -inputformat org.apache.hadoop.mapred.lib.CombineTextInputFormat \
             reads many small files in one map task (with -D stream.map.input.ignoreKey=true \
             the mapper reads the same lines as now)",
            small.splits,
            human_bytes(average)
        ),
    );
}

/// Hadoop Streaming's exit status for a job that did not run: 5 when the job could not be
/// submitted because an input is missing or the output exists, 1 otherwise.
fn exit_status(e: &ExecError) -> u8 {
    match e {
        ExecError::Io(
            IoError::InputNotFound { .. }
            | IoError::PatternMatchesNothing { .. }
            | IoError::HiddenInput { .. }
            | IoError::OutputExists { .. },
        ) => 5,
        _ => 1,
    }
}

/// Reports a usage error; Hadoop Streaming exits 1 for these.
fn usage_error(console: Console, e: &StreamingError) -> ExitCode {
    match console.layout {
        Layout::Hadoop => {
            console::log(
                "ERROR",
                STREAM_JOB,
                &format!("{e}\nTry 'sluice streaming -help' for more information."),
            );
            console::failed_line();
        }
        Layout::Sluice => {
            eprintln!("sluice streaming: {e}");
            eprintln!("Try 'sluice streaming -help' for more information.");
        }
    }
    ExitCode::from(1)
}

/// Reports a successful job: in Hadoop's layout the job client's last records, then sluice's
/// summary as records of the same layout; in sluice's, the summary and counters.
fn report_success(console: Console, built: &StreamingJob, report: &JobReport, output: &str) {
    let reduces = report.reducers > 0;
    let summary = progress::one_line_summary(report);
    let block = console::counters_block(&report.counters, &report.user_counters, reduces);
    match console.layout {
        Layout::Hadoop => {
            console::log(
                "INFO",
                JOB,
                &format!("Job {} completed successfully", built.job_id()),
            );
            console::log("INFO", JOB, &block);
            console::log("INFO", STREAM_JOB, &format!("Output directory: {output}"));
            console::log(
                "INFO",
                SLUICE,
                &format!(
                    "job {} done in {:.2} s: {summary}",
                    built.job_id(),
                    report.wall_seconds
                ),
            );
        }
        Layout::Sluice => {
            eprintln!(
                "sluice: job {} completed successfully in {:.2} s; output in {}",
                report.job, report.wall_seconds, report.output
            );
            eprintln!("{block}");
            eprintln!("sluice: {summary}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_string()).collect()
    }

    #[test]
    fn cluster_options_are_taken_from_the_front_only() {
        let (cluster, rest) = take_cluster_options(&args(&[
            "--cluster",
            "workers=h1:7070",
            "--secret-file=s",
            "-input",
            "in",
        ]))
        .unwrap();
        let (_, secret) = cluster.unwrap();
        assert_eq!(secret, Some(PathBuf::from("s")));
        assert_eq!(rest, args(&["-input", "in"]));

        let (cluster, rest) = take_cluster_options(&args(&["-input", "in"])).unwrap();
        assert!(cluster.is_none());
        assert_eq!(rest, args(&["-input", "in"]));

        // After Hadoop's options: named, with where they belong.
        for late in [
            &["-input", "in", "--cluster", "workers=h1:7070"][..],
            &["-input", "in", "--cluster=workers=h1:7070"],
            &[
                "--cluster",
                "workers=h1:7070",
                "-input",
                "in",
                "--secret-file",
                "s",
            ],
        ] {
            let e = take_cluster_options(&args(late)).err().unwrap();
            assert!(e.contains("come before Hadoop's"), "{late:?}: {e}");
        }
        // Look-alikes are Hadoop's to judge.
        let (_, rest) = take_cluster_options(&args(&[
            "-mapper",
            "prog --cluster",
            "-cmdenv",
            "--clusterx",
        ]))
        .unwrap();
        assert_eq!(rest.len(), 4);

        assert!(
            take_cluster_options(&args(&["--secret-file", "s", "-input", "in"]))
                .err()
                .unwrap()
                .contains("is for --cluster jobs")
        );
        assert!(take_cluster_options(&args(&["--cluster"]))
            .err()
            .unwrap()
            .contains("needs a value"));
    }
}
