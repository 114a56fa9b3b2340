//! The collector driven directly, without a driver: records with their partitions go in under a
//! small memory limit, and the runs it writes through a spill target of the test's own (as a
//! network push or a Hadoop IFile would take them) hold exactly what went in, sorted.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use sluice_api::{
    encode_count, Emit, ExecError, HashPartitioner, JobStatus, Partitioner, Reducer, Values,
};
use sluice_mapside::{Collector, CollectorSpec, MapCombine, PartitioningCollector};
use sluice_shuffle::{
    Resources, Run, RunCursor, RunKind, RunSink, RunSource, RunWriter, SpillTarget,
};
use sluice_sort::{BytesCursor, KeyOrder, SortedCursor};
use sluice_spill::MemoryPool;

type Records = Vec<Vec<(Vec<u8>, Vec<u8>)>>;

/// A run kept as plain records per partition.
#[derive(Debug)]
struct PlainRun {
    partitions: Records,
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
            .map(|(k, v)| (k.len() + v.len()) as u64)
            .sum()
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        let mut bytes = Vec::new();
        for (k, v) in &self.partitions[partition] {
            sluice_format::record::encode(&mut bytes, k, v).unwrap();
        }
        Ok(RunCursor::Other(Box::new(BytesCursor::new(bytes))))
    }
}

/// Writes runs as [`PlainRun`]s, checking the order the sink contract promises, and counts
/// them.
struct PlainSpills {
    written: Arc<Mutex<usize>>,
}

struct PlainWriter {
    run: PlainRun,
    last: Option<(usize, Vec<u8>)>,
    written: Arc<Mutex<usize>>,
}

impl RunSink for PlainWriter {
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        if let Some((p, k)) = &self.last {
            assert!(
                (*p, k.as_slice()) <= (partition, key),
                "a run must arrive sorted by (partition, key)"
            );
        }
        self.last = Some((partition, key.to_vec()));
        self.run.partitions[partition].push((key.to_vec(), value.to_vec()));
        Ok(())
    }
}

impl RunWriter for PlainWriter {
    fn finish(self: Box<Self>) -> Result<Run, ExecError> {
        *self.written.lock().unwrap() += 1;
        Ok(Arc::new(self.run))
    }
}

impl SpillTarget for PlainSpills {
    fn create(&self, partitions: usize) -> Result<Box<dyn RunWriter>, ExecError> {
        Ok(Box::new(PlainWriter {
            run: PlainRun {
                partitions: vec![Vec::new(); partitions],
            },
            last: None,
            written: Arc::clone(&self.written),
        }))
    }
}

/// Resources of 1 MiB with nothing for held runs, so that every run goes through the target.
fn resources() -> (Resources, Arc<Mutex<usize>>) {
    let written = Arc::new(Mutex::new(0));
    let res = Resources::new(
        MemoryPool::new(1 << 20),
        0,
        Box::new(PlainSpills {
            written: Arc::clone(&written),
        }),
        64 * 1024,
        1,
        Arc::new(JobStatus::default()),
    );
    (res, written)
}

/// Every record of every run, per partition: key → values in the order they were read.
fn contents(runs: &[Run], partitions: usize) -> Vec<BTreeMap<Vec<u8>, Vec<Vec<u8>>>> {
    let mut out = vec![BTreeMap::new(); partitions];
    for run in runs {
        for (p, map) in out.iter_mut().enumerate() {
            let mut cursor = run.open(p).unwrap();
            let mut last: Option<Vec<u8>> = None;
            while cursor.advance().unwrap() {
                let key = cursor.key().to_vec();
                assert!(last.as_ref().is_none_or(|l| l <= &key), "run not sorted");
                map.entry(key.clone())
                    .or_insert_with(Vec::new)
                    .push(cursor.value().to_vec());
                last = Some(key);
            }
        }
    }
    out
}

