//! A map task: a split's records through the job's mapper into a collector (or, for a map-only
//! job, a part file).

use sluice_api::{
    CountSink, CounterValues, Emit, ExecError, InputFormat, Job, LineSource, MapInput,
    MapOutputTypes, TaskContext,
};
use sluice_io::seqfile::{join_pair, SeqFileReader};
use sluice_io::{
    BufferBudget, CachePolicy, FixedRecordReader, IoError, JobCommitter, LineReader, MapSplit,
    Split, Storage, StoredInput,
};
use sluice_shuffle::RunCatalog;
use sluice_spill::{MemoryPool, MemoryReservation};

use crate::part_file::TextOutput;
use crate::shared::Shared;
use crate::sink::{TaskSink, CHECK_EVERY};

/// Counts what a mapper emits, then passes it on: records, and the bytes Hadoop would count
/// for them (the pairs' serialized sizes).
struct CountingEmit<E> {
    inner: E,
    types: MapOutputTypes,
    records: u64,
    bytes: u64,
}

impl<E: Emit> Emit for CountingEmit<E> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        self.records += 1;
        self.bytes += self.types.pair_len(key, value);
        self.inner.emit(key, value)
    }

    fn counted(&mut self) -> Option<&mut dyn CountSink> {
        // Counted keys pass through here to be counted, if the destination takes them at all
        // (else they arrive encoded, through `emit`).
        if self.inner.counted().is_some() {
            Some(self)
        } else {
            None
        }
    }
}

impl<E: Emit> CountSink for CountingEmit<E> {
    fn count(&mut self, key: &[u8], count: u64) -> Result<(), ExecError> {
        self.records += 1;
        self.bytes += self.types.count_pair_len(key, count);
        self.inner.emit_count(key, count)
    }

    fn count_spans(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        self.records += spans.len() as u64;
        let values = self.types.value.count_len(count) * spans.len() as u64;
        self.bytes += self.types.key.spans_len(text, spans) + values;
        self.inner.emit_counts(text, spans, count)
    }
}

/// One attempt of one map task.
pub(crate) struct MapTask<'a> {
    pub(crate) task: usize,
    pub(crate) attempt: usize,
    pub(crate) split: &'a MapSplit,
    /// The job's input files, which the split's ranges index.
    pub(crate) files: &'a [StoredInput],
    pub(crate) storage: &'a dyn Storage,
}

/// A line reader's buffer beyond its first size (a line longer than the buffer), reserved from
/// the job's pool before the buffer grows: within the budget if it allows, else forced, which
/// the job reports like any record larger than the budget. Given back when the buffer shrinks.
struct LineBudget(MemoryReservation);

impl BufferBudget for LineBudget {
    fn set_extra(&mut self, extra: usize) {
        if !self.0.try_resize(extra) {
            // The line must be read whole: nothing else can make room for it.
            let short = extra.saturating_sub(self.0.size());
            self.0.grow_forced(short);
        }
    }
}

/// Reads a split's records in the job's [`InputFormat`].
enum SplitReader {
    Lines(LineReader),
    Fixed(FixedRecordReader),
    /// A SequenceFile's records, each joined into `record`.
    Seq {
        reader: Box<SeqFileReader>,
        record: Vec<u8>,
    },
}

impl SplitReader {
    fn open(
        format: InputFormat,
        storage: &dyn Storage,
        file: &StoredInput,
        split: &Split,
        pool: &MemoryPool,
    ) -> Result<Self, IoError> {
        Ok(match format {
            InputFormat::Lines => {
                let mut reader = LineReader::open_in(storage, file, split)?;
                reader.set_budget(Box::new(LineBudget(pool.empty_reservation())));
                SplitReader::Lines(reader)
            }
            // Fixed-length rows are a sort's input, read once and usually larger than memory.
            InputFormat::FixedLength(len) => SplitReader::Fixed(FixedRecordReader::open_in(
                storage,
                file,
                split,
                len,
                CachePolicy::DropBehind,
            )?),
            InputFormat::SequenceFile => SplitReader::Seq {
                reader: Box::new(SeqFileReader::open_in(storage, file, split)?),
                record: Vec::new(),
            },
        })
    }

