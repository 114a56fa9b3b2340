//! Which runs to merge before the final merge, and when.
//!
//! A merge holds one block buffer per stored run it reads, so the number of spill files merged
//! at once (the *fan-in*) is bounded by the memory a task has; runs beyond it are merged in
//! passes through disk. Memory runs of a summing combiner are merged early to free memory.

use std::ops::Range;

use crate::run::{Run, RunKind};

/// Memory one open spill-file reader needs: a raw and a compressed block.
pub const READER_COST: usize = 2 * crate::SPILL_BLOCK + 8 * 1024;

/// How many spill files a merge may read at once with `memory` bytes (at least 2).
pub fn fan_in(memory: usize) -> usize {
    (memory / READER_COST).max(2)
}

/// The range of `runs` to merge next, if they hold at least `threshold` stored runs (spill files): the `fan_in`
/// consecutive stored runs (spill files) with the fewest bytes in total, and the memory runs between them.
///
/// Consecutive, so that the merged run can take the window's place without changing the order of
/// equal keys; fewest bytes, so that a large merged run is not read and written again at every
/// pass (always merging the oldest files would make the I/O grow with the square of their number).
pub fn merge_window(runs: &[&Run], fan_in: usize, threshold: usize) -> Option<Range<usize>> {
    let disk: Vec<(usize, u64)> = runs
        .iter()
        .enumerate()
        .filter(|(_, run)| run.kind() == RunKind::Stored)
        .map(|(i, run)| (i, run.bytes()))
        .collect();
    if fan_in < 2 || disk.len() < threshold.max(fan_in) {
        return None;
    }
    let cheapest = disk
        .windows(fan_in)
        .min_by_key(|w| w.iter().map(|(_, bytes)| bytes).sum::<u64>())?;
    Some(cheapest[0].0..cheapest[fan_in - 1].0 + 1)
}

/// The range of `runs` to merge in memory next, if they hold at least `2 * width` memory runs:
/// the `width` consecutive memory runs with the fewest bytes in total (see [`merge_window`] for
/// why consecutive and why fewest).
pub fn memory_merge_window(runs: &[&Run], width: usize) -> Option<Range<usize>> {
    let memory_runs = runs
        .iter()
        .filter(|run| run.kind() == RunKind::Memory)
        .count();
    if width < 2 || memory_runs < 2 * width {
        return None;
    }
    runs.windows(width)
        .enumerate()
        .filter(|(_, window)| window.iter().all(|run| run.kind() == RunKind::Memory))
        .min_by_key(|(_, window)| window.iter().map(|run| run.bytes()).sum::<u64>())
        .map(|(start, _)| start..start + width)
}
