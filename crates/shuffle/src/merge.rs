//! Merges of runs: early merges while map tasks still run, passes through disk that keep a
//! final merge within its memory, and the final merge of one partition that a reducer reads.

use std::cmp::Ordering;
use std::sync::Arc;

use sluice_api::Counter;
use sluice_api::{decode_count, encode_count, Combine, ExecError, Stage};
use sluice_sort::{CursorError, KeyOrder, Merger, SortedCursor};

use crate::catalog::RunCatalog;
use crate::policy::{fan_in, merge_window, READER_COST};
use crate::resources::Resources;
use crate::run::{MemRunBuilder, Run, RunCursor, RunKind, RunSink};

/// What a merge needs to know of the stage whose runs it merges.
#[derive(Debug, Clone, Copy)]
pub struct MergeSpec<'a> {
    /// Partitions of every run.
    pub partitions: usize,
    /// How keys are ordered.
    pub order: &'a KeyOrder,
    /// Whether values are counts summed per key ([`Combine::SumCounts`]): a merge then
    /// writes one record per distinct key, as Hadoop runs the combiner over merged spills.
    pub sum_counts: bool,
}

impl<'a> MergeSpec<'a> {
    /// The merge of `stage`'s input runs.
    pub fn of(stage: &'a Stage) -> MergeSpec<'a> {
        MergeSpec {
            partitions: stage.partitions,
            order: &stage.order,
            sum_counts: matches!(stage.combine, Combine::SumCounts),
        }
    }
}

/// Merges spill files of finished map tasks while other map tasks still run, when they have
/// piled up (see [`RunCatalog::take_merge_window`]): the work is done while the input is
/// still being read, and the reduce tasks start with fewer runs to merge. `memory` is what the
/// merge may hold. Returns whether a merge ran (then another may be due).
///
/// # Errors
/// The merge failed; the catalog keeps the window's place (its runs are dropped).
pub fn merge_early(
    catalog: &RunCatalog,
    spec: MergeSpec<'_>,
    memory: usize,
    res: &Resources,
) -> Result<bool, ExecError> {
    // The merged run's writer comes out of the same memory as the readers.
    let fan_in = fan_in(memory.saturating_sub(2 * res.write_chunk()));
    let Some(window) = catalog.take_merge_window(fan_in) else {
        return Ok(false);
    };
    let place = (window[0].0, window[0].1);
    let runs: Vec<Run> = window.into_iter().map(|(_, _, run)| run).collect();
    let merged = merge_to_spill(&runs, 0..spec.partitions, spec, res);
    drop(runs);
    match merged {
        Ok(run) => {
            catalog.end_merge(place, Some(run));
            Ok(true)
        }
        Err(e) => {
            catalog.end_merge(place, None);
            Err(e.in_task("merge of spill files during the map phase"))
        }
    }
}

/// Memory runs merged at once by [`merge_memory_early`]; a merge starts when the finished
/// tasks hold twice as many.
pub const MEMORY_MERGE_WIDTH: usize = 8;

/// Merges the memory runs of finished map tasks while other map tasks still run, summing the
/// counts of equal keys, when the stage's combiner sums counts ([`Combine::SumCounts`]).
///
/// Each task of a word count holds a run of the same ~10^5 distinct words; merging eight into
/// one frees the memory of seven, so later tasks keep their output in memory instead of
/// spilling it, and the reduce tasks (only one, by default) have far fewer records to merge
/// after the last map task, when only they can run. The merged run stays in memory if the
/// budget's share for held runs allows, else it becomes a spill file. Returns whether a merge
/// ran (then another may be due).
///
/// # Errors
/// The merge failed; the catalog keeps the window's place (its runs are dropped).
pub fn merge_memory_early(
    catalog: &RunCatalog,
    spec: MergeSpec<'_>,
    res: &Resources,
) -> Result<bool, ExecError> {
    if !spec.sum_counts {
        return Ok(false);
    }
    let Some(window) = catalog.take_memory_window(MEMORY_MERGE_WIDTH) else {
        return Ok(false);
    };
    let place = (window[0].0, window[0].1);
    let runs: Vec<Run> = window.into_iter().map(|(_, _, run)| run).collect();
    let merged = merge_summing(&runs, spec, res);
    drop(runs);
    match merged {
        Ok(run) => {
            catalog.end_merge(place, Some(run));
            Ok(true)
        }
        Err(e) => {
            catalog.end_merge(place, None);
            Err(e.in_task("merge of memory runs during the map phase"))
        }
    }
}

/// Merges `runs` (oldest first, all partitions) into one run, writing one record per distinct
/// key with the sum of its counts: into memory if the held-runs share allows (the output is no
/// larger than the input), else into a spill file.
fn merge_summing(runs: &[Run], spec: MergeSpec<'_>, res: &Resources) -> Result<Run, ExecError> {
    let bytes: u64 = runs.iter().map(|run| run.bytes()).sum();
    let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    match res.quota().try_reserve(bytes) {
        Some(reservation) => {
            let mut builder = MemRunBuilder::new(spec.partitions, bytes, reservation);
            let records = write_merged(runs, 0..spec.partitions, spec, &mut builder, res)?;
            count_combined(spec, res, records);
            res.status().counters.add(Counter::MemoryRuns, 1);
            Ok(Arc::new(builder.finish()))
        }
        None => merge_to_spill(runs, 0..spec.partitions, spec, res),
    }
}

/// Writes the merge of the `selected` partitions of `runs` to `sink`; returns the records read
/// and written. When counts are summed, byte-equal keys are summed into one record, as Hadoop
/// runs the combiner over merged spills: later merges and the reducer then read each key about
/// once per merged run instead of once per map task.
fn write_merged(
    runs: &[Run],
    selected: std::ops::Range<usize>,
    spec: MergeSpec<'_>,
    sink: &mut dyn RunSink,
    res: &Resources,
) -> Result<(u64, u64), ExecError> {
    let (mut input, mut output) = (0, 0);
    let mut key = Vec::new();
    for partition in selected {
        res.check_cancelled()?;
        let cursors = runs
            .iter()
            .filter(|run| run.has_records(partition))
            .map(|run| run.open(partition))
            .collect::<Result<Vec<_>, _>>()?;
        let mut merge = Merger::with_order(cursors, spec.order.clone());
        if !spec.sum_counts {
            while merge.advance()? {
                sink.write(partition, merge.key(), merge.value())?;
                input += 1;
            }
            output = input;
            continue;
        }
        let mut sum: Option<u64> = None;
        while merge.advance()? {
            input += 1;
            let count = decode_count(merge.value())?;
            match sum {
                Some(total) if merge.key() == key.as_slice() => {
                    sum = Some(total.wrapping_add(count));
                    continue;
                }
                Some(total) => {
                    sink.write(partition, &key, &encode_count(total))?;
                    output += 1;
                }
                None => {}
            }
            key.clear();
            key.extend_from_slice(merge.key());
            sum = Some(count);
        }
        if let Some(total) = sum {
            sink.write(partition, &key, &encode_count(total))?;
            output += 1;
        }
    }
    Ok((input, output))
}

/// Counts the records a merge gave to and took from the summing combiner.
fn count_combined(spec: MergeSpec<'_>, res: &Resources, (input, output): (u64, u64)) {
    if spec.sum_counts {
        let counters = &res.status().counters;
        counters.add(Counter::CombineInputRecords, input);
        counters.add(Counter::CombineOutputRecords, output);
    }
}

/// Merges the `selected` partitions of `runs` (oldest first) into one new spilled run of all
/// the spec's partitions, reserving a reader for each stored run and the writer's chunks
/// (memory runs are read where they are); counts are summed when the spec says so (see
/// [`write_merged`]).
fn merge_to_spill(
    runs: &[Run],
    selected: std::ops::Range<usize>,
    spec: MergeSpec<'_>,
    res: &Resources,
) -> Result<Run, ExecError> {
    let stored = runs.iter().filter(|r| r.kind() == RunKind::Stored).count();
    let _memory = res.reserve_or_force(stored * READER_COST + 2 * res.write_chunk());
    let mut writer = res.create_spill(spec.partitions)?;
    let records = write_merged(runs, selected, spec, &mut *writer, res)?;
    count_combined(spec, res, records);
    let run = writer.finish()?;
    let counters = &res.status().counters;
    counters.add(Counter::MergePasses, 1);
    counters.add(Counter::SpilledRuns, 1);
    counters.add(Counter::SpilledRecords, records.1);
    counters.add(Counter::SpilledBytes, run.bytes());
    Ok(run)
}

/// The final merge of one partition of a stage's `runs`: a sorted stream a reducer reads,
/// within `memory` bytes of readers.
///
/// If the partition has more spill files than `memory` can read at once, windows of them (see
/// [`merge_window`]) are first merged through disk, each into one spill file that takes its
/// place, until the rest fits.
///
/// # Errors
/// A merge pass or opening a run failed.
pub fn merge_partition(
    runs: &[Run],
    partition: usize,
    spec: MergeSpec<'_>,
    memory: usize,
    res: &Resources,
) -> Result<PartitionMerge, ExecError> {
    let sources = prepare_partition(runs, partition, spec, memory, memory, res)?;
    merge_range(&sources, partition, spec, KeyRange::ALL, res)
}

/// The runs of `partition` a final merge reads: those of `runs` with records for it, after
/// windows of spill files were merged through disk (each into one spill file that takes its
/// place, see [`merge_window`]) until a merge within `readers` bytes can read the rest at
/// once. A pass holds at most `memory` bytes.
///
/// # Errors
/// A merge pass failed.
pub fn prepare_partition(
    runs: &[Run],
    partition: usize,
    spec: MergeSpec<'_>,
    memory: usize,
    readers: usize,
    res: &Resources,
) -> Result<Vec<Run>, ExecError> {
    // The final merge reads up to `final_fan_in` stored runs; a pass through disk reads fewer,
    // so that the merged run's writer fits beside its readers.
    let final_fan_in = fan_in(readers);
    let pass_fan_in = fan_in(memory.saturating_sub(2 * res.write_chunk()));
    let mut sources: Vec<Run> = runs
        .iter()
        .filter(|r| r.has_records(partition))
        .cloned()
        .collect();
    loop {
        let refs: Vec<&Run> = sources.iter().collect();
        let Some(window) = merge_window(&refs, pass_fan_in, final_fan_in + 1) else {
            break;
        };
        let merged = merge_to_spill(
            &sources[window.clone()],
            partition..partition + 1,
            spec,
            res,
        )?;
        sources.splice(window, [merged]);
    }
    Ok(sources)
}

/// A range of keys in a stage's order: from `from` (included; the first key if `None`) to
/// `to` (excluded; past the last key if `None`).
#[derive(Debug, Clone, Copy)]
pub struct KeyRange<'a> {
    /// The first key of the range, if it has a lower bound.
    pub from: Option<&'a [u8]>,
    /// The first key after the range, if it has an upper bound.
    pub to: Option<&'a [u8]>,
}