    /// The key and value classes of a SequenceFile.
    fn record_classes(&self) -> Option<(String, String)> {
        match self {
            SplitReader::Seq { reader, .. } => {
                let header = reader.header();
                Some((header.key_class.clone(), header.value_class.clone()))
            }
            SplitReader::Lines(_) | SplitReader::Fixed(_) => None,
        }
    }

    fn next(&mut self) -> Result<Option<(u64, &[u8])>, IoError> {
        match self {
            SplitReader::Lines(reader) => reader.next_line(),
            SplitReader::Fixed(reader) => reader.next_record(),
            SplitReader::Seq { reader, record } => {
                let Some((offset, key, value)) = reader.next_record()? else {
                    return Ok(None);
                };
                join_pair(key, value, record).map_err(|source| IoError::Read {
                    path: std::path::PathBuf::from(format!("record at byte {offset}")),
                    source,
                })?;
                Ok(Some((offset, record.as_slice())))
            }
        }
    }

    fn bytes_consumed(&self) -> u64 {
        match self {
            SplitReader::Lines(reader) => reader.bytes_consumed(),
            SplitReader::Fixed(reader) => reader.bytes_consumed(),
            SplitReader::Seq { reader, .. } => reader.bytes_consumed(),
        }
    }
}

/// Opens the readers of a split's ranges.
struct PartOpener<'a> {
    format: InputFormat,
    storage: &'a dyn Storage,
    files: &'a [StoredInput],
    pool: &'a MemoryPool,
}

impl PartOpener<'_> {
    fn open(&self, part: &Split) -> Result<SplitReader, ExecError> {
        let file = self.files.get(part.file).ok_or_else(|| {
            ExecError::Config(format!(
                "a split reads input file {} of {}",
                part.file,
                self.files.len()
            ))
        })?;
        Ok(SplitReader::open(
            self.format,
            self.storage,
            file,
            part,
            self.pool,
        )?)
    }
}

/// A split's records, counted, with progress published and cancellation checked as they are
/// read. A combined split's ranges are read one after another.
struct SplitLines<'a> {
    /// The reader of the range being read.
    reader: SplitReader,
    /// The reader of a later range, once the current one has ended: its first record is in
    /// `first`, and it becomes `reader` at the next call. (Two fields, so that a record of
    /// `reader` can be returned and a later range opened in one call.)
    following: Option<SplitReader>,
    first: Vec<u8>,
    /// The ranges after the one `following` (else `reader`) reads.
    rest: std::slice::Iter<'a, Split>,
    opener: PartOpener<'a>,
    /// Bytes consumed by the readers of ranges already read.
    done_bytes: u64,
    res: &'a Shared,
    /// The attempt whose input this is, which counts the bytes read.
    ctx: TaskContext,
    records: u64,
    published_bytes: u64,
}

impl SplitLines<'_> {
    fn consumed(&self) -> u64 {
        let following = self
            .following
            .as_ref()
            .map_or(0, SplitReader::bytes_consumed);
        self.done_bytes + self.reader.bytes_consumed() + following
    }

    fn publish(&mut self) {
        let consumed = self.consumed();
        let read = CounterValues {
            map_input_bytes: consumed - self.published_bytes,
            ..CounterValues::default()
        };
        self.res.runs.status().count(&self.ctx, &read);
        self.published_bytes = consumed;
    }

    /// The next record, counted.
    fn next_record(&mut self) -> Result<Option<(u64, &[u8])>, ExecError> {
        if let Some(next) = self.following.take() {
            self.done_bytes += self.reader.bytes_consumed();
            self.reader = next;
        }
        if let Some(record) = self.reader.next()? {
            self.records += 1;
            return Ok(Some(record));
        }
        // The range has ended: the first record of a later one (ranges may be empty).
        for part in self.rest.by_ref() {
            let mut reader = self.opener.open(part)?;
            if let Some((offset, record)) = reader.next()? {
                self.first.clear();
                self.first.extend_from_slice(record);
                self.following = Some(reader);
                self.records += 1;
                return Ok(Some((offset, &self.first)));
            }
            self.done_bytes += reader.bytes_consumed();
        }
        Ok(None)
    }
}

