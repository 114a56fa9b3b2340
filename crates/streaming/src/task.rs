//! The streaming job's mappers, reducers and combiners: each runs one external program per
//! task (a combiner: per spill and partition), or a native stand-in for the Java classes
//! Hadoop offers (`IdentityMapper`, `IdentityReducer`, the value aggregators).

use std::io::Write as _;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::command::{resolve_program, split_command};
use super::conf::{env_var_name, JobConf};
use super::process::{input_error, run_program};
use super::program::{CounterLimits, ProgramSpec, ShmSides};
use super::protocol::{render, Framing, Kind, RecordReader, RecordWriter};
use super::task_env;
use super::work_dirs::{WorkDir, WorkDirs};
use super::{program_error, ProgramError};
use sluice_api::{
    AttemptId, Emit, ExecError, JobStatus, LineSource, MapInput, Mapper, Reducer, SortedInput,
    TaskContext, Values,
};
use sluice_hadoop::writable::WritableReader;
use sluice_hadoop::writable_type::WritableType;

/// What every task of a streaming job shares.
#[derive(Debug)]
pub(super) struct JobContext {
    /// The job id, e.g. `job_176380000000012345_0001`.
    pub(super) job_id: String,
    /// Environment variables exported from the job configuration (`mapreduce_job_reduces`...).
    /// Values with variables still in them (`${mapreduce.task.id}`) are substituted per task.
    pub(super) env: Vec<(String, String)>,
    /// The configuration `env` was exported from, for those variables.
    pub(super) conf: JobConf,
    /// The variables a cluster gives map tasks (`mapreduce.map.env`...), which their programs
    /// start with ([`task_environment`](super::task_env::task_environment)).
    pub(super) map_env: Vec<(String, String)>,
    /// The same for reduce tasks.
    pub(super) reduce_env: Vec<(String, String)>,
    /// `-cmdenv` variables as Hadoop keeps them (`stream.addenvironment`: `NAME=VALUE`
    /// words joined by spaces); they come after (and override) the configuration.
    pub(super) cmdenv: String,
    /// The job's entries (`-files`, `-archives`, the start directory's links): what every
    /// program run's own working directory links to.
    pub(super) work_dir: PathBuf,
    /// The working directories of the program runs, one each.
    pub(super) work_dirs: Arc<WorkDirs>,
    /// The directory the job was submitted from: programs are looked for there too.
    pub(super) start_dir: PathBuf,
    /// `PATH` at submission: where programs are looked for last.
    pub(super) path_var: Option<String>,
    /// Where per-attempt stderr logs go.
    pub(super) log_dir: PathBuf,
    /// Kill a program idle this long.
    pub(super) timeout: Option<Duration>,
    /// Wait this long after a program's successful exit for the end of its output.
    pub(super) join_delay: Option<Duration>,
    /// Whether a non-zero exit status fails a task.
    pub(super) non_zero_is_failure: bool,
    /// What starts a counter or status line on a program's stderr.
    pub(super) reporter_prefix: String,
    /// How many counters a program may report.
    pub(super) counter_limits: CounterLimits,
    /// The most characters of a configuration value put in a program's environment
    /// (`stream.jobconf.truncate.limit`; `None`: whole).
    pub(super) env_value_limit: Option<usize>,
    /// Live status: counters, task status lines, cancellation.
    pub(super) status: Arc<JobStatus>,
}

