//! Hash aggregation of counts: the map side of word-count-like jobs.
//!
//! Summing in a hash table collapses the thousands of repeats of a frequent key as they arrive,
//! so only distinct keys are ever sorted. The lookup is the hot loop of word count, so:
//!
//! * keys of up to 16 bytes (nearly all words) live inside their slot, zero-padded: a lookup
//!   compares one 128-bit value and never touches another cache line;
//! * longer keys are copied once into large arena blocks (no allocation per key);
//! * short keys are hashed by one folded 128-bit multiply of their two padded words.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashTable};

/// Keys up to this length are stored inline in their slot.
const INLINE: usize = 16;

/// A key of at most 16 bytes, zero-padded, ready for [`CountTable::add_batch`].
#[derive(Debug, Clone, Copy)]
pub struct ShortKey {
    padded: [u8; INLINE],
    len: u32,
}

impl ShortKey {
    /// The key, if it is short enough to be stored inline.
    pub fn new(key: &[u8]) -> Option<ShortKey> {
        (key.len() <= INLINE).then(|| ShortKey {
            padded: pad(key),
            len: key.len() as u32,
        })
    }

    /// The key `text[start..end]`, if it is short enough to be stored inline.
    ///
    /// The same as `ShortKey::new(&text[start..end])`, but faster when the text goes on for
    /// 16 bytes from `start`: the key is then one 16-byte load, masked to its length, where
    /// [`ShortKey::new`] has to branch on the length, which a processor mispredicts for words
    /// of varying length.
    ///
    /// # Panics
    /// If `start..end` is not a range inside `text`.
    #[inline]
    pub fn from_text(text: &[u8], start: usize, end: usize) -> Option<ShortKey> {
        let len = end - start;
        if len > INLINE {
            return None;
        }
        match text.get(start..start + INLINE) {
            Some(chunk) => {
                let mut bytes = [0u8; INLINE];
                bytes.copy_from_slice(chunk);
                let mask = u128::MAX
                    .checked_shr(8 * (INLINE - len) as u32)
                    .unwrap_or(0);
                Some(ShortKey {
                    padded: (u128::from_le_bytes(bytes) & mask).to_le_bytes(),
                    len: len as u32,
                })
            }
            None => ShortKey::new(&text[start..end]),
        }
    }

    /// The key's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.padded[..self.len as usize]
    }
}

/// The key zero-padded to 16 bytes; `key` must be at most 16 bytes long.
///
/// Built from at most four overlapping loads instead of a variable-length copy: the copy is a
/// `memcpy` call whose byte-wise stores the following 16-byte load cannot forward from, a stall
/// that cost more than the whole hash-table probe of a word count.
fn pad(key: &[u8]) -> [u8; INLINE] {
    let n = key.len();
    debug_assert!(n <= INLINE);
    let word = |at: usize| u64::from_le_bytes(key[at..at + 8].try_into().unwrap_or([0; 8]));
    let half = |at: usize| {
        u64::from(u32::from_le_bytes(
            key[at..at + 4].try_into().unwrap_or([0; 4]),
        ))
    };
    let (lo, hi) = match n {
        // Bytes 8..n sit at the top of the word ending at n.
        9..=16 => (word(0), word(n - 8) >> ((16 - n) * 8)),
        8 => (word(0), 0),
        // Two overlapping halves; the overlap holds the same bytes in both.
        4..=7 => (half(0) | half(n - 4) << ((n - 4) * 8), 0),
        1..=3 => {
            let (first, middle, last) = (key[0], key[n / 2], key[n - 1]);
            (
                u64::from(first)
                    | u64::from(middle) << (n / 2 * 8)
                    | u64::from(last) << ((n - 1) * 8),
                0,
            )
        }
        _ => (0, 0),
    };
    (u128::from(lo) | u128::from(hi) << 64).to_le_bytes()
}

