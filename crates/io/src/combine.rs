//! Packing many small files into few map tasks: Hadoop's `CombineFileInputFormat`.
//!
//! Each file is cut into chunks along its blocks (a file whose store reports no blocks is one
//! block; a compressed file other than bzip2 is one chunk), and a block longer than the maximum split size into
//! pieces of at most that size (a rest between one and two maximums is halved instead, so that
//! no piece is a sliver). The chunks are then packed into splits in two rounds, as Hadoop does:
//!
//! 1. **per node**: the chunks held by each node, in input order, are packed into splits of at
//!    least the maximum size (a split closes at the chunk that reaches it), one split per node
//!    in turn, so that the work spreads over the nodes. What is left on a node is one more
//!    split if it reaches the per-node minimum and the node has no split yet; else it waits
//!    for the second round;
//! 2. **per rack**: every chunk left (and the chunks of empty files, which no node holds) is
//!    packed the same way in input order, the last split taking what remains.
//!
//! A maximum of 0 means no maximum: all of a node's chunks make one split, which on one machine
//! is one map task for the whole input.
//!
//! Sluice knows no rack topology, so every node is on one rack, as on a Hadoop cluster without a
//! topology script; splits of the second round name no hosts, as Hadoop's do then. Hadoop
//! walks the nodes in the order of a Java `HashMap`; sluice walks them in the order they first
//! hold a chunk, which is the same when one node holds everything (one machine, or a cluster
//! whose data nodes share a host name) and otherwise only changes which splits are made on
//! which node.

use crate::split::{MapSplit, Split};
use crate::StoredInput;

/// The sizes that shape combined splits (`mapreduce.input.fileinputformat.split.maxsize`,
/// `...split.minsize.per.node`, `...split.minsize.per.rack`; each 0 when not set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CombineSizes {
    /// Bytes from which a split is closed; 0: no maximum.
    pub max: u64,
    /// Bytes a node's leftover chunks need to make a split of their own.
    pub min_per_node: u64,
    /// Bytes a rack's leftover chunks need to make a split of their own.
    pub min_per_rack: u64,
}

impl CombineSizes {
    /// Checks the sizes as Hadoop's `CombineFileInputFormat.getSplits` does.
    ///
    /// # Errors
    /// Hadoop's message, for a per-node or per-rack minimum above the maximum, or a per-node
    /// minimum above the per-rack one.
    pub fn check(&self) -> Result<(), String> {
        let CombineSizes {
            max,
            min_per_node: node,
            min_per_rack: rack,
        } = *self;
        if node != 0 && max != 0 && node > max {
            return Err(format!(
                "Minimum split size pernode {node} cannot be larger than maximum split size {max}"
            ));
        }
        if rack != 0 && max != 0 && rack > max {
            return Err(format!(
                "Minimum split size per rack {rack} cannot be larger than maximum split size {max}"
            ));
        }
        if rack != 0 && node > rack {
            return Err(format!(
                "Minimum split size per node {node} cannot be larger than minimum split size per \
                 rack {rack}"
            ));
        }
        Ok(())
    }
}

/// A chunk of a file (the nodes holding it list it in `Planner::node_chunks`).
struct Chunk {
    range: Split,
}

/// The node of a file whose store reports no blocks: one machine holds it all (Hadoop's local
/// and object-store file systems report `localhost`). It shapes splits like any node, but is
/// never named as a split's host.
const UNPLACED: &str = "";

/// Packs `files` into combined splits, in Hadoop's two rounds (see the module's
/// documentation). Every byte of every file is in exactly one split; every empty file is a
/// zero-length chunk of one. No files, no splits.
pub fn plan_combined_splits(files: &[StoredInput], sizes: CombineSizes) -> Vec<MapSplit> {
    let mut planner = Planner::default();
    for (index, file) in files.iter().enumerate() {
        planner.add_file(index, file, sizes.max);
    }
    planner.plan(sizes)
}

#[derive(Default)]
struct Planner {
    chunks: Vec<Chunk>,
    /// Node names in the order they first hold a chunk.
    nodes: Vec<String>,
    /// For each node, its chunks in input order.
    node_chunks: Vec<Vec<usize>>,
}

