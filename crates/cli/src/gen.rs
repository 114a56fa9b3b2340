//! `sluice gen text`: seeded, deterministic test corpora.
//!
//! Words are drawn from a synthetic vocabulary with a Zipf distribution (exponent 1, as natural
//! text roughly follows), so a corpus has a few very frequent words and a long tail, like the
//! inputs word count and inverted index meet in practice. The same seed, size and file count
//! always give the same bytes, whatever the number of threads and whatever the store: every file
//! has its own generator seeded from (seed, file number). The corpus is committed as a job's
//! output is, so it appears whole, with `_SUCCESS`, or not at all.

use std::io::Write;

use anyhow::{bail, Context, Result};
use sluice_api::JobStatus;
use sluice_exec::JobOutput;
use sluice_io::{JobCommitter, Location, PartAttempt, Stores, DEFAULT_WRITE_BUFFER};

use crate::tasks;

/// The command's name, in the errors of an interrupted run.
const NAME: &str = "gen text";

/// Lines written between checks for cancellation.
const LINES_PER_CHECK: u64 = 4096;

/// Distinct words in the vocabulary.
const VOCABULARY: usize = 100_000;

/// SplitMix64: a tiny, well-mixed generator; plenty for test data and stable forever.
pub(crate) struct SplitMix64(pub(crate) u64);

impl SplitMix64 {
    /// The next 64 random bits.
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The generator of stream `index` under `seed` (a file, a task): each stream starts at a
    /// state hashed from both, so streams are unrelated. Starting stream `i` at `seed + i` steps
    /// instead would make every stream the previous one shifted by a word.
    pub(crate) fn stream(seed: u64, index: u64) -> SplitMix64 {
        let base = SplitMix64(seed).next();
        SplitMix64(SplitMix64(base ^ index).next())
    }

    /// A number in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// The vocabulary and the Zipf sampler over it.
struct Vocabulary {
    words: Vec<Vec<u8>>,
    /// `cumulative[i]` = P(rank <= i) scaled to `u64::MAX`.
    cumulative: Vec<u64>,
}

impl Vocabulary {
    fn new(seed: u64) -> Vocabulary {
        let mut rng = SplitMix64(seed ^ 0x5eed_0f70_c4b5);
        let mut seen = std::collections::HashSet::new();
        let mut words = Vec::with_capacity(VOCABULARY);
        while words.len() < VOCABULARY {
            // Lengths 1..=14, most between 3 and 9, like English words.
            let len = 1 + rng.below(5) + rng.below(5) + rng.below(5);
            let word: Vec<u8> = (0..len).map(|_| b'a' + rng.below(26) as u8).collect();
            if seen.insert(word.clone()) {
                words.push(word);
            }
        }
        let weights: Vec<f64> = (1..=VOCABULARY).map(|rank| 1.0 / rank as f64).collect();
        let total: f64 = weights.iter().sum();
        let mut running = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                running += w / total;
                (running.min(1.0) * u64::MAX as f64) as u64
            })
            .collect();
        Vocabulary { words, cumulative }
    }

    fn sample(&self, rng: &mut SplitMix64) -> &[u8] {
        let x = rng.next();
        let rank = self.cumulative.partition_point(|&c| c < x);
        &self.words[rank.min(self.words.len() - 1)]
    }
}

/// Writes one file of about `size` bytes (whole lines; the last may overshoot by one line) to
/// `out`, which `path` names in errors.
fn write_file(
    out: &mut impl Write,
    path: &Location,
    size: u64,
    vocab: &Vocabulary,
    seed: u64,
    status: &JobStatus,
) -> Result<u64> {
    let mut rng = SplitMix64(seed);
    let mut written = 0u64;
    let mut line = Vec::with_capacity(256);
    let mut lines = 0u64;
    while written < size {
        lines += 1;
        if lines.is_multiple_of(LINES_PER_CHECK) && status.is_cancelled() {
            return Err(tasks::interrupted(NAME));
        }
        line.clear();
        let words = 1 + rng.below(16);
        for i in 0..words {
            if i > 0 {
                line.push(b' ');
            }
            line.extend_from_slice(vocab.sample(&mut rng));
        }
        line.push(b'\n');
        out.write_all(&line)
            .with_context(|| format!("cannot write {path}"))?;
        written += line.len() as u64;
    }
    Ok(written)
}

/// Writes part file `name` of the corpus as the only attempt of its task, committing it; an
/// attempt that fails is aborted.
fn write_part(
    committer: &dyn JobCommitter,
    name: &str,
    size: u64,
    vocab: &Vocabulary,
    seed: u64,
    status: &JobStatus,
) -> Result<u64> {
    let part = PartAttempt::new(name, 0);
    let path = committer.output().join(name);
    let result = committer
        .create_part(part, DEFAULT_WRITE_BUFFER)
        .map_err(anyhow::Error::from)
        .and_then(|mut out| {
            let written = write_file(&mut out, &path, size, vocab, seed, status)?;
            // A store's file is only whole once finished (the local writer's last chunk, an
            // object store's upload).
            out.finish()
                .with_context(|| format!("cannot write {path}"))?;
            committer.commit_task(part)?;
            Ok(written)
        });
    if result.is_err() {
        // The corpus is aborted too, which discards everything; this drops the attempt's
        // file at once, and the write's error is the one to report.
        let _ = committer.abort_task(part);
    }
    result
}

