//! Where to cut one partition into key ranges of about equal size, so that its merge and
//! reduce can run as several tasks at once (a skewed partition's reduce on all cores).
//!
//! Keys are sampled from every run of the partition ([`RunSource::sample_keys`](crate::RunSource::sample_keys): a spill file
//! reads only the blocks sampled, a memory run scans its records), each sample standing for
//! an equal share of its run's bytes; the samples are sorted in the stage's key order and cut
//! where their running weight crosses each `i / ranges` of the total. A range is then merged
//! from its first key by entering every run there ([`RunSource::open_at`](crate::RunSource::open_at)).

use std::cmp::Ordering;

use sluice_api::ExecError;
use sluice_sort::KeyOrder;

use crate::run::Run;

/// Keys sampled per range, over all runs: enough that the ranges come out within a few
/// percent of equal on smooth key distributions, few enough that sampling spill files (a
/// block read per key) costs little beside a partition worth splitting.
const SAMPLES_PER_RANGE: u64 = 64;

/// The longest key a partition is cut at. Every range holds its bounds for as long as it is
/// reduced, and a key that long (a 100 MB line sorted whole) makes no better cut than its
/// neighbours: runs leave such keys out of their samples without copying them.
pub const MAX_CUT_KEY: usize = 64 * 1024;

/// Bytes `partition` takes in `runs` (encoded records, as
/// [`RunSource::partition_bytes`](crate::RunSource::partition_bytes) reports them; a run that cannot tell counts nothing).
pub fn partition_size(runs: &[Run], partition: usize) -> u64 {
    runs.iter()
        .filter(|run| run.has_records(partition))
        .map(|run| run.partition_bytes(partition).unwrap_or(0))
        .fold(0, u64::saturating_add)
}

