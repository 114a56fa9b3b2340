//! A partition of a run held in memory, as its encoded bytes: what a shuffle sends as it is.
//!
//! A frame carries whole records, so a sender must cut a partition's bytes between records.
//! Finding record boundaries by decoding every record's lengths cost a sender a pass over bytes
//! written long before (out of the CPU caches by then): about 5% of a cluster TeraSort's map
//! phase. A [`MemRun`](crate::MemRun) therefore notes where a record starts about every
//! [`MARK_EVERY`] bytes as it is built, and [`EncodedPartition::chunks`] cuts at those marks,
//! decoding records only where marks are further apart than a chunk (long records, or a run
//! built from larger pieces).
//!
//! ```text
//!  bytes:  |rec|rec|rec|rec|rec|rec|rec|rec|rec|rec|rec|rec|rec|
//!  marks:  ^           ^           ^           ^           ^        (about every MARK_EVERY)
//!  chunks: [----------- at most max -----------][---- ... ----]     (cut at the last mark that fits)
//! ```

use std::ops::Range;

use sluice_format::{record, FormatError};

/// About how many bytes of a partition lie between two marks of a run in memory: a quarter of
/// the 1 MiB frames a cluster's shuffle sends, so that a frame cut at a mark is at least three
/// quarters full. Not less:
/// the marks are an allocation made next to the run's buffer and held as long as it, and with
/// a mark every 64 KiB (4 KiB of marks per 36 MB run) glibc kept 75 MB more memory resident in
/// a 1 GB TeraSort on one machine; with one every 256 KiB, none (docs/BENCHMARKS.md).
pub(crate) const MARK_EVERY: usize = 256 << 10;

/// A run held in memory as one buffer, as it is (see [`RunSource::memory_image`](crate::RunSource::memory_image)):
/// what a process writes out to disk in one piece, or sends partition by partition.
#[derive(Debug, Clone, Copy)]
pub struct MemoryImage<'a> {
    /// Every partition's records, encoded back to back, partition after partition.
    pub bytes: &'a [u8],
    /// Where each partition's records lie in `bytes`.
    pub partitions: &'a [Range<usize>],
    /// Records of each partition.
    pub(crate) records: &'a [u64],
    /// Offsets in `bytes` where a record starts, ascending: every partition's first record
    /// and about one every [`MARK_EVERY`] bytes after it.
    pub(crate) marks: &'a [usize],
}

impl<'a> MemoryImage<'a> {
    /// Partition `partition`'s records with their count and marks; `None` past the last
    /// partition.
    pub fn partition(&self, partition: usize) -> Option<EncodedPartition<'a>> {
        let range = self.partitions.get(partition)?;
        let (first, last) = (
            self.marks.partition_point(|&m| m < range.start),
            self.marks.partition_point(|&m| m < range.end),
        );
        Some(EncodedPartition {
            bytes: self.bytes.get(range.clone())?,
            records: self.records.get(partition).copied().unwrap_or(0),
            marks: self.marks.get(first..last).unwrap_or(&[]),
            base: range.start,
        })
    }
}

/// One partition of a run in memory: its records encoded back to back (`varint klen, varint
/// vlen, key, value`, as a shuffle frame carries them), how many there are, and where some of
/// them start.
#[derive(Debug, Clone, Copy)]
pub struct EncodedPartition<'a> {
    /// The records.
    pub bytes: &'a [u8],
    /// How many records `bytes` holds.
    pub records: u64,
    /// Where some records start (not every one's), ascending: offsets from `bytes`' start
    /// minus `base` (a run's marks are offsets in the whole run).
    pub(crate) marks: &'a [usize],
    /// The offset of `bytes`' first byte in the terms of `marks`.
    pub(crate) base: usize,
}

impl<'a> EncodedPartition<'a> {
    /// The records in chunks of whole records of at most `max` bytes each, in order, cut as
    /// late as the marks allow (a record longer than `max` is a chunk of its own).
    pub fn chunks(&self, max: usize) -> Chunks<'a> {
        Chunks {
            bytes: self.bytes,
            marks: self.marks,
            base: self.base,
            from: 0,
            max: max.max(1),
        }
    }
}

/// The chunks of an [`EncodedPartition`]; see [`EncodedPartition::chunks`].
#[derive(Debug)]
pub struct Chunks<'a> {
    bytes: &'a [u8],
    marks: &'a [usize],
    base: usize,
    /// Where the next chunk starts (a record's first byte).
    from: usize,
    max: usize,
}

