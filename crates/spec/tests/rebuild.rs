//! A job rebuilt from its spec, after a JSON round trip, is the job its submitter built: both
//! run on the same input with the same configuration and write the same bytes.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_api::{Job, JobConfig, JobStatus};
use sluice_exec::run_job;
use sluice_spec::{BuiltJob, JobSpec, StreamingSpec};

/// The spec as another process gets it.
fn through_json(spec: &JobSpec) -> JobSpec {
    serde_json::from_str(&serde_json::to_string(spec).unwrap()).unwrap()
}

fn build(spec: &JobSpec) -> BuiltJob {
    through_json(spec)
        .build(Arc::new(JobStatus::default()))
        .unwrap()
}

/// The files of an output directory, by name.
type Output = BTreeMap<String, Vec<u8>>;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Two text files of a few KB in `dir/text`: words from a small vocabulary (some of them not
/// UTF-8), tabs, repeated keys.
fn write_text(dir: &Path) -> PathBuf {
    let words: [&[u8]; 12] = [
        b"apple",
        b"banana",
        b"cherry",
        b"date",
        b"elder",
        b"fig",
        b"grape",
        b"caf\xe9",
        b"\xff\xfe",
        b"kiwi",
        b"lemon",
        b"mango",
    ];
    let root = dir.join("text");
    std::fs::create_dir(&root).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for name in ["a.txt", "b.txt"] {
        let mut text = Vec::new();
        for _ in 0..200 {
            let n = 1 + rng.below(8);
            for i in 0..n {
                if i == 1 {
                    text.push(b'\t');
                } else if i > 0 {
                    text.push(b' ');
                }
                text.extend_from_slice(words[rng.below(words.len())]);
            }
            text.push(b'\n');
        }
        std::fs::write(root.join(name), text).unwrap();
    }
    root
}

/// 400 TeraSort rows (100 bytes: a 10-byte key, then filler) in `dir/rows`; keys repeat.
fn write_rows(dir: &Path) -> PathBuf {
    let path = dir.join("rows");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut rows = Vec::new();
    for row in 0..400u32 {
        let key = if row.is_multiple_of(7) { 7 } else { rng.next() };
        rows.extend_from_slice(&key.to_be_bytes());
        rows.extend_from_slice(&(row as u16).to_be_bytes());
        rows.extend(std::iter::repeat_n(b'A' + (row % 26) as u8, 88));
        rows.extend_from_slice(b"\r\n");
    }
    std::fs::write(&path, rows).unwrap();
    path
}

/// The configuration both runs of a job get: several splits, two threads.
fn config(input: &Path, output: &Path) -> JobConfig {
    JobConfig::new(vec![input.to_path_buf()], output.to_path_buf())
        .with_threads(2)
        .with_split_size(4096)
        .with_memory(64 << 20)
}

/// Every file of an output directory, by name.
fn read_output(dir: &Path) -> Output {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let name = entry.file_name().into_string().unwrap();
            (name, std::fs::read(entry.path()).unwrap())
        })
        .collect()
}

/// Runs `direct` and `rebuilt` on `input` into two output directories; returns what each
/// wrote, checking that there is something in it.
fn run_both(direct: &Job, rebuilt: &Job, input: &Path, dir: &Path) -> (Output, Output) {
    let mut outputs = Vec::new();
    for (job, name) in [(direct, "direct"), (rebuilt, "rebuilt")] {
        let output = dir.join(name);
        run_job(job, &config(input, &output), Arc::new(JobStatus::default())).unwrap();
        let files = read_output(&output);
        assert!(files.contains_key("_SUCCESS"), "{name}: {:?}", files.keys());
        assert!(
            files.values().any(|bytes| !bytes.is_empty()),
            "{name} wrote nothing"
        );
        outputs.push(files);
    }
    let rebuilt = outputs.pop().unwrap();
    (outputs.pop().unwrap(), rebuilt)
}

