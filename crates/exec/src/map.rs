//! A map task: a split's records through the job's mapper into a collector (or, for a map-only
//! job, a part file).

use sluice_api::{
    CountSink, Counter, CounterValues, Emit, ExecError, InputFormat, Job, LineSource, MapInput,
    TaskContext,
};
use sluice_io::seqfile::{join_pair, SeqFileReader};
use sluice_io::{
    BufferBudget, CachePolicy, FixedRecordReader, IoError, JobCommitter, LineReader, Split,
    Storage, StoredInput,
};
use sluice_shuffle::RunCatalog;
use sluice_spill::{MemoryPool, MemoryReservation};

use crate::part_file::TextOutput;
use crate::shared::Shared;
use crate::sink::{TaskSink, CHECK_EVERY};

/// Counts what a mapper emits, then passes it on.
struct CountingEmit<E> {
    inner: E,
    records: u64,
    bytes: u64,
}

impl<E: Emit> Emit for CountingEmit<E> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        self.records += 1;
        self.bytes += (key.len() + value.len()) as u64;
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
        self.bytes += (key.len() + std::mem::size_of::<u64>()) as u64;
        self.inner.emit_count(key, count)
    }

    fn count_spans(
        &mut self,
        text: &[u8],
        spans: &[(usize, usize)],
        count: u64,
    ) -> Result<(), ExecError> {
        let key_bytes: usize = spans.iter().map(|&(start, end)| end - start).sum();
        self.records += spans.len() as u64;
        self.bytes += (key_bytes + spans.len() * std::mem::size_of::<u64>()) as u64;
        self.inner.emit_counts(text, spans, count)
    }
}

/// One attempt of one map task.
pub(crate) struct MapTask<'a> {
    pub(crate) task: usize,
    pub(crate) attempt: usize,
    pub(crate) split: Split,
    pub(crate) file: &'a StoredInput,
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

/// A split's records, counted, with progress published and cancellation checked as they are
/// read.
struct SplitLines<'a> {
    reader: SplitReader,
    res: &'a Shared,
    records: u64,
    published_bytes: u64,
}

impl SplitLines<'_> {
    fn publish(&mut self) {
        let consumed = self.reader.bytes_consumed();
        let counters = &self.res.runs.status().counters;
        counters.add(Counter::MapInputBytes, consumed - self.published_bytes);
        self.published_bytes = consumed;
    }
}

impl LineSource for SplitLines<'_> {
    fn next_line(&mut self) -> Result<Option<(u64, &[u8])>, ExecError> {
        if self.records % CHECK_EVERY == CHECK_EVERY - 1 {
            self.res.runs.check_cancelled()?;
            self.publish();
        }
        let line = self.reader.next()?;
        if line.is_some() {
            self.records += 1;
        }
        Ok(line)
    }
}

pub(crate) fn map_task(
    t: &MapTask<'_>,
    job: &Job,
    res: &Shared,
    store: Option<&RunCatalog>,
    committer: &dyn JobCommitter,
) -> Result<(), ExecError> {
    let counters = &res.runs.status().counters;
    let mut input = SplitLines {
        reader: SplitReader::open(job.input, t.storage, t.file, &t.split, res.runs.pool())?,
        res,
        records: 0,
        published_bytes: 0,
    };
    let mut mapper = (job.mapper)(&MapInput {
        task: t.task,
        attempt: t.attempt,
        file_index: t.split.file,
        location: t.file.location().clone(),
        start: t.split.start,
        length: t.split.len,
        record_classes: input.reader.record_classes(),
    });
    let ctx = TaskContext {
        is_map: true,
        task: t.task,
        attempt: t.attempt,
        stage: 1,
    };
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
        records: 0,
        bytes: 0,
    };
    let ran = mapper.run(&mut input, &mut out);
    let (out_records, out_bytes) = (out.records, out.bytes);
    if let Err(e) = ran.and_then(|()| out.inner.finish(t.task, store, counters)) {
        // The input bytes shown as progress were not read by a successful attempt.
        counters.sub(Counter::MapInputBytes, input.published_bytes);
        return Err(e);
    }
    input.publish();
    // The task's own counts, added to the job's in one step (input bytes were published as
    // progress while the task ran).
    counters.add_values(&CounterValues {
        map_tasks: 1,
        map_input_records: input.records,
        map_output_records: out_records,
        map_output_bytes: out_bytes,
        ..CounterValues::default()
    });
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
        let task = MapTask {
            task: 0,
            attempt: 0,
            split: Split {
                file: 0,
                start,
                len: text.len() as u64 - start,
            },
            file: &file,
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
    fn a_failed_map_task_counts_nothing_and_hands_over_no_run() {
        let dir = tempfile::tempdir().unwrap();
        let status = Arc::new(JobStatus::default());
        let res = shared(dir.path(), Arc::clone(&status));
        let job = Job::new("lines", |_| LineMapper).with_stage(Stage::new(1, |_| Unused));
        let mut committer =
            LocalRenameCommitter::new(&Location::from_path(dir.path().join("o"))).unwrap();
        committer.setup_job().unwrap();
        let catalog = RunCatalog::new();
        let err = run(
            &job,
            "a\nb\nfail\n",
            0,
            Some(&catalog),
            &committer,
            &res,
            dir.path(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("record at byte 4"), "{err}");
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
