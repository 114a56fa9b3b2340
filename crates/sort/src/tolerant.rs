//! A stable sort that survives a comparator that is not a total order.
//!
//! The standard library's sorts may panic when a comparator contradicts itself (Rust 1.81 and
//! later detect some such orders and say so). Some orders users ask for are like that: Hadoop's
//! `KeyFieldBasedComparator -n` reads keys such as `1.5.6` or `abc` in ways that are not
//! transitive, and Hadoop's own quicksort sorts them without complaint. [`sort_tolerant_by`]
//! is a plain merge sort whose every loop advances, so whatever the comparator answers it ends
//! with a permutation of its input, and for a total order that permutation is the stable sort.

use std::cmp::Ordering;

/// Runs this short are sorted by insertion before the merges.
const INSERTION_RUN: usize = 24;

/// Sorts `items` by `compare`, stably, without panicking and in O(n log n) comparisons,
/// whatever `compare` answers.
///
/// For a total order the result is what [`slice::sort_by`] gives. For an order that is not
/// total the result is some permutation of `items` (the one this merge sort arrives at); no
/// item is lost or repeated.
pub fn sort_tolerant_by<T: Copy>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let len = items.len();
    if len < 2 {
        return;
    }
    for chunk in items.chunks_mut(INSERTION_RUN) {
        insertion_sort(chunk, &mut compare);
    }
    if len <= INSERTION_RUN {
        return;
    }
    let mut scratch: Vec<T> = items.to_vec();
    // Each pass merges neighbouring runs of `width` from one buffer into the other; `in_items`
    // says which one holds the current runs.
    let mut in_items = true;
    let mut width = INSERTION_RUN;
    while width < len {
        let (from, to): (&[T], &mut [T]) = if in_items {
            (&*items, &mut scratch[..])
        } else {
            (&scratch[..], &mut *items)
        };
        let mut start = 0;
        while start < len {
            let middle = start.saturating_add(width).min(len);
            let end = middle.saturating_add(width).min(len);
            merge(
                &from[start..middle],
                &from[middle..end],
                &mut to[start..end],
                &mut compare,
            );
            start = end;
        }
        in_items = !in_items;
        width = width.saturating_mul(2);
    }
    if !in_items {
        items.copy_from_slice(&scratch);
    }
}

/// Stable insertion sort: an item moves left past those that compare `Greater` than it.
fn insertion_sort<T: Copy>(items: &mut [T], compare: &mut impl FnMut(&T, &T) -> Ordering) {
    for i in 1..items.len() {
        let item = items[i];
        let mut j = i;
        while j > 0 && compare(&items[j - 1], &item) == Ordering::Greater {
            items[j] = items[j - 1];
            j -= 1;
        }
        items[j] = item;
    }
}

/// Merges `left` and `right` into `out` (whose length is theirs together); on a tie the left
/// item comes first, which keeps the sort stable.
fn merge<T: Copy>(
    left: &[T],
    right: &[T],
    out: &mut [T],
    compare: &mut impl FnMut(&T, &T) -> Ordering,
) {
    let (mut i, mut j) = (0, 0);
    for slot in out.iter_mut() {
        let take_right = match (left.get(i), right.get(j)) {
            (Some(l), Some(r)) => compare(r, l) == Ordering::Less,
            (None, _) => true,
            (_, None) => false,
        };
        if take_right {
            *slot = right[j];
            j += 1;
        } else {
            *slot = left[i];
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// For a total order, the same result as the standard library's stable sort (ties
        /// kept in their input order: the second field records it).
        #[test]
        fn a_total_order_sorts_as_the_standard_sort(keys in proptest::collection::vec(0u8..20, 0..300)) {
            let mut items: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut expected = items.clone();
            expected.sort_by_key(|a| a.0);
            sort_tolerant_by(&mut items, |a, b| a.0.cmp(&b.0));
            prop_assert_eq!(items, expected);
        }

        /// Whatever the comparator answers, the result is a permutation of the input.
        #[test]
        fn any_comparator_gives_a_permutation(
            len in 0usize..400,
            answers in proptest::collection::vec(0u8..3, 1..64),
        ) {
            let mut items: Vec<usize> = (0..len).collect();
            let mut call = 0usize;
            sort_tolerant_by(&mut items, |_, _| {
                call += 1;
                match answers[call % answers.len()] {
                    0 => Ordering::Less,
                    1 => Ordering::Equal,
                    _ => Ordering::Greater,
                }
            });
            let mut seen = items.clone();
            seen.sort_unstable();
            prop_assert_eq!(seen, (0..len).collect::<Vec<_>>());
        }
    }

    /// An order that is not transitive (rock, paper, scissors) over many items: the standard
    /// sort may panic on it; this one returns every item once.
    #[test]
    fn an_intransitive_order_does_not_panic() {
        let mut items: Vec<u32> = (0..10_000).map(|i| (i * 7919) % 3).collect();
        sort_tolerant_by(&mut items, |a, b| match (a, b) {
            _ if a == b => Ordering::Equal,
            (0, 1) | (1, 2) | (2, 0) => Ordering::Less,
            _ => Ordering::Greater,
        });
        for value in 0..3 {
            let count = items.iter().filter(|&&v| v == value).count();
            assert_eq!(
                count,
                (0..10_000).filter(|i| (i * 7919) % 3 == value).count()
            );
        }
    }
}