fn assert_same_output(direct: &Job, spec: &JobSpec, input: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let built = build(spec);
    let (direct, rebuilt) = run_both(direct, built.job(), input, dir.path());
    assert!(direct == rebuilt, "{spec:?}: the outputs differ");
}

#[test]
fn wordcount_rebuilds_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_text(dir.path());
    let spec = JobSpec::WordCount {
        reducers: 2,
        output_codec: None,
        sequence_file_input: false,
        sequence_file_output: None,
    };
    assert_same_output(&sluice_jobs::wordcount(2), &spec, &input);
}

#[test]
fn grep_rebuilds_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_text(dir.path());
    let pattern = r"([a-z])a\w*";
    let regex = regex::bytes::Regex::new(pattern).unwrap();
    let spec = JobSpec::Grep {
        pattern: pattern.to_string(),
        java_lines: false,
        group: 1,
        reducers: 3,
        output_codec: None,
        sequence_file_input: false,
    };
    assert_same_output(&sluice_jobs::grep(regex.clone(), 1, 3), &spec, &input);
    let spec = JobSpec::Grep {
        pattern: pattern.to_string(),
        java_lines: true,
        group: 1,
        reducers: 3,
        output_codec: None,
        sequence_file_input: false,
    };
    let java = sluice_jobs::grep_lines(regex, 1, 3, sluice_jobs::GrepLines::JavaStrings);
    assert_same_output(&java, &spec, &input);
}

#[test]
fn sort_rebuilds_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_text(dir.path());
    let spec = JobSpec::Sort {
        reducers: 3,
        output_codec: None,
    };
    assert_same_output(&sluice_jobs::sort(3), &spec, &input);
}

#[test]
fn inverted_index_rebuilds_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_text(dir.path());
    let spec = JobSpec::InvertedIndex {
        reducers: 2,
        output_codec: None,
        sequence_file_input: false,
    };
    assert_same_output(&sluice_jobs::inverted_index(2), &spec, &input);
}

/// The sample is taken once; the rebuilt job partitions at the boundaries in the spec, which
/// are rows of arbitrary bytes.
#[test]
fn terasort_rebuilds_the_same_from_its_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_rows(dir.path());
    let inputs = [input.clone()];
    let direct = sluice_jobs::terasort(&inputs, 4096, 3, 1000).unwrap();

    let sample = sluice_jobs::sample_terasort(&inputs, 4096, 3, 1000).unwrap();
    assert_eq!(sample.boundaries.len(), 2);
    assert!(sample
        .boundaries
        .iter()
        .any(|b| std::str::from_utf8(b).is_err()));
    let spec = JobSpec::TeraSort {
        reducers: 3,
        output_codec: None,
        boundaries: sample.boundaries.clone(),
    };
    let BuiltJob::TeraSort(rebuilt) = build(&spec) else {
        panic!("a terasort spec built another job");
    };
    assert_eq!(rebuilt.boundaries(), direct.boundaries());

    let (direct_out, rebuilt_out) = run_both(&direct.job, &rebuilt.job, &input, dir.path());
    assert!(direct_out == rebuilt_out, "the outputs differ");
    // Every part file has rows: the boundaries did divide them.
    for part in ["part-r-00000", "part-r-00001", "part-r-00002"] {
        assert!(!rebuilt_out[part].is_empty(), "{part} is empty");
    }
    assert_eq!(rebuilt.input_checksum(), direct.input_checksum());
    assert!(direct.input_checksum().is_some_and(|c| c.value() != 0));

    // A worker's build writes the same rows and leaves the checksum (which its coordinator
    // would never see) out.
    let BuiltJob::TeraSort(on_worker) = through_json(&spec)
        .build_for_worker(&sluice_io::Stores::local(), Arc::new(JobStatus::default()))
        .unwrap()
    else {
        panic!("a terasort spec built another job");
    };
    let worker_dir = tempfile::tempdir().unwrap();
    let (_, worker_out) = run_both(&direct.job, &on_worker.job, &input, worker_dir.path());
    assert!(
        worker_out == direct_out,
        "the worker's build wrote other rows"
    );
    assert_eq!(on_worker.input_checksum(), None);
}