impl LineSource for SplitLines<'_> {
    fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, ExecError> {
        if self.records % CHECK_EVERY == CHECK_EVERY - 1 {
            self.res.runs.check_cancelled()?;
            self.publish();
        }
        self.next_record()
    }
}

pub(crate) fn map_task(
    t: &MapTask<'_>,
    job: &Job,
    res: &Shared,
    store: Option<&RunCatalog>,
    committer: &dyn JobCommitter,
) -> Result<(), ExecError> {
    let status = res.runs.status();
    let ctx = TaskContext {
        is_map: true,
        task: t.task,
        attempt: t.attempt,
        stage: 1,
    };
    let opener = PartOpener {
        format: job.input,
        storage: t.storage,
        files: t.files,
        pool: res.runs.pool(),
    };
    let mut parts = t.split.parts().iter();
    let first = parts
        .next()
        .ok_or_else(|| ExecError::Config(format!("map task {} has nothing to read", t.task)))?;
    let mut input = SplitLines {
        reader: opener.open(first)?,
        following: None,
        first: Vec::new(),
        rest: parts,
        opener,
        done_bytes: 0,
        res,
        ctx,
        records: 0,
        published_bytes: 0,
    };
    // A combined split's task is told of its first range, as Hadoop's are.
    let mut mapper = (job.mapper)(&MapInput {
        task: t.task,
        attempt: t.attempt,
        file_index: first.file,
        location: t.files[first.file].location().clone(),
        start: first.start,
        length: first.len,
        record_classes: input.reader.record_classes(),
    });
    let sink = match job.stages.first() {
        Some(stage) => TaskSink::Collect(res.collector(stage, res.task_share, &ctx)),
        None => TaskSink::Text(TextOutput::create(
            committer,
            &job.part_names.name(true, t.task),
            t.attempt,
            &job.output,
            job.output_codec,
            job.lazy_output,
            res.runs.write_chunk(),
        )?),
    };
    let mut out = CountingEmit {
        inner: sink,
        types: job.map_output_types,
        records: 0,
        bytes: 0,
    };
    let ran = mapper.run(&mut input, &mut out);
    let (out_records, out_bytes) = (out.records, out.bytes);
    // A failed attempt's input bytes, shown as progress, leave the counters with the rest of
    // what it counted (`JobStatus::discard_attempt`).
    ran.and_then(|()| out.inner.finish(t.task, store, status, &ctx))?;
    input.publish();
    // The task's own counts, added to the job's in one step (input bytes were published as
    // progress while the task ran).
    status.count(
        &ctx,
        &CounterValues {
            map_tasks: 1,
            map_input_records: input.records,
            map_output_records: out_records,
            map_output_bytes: out_bytes,
            ..CounterValues::default()
        },
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::sync::Arc;

    use sluice_api::{HashPartitioner, JobStatus, Mapper, Partitioner, Reducer, Stage, Values};
    use sluice_format::Codec;
    use sluice_io::{FileStatus, LocalRenameCommitter, LocalStorage, Location};
    use sluice_shuffle::{LocalSpills, Resources, SPILL_BLOCK};
    use sluice_sort::SortedCursor;
    use sluice_spill::{MemoryPool, SpillDir};

    use super::*;

    /// Emits each line as a key with its offset as value; fails on a line `fail`.
    struct LineMapper;

    impl Mapper for LineMapper {
        fn map(&mut self, offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
            if line == b"fail" {
                return Err(ExecError::user("a bad line"));
            }
            out.emit(line, offset.to_string().as_bytes())
        }
    }

    struct Unused;

    impl Reducer for Unused {
        fn reduce(
            &mut self,
            _key: &[u8],
            _values: &mut Values<'_>,
            _out: &mut dyn Emit,
        ) -> Result<(), ExecError> {
            Ok(())
        }
    }

    fn shared(dir: &Path, status: Arc<JobStatus>) -> Shared {
        let spills = LocalSpills::new(SpillDir::create_in(dir).unwrap(), Codec::None, SPILL_BLOCK);
        Shared {
            runs: Resources::new(
                MemoryPool::new(8 << 20),
                4 << 20,
                Box::new(spills),
                64 * 1024,
                1,
                status,
            ),
            task_share: 2 << 20,
            table_block: 64 * 1024,
            threads: 1,
            reduce_split_bytes: None,
            running_reduces: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// Runs map task 0 over `text[start..]` of a file holding `text`.
    fn run(
        job: &Job,
        text: &str,
        start: u64,
        catalog: Option<&RunCatalog>,
        committer: &dyn JobCommitter,
        res: &Shared,
        dir: &Path,
    ) -> Result<(), ExecError> {
        let path = dir.join("input.txt");
        std::fs::write(&path, text).unwrap();
        let file = StoredInput::new(FileStatus::file(
            Location::from_path(&path),
            text.len() as u64,
        ));
        let split = MapSplit::File(Split {
            file: 0,
            start,
            len: text.len() as u64 - start,
        });
        let task = MapTask {
            task: 0,
            attempt: 0,
            split: &split,
            files: std::slice::from_ref(&file),
            storage: &LocalStorage::new(),
        };
        map_task(&task, job, res, catalog, committer)
    }

    #[test]
    fn a_map_task_partitions_its_split_into_the_catalog_and_counts_it() {
        let dir = tempfile::tempdir().unwrap();
        let status = Arc::new(JobStatus::default());
        let res = shared(dir.path(), Arc::clone(&status));
        let job = Job::new("lines", |_| LineMapper).with_stage(Stage::new(3, |_| Unused));
        let mut committer =
            LocalRenameCommitter::new(&Location::from_path(dir.path().join("o"))).unwrap();
        committer.setup_job().unwrap();
        let catalog = RunCatalog::new();
        // The split starts inside the first line: Hadoop's reader skips to the next line.
        let text = "zero\none\ntwo\nthree\nfour\n";
        run(&job, text, 2, Some(&catalog), &committer, &res, dir.path()).unwrap();

        let c = status.counters.snapshot();
        assert_eq!(
            (c.map_tasks, c.map_input_records, c.map_output_records),
            (1, 4, 4)
        );
        assert_eq!(c.map_input_bytes, text.len() as u64 - 2);
        // Every line after the first, in its hash partition, with its offset.
        let mut expected: Vec<BTreeMap<Vec<u8>, Vec<u8>>> = vec![BTreeMap::new(); 3];
        for (word, offset) in [("one", 5), ("two", 9), ("three", 13), ("four", 19)] {
            let p = HashPartitioner.partition(word.as_bytes(), 3);
            expected[p].insert(word.into(), offset.to_string().into_bytes());
        }
        let runs = catalog.into_runs();
        assert_eq!(runs.len(), 1, "one run: the task's output fits its share");
        for (p, want) in expected.iter().enumerate() {
            let mut got = BTreeMap::new();
            let mut cursor = runs[0].open(p).unwrap();
            while cursor.advance().unwrap() {
                got.insert(cursor.key().to_vec(), cursor.value().to_vec());
            }
            assert_eq!(&got, want, "partition {p}");
        }
    }

    #[test]
    fn a_combined_split_reads_its_ranges_in_order_with_offsets_in_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let status = Arc::new(JobStatus::default());
        let res = shared(dir.path(), Arc::clone(&status));
        let job = Job::new("lines", |_| LineMapper);
        let output = dir.path().join("out");
        let mut committer = LocalRenameCommitter::new(&Location::from_path(&output)).unwrap();
        committer.setup_job().unwrap();
        let texts = ["a\nb\n", "", "cc\ndd\nee\n", "f"];
        let files: Vec<StoredInput> = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                let path = dir.path().join(format!("in{i}"));
                std::fs::write(&path, text).unwrap();
                StoredInput::new(FileStatus::file(
                    Location::from_path(&path),
                    text.len() as u64,
                ))
            })
            .collect();
        // The second half of file 2 first (from inside its line "dd": that line belongs to the
        // range before it), then all of file 0, the empty file 1, file 2's first half, file 3.
        let part = |file, start, len| Split { file, start, len };
        let split = MapSplit::Combined {
            parts: vec![
                part(2, 4, 5),
                part(0, 0, 4),
                part(1, 0, 0),
                part(2, 0, 4),
                part(3, 0, 1),
            ],
            hosts: Vec::new(),
        };
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let told = Arc::clone(&seen);
        let job = Job::from_factory(
            "lines",
            Arc::new(move |input: &MapInput| {
                told.lock()
                    .unwrap()
                    .push((input.file_index, input.start, input.length));
                Box::new(LineMapper) as Box<dyn sluice_api::Mapper>
            }),
        )
        .with_output(job.output);
        let task = MapTask {
            task: 0,
            attempt: 0,
            split: &split,
            files: &files,
            storage: &LocalStorage::new(),
        };
        map_task(&task, &job, &res, None, &committer).unwrap();
        committer.commit_job().unwrap();
        let part = std::fs::read_to_string(output.join("part-m-00000")).unwrap();
        assert_eq!(part, "ee\t6\na\t0\nb\t2\ncc\t0\ndd\t3\nf\t0\n");
        assert_eq!(
            *seen.lock().unwrap(),
            vec![(2, 4, 5)],
            "told of its first range"
        );
        let c = status.counters.snapshot();
        assert_eq!((c.map_tasks, c.map_input_records), (1, 6));
        // Every range's bytes, and what the readers read past their ends to finish a line.
        assert!(c.map_input_bytes >= 14, "{c:?}");
    }

    #[test]
    fn a_failed_map_task_counts_nothing_once_discarded_and_hands_over_no_run() {
        let dir = tempfile::tempdir().unwrap();
        let status = Arc::new(JobStatus::default());
        let res = shared(dir.path(), Arc::clone(&status));
        let job = Job::new("lines", |_| LineMapper).with_stage(Stage::new(1, |_| Unused));
        let mut committer =
            LocalRenameCommitter::new(&Location::from_path(dir.path().join("o"))).unwrap();
        committer.setup_job().unwrap();
        let catalog = RunCatalog::new();
        // Enough lines before the failing one that the task shows progress on the way.
        let lines = 3 * CHECK_EVERY as usize;
        let text = format!("{}fail\n", "a\n".repeat(lines));
        let err = run(&job, &text, 0, Some(&catalog), &committer, &res, dir.path()).unwrap_err();
        let at = format!("record at byte {}", 2 * lines);
        assert!(err.to_string().contains(&at), "{err}");
        assert!(
            status.counters.snapshot().map_input_bytes > 0,
            "the attempt showed its progress"
        );
        let attempt = TaskContext {
            is_map: true,
            task: 0,
            attempt: 0,
            stage: 1,
        };
        status.discard_attempt(&attempt);
        assert_eq!(status.counters.snapshot(), Default::default());
        assert!(catalog.into_runs().is_empty());
    }

    #[test]
    fn a_map_only_task_writes_its_part_file_through_the_committer() {
        let dir = tempfile::tempdir().unwrap();
        let status = Arc::new(JobStatus::default());
        let res = shared(dir.path(), Arc::clone(&status));
        let job = Job::new("lines", |_| LineMapper);
        let output = dir.path().join("out");
        let mut committer = LocalRenameCommitter::new(&Location::from_path(&output)).unwrap();
        committer.setup_job().unwrap();
        run(&job, "b\na\n", 0, None, &committer, &res, dir.path()).unwrap();
        assert!(
            !output.exists(),
            "nothing is visible before the job commits"
        );
        committer.commit_job().unwrap();
        let part = std::fs::read_to_string(output.join("part-m-00000")).unwrap();
        assert_eq!(part, "b\t0\na\t2\n", "map output in input order, unsorted");
        assert!(output.join("_SUCCESS").exists());
        let c = status.counters.snapshot();
        assert_eq!((c.output_records, c.output_bytes), (2, 8));
    }
}