#[test]
fn collected_records_come_back_sorted_in_their_partitions_across_spills() {
    let (res, written) = resources();
    let order = KeyOrder::default();
    let spec = CollectorSpec {
        partitions: 4,
        order: &order,
        combine: MapCombine::None,
    };
    // 300 KiB of limit for ~2 MB of records: several spills.
    let mut collector = Collector::new(&res, spec, 300 * 1024, 64 * 1024);
    let mut expected = vec![BTreeMap::<Vec<u8>, Vec<Vec<u8>>>::new(); 4];
    for i in 0u64..20_000 {
        let key = format!("k{:05}", (i * 7919) % 5000).into_bytes();
        // The partition is the producer's choice, not a function of the key here.
        let partition = (i % 4) as u32;
        let value = format!("v{i:06}-{}", "x".repeat(80)).into_bytes();
        collector.collect(partition, &key, &value).unwrap();
        expected[partition as usize]
            .entry(key)
            .or_default()
            .push(value);
    }
    let runs = collector.finish().unwrap();
    assert!(
        runs.len() > 2,
        "expected several spills, got {}",
        runs.len()
    );
    assert_eq!(*written.lock().unwrap(), runs.len());
    let mut got = contents(&runs, 4);
    // Values of one key may be split across runs; compare them as multisets.
    for map in got.iter_mut().chain(expected.iter_mut()) {
        for values in map.values_mut() {
            values.sort();
        }
    }
    assert_eq!(got, expected);
}

#[test]
fn out_of_range_partitions_are_refused() {
    let (res, _) = resources();
    let order = KeyOrder::default();
    let spec = CollectorSpec {
        partitions: 2,
        order: &order,
        combine: MapCombine::None,
    };
    let mut collector = Collector::new(&res, spec, 1 << 20, 64 * 1024);
    let err = collector.collect(2, b"k", b"v").unwrap_err();
    assert!(err.to_string().contains("out of range"), "{err}");
}

#[test]
fn counted_keys_are_summed_and_partitioned_by_the_partitioner() {
    let (res, _) = resources();
    let order = KeyOrder::default();
    let partitioner: Arc<dyn Partitioner> = Arc::new(HashPartitioner);
    let spec = CollectorSpec {
        partitions: 3,
        order: &order,
        combine: MapCombine::SumCounts(Arc::clone(&partitioner)),
    };
    let collector = Collector::new(&res, spec, 256 * 1024, 64 * 1024);
    let mut emit = PartitioningCollector::new(collector, Arc::clone(&partitioner));
    let text = b"the cat and the hat and the bat";
    let mut reference: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for round in 0..2000u64 {
        let mut spans = Vec::new();
        let mut start = 0;
        for (i, &b) in text.iter().enumerate().chain([(text.len(), &b' ')]) {
            if b == b' ' {
                spans.push((start, i));
                *reference.entry(text[start..i].to_vec()).or_default() += 1;
                start = i + 1;
            }
        }
        emit.emit_counts(text, &spans, 1).unwrap();
        // Long keys go through the general path.
        let long = format!("a-key-longer-than-a-short-key-{}", round % 700);
        emit.emit_count(long.as_bytes(), 2).unwrap();
        *reference.entry(long.into_bytes()).or_default() += 2;
    }
    let runs = emit.into_inner().finish().unwrap();
    let mut sums: BTreeMap<Vec<u8>, u64> = BTreeMap::new();
    for (p, map) in contents(&runs, 3).into_iter().enumerate() {
        for (key, values) in map {
            assert_eq!(
                partitioner.partition(&key, 3),
                p,
                "key {key:?} in the wrong partition"
            );
            for v in values {
                *sums.entry(key.clone()).or_default() += u64::from_le_bytes(v.try_into().unwrap());
            }
        }
    }
    assert_eq!(sums, reference);
}

/// A combiner that sums 8-byte counts per key.
struct SumCombiner;

impl Reducer for SumCombiner {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let mut total = 0u64;
        while let Some(v) = values.next_value()? {
            total += u64::from_le_bytes(v.try_into().unwrap());
        }
        out.emit(key, &encode_count(total))
    }
}

#[test]
fn a_combiner_runs_over_each_partition_of_each_flush() {
    let (res, _) = resources();
    let order = KeyOrder::default();
    let spec = CollectorSpec {
        partitions: 2,
        order: &order,
        combine: MapCombine::Reducer(Box::new(SumCombiner)),
    };
    let mut collector = Collector::new(&res, spec, 1 << 20, 64 * 1024);
    for i in 0u64..1000 {
        let key = format!("k{}", i % 10);
        collector
            .collect((i % 10 % 2) as u32, key.as_bytes(), &encode_count(1))
            .unwrap();
    }
    let runs = collector.finish().unwrap();
    assert_eq!(runs.len(), 1, "one flush at the end");
    let got = contents(&runs, 2);
    for (p, map) in got.iter().enumerate() {
        assert_eq!(map.len(), 5, "partition {p}");
        for (key, values) in map {
            assert_eq!(values.len(), 1, "{key:?} combined to one record");
            assert_eq!(
                u64::from_le_bytes(values[0].clone().try_into().unwrap()),
                100
            );
        }
    }
}
