//! Properties of the key field comparator and partitioner that hold in Hadoop too (the exact
//! results are checked against Hadoop's own in `hadoop_vectors.rs`).
#![allow(clippy::unwrap_used)] // helpers outside #[test] functions may unwrap too

use std::cmp::Ordering;

use proptest::prelude::*;
use sluice_hadoop::keyfield::{
    KeyFieldComparator, KeyFieldError, KeyFieldPartitioner, KeyFieldSpec,
};

const OPTIONS: &[&str] = &[
    "",
    "-n",
    "-r",
    "-nr",
    "-k1",
    "-k2",
    "-k2,2",
    "-k1,1n",
    "-k2,2nr",
    "-k1.2,1.3",
    "-k2n -k1r",
    "-k3,3 -k1,1n",
    "-k1.2",
    "-k2.2,3.1",
    "-k2,1",
];

fn comparator(options: &str) -> KeyFieldComparator {
    KeyFieldComparator::new(KeyFieldSpec::parse(options, b"\t").unwrap())
}

/// Keys of a few tab-separated fields drawn from bytes that exercise the numeric scan.
fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(b"0019-.\ta\xc3\xa9".to_vec()), 0..10)
}

/// Well-formed decimal numbers.
fn number() -> impl Strategy<Value = String> {
    "-?(0|[1-9][0-9]{0,3})(\\.[0-9]{1,3})?"
}

proptest! {
    #[test]
    fn antisymmetric(opt in prop::sample::select(OPTIONS), a in key(), b in key()) {
        let c = comparator(opt);
        prop_assert_eq!(c.compare_total(&a, &b), c.compare_total(&b, &a).reverse());
        prop_assert_eq!(c.compare_total(&a, &a), Ordering::Equal);
    }

    #[test]
    fn hadoop_order_is_antisymmetric_when_fields_are_present(
        opt in prop::sample::select(OPTIONS), a in number(), b in number(), x in number(), y in number()
    ) {
        // Three fields each, all present: compare and compare_total agree.
        let (a, b) = (format!("{a}\t{x}\t{a}"), format!("{b}\t{y}\t{b}"));
        let c = comparator(opt);
        prop_assert_eq!(c.compare(a.as_bytes(), b.as_bytes()), c.compare(b.as_bytes(), a.as_bytes()).reverse());
        prop_assert_eq!(c.compare(a.as_bytes(), b.as_bytes()), c.compare_total(a.as_bytes(), b.as_bytes()));
    }

    #[test]
    fn transitive_on_text_fields(
        opt in prop::sample::select(&["", "-r", "-k2", "-k2,2", "-k1.2,1.3", "-k2,2r -k1,1"][..]),
        mut keys in prop::collection::vec(key(), 3)
    ) {
        let c = comparator(opt);
        keys.sort_by(|a, b| c.compare_total(a, b));
        prop_assert_ne!(c.compare_total(&keys[0], &keys[1]), Ordering::Greater);
        prop_assert_ne!(c.compare_total(&keys[1], &keys[2]), Ordering::Greater);
        prop_assert_ne!(c.compare_total(&keys[0], &keys[2]), Ordering::Greater);
    }

    #[test]
    fn numeric_order_is_the_order_of_the_numbers(a in number(), b in number()) {
        let expected = a.parse::<f64>().unwrap().partial_cmp(&b.parse::<f64>().unwrap()).unwrap();
        prop_assert_eq!(comparator("-n").compare(a.as_bytes(), b.as_bytes()), expected);
        prop_assert_eq!(comparator("-nr").compare(a.as_bytes(), b.as_bytes()), expected.reverse());
        let (ka, kb) = (format!("x\t{a}\ty"), format!("x\t{b}\tz"));
        prop_assert_eq!(comparator("-k2,2n").compare(ka.as_bytes(), kb.as_bytes()), expected);
    }

    #[test]
    fn selected_field_decides(f in prop::collection::vec("[a-c0-9.-]{0,3}", 2..5), g in prop::collection::vec("[a-c0-9.-]{0,3}", 2..5)) {
        // An empty last field counts as missing, so keep field 2 non-empty.
        prop_assume!(!f[1].is_empty() && !g[1].is_empty());
        let (a, b) = (f.join("\t"), g.join("\t"));
        let c = comparator("-k2,2");
        prop_assert_eq!(c.compare(a.as_bytes(), b.as_bytes()), f[1].as_bytes().cmp(g[1].as_bytes()));
        // Same selected field, same partition, whatever the other fields hold.
        let p = KeyFieldPartitioner::new(KeyFieldSpec::parse("-k2,2", b"\t").unwrap());
        let b2 = format!("z\t{}\tq", f[1]);
        prop_assert_eq!(p.partition(a.as_bytes(), 97), p.partition(b2.as_bytes(), 97));
    }

    #[test]
    fn no_panic_on_any_input(opt in "[-kn r.,0-9+]{0,12}", sep in prop::collection::vec(any::<u8>(), 0..3),
                             a in prop::collection::vec(any::<u8>(), 0..12), b in prop::collection::vec(any::<u8>(), 0..12),
                             parts in 0usize..50) {
        if let Ok(spec) = KeyFieldSpec::parse(&opt, &sep) {
            let _ = KeyFieldComparator::new(spec.clone()).compare(&a, &b);
            let p = KeyFieldPartitioner::new(spec).partition(&a, parts);
            prop_assert!(p < parts.max(1));
        }
    }
}

