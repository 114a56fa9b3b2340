//! `sluice gen random`: files of pseudo-random bytes written through the stores (local, HDFS,
//! S3), as Hadoop's RandomWriter fills a file system with data to copy or benchmark.
//!
//! Unlike RandomWriter, which writes SequenceFiles of random keys and values, the files are
//! plain bytes: `part-m-00000`, `part-m-00001`, ... and then an empty `_SUCCESS`, as a job's
//! output. The same seed, size and file count always give the same bytes, whatever the number
//! of threads: every file has its own generator, seeded from (seed, file number).

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use sluice_api::{Counter, JobStatus, Phase};
use sluice_exec::JobOutput;
use sluice_io::{JobCommitter, PartAttempt, DEFAULT_WRITE_BUFFER};

use crate::gen::SplitMix64;
use crate::size::human_bytes;
use crate::{
    default_threads, file_count, parse_any_location, parse_size_arg, progress, stores, tasks,
    thread_count,
};

/// Options of `sluice gen random`.
#[derive(Args)]
pub(crate) struct RandomArgs {
    /// Total size, e.g. 10GiB, divided evenly among the files.
    #[arg(long, value_parser = parse_size_arg)]
    size: u64,
    /// Output directory (local, file://, hdfs:// or s3://; a plain path is on fs.defaultFS);
    /// must not exist.
    #[arg(long, short = 'o', value_parser = parse_any_location)]
    output: String,
    /// Number of files [default: one per 64 MiB, at least 1].
    #[arg(long, value_parser = file_count)]
    files: Option<usize>,
    /// Seed: the same seed, size and file count give the same bytes.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// A Hadoop-style setting: -D fs.defaultFS=hdfs://nn:8020, -D fs.s3a.endpoint=URL, ...
    /// Repeatable; HADOOP_CONF_DIR's core-site.xml and hdfs-site.xml are read first.
    #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = stores::parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Files written at once [default: number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Fills `chunk` with the next bytes of `rng`.
pub(crate) fn fill_random(chunk: &mut [u8], rng: &mut SplitMix64) {
    for word in chunk.chunks_mut(8) {
        let bytes = rng.next().to_le_bytes();
        word.copy_from_slice(&bytes[..word.len()]);
    }
}

/// The generator of file `index` under `seed`.
fn file_rng(seed: u64, index: usize) -> SplitMix64 {
    SplitMix64::stream(seed, u64::try_from(index).unwrap_or(u64::MAX))
}

/// Runs `sluice gen random`.
pub(crate) fn run(args: &RandomArgs) -> Result<()> {
    let config = stores::store_config(&args.define)?;
    let output = stores::resolve("--output", &args.output, &config)?;
    let stores = stores::stores(&config, "random");
    let files = match args.files {
        Some(files) => files,
        None => usize::try_from(args.size.div_ceil(64 << 20).max(1))
            .context("--size needs more files than can be counted")?,
    };
    // Set up before anything is written: an existing output is refused here, and whatever
    // fails later leaves nothing at the output (the committer is aborted when dropped).
    let job = JobOutput::set_up(&stores, &output)?;
    let threads = args.threads.unwrap_or_else(default_threads);
    let status = Arc::new(JobStatus::default());
    crate::cancel_on_ctrl_c(&status)?;
    status.set_input_bytes_total(args.size);
    status.enter(Phase::Map, u64::try_from(files).unwrap_or(u64::MAX));
    let display = progress::Display::start(Arc::clone(&status), args.quiet);
    let started = Instant::now();
    let count = u64::try_from(files).context("--files is too large")?;
    let (per_file, remainder) = (args.size / count, args.size % count);
    let outcome = tasks::run_parallel("random", files, threads, &status, |index, chunk| {
        let index_u64 = u64::try_from(index).context("file index")?;
        let bytes = per_file + u64::from(index_u64 < remainder);
        let name = format!("part-m-{index:05}");
        let mut rng = file_rng(args.seed, index);
        write_random(job.committer(), &name, bytes, &mut rng, chunk, &status)
    })
    .and_then(|_| job.commit().map_err(anyhow::Error::from));
    status.enter(Phase::Done, 0);
    display.stop();
    outcome.context("gen random failed; no output was written")?;
    if !args.quiet {
        eprintln!(
            "sluice: wrote {} in {files} file(s) to {output} in {:.2} s",
            human_bytes(args.size),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Writes `bytes` bytes of `rng` as part file `name` of the committer's output, and commits
/// it; an attempt that fails is aborted.
fn write_random(
    committer: &dyn JobCommitter,
    name: &str,
    bytes: u64,
    rng: &mut SplitMix64,
    chunk: &mut [u8],
    status: &JobStatus,
) -> Result<()> {
    let part = PartAttempt::new(name, 0);
    let location = committer.output().join(name);
    let result = (|| {
        let mut writer = committer
            .create_part(part, DEFAULT_WRITE_BUFFER)
            .with_context(|| format!("cannot create {location}"))?;
        let mut left = bytes;
        while left > 0 {
            if status.is_cancelled() {
                return Err(tasks::interrupted("random"));
            }
            let n = usize::try_from(left).map_or(chunk.len(), |left| left.min(chunk.len()));
            fill_random(&mut chunk[..n], rng);
            writer
                .write_all(&chunk[..n])
                .with_context(|| format!("cannot write {location}"))?;
            let written = u64::try_from(n).context("chunk length")?;
            status.counters.add(Counter::MapInputBytes, written);
            left -= written;
        }
        let written = writer
            .finish()
            .with_context(|| format!("cannot complete {location}"))?;
        if written != bytes {
            bail!("{location}: the store wrote {written} bytes of {bytes}");
        }
        committer.commit_task(part)?;
        Ok(())
    })();
    if result.is_err() {
        // The whole output is aborted too; this drops the attempt's file at once.
        let _ = committer.abort_task(part);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_have_their_own_bytes() {
        let mut a = vec![0u8; 1000];
        let mut b = vec![0u8; 1000];
        fill_random(&mut a, &mut file_rng(42, 0));
        fill_random(&mut b, &mut file_rng(42, 1));
        assert_ne!(a, b);
        // Not the same stream shifted either: no 8-byte word of file 1 occurs in file 0.
        let words = |bytes: &[u8]| -> std::collections::HashSet<Vec<u8>> {
            bytes.chunks_exact(8).map(<[u8]>::to_vec).collect()
        };
        assert!(
            words(&a).is_disjoint(&words(&b)),
            "file 1 repeats file 0's words"
        );
        let mut again = vec![0u8; 1000];
        fill_random(&mut again, &mut file_rng(42, 0));
        assert_eq!(a, again);
        // A chunk that is not a whole number of words is filled to its end.
        let mut odd = vec![0u8; 13];
        fill_random(&mut odd, &mut file_rng(1, 0));
        assert_ne!(&odd[8..], &[0u8; 5]);
    }
}