/// `value` with the directory `dir` replaced by `with` wherever it stands whole: followed by
/// the end, a `/` or a `:` (not inside a longer name such as `dir2`).
fn replace_dir(value: &str, dir: &str, with: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find(dir) {
        let after = &rest[at + dir.len()..];
        out.push_str(&rest[..at]);
        if after.is_empty() || after.starts_with('/') || after.starts_with(':') {
            out.push_str(with);
        } else {
            out.push_str(dir);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

impl JobContext {
    /// A working directory for one program run, of its own for as long as the value lives.
    fn take_work_dir(&self) -> Result<WorkDir, ExecError> {
        self.work_dirs.take().map_err(|source| {
            ExecError::Io(sluice_io::IoError::Write {
                path: self.work_dir.with_file_name("runs"),
                source,
            })
        })
    }
}

/// How a line of input becomes the key and value given to the mapper.
#[derive(Debug, Clone)]
pub(super) enum InputFormat {
    /// `TextInputFormat`: the key is the line's byte offset, the value the line.
    Text,
    /// `KeyValueTextInputFormat`: split at the first separator byte; without one the line is
    /// the key and the value is empty.
    KeyValue(u8),
    /// `NLineInputFormat`: records as with `TextInputFormat`, the splits of this many lines.
    NLine(NonZeroU64),
    /// `CombineTextInputFormat`: records as with `TextInputFormat`, several files a split.
    CombineText,
    /// SequenceFiles, seen as one of Hadoop's SequenceFile input formats sees them.
    Sequence(SeqView),
}

/// What a map program is given of a SequenceFile's records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SeqView {
    /// `SequenceFileInputFormat`: the `Writable`s themselves, written to the program as
    /// Hadoop's input writers write each class (`Text` and `BytesWritable` as their bytes,
    /// other classes as their `toString()` in text framing; serialised in `rawbytes`; typed in
    /// `typedbytes`).
    Writables,
    /// `SequenceFileAsTextInputFormat`: `Text`s of the key's and value's `toString()`.
    AsText,
    /// `SequenceFileAsBinaryInputFormat`: `BytesWritable`s of the serialised key and value.
    AsBinary,
}

impl SeqView {
    /// The kinds of the bytes [`SeqConvert::convert`] makes, for a program reading `framing`.
    fn kinds(self, framing: Framing) -> (Kind, Kind) {
        let kind = match (self, framing) {
            (SeqView::AsBinary, _) => Kind::Bytes,
            (SeqView::AsText, _) | (SeqView::Writables, Framing::Text | Framing::KeyOnlyText) => {
                Kind::Text
            }
            (SeqView::Writables, Framing::RawBytes) => Kind::Bytes,
            (SeqView::Writables, Framing::TypedBytes) => Kind::TypedBytes,
        };
        (kind, kind)
    }
}

/// Turns the serialised keys and values of one SequenceFile into the bytes a map program's
/// [`RecordWriter`] is given (of the kinds [`SeqView::kinds`] names).
pub(super) struct SeqConvert {
    view: SeqView,
    framing: Framing,
    key: Option<WritableType>,
    value: Option<WritableType>,
}

impl SeqConvert {
    /// The conversion for a file of these classes. A class sluice does not know can only be
    /// passed on as bytes (`SequenceFileAsBinaryInputFormat`).
    pub(super) fn new(
        view: SeqView,
        framing: Framing,
        classes: Option<&(String, String)>,
    ) -> Result<SeqConvert, ExecError> {
        let (key_class, value_class) = classes.ok_or_else(|| {
            ExecError::Config("a SequenceFile split without its header's classes".into())
        })?;
        let known = |class: &str| {
            let t = WritableType::from_class_name(class);
            if t.is_none() && view != SeqView::AsBinary {
                return Err(ExecError::user(format!(
                    "the SequenceFile holds {class}, a Writable class sluice cannot read;                      -inputformat SequenceFileAsBinaryInputFormat passes its serialised bytes"
                )));
            }
            Ok(t)
        };
        Ok(SeqConvert {
            view,
            framing,
            key: known(key_class)?,
            value: known(value_class)?,
        })
    }

    /// Converts one joined record into its key and value bytes.
    fn convert<'b>(
        &self,
        record: &[u8],
        key: &'b mut Vec<u8>,
        value: &'b mut Vec<u8>,
    ) -> Result<(&'b [u8], &'b [u8]), ExecError> {
        let (k, v) = sluice_io::seqfile::split_pair(record)
            .ok_or_else(|| ExecError::user("a malformed SequenceFile record"))?;
        self.one(self.key, k, key)?;
        self.one(self.value, v, value)?;
        Ok((key.as_slice(), value.as_slice()))
    }

    fn one(
        &self,
        t: Option<WritableType>,
        bytes: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(), ExecError> {
        out.clear();
        let bad = |e: sluice_hadoop::writable::WritableError| ExecError::user(e.to_string());
        let Some(t) = t.filter(|_| self.view != SeqView::AsBinary) else {
            out.extend_from_slice(bytes);
            return Ok(());
        };
        if self.view == SeqView::AsText {
            return t.to_text(bytes, out).map_err(bad);
        }
        let mut r = WritableReader::new(bytes);
        match (self.framing, t) {
            (Framing::Text | Framing::KeyOnlyText, WritableType::Text) => {
                out.extend_from_slice(r.read_text().map_err(bad)?);
            }
            (Framing::Text | Framing::KeyOnlyText | Framing::RawBytes, WritableType::Bytes) => {
                out.extend_from_slice(r.read_bytes_writable().map_err(bad)?);
            }
            (Framing::Text | Framing::KeyOnlyText, t) => t.to_text(bytes, out).map_err(bad)?,
            (Framing::RawBytes, t) => {
                t.check(bytes).map_err(bad)?;
                out.extend_from_slice(bytes);
            }
            (Framing::TypedBytes, t) => t.to_typed_bytes(bytes, out).map_err(bad)?,
        }
        Ok(())
    }
}

impl InputFormat {
    /// Splits `line` into (key, value), formatting an offset key into `scratch`.
    /// With `need_key` false (a text mapper that is not sent keys) the offset is not formatted.
    fn split<'l>(
        &self,
        offset: u64,
        line: &'l [u8],
        scratch: &'l mut Vec<u8>,
        need_key: bool,
    ) -> (&'l [u8], &'l [u8]) {
        match self {
            InputFormat::Text | InputFormat::NLine(_) | InputFormat::CombineText => {
                scratch.clear();
                if need_key {
                    let _ = write!(scratch, "{offset}");
                }
                (scratch.as_slice(), line)
            }
            InputFormat::KeyValue(separator) => match memchr::memchr(*separator, line) {
                Some(at) => (&line[..at], &line[at + 1..]),
                None => (line, &[]),
            },
            // Converted by `SeqConvert`, which knows the file's classes.
            InputFormat::Sequence(_) => (&[], line),
        }
    }

    /// The kinds of the key and value it produces for a program reading `framing`.
    pub(super) fn kinds(&self, framing: Framing) -> (Kind, Kind) {
        match self {
            InputFormat::Text | InputFormat::NLine(_) | InputFormat::CombineText => {
                (Kind::Offset, Kind::Text)
            }
            InputFormat::KeyValue(_) => (Kind::Text, Kind::Text),
            InputFormat::Sequence(view) => view.kinds(framing),
        }
    }
}

/// One external program of the job and how records cross its pipes.
#[derive(Debug, Clone)]
pub(super) struct Program {
    /// The command as given.
    pub(super) command: String,
    /// Map, combine or reduce, for names and the variable `stream_*`.
    pub(super) role: Role,
    /// How records are written to it.
    pub(super) writer: RecordWriter,
    /// How its output is read.
    pub(super) reader: RecordReader,
    /// Where what it writes goes: on to the shuffle, or into the job's part files.
    pub(super) output: Destination,
    /// Which of its directions go through shared memory.
    pub(super) shm: ShmSides,
}

/// Where a program's output (or a native stand-in's) goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Destination {
    /// To the next step, as the bytes the framing read.
    Shuffle,
    /// Into text part files: rendered as Hadoop's `TextOutputFormat` prints the objects.
    TextFile,
    /// Into SequenceFiles: the objects' bytes, which the engine serialises as the job's
    /// output classes say (a `keyonlytext` record's value is its `NullWritable`, empty).
    SequenceFile,
}

