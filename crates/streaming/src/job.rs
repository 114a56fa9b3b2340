//! From a parsed command line to a runnable job: input and output formats, framings,
//! separators, partitioner and comparator, the programs, the tasks' environment and working
//! directory.

use super::program::{CounterLimits, ShmSides};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sluice_hadoop::keyfield::{KeyFieldComparator, KeyFieldPartitioner, KeyFieldSpec};
use sluice_io::{Location, Stores};
use sluice_sort::{KeyComparator, KeyOrder};

use super::aggregate::AggregateReducer;
use super::archive::{self, ArchiveKind};
use super::command::looks_like_java_class;
use super::conf::{env_var_name, JobConf};
use super::localise;
use super::options::StreamingArgs;
use super::protocol::{Framing, Kind, RecordReader, RecordWriter};
use super::scratch::Scratch;
use super::seqout::{
    sequence_output, FinalWriter, SequenceFormat, SEQUENCE_BINARY_OUTPUT, SEQUENCE_OUTPUT,
};
use super::submission::{is_job_id, Submission};
use super::task::{
    Destination, IdentityMapper, IdentityReducer, InputFormat, JobContext, Program, Role, SeqView,
    StreamMapper, StreamReducer,
};
use super::work_dirs::WorkDirs;
use super::{combine, nline, StreamingError};
use sluice_api::{
    Combine, HashPartitioner, Job, JobConfig, JobStatus, MapInput, MapOutputTypes, Mapper,
    OutputFormat, PartNames, Partitioner, Reducer, SplitOrder, Stage, TaskContext, Writable,
};

/// A streaming job ready to run, and the scratch directory its tasks use.
pub struct StreamingJob {
    /// The job.
    pub job: Job,
    /// How it runs (inputs, output, attempts, split size; memory and threads at defaults).
    pub config: JobConfig,
    /// What the tasks share.
    context: Arc<JobContext>,
    /// The job's configuration as the programs see it.
    pub conf: JobConf,
    scratch: std::sync::Mutex<Scratch>,
    /// Set when the mapper program would start once for each of very many small splits.
    small_splits: Option<SmallSplits>,
}

/// Input split into so many small pieces that starting the mapper program once for each
/// takes longer than the work: see [`StreamingJob::small_splits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallSplits {
    /// The number of splits (and of map tasks, each starting the mapper once).
    pub splits: usize,
    /// The input's bytes, all splits together.
    pub bytes: u64,
}

/// At least this many splits...
const MANY_SPLITS: u64 = 1000;
/// ...of at most this many bytes on average make a job whose mapper program spends more time
/// starting than reading: a Python interpreter takes 20-100 ms to start, about what it needs to
/// read a mebibyte of lines.
const SMALL_SPLIT: u64 = 1 << 20;

impl StreamingJob {
    /// The job's id, in Hadoop's form (`job_<digits>_0001`).
    pub fn job_id(&self) -> &str {
        &self.context.job_id
    }

    /// The directory with the programs' stderr logs.
    pub fn log_dir(&self) -> &Path {
        &self.context.log_dir
    }

    /// The job is done with its scratch directory: removes it, except, if `keep_logs`, the
    /// logs that have something in them. Returns the log directory if it was kept.
    pub fn cleanup(&self, keep_logs: bool) -> Option<PathBuf> {
        self.scratch
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .finish(keep_logs)
    }

    /// `Some` when a mapper program reads input through `TextInputFormat` cut into at least
    /// 1,000 splits of under 1 MiB each on average (thousands of small files, as a rule). Each
    /// split is a map task that starts the program anew, so most of such a job is spent
    /// starting programs; `CombineTextInputFormat` packs small files into a few splits.
    pub fn small_splits(&self) -> Option<SmallSplits> {
        self.small_splits
    }
}

/// Most entries of the starting directory linked into the task directory.
const START_DIR_LINKS: usize = 10_000;

/// Java class names that have a native stand-in, by role.
const IDENTITY_MAPPERS: &[&str] = &[
    "org.apache.hadoop.mapred.lib.IdentityMapper",
    "IdentityMapper",
];
const IDENTITY_REDUCERS: &[&str] = &[
    "org.apache.hadoop.mapred.lib.IdentityReducer",
    "IdentityReducer",
];
const TEXT_INPUT: &[&str] = &[
    "org.apache.hadoop.mapred.TextInputFormat",
    "TextInputFormat",
];
const KEY_VALUE_INPUT: &[&str] = &[
    "org.apache.hadoop.mapred.KeyValueTextInputFormat",
    "KeyValueTextInputFormat",
];
const SEQUENCE_INPUT: &[&str] = &[
    "org.apache.hadoop.mapred.SequenceFileInputFormat",
    "SequenceFileInputFormat",
];
const SEQUENCE_TEXT_INPUT: &[&str] = &[
    "org.apache.hadoop.mapred.SequenceFileAsTextInputFormat",
    "SequenceFileAsTextInputFormat",
];
/// Only by its class name: Hadoop's streaming job knows the short names of the two above, and
/// looks any other short name up in its own package, where this one is not.
const SEQUENCE_BINARY_INPUT: &[&str] =
    &["org.apache.hadoop.mapred.SequenceFileAsBinaryInputFormat"];
/// Hadoop's streaming job knows output formats by their full names only (a short name is looked
/// up in its own package, where there are none).
const TEXT_OUTPUT: &[&str] = &["org.apache.hadoop.mapred.TextOutputFormat"];
/// Hadoop's output format that drops every record (the old API's, which streaming runs).
pub(crate) const NULL_OUTPUT: &str = "org.apache.hadoop.mapred.lib.NullOutputFormat";
const HASH_PARTITIONERS: &[&str] = &[
    "org.apache.hadoop.mapred.lib.HashPartitioner",
    "org.apache.hadoop.mapreduce.lib.partition.HashPartitioner",
    "HashPartitioner",
];
const KEY_FIELD_PARTITIONERS: &[&str] = &[
    "org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner",
    "org.apache.hadoop.mapreduce.lib.partition.KeyFieldBasedPartitioner",
    "KeyFieldBasedPartitioner",
];
const KEY_FIELD_COMPARATORS: &[&str] = &[
    "org.apache.hadoop.mapred.lib.KeyFieldBasedComparator",
    "org.apache.hadoop.mapreduce.lib.partition.KeyFieldBasedComparator",
    "KeyFieldBasedComparator",
];

