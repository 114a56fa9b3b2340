//! A partition reduced as key ranges, driven through `run_job`: a range's output larger than
//! its memory goes through a scratch file and still lands in key order, and a range that
//! fails fails the job with its own error and commits nothing.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use sluice_api::{
    Emit, ExecError, Job, JobConfig, JobReport, JobStatus, Mapper, OutputFormat, Reducer, Stage,
    Values,
};

/// Each line is a key, its value the line again.
struct Lines;

impl Mapper for Lines {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let key = line.split(|&b| b == b' ').next().unwrap_or(line);
        out.emit(key, line)
    }
}

/// Writes every value; fails at the key `fail_at`, if given.
struct Identity {
    fail_at: Option<Vec<u8>>,
}

impl Reducer for Identity {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        if self.fail_at.as_deref() == Some(key) {
            return Err(ExecError::user("the reducer refused this key"));
        }
        while let Some(value) = values.next_value()? {
            out.emit(key, value)?;
        }
        Ok(())
    }
}

fn job(fail_at: Option<&str>) -> Job {
    let fail_at = fail_at.map(|k| k.as_bytes().to_vec());
    Job::new("ranges", |_| Lines)
        .with_stage(
            Stage::new(1, move |_| Identity {
                fail_at: fail_at.clone(),
            })
            .with_independent_keys(),
        )
        .with_output(OutputFormat::ValueOnly)
}

/// 60,000 lines of distinct keys `kNNNNN` and values of varying length, in a scrambled
/// order; returns them sorted.
fn write_input(path: &Path) -> Vec<String> {
    let mut lines: Vec<String> = (0..60_000u64)
        .map(|i| {
            let k = (i * 7919) % 60_000;
            format!("k{k:05} {}", "x".repeat((k % 50) as usize))
        })
        .collect();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
    lines.sort();
    lines
}

fn run(job: &Job, input: &Path, output: &Path, memory: usize) -> Result<JobReport, ExecError> {
    let config = JobConfig::new(vec![input.to_path_buf()], output.to_path_buf())
        .with_threads(3)
        .with_memory(memory)
        .with_split_size(256 << 10)
        .with_reduce_split_bytes(Some(1));
    sluice_exec::run_job(job, &config, Arc::new(JobStatus::default()))
}

#[test]
fn a_range_beyond_its_memory_goes_through_a_scratch_file_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    let sorted = write_input(&input);
    let output = dir.path().join("out");
    // 4 MiB for 3 threads: each range holds well under a megabyte of the ~2 MB of output.
    let report = run(&job(None), &input, &output, 4 << 20).unwrap();
    assert_eq!(report.counters.reduce_ranges, 3, "{:?}", report.counters);
    let text = std::fs::read_to_string(output.join("part-r-00000")).unwrap();
    let got: Vec<&str> = text.lines().collect();
    assert_eq!(got.len(), sorted.len());
    assert!(got == sorted, "the part file is not the sorted input");
    assert_eq!(report.counters.output_records, 60_000);
    assert_eq!(report.counters.reduce_input_records, 60_000);
    assert_eq!(report.counters.reduce_input_groups, 60_000);
}

#[test]
fn a_failing_range_fails_the_job_and_commits_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    write_input(&input);
    // The last key is in the last range; the first in range 0, which writes the part file.
    for fail_at in ["k59999", "k00000"] {
        let output = dir.path().join(format!("out-{fail_at}"));
        let error = run(&job(Some(fail_at)), &input, &output, 64 << 20).unwrap_err();
        assert!(
            error.chain().contains("the reducer refused this key"),
            "{fail_at}: {}",
            error.chain()
        );
        assert!(!output.exists(), "{fail_at}: an output was committed");
    }
    // Nothing left beside the input: no spill or temporary directory.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name != "in.txt")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
