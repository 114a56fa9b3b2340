//! A job as the engine runs it: a mapper, a chain of reduce stages, and how input is read and
//! output written; and what a finished job reports.

use std::sync::Arc;

use serde::Serialize;
use sluice_io::OutputCodec;
use sluice_sort::KeyOrder;

use crate::counters::{CounterValues, UserCounters};
use crate::map_output::{MapOutputTypes, Writable};
use crate::model::{
    Combine, MapInput, Mapper, MapperFactory, Partitioner, Reducer, ReducerFactory, TaskContext,
};
use crate::output::{OutputFormat, PartNames};
use crate::partition::HashPartitioner;

/// A reduce stage: its input is grouped by key and reduced; its output feeds the next stage, or
/// the job's output files if it is the last.
///
/// Made with [`Stage::new`] and the `with_*` methods:
///
/// ```
/// # use sluice_api::{Combine, Emit, ExecError, Reducer, Stage, Values};
/// struct Sum;
/// impl Reducer for Sum {
///     fn reduce(&mut self, key: &[u8], values: &mut Values<'_>, out: &mut dyn Emit)
///         -> Result<(), ExecError> {
///         let mut total = 0;
///         while let Some(v) = values.next_value()? {
///             total += sluice_api::decode_count(v)?;
///         }
///         out.emit(key, total.to_string().as_bytes())
///     }
/// }
/// let stage = Stage::new(4, |_| Sum).with_combine(Combine::SumCounts);
/// assert_eq!(stage.partitions, 4);
/// ```
#[derive(Clone)]
#[non_exhaustive]
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
    /// Whether the reducer's output for a key depends on that key's values alone, with no
    /// state kept from one key to the next (default: `false`). Set with
    /// [`Stage::with_independent_keys`]; it lets a driver cut a large partition of the last
    /// stage into key ranges reduced at once by separate reducers.
    pub independent_keys: bool,
}

/// A complete job: a mapper and zero or more reduce stages. With no stage the job is map-only
/// and every map task writes its own part file.
///
/// Made with [`Job::new`] and the `with_*` methods; the local driver runs one with
/// `sluice_exec::run_job`.
#[derive(Clone)]
#[non_exhaustive]
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
    /// Whether an input of thousands of small files may be read by fewer map tasks, each
    /// reading several files one after another (Hadoop's `CombineFileInputFormat`, with the
    /// split size as the maximum). Only for mappers that do not care which file a record is
    /// from: the mapper's [`MapInput`](crate::MapInput) names the first file only. Default
    /// `false`.
    pub small_files_combined: bool,
    /// The classes Hadoop would give the map output's keys and values, which the `Map output
    /// bytes` counter counts the sizes of (default: `Text` and `Text`).
    pub map_output_types: MapOutputTypes,
}

impl Stage {
    /// A stage of `partitions` partitions whose reducers `make` makes, one per task: keys
    /// hash-partitioned as Hadoop's `HashPartitioner` does, sorted as unsigned bytes, no
    /// combiner.
    pub fn new<R, F>(partitions: usize, make: F) -> Stage
    where
        R: Reducer + 'static,
        F: Fn(&TaskContext) -> R + Send + Sync + 'static,
    {
        Stage::from_factory(
            partitions,
            Arc::new(move |ctx: &TaskContext| Box::new(make(ctx)) as Box<dyn Reducer>),
        )
    }

    /// A stage whose reducers a ready-made factory makes (see [`Stage::new`]).
    pub fn from_factory(partitions: usize, reducer: ReducerFactory) -> Stage {
        Stage {
            reducer,
            combine: Combine::None,
            partitioner: Arc::new(HashPartitioner),
            partitions,
            order: KeyOrder::Bytes,
            independent_keys: false,
        }
    }

    /// Sets how the stage's input is combined on the producing side.
    #[must_use]
    pub fn with_combine(mut self, combine: Combine) -> Stage {
        self.combine = combine;
        self
    }

    /// Sets how keys are assigned to partitions.
    #[must_use]
    pub fn with_partitioner(mut self, partitioner: Arc<dyn Partitioner>) -> Stage {
        self.partitioner = partitioner;
        self
    }

    /// Sets how the stage's keys are sorted.
    #[must_use]
    pub fn with_order(mut self, order: KeyOrder) -> Stage {
        self.order = order;
        self
    }

