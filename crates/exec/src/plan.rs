//! What a job run is planned to be before any task starts: its input splits and how its memory
//! budget is divided.
//!
//! # Memory
//!
//! Memory a task holds outside the pool for as long as it runs ([`Job::memory_per_task`]: a
//! streaming program's shared-memory rings) comes off the budget first, once per worker thread.
//! What is left is the pool, split once, up front:
//!
//! * half may be held by sorted runs kept in memory between stages (the shuffle's
//!   `MemRunQuota`);
//! * the other half is shared equally by the worker threads: each running task (its collector,
//!   or its merge readers and output buffer) stays within its share and flushes or merges in
//!   passes to stay there.
//!
//! Every large buffer is reserved from the one pool before it is allocated, and so is what
//! grows with the data (a long line's buffer, a spill file's partition table); what is not
//! counted is small and fixed per thread (the input line buffer's first megabyte, a spill
//! write buffer).

use std::path::{Path, PathBuf};

use sluice_api::{ExecError, InputFormat, Job, JobConfig, SplitOrder, MIN_MEMORY};
use sluice_io::{
    discover_with, plan_block_splits, plan_combined_splits, plan_input_splits,
    whole_compressed_files, CombineSizes, MapSplit, Storage, StoredInput,
};
use sluice_shuffle::SORT_BLOCK;

/// How a job's memory budget is divided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MemoryPlan {
    /// The pool: the budget less what the running tasks hold outside it.
    pub(crate) pool: usize,
    /// The pool's share for runs held in memory between stages.
    pub(crate) held_runs: usize,
    /// Bytes each running task may hold.
    pub(crate) task_share: usize,
    /// Chunk size of file writers (each holds two): a small, fixed share of a task's memory.
    pub(crate) write_chunk: usize,
    /// Storage buckets of sort-mode record buffers: at most a sixteenth of a task's share in
    /// partly filled blocks.
    pub(crate) sort_buckets: usize,
    /// Allocation unit of counting collectors' tables.
    pub(crate) table_block: usize,
}

impl MemoryPlan {
    /// The division of `budget` bytes between `threads` worker threads whose tasks each hold
    /// `per_task` bytes outside the pool.
    ///
    /// # Errors
    /// [`ExecError::Config`] when that leaves less than [`MIN_MEMORY`] for the pool.
    pub(crate) fn new(budget: usize, threads: usize, per_task: usize) -> Result<Self, ExecError> {
        let threads = threads.max(1);
        let pool = budget
            .checked_sub(per_task.saturating_mul(threads))
            .filter(|&left| left >= MIN_MEMORY)
            .ok_or_else(|| {
                ExecError::Config(format!(
                    "a memory budget of {budget} bytes is too small for {threads} running tasks \
                     that each hold {per_task} bytes outside their buffers (a streaming \
                     program's shared-memory rings): at least {MIN_MEMORY} bytes must be left \
                     for buffers; raise the budget, or lower the threads or the ring size"
                ))
            })?;
        let held_runs = pool / 2;
        let task_share = (pool - held_runs) / threads;
        Ok(MemoryPlan {
            pool,
            held_runs,
            task_share,
            write_chunk: (task_share / 16).clamp(64 * 1024, sluice_io::DIRECT_CHUNK),
            sort_buckets: (task_share / (16 * SORT_BLOCK)).clamp(1, 256),
            table_block: (task_share / 8).clamp(64 * 1024, 1 << 20),
        })
    }
}

/// Bytes of bookkeeping one partition costs every run that has it, rounded up: a memory run's
/// range of 16 bytes, or a spill file's segment (32) and index entry (36).
pub(crate) const PARTITION_BYTES: usize = 128;

impl MemoryPlan {
    /// Refuses a stage with more partitions than a task's share can keep the bookkeeping of:
    /// every run a task writes has a table entry per partition of its stage, so a job with
    /// billions of reducers would fail allocating it mid-job (or take the machine's memory).
    ///
    /// # Errors
    /// [`ExecError::Config`] naming the stage, its partitions and how many fit.
    pub(crate) fn check_partitions(&self, job: &Job) -> Result<(), ExecError> {
        for (index, stage) in job.stages.iter().enumerate() {
            self.check_stage(stage.partitions, index + 1)?;
        }
        Ok(())
    }

