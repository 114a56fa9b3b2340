//! `sluice run teragen` and `sluice run teravalidate`: the sort benchmark's generator and
//! checker, in Hadoop's file formats.

use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;
use sluice_api::JobStatus;
use sluice_jobs::{teragen, teravalidate};
use sluice_spec::{BuiltJob, JobSpec};

use crate::{
    default_threads, execute, file_count, parse_any_location, progress, thread_count, CommonArgs,
};

/// Options of `sluice run teragen`.
#[derive(Args)]
pub(crate) struct TeraGenArgs {
    /// Rows of 100 bytes to write; a suffix k, m, b or t multiplies by a thousand, a million,
    /// a billion or a trillion, as Hadoop's TeraGen reads it.
    #[arg(long, value_parser = parse_rows)]
    rows: u64,
    /// Output directory (local, file://, hdfs:// or s3://); must not exist. Written
    /// atomically: it appears, with `_SUCCESS`, only if every part file was written.
    #[arg(long, short = 'o', value_parser = parse_any_location)]
    output: String,
    /// A Hadoop-style setting (-D fs.defaultFS=hdfs://nn:8020, ...), as for the other jobs.
    #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = crate::stores::parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Part files to write (`part-m-NNNNN`, rows divided as Hadoop divides them among its map
    /// tasks) [default: -D mapreduce.job.maps, as Hadoop's TeraGen takes it, else the number
    /// of threads].
    #[arg(long, value_parser = file_count)]
    maps: Option<usize>,
    /// Worker threads [default: number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Options of `sluice run teravalidate`.
#[derive(Args)]
pub(crate) struct TeraValidateArgs {
    /// The directory of sorted part files to check (local, file://, hdfs:// or s3://).
    #[arg(long, short = 'i', value_parser = parse_any_location)]
    input: String,
    /// Directory for the report (`part-r-00000`, as Hadoop's TeraValidate writes it; local,
    /// file://, hdfs:// or s3://); must not exist.
    #[arg(long, short = 'o', value_parser = parse_any_location)]
    output: String,
    /// A Hadoop-style setting (-D fs.defaultFS=hdfs://nn:8020, ...), as for the other jobs.
    #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = crate::stores::parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Worker threads [default: number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Hadoop TeraGen's row count: digits with an optional k, m, b or t suffix.
fn parse_rows(text: &str) -> Result<u64, String> {
    let (digits, multiplier) = match text.chars().last() {
        Some('k') => (&text[..text.len() - 1], 1_000),
        Some('m') => (&text[..text.len() - 1], 1_000_000),
        Some('b') => (&text[..text.len() - 1], 1_000_000_000),
        Some('t') => (&text[..text.len() - 1], 1_000_000_000_000),
        _ => (text, 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .filter(|&n| i64::try_from(n).is_ok())
        .ok_or_else(|| format!("expected a number of rows such as 1000, 10m or 1b, got {text:?}"))
}

/// The map tasks Hadoop's TeraGen would run: `-D mapreduce.job.maps` (or its old name
/// `mapred.map.tasks`), the last one given.
fn maps_defined(define: &[(String, String)]) -> Result<Option<usize>> {
    let Some((key, value)) = define
        .iter()
        .rev()
        .find(|(key, _)| key == "mapreduce.job.maps" || key == "mapred.map.tasks")
    else {
        return Ok(None);
    };
    crate::file_count(value.trim())
        .map(Some)
        .map_err(|e| anyhow::anyhow!("-D {key}={value}: {e}"))
}

fn status_with_ctrl_c() -> Result<Arc<JobStatus>> {
    let status = Arc::new(JobStatus::default());
    crate::cancel_on_ctrl_c(&status)?;
    Ok(status)
}

/// Runs `sluice run teragen`.
pub(crate) fn run_teragen(args: &TeraGenArgs) -> Result<()> {
    let threads = args.threads.unwrap_or_else(default_threads);
    let maps = match args.maps {
        Some(maps) => maps,
        None => maps_defined(&args.define)?.unwrap_or(threads),
    };
    let store_config = crate::stores::store_config(&args.define)?;
    let output = crate::stores::resolve("--output", &args.output, &store_config)?;
    let stores = crate::stores::stores(&store_config, "teragen");
    let status = status_with_ctrl_c()?;
    let display = progress::Display::start_job(
        Arc::clone(&status),
        args.quiet,
        progress::JobShape {
            reduces: false,
            hadoop_counters: false,
        },
    );
    let started = std::time::Instant::now();
    let result = teragen(&stores, &output, args.rows, maps, threads, &status);
    display.stop();
    let report = result.context("teragen failed; no output was written")?;
    if !args.quiet {
        progress::say(&format!(
            "teragen wrote {} rows in {} file(s) to {} in {:.2} s\n  checksum {} (Hadoop \
             TeraGen's CHECKSUM counter: {})",
            report.rows,
            report.files,
            report.output,
            started.elapsed().as_secs_f64(),
            report.checksum,
            report.checksum.counter_value()
        ));
    }
    Ok(())
}

/// Runs `sluice run terasort`: samples, sorts, then prints the checksum of the rows read.
pub(crate) fn run_terasort(sample_size: usize, common: &CommonArgs) -> Result<()> {
    common.check()?;
    let output_codec = crate::compression::text(&common.define)?;
    let store_config = crate::stores::store_config(&common.define)?;
    let inputs = crate::stores::resolve_all("--input", &common.inputs(), &store_config)?;
    let stores = crate::stores::stores(&store_config, "terasort");
    if common.cluster.is_none() {
        // The output and the spills' place are checked before the sampling reads the input
        // (the job checks them again as it starts): a read-only or missing place fails now.
        let config = crate::job_config("terasort", common, sluice_jobs::TERASORT_SPILL_CODEC)?;
        sluice_exec::check_places(&config)
            .context("terasort cannot start; no output was written")?;
    }
    let reducers = common.reducers()?;
    let sample = sluice_jobs::sample_terasort_in(
        &stores,
        &inputs,
        common.split_size.unwrap_or(sluice_api::DEFAULT_SPLIT_SIZE),
        reducers,
        sample_size,
    )
    .context("terasort cannot sample its input; no output was written")?;
    if !common.quiet {
        progress::say(&format!(
            "terasort sampled {} rows from {} split(s) for {} reducer(s)",
            sample.records, sample.splits, reducers
        ));
    }
    // The sample is taken once, here; the job is built from its boundaries, as every process
    // that runs its tasks builds it.
    let spec = JobSpec::TeraSort {
        reducers,
        output_codec,
        boundaries: sample.boundaries,
    };
    let status = Arc::new(JobStatus::default());
    let BuiltJob::TeraSort(plan) = spec.build(Arc::clone(&status))? else {
        unreachable!("a terasort spec builds a terasort job");
    };
    execute(
        &spec,
        &plan.job,
        common,
        sluice_jobs::TERASORT_SPILL_CODEC,
        status,
    )?;
    if !common.quiet {
        if let (None, Some(checksum)) = (&common.cluster, plan.input_checksum()) {
            progress::say_more(&format!(
                "checksum of the rows read: {checksum} (teravalidate prints the same for sorted output)"
            ));
        } else {
            // The map tasks ran on the workers, whose checksums stay there.
            progress::say_more("(on a cluster the rows' checksum is teravalidate's to print)");
        }
    }
    Ok(())
}

/// Runs `sluice run teravalidate`; fails if the rows are not in order.
pub(crate) fn run_teravalidate(args: &TeraValidateArgs) -> Result<()> {
    let threads = args.threads.unwrap_or_else(default_threads);
    let store_config = crate::stores::store_config(&args.define)?;
    let input = crate::stores::resolve("--input", &args.input, &store_config)?;
    let output = crate::stores::resolve("--output", &args.output, &store_config)?;
    let stores = crate::stores::stores(&store_config, "teravalidate");
    let status = status_with_ctrl_c()?;
    let display = progress::Display::start_job(
        Arc::clone(&status),
        args.quiet,
        progress::JobShape {
            reduces: true,
            hadoop_counters: false,
        },
    );
    let result = teravalidate(&stores, &input, &output, threads, &status);
    display.stop();
    let report = result.context("teravalidate failed")?;
    if !args.quiet {
        progress::say(&format!(
            "teravalidate read {} rows in {} files: checksum {}, {} duplicate keys; report in {}",
            report.rows, report.files, report.checksum, report.duplicate_keys, report.output
        ));
    }
    if !report.errors.is_empty() {
        for error in report.errors.iter().take(20) {
            eprintln!("  {error}");
        }
        bail!(
            "{} is not sorted: {} row(s) out of order within files, {} problem(s) listed in {} \
             (at most {} misorders per file)",
            input,
            report.misorders,
            report.errors.len(),
            report.output.join("part-r-00000"),
            sluice_jobs::MAX_MISORDERS_LISTED
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_counts_take_hadoop_suffixes() {
        assert_eq!(parse_rows("1000"), Ok(1000));
        assert_eq!(parse_rows("10k"), Ok(10_000));
        assert_eq!(parse_rows("3m"), Ok(3_000_000));
        assert_eq!(parse_rows("1b"), Ok(1_000_000_000));
        assert_eq!(parse_rows("2t"), Ok(2_000_000_000_000));
        assert!(parse_rows("x").is_err());
        assert!(parse_rows("10q").is_err());
        assert!(parse_rows("99999999999t").is_err());
    }
}