/// Which step of the job a program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// `-mapper`.
    Map,
    /// `-combiner`.
    Combine,
    /// `-reducer`.
    Reduce,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Map => "mapper",
            Role::Combine => "combiner",
            Role::Reduce => "reducer",
        }
    }
}

/// Hadoop's ids for a task attempt: `(task id, attempt id)`.
pub(super) fn task_ids(
    job_id: &str,
    is_map: bool,
    task: usize,
    attempt: usize,
) -> (String, String) {
    let id = AttemptId {
        job: job_id.to_string(),
        stage: usize::from(!is_map),
        task,
        attempt,
    };
    (id.task_id(), id.to_string())
}

/// `value` cut to `limit` characters as Hadoop's task cuts a configuration value for the
/// environment (`stream.jobconf.truncate.limit`): Java counts UTF-16 units, so a character
/// outside the Basic Multilingual Plane counts twice, and one that would be split is left out.
fn cut_to(value: String, limit: Option<usize>) -> String {
    let Some(limit) = limit else {
        return value;
    };
    let mut units = 0;
    for (at, c) in value.char_indices() {
        units += c.len_utf16();
        if units > limit {
            return value[..at].to_string();
        }
    }
    value
}

impl Program {
    /// `error` with the program as its context: the role and, unless the error names it
    /// already (the program's own failures do), the command.
    fn in_program(&self, error: ExecError) -> ExecError {
        let role = self.role.name();
        let names_command = match program_error(&error) {
            Some(e) => matches!(
                e,
                ProgramError::NotFound { .. }
                    | ProgramError::Spawn { .. }
                    | ProgramError::Failed { .. }
                    | ProgramError::ExitedEarly { .. }
                    | ProgramError::TimedOut { .. }
                    | ProgramError::TooManyCounters { .. }
                    | ProgramError::NotShm { .. }
                    | ProgramError::OutputNotClosed { .. }
                    | ProgramError::Shm { .. }
            ),
            _ => false,
        };
        if names_command {
            error.in_task(role)
        } else {
            error.in_task(format!("{role} '{}'", self.command))
        }
    }