/// Hash of a short key from its padded form: a folded multiply, as in foldhash, mixing in the
/// length so that keys differing only in trailing zero bytes differ.
fn short_hash(padded: [u8; INLINE], len: usize) -> u64 {
    let padded = u128::from_le_bytes(padded);
    const K0: u64 = 0x243f_6a88_85a3_08d3;
    const K1: u64 = 0x1319_8a2e_0370_7344;
    let lo = padded as u64 ^ K0;
    let hi = (padded >> 64) as u64 ^ K1 ^ (len as u64).rotate_left(56);
    let product = u128::from(lo).wrapping_mul(u128::from(hi));
    (product as u64) ^ ((product >> 64) as u64)
}

use crate::{normalized_prefix, RecordTooLarge};

/// One distinct key and its count: 32 bytes, two to a cache line.
///
/// `key` holds the key itself, zero-padded, when `len <= INLINE`; for a longer key it holds
/// the key's place in the arena (block as `u32` LE, offset as `u32` LE) and its hash (`u64` LE),
/// since the table needs the hash again when it grows.
#[derive(Debug, Clone, Copy)]
struct Slot {
    key: [u8; INLINE],
    count: u64,
    len: u32,
}

impl Slot {
    fn is_inline(&self) -> bool {
        self.len as usize <= INLINE
    }

    fn arena_place(&self) -> (usize, usize) {
        let [b0, b1, b2, b3, o0, o1, o2, o3, ..] = self.key;
        (
            u32::from_le_bytes([b0, b1, b2, b3]) as usize,
            u32::from_le_bytes([o0, o1, o2, o3]) as usize,
        )
    }

    fn hash(&self) -> u64 {
        if self.is_inline() {
            short_hash(self.key, self.len as usize)
        } else {
            let [.., h0, h1, h2, h3, h4, h5, h6, h7] = self.key;
            u64::from_le_bytes([h0, h1, h2, h3, h4, h5, h6, h7])
        }
    }
}

/// Bytes per table slot, control byte and load-factor slack included.
const SLOT_BYTES: usize = std::mem::size_of::<Slot>() * 8 / 7 + 1;

/// A map from byte keys to `u64` sums whose memory can be reserved before it is allocated.
#[derive(Debug)]
pub struct CountTable {
    table: HashTable<Slot>,
    hasher: DefaultHashBuilder,
    blocks: Vec<Vec<u8>>,
    block_size: usize,
    key_bytes: usize,
}

impl CountTable {
    /// An empty table storing keys in arena blocks of `block_size` bytes.
    pub fn new(block_size: usize) -> CountTable {
        CountTable {
            table: HashTable::new(),
            hasher: DefaultHashBuilder::default(),
            blocks: Vec::new(),
            block_size: block_size.max(16),
            key_bytes: 0,
        }
    }

    /// Distinct keys held.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// Whether no key is held.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Bytes of all keys held.
    pub fn key_bytes(&self) -> usize {
        self.key_bytes
    }

    /// Bytes allocated: key blocks plus table slots.
    pub fn memory(&self) -> usize {
        self.blocks.iter().map(Vec::capacity).sum::<usize>() + self.table.capacity() * SLOT_BYTES
    }

