//! Engine-level tests that need to reach inside a running job: corruption of spill files between
//! the map and reduce phases, and the memory budget as the pool sees it.

// Helpers of these tests are not `#[test]` functions, so clippy's test allowance does not cover them;
// a panic there is a test failure, which is what we want.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_api::{
    Emit, ExecError, Job, JobConfig, JobStatus, MapInput, Mapper, PlannedInput, MIN_MEMORY,
};
use sluice_exec::run_job;
use sluice_jobs as jobs;

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
    let mut rows = vec![0u8; 50_000 * sluice_hadoop::tera::ROW_LEN];
    sluice_hadoop::tera::RowGenerator::new(0).fill(&mut rows);
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

/// Emits the words of each line through [`Emit::emit_counts`], with counts of 2.
struct SpanMapper;

impl Mapper for SpanMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let mut words = jobs::tokenize(line);
        let mut spans = Vec::new();
        while let Some(span) = words.next_span() {
            spans.push(span);
        }
        out.emit_counts(line, &spans, 2)
    }
}

/// Writes each key's summed count as decimal text.
struct SumToText;

impl sluice_api::Reducer for SumToText {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut sluice_api::Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let total = jobs::sum_counts(values)?;
        out.emit(key, total.to_string().as_bytes())
    }
}

/// Re-emits each key's summed count as a count (a combiner).
struct SumCombiner;

impl sluice_api::Reducer for SumCombiner {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut sluice_api::Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let total = jobs::sum_counts(values)?;
        out.emit_count(key, total)
    }
}

/// Counted keys emitted in batches reach the hash table, a sort-based combiner and an
/// uncombined sort alike, whatever their length (short keys near the end of a line are read
/// differently from the others), and the map output counters count each key once.
#[test]
fn counted_key_batches_give_the_same_sums_through_every_collector() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("words.txt");
    let mut text = String::new();
    for i in 0..20_000u64 {
        // Words from 1 to 40 bytes, some ending the line, with runs of delimiters between.
        let len = (i * 7 % 40 + 1) as usize;
        let word: String = (0..len)
            .map(|j| (b'a' + ((i + j as u64) % 5) as u8) as char)
            .collect();
        text.push_str(&format!(
            "{word} \t x{}\r\n{}\n",
            i % 97,
            &word[..len.min(3)]
        ));
    }
    std::fs::write(&input, &text).unwrap();

    // Reference: a plain split on the five delimiters, counted in a map.
    let mut expected = std::collections::BTreeMap::<&str, u64>::new();
    for word in text
        .split([' ', '\t', '\n', '\r', '\x0c'])
        .filter(|w| !w.is_empty())
    {
        *expected.entry(word).or_default() += 2;
    }
    let words: u64 = expected.values().sum::<u64>() / 2;
    let word_bytes: u64 = text
        .split([' ', '\t', '\n', '\r', '\x0c'])
        .map(|w| w.len() as u64)
        .sum();
    let expected: String = expected
        .iter()
        .map(|(w, c)| format!("{w}\t{c}\n"))
        .collect();

    let combines = [
        ("hash table", sluice_api::Combine::SumCounts),
        (
            "combiner",
            sluice_api::Combine::Reducer(Arc::new(|_: &sluice_api::TaskContext| {
                Box::new(SumCombiner) as Box<dyn sluice_api::Reducer>
            })),
        ),
        ("no combiner", sluice_api::Combine::None),
    ];
    for (name, combine) in combines {
        let mut job = jobs::wordcount(1);
        job.mapper = Arc::new(|_: &MapInput| Box::new(SpanMapper) as Box<dyn Mapper>);
        job.stages[0].combine = combine;
        job.stages[0].reducer = Arc::new(|_: &sluice_api::TaskContext| {
            Box::new(SumToText) as Box<dyn sluice_api::Reducer>
        });
        let output = dir.path().join(format!("out-{}", name.replace(' ', "-")));
        let config = JobConfig::new(vec![input.clone()], output.clone())
            .with_memory(MIN_MEMORY)
            .with_threads(2)
            .with_split_size(64 << 10);
        let report = run_job(&job, &config, Arc::new(JobStatus::default())).unwrap();
        let got = std::fs::read_to_string(output.join("part-r-00000")).unwrap();
        assert!(got == expected, "{name}: counts differ from the reference");
        assert_eq!(report.counters.map_output_records, words, "{name}");
        // Hadoop's WordCount emits a Text (a one-byte length below 128 bytes, then the
        // word) and an IntWritable (four bytes) per word; words here are at most 40 bytes.
        assert_eq!(
            report.counters.map_output_bytes,
            word_bytes + 5 * words,
            "{name}"
        );
    }
}