/// Up to `ranges - 1` keys, strictly increasing in `order`, that cut `partition` of `runs`
/// into `ranges` ranges of about equal bytes: range `i` holds the keys from boundary `i - 1`
/// (included) to boundary `i` (excluded). Fewer come back when the samples do not tell
/// enough distinct keys apart (a partition of one huge key cannot be cut); none when the runs
/// can give no samples.
///
/// # Errors
/// A run could not be sampled.
pub fn split_points(
    runs: &[Run],
    partition: usize,
    order: &KeyOrder,
    ranges: usize,
) -> Result<Vec<Vec<u8>>, ExecError> {
    if ranges < 2 {
        return Ok(Vec::new());
    }
    let sized: Vec<(&Run, u64)> = runs
        .iter()
        .filter(|run| run.has_records(partition))
        .map(|run| (run, run.partition_bytes(partition).unwrap_or(0)))
        .filter(|(_, bytes)| *bytes > 0)
        .collect();
    let total: u64 = sized
        .iter()
        .map(|(_, bytes)| bytes)
        .fold(0, |a, b| a.saturating_add(*b));
    if total == 0 {
        return Ok(Vec::new());
    }
    let wanted = SAMPLES_PER_RANGE.saturating_mul(u64::try_from(ranges).unwrap_or(u64::MAX));
    // (key, bytes the key stands for)
    let mut samples: Vec<(Vec<u8>, u64)> = Vec::new();
    for (run, bytes) in sized {
        // In proportion to the run's share of the bytes, at least one per run.
        let share = u128::from(wanted) * u128::from(bytes) / u128::from(total);
        let count = usize::try_from(share.max(1)).unwrap_or(usize::MAX);
        let mut keys = run.sample_keys(partition, count)?;
        keys.retain(|key| key.len() <= MAX_CUT_KEY);
        let Ok(taken) = u64::try_from(keys.len()) else {
            continue;
        };
        if taken == 0 {
            continue;
        }
        let weight = bytes / taken;
        samples.extend(keys.into_iter().map(|key| (key, weight)));
    }
    // Sorted by reference, so that an order that is not total can use the tolerant sort
    // (which moves `Copy` items) without copying the keys.
    let mut sorted: Vec<&(Vec<u8>, u64)> = samples.iter().collect();
    let by_key = |a: &&(Vec<u8>, u64), b: &&(Vec<u8>, u64)| order.compare(&a.0, &b.0);
    if order.is_total() {
        sorted.sort_by(by_key);
    } else {
        sluice_sort::sort_tolerant_by(&mut sorted, by_key);
    }
    let sampled: u64 = sorted
        .iter()
        .map(|(_, weight)| weight)
        .fold(0, |a, b| a.saturating_add(*b));
    let Some(smallest) = sorted.first().map(|(key, _)| key) else {
        return Ok(Vec::new());
    };
    let mut boundaries: Vec<Vec<u8>> = Vec::with_capacity(ranges - 1);
    let mut below = 0u64;
    let mut next = 1u64;
    let ranges = u64::try_from(ranges).unwrap_or(u64::MAX);
    for (key, weight) in sorted {
        // `below` is the weight of the samples before this key: cut here once it reaches
        // the next boundary's share.
        let target = u128::from(sampled) * u128::from(next) / u128::from(ranges);
        if next < ranges && u128::from(below) >= target && below > 0 {
            // A cut at the smallest key, or at the last cut's, would leave a range empty.
            let after = boundaries.last().unwrap_or(smallest);
            let distinct = order.compare(after, key) == Ordering::Less;
            if distinct {
                boundaries.push(key.clone());
            }
            next += 1;
            while next < ranges
                && u128::from(below) >= u128::from(sampled) * u128::from(next) / u128::from(ranges)
            {
                next += 1;
            }
        }
        below = below.saturating_add(*weight);
    }
    Ok(boundaries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{RunCursor, RunKind, RunSource};
    use sluice_sort::BytesCursor;
    use std::sync::Arc;

    /// A run that samples the keys it is given.
    #[derive(Debug)]
    struct Sampled {
        keys: Vec<Vec<u8>>,
        bytes: u64,
    }

    impl RunSource for Sampled {
        fn kind(&self) -> RunKind {
            RunKind::Memory
        }
        fn has_records(&self, _partition: usize) -> bool {
            true
        }
        fn bytes(&self) -> u64 {
            self.bytes
        }
        fn open(&self, _partition: usize) -> Result<RunCursor, ExecError> {
            Ok(RunCursor::Other(Box::new(BytesCursor::new(Vec::new()))))
        }
        fn partition_bytes(&self, _partition: usize) -> Option<u64> {
            Some(self.bytes)
        }
        fn sample_keys(&self, _partition: usize, count: usize) -> Result<Vec<Vec<u8>>, ExecError> {
            let n = self.keys.len();
            let mut picked: Vec<usize> = (0..count.min(n)).map(|i| i * n / count.min(n)).collect();
            picked.dedup();
            Ok(picked.into_iter().map(|i| self.keys[i].clone()).collect())
        }
    }

    fn run(keys: impl IntoIterator<Item = String>, bytes: u64) -> Run {
        Arc::new(Sampled {
            keys: keys.into_iter().map(String::into_bytes).collect(),
            bytes,
        })
    }

    #[test]
    fn boundaries_cut_evenly_weighted_by_run_size() {
        // Run a holds keys 000..999 and is three times the size of run b, which holds
        // 1000..1999 (the runs cover different keys, as map tasks over sorted input do).
        let a = run((0..1000).map(|i| format!("{i:04}")), 3000);
        let b = run((1000..2000).map(|i| format!("{i:04}")), 1000);
        let points = split_points(&[a, b], 0, &KeyOrder::Bytes, 4).unwrap();
        let points: Vec<String> = points
            .into_iter()
            .map(|k| String::from_utf8(k).unwrap())
            .collect();
        // A quarter of the bytes each: 0..333, 333..666, 666..1000, 1000..2000 (to within
        // the samples' spacing).
        assert_eq!(points.len(), 3, "{points:?}");
        let near = |got: &str, want: i64| (got.parse::<i64>().unwrap() - want).abs() <= 20;
        assert!(near(&points[0], 333), "{points:?}");
        assert!(near(&points[1], 666), "{points:?}");
        assert!(near(&points[2], 1000), "{points:?}");
    }

    #[test]
    fn one_key_cannot_be_cut_and_a_custom_order_is_followed() {
        let same = run(std::iter::repeat_n("k".to_string(), 100), 1000);
        assert!(split_points(&[same], 0, &KeyOrder::Bytes, 4)
            .unwrap()
            .is_empty());

        struct Reversed;
        impl sluice_sort::KeyComparator for Reversed {
            fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
                b.cmp(a)
            }
        }
        let order = KeyOrder::Custom(Arc::new(Reversed));
        let descending = run((0..1000).rev().map(|i| format!("{i:04}")), 1000);
        let points = split_points(&[descending], 0, &order, 2).unwrap();
        assert_eq!(points.len(), 1);
        let middle: i64 = String::from_utf8(points[0].clone())
            .unwrap()
            .parse()
            .unwrap();
        assert!((middle - 500).abs() <= 20, "{middle}");
    }
}
