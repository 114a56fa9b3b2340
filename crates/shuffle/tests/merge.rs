//! The reduce-side merge driven directly, without a driver: runs of three kinds (memory, spill
//! file, and a source of the test's own, as a remote segment would be) merged one partition at a
//! time under a budget so small that spill files must be merged through disk first.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_api::{ExecError, JobStatus};
use sluice_format::Codec;
use sluice_shuffle::{
    merge_partition, policy, LocalSpills, MemRunBuilder, MergeSpec, Resources, Run, RunCursor,
    RunKind, RunSink, RunSource, SPILL_BLOCK,
};
use sluice_sort::{BytesCursor, KeyOrder, SortedCursor};
use sluice_spill::{MemoryPool, SpillDir};

const PARTITIONS: usize = 3;

/// A run kept by the test as plain sorted records per partition: what a segment fetched from
/// another machine looks like to the merge.
#[derive(Debug)]
struct PlainRun {
    partitions: Vec<Vec<(Vec<u8>, Vec<u8>)>>,
}

impl RunSource for PlainRun {
    fn kind(&self) -> RunKind {
        RunKind::Stored
    }
    fn has_records(&self, partition: usize) -> bool {
        !self.partitions[partition].is_empty()
    }
    fn bytes(&self) -> u64 {
        let n: usize = self
            .partitions
            .iter()
            .flatten()
            .map(|(k, v)| k.len() + v.len() + 2)
            .sum();
        n as u64
    }
    fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        let mut bytes = Vec::new();
        for (k, v) in &self.partitions[partition] {
            sluice_format::record::encode(&mut bytes, k, v).unwrap();
        }
        Ok(RunCursor::Other(Box::new(BytesCursor::new(bytes))))
    }
}

/// The records of run `r`: keys `key-NNN` of a few partitions, values naming the run, so that
/// the order of equal keys can be checked.
fn records_of_run(r: usize) -> Vec<Vec<(Vec<u8>, Vec<u8>)>> {
    let mut partitions = vec![Vec::new(); PARTITIONS];
    for i in 0..40 {
        let k = (i * 7 + r * 3) % 50;
        let key = format!("key-{k:03}").into_bytes();
        partitions[k % PARTITIONS].push((key, format!("run {r:02} #{i:02}").into_bytes()));
    }
    for p in &mut partitions {
        // Stable: equal keys keep their order within the run.
        p.sort_by(|a, b| a.0.cmp(&b.0));
    }
    partitions
}

#[test]
fn merge_of_memory_spilled_and_foreign_runs_is_sorted_and_stable_under_a_tiny_budget() {
    let parent = tempfile::tempdir().unwrap();
    let spills = LocalSpills::new(
        SpillDir::create_in(parent.path()).unwrap(),
        Codec::None,
        SPILL_BLOCK,
    );
    let status = Arc::new(JobStatus::default());
    let res = Resources::new(
        MemoryPool::new(64 << 20),
        32 << 20,
        Box::new(spills),
        64 * 1024,
        1,
        Arc::clone(&status),
    );

    // 12 runs, in task order: every third in memory, every third a foreign source, the rest
    // spill files.
    let mut runs: Vec<Run> = Vec::new();
    let mut expected: Vec<BTreeMap<Vec<u8>, Vec<Vec<u8>>>> = vec![BTreeMap::new(); PARTITIONS];
    for r in 0..12 {
        let records = records_of_run(r);
        for (p, recs) in records.iter().enumerate() {
            for (k, v) in recs {
                expected[p].entry(k.clone()).or_default().push(v.clone());
            }
        }
        let run: Run = match r % 3 {
            0 => {
                let reservation = res.quota().try_reserve(4096).unwrap();
                let mut builder = MemRunBuilder::new(PARTITIONS, 4096, reservation);
                for (p, recs) in records.iter().enumerate() {
                    for (k, v) in recs {
                        builder.write(p, k, v).unwrap();
                    }
                }
                Arc::new(builder.finish())
            }
            1 => {
                let mut writer = res.spills().create(PARTITIONS).unwrap();
                for (p, recs) in records.iter().enumerate() {
                    for (k, v) in recs {
                        writer.write(p, k, v).unwrap();
                    }
                }
                writer.finish().unwrap()
            }
            _ => Arc::new(PlainRun {
                partitions: records,
            }),
        };
        runs.push(run);
    }

    let order = KeyOrder::default();
    let spec = MergeSpec {
        partitions: PARTITIONS,
        order: &order,
        sum_counts: false,
    };
    // Room for two readers: 8 stored runs per partition need passes through disk.
    let memory = 2 * policy::READER_COST;
    assert_eq!(policy::fan_in(memory), 2);
    for (partition, want) in expected.iter().enumerate() {
        let mut merge = merge_partition(&runs, partition, spec, memory, &res).unwrap();
        let mut got: BTreeMap<Vec<u8>, Vec<Vec<u8>>> = BTreeMap::new();
        let mut last: Option<Vec<u8>> = None;
        while merge.advance().unwrap() {
            let key = merge.key().to_vec();
            if let Some(last) = &last {
                assert!(last <= &key, "keys out of order: {last:?} then {key:?}");
            }
            got.entry(key.clone())
                .or_default()
                .push(merge.value().to_vec());
            last = Some(key);
        }
        // Same keys, and each key's values in run order (the reference pushed them in run
        // order): passes through disk must not reorder equal keys.
        assert_eq!(&got, want, "partition {partition}");
    }
    let passes = status.counters.snapshot().merge_passes;
    assert!(
        passes > 0,
        "a budget of two readers must merge through disk"
    );
}
