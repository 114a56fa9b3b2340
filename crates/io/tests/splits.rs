//! Split planning: Hadoop's `SPLIT_SLOP` rule, and one split per compressed or empty file.

use std::path::PathBuf;

use sluice_io::{plan_splits, Compression, InputFile, Split};

fn file(name: &str, len: u64) -> InputFile {
    let path = PathBuf::from(name);
    InputFile {
        compression: Compression::from_path(&path),
        path,
        len,
    }
}

fn ranges(len: u64, size: u64) -> Vec<(u64, u64)> {
    plan_splits(&[file("f.txt", len)], size)
        .iter()
        .map(|s| (s.start, s.len))
        .collect()
}

#[test]
fn slop_rule_examples() {
    assert_eq!(
        ranges(100, 10),
        (0..10).map(|i| (i * 10, 10)).collect::<Vec<_>>()
    );
    // 11 bytes is exactly 1.1 splits: not more than the slop, so one split.
    assert_eq!(ranges(11, 10), vec![(0, 11)]);
    assert_eq!(ranges(12, 10), vec![(0, 10), (10, 2)]);
    assert_eq!(ranges(5, 10), vec![(0, 5)]);
    let mut expected: Vec<_> = (0..10).map(|i| (i * 10, 10)).collect();
    expected.push((100, 11));
    assert_eq!(ranges(111, 10), expected);
    assert_eq!(ranges(3, 1), vec![(0, 1), (1, 1), (2, 1)]);
}

#[test]
fn zero_split_size_acts_as_one() {
    assert_eq!(ranges(3, 0), vec![(0, 1), (1, 1), (2, 1)]);
}

#[test]
fn splits_cover_files_exactly_with_slop() {
    for len in 1..300u64 {
        for size in 1..50u64 {
            let splits = ranges(len, size);
            let mut next = 0;
            for (i, &(start, piece)) in splits.iter().enumerate() {
                assert_eq!(start, next, "len {len} size {size}");
                if i + 1 < splits.len() {
                    assert_eq!(piece, size);
                } else {
                    // Hadoop: (double) remaining / size <= 1.1 for the last piece.
                    assert!(piece > 0 && (piece as f64) / (size as f64) <= 1.1);
                }
                next = start + piece;
            }
            assert_eq!(next, len, "len {len} size {size}");
        }
    }
}

#[test]
fn compressed_and_empty_files_are_one_split_each() {
    let files = [
        file("a.gz", 1000),
        file("b.txt", 0),
        file("c.txt", 25),
        file("d.bz2", 5),
        file("e.zst", 0),
    ];
    let split = |file, start, len| Split { file, start, len };
    assert_eq!(
        plan_splits(&files, 10),
        vec![
            split(0, 0, 1000),
            split(1, 0, 0),
            split(2, 0, 10),
            split(2, 10, 10),
            split(2, 20, 5),
            split(3, 0, 5),
            split(4, 0, 0),
        ]
    );
}

/// A file of `len` bytes at `name` with HDFS blocks of `block` bytes held by `host-N`.
fn hdfs_file(name: &str, len: u64, block: Option<u64>) -> sluice_io::StoredInput {
    let location = sluice_io::Location::parse(name).expect("a valid location");
    let mut status = sluice_io::FileStatus::file(location, len);
    if let Some(block) = block {
        let blocks = (0..len.div_ceil(block))
            .map(|i| {
                sluice_io::BlockLocation::new(
                    i * block,
                    block.min(len - i * block),
                    vec![format!("host-{i}")],
                )
            })
            .collect();
        status = status.with_block_size(block).with_blocks(blocks);
    }
    sluice_io::StoredInput::new(status)
}

#[test]
fn files_with_blocks_are_cut_at_their_block_size() {
    let files = [
        hdfs_file("hdfs://nn/a", 300, Some(100)),
        hdfs_file("hdfs://nn/b", 250, None),
        hdfs_file("hdfs://nn/c.gz", 500, Some(100)),
        hdfs_file("hdfs://nn/d", 105, Some(100)),
    ];
    let splits = sluice_io::plan_block_splits(&files, 128, 1);
    let got: Vec<(usize, u64, u64)> = splits.iter().map(|s| (s.file, s.start, s.len)).collect();
    assert_eq!(
        got,
        vec![
            (0, 0, 100),
            (0, 100, 100),
            (0, 200, 100),
            // No block size: the default, with the slop rule.
            (1, 0, 128),
            (1, 128, 122),
            // Compressed: whole.
            (2, 0, 500),
            // Within the slop of one block: one split.
            (3, 0, 105),
        ]
    );
    // Hadoop's minimum split size wins over a smaller block.
    let big = sluice_io::plan_block_splits(&files[..1], 128, 150);
    assert_eq!(
        big.iter().map(|s| s.len).collect::<Vec<_>>(),
        vec![150, 150]
    );
    // Each split is placed by the block it starts in.
    let hosts: Vec<&[String]> = splits.iter().map(|s| s.hosts(&files)).collect();
    assert_eq!(hosts[1], ["host-1".to_string()]);
    assert_eq!(hosts[2], ["host-2".to_string()]);
    assert!(hosts[3].is_empty());
}