/// Word counts of `text` as `word\tcount` lines in byte order, computed independently.
fn reference_word_counts(text: &str) -> String {
    let mut counts = std::collections::BTreeMap::<&str, u64>::new();
    for word in text
        .split([' ', '\t', '\n', '\r', '\x0c'])
        .filter(|w| !w.is_empty())
    {
        *counts.entry(word).or_default() += 1;
    }
    counts.iter().map(|(w, c)| format!("{w}\t{c}\n")).collect()
}

/// With many map tasks, the memory runs of finished tasks are merged and their counts summed
/// while later tasks still run; under a tiny budget, spill files are summed as they are merged.
/// Either way the reducers read far fewer records than the tasks produced, and the counts are
/// right.
#[test]
fn word_count_sums_counts_in_merges_during_the_map_phase() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("words.txt");
    // 40 splits of 32 KiB, each holding (nearly) all 2,000 words.
    let mut text = String::new();
    let mut i = 0u64;
    while text.len() < 40 * (32 << 10) {
        text.push_str(&format!("w{} w{} x\n", i % 2000, (i * 7) % 1999));
        i += 1;
    }
    std::fs::write(&input, &text).unwrap();
    let expected = reference_word_counts(&text);

    for (memory, split) in [(1usize << 30, 32u64 << 10), (MIN_MEMORY, 8 << 10)] {
        let output = dir.path().join(format!("out-{memory}"));
        let config = JobConfig::new(vec![input.clone()], output.clone())
            .with_memory(memory)
            .with_threads(2)
            .with_split_size(split);
        let report = run_job(&jobs::wordcount(1), &config, Arc::new(JobStatus::default())).unwrap();
        let got = std::fs::read_to_string(output.join("part-r-00000")).unwrap();
        assert!(
            got == expected,
            "budget {memory}: counts differ from the reference"
        );
        let c = &report.counters;
        // Without merges the reducer would read every task's distinct words: over 40 × 2,000.
        assert!(
            c.reduce_input_records < c.map_tasks * 2000 / 2,
            "budget {memory}: the reducer read {} records from {} tasks: {c:?}",
            c.reduce_input_records,
            c.map_tasks
        );
        assert!(report.peak_memory_reserved <= report.memory_budget);
    }
}

