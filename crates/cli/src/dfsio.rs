//! `sluice run dfsio`: Hadoop's TestDFSIO benchmark, through sluice's own stores.
//!
//! `--write` writes `--files` files of `--size` bytes each, in parallel, under
//! `OUTPUT/io_data/test_io_K`; `--read` reads them back in full; `--clean` removes
//! `OUTPUT/io_data`. Every byte goes through [`Stores`] (`create` + `finish`, and
//! `open_range`), the path a job's input and output take, so the numbers say what a job can
//! expect of a store: local files, HDFS or S3 alike.
//!
//! The report is TestDFSIO's: each file is one task, timed from the moment its file is open to
//! the moment it is complete (written and finished, or read to its end), and
//!
//! - throughput is the megabytes of all files over the sum of the task times;
//! - the average IO rate is the mean of the tasks' own rates, with its standard deviation;
//! - the exec time is the wall time of the whole test (for `--write`, removing the previous
//!   files included, as TestDFSIO times it).
//!
//! A megabyte is 2^20 bytes here, as in TestDFSIO. The result block is laid out as TestDFSIO
//! lays it out (its numbers formatted as Java's `DecimalFormat("#.##")` formats them), printed
//! and appended to a local result file, so that tools reading TestDFSIO's log read sluice's.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};
use sluice_api::{Counter, JobStatus, Phase};
use sluice_io::{IoError, Location, Storage, Stores};

use crate::gen::SplitMix64;
use crate::size::human_bytes;
use crate::{
    console, default_threads, file_count, parse_any_location, parse_location, parse_size_arg,
    progress, random, stores, tasks, thread_count,
};

/// The directory under `--output` that holds the files, as TestDFSIO names it.
const DATA_DIR: &str = "io_data";

/// TestDFSIO's megabyte.
const MEGA: f64 = 1_048_576.0;

/// Options of `sluice run dfsio`.
#[derive(Args)]
#[command(group(ArgGroup::new("test").required(true).args(["write", "read", "clean"])))]
pub(crate) struct DfsioArgs {
    /// Write --files files of --size bytes each (pseudo-random bytes) to OUTPUT/io_data/
    /// test_io_0, test_io_1, ...; the previous OUTPUT/io_data is removed first.
    #[arg(long)]
    write: bool,
    /// Read back in full the files --write wrote, checking that each has --size bytes.
    #[arg(long)]
    read: bool,
    /// Remove OUTPUT/io_data and everything in it.
    #[arg(long)]
    clean: bool,
    /// Number of files, each one task (TestDFSIO's -nrFiles).
    #[arg(long, value_parser = file_count, required_unless_present = "clean")]
    files: Option<usize>,
    /// Bytes per file, e.g. 256MiB. MiB, GiB are powers of 1024, MB, GB of 1000, as everywhere
    /// in sluice: TestDFSIO's `-size 256MB` is `--size 256MiB` here.
    #[arg(long, value_parser = parse_size_arg, required_unless_present = "clean")]
    size: Option<u64>,
    /// The test's directory (local, file://, hdfs:// or s3://; a plain path is on
    /// fs.defaultFS); the files go to its io_data directory.
    #[arg(long, short = 'o', value_parser = parse_any_location)]
    output: String,
    /// A Hadoop-style setting: -D fs.defaultFS=hdfs://nn:8020, -D fs.s3a.endpoint=URL, ...
    /// Repeatable; HADOOP_CONF_DIR's core-site.xml and hdfs-site.xml are read first.
    #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = stores::parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Files written or read at once [default: number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Local file the result block is appended to (TestDFSIO's -resFile).
    #[arg(long, default_value = "TestDFSIO_results.log", value_parser = parse_location)]
    result_file: PathBuf,
    /// Print nothing but errors (the result is still appended to --result-file).
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Which way the bytes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Test {
    Write,
    Read,
}

impl Test {
    /// The name TestDFSIO gives the test in its result block.
    fn name(self) -> &'static str {
        match self {
            Test::Write => "write",
            Test::Read => "read",
        }
    }
}

/// One file's task.
#[derive(Debug, Clone, Copy, PartialEq)]
struct FileResult {
    /// The file's number K (`test_io_K`).
    index: usize,
    /// Bytes written or read.
    bytes: u64,
    /// From open to complete.
    seconds: f64,
}

impl FileResult {
    /// The task's IO rate in megabytes a second (0 for a task too quick to time).
    fn rate(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / MEGA / self.seconds
        } else {
            0.0
        }
    }
}

/// What TestDFSIO reports of a test.
#[derive(Debug, Clone, PartialEq)]
struct Summary {
    test: Test,
    files: usize,
    bytes: u64,
    /// Total megabytes over the sum of the task times.
    throughput: f64,
    /// Mean of the tasks' rates.
    average_rate: f64,
    /// Standard deviation of the tasks' rates.
    rate_deviation: f64,
    /// Wall time of the whole test.
    exec_seconds: f64,
}