    fn key_of<'a>(blocks: &'a [Vec<u8>], slot: &'a Slot) -> &'a [u8] {
        if slot.is_inline() {
            &slot.key[..slot.len as usize]
        } else {
            let (block, start) = slot.arena_place();
            &blocks[block][start..start + slot.len as usize]
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        if key.len() <= INLINE {
            short_hash(pad(key), key.len())
        } else {
            self.hasher.hash_one(key)
        }
    }

    /// Adds `count` to `key` if the key is present; returns whether it was.
    pub fn add_existing(&mut self, key: &[u8], count: u64) -> bool {
        let found = if key.len() <= INLINE {
            let padded = pad(key);
            let hash = short_hash(padded, key.len());
            let wanted = u128::from_le_bytes(padded);
            let len = key.len() as u32;
            self.table.find_mut(hash, |s| {
                s.len == len && u128::from_le_bytes(s.key) == wanted
            })
        } else {
            let hash = self.hasher.hash_one(key);
            let blocks = &self.blocks;
            self.table.find_mut(hash, |s| {
                s.len as usize == key.len() && s.hash() == hash && Self::key_of(blocks, s) == key
            })
        };
        match found {
            Some(slot) => {
                slot.count = slot.count.wrapping_add(count);
                true
            }
            None => false,
        }
    }

    /// Adds the counts of a batch of short keys (see [`ShortKey`]); appends the indices of keys
    /// not present to `missing`, for the caller to insert with [`CountTable::insert_new`].
    ///
    /// All hashes are computed first and the probes then run back to back, so that the
    /// processor can have several slot loads (cache misses, for a large table) in flight at once.
    pub fn add_batch(&mut self, batch: &[(ShortKey, u64)], missing: &mut Vec<usize>) {
        const CHUNK: usize = 16;
        let mut hashes = [0u64; CHUNK];
        for (chunk_index, chunk) in batch.chunks(CHUNK).enumerate() {
            for (h, (key, _)) in hashes.iter_mut().zip(chunk) {
                *h = short_hash(key.padded, key.len as usize);
            }
            for (i, (&hash, (key, count))) in hashes.iter().zip(chunk).enumerate() {
                let wanted = u128::from_le_bytes(key.padded);
                match self.table.find_mut(hash, |s| {
                    s.len == key.len && u128::from_le_bytes(s.key) == wanted
                }) {
                    Some(slot) => slot.count = slot.count.wrapping_add(*count),
                    None => missing.push(chunk_index * CHUNK + i),
                }
            }
        }
    }

    /// Bytes that inserting a new key of `key_len` bytes would allocate (0 if it fits).
    pub fn memory_for_insert(&self, key_len: usize) -> usize {
        let block = match self.blocks.last() {
            _ if key_len <= INLINE => 0,
            Some(b) if b.capacity() - b.len() >= key_len => 0,
            _ => key_len.max(self.block_size),
        };
        let table = if self.table.len() == self.table.capacity() {
            // hashbrown doubles its bucket count when full.
            (self.table.capacity().max(16) * 2) * SLOT_BYTES
        } else {
            0
        };
        block + table
    }

    /// Inserts a key that is not present (call [`CountTable::add_existing`] first).
    ///
    /// # Errors
    /// [`RecordTooLarge`] if the key is longer than 4 GiB.
    pub fn insert_new(&mut self, key: &[u8], count: u64) -> Result<(), RecordTooLarge> {
        let too_large = || RecordTooLarge {
            key_len: key.len(),
            value_len: 8,
        };
        let len = u32::try_from(key.len()).map_err(|_| too_large())?;
        let hash = self.hash(key);
        let stored = if key.len() <= INLINE {
            pad(key)
        } else {
            if self
                .blocks
                .last()
                .is_none_or(|b| b.capacity() - b.len() < key.len())
            {
                self.blocks
                    .push(Vec::with_capacity(key.len().max(self.block_size)));
            }
            let block = self.blocks.len() - 1;
            let block_number = u32::try_from(block).map_err(|_| too_large())?;
            let arena = &mut self.blocks[block];
            let offset = u32::try_from(arena.len()).map_err(|_| too_large())?;
            arena.extend_from_slice(key);
            let mut place = [0u8; INLINE];
            place[..4].copy_from_slice(&block_number.to_le_bytes());
            place[4..8].copy_from_slice(&offset.to_le_bytes());
            place[8..].copy_from_slice(&hash.to_le_bytes());
            place
        };
        self.key_bytes += key.len();
        let slot = Slot {
            key: stored,
            count,
            len,
        };
        self.table.insert_unique(hash, slot, Slot::hash);
        Ok(())
    }

    /// The entries sorted by (`partition_of(key)`, key), as `(partition, key, count)`.
    pub fn sorted(&self, partition_of: impl Fn(&[u8]) -> usize) -> Vec<(usize, &[u8], u64)> {
        let mut entries: Vec<(usize, u64, &[u8], u64)> = self
            .table
            .iter()
            .map(|s| {
                let key = Self::key_of(&self.blocks, s);
                (partition_of(key), normalized_prefix(key), key, s.count)
            })
            .collect();
        entries.sort_unstable_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        entries
            .into_iter()
            .map(|(p, _, key, count)| (p, key, count))
            .collect()
    }

    /// Drops every entry and frees all memory.
    pub fn clear(&mut self) {
        self.table = HashTable::new();
        self.blocks = Vec::new();
        self.key_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    proptest! {
        /// The table sums like a BTreeMap model and sorts like it too.
        #[test]
        fn sums_match_model(keys in proptest::collection::vec((proptest::collection::vec(0u8..4, 0..6), 1u64..5), 0..300)) {
            let mut table = CountTable::new(16);
            let mut model = BTreeMap::new();
            for (k, c) in &keys {
                let before = table.memory();
                let predicted = table.memory_for_insert(k.len());
                if !table.add_existing(k, *c) {
                    table.insert_new(k, *c).unwrap();
                    prop_assert!(table.memory() - before <= predicted);
                }
                *model.entry(k.clone()).or_insert(0u64) += c;
            }
            let got: Vec<(Vec<u8>, u64)> = table.sorted(|_| 0).into_iter().map(|(_, k, c)| (k.to_vec(), c)).collect();
            let want: Vec<(Vec<u8>, u64)> = model.into_iter().collect();
            prop_assert_eq!(got, want);
        }

        /// The load-based padding equals a plain copy into a zeroed array, at every length.
        #[test]
        fn pad_equals_copy(key in proptest::collection::vec(any::<u8>(), 0..=16)) {
            let mut want = [0u8; INLINE];
            want[..key.len()].copy_from_slice(&key);
            prop_assert_eq!(pad(&key), want);
        }

        /// A key cut from a longer text equals the key made from its bytes.
        #[test]
        fn short_key_from_text(text in proptest::collection::vec(any::<u8>(), 0..40), a in 0usize..40, b in 0usize..40) {
            let (start, end) = (a.min(b).min(text.len()), a.max(b).min(text.len()));
            let from_text = ShortKey::from_text(&text, start, end);
            let direct = ShortKey::new(&text[start..end]);
            prop_assert_eq!(from_text.map(|k| (k.padded, k.len)), direct.map(|k| (k.padded, k.len)));
            prop_assert_eq!(from_text.is_some(), end - start <= INLINE);
        }

        /// Counting through batches (with the caller inserting the missing keys, as the
        /// collector does) gives the same sums as one key at a time.
        #[test]
        fn batches_match_model(keys in proptest::collection::vec((proptest::collection::vec(0u8..4, 0..18), 1u64..5), 0..300)) {
            let mut table = CountTable::new(16);
            let mut model = BTreeMap::new();
            for chunk in keys.chunks(37) {
                let mut batch = Vec::new();
                for (k, c) in chunk {
                    *model.entry(k.clone()).or_insert(0u64) += c;
                    match ShortKey::new(k) {
                        Some(short) => batch.push((short, *c)),
                        None => if !table.add_existing(k, *c) { table.insert_new(k, *c).unwrap(); },
                    }
                }
                let mut missing = Vec::new();
                table.add_batch(&batch, &mut missing);
                for i in missing {
                    let (key, count) = batch[i];
                    if !table.add_existing(key.bytes(), count) {
                        table.insert_new(key.bytes(), count).unwrap();
                    }
                }
            }
            let got: Vec<(Vec<u8>, u64)> = table.sorted(|_| 0).into_iter().map(|(_, k, c)| (k.to_vec(), c)).collect();
            let want: Vec<(Vec<u8>, u64)> = model.into_iter().collect();
            prop_assert_eq!(got, want);
        }
    }
}