    /// Declares that the stage's reducer writes, for each key, output that depends on that
    /// key's values alone, and keeps no state from one key to the next (no count of keys, no
    /// buffer across them, nothing written at the end): then ranges of keys reduced by
    /// separate reducer instances, their outputs joined in key order, give the bytes one
    /// reducer would.
    ///
    /// The driver may then split a large partition of the job's last stage into key ranges
    /// merged and reduced on several threads at once, when threads are free (see
    /// [`JobConfig::reduce_split_bytes`](crate::JobConfig::reduce_split_bytes)). Output is unchanged; only the reducer's instances
    /// differ (one per range, each made by the stage's factory with the task's context). A
    /// stage feeding another is never split. Do not declare it for a reducer that counts,
    /// samples or buffers across keys, or writes in [`Reducer::run`](crate::Reducer::run)
    /// after its input ends: a Hadoop Streaming reducer program may, so streaming jobs never
    /// declare it.
    #[must_use]
    pub fn with_independent_keys(mut self) -> Stage {
        self.independent_keys = true;
        self
    }
}

impl Job {
    /// A map-only job named `name` whose mappers `make` makes, one per map task, with the
    /// default conventions: lines in, `key\tvalue` lines out, `part-r-NNNNN`/`part-m-NNNNN`
    /// files, map tasks in input order, an empty part file for a task without output. Add
    /// reduce stages with [`Job::with_stage`].
    pub fn new<M, F>(name: impl Into<String>, make: F) -> Job
    where
        M: Mapper + 'static,
        F: Fn(&MapInput) -> M + Send + Sync + 'static,
    {
        Job::from_factory(
            name,
            Arc::new(move |input: &MapInput| Box::new(make(input)) as Box<dyn Mapper>),
        )
    }

    /// A job whose mappers a ready-made factory makes (see [`Job::new`]).
    pub fn from_factory(name: impl Into<String>, mapper: MapperFactory) -> Job {
        Job {
            name: name.into(),
            mapper,
            stages: Vec::new(),
            output: OutputFormat::KeyValue,
            part_names: PartNames::Typed,
            split_order: SplitOrder::Input,
            lazy_output: false,
            output_codec: OutputCodec::None,
            input: InputFormat::Lines,
            memory_per_task: 0,
            small_files_combined: false,
            map_output_types: MapOutputTypes::default(),
        }
    }

    /// Lets thousands of small input files be read by fewer map tasks
    /// ([`Job::small_files_combined`]).
    #[must_use]
    pub fn with_small_files_combined(mut self) -> Job {
        self.small_files_combined = true;
        self
    }

    /// Adds a reduce stage after the existing ones.
    #[must_use]
    pub fn with_stage(mut self, stage: Stage) -> Job {
        self.stages.push(stage);
        self
    }

    /// Sets how the final pairs are written.
    #[must_use]
    pub fn with_output(mut self, output: OutputFormat) -> Job {
        self.output = output;
        self
    }

    /// Sets the classes Hadoop would give the map output's keys and values
    /// ([`Job::map_output_types`]).
    #[must_use]
    pub fn with_map_output_types(mut self, key: Writable, value: Writable) -> Job {
        self.map_output_types = MapOutputTypes::new(key, value);
        self
    }

    /// Sets how the input files are cut into records.
    #[must_use]
    pub fn with_input(mut self, input: InputFormat) -> Job {
        self.input = input;
        self
    }
}

/// In which order the splits become map tasks `0, 1, ...` — which decides the part file
/// numbers of a map-only job and the order in which equal keys of different tasks meet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SplitOrder {
    /// Input order: files in the order of the inputs (each input's files sorted by path),
    /// each file's splits in file order.
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
    /// The records of Hadoop SequenceFiles, split at sync points as Hadoop's
    /// `SequenceFileRecordReader` splits them. Each record reaches the mapper as one byte
    /// string, its serialised key and value joined by `sluice_io::seqfile::join_pair`; the
    /// file's key and value classes are in [`MapInput::record_classes`](crate::MapInput).
    SequenceFile,
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
    #[serde(serialize_with = "as_text")]
    pub output: sluice_io::Location,
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

/// Serialises a value as its text (a location as the user would write it).
fn as_text<T: std::fmt::Display, S: serde::Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(value)
}
