//! Key orders other than plain byte order.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

/// Compares two keys. Implemented by orders such as Hadoop's `KeyFieldBasedComparator`, which
/// sorts by selected fields, numerically or in reverse.
///
/// Must be a total order (antisymmetric and transitive): sorts and merges rely on it.
pub trait KeyComparator: Send + Sync {
    /// How `a` compares with `b`.
    fn compare(&self, a: &[u8], b: &[u8]) -> Ordering;
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
}

impl fmt::Debug for KeyOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyOrder::Bytes => f.write_str("Bytes"),
            KeyOrder::Custom(_) => f.write_str("Custom"),
        }
    }
}