fn usage(message: String) -> StreamingError {
    StreamingError::Usage(message)
}

/// Builds the job a parsed command line describes, as submitted from this process
/// ([`Submission::current`]). `status` is the job's live status (the programs' counters and
/// status lines go there).
///
/// # Errors
/// As [`build_with`].
pub fn build(args: &StreamingArgs, status: Arc<JobStatus>) -> Result<StreamingJob, StreamingError> {
    build_with(args, &Submission::current(), &Stores::local(), status)
}

/// Builds the job a parsed command line describes, submitted as `submission` says: the same
/// command line and submission give the same job in any process. `status` is the job's live
/// status (the programs' counters and status lines go there).
///
/// # Errors
/// [`StreamingError::Usage`] for a missing or contradictory option, a Java class without a
/// native equivalent, a bad key-field option, a malformed job id; [`StreamingError::Setup`] if
/// the working directory cannot be made.
pub fn build_with(
    args: &StreamingArgs,
    submission: &Submission,
    stores: &Stores,
    status: Arc<JobStatus>,
) -> Result<StreamingJob, StreamingError> {
    if !is_job_id(&submission.job_id) {
        return Err(usage(format!(
            "job id {:?}: expected job_<digits>_<digits>",
            submission.job_id
        )));
    }
    if args.inputs.is_empty() {
        return Err(usage("Required argument: -input".into()));
    }
    // The settings as Hadoop's job reads them: `${...}` in values substituted.
    let mut conf = args.conf.substituted()?;
    // Refused settings first: an unknown default file system is reported as the setting.
    super::keys::check(args, &conf, stores)?;
    super::task_env::check(&conf)?;
    let output = args.output_location()?;

    // Reducers: -numReduceTasks / mapreduce.job.reduces, or none with -reducer NONE.
    if args.reducer.as_deref().map(str::trim) == Some("NONE") {
        conf.set("mapreduce.job.reduces", "0");
    }
    let reducers = conf.get_count("mapreduce.job.reduces", 1, 0)?;
    // A value given stays as written (` 2 ` from a file), as the programs see it in Hadoop.
    conf.set_default("mapreduce.job.reduces", reducers.to_string());

    let inputs = args.input_locations()?;
    let block = conf.get_u64("fs.local.block.size", 32 << 20)?;
    // Hadoop's old-API FileInputFormat, which streaming uses: max(minSize, min(goal, block)),
    // where local mode's single map makes the goal the whole input; the max size is ignored.
    let min_split = conf.get_u64("mapreduce.input.fileinputformat.split.minsize", 1)?;
    let split_size = min_split.max(block).max(1);
    let input_format = input_format(args, &mut conf)?;
    // The programs see the number of map tasks (`mapreduce_job_maps`). If the inputs cannot
    // be listed, the job fails when it starts, with the reason.
    let mut planned = None;
    let mut small_splits = None;
    let nested = super::keys::nested_directories(&conf)?.unwrap_or_default();
    if let Ok(files) = sluice_io::discover_with(stores, &inputs, nested) {
        let bytes = files
            .iter()
            .fold(0u64, |sum, f| sum.saturating_add(f.status.len));
        let maps = match input_format {
            InputFormat::NLine(lines) => planned
                .insert(nline::plan(stores, files, lines)?)
                .splits
                .len(),
            InputFormat::CombineText => planned
                .insert(combine::plan(files, combine::sizes(&conf)?))
                .splits
                .len(),
            _ => sluice_io::plan_block_splits(&files, split_size, min_split).len(),
        };
        conf.set("mapreduce.job.maps", maps.to_string());
        let small = u64::try_from(maps)
            .is_ok_and(|m| m >= MANY_SPLITS && bytes < m.saturating_mul(SMALL_SPLIT));
        if small && matches!(input_format, InputFormat::Text) {
            small_splits = Some(SmallSplits {
                splits: maps,
                bytes,
            });
        }
    }

    let part_files = part_file_format(args)?;
    let sequence_format = match part_files {
        PartFiles::Sequence(format) => Some(format),
        PartFiles::Text | PartFiles::Nothing => None,
    };
    let output_codec = super::compress::output_codec(&conf)?;
    let sides = Sides::read(args, &conf)?;
    let destination = if sequence_format.is_some() {
        Destination::SequenceFile
    } else {
        Destination::TextFile
    };
    let map_program = map_program(
        args,
        &conf,
        &input_format,
        &sides,
        (reducers == 0).then_some(destination),
        submission,
    )?;
    let map_declares = map_program.is_some() || sides.sets("stream.map.output");
    let map_kind = match &map_program {
        Some(p) => p.reader.framing.output_kind(),
        None => Kind::Text,
    };

    // From here on the job has a scratch directory, removed again if building fails.
    let (context, scratch) = make_context(args, &conf, &output, submission, stores, status)?;
    let context = Arc::new(context);
    let map_rings = map_program.as_ref().map_or(0, |p| p.shm.ring_bytes());
    let mapper = mapper_factory(map_program, &input_format, &context);
    let (stages, final_writer, ring_bytes) = if reducers == 0 {
        let writer = FinalWriter {
            emits: map_kind,
            declared: map_declares.then(|| sides.map_out.output_kind()),
        };
        (Vec::new(), writer, map_rings)
    } else {
        let reduce = reduce_stage(
            args,
            &conf,
            &sides,
            (map_kind, destination),
            reducers,
            submission,
            &context,
        )?;
        // A combiner runs while its map task's program still does.
        let rings = (map_rings + reduce.combiner_rings).max(reduce.reducer_rings);
        let writer = FinalWriter {
            emits: reduce.output_kind,
            declared: (reduce.command || sides.sets("stream.reduce.output"))
                .then(|| sides.reduce_out.output_kind()),
        };
        (vec![reduce.stage], writer, rings)
    };
    let final_kind = final_writer.emits;

    let output_format = if part_files == PartFiles::Nothing {
        OutputFormat::Discard
    } else if let Some(format) = sequence_format {
        OutputFormat::SequenceFile(sequence_output(&conf, format, final_writer)?)
    } else if final_kind == Kind::KeyOnly {
        OutputFormat::ValueOnly
    } else {
        match conf.get_or("mapreduce.output.textoutputformat.separator", "\t") {
            "\t" => OutputFormat::KeyValue,
            other => OutputFormat::KeyValueWith(other.as_bytes().to_vec()),
        }
    };
    let mut job = Job::from_factory("streaming", mapper).with_output(output_format);
    job.stages = stages;
    job.part_names = PartNames::Plain;
    job.split_order = SplitOrder::LargestFirst;
    job.lazy_output = args.lazy_output;
    job.output_codec = output_codec;
    if matches!(input_format, InputFormat::Sequence(_)) {
        job.input = sluice_api::InputFormat::SequenceFile;
    }
    // Too large to fit is too large for any budget: the job then refuses to start.
    job.memory_per_task = usize::try_from(ring_bytes).unwrap_or(usize::MAX);
    job.map_output_types = map_output_types(map_kind);

    let mut config = JobConfig::new(inputs, output)
        .with_nested_directories(nested)
        .with_stores(stores.clone())
        .with_split_size(split_size)
        .with_min_split_size(min_split)
        .with_attempts(
            conf.get_count("mapreduce.map.maxattempts", 4, 0)?.max(1),
            conf.get_count("mapreduce.reduce.maxattempts", 4, 0)?.max(1),
        );
    if let Some(plan) = planned {
        config = config.with_planned_input(plan);
    }
    Ok(StreamingJob {
        job,
        config,
        context,
        conf,
        scratch: std::sync::Mutex::new(scratch),
        small_splits,
    })
}