    /// Everything needed to start the program for one task attempt in `work_dir`, the run's
    /// own directory; `extra` are the task's own configuration keys (`mapreduce.task.id`,
    /// `mapreduce.map.input.file`, ...).
    fn spec(
        &self,
        job: &JobContext,
        ctx: &TaskContext,
        extra: &[(&str, String)],
        run: usize,
        work_dir: &Path,
    ) -> Result<ProgramSpec, ExecError> {
        let words = split_command(&self.command);
        let Some((program, args)) = words.split_first() else {
            return Err(ProgramError::NotFound {
                command: self.command.clone(),
                program: String::new(),
            }
            .into());
        };
        let (task_id, attempt_id) = task_ids(&job.job_id, ctx.is_map, ctx.task, ctx.attempt);
        let mut per_task: Vec<(&str, String)> = vec![
            ("mapreduce.task.id", task_id),
            ("mapreduce.task.attempt.id", attempt_id.clone()),
            ("mapreduce.task.partition", ctx.task.to_string()),
            ("mapreduce.task.ismap", ctx.is_map.to_string()),
        ];
        per_task.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
        // Keys of the job that Hadoop's task sets again itself: the job's id, and on a reduce
        // task the number of map tasks. Set by the task, they are exported under their old
        // names too (below), unlike the job's other keys.
        per_task.push(("mapreduce.job.id", job.job_id.clone()));
        if !ctx.is_map {
            if let Some(maps) = job.conf.get("mapreduce.job.maps") {
                per_task.push(("mapreduce.job.maps", maps.to_string()));
            }
        }
        // The variables a cluster gives the task itself (`mapreduce.map.env`...): the
        // program inherits them, and its own variables below override them.
        let mut env = if ctx.is_map {
            job.map_env.clone()
        } else {
            job.reduce_env.clone()
        };
        // Those variables were made once for the job, naming its entries' directory where a
        // task's own is meant (`LD_LIBRARY_PATH` starts with it, `$PWD` is it): this run's.
        let (template, own) = (job.work_dir.to_string_lossy(), work_dir.to_string_lossy());
        for (_, value) in &mut env {
            if value.contains(template.as_ref()) {
                *value = replace_dir(value, &template, &own);
            }
        }
        // Programs are found in the run's own directory (which links the same entries), so
        // that a script writing beside itself writes there.
        let task_path = task_env::path(&env, work_dir);
        let path_var = task_path.as_deref().or(job.path_var.as_deref());
        let dirs = [work_dir, job.start_dir.as_path()];
        let Some(program_path) = resolve_program(program, &dirs, path_var) else {
            return Err(ProgramError::NotFound {
                command: self.command.clone(),
                program: program.clone(),
            }
            .into());
        };
        // As Hadoop's task reads its configuration: what names the task is known here.
        env.extend(job.env.iter().map(|(name, value)| {
            let value = job
                .conf
                .substitute(value, &per_task)
                .unwrap_or_else(|_| value.clone());
            (name.clone(), cut_to(value, job.env_value_limit))
        }));
        let mut add = |key: &str, value: String| {
            env.push((env_var_name(key), value.clone()));
            if let Some(old) = super::conf::deprecated_alias(key) {
                env.push((env_var_name(old), value));
            }
        };
        // -cmdenv as Hadoop's task reads it back: substituted, then cut at spaces (a value
        // ends at its first one; a word without `=` is dropped).
        let cmdenv = job
            .conf
            .substitute(&job.cmdenv, &per_task)
            .unwrap_or_else(|_| job.cmdenv.clone());
        for (key, value) in per_task {
            add(key, value);
        }
        // The text starts with the empty `HADOOP_ROOT_LOGGER=` Hadoop's job always sets.
        env.extend(super::options::split_environment(&cmdenv));
        // After -cmdenv, as in Hadoop: TMPDIR cannot be overridden that way.
        env.push(("TMPDIR".into(), std::env::temp_dir().display().to_string()));
        let log_name = if run == 0 {
            format!("{attempt_id}.{}.stderr", self.role.name())
        } else {
            format!("{attempt_id}.{}-{run}.stderr", self.role.name())
        };
        Ok(ProgramSpec {
            command: self.command.clone(),
            program: program_path,
            args: args.to_vec(),
            work_dir: work_dir.to_path_buf(),
            env,
            timeout: job.timeout,
            join_delay: job.join_delay,
            non_zero_is_failure: job.non_zero_is_failure,
            log: job.log_dir.join(log_name),
            reporter_prefix: job.reporter_prefix.clone(),
            counter_limits: job.counter_limits,
            shm: self.shm,
        })
    }

