//! Partitioners.

use crate::Partitioner;

/// Hadoop's `HashPartitioner` for `Text` keys: the same key goes to the same reducer number as in
/// Hadoop, so part files can be compared one by one.
///
/// Hadoop hashes a `Text` as `h = 1; for each byte b (as a signed Java byte): h = 31*h + b` with
/// 32-bit wrap-around, then takes `(h & Integer.MAX_VALUE) % reducers`.
#[derive(Debug, Clone, Copy, Default)]
pub struct HashPartitioner;

/// The hash Hadoop's `Text.hashCode()` computes over `bytes`.
pub fn hadoop_text_hash(bytes: &[u8]) -> i32 {
    bytes.iter().fold(1i32, |h, &b| {
        h.wrapping_mul(31).wrapping_add(i32::from(b as i8))
    })
}

impl Partitioner for HashPartitioner {
    fn partition(&self, key: &[u8], partitions: usize) -> usize {
        if partitions <= 1 {
            return 0;
        }
        let positive = (hadoop_text_hash(key) & i32::MAX) as u64;
        (positive % partitions as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values computed with Java's `new Text(s).hashCode()` semantics by hand: "" hashes to 1,
    /// and a single byte b to 31 + b.
    #[test]
    fn hash_of_small_keys() {
        assert_eq!(hadoop_text_hash(b""), 1);
        assert_eq!(hadoop_text_hash(b"a"), 31 + 97);
        assert_eq!(hadoop_text_hash(b"ab"), (31 + 97) * 31 + 98);
        // Bytes >= 0x80 are negative Java bytes.
        assert_eq!(hadoop_text_hash(&[0xff]), 31 - 1);
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
