//! Sorted runs between a map (or reduce) stage and the reduce stage that consumes them.
//!
//! A run is the sorted output of one collector flush, cut into partitions. Runs that fit the
//! budget's share for held runs stay in memory ([`MemRun`]); the others are spill files. The
//! store keeps them in a stable order — (task, sequence within task) — so that the merge, which
//! breaks ties by source order, keeps records with equal keys in input order.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use sluice_format::record;
use sluice_sort::{BytesCursor, SortedCursor};
use sluice_spill::{MemoryPool, MemoryReservation, SegmentReader, SpillFile, SpillWriter};

use crate::ExecError;

/// A sorted run held in memory: records encoded back to back, partition after partition.
#[derive(Debug)]
pub(crate) struct MemRun {
    bytes: Vec<u8>,
    partitions: Vec<Range<usize>>,
    _reservation: QuotaReservation,
}

/// One run, in memory or on disk.
#[derive(Debug, Clone)]
pub(crate) enum Run {
    Memory(Arc<MemRun>),
    Disk(Arc<SpillFile>),
}

impl Run {
    /// Whether the run has records for `partition`.
    pub(crate) fn has_records(&self, partition: usize) -> bool {
        match self {
            Run::Memory(m) => m.partitions.get(partition).is_some_and(|r| !r.is_empty()),
            Run::Disk(f) => f.records(partition) > 0,
        }
    }

    pub(crate) fn is_disk(&self) -> bool {
        matches!(self, Run::Disk(_))
    }

    /// Bytes the run's records take (encoded; compressed for a spill file).
    pub(crate) fn bytes(&self) -> u64 {
        match self {
            Run::Memory(m) => m.bytes.len() as u64,
            Run::Disk(f) => f.bytes(),
        }
    }

    /// A cursor over `partition`'s records of this run.
    pub(crate) fn open(&self, partition: usize) -> Result<RunCursor, ExecError> {
        Ok(match self {
            Run::Memory(m) => RunCursor::Memory(BytesCursor::new(MemSlice {
                run: Arc::clone(m),
                partition,
            })),
            Run::Disk(f) => RunCursor::Disk(Box::new(f.open_segment(partition)?)),
        })
    }
}

/// One partition of a [`MemRun`], shareable between threads.
#[derive(Debug)]
pub(crate) struct MemSlice {
    run: Arc<MemRun>,
    partition: usize,
}

impl AsRef<[u8]> for MemSlice {
    fn as_ref(&self) -> &[u8] {
        match self.run.partitions.get(self.partition) {
            Some(range) => &self.run.bytes[range.clone()],
            None => &[],
        }
    }
}

/// A cursor over one partition of any run, or over a merge of such cursors.
pub(crate) enum RunCursor {
    Memory(BytesCursor<MemSlice>),
    Disk(Box<SegmentReader>),
}

impl SortedCursor for RunCursor {
    fn advance(&mut self) -> Result<bool, sluice_format::FormatError> {
        match self {
            RunCursor::Memory(c) => c.advance(),
            RunCursor::Disk(c) => c.advance(),
        }
    }
    fn key(&self) -> &[u8] {
        match self {
            RunCursor::Memory(c) => c.key(),
            RunCursor::Disk(c) => c.key(),
        }
    }
    fn value(&self) -> &[u8] {
        match self {
            RunCursor::Memory(c) => c.value(),
            RunCursor::Disk(c) => c.value(),
        }
    }
}

/// Where sorted records of a flush go: a spill file or an in-memory run being built.
pub(crate) trait RunSink {
    /// Appends a record; partitions arrive in increasing order, keys sorted within each.
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError>;
}

impl RunSink for SpillWriter {
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        Ok(SpillWriter::write(self, partition, key, value)?)
    }
}

/// Builds a [`MemRun`].
pub(crate) struct MemRunBuilder {
    bytes: Vec<u8>,
    partitions: Vec<Range<usize>>,
    reservation: QuotaReservation,
}

impl MemRunBuilder {
    /// A builder whose bytes were reserved (`capacity` bytes) by `reservation`.
    pub(crate) fn new(partitions: usize, capacity: usize, reservation: QuotaReservation) -> Self {
        MemRunBuilder {
            bytes: Vec::with_capacity(capacity),
            partitions: vec![0..0; partitions],
            reservation,
        }
    }

    pub(crate) fn finish(mut self) -> MemRun {
        self.bytes.shrink_to_fit();
        self.reservation.shrink(
            self.reservation
                .size()
                .saturating_sub(self.bytes.capacity()),
        );
        MemRun {
            bytes: self.bytes,
            partitions: self.partitions,
            _reservation: self.reservation,
        }
    }
}

impl RunSink for MemRunBuilder {
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        let range = &mut self.partitions[partition];
        if range.start == range.end {
            *range = self.bytes.len()..self.bytes.len();
        }
        record::encode(&mut self.bytes, key, value);
        range.end = self.bytes.len();
        Ok(())
    }
}