    /// Reads the program's output and emits it, as text if this program writes the job's
    /// output (rendered as Hadoop prints the kind of object its framing produces).
    fn drain(
        &self,
        stdout: &mut dyn std::io::BufRead,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let kinds = self.reader.framing.output_kind();
        let mut buf = Vec::new();
        let (mut key_text, mut value_text) = (Vec::new(), Vec::new());
        self.reader.for_each(stdout, &mut buf, |key, value| {
            match self.output {
                Destination::Shuffle => return out.emit(key, value),
                Destination::SequenceFile if kinds == Kind::KeyOnly => return out.emit(key, &[]),
                Destination::SequenceFile => return out.emit(key, value),
                Destination::TextFile => {}
            }
            match kinds {
                Kind::Text | Kind::Offset => out.emit(key, value),
                // The job writes values only (see `build`): the line is the key.
                Kind::KeyOnly => out.emit(key, key),
                Kind::Bytes | Kind::TypedBytes => {
                    key_text.clear();
                    value_text.clear();
                    render(kinds, key, &mut key_text)?;
                    render(kinds, value, &mut value_text)?;
                    out.emit(&key_text, &value_text)
                }
            }
        })
    }
}

/// A map task that pipes its split through the `-mapper` program.
pub(super) struct StreamMapper {
    /// The program.
    pub(super) program: Arc<Program>,
    /// How lines become keys and values.
    pub(super) input_format: InputFormat,
    /// The job.
    pub(super) job: Arc<JobContext>,
    /// The split.
    pub(super) input: MapInput,
}

impl Mapper for StreamMapper {
    fn map(&mut self, _offset: u64, _line: &[u8], _out: &mut dyn Emit) -> Result<(), ExecError> {
        Err(ExecError::Config(
            "a streaming mapper takes its whole split (Mapper::run)".into(),
        ))
    }

