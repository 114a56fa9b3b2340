//! `-k`/`-t` option strings of KeyFieldBasedComparator and KeyFieldBasedPartitioner, and the
//! comparisons and partitions they then make of arbitrary keys.
#![no_main]

use std::cmp::Ordering;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_hadoop::keyfield::{KeyFieldComparator, KeyFieldPartitioner, KeyFieldSpec};

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(options) = <&str>::arbitrary(&mut u) else {
        return;
    };
    let Ok(separator) = <&[u8]>::arbitrary(&mut u) else {
        return;
    };
    let Ok(keys) = Vec::<&[u8]>::arbitrary(&mut u) else {
        return;
    };
    let Ok(spec) = KeyFieldSpec::parse(options, separator) else {
        return;
    };
    assert_eq!(spec.separator(), separator);
    let comparator = KeyFieldComparator::new(spec.clone());
    let partitioner = KeyFieldPartitioner::new(spec);
    for (i, a) in keys.iter().enumerate() {
        // `compare` reproduces Hadoop's answers, which are not always an order (a range
        // missing from both keys is `Less` both ways); `compare_total` is reflexive and
        // antisymmetric on every pair.
        let _ = comparator.compare(a, a);
        assert_eq!(comparator.compare_total(a, a), Ordering::Equal);
        for b in &keys[i + 1..] {
            let _ = comparator.compare(a, b);
            let total = comparator.compare_total(a, b);
            assert_eq!(
                total,
                comparator.compare_total(b, a).reverse(),
                "{a:?} {b:?}"
            );
        }
        for partitions in [1, 2, 7, 1000] {
            let p = partitioner.partition(a, partitions);
            assert!(p < partitions);
        }
        assert_eq!(partitioner.hash(a), partitioner.hash(a));
    }
});
