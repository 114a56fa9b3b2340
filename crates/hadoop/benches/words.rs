//! The word tokenizer (`sluice_hadoop::words`) against the byte-at-a-time split it replaced,
//! on the same text: lines of 1- to 14-byte words, about 70 bytes a line, like the generated
//! corpus of the word count benchmark.
//!
//! Run with `cargo bench -p sluice-hadoop --bench words`; throughput is in input bytes.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sluice_hadoop::words::{is_delimiter, words};

/// Lines of pseudo-random lowercase words separated by one or two spaces.
fn lines(total: usize) -> Vec<Vec<u8>> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut lines = Vec::new();
    let mut bytes = 0;
    while bytes < total {
        let mut line = Vec::new();
        while line.len() < 64 {
            let n = next();
            let len = 1 + (n % 14) as usize;
            line.extend((0..len).map(|i| b'a' + ((n >> (8 + i)) % 26) as u8));
            line.extend_from_slice(if n >> 60 == 0 { b"  " } else { b" " });
        }
        bytes += line.len();
        lines.push(line);
    }
    lines
}

fn tokenize(c: &mut Criterion) {
    let lines = lines(16 << 20);
    let bytes: usize = lines.iter().map(Vec::len).sum();
    let mut group = c.benchmark_group("words");
    group.throughput(Throughput::Bytes(bytes as u64));
    group.sample_size(10);
    group.bench_function("bit masks (words)", |b| {
        b.iter(|| {
            let mut total = 0;
            for line in &lines {
                let mut spans = words(line);
                while let Some((start, end)) = spans.next_span() {
                    total += end - start;
                }
            }
            black_box(total)
        })
    });
    group.bench_function("byte loop (split and filter)", |b| {
        b.iter(|| {
            let mut total = 0;
            for line in &lines {
                for word in line.split(|&b| is_delimiter(b)).filter(|w| !w.is_empty()) {
                    total += word.len();
                }
            }
            black_box(total)
        })
    });
    group.finish();
}

criterion_group!(benches, tokenize);
criterion_main!(benches);
