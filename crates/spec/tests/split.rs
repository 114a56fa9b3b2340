//! A streaming reducer program is never given a key range of its partition: it may count,
//! buffer or write across keys. Under a configuration that splits every partition it can
//! (a threshold of one byte, more threads than reducers), a built-in word count is split, and
//! a streaming reducer that prints how many keys it saw, once, at its end, still prints
//! exactly one such line per partition, the counts adding up to the distinct keys.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use sluice_api::{JobConfig, JobStatus};
use sluice_exec::run_job;
use sluice_spec::StreamingSpec;

const REDUCERS: usize = 2;

/// Splits every partition a job allows it to: 4 threads for 2 reduce tasks leave at least 3
/// for each.
fn splitting(config: JobConfig) -> JobConfig {
    config
        .with_threads(4)
        .with_memory(64 << 20)
        .with_split_size(8192)
        .with_reduce_split_bytes(Some(1))
}

/// `word\t1` lines of 3000 distinct words, each several times; returns the words.
fn write_input(path: &Path) -> BTreeSet<String> {
    let mut text = String::new();
    let mut words = BTreeSet::new();
    for i in 0..12_000u64 {
        let word = format!("w{:05}", (i * 7919) % 3000);
        text.push_str(&word);
        text.push_str("\t1\n");
        words.insert(word);
    }
    std::fs::write(path, text).unwrap();
    words
}

#[test]
fn a_streaming_reducer_is_never_split_into_key_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("words.txt");
    let words = write_input(&input);

    // The control: the same configuration splits a job that allows it.
    let control_out = dir.path().join("control");
    let status = Arc::new(JobStatus::default());
    let config = splitting(JobConfig::new(vec![input.clone()], control_out));
    let report = run_job(&sluice_jobs::wordcount(REDUCERS), &config, status).unwrap();
    assert!(
        report.counters.reduce_ranges >= 2,
        "the configuration split nothing: {:?}",
        report.counters
    );

    let script = dir.path().join("count_keys.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\nexec awk -F'\\t' '$1 != last { n++; last = $1 } END { print \"keys \" n }'\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let output = dir.path().join("out");
    let args: Vec<String> = [
        "-D",
        &format!("mapreduce.job.reduces={REDUCERS}"),
        "-files",
        script.to_str().unwrap(),
        "-input",
        input.to_str().unwrap(),
        "-output",
        output.to_str().unwrap(),
        "-mapper",
        "cat",
        "-reducer",
        "count_keys.sh",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    let spec = StreamingSpec::new(args);
    let parsed = sluice_streaming::parse_args(&spec.args).unwrap();
    let status = Arc::new(JobStatus::default());
    let built = sluice_streaming::build_with(
        &parsed,
        &spec.submission(),
        &sluice_io::Stores::local(),
        Arc::clone(&status),
    )
    .unwrap();
    let result = run_job(&built.job, &splitting(built.config.clone()), status);
    built.cleanup(false);
    let report = result.unwrap();
    assert_eq!(
        report.counters.reduce_ranges, 0,
        "a streaming job was split"
    );

    let mut total = 0;
    for part in 0..REDUCERS {
        let text = std::fs::read_to_string(output.join(format!("part-{part:05}"))).unwrap();
        let counts: Vec<&str> = text.lines().filter(|l| l.starts_with("keys ")).collect();
        assert_eq!(counts.len(), 1, "part {part}: {text:?}");
        total += counts[0]
            .trim_start_matches("keys ")
            .trim()
            .parse::<usize>()
            .unwrap();
    }
    assert_eq!(total, words.len());
}