/// The range of `runs` to merge next, if they hold at least `threshold` spill files: the `fan_in`
/// consecutive spill files with the fewest bytes in total, and the memory runs between them.
///
/// Consecutive, so that the merged run can take the window's place without changing the order of
/// equal keys; fewest bytes, so that a large merged run is not read and written again at every
/// pass (always merging the oldest files would make the I/O grow with the square of their number).
pub(crate) fn merge_window(runs: &[&Run], fan_in: usize, threshold: usize) -> Option<Range<usize>> {
    let disk: Vec<(usize, u64)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, run)| match run {
            Run::Disk(file) => Some((i, file.bytes())),
            Run::Memory(_) => None,
        })
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
pub(crate) fn memory_merge_window(runs: &[&Run], width: usize) -> Option<Range<usize>> {
    let memory_runs = runs.iter().filter(|run| !run.is_disk()).count();
    if width < 2 || memory_runs < 2 * width {
        return None;
    }
    runs.windows(width)
        .enumerate()
        .filter(|(_, window)| window.iter().all(|run| !run.is_disk()))
        .min_by_key(|(_, window)| window.iter().map(|run| run.bytes()).sum::<u64>())
        .map(|(start, _)| start..start + width)
}

/// A run with its place in the stable order: (task, sequence within the task).
pub(crate) type PlacedRun = (usize, usize, Run);

/// Collects the runs of all tasks of a stage.
pub(crate) struct ShuffleStore {
    state: Mutex<StoreState>,
}

#[derive(Default)]
struct StoreState {
    runs: Vec<PlacedRun>,
    /// `finished[t]`: task `t` has handed over all its runs.
    finished: Vec<bool>,
    /// A task is merging runs it took out of the store.
    merging: bool,
}

