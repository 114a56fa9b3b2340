//! In-place MSD radix sort (American flag sort): the record buffer's index sort.
//!
//! The index is sorted by a fixed-width key (partition, then the 8-byte key prefix) that a
//! comparison sort handles one comparison at a time; distributing by one key byte per pass
//! does the same in a few linear passes. Buckets that become small, and entries equal in the
//! whole radix key, are finished by a comparison sort on the complete order, so the result is
//! exactly that of a comparison sort.

/// Buckets of at most this many items are finished by the comparison sort.
const SMALL: usize = 48;

/// Sorts `items` by a key of `width` bytes, of which `digit(item, i)` gives byte `i` (most
/// significant first), starting at byte `from` (the bytes before it must be equal for all
/// items). `finish` must sort a slice by the complete order, which must agree with the radix
/// key; it is given buckets of few items and runs of items equal in all `width` bytes.
pub(crate) fn radix_sort<T, D, F>(items: &mut [T], from: usize, width: usize, digit: &D, finish: &F)
where
    D: Fn(&T, usize) -> u8,
    F: Fn(&mut [T]),
{
    let mut byte = from;
    loop {
        if items.len() <= SMALL || byte >= width {
            finish(items);
            return;
        }
        let mut counts = [0usize; 256];
        for item in items.iter() {
            counts[usize::from(digit(item, byte))] += 1;
        }
        if counts.contains(&items.len()) {
            // Every item has the same byte here: nothing to distribute.
            byte += 1;
            continue;
        }
        let mut starts = [0usize; 256];
        let mut ends = [0usize; 256];
        let mut total = 0;
        for d in 0..256 {
            starts[d] = total;
            total += counts[d];
            ends[d] = total;
        }
        // Move every item into its bucket: each swap puts at least one item in place.
        let mut next = starts;
        for d in 0..256 {
            while next[d] < ends[d] {
                let target = usize::from(digit(&items[next[d]], byte));
                if target != d {
                    items.swap(next[d], next[target]);
                }
                next[target] += 1;
            }
        }
        for d in 0..256 {
            if counts[d] > 1 {
                radix_sort(
                    &mut items[starts[d]..ends[d]],
                    byte + 1,
                    width,
                    digit,
                    finish,
                );
            }
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Item = (u32, u64, u32, u32);

    fn digit(item: &Item, i: usize) -> u8 {
        if i < 4 {
            item.0.to_be_bytes()[i]
        } else {
            item.1.to_be_bytes()[i - 4]
        }
    }

    proptest! {
        /// Equals a comparison sort of the complete order, for keys with many equal bytes.
        #[test]
        fn matches_a_comparison_sort(
            items in proptest::collection::vec(
                (0u32..3, prop_oneof![any::<u64>(), 0u64..4, Just(u64::MAX)], 0u32..3, any::<u32>()),
                0..600,
            ),
        ) {
            let mut want = items.clone();
            want.sort_unstable();
            let mut got = items;
            radix_sort(&mut got, 0, 12, &digit, &|s: &mut [Item]| s.sort_unstable());
            prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn large_random_input_sorts() {
        let mut state = 7u64;
        let mut items: Vec<Item> = (0..100_000u32)
            .map(|i| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1);
                ((state >> 61) as u32, state, 0, i)
            })
            .collect();
        let mut want = items.clone();
        want.sort_unstable();
        radix_sort(&mut items, 0, 12, &digit, &|s: &mut [Item]| {
            s.sort_unstable()
        });
        assert!(items == want);
    }
}
