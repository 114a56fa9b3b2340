//! `sluice gen text`: seeded, deterministic test corpora.
//!
//! Words are drawn from a synthetic vocabulary with a Zipf distribution (exponent 1, as natural
//! text roughly follows), so a corpus has a few very frequent words and a long tail, like the
//! inputs word count and inverted index meet in practice. The same seed, size and file count
//! always give the same bytes, whatever the number of threads: every file has its own generator
//! seeded from (seed, file number).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{bail, Context, Result};

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

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
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

/// Writes one file of about `size` bytes (whole lines; the last may overshoot by one line).
fn write_file(path: &Path, size: u64, vocab: &Vocabulary, seed: u64) -> Result<u64> {
    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut rng = SplitMix64(seed);
    let mut written = 0u64;
    let mut line = Vec::with_capacity(256);
    while written < size {
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
            .with_context(|| format!("cannot write {}", path.display()))?;
        written += line.len() as u64;
    }
    out.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(written)
}

/// Generates a text corpus of about `size` bytes in `files` files named `part-NNNNN.txt` inside
/// `output` (which must not exist). Returns the bytes written.
pub(crate) fn generate_text(
    output: &Path,
    size: u64,
    files: usize,
    seed: u64,
    threads: usize,
) -> Result<u64> {
    if output.exists() {
        bail!("output {} already exists", output.display());
    }
    if files == 0 {
        bail!("--files must be at least 1");
    }
    std::fs::create_dir_all(output)
        .with_context(|| format!("cannot create directory {}", output.display()))?;
    let vocab = Vocabulary::new(seed);
    let per_file = size / files as u64;
    let remainder = size % files as u64;
    let paths: Vec<(PathBuf, u64)> = (0..files)
        .map(|i| {
            let extra = u64::from((i as u64) < remainder);
            (output.join(format!("part-{i:05}.txt")), per_file + extra)
        })
        .collect();
    let next = AtomicUsize::new(0);
    let results: Vec<Result<u64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads.clamp(1, files))
            .map(|_| {
                scope.spawn(|| {
                    let mut total = 0;
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some((path, bytes)) = paths.get(i) else {
                            return Ok(total);
                        };
                        let file_seed = seed.wrapping_mul(0x100_0000_01b3).wrapping_add(i as u64);
                        total += write_file(path, *bytes, &vocab, file_seed)?;
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| bail!("generator thread panicked"))
            })
            .collect()
    });
    let mut total = 0;
    for r in results {
        total += r?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes_regardless_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        generate_text(&a, 200_000, 3, 7, 1).unwrap();
        generate_text(&b, 200_000, 3, 7, 3).unwrap();
        for i in 0..3 {
            let name = format!("part-{i:05}.txt");
            let x = std::fs::read(a.join(&name)).unwrap();
            let y = std::fs::read(b.join(&name)).unwrap();
            assert_eq!(x, y);
            assert!(x.len() as u64 >= 66_666 && x.ends_with(b"\n"));
        }
        let c = dir.path().join("c");
        generate_text(&c, 200_000, 3, 8, 1).unwrap();
        assert_ne!(
            std::fs::read(a.join("part-00000.txt")).unwrap(),
            std::fs::read(c.join("part-00000.txt")).unwrap()
        );
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