    fn check_stage(&self, partitions: usize, stage: usize) -> Result<(), ExecError> {
        let most = self.task_share / PARTITION_BYTES;
        if partitions > most {
            return Err(ExecError::Config(format!(
                "{partitions} reducers (partitions of stage {stage}) are more than the memory \
                 budget can keep track of: each running task's share ({} bytes) holds the \
                 bookkeeping of at most {most} partitions ({PARTITION_BYTES} bytes each); \
                 lower the reducers, or raise the memory budget or lower the threads",
                self.task_share
            )));
        }
        Ok(())
    }
}

/// Checks, before anything is read, allocated or created, that a job of `reducers`
/// partitions can run with a budget of `memory` bytes on `threads` threads: what a job's
/// start checks ([`TaskHost::new`](crate::TaskHost::new)), for a caller that would otherwise
/// spend work (reading a sample, allocating boundaries) on reducers no budget can keep.
///
/// A budget too small for the threads is not this check's to report: the job's start says so,
/// naming the budget.
///
/// # Errors
/// [`ExecError::Config`] for no reducers, or more than a task's share can track.
pub fn check_reducers(reducers: usize, memory: usize, threads: usize) -> Result<(), ExecError> {
    if reducers == 0 {
        return Err(ExecError::Config(
            "a stage needs at least 1 partition".into(),
        ));
    }
    match MemoryPlan::new(memory, threads, 0) {
        Ok(plan) => plan.check_stage(reducers, 1),
        Err(_) => Ok(()),
    }
}

/// From how many input files a job that allows it ([`Job::small_files_combined`]) packs them
/// into combined splits of up to the split size: below, a task per file costs little next to
/// reading it; from thousands of small files on, tasks that each start a collector and leave a
/// run (to be merged with every other) would cost more than the reading.
pub const COMBINE_FROM_FILES: usize = 1000;

/// A job's input, planned: the files and the splits that become its map tasks `0, 1, ...`.
#[derive(Debug, Clone)]
pub struct InputPlan {
    /// The input files; a split's ranges index them.
    pub files: Vec<StoredInput>,
    /// The splits, in map task order.
    pub splits: Vec<MapSplit>,
}

impl InputPlan {
    /// The splits the job's configuration planned, or those of its inputs as found in
    /// `storage`, cut by the configured split size; numbered in the job's [`SplitOrder`].
    ///
    /// # Errors
    /// An input is missing or cannot be listed.
    pub fn new(job: &Job, config: &JobConfig, storage: &dyn Storage) -> Result<Self, ExecError> {
        Self::plan(job, config, storage, false)
    }

    /// As [`InputPlan::new`], and each input file's blocks are located first (on HDFS: which
    /// hosts hold them), so that each split knows its hosts and a cluster can run its task
    /// near its data. A file whose blocks cannot be located has none: it runs anywhere.
    ///
    /// # Errors
    /// As [`InputPlan::new`].
    pub fn located(
        job: &Job,
        config: &JobConfig,
        storage: &dyn Storage,
    ) -> Result<Self, ExecError> {
        Self::plan(job, config, storage, true)
    }