/// The classes Hadoop gives the map output of a mapper emitting `kind`s of objects.
fn map_output_types(kind: Kind) -> MapOutputTypes {
    let (key, value) = match kind {
        Kind::Text => (Writable::Text, Writable::Text),
        Kind::Offset => (Writable::Long, Writable::Text),
        Kind::Bytes | Kind::TypedBytes => (Writable::Bytes, Writable::Bytes),
        Kind::KeyOnly => (Writable::Text, Writable::Null),
    };
    MapOutputTypes::new(key, value)
}

/// The `-inputformat` of the job.
fn input_format(args: &StreamingArgs, conf: &mut JobConf) -> Result<InputFormat, StreamingError> {
    match args.input_format.as_deref() {
        None => Ok(InputFormat::Text),
        Some(name) if TEXT_INPUT.contains(&name) => Ok(InputFormat::Text),
        Some(name) if KEY_VALUE_INPUT.contains(&name) => {
            let separator = conf
                .get("mapreduce.input.keyvaluelinerecordreader.key.value.separator")
                .and_then(|s| s.bytes().next())
                .unwrap_or(b'\t');
            Ok(InputFormat::KeyValue(separator))
        }
        Some(name) if nline::NLINE_INPUT.contains(&name) => {
            Ok(InputFormat::NLine(nline::lines_per_map(conf)?))
        }
        Some(name) if combine::COMBINE_INPUT.contains(&name) => {
            // Refused sizes fail the job before it starts, as Hadoop's job submission does.
            combine::sizes(conf)?;
            Ok(InputFormat::CombineText)
        }
        Some(name) if name == combine::NEW_API_COMBINE_INPUT => Err(usage(format!(
            "-inputformat {name}: class {name} not org.apache.hadoop.mapred.InputFormat \
             (Hadoop's streaming job runs the old API's input formats); use {}",
            combine::COMBINE_INPUT[0]
        ))),
        Some(name) if SEQUENCE_INPUT.contains(&name) => {
            Ok(InputFormat::Sequence(SeqView::Writables))
        }
        Some(name) if SEQUENCE_TEXT_INPUT.contains(&name) => {
            Ok(InputFormat::Sequence(SeqView::AsText))
        }
        Some(name) if SEQUENCE_BINARY_INPUT.contains(&name) => {
            Ok(InputFormat::Sequence(SeqView::AsBinary))
        }
        Some(name) => Err(usage(format!(
            "-inputformat {name} is not supported: sluice reads TextInputFormat, \
             KeyValueTextInputFormat, org.apache.hadoop.mapred.lib.NLineInputFormat, \
             org.apache.hadoop.mapred.lib.CombineTextInputFormat, SequenceFileInputFormat, SequenceFileAsTextInputFormat and \
             org.apache.hadoop.mapred.SequenceFileAsBinaryInputFormat"
        ))),
    }
}

/// What the job's `-outputformat` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PartFiles {
    /// Text part files (`TextOutputFormat`, the default).
    Text,
    /// SequenceFiles, in this format.
    Sequence(SequenceFormat),
    /// Nothing: the records are dropped (`NullOutputFormat`).
    Nothing,
}