impl<'a> Chunks<'a> {
    /// The end of the next chunk: the last mark (or the end) within `max` bytes, else found by
    /// decoding records.
    fn next_end(&self) -> Result<usize, FormatError> {
        let (from, len) = (self.from, self.bytes.len());
        let limit = from.saturating_add(self.max);
        if len <= limit {
            return Ok(len);
        }
        // Marks after `from` and at most `limit`: the last of them.
        let at = |m: usize| m.saturating_sub(self.base);
        let after = self.marks.partition_point(|&m| at(m) <= from);
        let within = self.marks.partition_point(|&m| at(m) <= limit);
        if within > after {
            return Ok(at(self.marks[within - 1]));
        }
        // No mark close enough: as many records as fit, or the one record that does not.
        let mut end = from;
        loop {
            let next = record::decode(self.bytes, end)?.next;
            if next > limit {
                return Ok(if end == from { next } else { end });
            }
            end = next;
        }
    }
}

impl<'a> Iterator for Chunks<'a> {
    type Item = Result<&'a [u8], FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.from >= self.bytes.len() {
            return None;
        }
        match self.next_end() {
            Ok(end) => {
                let chunk = &self.bytes[self.from..end];
                self.from = end;
                Some(Ok(chunk))
            }
            Err(e) => {
                // Nothing after a corrupt record can be cut: the iteration ends with the error.
                self.from = self.bytes.len();
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Encodes records of the given value lengths (keys of one byte) and returns the bytes and
    /// every record's start.
    fn encode(values: &[usize]) -> (Vec<u8>, Vec<usize>) {
        let mut bytes = Vec::new();
        let mut starts = Vec::new();
        for (i, &len) in values.iter().enumerate() {
            starts.push(bytes.len());
            record::encode(&mut bytes, &[i as u8], &vec![b'v'; len]).unwrap();
        }
        (bytes, starts)
    }

    proptest! {
        /// Chunks put back together are the bytes; each is whole records (it decodes to its
        /// end), and at most `max` bytes unless it is one record; whatever marks are given.
        #[test]
        fn chunks_are_whole_records_within_max(
            values in proptest::collection::vec(0usize..300, 0..200),
            mark_every in 1usize..20,
            max in 1usize..1000,
            base in 0usize..5000,
        ) {
            let (bytes, starts) = encode(&values);
            // Marks in the terms of a run in which the partition starts at `base`.
            let marks: Vec<usize> = starts.iter().step_by(mark_every).map(|s| s + base).collect();
            let partition = EncodedPartition {
                bytes: &bytes,
                records: values.len() as u64,
                marks: &marks,
                base,
            };
            let mut joined = Vec::new();
            let mut previous_end = 0;
            for chunk in partition.chunks(max) {
                let chunk = chunk.unwrap();
                prop_assert!(!chunk.is_empty());
                let mut at = 0;
                let mut records = 0;
                while at < chunk.len() {
                    at = record::decode(chunk, at).unwrap().next;
                    records += 1;
                }
                prop_assert_eq!(at, chunk.len());
                prop_assert!(chunk.len() <= max || records == 1);
                joined.extend_from_slice(chunk);
                previous_end += chunk.len();
                // Every cut is at a record's start.
                prop_assert!(previous_end == bytes.len() || starts.contains(&previous_end));
            }
            prop_assert_eq!(joined, bytes);
        }
    }

    #[test]
    fn cuts_at_the_last_mark_that_fits() {
        let (bytes, starts) = encode(&[8; 10]); // 11 bytes each
        let marks = [starts[0], starts[3], starts[6], starts[9]];
        let partition = EncodedPartition {
            bytes: &bytes,
            records: 10,
            marks: &marks,
            base: 0,
        };
        let lens: Vec<usize> = partition.chunks(70).map(|c| c.unwrap().len()).collect();
        // 70 bytes reach the mark at record 6 (66 bytes); then 44 bytes remain.
        assert_eq!(lens, [66, 44]);
    }

    #[test]
    fn a_corrupt_record_ends_the_chunks_with_an_error() {
        let (mut bytes, _) = encode(&[100; 3]);
        bytes.truncate(bytes.len() - 1);
        let partition = EncodedPartition {
            bytes: &bytes,
            records: 3,
            marks: &[0],
            base: 0,
        };
        let chunks: Vec<_> = partition.chunks(150).collect();
        assert!(chunks[0].is_ok());
        assert!(chunks.last().unwrap().is_err());
        assert!(chunks.len() <= 3);
    }
}
