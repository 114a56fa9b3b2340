//! TeraSort: the sort benchmark's sort, on the engine's map-side sort, spill and merge path.
//!
//! The job is Hadoop's TeraSort in shape: a sampling step reads a few records from splits
//! spread over the input and picks reducer boundaries; map tasks read 100-byte records
//! (`TeraInputFormat`: splits on record boundaries) and a [`TotalOrderPartitioner`] sends each
//! to its reducer; reducers merge and write the records unchanged (`TeraOutputFormat`), so the
//! part files `part-r-NNNNN` concatenate into one sorted sequence.
//!
//! One departure, for skewed input: the sort key is the whole record, not only its 10-byte
//! key. Records are therefore ordered by key as TeraValidate requires, and equal keys by the
//! rest of the row; boundaries are whole records too, so a key that fills half the input is
//! still divided among reducers instead of overloading one. The output is also the same
//! whatever the number of threads, splits or reducers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sluice_format::Codec;
use sluice_hadoop::tera::{TeraChecksum, ROW_LEN};
use sluice_io::{
    discover, plan_input_splits, whole_compressed_files, CachePolicy, FixedRecordReader,
    LocalStorage, Location, Storage,
};

use super::PassThrough;
use sluice_api::{
    Emit, ExecError, InputFormat, Job, MapInput, Mapper, OutputFormat, Stage, TotalOrderPartitioner,
};

/// Records sampled for the reducer boundaries unless told otherwise (Hadoop's
/// `mapreduce.terasort.partitions.sample`).
pub const DEFAULT_SAMPLE_SIZE: usize = 100_000;

/// How terasort spills unless told otherwise: uncompressed. Random keys barely compress (lz4
/// saved 46% of TeraGen rows' bytes, their filler) and on the measured machine the CPU it cost
/// was more than the I/O it saved (10 GB: 39.5 s with lz4, 33.7 s without).
pub const SPILL_CODEC: Codec = Codec::None;

/// At most this many splits, evenly spread over the input, are read for the sample. Hadoop reads
/// 10; more, smaller pieces follow the input's distribution better when it drifts from file to
/// file, at the cost of a few more seeks.
const SAMPLED_SPLITS: usize = 100;

/// What TeraSort's sampling step found: the reducer boundaries, and how much it read for them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeraSample {
    /// The reducer boundaries (whole rows, sorted): one fewer than the reducers, or none for an
    /// empty input.
    pub boundaries: Vec<Vec<u8>>,
    /// Records read for the sample.
    pub records: usize,
    /// Splits the sample was read from.
    pub splits: usize,
}

/// A TeraSort job ready to run.
pub struct TeraSort {
    /// The job to hand to [`sluice_exec::run_job`].
    pub job: Job,
    partitioner: Arc<TotalOrderPartitioner>,
    /// Each map task's checksum of the rows it read, by task (a retried task replaces its own);
    /// `None` if the map tasks do not add them up ([`RowChecksums::Skipped`]).
    checksums: Option<Arc<Mutex<BTreeMap<usize, TeraChecksum>>>>,
}

impl TeraSort {
    /// The checksum of every row the map tasks read (TeraGen's and TeraValidate's sum of row
    /// CRCs): after a successful run it equals the checksum TeraValidate prints for the output.
    /// `None` for a job built with [`RowChecksums::Skipped`].
    pub fn input_checksum(&self) -> Option<TeraChecksum> {
        let checksums = self.checksums.as_ref()?;
        let checksums = checksums.lock().unwrap_or_else(|p| p.into_inner());
        let mut total = TeraChecksum::new();
        for checksum in checksums.values() {
            total.merge(*checksum);
        }
        Some(total)
    }

    /// The reducer boundaries the sample gave.
    pub fn boundaries(&self) -> &[Vec<u8>] {
        self.partitioner.boundaries()
    }
}

/// Plans a TeraSort of `inputs` into `reducers` part files: samples the input
/// ([`sample_terasort`]) and builds the job ([`terasort_job`]).
///
/// # Errors
/// A missing or unreadable input, or a sampled file that ends inside a record.
pub fn terasort(
    inputs: &[PathBuf],
    split_size: u64,
    reducers: usize,
    sample_size: usize,
) -> Result<TeraSort, ExecError> {
    let sample = sample_terasort(inputs, split_size, reducers, sample_size)?;
    Ok(terasort_job(
        sample.boundaries,
        reducers,
        RowChecksums::Counted,
    ))
}

/// TeraSort's sampling step: reads about `sample_size` records from up to 100 of the splits
/// (`split_size` bytes each) the job will read, spread evenly over the input, and picks the
/// boundaries of `reducers` partitions. It runs once, where the job is planned; every process
/// that runs the job's tasks builds it from these boundaries ([`terasort_job`]).
///
/// # Errors
/// A missing or unreadable input, or a sampled file that ends inside a record.
pub fn sample_terasort(
    inputs: &[PathBuf],
    split_size: u64,
    reducers: usize,
    sample_size: usize,
) -> Result<TeraSample, ExecError> {
    let inputs: Vec<Location> = inputs.iter().cloned().map(Location::from).collect();
    sample_terasort_in(
        &LocalStorage::new(),
        &inputs,
        split_size,
        reducers,
        sample_size,
    )
}