impl Summary {
    fn new(test: Test, results: &[FileResult], exec_seconds: f64) -> Summary {
        let bytes: u64 = results.iter().map(|r| r.bytes).sum();
        let task_seconds: f64 = results.iter().map(|r| r.seconds).sum();
        let throughput = if task_seconds > 0.0 {
            bytes as f64 / MEGA / task_seconds
        } else {
            0.0
        };
        let n = results.len().max(1) as f64;
        let average_rate = results.iter().map(FileResult::rate).sum::<f64>() / n;
        let mean_square = results.iter().map(|r| r.rate() * r.rate()).sum::<f64>() / n;
        // As TestDFSIO: E[x²] - E[x]², whose rounding may make it slightly negative.
        let rate_deviation = (mean_square - average_rate * average_rate).abs().sqrt();
        Summary {
            test,
            files: results.len(),
            bytes,
            throughput,
            average_rate,
            rate_deviation,
            exec_seconds,
        }
    }

    /// TestDFSIO's result block, ending with an empty line, stamped with `now`.
    fn block(&self, now: chrono::DateTime<chrono::Local>) -> String {
        format!(
            "----- TestDFSIO ----- : {}\n            Date & time: {}\n        Number of files: {}\n \
             Total MBytes processed: {}\n      Throughput mb/sec: {}\n \
             Average IO rate mb/sec: {}\n  IO rate std deviation: {}\n     \
             Test exec time sec: {}\n\n",
            self.test.name(),
            java_date(now),
            self.files,
            java_decimal(self.bytes as f64 / MEGA),
            java_decimal(self.throughput),
            java_decimal(self.average_rate),
            java_decimal(self.rate_deviation),
            java_decimal(self.exec_seconds),
        )
    }
}

/// `x` as Java's `DecimalFormat("#.##")` writes it: at most two decimals, rounded half to
/// even on the exact binary value (as Rust's formatting rounds), no trailing zeros, no
/// grouping.
fn java_decimal(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let text = format!("{x:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match text {
        "-0" | "" => "0".to_string(),
        other => other.to_string(),
    }
}

/// `now` as Java's `Date.toString()` writes it (`Tue Nov 24 04:52:05 UTC 2026`). Java names
/// the zone; the zone is written `UTC` at offset 0 and `GMT+hh:mm` otherwise, as Java writes
/// a zone it has no name for.
fn java_date(now: chrono::DateTime<chrono::Local>) -> String {
    let offset = now.offset().local_minus_utc();
    let zone = if offset == 0 {
        "UTC".to_string()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let minutes = offset.unsigned_abs() / 60;
        format!("GMT{sign}{:02}:{:02}", minutes / 60, minutes % 60)
    };
    format!(
        "{} {zone} {}",
        now.format("%a %b %d %H:%M:%S"),
        now.format("%Y")
    )
}

/// The name of file `index`, as TestDFSIO names it.
fn file_name(index: usize) -> String {
    format!("test_io_{index}")
}

/// Runs `sluice run dfsio`.
pub(crate) fn run(args: &DfsioArgs) -> Result<()> {
    let config = stores::store_config(&args.define)?;
    let base = stores::resolve("--output", &args.output, &config)?;
    let data = base.join(DATA_DIR);
    let stores = stores::stores(&config, "dfsio");
    if args.clean {
        let removed =
            delete_tree(&stores, &data).with_context(|| format!("cannot remove {data}"))?;
        if !args.quiet {
            progress::say(&format!("dfsio removed {data} ({removed} files)"));
        }
        return Ok(());
    }
    let (Some(files), Some(size)) = (args.files, args.size) else {
        bail!("--files and --size are needed for --write and --read");
    };
    let test = if args.write { Test::Write } else { Test::Read };
    let total = u64::try_from(files)
        .ok()
        .and_then(|n| n.checked_mul(size))
        .context("--files times --size is more bytes than can be counted")?;
    let threads = args.threads.unwrap_or_else(default_threads).min(files);
    let status = Arc::new(JobStatus::default());
    crate::cancel_on_ctrl_c(&status)?;

    let started = Instant::now();
    match test {
        Test::Write => {
            // The stores refuse to replace a file, and TestDFSIO starts afresh too.
            delete_tree(&stores, &data)
                .with_context(|| format!("cannot remove the previous files in {data}"))?;
        }
        Test::Read => {
            let found = stores
                .status(&data)
                .with_context(|| format!("cannot look up {data}"))?;
            if !found.is_some_and(|s| s.is_dir) {
                bail!(
                    "{data} does not exist: nothing to read (run `sluice run dfsio --write` \
                     with the same --output first)"
                );
            }
        }
    }
    status.set_input_bytes_total(total);
    status.enter(Phase::Map, u64::try_from(files).unwrap_or(u64::MAX));
    let display = progress::Display::start(Arc::clone(&status), args.quiet);
    let outcome = tasks::run_parallel("dfsio", files, threads, &status, |index, chunk| {
        let location = data.join(file_name(index));
        match test {
            Test::Write => write_file(&stores, &location, index, size, chunk, &status),
            Test::Read => read_file(&stores, &location, index, size, chunk, &status),
        }
    });
    status.enter(Phase::Done, 0);
    display.stop();
    let results = outcome.with_context(|| {
        format!(
            "dfsio --{} of {files} file(s) of {size} bytes in {data} failed",
            test.name()
        )
    })?;
    let summary = Summary::new(test, &results, started.elapsed().as_secs_f64());
    let block = summary.block(chrono::Local::now());
    append_result(&args.result_file, &block)?;
    if !args.quiet {
        for r in &results {
            progress::say(&format!(
                "dfsio {} {}: {} bytes in {:.3} s ({} mb/sec)",
                test.name(),
                data.join(file_name(r.index)),
                r.bytes,
                r.seconds,
                java_decimal(r.rate())
            ));
        }
        progress::say(&format!(
            "dfsio {} {} with {threads} thread(s); result appended to {}",
            test.name(),
            human_bytes(summary.bytes),
            args.result_file.display()
        ));
        print_block(&block);
    }
    Ok(())
}

