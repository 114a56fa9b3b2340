//! Cutting input files into map tasks.
//!
//! This is Hadoop's `FileInputFormat.getSplits` for one split size: full-size pieces while more than
//! 1.1 split sizes remain, then the rest as one piece, so no task gets a sliver of under 10%.
//! Compressed files cannot be entered in the middle, so each is one split.

use crate::{Compression, InputFile, StoredInput};

/// A byte range of one input file that one map task reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Index into the slice of files the split was planned from.
    pub file: usize,
    /// First byte of the range.
    pub start: u64,
    /// Length of the range in bytes (for compressed files: the file length; the whole file is read).
    pub len: u64,
}

/// Cuts files into splits of at most `split_size` bytes, in file order.
///
/// Compressed files and empty files give exactly one split. A plain file of length `n > 0` gives
/// `ceil(n / split_size)` splits, except that a last piece smaller than 10% of `split_size` is
/// merged into the previous split (Hadoop's `SPLIT_SLOP` of 1.1).
///
/// A `split_size` of 0 is treated as 1 (callers should validate it; tiny sizes give one split
/// per byte).
pub fn plan_splits(files: &[InputFile], split_size: u64) -> Vec<Split> {
    plan(files.iter().map(|f| (f.len, f.compression)), split_size)
}

/// [`plan_splits`] for the files [`discover`](crate::discover) found on any
/// [`Storage`](crate::Storage): the same cuts, by length and compression.
pub fn plan_input_splits(files: &[StoredInput], split_size: u64) -> Vec<Split> {
    plan(
        files.iter().map(|f| (f.status.len, f.compression)),
        split_size,
    )
}

/// The splits of files given as (length, compression), in order.
fn plan(files: impl Iterator<Item = (u64, Compression)>, split_size: u64) -> Vec<Split> {
    let size = split_size.max(1);
    let mut splits = Vec::new();
    for (index, (len, compression)) in files.enumerate() {
        if compression != Compression::None || len == 0 {
            splits.push(Split {
                file: index,
                start: 0,
                len,
            });
            continue;
        }
        let mut start = 0;
        let mut remaining = len;
        while more_than_slop(remaining, size) {
            splits.push(Split {
                file: index,
                start,
                len: size,
            });
            start += size;
            remaining -= size;
        }
        splits.push(Split {
            file: index,
            start,
            len: remaining,
        });
    }
    splits
}

/// `remaining / size > 1.1`, computed exactly in integers.
fn more_than_slop(remaining: u64, size: u64) -> bool {
    u128::from(remaining) * 10 > u128::from(size) * 11
}
