//! Settings of one job run.

use std::path::PathBuf;
use std::sync::Arc;

use sluice_format::Codec;
use sluice_io::{Location, MapSplit, NestedDirectories, StoredInput, Stores};

/// How a job runs: resources, parallelism, spill format. Built with [`JobConfig::new`] and the
/// `with_*` methods; every field has a sensible default.
#[derive(Debug, Clone)]
pub struct JobConfig {
    /// Inputs (files, directories, globs), on any store the job can read.
    pub inputs: Vec<Location>,
    /// Whether the files of directories inside input directories are read (the default), or
    /// those directories left out.
    pub nested_directories: NestedDirectories,
    /// Output directory; must not exist.
    pub output: Location,
    /// Memory budget in bytes for all buffers of all tasks together.
    pub memory: usize,
    /// Worker threads.
    pub threads: usize,
    /// Bytes per input split: of every file when [`JobConfig::split_by_blocks`] is off, else of
    /// files whose store reports no block size (local files: Hadoop's local file system reports
    /// 32 MiB).
    pub split_size: u64,
    /// Whether files on a store with blocks (HDFS) are cut at their own block size, as Hadoop
    /// does (default), rather than at `split_size`.
    pub split_by_blocks: bool,
    /// The smallest split when cutting by blocks (Hadoop's
    /// `mapreduce.input.fileinputformat.split.minsize`; default 1).
    pub min_split_size: u64,
    /// Compression of spilled runs.
    pub spill_codec: Codec,
    /// Where the scratch directories for spills are created, always on local disks: one per
    /// disk, the spill files spread over them in turn. Empty (the default): the output's
    /// parent directory if the output is local, else the system's temporary directory.
    pub spill_parents: Vec<PathBuf>,
    /// How many times a map task may run before its failure fails the job (default 1: no
    /// retry, since a built-in job fails the same way every time on one machine; the command
    /// line asks for more on a cluster, where a failure may be the worker's own).
    pub map_attempts: usize,
    /// The same for reduce tasks.
    pub reduce_attempts: usize,
    /// Splits planned before the job runs; when set, the engine neither lists the inputs nor
    /// cuts them by `split_size`.
    pub planned: Option<Arc<PlannedInput>>,
    /// The stores the job reads and writes: local files, and the remote stores (HDFS, S3)
    /// when the caller connected them ([`Stores::with_remote`]); default: local files only.
    pub stores: Stores,
    /// A partition of the last stage whose runs hold at least this many bytes (encoded,
    /// uncompressed) is split into key ranges merged and reduced on several threads at once,
    /// when its stage allows it (`Stage::with_independent_keys`) and threads are free; `None`
    /// never splits. Default [`DEFAULT_REDUCE_SPLIT_BYTES`].
    pub reduce_split_bytes: Option<u64>,
}

/// Default [`JobConfig::reduce_split_bytes`]: 64 MiB, a partition whose reduce takes a good
/// fraction of a second on one thread; below it, the ranges' set-up (sampling keys, entering
/// every run at each range) is not worth it.
pub const DEFAULT_REDUCE_SPLIT_BYTES: u64 = 64 << 20;

/// Input files and their splits, planned before the job runs: for an input format that must
/// read the files to cut them (Hadoop's `NLineInputFormat`, see
/// [`sluice_io::plan_line_splits`]), and whose caller needs the splits beforehand (a streaming
/// job tells its programs how many map tasks there are).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedInput {
    /// The input files; the ranges of the splits index them ([`sluice_io::Split::file`]).
    pub files: Vec<StoredInput>,
    /// The splits, one map task each, in input order (the job's `SplitOrder` still applies).
    pub splits: Vec<MapSplit>,
}

/// Default budget: 1 GiB.
pub const DEFAULT_MEMORY: usize = 1 << 30;
/// Default split size: 32 MiB, the block size Hadoop's local file system reports.
pub const DEFAULT_SPLIT_SIZE: u64 = 32 << 20;
/// Smallest budget accepted: below this the fixed-size buffers alone would not fit.
pub const MIN_MEMORY: usize = 2 << 20;