/// Shows the result block: on stdout, or in Hadoop's console layout (under `sluice jar`) as
/// TestDFSIO logs it, one record of its logger on stderr per line, the empty last one too.
fn print_block(block: &str) {
    if progress::in_hadoop_console() {
        for line in block.strip_suffix('\n').unwrap_or(block).split('\n') {
            console::log("INFO", console::TEST_DFSIO, line);
        }
    } else {
        print!("{block}");
    }
}

/// Appends `block` to the local result file at `path`, creating it if need be.
fn append_result(path: &std::path::Path, block: &str) -> Result<()> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("cannot open the result file {}", path.display()))?;
    file.write_all(block.as_bytes())
        .with_context(|| format!("cannot append to the result file {}", path.display()))
}

/// Fills `chunk` with the pseudo-random bytes of file `index`. The chunk is written over and
/// over: generating every byte afresh would cost the CPU that the store's client needs, and
/// no store sluice writes to compresses or deduplicates.
fn fill_chunk(chunk: &mut [u8], index: usize) {
    let mut rng = SplitMix64::stream(0xd_f510, index as u64);
    random::fill_random(chunk, &mut rng);
}

/// Writes file `index` of `size` bytes at `location`, timed from its creation to its finish.
fn write_file(
    stores: &Stores,
    location: &Location,
    index: usize,
    size: u64,
    chunk: &mut [u8],
    status: &JobStatus,
) -> Result<FileResult> {
    fill_chunk(chunk, index);
    let mut writer = stores
        .create(location)
        .with_context(|| format!("cannot create {location}"))?;
    let started = Instant::now();
    let mut left = size;
    while left > 0 {
        if status.is_cancelled() {
            // The writer is dropped unfinished: the store keeps no complete file.
            return Err(tasks::interrupted("dfsio"));
        }
        let n = usize::try_from(left).map_or(chunk.len(), |left| left.min(chunk.len()));
        writer
            .write_all(&chunk[..n])
            .with_context(|| format!("cannot write {location}"))?;
        status.counters.add(Counter::MapInputBytes, n as u64);
        left -= n as u64;
    }
    let written = writer
        .finish()
        .with_context(|| format!("cannot complete {location}"))?;
    let seconds = started.elapsed().as_secs_f64();
    if written != size {
        bail!("{location}: the store wrote {written} bytes of {size}");
    }
    Ok(FileResult {
        index,
        bytes: written,
        seconds,
    })
}

/// Reads file `index` at `location` to its end, timed from its opening; it must have `size`
/// bytes.
fn read_file(
    stores: &Stores,
    location: &Location,
    index: usize,
    size: u64,
    chunk: &mut [u8],
    status: &JobStatus,
) -> Result<FileResult> {
    let mut reader = match stores.open_range(location, 0, u64::MAX) {
        Ok(reader) => reader,
        Err(IoError::Read { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            bail!(
                "{location} does not exist (were fewer files written? --files must be the \
                 same as for --write)"
            )
        }
        Err(error) => {
            return Err(anyhow::Error::new(error).context(format!("cannot open {location}")))
        }
    };
    let started = Instant::now();
    let mut read = 0u64;
    loop {
        if status.is_cancelled() {
            return Err(tasks::interrupted("dfsio"));
        }
        let n = match reader.read(chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                return Err(anyhow::Error::new(e)
                    .context(format!("cannot read {location} after {read} bytes")))
            }
        };
        read += n as u64;
        status.counters.add(Counter::MapInputBytes, n as u64);
    }
    let seconds = started.elapsed().as_secs_f64();
    if read != size {
        bail!(
            "{location} has {read} bytes, not the {size} of --size (--size must be the same as \
             for --write)"
        );
    }
    Ok(FileResult {
        index,
        bytes: read,
        seconds,
    })
}

