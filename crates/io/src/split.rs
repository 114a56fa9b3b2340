//! Cutting input files into map tasks.
//!
//! This is Hadoop's `FileInputFormat.getSplits` for one split size: full-size pieces while more than
//! 1.1 split sizes remain, then the rest as one piece, so no task gets a sliver of under 10%.
//! Plain files and bzip2 files are cut so (a bzip2 file's split reads the blocks that start in
//! it, as with Hadoop's splittable `BZip2Codec`); other compressed files cannot be entered in
//! the middle, so each is one split.

use crate::{Compression, InputFile, StoredInput};

/// A byte range of one input file that one map task reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// Index into the slice of files the split was planned from.
    pub file: usize,
    /// First byte of the range.
    pub start: u64,
    /// Length of the range in bytes (for a compressed file other than bzip2: the file length;
    /// the whole file is read).
    pub len: u64,
}

/// Cuts files into splits of at most `split_size` bytes, in file order.
///
/// Empty files, and compressed files other than bzip2 ones, give exactly one split. A plain or
/// bzip2 file of length `n > 0` gives
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

/// Hadoop's split rule for files on a store with blocks: each file is cut at its own block
/// size (HDFS's `dfs.blocksize` when it was written), at least `min_size`
/// (`mapreduce.input.fileinputformat.split.minsize`); a file whose store reports no block size
/// (a local file, an S3 object) is cut at `default_size` (Hadoop's local file system reports
/// 32 MiB; S3A its `fs.s3a.block.size`). Otherwise as [`plan_input_splits`].
pub fn plan_block_splits(files: &[StoredInput], default_size: u64, min_size: u64) -> Vec<Split> {
    let mut splits = Vec::new();
    for (index, file) in files.iter().enumerate() {
        let size = file.status.block_size.unwrap_or(default_size).max(min_size);
        let mut one = plan(std::iter::once((file.status.len, file.compression)), size);
        for split in &mut one {
            split.file = index;
        }
        splits.append(&mut one);
    }
    splits
}

impl Split {
    /// The hosts holding the block the split starts in (where Hadoop places its map task),
    /// from the file's [`FileStatus::blocks`](crate::FileStatus::blocks); empty where the
    /// store told none.
    pub fn hosts<'a>(&self, files: &'a [StoredInput]) -> &'a [String] {
        files
            .get(self.file)
            .and_then(|file| {
                file.status
                    .blocks
                    .iter()
                    .find(|b| b.offset <= self.start && self.start < b.offset.saturating_add(b.len))
            })
            .map_or(&[], |block| block.hosts.as_slice())
    }
}

/// What one map task reads: a split of one file, or several ranges read one after another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapSplit {
    /// One range of one file (Hadoop's `FileSplit`).
    File(Split),
    /// Ranges of one or more files, read in order as one task's input (Hadoop's
    /// `CombineFileSplit`, made by [`plan_combined_splits`](crate::plan_combined_splits)).
    /// The task is told of its first range only, as Hadoop's streaming programs are.
    Combined {
        /// The ranges, in the order they are read; never empty.
        parts: Vec<Split>,
        /// Where the task is best placed; empty where nowhere in particular.
        hosts: Vec<String>,
    },
}

impl MapSplit {
    /// The ranges the task reads, in order.
    pub fn parts(&self) -> &[Split] {
        match self {
            MapSplit::File(split) => std::slice::from_ref(split),
            MapSplit::Combined { parts, .. } => parts,
        }
    }

    /// Bytes in all its ranges (for compressed files: their lengths).
    pub fn len(&self) -> u64 {
        self.parts().iter().map(|p| p.len).sum()
    }

    /// Whether it has no bytes to read.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The hosts near which to run the task: for one file's split those of the block it starts
    /// in ([`Split::hosts`]), for a combined split those it was planned for.
    pub fn hosts<'a>(&'a self, files: &'a [StoredInput]) -> &'a [String] {
        match self {
            MapSplit::File(split) => split.hosts(files),
            MapSplit::Combined { hosts, .. } => hosts,
        }
    }
}

impl From<Split> for MapSplit {
    fn from(split: Split) -> MapSplit {
        MapSplit::File(split)
    }
}

/// The splits of files given as (length, compression), in order.
fn plan(files: impl Iterator<Item = (u64, Compression)>, split_size: u64) -> Vec<Split> {
    let size = split_size.max(1);
    let mut splits = Vec::new();
    for (index, (len, compression)) in files.enumerate() {
        if !compression.splittable() || len == 0 {
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

/// The splits of a job whose records cannot be found from the middle of a compressed file
/// (fixed-length rows, counted from the start of the uncompressed stream): each compressed
/// file's splits give way to one split of the whole file, as Hadoop's
/// `FixedLengthInputFormat` declares compressed input unsplittable. Plain files' splits are
/// kept.
pub fn whole_compressed_files(files: &[StoredInput], splits: Vec<Split>) -> Vec<Split> {
    let mut kept: Vec<Split> = Vec::with_capacity(splits.len());
    for split in splits {
        let Some(file) = files.get(split.file) else {
            kept.push(split);
            continue;
        };
        if file.compression == Compression::None {
            kept.push(split);
        } else if kept.last().is_none_or(|last| last.file != split.file) {
            kept.push(Split {
                file: split.file,
                start: 0,
                len: file.status.len,
            });
        }
    }
    kept
}

/// `remaining / size > 1.1`, computed exactly in integers.
fn more_than_slop(remaining: u64, size: u64) -> bool {
    u128::from(remaining) * 10 > u128::from(size) * 11
}