impl ShuffleStore {
    pub(crate) fn new() -> ShuffleStore {
        ShuffleStore {
            state: Mutex::new(StoreState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StoreState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the runs of task `task`, oldest first; the task is then finished.
    pub(crate) fn add(&self, task: usize, runs: Vec<Run>) {
        let mut state = self.lock();
        state.runs.extend(
            runs.into_iter()
                .enumerate()
                .map(|(seq, run)| (task, seq, run)),
        );
        if state.finished.len() <= task {
            state.finished.resize(task + 1, false);
        }
        state.finished[task] = true;
    }

    /// Takes out runs worth merging while other tasks still run, or `None`.
    ///
    /// Only runs of the tasks `0..P` that have all finished are candidates; a window (see
    /// [`merge_window`]) is taken when they hold at least `2 * fan_in` spill files. One merge
    /// runs at a time.
    pub(crate) fn take_merge_window(&self, fan_in: usize) -> Option<Vec<PlacedRun>> {
        self.take_window(|eligible| merge_window(eligible, fan_in, 2 * fan_in))
    }

    /// Takes out memory runs worth merging (and combining) while other tasks still run, or
    /// `None`: a window of [`memory_merge_window`] among the runs of the finished tasks `0..P`.
    /// One merge runs at a time, of either kind.
    pub(crate) fn take_memory_window(&self, width: usize) -> Option<Vec<PlacedRun>> {
        self.take_window(|eligible| memory_merge_window(eligible, width))
    }

    /// Takes out the window `choose` picks among the runs of the finished tasks `0..P`.
    fn take_window(
        &self,
        choose: impl FnOnce(&[&Run]) -> Option<Range<usize>>,
    ) -> Option<Vec<PlacedRun>> {
        let mut state = self.lock();
        if state.merging {
            return None;
        }
        let prefix = state
            .finished
            .iter()
            .position(|done| !done)
            .unwrap_or(state.finished.len());
        state.runs.sort_by_key(|(task, seq, _)| (*task, *seq));
        let eligible = state.runs.partition_point(|(task, _, _)| *task < prefix);
        let eligible: Vec<&Run> = state.runs[..eligible].iter().map(|(_, _, r)| r).collect();
        let window = choose(&eligible)?;
        state.merging = true;
        Some(state.runs.drain(window).collect())
    }

    /// Puts back the result of a merge of a window taken by [`ShuffleStore::take_merge_window`]
    /// (`None` if the merge failed), in the place of the window's first run.
    pub(crate) fn end_merge(&self, place: (usize, usize), merged: Option<Run>) {
        let mut state = self.lock();
        if let Some(run) = merged {
            state.runs.push((place.0, place.1, run));
        }
        state.merging = false;
    }

    /// All runs in (task, sequence) order.
    pub(crate) fn into_runs(self) -> Vec<Run> {
        let mut state = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        state.runs.sort_by_key(|(task, seq, _)| (*task, *seq));
        state.runs.into_iter().map(|(_, _, run)| run).collect()
    }
}

/// The budget's share for runs kept in memory between stages.
#[derive(Debug)]
pub(crate) struct MemRunQuota {
    pool: MemoryPool,
    cap: usize,
    held: AtomicUsize,
}

impl MemRunQuota {
    pub(crate) fn new(pool: MemoryPool, cap: usize) -> Arc<MemRunQuota> {
        Arc::new(MemRunQuota {
            pool,
            cap,
            held: AtomicUsize::new(0),
        })
    }

    /// Reserves `bytes` for an in-memory run if both the quota and the pool allow.
    pub(crate) fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<QuotaReservation> {
        let before = self.held.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) <= self.cap {
            if let Some(memory) = self.pool.try_reserve(bytes) {
                return Some(QuotaReservation {
                    memory,
                    quota: Arc::clone(self),
                });
            }
        }
        self.held.fetch_sub(bytes, Ordering::Relaxed);
        None
    }
}

/// Bytes of the pool held by an in-memory run, also counted against the [`MemRunQuota`].
#[derive(Debug)]
pub(crate) struct QuotaReservation {
    memory: MemoryReservation,
    quota: Arc<MemRunQuota>,
}

impl QuotaReservation {
    fn size(&self) -> usize {
        self.memory.size()
    }

    fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.memory.size());
        self.memory.shrink(bytes);
        self.quota.held.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for QuotaReservation {
    fn drop(&mut self) {
        self.quota
            .held
            .fetch_sub(self.memory.size(), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_format::Codec;
    use sluice_spill::SpillDir;

    /// A spill file of one partition holding `records` records.
    fn disk_run(dir: &SpillDir, records: usize) -> Run {
        let mut w = dir.create_writer(1, Codec::None, 1024).unwrap();
        for i in 0..records {
            SpillWriter::write(&mut w, 0, format!("{i:06}").as_bytes(), b"").unwrap();
        }
        Run::Disk(Arc::new(w.finish().unwrap()))
    }

    #[test]
    fn merge_windows_come_from_finished_prefix_and_are_contiguous() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let store = ShuffleStore::new();
        // Task 1 is still running: runs of task 2 must not be merged yet.
        store.add(
            0,
            vec![disk_run(&dir, 50), disk_run(&dir, 1), disk_run(&dir, 1)],
        );
        store.add(
            2,
            vec![disk_run(&dir, 1), disk_run(&dir, 1), disk_run(&dir, 1)],
        );
        assert!(store.take_merge_window(2).is_none(), "3 files < 2 * fan_in");
        store.add(1, vec![disk_run(&dir, 1)]);
        let window = store.take_merge_window(2).unwrap();
        let places: Vec<(usize, usize)> = window.iter().map(|(t, s, _)| (*t, *s)).collect();
        // The two smallest consecutive files: after the big one of task 0.
        assert_eq!(places, vec![(0, 1), (0, 2)]);
        assert!(store.take_merge_window(2).is_none(), "one merge at a time");
        store.end_merge((0, 1), Some(disk_run(&dir, 2)));
        let sizes: Vec<u64> = store
            .into_runs()
            .iter()
            .map(|r| match r {
                Run::Disk(f) => f.total_records(),
                Run::Memory(_) => 0,
            })
            .collect();
        assert_eq!(sizes, vec![50, 2, 1, 1, 1, 1]);
    }

    /// A memory run of one partition holding `records` records.
    fn memory_run(records: usize) -> Run {
        let pool = MemoryPool::new(1 << 20);
        let quota = MemRunQuota::new(pool, 1 << 20);
        let mut builder = MemRunBuilder::new(1, 0, quota.try_reserve(0).unwrap());
        for i in 0..records {
            builder.write(0, format!("{i:06}").as_bytes(), b"").unwrap();
        }
        Run::Memory(Arc::new(builder.finish()))
    }

    #[test]
    fn memory_windows_are_consecutive_memory_runs_with_fewest_bytes() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let runs = [
            memory_run(1),
            disk_run(&dir, 1),
            memory_run(5),
            memory_run(1),
            memory_run(1),
            memory_run(9),
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        assert_eq!(memory_merge_window(&refs, 2), Some(3..5));
        assert_eq!(memory_merge_window(&refs, 3), None, "5 memory runs < 2 * 3");
        // A window never spans a spill file, even when the memory runs would be smallest.
        let runs = [
            memory_run(1),
            disk_run(&dir, 1),
            memory_run(1),
            memory_run(7),
            memory_run(7),
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        assert_eq!(memory_merge_window(&refs, 2), Some(2..4));

        // Through the store: only finished tasks' runs, one merge at a time.
        let store = ShuffleStore::new();
        store.add(0, vec![memory_run(1), memory_run(1)]);
        store.add(2, vec![memory_run(1), memory_run(1)]);
        assert!(store.take_memory_window(2).is_none(), "task 1 still runs");
        store.add(1, vec![memory_run(3)]);
        let window = store.take_memory_window(2).unwrap();
        let places: Vec<(usize, usize)> = window.iter().map(|(t, s, _)| (*t, *s)).collect();
        assert_eq!(places, vec![(0, 0), (0, 1)]);
        assert!(store.take_merge_window(2).is_none(), "one merge at a time");
    }
}
