//! The catalog of a stage's runs: every task's runs in a stable order, and the windows a merge
//! may take out while other tasks still run.
//!
//! The order — (task, sequence within the task) — is what keeps records of equal keys in input
//! order: the merge breaks ties by source order.

use std::ops::Range;
use std::sync::Mutex;

use crate::policy::{memory_merge_window, merge_window};
use crate::run::Run;

/// A run with its place in the stable order: (task, sequence within the task).
pub type PlacedRun = (usize, usize, Run);

/// Collects the runs of all tasks of a stage.
#[derive(Default)]
pub struct RunCatalog {
    state: Mutex<CatalogState>,
}

#[derive(Default)]
struct CatalogState {
    runs: Vec<PlacedRun>,
    /// `finished[t]`: task `t` has handed over all its runs.
    finished: Vec<bool>,
    /// A task is merging runs it took out of the store.
    merging: bool,
}

impl RunCatalog {
    /// An empty catalog.
    pub fn new() -> RunCatalog {
        RunCatalog::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CatalogState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds the runs of task `task`, oldest first; the task is then finished.
    pub fn add(&self, task: usize, runs: Vec<Run>) {
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
    pub fn take_merge_window(&self, fan_in: usize) -> Option<Vec<PlacedRun>> {
        self.take_window(|eligible| merge_window(eligible, fan_in, 2 * fan_in))
    }

    /// Takes out memory runs worth merging (and combining) while other tasks still run, or
    /// `None`: a window of [`memory_merge_window`] among the runs of the finished tasks `0..P`.
    /// One merge runs at a time, of either kind.
    pub fn take_memory_window(&self, width: usize) -> Option<Vec<PlacedRun>> {
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

    /// Puts back the result of a merge of a window taken by [`RunCatalog::take_merge_window`]
    /// (`None` if the merge failed), in the place of the window's first run.
    pub fn end_merge(&self, place: (usize, usize), merged: Option<Run>) {
        let mut state = self.lock();
        if let Some(run) = merged {
            state.runs.push((place.0, place.1, run));
        }
        state.merging = false;
    }

    /// All runs in (task, sequence) order.
    pub fn into_runs(self) -> Vec<Run> {
        let mut state = self.state.into_inner().unwrap_or_else(|e| e.into_inner());
        sorted(std::mem::take(&mut state.runs))
    }

    /// Takes every run out, in (task, sequence) order, leaving the catalog empty: for a
    /// catalog shared by reference, once its tasks have all finished (a merge still running
    /// holds runs the catalog does not have).
    pub fn take_runs(&self) -> Vec<Run> {
        sorted(std::mem::take(&mut self.lock().runs))
    }
}

fn sorted(mut runs: Vec<PlacedRun>) -> Vec<Run> {
    runs.sort_by_key(|(task, seq, _)| (*task, *seq));
    runs.into_iter().map(|(_, _, run)| run).collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::policy::memory_merge_window;
    use crate::quota::MemRunQuota;
    use crate::run::{MemRunBuilder, RunSink};
    use sluice_format::Codec;
    use sluice_spill::{MemoryPool, SpillDir, SpillWriter};

    /// A spill file of one partition holding `records` records.
    fn disk_run(dir: &SpillDir, records: usize) -> Run {
        let mut w = dir.create_writer(1, Codec::None, 1024).unwrap();
        for i in 0..records {
            SpillWriter::write(&mut w, 0, format!("{i:06}").as_bytes(), b"").unwrap();
        }
        Arc::new(w.finish().unwrap())
    }

    #[test]
    fn merge_windows_come_from_finished_prefix_and_are_contiguous() {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let store = RunCatalog::new();
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
        let sizes: Vec<u64> = store.into_runs().iter().map(records).collect();
        assert_eq!(sizes, vec![50, 2, 1, 1, 1, 1]);
    }

    /// Records of partition 0 of `run`.
    fn records(run: &Run) -> u64 {
        let mut cursor = run.open(0).unwrap();
        let mut n = 0;
        while sluice_sort::SortedCursor::advance(&mut cursor).unwrap() {
            n += 1;
        }
        n
    }

    /// A memory run of one partition holding `records` records.
    fn memory_run(records: usize) -> Run {
        let pool = MemoryPool::new(1 << 20);
        let quota = MemRunQuota::new(pool, 1 << 20);
        let mut builder = MemRunBuilder::new(1, 0, quota.try_reserve(0).unwrap());
        for i in 0..records {
            builder.write(0, format!("{i:06}").as_bytes(), b"").unwrap();
        }
        Arc::new(builder.finish())
    }

    /// A combiner's output of more than 4 GiB cannot be a record of a run: the write is an
    /// error naming the lengths, not a panic, and the run keeps what it had.
    #[test]
    fn a_record_over_4_gib_in_a_memory_run_is_an_error() {
        let pool = MemoryPool::new(1 << 20);
        let quota = MemRunQuota::new(pool, 1 << 20);
        let mut builder = MemRunBuilder::new(1, 0, quota.try_reserve(0).unwrap());
        builder.write(0, b"a", b"1").unwrap();
        // Zeroed pages of an allocation this large are mapped, never touched.
        let huge = vec![0u8; usize::try_from(u64::from(u32::MAX) + 1).unwrap()];
        let err = builder.write(0, b"b", &huge).unwrap_err();
        assert!(err.to_string().contains("value 4294967296 bytes"), "{err}");
        let run: Run = Arc::new(builder.finish());
        assert_eq!(records(&run), 1);
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
        let store = RunCatalog::new();
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