impl KeyRange<'_> {
    /// Every key.
    pub const ALL: KeyRange<'static> = KeyRange {
        from: None,
        to: None,
    };
}

/// The merge of the keys of `range` of `partition` of `sources` (runs prepared by
/// [`prepare_partition`], oldest first): each run entered at the range's first key
/// ([`RunSource::open_at`](crate::RunSource::open_at)), the stream ended before its upper
/// bound. Equal keys stay in run order, as in the whole partition's merge, and two ranges
/// that meet at a key hold every record of the partition between them exactly once.
///
/// # Errors
/// Opening a run failed.
pub fn merge_range(
    sources: &[Run],
    partition: usize,
    spec: MergeSpec<'_>,
    range: KeyRange<'_>,
    res: &Resources,
) -> Result<PartitionMerge, ExecError> {
    let stored = sources
        .iter()
        .filter(|r| r.kind() == RunKind::Stored)
        .count();
    let readers = res.reserve_or_force(stored * READER_COST);
    let cursors = sources
        .iter()
        .map(|r| match range.from {
            Some(key) => r.open_at(partition, key, spec.order),
            None => r.open(partition),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(PartitionMerge {
        merge: Merger::with_order(cursors, spec.order.clone()),
        upper: range.to.map(|key| UpperBound {
            key: key.to_vec(),
            order: spec.order.clone(),
            reached: false,
        }),
        _readers: readers,
    })
}

/// The merged records of one partition (or of a range of its keys), in key order (equal keys
/// in run order), with the memory of its readers reserved for as long as it lives.
pub struct PartitionMerge {
    merge: Merger<RunCursor>,
    /// Where the stream ends, for a range with an upper bound: at the first key not before it.
    upper: Option<UpperBound>,
    _readers: sluice_spill::MemoryReservation,
}

/// The end of a range's stream.
struct UpperBound {
    /// The first key after the range.
    key: Vec<u8>,
    order: KeyOrder,
    /// Whether the merge reached it: the stream has ended.
    reached: bool,
}

impl SortedCursor for PartitionMerge {
    #[inline]
    fn advance(&mut self) -> Result<bool, CursorError> {
        let Some(upper) = &mut self.upper else {
            return self.merge.advance();
        };
        if upper.reached || !self.merge.advance()? {
            return Ok(false);
        }
        upper.reached = upper.order.compare(self.merge.key(), &upper.key) != Ordering::Less;
        Ok(!upper.reached)
    }
    #[inline]
    fn key(&self) -> &[u8] {
        self.merge.key()
    }
    #[inline]
    fn value(&self) -> &[u8] {
        self.merge.value()
    }
}
