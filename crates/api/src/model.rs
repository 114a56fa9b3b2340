//! The programming model: what a job author implements.
//!
//! A job is a [`Mapper`] that turns input lines into key/value pairs, an optional combiner, and
//! one or more reduce stages. Keys and values are plain bytes; keys are grouped and ordered as
//! unsigned bytes (Hadoop's `Text` order), so a job that needs another order encodes its keys
//! so that byte order is the order it wants (see the `grep` job).

use std::sync::Arc;

use sluice_sort::SortedCursor;

use crate::group::{for_each_group, Values};

use crate::ExecError;

/// Receives the key/value pairs a mapper, combiner or reducer produces.
pub trait Emit {
    /// Takes one pair; the bytes are copied before this returns.
    ///
    /// # Errors
    /// Whatever the destination reports (a full disk, a cancelled job).
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError>;

    /// The destination's fast path for counted keys, if it has one: the map-side collector of
    /// a job that combines with [`Combine::SumCounts`] adds counts to its table without
    /// encoding and decoding them. [`Emit::emit_count`] and [`Emit::emit_counts`] use it.
    ///
    /// A destination without one keeps the default (`None`). One that wraps another forwards
    /// this single method, or returns itself (as a [`CountSink`]) when it must see the counted
    /// keys on their way, as a wrapper that counts records does.
    fn counted(&mut self) -> Option<&mut dyn CountSink> {
        None
    }

    /// Takes a pair whose value is a count, as [`encode_count`] would encode it: through the
    /// destination's fast path ([`Emit::counted`]) if it has one, else as
    /// `emit(key, &encode_count(count))`. A mapper emitting counts (a word count's `1`s)
    /// should call this. Not meant to be overridden: implement [`Emit::counted`] instead.
    ///
    /// # Errors
    /// As for [`Emit::emit`].
    fn emit_count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError> {
        match self.counted() {
            Some(sink) => sink.count(key, count),
            None => self.emit(key, &encode_count(count)),
        }
    }

    /// Takes one pair `(text[start..end], count)` for each `(start, end)` of `spans`, in
    /// order: many counted keys cut from one byte string, such as the words of a line.
    ///
    /// The same as calling [`Emit::emit_count`] for each key, in one call: the map-side
    /// collector of a [`Combine::SumCounts`] job then hashes the keys in one loop, and reads
    /// each short key from `text` with one load instead of a copy. Not meant to be
    /// overridden: implement [`Emit::counted`] instead.
    ///
    /// # Errors
    /// As for [`Emit::emit`]. Keys before the failing one may have been taken.
    ///
    /// # Panics
    /// If a span is not a range inside `text`.
    fn emit_counts(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        if let Some(sink) = self.counted() {
            return sink.count_spans(text, spans, count);
        }
        let encoded = encode_count(count);
        for &(start, end) in spans {
            self.emit(&text[start..end], &encoded)?;
        }
        Ok(())
    }
}

/// A destination's fast path for counted keys (see [`Emit::counted`]).
pub trait CountSink {
    /// Adds `count` to `key`.
    ///
    /// # Errors
    /// As for [`Emit::emit`].
    fn count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError>;

    /// Adds `count` to each key `text[start..end]` of `spans`, in order.
    ///
    /// # Errors
    /// As for [`Emit::emit`]. Keys before the failing one may have been taken.
    ///
    /// # Panics
    /// If a span is not a range inside `text`.
    fn count_spans(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        for &(start, end) in spans {
            self.count(&text[start..end], count)?;
        }
        Ok(())
    }
}

/// Where a map task's input comes from, for mappers that need it (e.g. the inverted index).
#[derive(Debug, Clone)]
pub struct MapInput {
    /// Index of the map task (= index of its split in input order).
    pub task: usize,
    /// Attempt number of this run of the task, from 0 (tasks are retried after a failure when
    /// the job allows it).
    pub attempt: usize,
    /// Index of the input file among all input files (in input order: `sluice_io::discover`). For a combined split
    /// (several files' ranges, read in order), this and the next three fields describe its
    /// first range, as Hadoop tells a `CombineFileSplit`'s task.
    pub file_index: usize,
    /// Where the input file is, as discovered.
    pub location: sluice_io::Location,
    /// First byte of the split in the file.
    pub start: u64,
    /// Bytes in the split.
    pub length: u64,
    /// The key and value class names of a SequenceFile input ([`InputFormat::SequenceFile`]
    /// (crate::InputFormat)), from the file's header; `None` for other inputs.
    pub record_classes: Option<(String, String)>,
}

/// Which task attempt a mapper, reducer or combiner instance works for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskContext {
    /// `true` in a map task (a combiner), `false` in a reduce task.
    pub is_map: bool,
    /// The task's number: the map task, or the partition a reduce task reduces.
    pub task: usize,
    /// Attempt number of this run of the task, from 0.
    pub attempt: usize,
    /// The reduce stage, from 1.
    pub stage: usize,
}

impl TaskContext {
    /// This attempt's id within job `job`.
    pub fn id(&self, job: &str) -> AttemptId {
        AttemptId {
            job: job.to_string(),
            stage: if self.is_map { 0 } else { self.stage },
            task: self.task,
            attempt: self.attempt,
        }
    }
}

