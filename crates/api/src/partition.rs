//! Partitioners.

use sluice_hadoop::partition;
use sluice_sort::normalized_prefix;

use crate::Partitioner;

/// Hadoop's `HashPartitioner` for `Text` keys: the same key goes to the same reducer number as in
/// Hadoop, so part files can be compared one by one.
///
/// Hadoop hashes a `Text` as `h = 1; for each byte b (as a signed Java byte): h = 31*h + b` with
/// 32-bit wrap-around, then takes `(h & Integer.MAX_VALUE) % reducers`
/// ([`sluice_hadoop::partition`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct HashPartitioner;

impl Partitioner for HashPartitioner {
    fn partition(&self, key: &[u8], partitions: usize) -> usize {
        if partitions <= 1 {
            return 0;
        }
        partition::hash_partition(partition::hash_bytes(key), partitions)
    }
}

/// A total-order partitioner (Hadoop's `TotalOrderPartitioner`): partition `i` takes the keys
/// from boundary `i - 1` (inclusive) to boundary `i` (exclusive), comparing unsigned bytes, so
/// the part files concatenate into one sorted sequence. The boundaries usually come from a
/// sample of the keys (see [`TotalOrderPartitioner::from_sample`]).
#[derive(Debug, Clone)]
pub struct TotalOrderPartitioner {
    /// Sorted split points.
    boundaries: Vec<Vec<u8>>,
    /// The first 8 bytes of each boundary, big-endian and zero-padded: most keys are placed by
    /// comparing these alone.
    prefixes: Vec<u64>,
}

impl TotalOrderPartitioner {
    /// A partitioner with these split points (sorted here; duplicates are kept, leaving an empty
    /// partition between them, as Hadoop does).
    pub fn new(mut boundaries: Vec<Vec<u8>>) -> TotalOrderPartitioner {
        boundaries.sort_unstable();
        let prefixes = boundaries.iter().map(|b| normalized_prefix(b)).collect();
        TotalOrderPartitioner {
            boundaries,
            prefixes,
        }
    }

    /// Split points for `partitions` partitions from a sample of keys: the sample is sorted and
    /// the keys at ranks `round(i * n / partitions)` for `i` in `1..partitions` become the
    /// boundaries (Hadoop TeraSort's choice), so each partition gets about the same share of
    /// the sample. An empty sample gives no boundaries: everything goes to partition 0.
    pub fn from_sample(mut sample: Vec<&[u8]>, partitions: usize) -> TotalOrderPartitioner {
        sample.sort_unstable();
        let n = sample.len();
        if n == 0 {
            return TotalOrderPartitioner::new(Vec::new());
        }
        let boundaries = (1..partitions)
            .map(|i| {
                let rank = ((i as f64 * n as f64 / partitions as f64).round() as usize).min(n - 1);
                sample[rank].to_vec()
            })
            .collect();
        TotalOrderPartitioner::new(boundaries)
    }

    /// The split points, sorted.
    pub fn boundaries(&self) -> &[Vec<u8>] {
        &self.boundaries
    }
}

impl Partitioner for TotalOrderPartitioner {
    fn partition(&self, key: &[u8], partitions: usize) -> usize {
        let prefix = normalized_prefix(key);
        // The number of boundaries <= key. Equal prefixes need the whole key to decide.
        let index = self.prefixes.partition_point(|&p| p < prefix);
        let mut placed = index;
        while placed < self.prefixes.len()
            && self.prefixes[placed] == prefix
            && self.boundaries[placed].as_slice() <= key
        {
            placed += 1;
        }
        placed.min(partitions.saturating_sub(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: a linear count of the boundaries that are <= key.
    fn count_le(boundaries: &[Vec<u8>], key: &[u8]) -> usize {
        boundaries.iter().filter(|b| b.as_slice() <= key).count()
    }

    /// Keys over a 4-letter alphabet, so that prefixes and equal keys are common.
    fn small_key() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(0u8..4, 0..12)
    }

    proptest! {
        #[test]
        fn total_order_matches_a_linear_scan(
            boundaries in proptest::collection::vec(small_key(), 0..10),
            keys in proptest::collection::vec(small_key(), 1..50),
        ) {
            let partitioner = TotalOrderPartitioner::new(boundaries.clone());
            let partitions = boundaries.len() + 1;
            for key in &keys {
                prop_assert_eq!(
                    partitioner.partition(key, partitions),
                    count_le(&boundaries, key),
                    "key {:?}", key
                );
            }
        }
    }

    #[test]
    fn sampled_boundaries_split_the_sample_evenly() {
        let keys: Vec<Vec<u8>> = (0u32..1000)
            .rev()
            .map(|i| i.to_be_bytes().to_vec())
            .collect();
        let sample: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let partitioner = TotalOrderPartitioner::from_sample(sample, 4);
        let expected: Vec<Vec<u8>> = [250u32, 500, 750]
            .iter()
            .map(|i| i.to_be_bytes().to_vec())
            .collect();
        assert_eq!(partitioner.boundaries(), expected.as_slice());
        let mut counts = [0usize; 4];
        for key in &keys {
            counts[partitioner.partition(key, 4)] += 1;
        }
        assert_eq!(counts, [250; 4]);
    }

    #[test]
    fn partitions_are_in_range_and_stable() {
        let p = HashPartitioner;
        for key in [
            &b"hello"[..],
            b"",
            b"\xff\xfe",
            b"a much longer key with spaces",
        ] {
            let n = p.partition(key, 7);
            assert!(n < 7);
            assert_eq!(n, p.partition(key, 7));
        }
    }
}
