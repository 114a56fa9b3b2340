//! Key orders other than plain byte order.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// Compares two keys. Implemented by orders such as Hadoop's `KeyFieldBasedComparator`, which
/// sorts by selected fields, numerically or in reverse.
///
/// Should be a total order (antisymmetric and transitive). One that may not be (Hadoop's
/// numeric field comparison of keys that are not numbers) says so with
/// [`is_total_order`](KeyComparator::is_total_order): the engine then sorts with
/// [`sort_tolerant_by`](crate::sort_tolerant_by), which never panics, and skips the checks
/// that only hold for a total order.
pub trait KeyComparator: Send + Sync {
    /// How `a` compares with `b`.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;

    /// Whether [`compare`](KeyComparator::compare) is a total order for every pair of keys.
    fn is_total_order(&self) -> bool {
        true
    }
}

/// How keys are ordered in sorted runs, merges and grouping.
#[derive(Clone, Default)]
pub enum KeyOrder {
    /// Unsigned byte order (Hadoop's `Text` order) — the fast path: sorts use the normalised
    /// key prefix.
    #[default]
    Bytes,
    /// A custom comparator.
    Custom(Arc<dyn KeyComparator>),
}

impl KeyOrder {
    /// How `a` compares with `b` in this order.
    #[inline]
    pub fn compare(&self, a: &[u8], b: &[u8]) -> Ordering {
        match self {
            KeyOrder::Bytes => a.cmp(b),
            KeyOrder::Custom(c) => c.compare(a, b),
        }
    }

    /// Whether this order is total for every pair of keys (see
    /// [`KeyComparator::is_total_order`]).
    pub fn is_total(&self) -> bool {
        match self {
            KeyOrder::Bytes => true,
            KeyOrder::Custom(c) => c.is_total_order(),
        }
    }
}

impl fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyOrder::Bytes => f.write_str("Bytes"),
            KeyOrder::Custom(_) => f.write_str("Custom"),
        }
    }
}