    fn run(&mut self, input: &mut dyn LineSource, out: &mut dyn Emit) -> Result<(), ExecError> {
        let ctx = TaskContext {
            is_map: true,
            task: self.input.task,
            attempt: self.input.attempt,
            stage: 1,
        };
        // Hadoop names a local file `file:/absolute/path`.
        let file = match self.input.location.as_local_path() {
            Some(path) => {
                let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
                format!("file:{}", path.display())
            }
            None => self.input.location.to_string(),
        };
        let extra = [
            ("mapreduce.map.input.file", file),
            ("mapreduce.map.input.start", self.input.start.to_string()),
            ("mapreduce.map.input.length", self.input.length.to_string()),
        ];
        let work_dir = self.job.take_work_dir()?;
        let spec = self
            .program
            .spec(&self.job, &ctx, &extra, 0, work_dir.path())?;
        let writer = &self.program.writer;
        let format = &self.input_format;
        let seq = match format {
            InputFormat::Sequence(view) => Some(SeqConvert::new(
                *view,
                writer.framing,
                self.input.record_classes.as_ref(),
            )?),
            _ => None,
        };
        let need_key = !writer.ignore_key;
        // Hadoop's streaming map runner reads a program's output from the start, whether or
        // not the task has records: a program that got no input still has its output written
        // (unlike a reduce program's, see `StreamReducer`).
        let outcome = run_program(
            &spec,
            &self.job.status,
            |stdin| {
                let (mut key_buf, mut value_buf, mut scratch) =
                    (Vec::new(), Vec::new(), Vec::new());
                let mut send = |offset: u64, line: &[u8]| -> Result<(), ExecError> {
                    let (key, value) = match &seq {
                        Some(seq) => seq.convert(line, &mut key_buf, &mut value_buf)?,
                        None => format.split(offset, line, &mut key_buf, need_key),
                    };
                    writer
                        .write(stdin.writer(), key, value, &mut scratch)
                        .map_err(input_error)
                };
                while let Some((offset, line)) = input.next_line()? {
                    send(offset, line)?;
                }
                Ok(())
            },
            |stdout| self.program.drain(stdout, out),
        )
        .map_err(|e| self.program.in_program(e))?;
        self.job.status.add_user_counters(&ctx, &outcome.counters);
        Ok(())
    }
}

/// A reduce task (or a combiner run) that pipes its sorted input through a program.
pub(super) struct StreamReducer {
    /// The program.
    pub(super) program: Arc<Program>,
    /// The job.
    pub(super) job: Arc<JobContext>,
    /// The task.
    pub(super) ctx: TaskContext,
    /// Runs so far (a combiner runs once per spill and partition).
    pub(super) runs: usize,
}

impl Reducer for StreamReducer {
    fn reduce(
        &mut self,
        _key: &[u8],
        _values: &mut Values<'_>,
        _out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        Err(ExecError::Config(
            "a streaming reducer takes its whole input (Reducer::run)".into(),
        ))
    }

    fn run(&mut self, input: &mut dyn SortedInput, out: &mut dyn Emit) -> Result<(), ExecError> {
        let work_dir = self.job.take_work_dir()?;
        let spec = self
            .program
            .spec(&self.job, &self.ctx, &[], self.runs, work_dir.path())?;
        self.runs += 1;
        let writer = &self.program.writer;
        // Hadoop reads a reduce program's output from its first record on: without input, the
        // program runs but its output is dropped.
        let has_input = input.advance()?;
        let mut discard = Discard;
        let out: &mut dyn Emit = if has_input { out } else { &mut discard };
        let outcome = run_program(
            &spec,
            &self.job.status,
            |stdin| {
                let mut scratch = Vec::new();
                let mut more = has_input;
                while more {
                    writer
                        .write(stdin.writer(), input.key(), input.value(), &mut scratch)
                        .map_err(input_error)?;
                    more = input.advance()?;
                }
                Ok(())
            },
            |stdout| self.program.drain(stdout, out),
        )
        .map_err(|e| self.program.in_program(e))?;
        self.job
            .status
            .add_user_counters(&self.ctx, &outcome.counters);
        Ok(())
    }
}

/// Drops what it is given.
struct Discard;

impl Emit for Discard {
    fn emit(&mut self, _key: &[u8], _value: &[u8]) -> Result<(), ExecError> {
        Ok(())
    }
}

/// Hadoop's `IdentityMapper` over `KeyValueTextInputFormat`: the key and value as read.
pub(super) struct IdentityMapper {
    /// The separator of key and value in a line.
    pub(super) separator: u8,
}

impl Mapper for IdentityMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        match memchr::memchr(self.separator, line) {
            Some(at) => out.emit(&line[..at], &line[at + 1..]),
            None => out.emit(line, &[]),
        }
    }
}

/// Hadoop's `IdentityReducer`: every value of every key, unchanged — printed as Hadoop prints
/// the map output's kind of object.
pub(super) struct IdentityReducer {
    /// The kind of the map output, to print it in text part files; `None` passes it on as
    /// it is (SequenceFile output).
    pub(super) render: Option<Kind>,
}

