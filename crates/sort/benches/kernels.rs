//! Kernels of the map side: sorting a record buffer, and counting in a hash table.
//!
//! `cargo bench -p sluice-sort` — compare runs with `--save-baseline` / `--baseline`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use sluice_sort::{CountTable, RecordBuffer};

/// Deterministic pseudo-random numbers (SplitMix64).
fn numbers(seed: u64) -> impl Iterator<Item = u64> {
    let mut state = seed;
    std::iter::repeat_with(move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    })
}

fn sort_buffer(c: &mut Criterion) {
    const RECORDS: usize = 500_000;
    let keys: Vec<[u8; 10]> = numbers(1)
        .take(RECORDS)
        .map(|n| {
            let mut k = [0u8; 10];
            k[..8].copy_from_slice(&n.to_be_bytes());
            k
        })
        .collect();
    let mut group = c.benchmark_group("record_buffer");
    group.throughput(Throughput::Elements(RECORDS as u64));
    group.sample_size(10);
    group.bench_function("sort 500k records, 10-byte keys, 90-byte values", |b| {
        b.iter_batched(
            || {
                let mut buffer = RecordBuffer::new(1 << 20);
                for k in &keys {
                    buffer.push(0, k, &[b'v'; 90]).expect("small record");
                }
                buffer
            },
            |mut buffer| buffer.sort(),
            BatchSize::LargeInput,
        )
    });
    // Text lines whose first word comes from a small vocabulary, as in log or corpus lines:
    // most keys share their first 8 bytes with many others.
    let words: Vec<Vec<u8>> = numbers(2)
        .take(64)
        .map(|n| format!("word{:06}", n % 1_000_000).into_bytes())
        .collect();
    let lines: Vec<Vec<u8>> = numbers(3)
        .take(RECORDS)
        .map(|n| {
            let mut line = words[(n % 64) as usize].clone();
            line.extend_from_slice(format!(" {:016x} rest of the line", n >> 8).as_bytes());
            line
        })
        .collect();
    group.bench_function("sort 500k text lines sharing first words", |b| {
        b.iter_batched(
            || {
                let mut buffer = RecordBuffer::new(1 << 20);
                for line in &lines {
                    buffer.push(0, line, &[]).expect("small record");
                }
                buffer
            },
            |mut buffer| buffer.sort(),
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

fn count_words(c: &mut Criterion) {
    const WORDS: usize = 2_000_000;
    // A skewed vocabulary of 50k words: rank r is drawn with probability ~ 1/r.
    let vocabulary: Vec<Vec<u8>> = (0..50_000u64)
        .map(|i| format!("w{:x}", i.wrapping_mul(0x9e37_79b9)).into_bytes())
        .collect();
    let text: Vec<&[u8]> = numbers(2)
        .take(WORDS)
        .map(|n| {
            let u = (n >> 11) as f64 / (1u64 << 53) as f64;
            let rank = (50_000f64.powf(u) as usize).saturating_sub(1);
            vocabulary[rank.min(vocabulary.len() - 1)].as_slice()
        })
        .collect();
    let mut group = c.benchmark_group("count_table");
    group.throughput(Throughput::Elements(WORDS as u64));
    group.sample_size(10);
    group.bench_function("count 2M zipf words", |b| {
        b.iter(|| {
            let mut table = CountTable::new(1 << 20);
            for w in &text {
                if !table.add_existing(w, 1) {
                    table.insert_new(w, 1).expect("short key");
                }
            }
            table.len()
        })
    });
    group.finish();
}

criterion_group!(benches, sort_buffer, count_words);
criterion_main!(benches);