#[test]
fn empty_options_compare_bytes_and_hash_the_java_string() {
    let c = comparator("");
    assert_eq!(c.compare(b"a\tb", b"a\tc"), Ordering::Less);
    assert_eq!(c.compare(b"", b""), Ordering::Equal);
    // String.hashCode("ab") = 97 * 31 + 98 = 3105.
    let p = KeyFieldPartitioner::new(KeyFieldSpec::parse("", b"\t").unwrap());
    assert_eq!(p.hash(b"ab"), 3105);
    assert_eq!(p.partition(b"ab", 1000), 105);
}

#[test]
fn missing_fields_sort_first_and_both_missing_is_less() {
    let c = comparator("-k2,2");
    assert_eq!(c.compare(b"a", b"a\tb"), Ordering::Less);
    assert_eq!(c.compare(b"a\tb", b"a"), Ordering::Greater);
    // Hadoop's quirk: both missing is "less" in either order; compare_total says equal.
    assert_eq!(c.compare(b"x", b"y"), Ordering::Less);
    assert_eq!(c.compare(b"y", b"x"), Ordering::Less);
    assert_eq!(comparator("-k2,2r").compare(b"x", b"y"), Ordering::Greater);
    assert_eq!(c.compare_total(b"x", b"y"), Ordering::Equal);
    // An empty key lacks even field 1 once options are given.
    assert_eq!(comparator("-n").compare(b"", b""), Ordering::Less);
}

#[test]
fn numeric_corner_cases() {
    let n = comparator("-n");
    let eq = |a: &str, b: &str| n.compare(a.as_bytes(), b.as_bytes());
    assert_eq!(eq("-0", "0"), Ordering::Equal);
    assert_eq!(eq("-0.0", "0.00"), Ordering::Equal);
    // Hadoop's scan ends up comparing the *first* bytes when the digits after leading zeros
    // match, so equal values with different leading zeros are not equal.
    assert_eq!(eq("007", "7"), Ordering::Less);
    assert_eq!(eq("7", "007"), Ordering::Greater);
    assert_eq!(eq("-01", "-1"), Ordering::Equal);
    assert_eq!(eq("1.50", "1.5"), Ordering::Equal);
    assert_eq!(eq("-2", "-10"), Ordering::Greater);
    assert_eq!(eq("1e3", "2"), Ordering::Less);
    assert_eq!(eq("10", "9"), Ordering::Greater);
}

#[test]
fn ranges_and_separators() {
    // A character range running past its field continues into the next one.
    let c = KeyFieldComparator::new(KeyFieldSpec::parse("-k1.1,1.4", b"\t").unwrap());
    assert_eq!(c.compare(b"ab\tcX", b"ab\tcY"), Ordering::Equal);
    assert_eq!(c.compare(b"ab\tc", b"ab\td"), Ordering::Less);
    let c = KeyFieldComparator::new(KeyFieldSpec::parse("-k2,2", b",").unwrap());
    assert_eq!(c.compare(b"z,a,z", b"a,b,a"), Ordering::Less);
}

#[test]
fn errors_explain_the_option() {
    let err = KeyFieldSpec::parse("-k0", b"\t").unwrap_err();
    assert!(matches!(err, KeyFieldError::FieldZero { .. }));
    assert_eq!(
        err.to_string(),
        "bad key field option '-k0': field numbers start at 1"
    );
    assert!(matches!(
        KeyFieldSpec::parse("-k1.", b"\t"),
        Err(KeyFieldError::MissingNumber { .. })
    ));
    assert!(matches!(
        KeyFieldSpec::parse("-kx", b"\t"),
        Err(KeyFieldError::NotANumber { .. })
    ));
    assert!(matches!(
        KeyFieldSpec::parse("-k1.2.3", b"\t"),
        Err(KeyFieldError::Malformed { .. })
    ));
    let err = KeyFieldSpec::parse("-k 1.0", b"\t");
    assert!(matches!(err, Err(KeyFieldError::BadChar { .. })), "{err:?}");
    // Tokens Hadoop ignores stay ignored.
    assert!(KeyFieldSpec::parse("-rn -t -k", b"\t").is_ok());
}
