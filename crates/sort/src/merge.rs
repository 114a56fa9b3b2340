//! k-way merge of sorted cursors.
//!
//! # Algorithm
//!
//! A tournament ("winner") tree over `n` leaves, `n` the number of sources rounded up to a power
//! of two. Leaf `i` holds source `i` while it has a record; every inner node holds the winner
//! (smaller key; on equal keys the lower source index) of its two children, so the root is the
//! source with the smallest current record.
//!
//! ```text
//!              [1] = winner
//!          [2]          [3]
//!        [4]  [5]     [6]  [7]
//!  leaves: s0 s1 s2 s3 s4 s5 s6 s7
//! ```
//!
//! After the root's source advances, only the nodes on its path to the root are replayed:
//! `log2(n)` comparisons per record. Ties going to the lower source index make the merge stable:
//! callers order their sources oldest first.

use crate::cursor::CursorError;

use crate::{normalized_prefix, KeyOrder, SortedCursor};

const NONE: u32 = u32::MAX;

/// Merges sorted cursors into one sorted cursor.
pub struct Merger<C> {
    sources: Vec<C>,
    /// `tree[1]` is the root; leaves are `tree[leaves..leaves + sources.len()]`.
    tree: Vec<u32>,
    leaves: usize,
    started: bool,
    order: KeyOrder,
    /// In byte order: the normalised prefix of each source's current key, so that most
    /// comparisons are one integer compare instead of a call to each source and a memcmp.
    prefixes: Vec<u64>,
}

impl<C: SortedCursor> Merger<C> {
    /// A merger over `sources`, which must each be sorted by key.
    pub fn new(sources: Vec<C>) -> Merger<C> {
        Merger::with_order(sources, KeyOrder::Bytes)
    }

    /// A merger over `sources`, which must each be sorted in `order`.
    pub fn with_order(sources: Vec<C>, order: KeyOrder) -> Merger<C> {
        let leaves = sources.len().next_power_of_two().max(1);
        Merger {
            prefixes: vec![0; sources.len()],
            sources,
            tree: vec![NONE; 2 * leaves],
            leaves,
            started: false,
            order,
        }
    }

    /// Index of the source the current record came from.
    pub fn source(&self) -> usize {
        self.tree[1] as usize
    }

    /// Number of sources.
    pub fn source_count(&self) -> usize {
        self.sources.len()
    }

    fn winner(&self, a: u32, b: u32) -> u32 {
        if a == NONE {
            return b;
        }
        if b == NONE {
            return a;
        }
        if let KeyOrder::Bytes = self.order {
            let (pa, pb) = (self.prefixes[a as usize], self.prefixes[b as usize]);
            if pa != pb {
                return if pa < pb { a } else { b };
            }
        }
        match self.order.compare(
            self.sources[a as usize].key(),
            self.sources[b as usize].key(),
        ) {
            std::cmp::Ordering::Less => a,
            std::cmp::Ordering::Greater => b,
            std::cmp::Ordering::Equal => a.min(b),
        }
    }

    fn build(&mut self) -> Result<(), CursorError> {
        for i in 0..self.sources.len() {
            if self.sources[i].advance()? {
                self.tree[self.leaves + i] = i as u32;
                self.prefixes[i] = normalized_prefix(self.sources[i].key());
            }
        }
        for node in (1..self.leaves).rev() {
            self.tree[node] = self.winner(self.tree[2 * node], self.tree[2 * node + 1]);
        }
        Ok(())
    }

    fn replay(&mut self, source: usize) -> Result<(), CursorError> {
        let leaf = self.leaves + source;
        self.tree[leaf] = if self.sources[source].advance()? {
            self.prefixes[source] = normalized_prefix(self.sources[source].key());
            source as u32
        } else {
            NONE
        };
        let mut node = leaf / 2;
        while node >= 1 {
            self.tree[node] = self.winner(self.tree[2 * node], self.tree[2 * node + 1]);
            node /= 2;
        }
        Ok(())
    }
}

impl<C: SortedCursor> SortedCursor for Merger<C> {
    fn advance(&mut self) -> Result<bool, CursorError> {
        if self.sources.is_empty() {
            return Ok(false);
        }
        if !self.started {
            self.started = true;
            self.build()?;
        } else {
            let current = self.tree[1];
            if current == NONE {
                return Ok(false);
            }
            self.replay(current as usize)?;
        }
        Ok(self.tree[1] != NONE)
    }

