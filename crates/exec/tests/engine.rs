//! Engine-level tests that need to reach inside a running job: corruption of spill files between
//! the map and reduce phases, and the memory budget as the pool sees it.

// Helpers of these tests are not `#[test]` functions, so clippy's test allowance does not cover them;
// a panic there is a test failure, which is what we want.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_exec::{
    jobs, run_job, Emit, ExecError, Job, JobConfig, JobStatus, MapInput, Mapper, MIN_MEMORY,
};

/// Writes `lines` distinct-keyed lines (`key-NNNNNNN\tpayload`) in reverse key order.
fn write_input(dir: &Path, lines: usize) -> PathBuf {
    let path = dir.join("input.txt");
    let mut text = String::new();
    for i in (0..lines).rev() {
        text.push_str(&format!("key-{i:07}\tpayload {}\n", i * 7919 % 1000));
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// Flips one byte in the middle of every spill file under `parent` (in the job's scratch dir).
fn corrupt_spills(parent: &Path) -> usize {
    let mut corrupted = 0;
    for dir in std::fs::read_dir(parent).unwrap().flatten() {
        if !dir
            .file_name()
            .to_string_lossy()
            .starts_with(".sluice-spill-")
        {
            continue;
        }
        for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
            let mut bytes = std::fs::read(file.path()).unwrap();
            if bytes.len() > 64 {
                let middle = bytes.len() / 2;
                bytes[middle] ^= 0x55;
                std::fs::write(file.path(), bytes).unwrap();
                corrupted += 1;
            }
        }
    }
    corrupted
}

/// A mapper that behaves like the sort job's (or, with `whole_record`, like terasort's: the
/// record is the key), and at the end of its task damages the spill files written so far — as
/// a failing disk would between map and reduce.
struct CorruptingMapper {
    spill_parent: PathBuf,
    corrupted: Arc<std::sync::atomic::AtomicUsize>,
    whole_record: bool,
}

impl Mapper for CorruptingMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if self.whole_record {
            return out.emit(line, b"");
        }
        let key_end = line.iter().position(|&b| b == b'\t').unwrap_or(line.len());
        out.emit(&line[..key_end], line)
    }

    fn finish(&mut self, _out: &mut dyn Emit) -> Result<(), ExecError> {
        let n = corrupt_spills(&self.spill_parent);
        self.corrupted
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

/// Runs `job` on `input` (in `dir`) with its mapper replaced by a [`CorruptingMapper`], and
/// checks that the job fails naming a spill file and what is wrong with it, leaving no output.
fn assert_corrupt_spill_fails(dir: &Path, mut job: Job, input: PathBuf, whole_record: bool) {
    let scratch = dir.join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    let output = dir.join("out");
    let corrupted = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (parent, counter) = (scratch.clone(), Arc::clone(&corrupted));
    job.mapper = Arc::new(move |_: &MapInput| {
        Box::new(CorruptingMapper {
            spill_parent: parent.clone(),
            corrupted: Arc::clone(&counter),
            whole_record,
        }) as Box<dyn Mapper>
    });
    let config = JobConfig::new(vec![input], output.clone())
        .with_memory(MIN_MEMORY)
        .with_threads(1)
        .with_spill_parent(scratch);
    let err = run_job(&job, &config, Arc::new(JobStatus::default())).unwrap_err();
    assert!(
        corrupted.load(std::sync::atomic::Ordering::Relaxed) > 0,
        "nothing spilled"
    );
    // The whole chain, as the command line prints it.
    let message = err.chain();
    assert!(
        message.contains(".spill"),
        "error does not name the spill file: {message}"
    );
    assert!(
        message.contains("checksum") || message.contains("corrupt"),
        "error does not say what is wrong: {message}"
    );
    assert!(!output.exists(), "a failed job left its output directory");
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("sluice-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "temporary output left behind");
}

#[test]
fn corrupt_spill_block_fails_the_job_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_input(dir.path(), 200_000);
    assert_corrupt_spill_fails(dir.path(), jobs::sort(2), input, false);
}

#[test]
fn corrupt_run_block_fails_a_terasort_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("rows");
    let mut rows = vec![0u8; 50_000 * sluice_format::tera::ROW_LEN];
    sluice_format::tera::RowGenerator::new(0).fill(&mut rows);
    std::fs::write(&input, rows).unwrap();
    let job = jobs::terasort(std::slice::from_ref(&input), 1 << 20, 3, 1000)
        .unwrap()
        .job;
    assert_corrupt_spill_fails(dir.path(), job, input, true);
}

#[test]
fn sort_under_a_tiny_budget_spills_stays_within_it_and_is_correct() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_input(dir.path(), 300_000);
    let output = dir.path().join("out");
    let config = JobConfig::new(vec![input.clone()], output.clone())
        .with_memory(MIN_MEMORY)
        .with_threads(2)
        .with_split_size(1 << 20);
    let status = Arc::new(JobStatus::default());
    let report = run_job(&jobs::sort(1), &config, Arc::clone(&status)).unwrap();
    assert!(report.counters.spilled_runs > 1, "{:?}", report.counters);
    assert!(report.peak_memory_reserved <= report.memory_budget);
    assert_eq!(report.forced_memory, 0);

    // Reference: the input lines sorted by key with a plain (stable) sort.
    let text = std::fs::read(&input).unwrap();
    let mut lines: Vec<&[u8]> = text
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    lines.sort_by_key(|l| l.split(|&b| b == b'\t').next().unwrap_or(&[]).to_vec());
    let mut expected = Vec::new();
    for l in lines {
        expected.extend_from_slice(l);
        expected.push(b'\n');
    }
    let got = std::fs::read(output.join("part-r-00000")).unwrap();
    assert!(got == expected, "sorted output differs from the reference");
    assert!(output.join("_SUCCESS").exists());
}