impl Planner {
    fn node(&mut self, name: &str) -> usize {
        match self.nodes.iter().position(|n| n == name) {
            Some(index) => index,
            None => {
                self.nodes.push(name.to_string());
                self.node_chunks.push(Vec::new());
                self.nodes.len() - 1
            }
        }
    }

    fn add_file(&mut self, index: usize, file: &StoredInput, max: u64) {
        let status = &file.status;
        // (offset, length, hosts) of each block; an empty file has none (it is on no node),
        // a file of a store without blocks one on the unplaced node.
        let unplaced = [UNPLACED.to_string()];
        let blocks: Vec<(u64, u64, &[String])> = if status.len == 0 {
            vec![(0, 0, &[])]
        } else if status.blocks.is_empty() {
            vec![(0, status.len, &unplaced)]
        } else {
            status
                .blocks
                .iter()
                .map(|b| (b.offset, b.len, b.hosts.as_slice()))
                .collect()
        };
        if !file.compression.splittable() {
            // Read from its start only: one chunk, on the first block's nodes. (A bzip2 file
            // is cut as a plain one: its chunks are read from the blocks that start in them.)
            let hosts = blocks.first().map_or(&[][..], |b| b.2);
            self.add_chunk(index, 0, status.len, hosts);
            return;
        }
        for (offset, len, hosts) in blocks {
            let (mut start, mut left) = (offset, len);
            loop {
                let piece = if max == 0 {
                    left
                } else if left > max && left / 2 < max {
                    // Between one and two maximums: two halves rather than a sliver.
                    left / 2
                } else {
                    left.min(max)
                };
                self.add_chunk(index, start, piece, hosts);
                start += piece;
                left -= piece;
                if left == 0 {
                    break;
                }
            }
        }
    }

    fn add_chunk(&mut self, file: usize, start: u64, len: u64, hosts: &[String]) {
        let id = self.chunks.len();
        let mut nodes = Vec::new();
        for host in hosts {
            let node = self.node(host);
            if !nodes.contains(&node) {
                nodes.push(node);
                self.node_chunks[node].push(id);
            }
        }
        self.chunks.push(Chunk {
            range: Split { file, start, len },
        });
    }

    fn split(&self, chunks: &[usize], node: Option<usize>) -> MapSplit {
        let hosts = node
            .map(|n| self.nodes[n].clone())
            .filter(|name| name != UNPLACED)
            .into_iter()
            .collect();
        MapSplit::Combined {
            parts: chunks.iter().map(|&c| self.chunks[c].range).collect(),
            hosts,
        }
    }

    fn plan(&self, sizes: CombineSizes) -> Vec<MapSplit> {
        let max = sizes.max;
        let reached = |size: u64| max != 0 && size >= max;
        let mut splits = Vec::new();
        let mut taken = vec![false; self.chunks.len()];
        let mut left: u64 = self.chunks.iter().map(|c| c.range.len).sum();

        // Round 1: node by node, one split per node per pass.
        let mut cursor = vec![0usize; self.nodes.len()];
        let mut made_on = vec![false; self.nodes.len()];
        let mut done = vec![false; self.nodes.len()];
        let mut current = Vec::new();
        while !done.iter().all(|&d| d) && left != 0 {
            for node in 0..self.nodes.len() {
                if done[node] {
                    continue;
                }
                let list = &self.node_chunks[node];
                let mut size = 0;
                while cursor[node] < list.len() {
                    let chunk = list[cursor[node]];
                    cursor[node] += 1;
                    if taken[chunk] {
                        continue;
                    }
                    taken[chunk] = true;
                    current.push(chunk);
                    size += self.chunks[chunk].range.len;
                    if reached(size) {
                        splits.push(self.split(&current, Some(node)));
                        left -= size;
                        made_on[node] = true;
                        current.clear();
                        break;
                    }
                }
                if !current.is_empty() {
                    // The node's last chunks, short of the maximum.
                    if sizes.min_per_node != 0 && size >= sizes.min_per_node && !made_on[node] {
                        splits.push(self.split(&current, Some(node)));
                        left -= size;
                        made_on[node] = true;
                    } else {
                        for &chunk in &current {
                            taken[chunk] = false;
                        }
                    }
                    current.clear();
                    done[node] = true;
                } else if cursor[node] == list.len() {
                    // Everything the node holds is in splits.
                    done[node] = true;
                }
            }
        }

        // Round 2: what is left, as one rack, in input order; the short rest waits for the end.
        let mut overflow = Vec::new();
        let mut start = 0;
        while start < self.chunks.len() {
            let mut size = 0;
            let mut closed = false;
            for (chunk, taken) in taken.iter_mut().enumerate().skip(start) {
                if *taken {
                    continue;
                }
                *taken = true;
                current.push(chunk);
                size += self.chunks[chunk].range.len;
                if reached(size) {
                    splits.push(self.split(&current, None));
                    closed = true;
                    start = chunk + 1;
                    break;
                }
            }
            if !closed {
                if sizes.min_per_rack != 0 && size >= sizes.min_per_rack {
                    splits.push(self.split(&current, None));
                } else {
                    overflow.append(&mut current);
                }
                start = self.chunks.len();
            }
            current.clear();
        }
        let mut size = 0;
        for chunk in overflow {
            current.push(chunk);
            size += self.chunks[chunk].range.len;
            if reached(size) {
                splits.push(self.split(&current, None));
                current.clear();
                size = 0;
            }
        }
        if !current.is_empty() {
            splits.push(self.split(&current, None));
        }
        splits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockLocation, FileStatus, Location};