    fn key(&self) -> &[u8] {
        match self.sources.get(self.tree[1] as usize) {
            Some(source) => source.key(),
            None => &[],
        }
    }

    fn value(&self) -> &[u8] {
        match self.sources.get(self.tree[1] as usize) {
            Some(source) => source.value(),
            None => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BytesCursor;
    use proptest::prelude::*;
    use sluice_format::record;

    fn run(records: &[(Vec<u8>, Vec<u8>)]) -> BytesCursor<Vec<u8>> {
        let mut buf = Vec::new();
        for (k, v) in records {
            record::encode(&mut buf, k, v).unwrap();
        }
        BytesCursor::new(buf)
    }

    fn drain(mut c: impl SortedCursor) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while c.advance().unwrap() {
            out.push((c.key().to_vec(), c.value().to_vec()));
        }
        out
    }

    #[test]
    fn empty_and_single_sources() {
        assert!(drain(Merger::<BytesCursor<Vec<u8>>>::new(vec![])).is_empty());
        let one = vec![
            (b"a".to_vec(), b"1".to_vec()),
            (b"b".to_vec(), b"2".to_vec()),
        ];
        assert_eq!(drain(Merger::new(vec![run(&one)])), one);
        assert!(drain(Merger::new(vec![run(&[]), run(&[])])).is_empty());
    }

    proptest! {
        /// Merging sorted runs equals a stable sort of their concatenation (sources in order).
        #[test]
        fn merge_equals_stable_sort_of_concatenation(
            runs in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::collection::vec(0u8..4, 0..4), proptest::collection::vec(any::<u8>(), 0..3)),
                    0..30),
                0..9)
        ) {
            let mut sorted_runs = runs.clone();
            // Tag each value with its source so that stability is checked too.
            for (i, r) in sorted_runs.iter_mut().enumerate() {
                for (_, v) in r.iter_mut() { v.insert(0, i as u8); }
                r.sort_by(|a, b| a.0.cmp(&b.0));
            }
            let mut expected: Vec<_> = sorted_runs.iter().flatten().cloned().collect();
            expected.sort_by(|a, b| a.0.cmp(&b.0));
            let merged = drain(Merger::new(sorted_runs.iter().map(|r| run(r)).collect()));
            prop_assert_eq!(merged, expected);
        }

        /// With a custom order (here: reversed bytes), a merge of runs sorted in that order is
        /// a stable sort of their concatenation in that order.
        #[test]
        fn merge_in_custom_order(
            runs in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(0u8..4, 0..4), 0..20),
                0..6)
        ) {
            struct Reversed;
            impl crate::KeyComparator for Reversed {
                fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
                    b.cmp(a)
                }
            }
            let tagged: Vec<Vec<(Vec<u8>, Vec<u8>)>> = runs.iter().enumerate().map(|(i, r)| {
                let mut r: Vec<_> = r.iter().enumerate().map(|(j, k)| (k.clone(), vec![i as u8, j as u8])).collect();
                r.sort_by(|a, b| b.0.cmp(&a.0));
                r
            }).collect();
            let mut expected: Vec<_> = tagged.iter().flatten().cloned().collect();
            expected.sort_by(|a, b| b.0.cmp(&a.0));
            let order = crate::KeyOrder::Custom(std::sync::Arc::new(Reversed));
            let merged = drain(Merger::with_order(tagged.iter().map(|r| run(r)).collect(), order));
            prop_assert_eq!(merged, expected);
        }

        /// Mergers nest: a merge of merges is still the sorted concatenation.
        #[test]
        fn nested_merges(keys in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..3), 0..60)) {
            let mut chunks: Vec<Vec<(Vec<u8>, Vec<u8>)>> = keys.chunks(7).map(|c| {
                let mut v: Vec<_> = c.iter().map(|k| (k.clone(), Vec::new())).collect();
                v.sort();
                v
            }).collect();
            let half = chunks.len() / 2;
            let right = chunks.split_off(half);
            let left = Merger::new(chunks.iter().map(|r| run(r)).collect::<Vec<_>>());
            let right = Merger::new(right.iter().map(|r| run(r)).collect::<Vec<_>>());
            let outer: Merger<Box<dyn SortedCursor>> = Merger::new(vec![Box::new(left), Box::new(right)]);
            let got: Vec<Vec<u8>> = drain(outer).into_iter().map(|(k, _)| k).collect();
            let mut want = keys.clone();
            want.sort();
            prop_assert_eq!(got, want);
        }
    }
}
