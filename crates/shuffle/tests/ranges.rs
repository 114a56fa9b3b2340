//! Entering runs at a key (`RunSource::open_at`) and merging a partition as key ranges
//! (`split_points`, `merge_range`), checked against plain scans of the same records: spill
//! files of many small blocks (keys at block edges, a key repeated across several blocks),
//! memory runs, a source of the test's own (the default `open_at`), byte order and a custom
//! comparator.

#![allow(clippy::unwrap_used)]

use std::cmp::Ordering;
use std::sync::Arc;

use sluice_api::{ExecError, JobStatus};
use sluice_format::Codec;
use sluice_shuffle::{
    merge_partition, merge_range, prepare_partition, split_points, KeyRange, LocalSpills,
    MemRunBuilder, MergeSpec, Resources, Run, RunCursor, RunKind, RunSink, RunSource,
};
use sluice_sort::{BytesCursor, KeyComparator, KeyOrder, SortedCursor};
use sluice_spill::{MemoryPool, SpillDir};

const PARTITIONS: usize = 3;
/// The partition the tests enter; the others hold records too, so that segments start and
/// end inside the files.
const PARTITION: usize = 1;

type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// Keys compared as numbers in reverse: an order that is neither byte order nor its mirror.
struct NumbersDescending;

impl KeyComparator for NumbersDescending {
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        let number = |k: &[u8]| -> u64 {
            std::str::from_utf8(k)
                .ok()
                .and_then(|s| s.trim_start_matches('k').parse().ok())
                .unwrap_or(0)
        };
        number(b).cmp(&number(a))
    }
}

fn orders() -> Vec<(&'static str, KeyOrder)> {
    vec![
        ("bytes", KeyOrder::Bytes),
        (
            "numbers descending",
            KeyOrder::Custom(Arc::new(NumbersDescending)),
        ),
    ]
}

/// A run kept by the test as plain records: its `open_at` is the trait's default.
#[derive(Debug)]
struct PlainRun {
    partitions: Vec<Records>,
}

impl RunSource for PlainRun {
    fn kind(&self) -> RunKind {
        RunKind::Stored
    }
    fn has_records(&self, partition: usize) -> bool {
        !self.partitions[partition].is_empty()
    }
    fn bytes(&self) -> u64 {
        self.partitions
            .iter()
            .flatten()
            .map(|(k, v)| (k.len() + v.len() + 2) as u64)
            .sum()
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        let mut bytes = Vec::new();
        for (k, v) in &self.partitions[partition] {
            sluice_format::record::encode(&mut bytes, k, v).unwrap();
        }
        Ok(RunCursor::Other(Box::new(BytesCursor::new(bytes))))
    }
    fn partition_bytes(&self, partition: usize) -> Option<u64> {
        Some(
            self.partitions[partition]
                .iter()
                .map(|(k, v)| (k.len() + v.len() + 2) as u64)
                .sum(),
        )
    }
}

/// Resources whose spill files have blocks of `block` bytes.
fn resources(dir: &std::path::Path, block: usize) -> Resources {
    Resources::new(
        MemoryPool::new(64 << 20),
        32 << 20,
        Box::new(LocalSpills::new(
            SpillDir::create_in(dir).unwrap(),
            Codec::Lz4,
            block,
        )),
        64 * 1024,
        1,
        Arc::new(JobStatus::default()),
    )
}

/// Records of run `seed` in every partition, sorted in `order`: keys `kNNNN` with runs of
/// duplicates, one key (`k0500`) repeated far more than a block holds, values naming the run
/// and the record.
fn records(seed: usize, order: &KeyOrder) -> Vec<Records> {
    let mut partitions = Vec::with_capacity(PARTITIONS);
    for p in 0..PARTITIONS {
        let mut recs = Vec::new();
        for i in 0..600 {
            let k = (i * 7 + seed * 13) % 997;
            let copies = 1 + (k % 3);
            for c in 0..copies {
                recs.push((
                    format!("k{k:04}").into_bytes(),
                    format!("run {seed} p{p} #{i} c{c} {}", "v".repeat(i % 11)).into_bytes(),
                ));
            }
        }
        for c in 0..150 {
            recs.push((
                b"k0500".to_vec(),
                format!("run {seed} dup {c}").into_bytes(),
            ));
        }
        // Stable, so that the order of equal keys is the order above.
        recs.sort_by(|a, b| order.compare(&a.0, &b.0));
        partitions.push(recs);
    }
    partitions
}

fn write_to(sink: &mut dyn RunSink, recs: &[Records]) {
    for (p, recs) in recs.iter().enumerate() {
        for (k, v) in recs {
            sink.write(p, k, v).unwrap();
        }
    }
}