/// [`sample_terasort`] of inputs on any storage (the job's [`sluice_io::Stores`], say).
///
/// # Errors
/// As for [`sample_terasort`].
pub fn sample_terasort_in(
    storage: &dyn Storage,
    inputs: &[Location],
    split_size: u64,
    reducers: usize,
    sample_size: usize,
) -> Result<TeraSample, ExecError> {
    let files = discover(storage, inputs)?;
    let splits = whole_compressed_files(&files, plan_input_splits(&files, split_size));
    let chosen: Vec<usize> = if splits.len() <= SAMPLED_SPLITS {
        (0..splits.len()).collect()
    } else {
        (0..SAMPLED_SPLITS)
            .map(|i| i * splits.len() / SAMPLED_SPLITS)
            .collect()
    };
    let per_split = sample_size.div_ceil(chosen.len().max(1));
    let mut sample = Vec::new();
    for &index in &chosen {
        let split = &splits[index];
        let file = &files[split.file];
        let mut reader =
            FixedRecordReader::open_in(storage, file, split, ROW_LEN, CachePolicy::Keep)?;
        let mut taken = 0;
        while taken < per_split {
            let Some((_, record)) = reader
                .next_record()
                .map_err(|e| ExecError::from(e).in_task("sampling the input for terasort"))?
            else {
                break;
            };
            sample.extend_from_slice(record);
            taken += 1;
        }
    }
    let partitioner =
        TotalOrderPartitioner::from_sample(sample.chunks_exact(ROW_LEN).collect(), reducers);
    Ok(TeraSample {
        boundaries: partitioner.boundaries().to_vec(),
        records: sample.len() / ROW_LEN,
        splits: chosen.len(),
    })
}

/// Whether a TeraSort's map tasks add up the checksum of the rows they read
/// ([`TeraSort::input_checksum`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowChecksums {
    /// They do: for the process that reports the job's result.
    Counted,
    /// They do not: for a process whose tasks' checksums nobody reads (a cluster worker's;
    /// the coordinator prints none). The checksum is a CRC-32 of every row, about 3% of a
    /// map task's CPU time.
    Skipped,
}

/// The TeraSort job into `reducers` part files, partitioned at `boundaries` (whole rows, as
/// [`sample_terasort`] picks them; sorted here), its map tasks adding up the rows' checksum
/// or not (`checksums`). Every process that runs tasks of one TeraSort must build it from the
/// same boundaries, or rows would go to the wrong part files.
pub fn terasort_job(
    boundaries: Vec<Vec<u8>>,
    reducers: usize,
    checksums: RowChecksums,
) -> TeraSort {
    let partitioner = Arc::new(TotalOrderPartitioner::new(boundaries));
    let checksums =
        (checksums == RowChecksums::Counted).then(|| Arc::new(Mutex::new(BTreeMap::new())));
    let sink = checksums.clone();
    let mapper = Arc::new(move |input: &MapInput| {
        Box::new(RowMapper {
            task: input.task,
            checksum: TeraChecksum::new(),
            sink: sink.clone(),
        }) as Box<dyn Mapper>
    });
    // Rows pass through one by one: nothing is kept from one key to the next.
    let stage = Stage::new(reducers, |_| PassThrough)
        .with_partitioner(Arc::clone(&partitioner) as _)
        .with_independent_keys();
    let job = Job::from_factory("terasort", mapper)
        .with_stage(stage)
        .with_output(OutputFormat::Raw)
        .with_input(InputFormat::FixedLength(ROW_LEN));
    TeraSort {
        job,
        partitioner,
        checksums,
    }
}

/// Emits each row whole as the key (with an empty value) and, if the job counts them, adds it
/// to the task's checksum.
struct RowMapper {
    task: usize,
    checksum: TeraChecksum,
    /// Where the task's checksum goes when it ends; `None`: rows are not checksummed.
    sink: Option<Arc<Mutex<BTreeMap<usize, TeraChecksum>>>>,
}

impl Mapper for RowMapper {
    fn map(&mut self, _offset: u64, row: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if self.sink.is_some() {
            self.checksum.add_row(row);
        }
        out.emit(row, b"")
    }

    fn finish(&mut self, _out: &mut dyn Emit) -> Result<(), ExecError> {
        if let Some(sink) = &self.sink {
            let mut checksums = sink.lock().unwrap_or_else(|p| p.into_inner());
            checksums.insert(self.task, self.checksum);
        }
        Ok(())
    }
}