/// Memory a task holds outside its buffers (a streaming program's rings) comes off the budget
/// once per thread: the same sort that fits in 64 MiB spills when each of two tasks holds
/// 31 MiB besides, with the same output; the report counts that memory as reserved; and a job
/// that would leave less than the minimum for buffers is refused before it creates anything.
#[test]
fn memory_held_by_tasks_comes_off_the_budget() {
    const BUDGET: usize = 64 << 20;
    let dir = tempfile::tempdir().unwrap();
    let input = write_input(dir.path(), 300_000);
    let run = |name: &str, per_task: usize| {
        let mut job = jobs::sort(1);
        job.memory_per_task = per_task;
        let output = dir.path().join(name);
        let config = JobConfig::new(vec![input.clone()], output.clone())
            .with_memory(BUDGET)
            .with_threads(2)
            .with_split_size(1 << 20);
        let result = run_job(&job, &config, Arc::new(JobStatus::default()));
        (result, output)
    };

    let (roomy, roomy_out) = run("roomy", 0);
    let roomy = roomy.unwrap();
    assert_eq!(roomy.counters.spilled_runs, 0, "{:?}", roomy.counters);

    let held = BUDGET / 2 - MIN_MEMORY / 2;
    let (tight, tight_out) = run("tight", held);
    let tight = tight.unwrap();
    assert!(tight.counters.spilled_runs > 0, "{:?}", tight.counters);
    assert!(tight.peak_memory_reserved >= 2 * held);
    assert!(tight.peak_memory_reserved <= BUDGET);
    assert_eq!(tight.forced_memory, 0);
    let part = |dir: &Path| std::fs::read(dir.join("part-r-00000")).unwrap();
    assert!(
        part(&roomy_out) == part(&tight_out),
        "output differs when tasks hold memory outside the pool"
    );

    let (refused, refused_out) = run("refused", held + 1);
    let message = refused.unwrap_err().chain();
    assert!(
        message.contains("shared-memory rings") && message.contains(&BUDGET.to_string()),
        "{message}"
    );
    assert!(!refused_out.exists(), "a refused job created its output");
}

/// Emits each line as the key, its offset as the value.
struct OffsetMapper;

impl Mapper for OffsetMapper {
    fn map(&mut self, offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        out.emit(line, offset.to_string().as_bytes())
    }
}

#[test]
fn planned_splits_replace_the_byte_plan() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.txt");
    std::fs::write(&input, "a\nbb\nccc\n").unwrap();
    let file = sluice_io::InputFile {
        path: input.clone(),
        len: 9,
        compression: sluice_io::Compression::None,
    };
    let split = |start, len| {
        sluice_io::MapSplit::File(sluice_io::Split {
            file: 0,
            start,
            len,
        })
    };
    let job = Job::new("planned", |_| OffsetMapper);
    // Two tasks where the 32 MiB byte plan would make one: lines 1-2, then line 3.
    let plan = PlannedInput {
        files: vec![file.clone().into()],
        splits: vec![split(0, 4), split(4, 5)],
    };
    let output = dir.path().join("out");
    let config = JobConfig::new(vec![input.clone()], output.clone()).with_planned_input(plan);
    let report = run_job(&job, &config, Arc::new(JobStatus::default())).unwrap();
    assert_eq!(report.splits, 2);
    let part = |name: &str| std::fs::read_to_string(output.join(name)).unwrap();
    assert_eq!(part("part-m-00000"), "a\t0\nbb\t2\n");
    assert_eq!(part("part-m-00001"), "ccc\t5\n");
    assert!(!output.join("part-m-00002").exists());

    // No split at all: a map-only job writes no part file.
    let empty = dir.path().join("none");
    let config =
        JobConfig::new(vec![input.clone()], empty.clone()).with_planned_input(PlannedInput {
            files: vec![file.clone().into()],
            splits: Vec::new(),
        });
    assert_eq!(
        run_job(&job, &config, Arc::new(JobStatus::default()))
            .unwrap()
            .splits,
        0
    );
    assert!(empty.join("_SUCCESS").exists());
    assert!(!empty.join("part-m-00000").exists());

    // A split naming a file the plan does not hold is refused before anything runs.
    let bad = dir.path().join("bad");
    let config = JobConfig::new(vec![input], bad.clone()).with_planned_input(PlannedInput {
        files: vec![file.into()],
        splits: vec![sluice_io::MapSplit::File(sluice_io::Split {
            file: 1,
            start: 0,
            len: 1,
        })],
    });
    let err = run_job(&job, &config, Arc::new(JobStatus::default())).unwrap_err();
    assert!(matches!(err, ExecError::Config(_)), "{err}");
    assert!(!bad.exists());
}