/// Generates a text corpus of about `size` bytes in `files` files named `part-NNNNN.txt` in
/// directory `output` (which must not exist) on any of `stores`, on `threads` threads,
/// committed as a job's output is: it appears whole, with `_SUCCESS`, or not at all. Returns
/// the bytes written. The first file that fails stops the others, as cancelling `status`
/// (Ctrl-C) does.
pub(crate) fn generate_text(
    stores: &Stores,
    output: &Location,
    size: u64,
    files: usize,
    seed: u64,
    threads: usize,
    status: &JobStatus,
) -> Result<u64> {
    if files == 0 {
        bail!("--files must be at least 1");
    }
    let file_count = u64::try_from(files).context("--files is too large")?;
    let job = JobOutput::set_up(stores, output)?;
    let vocab = Vocabulary::new(seed);
    let per_file = size / file_count;
    let remainder = size % file_count;
    // Each file's name, size and generator seed.
    let parts: Vec<(String, u64, u64)> = (0..file_count)
        .map(|i| {
            let extra = u64::from(i < remainder);
            let file_seed = seed.wrapping_mul(0x100_0000_01b3).wrapping_add(i);
            (format!("part-{i:05}.txt"), per_file + extra, file_seed)
        })
        .collect();
    let written = tasks::run_parallel(NAME, files, threads, status, |index, _| {
        let (name, bytes, file_seed) = parts
            .get(index)
            .with_context(|| format!("no file {index} of {files}"))?;
        write_part(job.committer(), name, *bytes, &vocab, *file_seed, status)
    })?;
    job.commit()?;
    Ok(written.iter().sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generate(output: &std::path::Path, size: u64, files: usize, seed: u64, threads: usize) {
        let output = Location::from_path(output);
        let status = JobStatus::default();
        generate_text(
            &Stores::local(),
            &output,
            size,
            files,
            seed,
            threads,
            &status,
        )
        .unwrap();
    }

    /// FNV-1a: a fingerprint of a file that stays the same across Rust releases.
    fn fnv(bytes: &[u8]) -> u64 {
        bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
            (hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        })
    }

    #[test]
    fn same_seed_same_bytes_regardless_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        generate(&a, 200_000, 3, 7, 1);
        generate(&b, 200_000, 3, 7, 3);
        for i in 0..3 {
            let name = format!("part-{i:05}.txt");
            let x = std::fs::read(a.join(&name)).unwrap();
            let y = std::fs::read(b.join(&name)).unwrap();
            assert_eq!(x, y);
            assert!(x.len() as u64 >= 66_666 && x.ends_with(b"\n"));
        }
        let c = dir.path().join("c");
        generate(&c, 200_000, 3, 8, 1);
        assert_ne!(
            std::fs::read(a.join("part-00000.txt")).unwrap(),
            std::fs::read(c.join("part-00000.txt")).unwrap()
        );
    }

    /// The bytes of a seed's corpus never change: corpora generated by earlier releases, and
    /// results recorded from them, stay comparable.
    #[test]
    fn a_seeds_bytes_are_those_it_always_gave() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("corpus");
        generate(&out, 200_000, 3, 7, 2);
        let expected = [
            (66_688, 0x181a_b3ef_a779_2572),
            (66_724, 0xa3b4_ec9f_46d7_4e7d),
            (66_744, 0x67ee_034d_6170_04db),
        ];
        for (i, (len, hash)) in expected.into_iter().enumerate() {
            let bytes = std::fs::read(out.join(format!("part-{i:05}.txt"))).unwrap();
            assert_eq!((bytes.len(), fnv(&bytes)), (len, hash), "part {i}");
        }
        // Committed as a job's output: `_SUCCESS`, and nothing else beside the parts.
        let mut names: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "_SUCCESS",
                "part-00000.txt",
                "part-00001.txt",
                "part-00002.txt"
            ]
        );
    }

    #[test]
    fn an_existing_output_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("corpus");
        std::fs::create_dir(&out).unwrap();
        std::fs::write(out.join("keep.txt"), "mine").unwrap();
        let status = JobStatus::default();
        let output = Location::from_path(&out);
        let error = generate_text(&Stores::local(), &output, 1000, 1, 1, 1, &status).unwrap_err();
        assert!(
            matches!(
                error.downcast_ref::<sluice_io::IoError>(),
                Some(sluice_io::IoError::OutputExists { .. })
            ),
            "{error:#}"
        );
        let names: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert_eq!(names.len(), 1);
        assert_eq!(std::fs::read(out.join("keep.txt")).unwrap(), b"mine");
        // No staging directory left beside it either.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_interrupted_corpus_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let output = Location::from_path(dir.path().join("corpus"));
        let status = JobStatus::default();
        status.cancel();
        let error =
            generate_text(&Stores::local(), &output, 1 << 20, 2, 1, 2, &status).unwrap_err();
        assert!(error.is::<crate::Interrupted>(), "{error:#}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn words_follow_a_skewed_distribution() {
        let vocab = Vocabulary::new(1);
        let mut rng = SplitMix64(2);
        let mut counts = std::collections::HashMap::new();
        for _ in 0..100_000 {
            *counts
                .entry(vocab.sample(&mut rng).to_vec())
                .or_insert(0u32) += 1;
        }
        let top = counts.get(&vocab.words[0]).copied().unwrap_or(0);
        let tenth = counts.get(&vocab.words[9]).copied().unwrap_or(0);
        // Zipf with exponent 1 over 100k ranks: rank 1 has ~8% of the mass, rank 10 ~0.8%.
        assert!((7_000..9_500).contains(&top), "rank 1 drew {top}");
        assert!((500..1_100).contains(&tenth), "rank 10 drew {tenth}");
    }
}