    fn local(name: &str, len: u64) -> StoredInput {
        StoredInput::new(FileStatus::file(Location::from_path(name), len))
    }

    fn on_blocks(name: &str, blocks: &[(u64, u64, &[&str])]) -> StoredInput {
        let len = blocks.iter().map(|b| b.1).sum();
        let mut status = FileStatus::file(Location::from_path(name), len);
        status.blocks = blocks
            .iter()
            .map(|&(offset, len, hosts)| {
                BlockLocation::new(offset, len, hosts.iter().map(|h| h.to_string()).collect())
            })
            .collect();
        StoredInput::new(status)
    }

    fn sizes(max: u64, node: u64, rack: u64) -> CombineSizes {
        CombineSizes {
            max,
            min_per_node: node,
            min_per_rack: rack,
        }
    }

    /// Each split as its (file, start, len) parts.
    fn parts(splits: &[MapSplit]) -> Vec<Vec<(usize, u64, u64)>> {
        splits
            .iter()
            .map(|s| s.parts().iter().map(|p| (p.file, p.start, p.len)).collect())
            .collect()
    }

    #[test]
    fn without_a_maximum_one_machine_gets_one_split() {
        let files = [local("a", 10), local("b", 0), local("c", 5)];
        let splits = plan_combined_splits(&files, CombineSizes::default());
        // The empty file waits for the second round, with the rest: input order throughout.
        assert_eq!(parts(&splits), vec![vec![(0, 0, 10), (1, 0, 0), (2, 0, 5)]]);
        assert!(plan_combined_splits(&[], CombineSizes::default()).is_empty());
    }

    #[test]
    fn a_split_closes_at_the_chunk_that_reaches_the_maximum() {
        let files = [local("a", 4), local("b", 4), local("c", 3), local("d", 1)];
        let splits = plan_combined_splits(&files, sizes(7, 0, 0));
        assert_eq!(
            parts(&splits),
            vec![vec![(0, 0, 4), (1, 0, 4)], vec![(2, 0, 3), (3, 0, 1)]]
        );
        assert_eq!(splits[0].hosts(&files), &[] as &[String]);
    }

    #[test]
    fn long_blocks_are_cut_at_the_maximum_and_a_short_rest_is_halved() {
        // 25 = 10 + (15 = 7 + 8): once the rest is between one and two maximums it is halved.
        let files = [local("a", 25), local("b", 15)];
        let splits = plan_combined_splits(&files, sizes(10, 0, 0));
        assert_eq!(
            parts(&splits),
            vec![
                vec![(0, 0, 10)],
                vec![(0, 10, 7), (0, 17, 8)],
                vec![(1, 0, 7), (1, 7, 8)],
            ]
        );
        // Exactly twice the maximum is two maximums.
        let splits = plan_combined_splits(&[local("a", 20)], sizes(10, 0, 0));
        assert_eq!(parts(&splits), vec![vec![(0, 0, 10)], vec![(0, 10, 10)]]);
    }

