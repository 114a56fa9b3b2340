//! Hadoop's `HashPartitioner` and the byte hash behind `Text.hashCode()`.
//!
//! Hadoop's default partitioner sends a key to reducer `(key.hashCode() & Integer.MAX_VALUE) %
//! reducers`. For the keys sluice handles as bytes (`Text`, `BytesWritable`, streaming's
//! `TypedBytesWritable`: every `BinaryComparable`), `hashCode()` is
//! `WritableComparator.hashBytes` over the key's bytes (not its serialised form), which
//! [`hash_bytes`] reproduces; [`hash_partition`] is the partitioner's arithmetic. Reproducing
//! both exactly is what puts each key in the part file with the same number as Hadoop's.

/// `WritableComparator.hashBytes`, which is what `Text.hashCode()`, `BytesWritable.hashCode()`
/// and every `BinaryComparable.hashCode()` return for an object holding `bytes`:
/// `h = 1; h = 31 * h + b` over the bytes as signed Java bytes, with 32-bit wrap-around.
pub fn hash_bytes(bytes: &[u8]) -> i32 {
    bytes.iter().fold(1i32, |h, &b| {
        h.wrapping_mul(31).wrapping_add(i32::from(b as i8))
    })
}

/// `HashPartitioner.getPartition` for a key whose `hashCode()` is `hash`:
/// `(hash & Integer.MAX_VALUE) % partitions`. Returns 0 when `partitions` is 0 (Hadoop would
/// divide by zero).
pub fn hash_partition(hash: i32, partitions: usize) -> usize {
    if partitions == 0 {
        return 0;
    }
    let positive = u64::from((hash & i32::MAX).unsigned_abs());
    // The remainder is below `partitions`, so it fits a usize.
    (positive % partitions as u64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `new Text(s).hashCode()` by hand: "" hashes to 1, a single byte b to 31 + b.
    #[test]
    fn hash_of_small_keys() {
        assert_eq!(hash_bytes(b""), 1);
        assert_eq!(hash_bytes(b"a"), 31 + 97);
        assert_eq!(hash_bytes(b"ab"), (31 + 97) * 31 + 98);
        // Bytes >= 0x80 are negative Java bytes.
        assert_eq!(hash_bytes(&[0xff]), 31 - 1);
    }

    #[test]
    fn partitions_drop_the_sign_bit() {
        assert_eq!(hash_partition(-1, 1000), (i32::MAX % 1000) as usize);
        assert_eq!(hash_partition(i32::MIN, 7), 0);
        assert_eq!(hash_partition(12345, 0), 0);
        assert_eq!(hash_partition(12345, 1), 0);
        assert_eq!(hash_partition(12345, 100), 45);
    }
}