/// The `-outputformat` of the job.
fn part_file_format(args: &StreamingArgs) -> Result<PartFiles, StreamingError> {
    let Some(name) = args.output_format.as_deref() else {
        return Ok(PartFiles::Text);
    };
    if TEXT_OUTPUT.contains(&name) {
        return Ok(PartFiles::Text);
    }
    if name == NULL_OUTPUT {
        return Ok(PartFiles::Nothing);
    }
    if let Some(format) = SequenceFormat::of(name) {
        return Ok(PartFiles::Sequence(format));
    }
    let known = format!(
        "sluice writes org.apache.hadoop.mapred.TextOutputFormat, {SEQUENCE_OUTPUT} and \
         {SEQUENCE_BINARY_OUTPUT}, and drops records with {NULL_OUTPUT}"
    );
    if !name.contains('.') {
        // Hadoop looks a short -outputformat name up in its streaming package only.
        return Err(usage(format!(
            "-outputformat : class not found : {name} (Hadoop's streaming job knows output \
             formats by their full class names; {known})"
        )));
    }
    Err(usage(format!(
        "-outputformat {name} is not supported: {known} (Hadoop's streaming job runs the old \
         API's org.apache.hadoop.mapred classes)"
    )))
}

/// How records cross to and from the programs on each side of the shuffle: the framings (`-io`
/// sets all four, the `stream.*` keys override one), the separators, and which directions go
/// through shared memory (`-io shm` for all four, or `shm` as the value of one key; the framing
/// then stays the one `-io` names, text by default).
struct Sides<'c> {
    conf: &'c JobConf,
    /// `-io` names a framing.
    io_set: bool,
    map_in: Framing,
    map_out: Framing,
    reduce_in: Framing,
    reduce_out: Framing,
    map_shm: ShmSides,
    reduce_shm: ShmSides,
}

/// The value of `-io` or a `stream.*` key that asks for shared memory.
const SHM: &str = "shm";

/// Default of `sluice.shm.ring.size`.
const SHM_RING_SIZE: u64 = sluice_shm::DEFAULT_CAPACITY;