/// Which attempt of which task of which job: what a driver, a worker on another machine and
/// the logs agree on. Its text is Hadoop's: `attempt_<job>_m_000003_0` (the job's id without
/// its `job_` prefix; `r` for reduce tasks of any stage).
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub struct AttemptId {
    /// The job's id, e.g. `job_1700000000000_0001`.
    pub job: String,
    /// 0 for the map stage, then the reduce stages from 1.
    pub stage: usize,
    /// The task's number within its stage (a map task, a reduce partition).
    pub task: usize,
    /// The attempt's number, from 0.
    pub attempt: usize,
}

impl AttemptId {
    /// Whether the attempt is a map task's.
    pub fn is_map(&self) -> bool {
        self.stage == 0
    }

    /// Hadoop's id of the attempt's task: `task_<job>_m_000003`.
    pub fn task_id(&self) -> String {
        let kind = if self.is_map() { 'm' } else { 'r' };
        format!("task_{}_{kind}_{:06}", self.job_base(), self.task)
    }

    fn job_base(&self) -> &str {
        self.job.strip_prefix("job_").unwrap_or(&self.job)
    }
}

impl std::fmt::Display for AttemptId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = if self.is_map() { 'm' } else { 'r' };
        write!(
            f,
            "attempt_{}_{kind}_{:06}_{}",
            self.job_base(),
            self.task,
            self.attempt
        )
    }
}

/// The lines of a map task's split, `(offset in the file, line without its terminator)`.
pub trait LineSource: Send {
    /// The next line, or `None` at the end of the split.
    ///
    /// # Errors
    /// Unreadable or corrupt input, or a cancelled job.
    fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, ExecError>;
}

/// A task's sorted input records, readable from another thread than the task's own.
pub trait SortedInput: SortedCursor + Send {}

impl<T: SortedCursor + Send> SortedInput for T {}

/// Turns input records into key/value pairs. One instance per map task.
pub trait Mapper: Send {
    /// Maps one line (without its terminator) that starts at byte `offset` of its file.
    ///
    /// # Errors
    /// A user error, or the emitter's error.
    fn map(&mut self, offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError>;

    /// Called once after the last record of the task.
    ///
    /// # Errors
    /// As for [`Mapper::map`].
    fn finish(&mut self, _out: &mut dyn Emit) -> Result<(), ExecError> {
        Ok(())
    }

    /// Maps a whole split. The default calls [`Mapper::map`] for every line, then
    /// [`Mapper::finish`]; a mapper that hands lines to something else overrides it.
    ///
    /// # Errors
    /// As for [`Mapper::map`], plus input errors.
    fn run(&mut self, input: &mut dyn LineSource, out: &mut dyn Emit) -> Result<(), ExecError> {
        while let Some((offset, line)) = input.next_line()? {
            self.map(offset, line, out)
                .map_err(|e| e.in_task(format!("record at byte {offset}")))?;
        }
        self.finish(out)
    }
}

/// Reduces all values of one key. Also used as a combiner. One instance per task.
pub trait Reducer: Send {
    /// Called once per distinct key, in key order, with every value of that key.
    ///
    /// # Errors
    /// A user error, a corrupt run, or the emitter's error.
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError>;

    /// Reduces a task's whole sorted input. The default groups runs of byte-equal keys and
    /// calls [`Reducer::reduce`] once per group; a reducer that hands records to something else
    /// overrides it. A combiner's output must stay sorted (it normally keeps the keys).
    ///
    /// # Errors
    /// As for [`Reducer::reduce`].
    fn run(&mut self, input: &mut dyn SortedInput, out: &mut dyn Emit) -> Result<(), ExecError> {
        for_each_group(input, |key, values| self.reduce(key, values, out))?;
        Ok(())
    }
}

/// Makes a mapper for a map task.
pub type MapperFactory = Arc<dyn Fn(&MapInput) -> Box<dyn Mapper> + Send + Sync>;
/// Makes a reducer (or combiner) for a task.
pub type ReducerFactory = Arc<dyn Fn(&TaskContext) -> Box<dyn Reducer> + Send + Sync>;

/// Decides which reduce partition a key goes to.
pub trait Partitioner: Send + Sync {
    /// A partition in `0..partitions`.
    fn partition(&self, key: &[u8], partitions: usize) -> usize;
}

/// How map output is combined before it is spilled.
#[derive(Clone, Default)]
pub enum Combine {
    /// No combining.
    #[default]
    None,
    /// Values are `u64` counts (see [`encode_count`]) summed per key. The map side
    /// then aggregates in a hash table instead of sorting every record.
    SumCounts,
    /// A general combiner, run over each sorted group before a run is written.
    Reducer(ReducerFactory),
}

/// Encodes a count as the value of a [`Combine::SumCounts`] job (8 bytes, little-endian).
pub fn encode_count(count: u64) -> [u8; 8] {
    count.to_le_bytes()
}

/// Decodes a value written by [`encode_count`].
///
/// # Errors
/// [`ExecError::User`] if the value is not 8 bytes long.
pub fn decode_count(value: &[u8]) -> Result<u64, ExecError> {
    let bytes: [u8; 8] = value.try_into().map_err(|_| {
        ExecError::user(format!(
            "a summed count must be 8 bytes (encode_count), got {} bytes",
            value.len()
        ))
    })?;
    Ok(u64::from_le_bytes(bytes))
}
