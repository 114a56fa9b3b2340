use crate::InputFile;

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
pub fn plan_splits(files: &[InputFile], split_size: u64) -> Vec<Split> {
    todo!("{} {split_size}", files.len())
}