impl<'c> Sides<'c> {
    fn read(args: &StreamingArgs, conf: &'c JobConf) -> Result<Sides<'c>, StreamingError> {
        let io_shm = args.io.as_deref() == Some(SHM);
        let io_framing = args.io.as_deref().filter(|io| *io != SHM);
        // (framing, over shared memory) of one direction.
        let side = |key: &str| -> Result<(Framing, bool), StreamingError> {
            let value = conf.get(key);
            let shm = io_shm || value == Some(SHM);
            let name = value.filter(|v| *v != SHM).or(io_framing).unwrap_or("text");
            let framing = Framing::parse(name).ok_or_else(|| {
                usage(format!(
                    "unknown -io identifier '{name}' (for {key}); expected text, rawbytes, \
                     typedbytes, keyonlytext or shm"
                ))
            })?;
            Ok((framing, shm))
        };
        let capacity = conf.get_u64("sluice.shm.ring.size", SHM_RING_SIZE)?;
        if !capacity.is_power_of_two()
            || !(sluice_shm::MIN_CAPACITY..=sluice_shm::MAX_CAPACITY).contains(&capacity)
        {
            return Err(usage(format!(
                "sluice.shm.ring.size={capacity}: a ring's size must be a power of two between \
                 4096 and 1073741824 bytes"
            )));
        }
        let (map_in, map_in_shm) = side("stream.map.input")?;
        let (map_out, map_out_shm) = side("stream.map.output")?;
        let (reduce_in, reduce_in_shm) = side("stream.reduce.input")?;
        let (reduce_out, reduce_out_shm) = side("stream.reduce.output")?;
        Ok(Sides {
            conf,
            io_set: io_framing.is_some(),
            map_in,
            map_out,
            reduce_in,
            reduce_out,
            map_shm: ShmSides {
                input: map_in_shm,
                output: map_out_shm,
                capacity,
            },
            reduce_shm: ShmSides {
                input: reduce_in_shm,
                output: reduce_out_shm,
                capacity,
            },
        })
    }

    /// Whether the framing of `key`'s direction is set (by `-io` or the key itself), which
    /// makes Hadoop's streaming job declare that direction's classes.
    fn sets(&self, key: &str) -> bool {
        let io = self.io_set;
        io || self.conf.get(key).is_some_and(|v| v != SHM)
    }

    fn separator(&self, key: &str) -> Vec<u8> {
        self.conf.get_or(key, "\t").as_bytes().to_vec()
    }

    fn key_fields(&self, key: &str) -> Result<usize, StreamingError> {
        Ok(self.conf.get_count(key, 1, 0)?.max(1))
    }

    /// How sorted records of `kind` are written to a combiner or reducer.
    fn reduce_writer(&self, kind: Kind) -> RecordWriter {
        RecordWriter {
            framing: self.reduce_in,
            separator: self.separator("stream.reduce.input.field.separator"),
            ignore_key: false,
            key_kind: kind,
            value_kind: kind,
        }
    }

    /// How a combiner's or reducer's output is read.
    fn reduce_reader(&self) -> Result<RecordReader, StreamingError> {
        Ok(RecordReader {
            framing: self.reduce_out,
            separator: self.separator("stream.reduce.output.field.separator"),
            key_fields: self.key_fields("stream.num.reduce.output.key.fields")?,
        })
    }
}

/// The `-mapper` program, or `None` for Hadoop's identity mapper.
fn map_program(
    args: &StreamingArgs,
    conf: &JobConf,
    input_format: &InputFormat,
    sides: &Sides<'_>,
    destination: Option<Destination>,
    submission: &Submission,
) -> Result<Option<Arc<Program>>, StreamingError> {
    // Only a text writer leaves the key out (TextInputFormat's byte offset); the other
    // framings always send it, as Hadoop's do.
    let ignore_key = sides.map_in == Framing::Text
        && conf.get_bool(
            "stream.map.input.ignoreKey",
            matches!(input_format, InputFormat::Text),
        )?;
    let (in_key, in_value) = input_format.kinds(sides.map_in);
    let program = match args.mapper.as_deref().map(str::trim) {
        None => None,
        Some(name) if IDENTITY_MAPPERS.contains(&name) => None,
        Some(name) if looks_like_java_class(name) && !is_program(name, &args.files, submission) => {
            return Err(usage(format!(
                "-mapper {name}: Java classes cannot run in sluice (only IdentityMapper has a \
                 native equivalent); use a command"
            )))
        }
        Some(command) => Some(Arc::new(Program {
            command: shipped_program(command, &args.files),
            role: Role::Map,
            writer: RecordWriter {
                framing: sides.map_in,
                separator: sides.separator("stream.map.input.field.separator"),
                ignore_key,
                key_kind: in_key,
                value_kind: in_value,
            },
            reader: RecordReader {
                framing: sides.map_out,
                separator: sides.separator("stream.map.output.field.separator"),
                key_fields: sides.key_fields("stream.num.map.output.key.fields")?,
            },
            output: destination.unwrap_or(Destination::Shuffle),
            shm: sides.map_shm,
        })),
    };
    if program.is_none() && matches!(input_format, InputFormat::Sequence(_)) {
        return Err(usage(
            "an identity mapper over SequenceFile input is not supported: sluice's map output \
             is text; give a -mapper such as 'cat'"
                .into(),
        ));
    }
    if program.is_none()
        && matches!(
            input_format,
            InputFormat::Text | InputFormat::NLine(_) | InputFormat::CombineText
        )
    {
        return Err(usage(
            "an identity mapper needs -inputformat KeyValueTextInputFormat (with TextInputFormat, \
             NLineInputFormat or CombineTextInputFormat its keys are byte offsets, which \
             Hadoop's job fails on when it has a reducer); give a -mapper such as 'cat'"
                .into(),
        ));
    }
    Ok(program)
}

/// Makes each map task's mapper: the program's, or the identity mapper.
fn mapper_factory(
    program: Option<Arc<Program>>,
    input_format: &InputFormat,
    context: &Arc<JobContext>,
) -> sluice_api::MapperFactory {
    match program {
        Some(program) => {
            let format = input_format.clone();
            let job = Arc::clone(context);
            Arc::new(move |input: &MapInput| {
                Box::new(StreamMapper {
                    program: Arc::clone(&program),
                    input_format: format.clone(),
                    job: Arc::clone(&job),
                    input: input.clone(),
                }) as Box<dyn Mapper>
            })
        }
        None => {
            let separator = match input_format {
                InputFormat::KeyValue(s) => *s,
                InputFormat::Text
                | InputFormat::NLine(_)
                | InputFormat::CombineText
                | InputFormat::Sequence(_) => b'\t',
            };
            Arc::new(move |_: &MapInput| Box::new(IdentityMapper { separator }) as Box<dyn Mapper>)
        }
    }
}

/// Makes a reducer or combiner that runs `program`.
fn program_factory(program: Arc<Program>, context: &Arc<JobContext>) -> sluice_api::ReducerFactory {
    let job = Arc::clone(context);
    Arc::new(move |ctx: &TaskContext| {
        Box::new(StreamReducer {
            program: Arc::clone(&program),
            job: Arc::clone(&job),
            ctx: *ctx,
            runs: 0,
        }) as Box<dyn Reducer>
    })
}

/// The reduce side of a streaming job, as [`reduce_stage`] builds it.
struct ReduceStage {
    /// Combiner, reducer, partitioner and key order.
    stage: Stage,
    /// The kind of object the job's output holds.
    output_kind: Kind,
    /// The reducer is a command (not aggregate or the identity).
    command: bool,
    /// Shared memory a running combiner program holds (0 without one).
    combiner_rings: u64,
    /// Shared memory a running reducer program holds (0 without one).
    reducer_rings: u64,
}

/// The reduce stage of the job, whose input is map output of the kind given, and whose output
/// goes to the destination given.
fn reduce_stage(
    args: &StreamingArgs,
    conf: &JobConf,
    sides: &Sides<'_>,
    (map_kind, destination): (Kind, Destination),
    reducers: usize,
    submission: &Submission,
    context: &Arc<JobContext>,
) -> Result<ReduceStage, StreamingError> {
    let (mut combiner_rings, mut reducer_rings) = (0, 0);
    let reducer_spec = args.reducer.as_deref().map(str::trim);
    // Hadoop compares the name ignoring case.
    let aggregate = reducer_spec.is_some_and(|r| r.eq_ignore_ascii_case("aggregate"));
    let combine = match args.combiner.as_deref().map(str::trim) {
        // Hadoop's aggregate sets its own combiner, whatever -combiner says.
        _ if aggregate => Combine::Reducer(Arc::new(|_: &TaskContext| {
            Box::new(AggregateReducer { combine: true }) as Box<dyn Reducer>
        })),
        Some(name) if looks_like_java_class(name) && !is_program(name, &args.files, submission) => {
            return Err(usage(format!(
                "-combiner {name}: Java classes cannot run in sluice; use a command"
            )))
        }
        Some(command) => {
            combiner_rings = sides.reduce_shm.ring_bytes();
            Combine::Reducer(program_factory(
                Arc::new(Program {
                    command: shipped_program(command, &args.files),
                    role: Role::Combine,
                    writer: sides.reduce_writer(map_kind),
                    reader: sides.reduce_reader()?,
                    output: Destination::Shuffle,
                    shm: sides.reduce_shm,
                }),
                context,
            ))
        }
        None => Combine::None,
    };
    let render = (destination == Destination::TextFile).then_some(map_kind);
    let identity = move |_: &TaskContext| Box::new(IdentityReducer { render }) as Box<dyn Reducer>;
    let mut is_command = false;
    let (reducer, output_kind): (sluice_api::ReducerFactory, Kind) = match reducer_spec {
        _ if aggregate => (
            Arc::new(|_: &TaskContext| {
                Box::new(AggregateReducer { combine: false }) as Box<dyn Reducer>
            }),
            Kind::Text,
        ),
        None => (Arc::new(identity), map_kind),
        Some(name) if IDENTITY_REDUCERS.contains(&name) => (Arc::new(identity), map_kind),
        Some(name) if looks_like_java_class(name) && !is_program(name, &args.files, submission) => {
            return Err(usage(format!(
                "-reducer {name}: Java classes cannot run in sluice (IdentityReducer and \
                 aggregate have native equivalents); use a command"
            )))
        }
        Some(command) => {
            let program = Arc::new(Program {
                command: shipped_program(command, &args.files),
                role: Role::Reduce,
                writer: sides.reduce_writer(map_kind),
                reader: sides.reduce_reader()?,
                output: destination,
                shm: sides.reduce_shm,
            });
            let kind = program.reader.framing.output_kind();
            reducer_rings = program.shm.ring_bytes();
            is_command = true;
            (program_factory(program, context), kind)
        }
    };
    // Never `with_independent_keys`: a reducer program may count or buffer across keys, or
    // write at its end, so its partition is never split into key ranges.
    let stage = Stage::from_factory(reducers, reducer)
        .with_combine(combine)
        .with_partitioner(partitioner(args, conf)?)
        .with_order(key_order(conf)?);
    Ok(ReduceStage {
        stage,
        output_kind,
        command: is_command,
        combiner_rings,
        reducer_rings,
    })
}

/// `command` with its program replaced by the bare file name when the program is the path of a
/// `-file`/`-files` entry: the program then runs from the task's working directory, as Hadoop
/// runs it.
fn shipped_program(command: &str, files: &[String]) -> String {
    let trimmed = command.trim_start_matches(' ');
    for entry in files {
        let (path, name) = entry_name(entry);
        let Some(rest) = trimmed.strip_prefix(path) else {
            continue;
        };
        if (rest.is_empty() || rest.starts_with(' ')) && path != name {
            return format!("{name}{rest}");
        }
    }
    command.to_string()
}

/// The path of a `-files` entry and the name it gets in the working directory
/// (`path#name`, or the path's file name).
fn entry_name(entry: &str) -> (&str, String) {
    match entry.split_once('#') {
        Some((path, name)) => (path, name.to_string()),
        None => {
            let path = sluice_io::local_path(entry).unwrap_or_else(|_| PathBuf::from(entry));
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            (entry, name)
        }
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() || m.permissions().mode() & 0o111 != 0)
}

fn copy_executable(source: &Path, target: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::copy(source, target)?;
    std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o755))
}