    fn plan(
        job: &Job,
        config: &JobConfig,
        storage: &dyn Storage,
        locate: bool,
    ) -> Result<Self, ExecError> {
        let (files, mut splits) = match config.planned.as_deref() {
            Some(plan) => (plan.files.clone(), plan.splits.clone()),
            None => {
                let mut files = discover_with(storage, &config.inputs, config.nested_directories)?;
                if locate {
                    locate_blocks(storage, &mut files);
                }
                let splits = if job.small_files_combined && files.len() >= COMBINE_FROM_FILES {
                    let sizes = CombineSizes {
                        max: config.split_size.max(1),
                        ..CombineSizes::default()
                    };
                    plan_combined_splits(&files, sizes)
                } else {
                    let mut splits = if config.split_by_blocks {
                        plan_block_splits(&files, config.split_size, config.min_split_size)
                    } else {
                        plan_input_splits(&files, config.split_size)
                    };
                    if matches!(job.input, InputFormat::FixedLength(_)) {
                        splits = whole_compressed_files(&files, splits);
                    }
                    splits.into_iter().map(MapSplit::File).collect()
                };
                (files, splits)
            }
        };
        if job.split_order == SplitOrder::LargestFirst {
            // Stable: equal lengths keep their input order, as Hadoop's JobSubmitter does.
            splits.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
        Ok(InputPlan { files, splits })
    }

    /// Bytes of input in all.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|f| f.status.len).sum()
    }

    /// What a split reads, for messages: its file and bytes, or for a combined split its first
    /// and last ranges and how many files it reads.
    pub fn describe(&self, split: &MapSplit) -> String {
        let range = |part: &sluice_io::Split| match self.files.get(part.file) {
            Some(file) => format!(
                "{}, bytes {}..{}",
                file.location(),
                part.start,
                part.start.saturating_add(part.len)
            ),
            None => format!("input file {}", part.file),
        };
        match split {
            MapSplit::File(part) => range(part),
            MapSplit::Combined { parts, .. } => {
                let mut files: Vec<usize> = parts.iter().map(|p| p.file).collect();
                files.dedup();
                match (parts.first(), parts.last()) {
                    (Some(first), Some(last)) if parts.len() > 1 => format!(
                        "{} ranges of {} files, from {} to {}",
                        parts.len(),
                        files.len(),
                        range(first),
                        range(last)
                    ),
                    (Some(only), _) => range(only),
                    _ => "nothing".into(),
                }
            }
        }
    }
}

/// At most this many input files have their blocks located: past that, asking costs more
/// than placing tasks near their data saves (Hadoop's listing returns the locations with the
/// names; here it is one request per file).
pub(crate) const MAX_LOCATED_FILES: usize = 10_000;

/// Requests for block locations in flight at once.
const LOCATING_THREADS: usize = 8;

/// How long locating blocks may take in all: placing tasks near their data is worth a few
/// seconds of planning, not minutes.
const LOCATING_TIME: std::time::Duration = std::time::Duration::from_secs(10);

/// Fills in the blocks of `files` (the first [`MAX_LOCATED_FILES`]) from `storage`, a few
/// requests at a time, for at most [`LOCATING_TIME`]. A request that fails stops the others
/// (a store that cannot tell for one file, say behind a firewall, would make every other wait
/// for its timeout), unless the file is simply gone (deleted since it was listed: its reader
/// says so). The files not located keep no blocks: their tasks run anywhere.
fn locate_blocks(storage: &dyn Storage, files: &mut [StoredInput]) {
    let count = files.len().min(MAX_LOCATED_FILES);
    let chunk = count.div_ceil(LOCATING_THREADS).max(1);
    let deadline = std::time::Instant::now() + LOCATING_TIME;
    let stop = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for part in files[..count].chunks_mut(chunk) {
            let stop = &stop;
            scope.spawn(move || {
                for file in part {
                    if stop.load(std::sync::atomic::Ordering::Relaxed)
                        || std::time::Instant::now() > deadline
                    {
                        return;
                    }
                    match storage.block_locations(&file.status.location) {
                        Ok(blocks) => file.status.blocks = blocks,
                        Err(e) if e.is_not_found() => {}
                        Err(_) => stop.store(true, std::sync::atomic::Ordering::Relaxed),
                    }
                }
            });
        }
    });
}

/// Where the job's spill directory goes: always a local disk, the first configured one, else
/// beside a local output, else the system's temporary directory.
pub fn spill_parent(config: &JobConfig) -> PathBuf {
    match (config.spill_parents.first(), config.output.as_local_path()) {
        (Some(dir), _) => dir.clone(),
        (None, Some(output)) => parent_dir(output),
        (None, None) => std::env::temp_dir(),
    }
}