impl JobConfig {
    /// A configuration with defaults: 1 GiB, one thread per core, 32 MiB splits, lz4 spills.
    ///
    /// Inputs and output are [`Location`]s; local paths convert into them.
    pub fn new<I, L>(inputs: I, output: impl Into<Location>) -> JobConfig
    where
        I: IntoIterator<Item = L>,
        L: Into<Location>,
    {
        JobConfig {
            inputs: inputs.into_iter().map(Into::into).collect(),
            nested_directories: NestedDirectories::Read,
            output: output.into(),
            memory: DEFAULT_MEMORY,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            split_size: DEFAULT_SPLIT_SIZE,
            split_by_blocks: true,
            min_split_size: 1,
            spill_codec: Codec::Lz4,
            spill_parents: Vec::new(),
            map_attempts: 1,
            reduce_attempts: 1,
            planned: None,
            stores: Stores::local(),
            reduce_split_bytes: Some(DEFAULT_REDUCE_SPLIT_BYTES),
        }
    }

    /// Sets the stores the job's locations are served by.
    pub fn with_stores(mut self, stores: Stores) -> Self {
        self.stores = stores;
        self
    }

    /// Sets whether directories inside input directories are read or left out.
    pub fn with_nested_directories(mut self, nested: NestedDirectories) -> Self {
        self.nested_directories = nested;
        self
    }

    /// Runs the job on splits planned beforehand instead of listing and cutting the inputs.
    pub fn with_planned_input(mut self, plan: PlannedInput) -> Self {
        self.planned = Some(Arc::new(plan));
        self
    }

    /// Sets the memory budget in bytes.
    pub fn with_memory(mut self, bytes: usize) -> Self {
        self.memory = bytes;
        self
    }

    /// Sets the number of worker threads.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the split size in bytes.
    pub fn with_split_size(mut self, bytes: u64) -> Self {
        self.split_size = bytes;
        self
    }

    /// Cuts every file at `bytes`, whatever its store's block size (a split size the user
    /// asked for).
    pub fn with_fixed_split_size(mut self, bytes: u64) -> Self {
        self.split_size = bytes;
        self.split_by_blocks = false;
        self
    }

    /// Sets the smallest split when cutting by blocks.
    pub fn with_min_split_size(mut self, bytes: u64) -> Self {
        self.min_split_size = bytes;
        self
    }

    /// Sets the spill codec.
    pub fn with_spill_codec(mut self, codec: Codec) -> Self {
        self.spill_codec = codec;
        self
    }

    /// Sets where the scratch directory is created.
    pub fn with_spill_parent(mut self, dir: PathBuf) -> Self {
        self.spill_parents = vec![dir];
        self
    }

    /// Sets where the scratch directories are created: one per local disk (none: the
    /// default place).
    pub fn with_spill_parents(mut self, dirs: Vec<PathBuf>) -> Self {
        self.spill_parents = dirs;
        self
    }

    /// Sets the size from which a partition of the last stage is split into key ranges
    /// reduced at once (`None`: never; see [`JobConfig::reduce_split_bytes`]).
    pub fn with_reduce_split_bytes(mut self, bytes: Option<u64>) -> Self {
        self.reduce_split_bytes = bytes;
        self
    }

    /// Sets how many times a failed map or reduce task is run in all before the job fails.
    pub fn with_attempts(mut self, map: usize, reduce: usize) -> Self {
        self.map_attempts = map;
        self.reduce_attempts = reduce;
        self
    }

    /// Checks the settings: a budget of at least [`MIN_MEMORY`], at least one thread, and
    /// positive split size and attempt counts.
    ///
    /// # Errors
    /// [`crate::ExecError::Config`] naming the first bad setting.
    pub fn validate(&self) -> Result<(), crate::ExecError> {
        let bad = |m: String| Err(crate::ExecError::Config(m));
        if self.memory < MIN_MEMORY {
            return bad(format!(
                "memory budget {} bytes is below the minimum of {} bytes",
                self.memory, MIN_MEMORY
            ));
        }
        if self.threads == 0 {
            return bad("threads must be at least 1".into());
        }
        if self.map_attempts == 0 || self.reduce_attempts == 0 {
            return bad("task attempts must be at least 1".into());
        }
        if self.split_size == 0 {
            return bad("split size must be at least 1 byte".into());
        }
        if self.inputs.is_empty() {
            return bad("no input given".into());
        }
        if let Some(plan) = &self.planned {
            let mut parts = plan.splits.iter().flat_map(MapSplit::parts);
            if let Some(part) = parts.find(|p| p.file >= plan.files.len()) {
                return bad(format!(
                    "a planned split names input file {} of {}",
                    part.file,
                    plan.files.len()
                ));
            }
        }
        Ok(())
    }
}