impl Reducer for IdentityReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let Some(kind) = self.render else {
            while let Some(value) = values.next_value()? {
                out.emit(key, value)?;
            }
            return Ok(());
        };
        let (mut key_text, mut value_text) = (Vec::new(), Vec::new());
        render(kind, key, &mut key_text)?;
        while let Some(value) = values.next_value()? {
            match kind {
                Kind::KeyOnly => out.emit(key, key)?,
                Kind::Text | Kind::Offset => out.emit(key, value)?,
                Kind::Bytes | Kind::TypedBytes => {
                    value_text.clear();
                    render(kind, value, &mut value_text)?;
                    out.emit(&key_text, &value_text)?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_replaced_only_where_it_stands_whole() {
        assert_eq!(
            replace_dir(
                "job/files:job/files/lib:job/filesystem:opt",
                "job/files",
                "job/runs/3"
            ),
            "job/runs/3:job/runs/3/lib:job/filesystem:opt"
        );
        assert_eq!(replace_dir("job/files", "job/files", "run"), "run");
        assert_eq!(replace_dir("none", "job/files", "run"), "none");
    }

    #[test]
    fn task_ids_follow_hadoop() {
        let (task, attempt) = task_ids("job_123_0001", true, 3, 1);
        assert_eq!(task, "task_123_0001_m_000003");
        assert_eq!(attempt, "attempt_123_0001_m_000003_1");
        let (task, _) = task_ids("job_123_0001", false, 12, 0);
        assert_eq!(task, "task_123_0001_r_000012");
    }

    /// What Hadoop's input writers send for an `IntWritable` key and a `Text` value (the
    /// differential cases `seqfile-input-*` run the same through Hadoop).
    #[test]
    #[allow(clippy::unwrap_used)]
    fn sequence_file_records_are_converted_per_framing() {
        let classes = (
            "org.apache.hadoop.io.IntWritable".to_string(),
            "org.apache.hadoop.io.Text".to_string(),
        );
        let mut record = Vec::new();
        sluice_io::seqfile::join_pair(&(-7i32).to_be_bytes(), b"\x02hi", &mut record).unwrap();
        let convert = |view, framing| {
            let c = SeqConvert::new(view, framing, Some(&classes)).unwrap();
            let (mut k, mut v) = (Vec::new(), Vec::new());
            let (k, v) = c.convert(&record, &mut k, &mut v).unwrap();
            (k.to_vec(), v.to_vec())
        };
        // TextInputWriter: toString() of the int, the Text's bytes.
        assert_eq!(
            convert(SeqView::Writables, Framing::Text),
            (b"-7".to_vec(), b"hi".to_vec())
        );
        // RawBytesInputWriter: each Writable's serialised bytes.
        assert_eq!(
            convert(SeqView::Writables, Framing::RawBytes),
            (vec![0xff, 0xff, 0xff, 0xf9], b"\x02hi".to_vec())
        );
        // TypedBytesInputWriter: a typed int (code 3) and a string (code 7).
        assert_eq!(
            convert(SeqView::Writables, Framing::TypedBytes),
            (
                vec![3, 0xff, 0xff, 0xff, 0xf9],
                vec![7, 0, 0, 0, 2, b'h', b'i']
            )
        );
        // SequenceFileAsBinaryInputFormat: the serialised bytes whatever the framing.
        assert_eq!(
            convert(SeqView::AsBinary, Framing::Text),
            (vec![0xff, 0xff, 0xff, 0xf9], b"\x02hi".to_vec())
        );
        // An unknown class is only readable as bytes.
        let unknown = ("com.example.Mine".to_string(), classes.1.clone());
        assert!(SeqConvert::new(SeqView::Writables, Framing::Text, Some(&unknown)).is_err());
        assert!(SeqConvert::new(SeqView::AsBinary, Framing::Text, Some(&unknown)).is_ok());
    }

    #[test]
    fn input_formats_split_lines() {
        let mut scratch = Vec::new();
        let (k, v) = InputFormat::Text.split(42, b"a\tb", &mut scratch, true);
        assert_eq!((k, v), (&b"42"[..], &b"a\tb"[..]));
        let kv = InputFormat::KeyValue(b'\t');
        assert_eq!(
            kv.split(0, b"a\tb\tc", &mut scratch, true),
            (&b"a"[..], &b"b\tc"[..])
        );
        assert_eq!(
            kv.split(0, b"abc", &mut scratch, true),
            (&b"abc"[..], &b""[..])
        );
    }
}