/// Where the job's spill directories go, one per local disk: the configured ones, else
/// [`spill_parent`]'s one. Never empty.
pub fn spill_parents(config: &JobConfig) -> Vec<PathBuf> {
    match config.spill_parents.as_slice() {
        [] => vec![spill_parent(config)],
        dirs => dirs.to_vec(),
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use sluice_api::PlannedInput;
    use sluice_io::{FileStatus, Location};

    const MIB: usize = 1 << 20;

    fn local_storage() -> Arc<dyn Storage> {
        Arc::new(sluice_io::LocalStorage::new())
    }

    #[test]
    fn the_budget_is_half_held_runs_and_half_task_shares() {
        let plan = MemoryPlan::new(1024 * MIB, 2, 0).unwrap();
        assert_eq!(plan.pool, 1024 * MIB);
        assert_eq!(plan.held_runs, 512 * MIB);
        assert_eq!(plan.task_share, 256 * MIB);
        // Shares never add up to more than the pool.
        let odd = MemoryPlan::new(100 * MIB + 3, 3, 0).unwrap();
        assert!(odd.held_runs + 3 * odd.task_share <= odd.pool);
    }

    #[test]
    fn memory_held_by_tasks_comes_off_the_budget_per_thread() {
        let plan = MemoryPlan::new(64 * MIB, 2, 10 * MIB).unwrap();
        assert_eq!(plan.pool, 44 * MIB);
        assert_eq!(plan.task_share, 11 * MIB);
        let err = MemoryPlan::new(64 * MIB, 2, 31 * MIB + MIB / 2).unwrap_err();
        assert!(err.to_string().contains("too small"), "{err}");
        // A per-task size that overflows when multiplied is refused, not wrapped.
        assert!(MemoryPlan::new(64 * MIB, 4, usize::MAX / 2).is_err());
    }

    #[test]
    fn writer_chunks_buckets_and_table_blocks_stay_in_bounds() {
        for budget in [MIN_MEMORY, 16 * MIB, 1024 * MIB, 64 * 1024 * MIB] {
            for threads in [1, 2, 64] {
                let Ok(plan) = MemoryPlan::new(budget, threads, 0) else {
                    continue;
                };
                assert!((64 * 1024..=sluice_io::DIRECT_CHUNK).contains(&plan.write_chunk));
                assert!((1..=256).contains(&plan.sort_buckets));
                assert!((64 * 1024..=MIB).contains(&plan.table_block));
            }
        }
    }

    #[test]
    fn reducers_are_checked_against_the_budget_up_front() {
        // 1 GiB on 2 threads: a task's share of 256 MiB tracks 2 Mi partitions.
        let most = 256 * MIB / PARTITION_BYTES;
        assert!(check_reducers(most, 1024 * MIB, 2).is_ok());
        let err = check_reducers(most + 1, 1024 * MIB, 2)
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("{} reducers", most + 1)), "{err}");
        assert!(err.contains(&format!("at most {most} partitions")), "{err}");
        assert!(check_reducers(3_000_000_000, 1024 * MIB, 2).is_err());
        assert!(check_reducers(0, 1024 * MIB, 2).is_err());
        // A budget too small for the threads is the job's start to report.
        assert!(check_reducers(1, 1024, 2).is_ok());
    }

    #[test]
    fn stages_with_more_partitions_than_a_share_can_track_are_refused() {
        struct Nothing;
        impl sluice_api::Reducer for Nothing {
            fn reduce(
                &mut self,
                _key: &[u8],
                _values: &mut sluice_api::Values<'_>,
                _out: &mut dyn sluice_api::Emit,
            ) -> Result<(), ExecError> {
                Ok(())
            }
        }
        let plan = MemoryPlan::new(1024 * MIB, 2, 0).unwrap();
        let most = 256 * MIB / PARTITION_BYTES;
        let job = |partitions| {
            Job::new("j", |_| NoMap)
                .with_stage(sluice_api::Stage::new(1, |_| Nothing))
                .with_stage(sluice_api::Stage::new(partitions, |_| Nothing))
        };
        assert!(plan.check_partitions(&job(most)).is_ok());
        let err = plan
            .check_partitions(&job(most + 1))
            .unwrap_err()
            .to_string();
        assert!(err.contains(&format!("{} reducers", most + 1)), "{err}");
        assert!(err.contains("stage 2"), "{err}");
        assert!(plan.check_partitions(&job(3_000_000_000)).is_err());
    }

    fn stored(name: &str, len: u64) -> StoredInput {
        StoredInput::new(FileStatus::file(Location::from_path(name), len))
    }

    fn split(file: usize, start: u64, len: u64) -> MapSplit {
        MapSplit::File(sluice_io::Split { file, start, len })
    }

    #[test]
    fn largest_first_orders_splits_by_length_keeping_ties_in_input_order() {
        let plan = PlannedInput {
            files: vec![stored("a", 10), stored("b", 30)],
            splits: vec![split(0, 0, 10), split(1, 0, 20), split(1, 20, 10)],
        };
        let config = JobConfig::new(Vec::<PathBuf>::new(), PathBuf::from("out"))
            .with_planned_input(plan.clone());
        let storage = local_storage();
        let mut job = Job::new("j", |_| NoMap);
        let input = InputPlan::new(&job, &config, &*storage).unwrap();
        assert_eq!(input.splits, plan.splits, "input order by default");
        assert_eq!(input.bytes(), 40);
        job.split_order = SplitOrder::LargestFirst;
        let input = InputPlan::new(&job, &config, &*storage).unwrap();
        assert_eq!(
            input.splits,
            vec![split(1, 0, 20), split(0, 0, 10), split(1, 20, 10)]
        );
    }

    #[test]
    fn thousands_of_small_files_are_combined_only_for_jobs_that_allow_it() {
        // A visible name: the directory itself is the input (`.tmp…` would be hidden).
        let dir = tempfile::Builder::new().prefix("in-").tempdir().unwrap();
        for i in 0..COMBINE_FROM_FILES {
            std::fs::write(dir.path().join(format!("f{i:04}")), "0123456789\n").unwrap();
        }
        let config = JobConfig::new(vec![dir.path().to_path_buf()], PathBuf::from("out"))
            .with_split_size(4000);
        let storage = local_storage();
        let mut job = Job::new("j", |_| NoMap);
        let input = InputPlan::new(&job, &config, &*storage).unwrap();
        assert_eq!(input.splits.len(), COMBINE_FROM_FILES, "a task per file");

        job.small_files_combined = true;
        let input = InputPlan::new(&job, &config, &*storage).unwrap();
        // 11 bytes a file: a split closes at the file that reaches 4000 bytes (364 files).
        let sizes: Vec<usize> = input.splits.iter().map(|s| s.parts().len()).collect();
        assert_eq!(sizes, vec![364, 364, 272], "{sizes:?}");
        let mut read: Vec<usize> = input
            .splits
            .iter()
            .flat_map(|s| s.parts().iter().map(|p| p.file))
            .collect();
        read.sort_unstable();
        assert_eq!(read, (0..COMBINE_FROM_FILES).collect::<Vec<_>>());
        assert!(input
            .describe(&input.splits[0])
            .contains("364 ranges of 364 files"));

        // Fewer files: a task each, even when allowed.
        std::fs::remove_file(dir.path().join("f0000")).unwrap();
        let input = InputPlan::new(&job, &config, &*storage).unwrap();
        assert_eq!(input.splits.len(), COMBINE_FROM_FILES - 1);
    }

    #[test]
    fn spills_go_beside_a_local_output_unless_told_otherwise() {
        let config = JobConfig::new(Vec::<PathBuf>::new(), PathBuf::from("/data/out"));
        assert_eq!(spill_parent(&config), PathBuf::from("/data"));
        let config = JobConfig::new(Vec::<PathBuf>::new(), PathBuf::from("out"));
        assert_eq!(spill_parent(&config), PathBuf::from("."));
        let config = config.with_spill_parent(PathBuf::from("/scratch"));
        assert_eq!(spill_parent(&config), PathBuf::from("/scratch"));
        let remote = JobConfig::new(
            Vec::<PathBuf>::new(),
            Location::parse("hdfs://nn:8020/out").unwrap(),
        );
        assert_eq!(spill_parent(&remote), std::env::temp_dir());
    }

    struct NoMap;
    impl sluice_api::Mapper for NoMap {
        fn map(
            &mut self,
            _offset: u64,
            _line: &[u8],
            _out: &mut dyn sluice_api::Emit,
        ) -> Result<(), ExecError> {
            Ok(())
        }
    }

    /// A store whose files' blocks are held by `host-NAME`, or whose every request for
    /// blocks fails; it counts those requests. Nothing else is asked of it here.
    #[derive(Debug)]
    struct Blocks {
        fails: bool,
        asked: std::sync::atomic::AtomicUsize,
    }

    impl Storage for Blocks {
        fn status(&self, _: &Location) -> Result<Option<FileStatus>, sluice_io::IoError> {
            Ok(None)
        }
        fn list(&self, _: &Location) -> Result<Vec<FileStatus>, sluice_io::IoError> {
            Ok(Vec::new())
        }
        fn open_range(
            &self,
            _: &Location,
            _: u64,
            _: u64,
        ) -> Result<Box<dyn std::io::Read + Send>, sluice_io::IoError> {
            Ok(Box::new(std::io::empty()))
        }
        fn create_with(
            &self,
            location: &Location,
            _: usize,
        ) -> Result<sluice_io::StorageWriter, sluice_io::IoError> {
            Err(sluice_io::IoError::Read {
                path: PathBuf::from(location.to_string()),
                source: std::io::Error::other("read-only"),
            })
        }
        fn delete(&self, _: &Location) -> Result<bool, sluice_io::IoError> {
            Ok(false)
        }
        fn block_locations(
            &self,
            location: &Location,
        ) -> Result<Vec<sluice_io::BlockLocation>, sluice_io::IoError> {
            self.asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if location.to_string().contains("gone") {
                // Deleted since it was listed.
                return Err(sluice_io::IoError::Read {
                    path: PathBuf::from(location.to_string()),
                    source: std::io::Error::from(std::io::ErrorKind::NotFound),
                });
            }
            if self.fails {
                // As a store behind a firewall: each request waits, then fails.
                std::thread::sleep(std::time::Duration::from_millis(20));
                return Err(sluice_io::IoError::Read {
                    path: PathBuf::from(location.to_string()),
                    source: std::io::Error::other("timed out"),
                });
            }
            Ok(vec![sluice_io::BlockLocation::new(
                0,
                100,
                vec![format!("host-{location}")],
            )])
        }
    }

    #[test]
    fn located_files_know_their_hosts_and_a_failing_store_is_asked_no_more() {
        let files = |n: usize| -> Vec<StoredInput> {
            (0..n)
                .map(|i| {
                    StoredInput::new(FileStatus::file(Location::from_path(format!("f{i}")), 100))
                })
                .collect()
        };
        let store = Blocks {
            fails: false,
            asked: Default::default(),
        };
        let mut some = files(20);
        // A file gone since the listing stops nothing: the others are located.
        some[3] = StoredInput::new(FileStatus::file(Location::from_path("gone"), 100));
        locate_blocks(&store, &mut some);
        assert!(some[3].status.blocks.is_empty());
        some.remove(3);
        for file in &some {
            assert_eq!(file.status.blocks.len(), 1, "{file:?}");
            assert_eq!(
                file.status.blocks[0].hosts,
                vec![format!("host-{}", file.status.location)]
            );
        }
        let failing = Blocks {
            fails: true,
            asked: Default::default(),
        };
        let mut many = files(1000);
        locate_blocks(&failing, &mut many);
        // Each of the few threads asks at most once more after the first failure.
        let asked = failing.asked.load(std::sync::atomic::Ordering::Relaxed);
        assert!(asked <= 2 * LOCATING_THREADS, "asked {asked} times");
        assert!(many.iter().all(|f| f.status.blocks.is_empty()));
    }
}
