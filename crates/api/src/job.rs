//! A job as the engine runs it: a mapper, a chain of reduce stages, and how input is read and
//! output written; and what a finished job reports.

use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use sluice_io::OutputCodec;
use sluice_sort::KeyOrder;

use crate::counters::{CounterValues, UserCounters};
use crate::model::{Combine, MapperFactory, Partitioner, ReducerFactory};
use crate::output::{OutputFormat, PartNames};

/// A reduce stage: its input is grouped by key and reduced; its output feeds the next stage, or
/// the job's output files if it is the last.
#[derive(Clone)]
pub struct Stage {
    /// Makes the reducer of each partition.
    pub reducer: ReducerFactory,
    /// How this stage's input is combined on the producing side.
    pub combine: Combine,
    /// Assigns keys to partitions.
    pub partitioner: Arc<dyn Partitioner>,
    /// Number of partitions (reduce tasks, part files of the last stage).
    pub partitions: usize,
    /// How this stage's keys are sorted (default: unsigned bytes).
    pub order: KeyOrder,
}

/// A complete job: a mapper and zero or more reduce stages. With no stage the job is map-only
/// and every map task writes its own part file.
#[derive(Clone)]
pub struct Job {
    /// Name for messages and reports.
    pub name: String,
    /// Makes the mapper of each map task.
    pub mapper: MapperFactory,
    /// Reduce stages, in order.
    pub stages: Vec<Stage>,
    /// How the final pairs are written.
    pub output: OutputFormat,
    /// How the part files are named.
    pub part_names: PartNames,
    /// In which order map tasks are numbered.
    pub split_order: SplitOrder,
    /// Create a part file only for a task that writes a record (Hadoop's `-lazyOutput`).
    pub lazy_output: bool,
    /// How part files are compressed (Hadoop's output codec; the file name gets its
    /// extension). Default: not at all.
    pub output_codec: OutputCodec,
    /// How the input files are cut into records.
    pub input: InputFormat,
    /// Memory each running task holds outside the pool for as long as it runs (a streaming
    /// program's shared-memory rings), in bytes. It is taken off the budget once per worker
    /// thread before the pool is made, so that buffers and this memory together stay within
    /// the budget. Default 0.
    pub memory_per_task: usize,
}

impl Job {
    /// A job with the default output conventions: `part-r-NNNNN`/`part-m-NNNNN` files, map
    /// tasks in input order, an empty part file for a task without output.
    pub fn new(
        name: impl Into<String>,
        mapper: MapperFactory,
        stages: Vec<Stage>,
        output: OutputFormat,
    ) -> Job {
        Job {
            name: name.into(),
            mapper,
            stages,
            output,
            part_names: PartNames::Typed,
            split_order: SplitOrder::Input,
            lazy_output: false,
            output_codec: OutputCodec::None,
            input: InputFormat::Lines,
            memory_per_task: 0,
        }
    }
}

/// In which order the splits become map tasks `0, 1, ...` — which decides the part file
/// numbers of a map-only job and the order in which equal keys of different tasks meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SplitOrder {
    /// Input order: files sorted by path, each file's splits in file order.
    #[default]
    Input,
    /// Largest split first, ties in input order: Hadoop's `JobSubmitter` order.
    LargestFirst,
}

/// How the input files are cut into the records a mapper sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InputFormat {
    /// Lines, as Hadoop's `TextInputFormat` reads them: the record is the line without its
    /// terminator, its offset the line's first byte.
    #[default]
    Lines,
    /// Records of a fixed number of bytes, as Hadoop's `TeraInputFormat` reads its 100-byte
    /// rows: a file ending inside a record is an error.
    FixedLength(usize),
}

/// Wall time of one phase.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseTiming {
    /// `map`, `reduce` (or `reduce-2`, ... for later stages), `commit`.
    pub phase: String,
    /// Seconds spent.
    pub seconds: f64,
}

/// What a finished job reports.
#[derive(Debug, Clone, Serialize)]
pub struct JobReport {
    /// The job's name.
    pub job: String,
    /// The committed output directory.
    pub output: PathBuf,
    /// Input files read.
    pub input_files: usize,
    /// Map tasks run.
    pub splits: usize,
    /// Partitions of the last stage, each written by a reduce task to a part file; 0 for a
    /// map-only job (whose map tasks write the part files).
    pub reducers: usize,
    /// Worker threads.
    pub threads: usize,
    /// The memory budget in bytes.
    pub memory_budget: usize,
    /// The most bytes reserved from the budget at once, counting what the tasks hold outside
    /// their buffers ([`Job::memory_per_task`] for every thread) as reserved throughout.
    pub peak_memory_reserved: usize,
    /// Bytes reserved beyond the budget for records larger than it (normally 0).
    pub forced_memory: usize,
    /// Hadoop-style counters.
    pub counters: CounterValues,
    /// Counters the job's own code reported, by group and name.
    pub user_counters: UserCounters,
    /// Time per phase.
    pub phases: Vec<PhaseTiming>,
    /// Total wall time in seconds.
    pub wall_seconds: f64,
}