/// Unpacks the `-archives` entry `entry` (the job's `index`th) into the job's scratch directory
/// and links it into the tasks' working directory under its name: the `#name` given, else the
/// archive's file name (as on a YARN cluster). A file Hadoop does not unpack (by its name, see
/// [`ArchiveKind`]) is copied as it is.
fn place_archive(
    entry: &str,
    index: usize,
    scratch: &Scratch,
    submission: &Submission,
    stores: &Stores,
) -> Result<(), StreamingError> {
    let setup = |context: String| move |source| StreamingError::Setup { context, source };
    let (path, name) = entry_name(entry);
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(usage(format!(
            "-archives {entry}: cannot tell the archive's name"
        )));
    }
    let source = localise::locate(
        "-archives",
        path,
        stores,
        submission,
        &scratch.download_dir(),
    )?;
    if !source.exists() {
        return Err(usage(format!(
            "-archives {entry}: {} does not exist",
            source.display()
        )));
    }
    let link = scratch.work_dir().join(&name);
    if link.symlink_metadata().is_ok() {
        return Err(usage(format!(
            "-archives {entry}: another entry is already named '{name}'"
        )));
    }
    // Hadoop tells the kind by the archive's own file name, not by the name it is given.
    let file_name = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // One directory per entry: two archives may share a file name.
    let dir = scratch.archive_dir().join(index.to_string());
    std::fs::create_dir_all(&dir).map_err(setup(format!("cannot create {}", dir.display())))?;
    let target = dir.join(&file_name);
    let kind = ArchiveKind::of(&file_name);
    let placed = if source.is_dir() {
        // Hadoop copies a directory given as an archive as it is.
        archive::copy_directory(&source, &target)
    } else {
        archive::unpack(&source, kind, &target)
    };
    let verb = if source.is_dir() || kind == ArchiveKind::Other {
        "copy"
    } else {
        "unpack"
    };
    placed.map_err(setup(format!(
        "-archives {entry}: cannot {verb} {}",
        source.display()
    )))?;
    std::os::unix::fs::symlink(&target, &link).map_err(setup(format!(
        "cannot link {} into the task directory",
        target.display()
    )))
}

/// Whether a `-mapper`/`-reducer`/`-combiner` value that looks like a Java class name is a
/// program after all: Hadoop only takes it as a class if it can load one, and runs it as a
/// command otherwise (`-reducer MyReducer` with a shipped script of that name).
fn is_program(spec: &str, files: &[String], submission: &Submission) -> bool {
    if files.iter().any(|entry| entry_name(entry).1 == spec) {
        return true;
    }
    super::command::resolve_program(
        spec,
        &[submission.working_dir.as_path()],
        submission.path.as_deref(),
    )
    .is_some()
}

/// The number of leading key fields `KeyFieldBasedPartitioner` partitions on, by the name of
/// Hadoop 0.20; it wins over `mapreduce.partition.keypartitioner.options` when set, as there.
const OLD_PARTITION_FIELDS: &str = "num.key.fields.for.partition";

