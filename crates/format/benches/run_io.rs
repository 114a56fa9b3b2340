//! Throughput of the spill hot path: `RunWriter` and `RunReader` over 64 MiB of ~100-byte
//! records, for each codec, in memory (so the numbers are CPU cost, not disk speed).
//!
//! Run with `cargo bench -p sluice-format --bench run_io`; throughput is reported in raw
//! (encoded, uncompressed) record bytes per second.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sluice_format::{record, Codec, RunReader, RunWriter};

/// Raw bytes of records per benchmark iteration.
const TOTAL_BYTES: usize = 64 << 20;
/// Block size the spill layer is expected to use.
const BLOCK_SIZE: usize = 64 << 10;

const CODECS: [Codec; 3] = [Codec::None, Codec::Lz4, Codec::Zstd { level: 1 }];

/// Records laid out back to back, so generating them is not part of the measurement.
struct Dataset {
    bytes: Vec<u8>,
    /// Start, key length and value length of each record in `bytes`.
    records: Vec<(usize, usize, usize)>,
    /// Sum of the encoded lengths: the bytes a run holds before compression.
    encoded_len: usize,
}

impl Dataset {
    /// Keys like `user:000123456` and values of 60..100 bytes of word-like text, so that the
    /// compressors see data about as repetitive as a typical text spill.
    fn generate() -> Dataset {
        const WORDS: [&str; 16] = [
            "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
            "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
        ];
        let mut state: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut data = Dataset {
            bytes: Vec::with_capacity(TOTAL_BYTES),
            records: Vec::new(),
            encoded_len: 0,
        };
        while data.encoded_len < TOTAL_BYTES {
            let start = data.bytes.len();
            let key = format!("user:{:09}", next() % 1_000_000_000);
            data.bytes.extend_from_slice(key.as_bytes());
            let value_len = 60 + (next() % 41) as usize;
            let value_start = data.bytes.len();
            while data.bytes.len() - value_start < value_len {
                data.bytes
                    .extend_from_slice(WORDS[(next() % 16) as usize].as_bytes());
                data.bytes.push(b' ');
            }
            data.bytes.truncate(value_start + value_len);
            data.records.push((start, key.len(), value_len));
            data.encoded_len += record::encoded_len(key.len(), value_len);
        }
        data
    }

    fn write(&self, out: &mut Vec<u8>, codec: Codec) {
        out.clear();
        let mut writer = RunWriter::new(out, codec, BLOCK_SIZE, "bench");
        for &(start, key_len, value_len) in &self.records {
            let key = &self.bytes[start..start + key_len];
            let value = &self.bytes[start + key_len..start + key_len + value_len];
            writer.write_record(key, value).expect("in-memory write");
        }
        writer.into_inner().expect("in-memory write");
    }
}

/// Reads the whole run, touching every key and value.
fn read_all(run: &[u8]) -> (u64, usize) {
    let mut reader = RunReader::new(run, "bench", 0);
    let (mut records, mut checksum) = (0u64, 0usize);
    while reader.advance().expect("valid run") {
        records += 1;
        checksum = checksum.wrapping_add(reader.key().len() + reader.value().len());
    }
    (records, checksum)
}

fn bench_run_io(c: &mut Criterion) {
    let data = Dataset::generate();
    let mut out = Vec::with_capacity(TOTAL_BYTES + TOTAL_BYTES / 8);

    let mut group = c.benchmark_group("run_write");
    group.throughput(Throughput::Bytes(data.encoded_len as u64));
    for codec in CODECS {
        group.bench_function(codec.to_string(), |b| {
            b.iter(|| {
                data.write(&mut out, codec);
                black_box(out.len())
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("run_read");
    group.throughput(Throughput::Bytes(data.encoded_len as u64));
    for codec in CODECS {
        let mut run = Vec::new();
        data.write(&mut run, codec);
        eprintln!(
            "{codec}: {} raw bytes in {} records -> {} bytes ({:.1}%)",
            data.encoded_len,
            data.records.len(),
            run.len(),
            100.0 * run.len() as f64 / data.encoded_len as f64
        );
        group.bench_function(codec.to_string(), |b| {
            b.iter(|| {
                let (records, checksum) = read_all(black_box(&run));
                assert_eq!(records, data.records.len() as u64);
                black_box(checksum)
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // Each iteration moves 64 MiB: a few samples are plenty.
    config = Criterion::default().sample_size(10);
    targets = bench_run_io
}
criterion_main!(benches);