/// Writes an executable shell script.
fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Builds the streaming job of `args` directly and from its spec (the same submission), runs
/// the first, then the second, into the same output path, and returns both outputs.
fn run_streaming_both(args: Vec<String>, output: &Path) -> (StreamingSpec, Output, Output) {
    let spec = StreamingSpec::new(args);
    let parsed = sluice_streaming::parse_args(&spec.args).unwrap();
    let status = Arc::new(JobStatus::default());
    let direct = sluice_streaming::build_with(
        &parsed,
        &spec.submission(),
        &sluice_io::Stores::local(),
        Arc::clone(&status),
    )
    .unwrap();
    // Both builds exist at once, as in two processes on one machine.
    let rebuilt_status = Arc::new(JobStatus::default());
    let BuiltJob::Streaming(rebuilt) = through_json(&JobSpec::Streaming(spec.clone()))
        .build(Arc::clone(&rebuilt_status))
        .unwrap()
    else {
        panic!("a streaming spec built another job");
    };
    assert_eq!(rebuilt.job_id(), spec.job_id);
    assert_eq!(direct.job_id(), spec.job_id);
    assert_ne!(rebuilt.log_dir(), direct.log_dir());

    let mut outputs = Vec::new();
    for (built, status, name) in [
        (&direct, status, "direct"),
        (&rebuilt, rebuilt_status, "rebuilt"),
    ] {
        let config = built.config.clone().with_threads(2).with_memory(64 << 20);
        assert_eq!(config.output, sluice_io::Location::from_path(output));
        let result = run_job(&built.job, &config, status);
        built.cleanup(false);
        result.unwrap();
        let files = read_output(output);
        assert!(files.contains_key("_SUCCESS"), "{name}: {:?}", files.keys());
        std::fs::rename(output, output.with_extension(name)).unwrap();
        outputs.push(files);
    }
    let rebuilt_out = outputs.pop().unwrap();
    (spec, outputs.pop().unwrap(), rebuilt_out)
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

#[test]
fn a_streaming_job_rebuilds_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_text(dir.path());
    let output = dir.path().join("out");
    let args = strings(&[
        "-D",
        "mapreduce.job.reduces=2",
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        "cat",
        "-reducer",
        "wc -l",
    ]);
    let (_, direct, rebuilt) = run_streaming_both(args, &output);
    assert!(
        direct == rebuilt,
        "the outputs differ: {direct:?} {rebuilt:?}"
    );
    assert!(direct.contains_key("part-00001"), "{:?}", direct.keys());
}

/// The programs see the job id of the spec, whichever process built the job; a shipped
/// script runs from the task's directory in both.
#[test]
fn a_streaming_job_keeps_its_job_id_and_shipped_files() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_text(dir.path());
    let output = dir.path().join("out");
    let script = dir.path().join("count.sh");
    write_script(
        &script,
        "#!/bin/sh\nn=$(wc -l)\necho \"$mapreduce_job_id $mapreduce_task_partition $n\"\n",
    );
    let args = strings(&[
        "-files",
        script.to_str().unwrap(),
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        "cat",
        "-reducer",
        "count.sh",
        "-numReduceTasks",
        "3",
    ]);
    let (spec, direct, rebuilt) = run_streaming_both(args, &output);
    assert!(
        direct == rebuilt,
        "the outputs differ: {direct:?} {rebuilt:?}"
    );
    let first = String::from_utf8(rebuilt["part-00000"].clone()).unwrap();
    assert!(
        first.starts_with(&format!("{} 0 ", spec.job_id)),
        "{first:?}"
    );
}