/// Removes `location` and, if it is a directory, everything below it, through the
/// [`Storage`] trait alone (listing, deleting each file, then the emptied directory); returns
/// the number of files removed. Nothing there is not an error.
fn delete_tree(stores: &Stores, location: &Location) -> Result<u64> {
    let Some(status) = stores
        .status(location)
        .with_context(|| format!("cannot look up {location}"))?
    else {
        return Ok(0);
    };
    if !status.is_dir {
        let removed = stores
            .delete(location)
            .with_context(|| format!("cannot delete {location}"))?;
        return Ok(u64::from(removed));
    }
    let mut removed = 0;
    let entries = stores
        .list(location)
        .with_context(|| format!("cannot list {location}"))?;
    for entry in entries {
        removed += delete_tree(stores, &entry.location)?;
    }
    remove_empty_dir(stores, location)?;
    Ok(removed)
}

/// Removes the directory `dir`, now empty. `Storage::delete` removes files only; a local
/// directory goes with `remove_dir`, an HDFS one with the (non-recursive) delete, which HDFS
/// allows on an empty directory, and an S3 prefix went away with its last key.
fn remove_empty_dir(stores: &Stores, dir: &Location) -> Result<()> {
    match dir.as_local_path() {
        Some(path) => match std::fs::remove_dir(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).with_context(|| format!("cannot remove directory {dir}")),
        },
        None => stores
            .delete(dir)
            .map(drop)
            .with_context(|| format!("cannot remove directory {dir}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_formatted_as_java_decimal_format_does() {
        // Each pair checked against `new DecimalFormat("#.##").format(x)` on Java 17.
        for (x, java) in [
            (0.0, "0"),
            (0.5, "0.5"),
            (0.001, "0"),
            (0.125, "0.12"),
            (0.135, "0.14"),
            (1.005, "1"),
            (12_345_678.456, "12345678.46"),
            (2.675, "2.67"),
            (0.995, "0.99"),
            (100.0, "100"),
            (0.375, "0.38"),
        ] {
            assert_eq!(java_decimal(x), java, "{x}");
        }
    }

    #[test]
    fn summary_follows_testdfsio() {
        let mb = 1 << 20;
        let results = [
            FileResult {
                index: 0,
                bytes: 100 * mb,
                seconds: 1.0,
            },
            FileResult {
                index: 1,
                bytes: 100 * mb,
                seconds: 4.0,
            },
        ];
        let s = Summary::new(Test::Write, &results, 4.5);
        assert_eq!(s.bytes, 200 * mb);
        // 200 MB over 5 s of tasks; rates 100 and 25, mean 62.5, deviation 37.5.
        assert!((s.throughput - 40.0).abs() < 1e-9);
        assert!((s.average_rate - 62.5).abs() < 1e-9);
        assert!((s.rate_deviation - 37.5).abs() < 1e-9);
        let now = chrono::Local::now();
        let block = s.block(now);
        let lines: Vec<&str> = block.lines().collect();
        assert_eq!(lines[0], "----- TestDFSIO ----- : write");
        assert!(lines[1].starts_with("            Date & time: "));
        assert_eq!(lines[2], "        Number of files: 2");
        assert_eq!(lines[3], " Total MBytes processed: 200");
        assert_eq!(lines[4], "      Throughput mb/sec: 40");
        assert_eq!(lines[5], " Average IO rate mb/sec: 62.5");
        assert_eq!(lines[6], "  IO rate std deviation: 37.5");
        assert_eq!(lines[7], "     Test exec time sec: 4.5");
        assert_eq!(lines[8], "");
        assert!(block.ends_with("\n\n"));
    }

    #[test]
    fn dates_read_as_java_writes_them() {
        use chrono::TimeZone;
        let utc = chrono::FixedOffset::east_opt(0).unwrap();
        let t = utc.with_ymd_and_hms(2026, 11, 4, 4, 52, 5).unwrap();
        let local = t.with_timezone(&chrono::Local);
        let text = java_date(local);
        // The weekday, month and day depend on the machine's zone; the shape does not.
        let parts: Vec<&str> = text.split(' ').collect();
        assert_eq!(parts.len(), 6, "{text}");
        assert_eq!(parts[5], "2026");
        if local.offset().local_minus_utc() == 0 {
            assert_eq!(text, "Wed Nov 04 04:52:05 UTC 2026");
        }
    }
}