/// The partitioner `-partitioner` names.
fn partitioner(
    args: &StreamingArgs,
    conf: &JobConf,
) -> Result<Arc<dyn Partitioner>, StreamingError> {
    match args.partitioner.as_deref().map(str::trim) {
        None => Ok(Arc::new(HashPartitioner)),
        Some(name) if HASH_PARTITIONERS.contains(&name) => Ok(Arc::new(HashPartitioner)),
        Some(name) if KEY_FIELD_PARTITIONERS.contains(&name) => {
            let (key, options) = if conf.get(OLD_PARTITION_FIELDS).is_some() {
                // Hadoop's partitioner reads the old key first, when it is set: the first N
                // fields (none: the whole key).
                let options = match conf.get_count(OLD_PARTITION_FIELDS, 0, 0)? {
                    0 => String::new(),
                    fields => format!("-k1,{fields}"),
                };
                (OLD_PARTITION_FIELDS, options)
            } else {
                let key = "mapreduce.partition.keypartitioner.options";
                (key, conf.get_or(key, "").to_string())
            };
            let spec = parse_field_spec(conf, key, &options)?;
            Ok(Arc::new(FieldPartitioner(KeyFieldPartitioner::new(spec))))
        }
        Some(name) => Err(usage(format!(
            "-partitioner {name} has no native equivalent (supported: HashPartitioner, \
             KeyFieldBasedPartitioner)"
        ))),
    }
}

/// The sort order `mapreduce.job.output.key.comparator.class` names.
fn key_order(conf: &JobConf) -> Result<KeyOrder, StreamingError> {
    match conf
        .get("mapreduce.job.output.key.comparator.class")
        .map(str::trim)
    {
        None => Ok(KeyOrder::Bytes),
        Some(name) if KEY_FIELD_COMPARATORS.contains(&name) => {
            let spec = key_field_spec(conf, "mapreduce.partition.keycomparator.options")?;
            Ok(KeyOrder::Custom(Arc::new(FieldComparator(
                KeyFieldComparator::new(spec),
            ))))
        }
        Some(name) => Err(usage(format!(
            "key comparator {name} has no native equivalent (supported: \
             org.apache.hadoop.mapred.lib.KeyFieldBasedComparator)"
        ))),
    }
}

fn key_field_spec(conf: &JobConf, options_key: &str) -> Result<KeyFieldSpec, StreamingError> {
    parse_field_spec(conf, options_key, conf.get_or(options_key, ""))
}

/// The key fields `options` (the value of `key`) name, cut at the job's key field separator.
fn parse_field_spec(
    conf: &JobConf,
    key: &str,
    options: &str,
) -> Result<KeyFieldSpec, StreamingError> {
    let separator = conf.get_or("mapreduce.map.output.key.field.separator", "\t");
    KeyFieldSpec::parse(options, separator.as_bytes())
        .map_err(|e| usage(format!("{key}={options}: {e}")))
}

/// [`KeyFieldPartitioner`] as the engine's partitioner.
struct FieldPartitioner(KeyFieldPartitioner);

impl Partitioner for FieldPartitioner {
    fn partition(&self, key: &[u8], partitions: usize) -> usize {
        self.0.partition(key, partitions)
    }
}

/// [`KeyFieldComparator`] as the engine's key order. The total form is used: the engine's
/// sorts need a consistent order, which Hadoop's comparator is not for keys lacking a field.
/// Numeric fields of keys that are not numbers are compared as Hadoop compares them, which is
/// not always consistent; the comparator says so, and the engine sorts such keys with a sort
/// that tolerates it, as Hadoop's quicksort does.
struct FieldComparator(KeyFieldComparator);

impl KeyComparator for FieldComparator {
    fn compare(&self, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
        self.0.compare_total(a, b)
    }

    fn is_total_order(&self) -> bool {
        self.0.is_total_order()
    }
}

