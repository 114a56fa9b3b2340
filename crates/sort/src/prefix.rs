/// The first 8 bytes of `key` as a big-endian integer, zero-padded.
///
/// Comparing prefixes as integers orders keys like comparing their first 8 bytes, so most
/// comparisons in a sort never touch the key bytes. Keys that share a prefix need a full compare;
/// two keys of at most 8 bytes with equal prefixes differ only by trailing zero bytes, so the
/// shorter one sorts first.
pub fn normalized_prefix(key: &[u8]) -> u64 {
    let mut bytes = [0u8; 8];
    let n = key.len().min(8);
    bytes[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// A smaller prefix always means a smaller key.
        #[test]
        fn prefix_order_agrees_with_byte_order(a: Vec<u8>, b: Vec<u8>) {
            let (pa, pb) = (normalized_prefix(&a), normalized_prefix(&b));
            if pa < pb { prop_assert!(a < b); }
            if pa > pb { prop_assert!(a > b); }
        }
    }
}