/// The same records as a spill file, a memory run and a plain run.
fn three_kinds(res: &Resources, recs: &[Records]) -> Vec<(&'static str, Run)> {
    let mut spill = res.spills().create(PARTITIONS).unwrap();
    write_to(&mut *spill, recs);
    let size: usize = recs
        .iter()
        .flatten()
        .map(|(k, v)| k.len() + v.len() + 4)
        .sum();
    let mut memory = MemRunBuilder::new(PARTITIONS, size, res.quota().try_reserve(size).unwrap());
    write_to(&mut memory, recs);
    vec![
        ("spill file", spill.finish().unwrap()),
        ("memory run", Arc::new(memory.finish())),
        (
            "plain run",
            Arc::new(PlainRun {
                partitions: recs.to_vec(),
            }),
        ),
    ]
}

fn drain(mut cursor: impl SortedCursor) -> Records {
    let mut out = Vec::new();
    while cursor.advance().unwrap() {
        out.push((cursor.key().to_vec(), cursor.value().to_vec()));
    }
    out
}

/// Every key of the records, one between each two, one before the first and one after the
/// last (in either order).
fn probes(recs: &Records) -> Vec<Vec<u8>> {
    let mut probes: Vec<Vec<u8>> = vec![b"k0000".to_vec(), b"k9999".to_vec(), b"".to_vec()];
    for (k, _) in recs {
        probes.push(k.clone());
        let mut between = k.clone();
        between.push(b'5');
        probes.push(between);
    }
    probes.dedup();
    probes
}

#[test]
fn open_at_gives_what_a_linear_scan_skips_to() {
    let dir = tempfile::tempdir().unwrap();
    // Blocks of 256 bytes: a few records each, the repeated key over many blocks.
    let res = resources(dir.path(), 256);
    for (name, order) in orders() {
        let recs = records(3, &order);
        let partition = &recs[PARTITION];
        for (kind, run) in three_kinds(&res, &recs) {
            if kind == "spill file" {
                let file = run.bytes();
                assert!(
                    file > 20 * 256,
                    "{kind}: the test needs many blocks ({file} bytes)"
                );
            }
            for probe in probes(partition) {
                let first = partition
                    .iter()
                    .position(|(k, _)| order.compare(k, &probe) != Ordering::Less)
                    .unwrap_or(partition.len());
                let want = &partition[first..];
                let got = drain(run.open_at(PARTITION, &probe, &order).unwrap());
                assert!(
                    got == want,
                    "{name}, {kind}, entered at {:?}: {} records, want {} (first {:?} vs {:?})",
                    String::from_utf8_lossy(&probe),
                    got.len(),
                    want.len(),
                    got.first()
                        .map(|r| String::from_utf8_lossy(&r.1).into_owned()),
                    want.first()
                        .map(|r| String::from_utf8_lossy(&r.1).into_owned()),
                );
            }
        }
    }
}

#[test]
fn ranges_joined_are_the_whole_partition_merge() {
    let dir = tempfile::tempdir().unwrap();
    let res = resources(dir.path(), 512);
    for (name, order) in orders() {
        // Runs of the three kinds with different keys, in run order.
        let runs: Vec<Run> = (0..6)
            .map(|seed| {
                let kinds = three_kinds(&res, &records(seed, &order));
                kinds.into_iter().nth(seed % 3).unwrap().1
            })
            .collect();
        let spec = MergeSpec {
            partitions: PARTITIONS,
            order: &order,
            sum_counts: false,
        };
        let whole = drain(merge_partition(&runs, PARTITION, spec, 64 << 20, &res).unwrap());
        assert!(whole.len() > 1000);
        for ranges in [2, 3, 5, 8] {
            let points = split_points(&runs, PARTITION, &order, ranges).unwrap();
            assert!(
                points.len() + 1 >= ranges.min(3),
                "{name}: {ranges} ranges wanted, {} points",
                points.len()
            );
            let sources =
                prepare_partition(&runs, PARTITION, spec, 64 << 20, 64 << 20, &res).unwrap();
            let mut joined = Vec::new();
            let mut sizes = Vec::new();
            for i in 0..=points.len() {
                let range = KeyRange {
                    from: i.checked_sub(1).map(|j| points[j].as_slice()),
                    to: points.get(i).map(Vec::as_slice),
                };
                let part = drain(merge_range(&sources, PARTITION, spec, range, &res).unwrap());
                sizes.push(part.len());
                joined.extend(part);
            }
            assert!(
                joined == whole,
                "{name}, {ranges} ranges at {:?}: {} records joined, {} whole",
                points
                    .iter()
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .collect::<Vec<_>>(),
                joined.len(),
                whole.len()
            );
            // Split where it pays: no range holds nearly everything.
            let largest = sizes.iter().max().copied().unwrap_or(0);
            assert!(
                largest < whole.len() * 3 / 4,
                "{name}, {ranges} ranges: sizes {sizes:?}"
            );
        }
    }
}