/// The job id, working directory (with the `-files` entries), log directory and environment.
fn make_context(
    args: &StreamingArgs,
    conf: &JobConf,
    output: &Location,
    submission: &Submission,
    stores: &Stores,
    status: Arc<JobStatus>,
) -> Result<(JobContext, Scratch), StreamingError> {
    let job_id = submission.job_id.clone();
    let setup = |context: String| move |source| StreamingError::Setup { context, source };
    // Removed again if building fails (dropped unfinished).
    let root = submission
        .scratch_root
        .clone()
        .unwrap_or_else(std::env::temp_dir);
    let scratch = Scratch::create(&root, &job_id, submission.log_root.as_deref())?;
    let start_dir = submission.working_dir.clone();
    let work_dir = scratch.work_dir();
    let log_dir = scratch.log_dir();
    // Programs of the job that are shipped files: like Hadoop, make sure they can run.
    let programs: Vec<String> = [&args.mapper, &args.combiner, &args.reducer]
        .into_iter()
        .flatten()
        .filter_map(|c| {
            super::command::split_command(&shipped_program(c, &args.files))
                .into_iter()
                .next()
        })
        .collect();
    for entry in &args.files {
        let (path, name) = entry_name(entry);
        if name.is_empty() || name.contains('/') {
            return Err(usage(format!(
                "-files {entry}: cannot tell the file's name"
            )));
        }
        let source = localise::locate("-files", path, stores, submission, &scratch.download_dir())?;
        if !source.exists() {
            return Err(usage(format!(
                "-files {entry}: {} does not exist",
                source.display()
            )));
        }
        let link = work_dir.join(&name);
        if link.symlink_metadata().is_ok() {
            return Err(usage(format!(
                "-files {entry}: another entry is already named '{name}'"
            )));
        }
        if programs.contains(&name) && !is_executable(&source) {
            // Hadoop runs `chmod a+x` on a shipped program; change a copy, not the user's file.
            copy_executable(&source, &link).map_err(setup(format!(
                "cannot copy {} into the task directory",
                source.display()
            )))?;
        } else {
            std::os::unix::fs::symlink(&source, &link).map_err(setup(format!(
                "cannot link {} into the task directory",
                source.display()
            )))?;
        }
    }

    for (index, entry) in args.archives.iter().enumerate() {
        place_archive(entry, index, &scratch, submission, stores)?;
    }

    // Hadoop's local mode runs programs in the directory it was started in, so scripts and
    // files there can be named by relative paths; link that directory's entries in too
    // (`-files` entries win). A very large directory is not linked.
    if let Ok(entries) = std::fs::read_dir(&start_dir) {
        let entries: Vec<_> = entries.flatten().take(START_DIR_LINKS + 1).collect();
        if entries.len() <= START_DIR_LINKS {
            for entry in entries {
                let link = work_dir.join(entry.file_name());
                if link.symlink_metadata().is_err() {
                    let _ = std::os::unix::fs::symlink(entry.path(), link);
                }
            }
        }
    }

    // Each program run works in a directory of its own, linking to these entries.
    let work_dirs = WorkDirs::new(&work_dir, scratch.runs_dir()).map_err(setup(format!(
        "cannot lay out the programs' working directories in {}",
        scratch.runs_dir().display()
    )))?;

    let mut exported = conf.clone();
    // Hadoop names a local directory `file:/absolute/path`, others by their URI.
    let output_dir = match output.as_local_path() {
        Some(path) => {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            format!("file:{}", absolute.display())
        }
        None => output.to_string(),
    };
    exported.set("mapreduce.job.id", job_id.clone());
    exported.set_default("mapreduce.job.name", "streaming");
    exported.set("mapreduce.output.fileoutputformat.outputdir", output_dir);
    exported.set(
        "mapreduce.input.fileinputformat.inputdir",
        args.inputs.join(","),
    );
    // Hadoop's StreamJob stores each command URL-encoded.
    for (key, command) in [
        ("stream.map.streamprocessor", &args.mapper),
        ("stream.reduce.streamprocessor", &args.reducer),
        ("stream.combine.streamprocessor", &args.combiner),
    ] {
        if let Some(command) = command {
            exported.set(key, url_encode(command));
        }
    }
    let env = exported
        .entries()
        .map(|(k, v)| (env_var_name(k), v.to_string()))
        .collect();
    let timeout_ms = conf.get_u64("mapreduce.task.timeout", 600_000)?;
    let join_delay_ms = conf.get_u64("stream.joindelay.milli", 0)?;
    // The variables a cluster gives every task of one kind: the same for all of this job's
    // tasks in this process, so built once here rather than for each program started.
    let task_env = |is_map| {
        super::task_env::task_environment(&exported, is_map, Some(&work_dir), &|name| {
            std::env::var(name).ok()
        })
    };
    let (map_env, reduce_env) = (task_env(true)?, task_env(false)?);
    let context = JobContext {
        map_env,
        reduce_env,
        job_id,
        env,
        conf: exported,
        cmdenv: conf
            .get("stream.addenvironment")
            .unwrap_or_default()
            .to_string(),
        work_dir,
        work_dirs: Arc::new(work_dirs),
        start_dir,
        path_var: submission.path.clone(),
        log_dir,
        timeout: (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms)),
        join_delay: (join_delay_ms > 0).then(|| Duration::from_millis(join_delay_ms)),
        non_zero_is_failure: conf.get_bool("stream.non.zero.exit.is.failure", true)?,
        reporter_prefix: conf
            .get_or("stream.stderr.reporter.prefix", "reporter:")
            .to_string(),
        counter_limits: counter_limits(conf)?,
        // Hadoop reads it as an int: -1 (or less) leaves values whole.
        env_value_limit: match conf.get("stream.jobconf.truncate.limit") {
            None => None,
            Some(v) => {
                let limit: i64 = v.trim().parse().map_err(|_| {
                    usage(format!(
                        "-D stream.jobconf.truncate.limit={v}: expected a whole number"
                    ))
                })?;
                usize::try_from(limit).ok()
            }
        },
        status,
    };
    Ok((context, scratch))
}

/// The job's counter limits (`mapreduce.job.counters.max`, `mapreduce.job.counters.groups.max`,
/// `mapreduce.job.counters.group.name.max`, `mapreduce.job.counters.counter.name.max`; Hadoop's
/// defaults otherwise).
fn counter_limits(conf: &JobConf) -> Result<CounterLimits, StreamingError> {
    let defaults = CounterLimits::default();
    Ok(CounterLimits {
        counters: conf.get_count("mapreduce.job.counters.max", defaults.counters, 1)?,
        groups: conf.get_count("mapreduce.job.counters.groups.max", defaults.groups, 1)?,
        group_name: conf.get_count(
            "mapreduce.job.counters.group.name.max",
            defaults.group_name,
            1,
        )?,
        counter_name: conf.get_count(
            "mapreduce.job.counters.counter.name.max",
            defaults.counter_name,
            1,
        )?,
    })
}

/// `text` encoded as Java's `URLEncoder.encode(text, "UTF-8")` does: ASCII letters, digits and
/// `.-*_` unchanged, a space as `+`, every other byte of the UTF-8 as `%XX` (upper-case hex).
fn url_encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                encoded.push(char::from(byte));
            }
            b' ' => encoded.push('+'),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_url_encoded_as_java_does() {
        assert_eq!(url_encode("python3 map.py"), "python3+map.py");
        assert_eq!(url_encode("a/b & c=d~"), "a%2Fb+%26+c%3Dd%7E");
        assert_eq!(url_encode("ü*-_."), "%C3%BC*-_.");
    }

    #[test]
    fn shipped_programs_run_by_their_bare_name() {
        let files = vec!["/a/b/map.py".to_string(), "lib/r.sh#reduce".to_string()];
        assert_eq!(shipped_program("/a/b/map.py -x", &files), "map.py -x");
        assert_eq!(shipped_program("lib/r.sh", &files), "reduce");
        assert_eq!(
            shipped_program("python3 /a/b/map.py", &files),
            "python3 /a/b/map.py"
        );
        assert_eq!(shipped_program("/a/b/map.pyc", &files), "/a/b/map.pyc");
        assert_eq!(shipped_program("cat", &[]), "cat");
    }

    #[test]
    fn entries_are_named_by_fragment_or_file_name() {
        assert_eq!(entry_name("x/y.txt"), ("x/y.txt", "y.txt".to_string()));
        assert_eq!(entry_name("x/y.txt#z"), ("x/y.txt", "z".to_string()));
        assert_eq!(entry_name("file:///t/y.txt").1, "y.txt");
    }
}