    #[test]
    fn a_compressed_file_other_than_bzip2_is_one_chunk() {
        let files = [local("a.gz", 25), local("b", 3)];
        let splits = plan_combined_splits(&files, sizes(10, 0, 0));
        assert_eq!(parts(&splits), vec![vec![(0, 0, 25)], vec![(1, 0, 3)]]);
        // bzip2 is splittable, as in Hadoop.
        let files = [local("a.bz2", 25)];
        let splits = plan_combined_splits(&files, sizes(10, 0, 0));
        assert_eq!(
            parts(&splits),
            vec![vec![(0, 0, 10)], vec![(0, 10, 7), (0, 17, 8)]]
        );
    }

    #[test]
    fn a_node_leftover_of_the_per_node_minimum_is_a_split_of_its_own() {
        let files = [local("a", 4), local("b", 4), local("c", 3)];
        // Without the minimum the leftover (3) goes to the rack round; with a minimum of 3 it
        // would be a split on the node, but the node has one already.
        let splits = plan_combined_splits(&files, sizes(8, 3, 0));
        assert_eq!(
            parts(&splits),
            vec![vec![(0, 0, 4), (1, 0, 4)], vec![(2, 0, 3)]]
        );
        let files = [local("a", 3), local("b", 2)];
        let splits = plan_combined_splits(&files, sizes(8, 5, 0));
        assert_eq!(parts(&splits), vec![vec![(0, 0, 3), (1, 0, 2)]]);
    }

    #[test]
    fn nodes_take_turns_and_their_splits_name_them() {
        let a: &[&str] = &["h1"];
        let b: &[&str] = &["h2"];
        let both: &[&str] = &["h1", "h2"];
        let files = [
            on_blocks("f", &[(0, 5, a), (5, 5, a), (10, 5, b)]),
            on_blocks("g", &[(0, 5, both), (5, 5, b)]),
        ];
        let splits = plan_combined_splits(&files, sizes(10, 0, 0));
        assert_eq!(
            parts(&splits),
            vec![
                vec![(0, 0, 5), (0, 5, 5)],
                vec![(0, 10, 5), (1, 0, 5)],
                vec![(1, 5, 5)],
            ]
        );
        assert_eq!(splits[0].hosts(&files), ["h1".to_string()]);
        assert_eq!(splits[1].hosts(&files), ["h2".to_string()]);
        // The last chunk (5 < 10) went to the rack round: no host.
        assert!(splits[2].hosts(&files).is_empty());
    }

    #[test]
    fn every_byte_is_in_exactly_one_split() {
        let lens = [0u64, 1, 7, 13, 29, 64, 3, 0, 100, 5];
        let files: Vec<_> = lens
            .iter()
            .enumerate()
            .map(|(i, &len)| local(&format!("f{i}"), len))
            .collect();
        for max in [0u64, 1, 5, 10, 30, 1000] {
            for (node, rack) in [(0, 0), (1, 0), (0, 2), (max / 2, max)] {
                let splits = plan_combined_splits(&files, sizes(max, node, rack));
                let mut covered: Vec<Vec<(u64, u64)>> = vec![Vec::new(); files.len()];
                for split in &splits {
                    assert!(!split.parts().is_empty());
                    for p in split.parts() {
                        covered[p.file].push((p.start, p.len));
                    }
                }
                for (file, mut ranges) in covered.into_iter().enumerate() {
                    ranges.sort_unstable();
                    let mut next = 0;
                    for (start, len) in &ranges {
                        assert_eq!(*start, next, "file {file} max {max}");
                        next += len;
                    }
                    assert_eq!(next, lens[file], "file {file} max {max}");
                    assert!(!ranges.is_empty(), "file {file} max {max}");
                }
            }
        }
    }

    #[test]
    fn sizes_are_checked_as_hadoop_checks_them() {
        assert!(sizes(0, 0, 0).check().is_ok());
        assert!(sizes(10, 5, 10).check().is_ok());
        assert!(sizes(10, 11, 0)
            .check()
            .unwrap_err()
            .contains("pernode 11 cannot be larger than maximum split size 10"));
        assert!(sizes(10, 0, 11)
            .check()
            .unwrap_err()
            .contains("per rack 11"));
        assert!(sizes(0, 6, 5).check().unwrap_err().contains("per node 6"));
    }
}
