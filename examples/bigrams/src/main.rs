//! A custom job: count pairs of adjacent words ("bigrams") with sluice's engine.
//!
//! It shows the whole public API a Rust user needs: a [`Mapper`], a [`Reducer`], a [`Stage`]
//! with a combiner, and [`run_job`]. Run it as
//!
//! ```text
//! cargo run --release -p sluice-example-bigrams -- INPUT... OUTPUT
//! ```
//!
//! Output: `first second<TAB>count` lines sorted by pair.

use std::path::PathBuf;
use std::sync::Arc;

use sluice_api::{
    Combine, Emit, ExecError, Job, JobConfig, JobStatus, Mapper, Reducer, Stage, Values,
};
use sluice_exec::run_job;
use sluice_jobs::{sum_counts, tokenize};

/// Emits `(first second, 1)` for every pair of adjacent words of a line, through
/// [`Emit::emit_count`]: with [`Combine::SumCounts`] the map side then adds the 1 to a hash
/// table without encoding and decoding it.
struct BigramMapper {
    pair: Vec<u8>,
}

impl Mapper for BigramMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let mut words = tokenize(line);
        let Some(mut previous) = words.next() else {
            return Ok(());
        };
        for word in words {
            self.pair.clear();
            self.pair.extend_from_slice(previous);
            self.pair.push(b' ');
            self.pair.extend_from_slice(word);
            out.emit_count(&self.pair, 1)?;
            previous = word;
        }
        Ok(())
    }
}

/// Sums the counts of a pair and writes it as decimal text.
struct SumToText;

impl Reducer for SumToText {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let total = sum_counts(values)?;
        out.emit(key, total.to_string().as_bytes())
    }
}

/// The bigram job with `reducers` part files.
fn bigram_job(reducers: usize) -> Job {
    Job::new("bigrams", |_| BigramMapper { pair: Vec::new() }).with_stage(
        // Counts are summed in a hash table on the map side.
        Stage::new(reducers, |_| SumToText).with_combine(Combine::SumCounts),
    )
}

fn main() -> std::process::ExitCode {
    let mut args: Vec<PathBuf> = std::env::args_os().skip(1).map(PathBuf::from).collect();
    let Some(output) = args.pop().filter(|_| !args.is_empty()) else {
        eprintln!("usage: bigrams INPUT... OUTPUT");
        return std::process::ExitCode::from(2);
    };
    let config = JobConfig::new(args, output);
    match run_job(&bigram_job(1), &config, Arc::new(JobStatus::default())) {
        Ok(report) => {
            eprintln!(
                "bigrams: {} pairs in {:.2} s, output in {}",
                report.counters.output_records, report.wall_seconds, report.output
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("bigrams: error: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn counts_pairs_like_a_direct_computation() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.txt");
        let text = "the cat sat\non the mat\nthe cat  ran\n\nsolo\n";
        std::fs::write(&input, text).unwrap();
        let output = dir.path().join("out");
        let config = JobConfig::new(vec![input], output.clone()).with_threads(2);
        run_job(&bigram_job(1), &config, Arc::new(JobStatus::default())).unwrap();

        let mut expected = BTreeMap::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                *expected
                    .entry(format!("{} {}", pair[0], pair[1]))
                    .or_insert(0) += 1;
            }
        }
        let expected: String = expected
            .iter()
            .map(|(k, v)| format!("{k}\t{v}\n"))
            .collect();
        let got = std::fs::read_to_string(output.join("part-r-00000")).unwrap();
        assert_eq!(got, expected);
    }
}
