//! `sluice`: run MapReduce jobs natively on one machine.
//!
//! This binary only parses arguments, shows progress and reports; the work is done by
//! `sluice-exec`. Errors are printed with their whole chain of context, and the exit status is
//! 0 on success, 1 when a job fails, 2 for usage errors (malformed or impossible options).

mod bench;
mod cluster;
mod compression;
mod console;
mod dfsio;
mod formats;
mod fs;
mod gen;
mod gen_graph;
mod iterate;
mod jar;
mod progress;
mod random;
mod randomwriter;
mod seqsort;
mod size;
mod stores;
mod streaming;
mod tasks;
mod tera;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Args, Parser, Subcommand};
use sluice_api::{Job, JobConfig, JobReport, JobStatus};
use sluice_exec::run_job;
use sluice_format::Codec;
use sluice_jobs as jobs;
use sluice_spec::JobSpec;

use crate::size::{human_bytes, parse_size};

/// A native MapReduce engine: runs Hadoop-style jobs on one machine, fast, within a memory budget.
///
/// `sluice --config DIR COMMAND ...` reads the site's configuration from DIR, as
/// `HADOOP_CONF_DIR` names it (and as `hadoop --config DIR` takes it).
#[derive(Parser)]
#[command(name = "sluice", version, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a built-in job.
    #[command(subcommand)]
    Run(RunJob),
    /// Generate deterministic test data.
    #[command(subcommand)]
    Gen(GenData),
    /// Run a Hadoop Streaming job with Hadoop's own options (`sluice streaming -help`).
    #[command(disable_help_flag = true)]
    Streaming {
        /// Hadoop Streaming's arguments: generic options (-D, -files), then -input, -output,
        /// -mapper, -reducer, ...
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run Hadoop Streaming's jar, or an example of Hadoop's examples jar, as `hadoop jar`
    /// does.
    ///
    /// For wrappers and scripts that build `$HADOOP_CMD jar JAR ...` commands: point them at
    /// sluice. `sluice jar hadoop-streaming*.jar ARGS` is `sluice streaming ARGS`; `sluice jar
    /// hadoop-mapreduce-examples*.jar PROGRAM [-D key=value ...] ARGS` runs wordcount, grep,
    /// sort, terasort, teragen or teravalidate as `sluice run` does, and randomwriter or
    /// randomtextwriter as `sluice gen` does, taking Hadoop's arguments; `sluice jar
    /// hadoop-mapreduce-client-jobclient*-tests.jar TestDFSIO ARGS` is `sluice run dfsio`. No
    /// jar is read or needed at that path.
    #[command(disable_help_flag = true)]
    Jar {
        /// The jar, by its file name (in any directory): `hadoop-streaming*.jar`,
        /// `hadoop-mapreduce-examples*.jar` or `hadoop-mapreduce-client-jobclient*-tests.jar`.
        #[arg(allow_hyphen_values = true)]
        jar: String,
        /// The jar's arguments, as `hadoop jar` takes them.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Run a command of Hadoop's `hadoop fs` shell on any store sluice knows (`sluice fs
    /// -help`): -rm, -mkdir, -put, -get, -getmerge, -cat, -text, -tail, -ls, -du, -count,
    /// -stat, -cp, -mv, -test, -touchz.
    ///
    /// For scripts and wrappers that run `$HADOOP_CMD fs ...` around their jobs (clearing an
    /// output, staging input, reading results): Hadoop's options, messages and exit statuses.
    #[command(disable_help_flag = true, visible_alias = "dfs")]
    Fs {
        /// Generic options (-D, -fs), then the command and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Print the version of Hadoop whose command lines and outputs sluice follows, as `hadoop
    /// version` prints its own (wrappers read the first line), then sluice's own version.
    Version,
    /// Run a suite of workloads (wordcount, grep, sort, terasort, pagerank, ...) at a chosen
    /// size, check every output against an independent reference, and write a JSON report and
    /// an HTML page with plots of where the time went.
    Bench(bench::BenchArgs),
    /// Run a worker of a cluster: it runs the tasks of jobs given `--cluster
    /// workers=HOST:PORT,...` by coordinators that know the cluster's secret.
    Worker(cluster::WorkerArgs),
    /// Write a new cluster secret to FILE (readable by its owner only): give it to the workers
    /// (`--secret-file`) and to the jobs that use them.
    Secret {
        /// The file to create; it must not exist.
        file: PathBuf,
    },
    /// Internal: kills the streaming programs of process PARENT left running when it ends
    /// (announced on standard input).
    #[command(name = "__reap", hide = true)]
    Reap {
        /// The process whose programs these are (for the message).
        parent: u32,
        /// The value of `SLUICE_REAPER_TOKEN` in its programs' environment.
        token: String,
    },
    /// Internal: the watcher that cleans up after a job killed while writing to HDFS or S3.
    #[cfg(feature = "remote")]
    #[command(name = "__cleanup", hide = true)]
    Cleanup {
        /// The job's journal.
        journal: PathBuf,
    },
}

#[derive(Subcommand)]
enum RunJob {
    /// Count words, split exactly as Hadoop's WordCount does (on space, tab, newline, carriage
    /// return and form feed; no other byte separates words). Output: `word<TAB>count` lines
    /// sorted by word bytes.
    ///
    /// Over SequenceFiles (RandomTextWriter's output; see --input-format) it counts the words
    /// of each record's Text value. With --output-format sequencefile (or -D
    /// mapreduce.job.outputformat.class=...SequenceFileOutputFormat, as HiBench runs it) it
    /// writes SequenceFiles of Text words and IntWritable counts, compressed as -D
    /// mapreduce.output.fileoutputformat.compress and its type and codec keys say.
    Wordcount {
        #[command(flatten)]
        text_input: formats::TextInputArgs,
        /// What the output is: text (`word<TAB>count` lines) or sequencefile. auto: text
        /// unless -D mapreduce.job.outputformat.class names SequenceFileOutputFormat.
        #[arg(long, value_enum, default_value = "auto")]
        output_format: formats::OutputFormatArg,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Count every match of a regular expression, like Hadoop's Grep example. Output: one file of
    /// `count<TAB>match` lines by decreasing count, ties by match bytes.
    Grep {
        /// The regular expression (Rust regex syntax, matched against the bytes of each line,
        /// unless --regex-syntax java).
        #[arg(long, short = 'e')]
        pattern: String,
        /// The pattern's syntax: rust (Rust's regex crate, matched against bytes), or java
        /// (Java's java.util.regex, as Hadoop's grep example takes it: \w, \d, \s and the POSIX
        /// classes are ASCII, `.` stops at Java's line terminators, lines that are not UTF-8
        /// are matched as Java decodes them; possessive quantifiers, lookaround and back
        /// references are refused).
        #[arg(long, value_enum, default_value = "rust")]
        regex_syntax: RegexSyntax,
        /// Count this capture group instead of the whole match.
        #[arg(long, default_value_t = 0)]
        group: usize,
        #[command(flatten)]
        text_input: formats::TextInputArgs,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Sort `key<TAB>value` lines by key (bytes before the first tab; a line without a tab is
    /// all key). Lines are output unchanged; equal keys keep input order.
    ///
    /// Given SequenceFiles (found by their first bytes, `SEQ`, or with --input-format
    /// sequencefile), it is Hadoop's `sort` example, the benchmark run on `gen randomwriter`
    /// output: part-r-NNNNN SequenceFiles of the input's key and value classes (from the
    /// files' headers, which must all agree), each sorted by the key class's comparator
    /// (Text, BytesWritable: unsigned bytes after the length; Int/Long/VInt/VLongWritable:
    /// signed numbers; BooleanWritable), keys spread by Hadoop's HashPartitioner. Values of
    /// any class are copied unchanged. The output is compressed as Hadoop's
    /// SequenceFileOutputFormat compresses it when -D mapreduce.output.fileoutputformat.compress
    /// is true: RECORD (or ...compress.type=BLOCK) with DefaultCodec (or ...compress.codec).
    Sort {
        /// What the input is: text lines or SequenceFiles. auto: SequenceFiles if -D
        /// mapreduce.job.inputformat.class names SequenceFileInputFormat or the first
        /// non-empty, uncompressed input file starts with `SEQ` and a version byte.
        #[arg(long, value_enum, default_value = "auto")]
        input_format: formats::InputFormatArg,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// For each word, list the input files that contain it. Output: `word<TAB>path,path,...`
    /// with paths sorted and distinct.
    Invertedindex {
        #[command(flatten)]
        text_input: formats::TextInputArgs,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Write the sort benchmark's input: 100-byte rows exactly as Hadoop's TeraGen writes them
    /// (same rows for the same row numbers), in part-m-NNNNN files.
    Teragen(tera::TeraGenArgs),
    /// Sort the sort benchmark's 100-byte rows, as Hadoop's TeraSort does: a sample of the input
    /// picks reducer boundaries, so that the part files concatenate into one sorted sequence
    /// (by the 10-byte key; equal keys by the rest of the row). Rows are written unchanged.
    /// Prints the checksum of the rows read, to compare with teragen's and teravalidate's.
    Terasort {
        /// Rows to sample (from up to 100 splits spread over the input) for the reducer
        /// boundaries.
        #[arg(long, default_value_t = jobs::DEFAULT_SAMPLE_SIZE, value_parser = at_least_one)]
        sample_size: usize,
        #[command(flatten)]
        common: CommonArgs,
    },
    /// Check that TeraSort output is sorted within and across its part files; count rows and
    /// duplicate keys; print the checksum (equal to teragen's if no row was lost or changed).
    /// Writes Hadoop TeraValidate's report; exits 1 if the rows are out of order.
    Teravalidate(tera::TeraValidateArgs),
    /// Hadoop's TestDFSIO: write (--write) or read back (--read) --files files of --size bytes
    /// each, in parallel, through sluice's stores (local, HDFS, S3), and report throughput
    /// and IO rates as TestDFSIO does (printed, and appended to --result-file).
    Dfsio(dfsio::DfsioArgs),
    /// PageRank of an edge list (`src<TAB>dst` lines), by power iteration: damping 0.85,
    /// the rank of vertices without out-edges spread over all vertices. Output:
    /// `vertex<TAB>rank` lines by vertex id. On this machine only.
    Pagerank(iterate::PageRankArgs),
    /// Connected components of an edge list taken as undirected. Output: `vertex<TAB>label`
    /// lines, the label being the smallest vertex id of the component. On this machine only.
    ConnectedComponents(iterate::ComponentsArgs),
    /// k-means clustering of points (numbers separated by commas or spaces, one point a
    /// line), from the first k points as initial centres. Output: `centre<TAB>x1,x2,...`.
    /// On this machine only.
    Kmeans(iterate::KmeansArgs),
}

/// Options every job takes.
#[derive(Args)]
pub(crate) struct CommonArgs {
    /// Input files, directories (read recursively; names starting with `_` or `.` are skipped)
    /// or glob patterns: local paths, file:// URIs, hdfs://namenode:port/path or
    /// s3://bucket/prefix; `{a,b}` stands for each alternative, as in Hadoop. Repeat or
    /// separate with commas (outside `{}`).
    #[arg(
        long,
        short = 'i',
        required_unless_present = "input_path",
        num_args = 1..,
        value_parser = parse_input_list
    )]
    input: Vec<InputList>,
    /// One input location, never split at commas: what `sluice jar` gives for the examples
    /// jar's programs that take each argument as one path (Hadoop's `addInputPath`).
    #[arg(long, hide = true, value_parser = parse_any_location)]
    input_path: Vec<String>,
    /// Output directory (local, file://, hdfs:// or s3://); must not exist. Written
    /// atomically: it appears, with `_SUCCESS`, only if the job succeeds.
    #[arg(long, short = 'o', value_parser = parse_any_location)]
    output: String,
    /// A Hadoop-style setting, as Hadoop's users give it: -D fs.defaultFS=hdfs://nn:8020,
    /// -D fs.s3a.endpoint=http://host:9000, -D sluice.store.timeout=SECONDS. Repeatable;
    /// HADOOP_CONF_DIR's core-site.xml and hdfs-site.xml are read first.
    #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = stores::parse_define)]
    define: Vec<(String, String)>,
    /// Number of reduce partitions (part files): no more than the memory budget can keep track
    /// of (each running task's share holds 128 bytes per partition) [default: -D
    /// mapreduce.job.reduces (or mapred.reduce.tasks) as Hadoop's users give it, else 1].
    #[arg(long, short = 'r', value_parser = at_least_one)]
    reducers: Option<usize>,
    /// Memory budget for all buffers of the job, e.g. 512MiB, 2GiB. Beyond it, data spills to disk
    /// [default: -D sluice.memory, else 1GiB].
    #[arg(long, short = 'm', value_parser = parse_size_arg)]
    memory: Option<u64>,
    /// Worker threads, at most 4096 [default: -D sluice.threads, else the number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Input split (bytes of a file one map task reads) [default: 32MiB for local files and
    /// S3 objects; HDFS files are cut at their block size, as Hadoop does].
    #[arg(long, value_parser = parse_size_arg)]
    split_size: Option<u64>,
    /// Compression of spill files: none, lz4 or zstd[:LEVEL] [default: lz4; none for
    /// terasort, whose random keys compress poorly: measured faster without].
    #[arg(long)]
    spill_codec: Option<Codec>,
    /// Split a reduce partition holding at least this many bytes (its records, encoded and
    /// uncompressed) into key ranges reduced at once on the threads other reduce tasks leave
    /// free, for jobs whose reducers allow it (wordcount, sort, grep's output, invertedindex,
    /// terasort); `off` never splits. The output is the same either way.
    #[arg(long, value_name = "SIZE|off", default_value = "64MiB", value_parser = parse_split_size)]
    reduce_split: SplitSize,
    /// Directory for spill files, or several, one per local disk (DIR,DIR,...: the files go
    /// to them in turn, passing over a disk with less than 1 GiB left while another has more)
    /// [default: beside the output directory].
    #[arg(long, value_name = "DIR", value_parser = parse_location, value_delimiter = ',')]
    spill_dir: Vec<PathBuf>,
    /// Run on a cluster: workers=HOST:PORT[,HOST:PORT...] (workers started with `sluice
    /// worker`), or yarn[:N] (N workers in YARN containers, default 2; HADOOP_CONF_DIR says
    /// where YARN is) [default: this machine]. With yarn, --memory and --threads are each
    /// worker's; started workers use what they were started with (`sluice worker --memory
    /// --threads --scratch`).
    #[arg(long, value_parser = cluster::parse_cluster)]
    cluster: Option<cluster::ClusterTarget>,
    /// The cluster's secret, the file the workers were started with [default:
    /// $SLUICE_SECRET_FILE].
    #[arg(long, value_parser = parse_location)]
    secret_file: Option<PathBuf>,
    /// Write the counters and timings as JSON to this file.
    #[arg(long, value_parser = parse_location)]
    report: Option<PathBuf>,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// The memory budget of a job when `--memory` does not say.
const DEFAULT_MEMORY: u64 = 1 << 30;

impl CommonArgs {
    /// The `--input` locations, in order, comma lists split, then the `--input-path` ones.
    pub(crate) fn inputs(&self) -> Vec<String> {
        self.input
            .iter()
            .flat_map(|list| list.0.clone())
            .chain(self.input_path.iter().cloned())
            .collect()
    }

    /// The memory budget: `--memory`, else `-D sluice.memory` (as `sluice streaming` takes
    /// it, so that one wrapper can drive both), else [`DEFAULT_MEMORY`].
    pub(crate) fn memory(&self) -> Result<u64> {
        if let Some(memory) = self.memory {
            return Ok(memory);
        }
        match self.defined("sluice.memory") {
            Some(text) => parse_size(text.trim())
                .map_err(|e| UsageError(format!("-D sluice.memory={text}: {e}")).into()),
            None => Ok(DEFAULT_MEMORY),
        }
    }

    /// The task threads: `--threads`, else `-D sluice.threads` (as `sluice streaming` takes
    /// it), else the number of cores.
    pub(crate) fn threads(&self) -> Result<usize> {
        if let Some(threads) = self.threads {
            return Ok(threads);
        }
        match self.defined("sluice.threads") {
            Some(text) => thread_count(text.trim()).map_err(|e| {
                UsageError(format!(
                    "-D sluice.threads={text}: expected a number from 1 to {MAX_THREADS}: {e}"
                ))
                .into()
            }),
            None => Ok(default_threads()),
        }
    }

    /// How many times a map and a reduce task may run: `-D mapreduce.map.maxattempts` and
    /// `mapreduce.reduce.maxattempts` (or their old names), else 4 on a cluster, as Hadoop's
    /// default — a task that failed on one worker (a full disk, a lost connection) may succeed
    /// on another — and 1 on this machine, where a built-in job's task fails the same way again.
    fn attempts(&self) -> Result<(usize, usize)> {
        let default = if self.cluster.is_some() { 4 } else { 1 };
        let attempts = |key: &str, old: &str| -> Result<usize> {
            let Some(text) = self.defined(key).or_else(|| self.defined(old)) else {
                return Ok(default);
            };
            text.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    UsageError(format!(
                        "-D {key}={text}: expected a whole number of at least 1"
                    ))
                    .into()
                })
        };
        Ok((
            attempts("mapreduce.map.maxattempts", "mapred.map.max.attempts")?,
            attempts("mapreduce.reduce.maxattempts", "mapred.reduce.max.attempts")?,
        ))
    }

    /// What the job does with directories inside input directories: reads their files
    /// (sluice's default, and Hadoop's with `...input.dir.recursive=true`), or, with
    /// `-D mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs=true`,
    /// leaves them out as Hadoop does.
    fn nested_directories(&self) -> Result<sluice_io::NestedDirectories> {
        let flag = |key: &str| -> Result<bool> {
            match self.defined(key).map(str::trim) {
                None => Ok(false),
                Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
                Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
                Some(v) => Err(UsageError(format!("-D {key}={v}: expected true or false")).into()),
            }
        };
        let recursive = flag("mapreduce.input.fileinputformat.input.dir.recursive")?
            || flag("mapred.input.dir.recursive")?;
        let ignore = flag("mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs")?;
        Ok(if ignore && !recursive {
            sluice_io::NestedDirectories::Skip
        } else {
            sluice_io::NestedDirectories::Read
        })
    }

    /// The last `-D key=VALUE`'s value, unless empty (`-D key=` unsets it).
    fn defined(&self, key: &str) -> Option<&str> {
        self.define
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, value)| value.as_str())
            .filter(|value| !value.trim().is_empty())
    }

    /// Says which options started workers do not take from the job (they use their own), so
    /// that a budget or directory given for them is not silently ignored.
    fn warn_options_workers_ignore(&self) {
        if !matches!(self.cluster, Some(cluster::ClusterTarget::Workers(_))) {
            return;
        }
        for (given, option, own) in [
            (self.memory.is_some(), "--memory", "--memory"),
            (
                self.defined("sluice.memory").is_some(),
                "-D sluice.memory",
                "--memory",
            ),
            (self.threads.is_some(), "--threads", "--threads"),
            (
                self.defined("sluice.threads").is_some(),
                "-D sluice.threads",
                "--threads",
            ),
            (!self.spill_dir.is_empty(), "--spill-dir", "--spill-dirs"),
        ] {
            if given {
                eprintln!(
                    "sluice: warning: {option} is not used with --cluster workers=...: each \
                     worker uses its own (sluice worker {own})"
                );
            }
        }
    }

    /// Refuses reducers that the memory budget cannot keep track of before anything is read,
    /// allocated or created (terasort's sample and boundaries, say); the job's start checks
    /// the same.
    pub(crate) fn check(&self) -> Result<()> {
        formats::refuse_unhonoured(&self.define).map_err(|e| UsageError(format!("{e}")))?;
        let memory = usize::try_from(self.memory()?).context("--memory is too large")?;
        let threads = self.threads()?;
        let reducers = self.reducers()?;
        sluice_exec::check_reducers(reducers, memory, threads)
            .map_err(|e| UsageError(format!("--reducers {reducers}: {e}")).into())
    }

    /// The number of reducers: `--reducers`, else Hadoop's `-D mapreduce.job.reduces` (or its
    /// old name `mapred.reduce.tasks`; wrappers built for Hadoop pass it so), else 1.
    pub(crate) fn reducers(&self) -> Result<usize> {
        if let Some(reducers) = self.reducers {
            return Ok(reducers);
        }
        let Some((key, value)) = self
            .define
            .iter()
            .rev()
            .find(|(key, _)| key == "mapreduce.job.reduces" || key == "mapred.reduce.tasks")
        else {
            return Ok(1);
        };
        match value.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            Ok(_) => Err(UsageError(format!(
                "-D {key}={value}: sluice's built-in jobs need at least one reducer"
            ))
            .into()),
            Err(_) => Err(UsageError(format!("-D {key}={value}: not a number of reducers")).into()),
        }
    }
}

impl Command {
    /// The command's `-D` settings, if it takes any. Streaming keeps its own (Hadoop's
    /// generic options, parsed by `sluice_streaming`).
    fn defines_mut(&mut self) -> Option<&mut Vec<(String, String)>> {
        let common = match self {
            Command::Run(job) => match job {
                RunJob::Wordcount { common, .. }
                | RunJob::Grep { common, .. }
                | RunJob::Sort { common, .. }
                | RunJob::Invertedindex { common, .. }
                | RunJob::Terasort { common, .. } => common,
                RunJob::Pagerank(args) => &mut args.common,
                RunJob::ConnectedComponents(args) => &mut args.common,
                RunJob::Kmeans(args) => &mut args.common,
                RunJob::Teragen(args) => return Some(&mut args.define),
                RunJob::Teravalidate(args) => return Some(&mut args.define),
                RunJob::Dfsio(args) => return Some(&mut args.define),
            },
            Command::Gen(data) => {
                return Some(match data {
                    GenData::Text { define, .. } => define,
                    GenData::Random(args) => &mut args.define,
                    GenData::Graph(args) => &mut args.out.define,
                    GenData::Points(args) => &mut args.out.define,
                    GenData::Randomwriter(args) | GenData::Randomtextwriter(args) => {
                        &mut args.define
                    }
                })
            }
            Command::Streaming { .. }
            | Command::Fs { .. }
            | Command::Version
            | Command::Jar { .. }
            | Command::Bench(_)
            | Command::Worker(_)
            | Command::Secret { .. }
            | Command::Reap { .. } => return None,
            #[cfg(feature = "remote")]
            Command::Cleanup { .. } => return None,
        };
        Some(&mut common.define)
    }
}

#[derive(Subcommand)]
enum GenData {
    /// A text corpus: lines of words drawn from a Zipf-distributed vocabulary.
    Text {
        /// Total size, e.g. 1GiB (whole lines: files end at the first line past their share).
        #[arg(long, value_parser = parse_size_arg)]
        size: u64,
        /// Output directory (local, file://, hdfs:// or s3://); must not exist. Written
        /// atomically: it appears, with `_SUCCESS`, only once every file is written.
        #[arg(long, short = 'o', value_parser = parse_any_location)]
        output: String,
        /// A Hadoop-style setting (-D fs.defaultFS=hdfs://nn:8020, ...), as for `sluice run`.
        #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = stores::parse_define)]
        define: Vec<(String, String)>,
        /// Number of files [default: one per 64 MiB, at least 1].
        #[arg(long, value_parser = file_count)]
        files: Option<usize>,
        /// Seed: the same seed, size and file count give the same bytes.
        #[arg(long, default_value_t = 42)]
        seed: u64,
        /// Print nothing but errors.
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Files of pseudo-random bytes, on any store (local, HDFS, S3), like Hadoop's
    /// RandomWriter: part-m-NNNNN files, then _SUCCESS.
    Random(random::RandomArgs),
    /// An R-MAT graph (Graph500's parameters) as an edge list of `src<TAB>dst` lines.
    Graph(gen_graph::GraphArgs),
    /// Points drawn around random centres, one a line, coordinates separated by spaces or
    /// commas: k-means input.
    Points(gen_graph::PointsArgs),
    /// Hadoop's RandomWriter: part-m-NNNNN SequenceFiles of BytesWritable keys (10-999 random
    /// bytes) and values (0-19999 bytes), each file ("map") holding at least the bytes per map
    /// (1 GiB by default) of keys and values, as Hadoop's mapreduce.randomwriter.* keys say.
    /// The input of `sluice run sort` and of Hadoop's `sort` example.
    Randomwriter(randomwriter::RandomWriterArgs),
    /// Hadoop's RandomTextWriter: part-m-NNNNN SequenceFiles of Text keys (5-9 words) and
    /// values (10-99 words) drawn from Hadoop's list of 1000 words, each word followed by a
    /// space, as Hadoop's mapreduce.randomtextwriter.* keys say.
    Randomtextwriter(randomwriter::RandomWriterArgs),
}

/// A location of any store, checked but kept as written: it is resolved against the default
/// file system once the job's settings are known ([`stores::resolve`]).
/// One `--input` argument: locations separated by commas, as Hadoop splits them (a comma
/// inside a `{a,b}` group is the group's).
#[derive(Debug, Clone)]
pub(crate) struct InputList(Vec<String>);

fn parse_input_list(text: &str) -> Result<InputList, String> {
    let list = sluice_streaming::split_input_list(text);
    if list.is_empty() {
        return Err("expected an input location".into());
    }
    for location in &list {
        parse_any_location(location).map_err(|e| format!("{location}: {e}"))?;
    }
    Ok(InputList(list))
}

pub(crate) fn parse_any_location(text: &str) -> Result<String, String> {
    sluice_io::Location::parse(text)
        .map(|_| text.to_string())
        .map_err(|e| e.to_string())
}

/// A local path, or a `file:` URI naming one (`file:///p`, `file:/p`, `file://localhost/p`).
pub(crate) fn parse_location(text: &str) -> Result<PathBuf, String> {
    sluice_io::local_path(text).map_err(|e| e.to_string())
}

fn parse_size_arg(text: &str) -> Result<u64, String> {
    parse_size(text)
}

/// `--reduce-split`: a size, or `off` for none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SplitSize(Option<u64>);

fn parse_split_size(text: &str) -> Result<SplitSize, String> {
    if text.eq_ignore_ascii_case("off") {
        return Ok(SplitSize(None));
    }
    parse_size(text).map(|bytes| SplitSize(Some(bytes)))
}

fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

/// The most worker threads a job may be given: far more than any machine's cores, few enough
/// that each thread's share of a budget stays a usable size.
pub(crate) const MAX_THREADS: usize = 4096;

/// The most files a generator or benchmark may be asked to write: each is a task with its own
/// bookkeeping, and a count beyond this is a slip of the keyboard, not a plan.
pub(crate) const MAX_FILES: usize = 1_000_000;

/// A number of files (or of the tasks that write them), from 1 to [`MAX_FILES`].
pub(crate) fn file_count(text: &str) -> Result<usize, String> {
    match at_least_one(text)? {
        n if n > MAX_FILES => Err(format!("must be at most {MAX_FILES}")),
        n => Ok(n),
    }
}

/// A number of threads, from 1 to [`MAX_THREADS`].
pub(crate) fn thread_count(text: &str) -> Result<usize, String> {
    match at_least_one(text)? {
        n if n > MAX_THREADS => Err(format!("must be at most {MAX_THREADS}")),
        n => Ok(n),
    }
}

/// The syntax of grep's pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RegexSyntax {
    /// Rust's regex crate.
    Rust,
    /// Java's java.util.regex, with its meaning (Hadoop's grep example).
    Java,
}

fn parse_regex(text: &str) -> Result<regex::bytes::Regex, String> {
    regex::bytes::Regex::new(text).map_err(|e| e.to_string())
}

/// Options that cannot work together (more reducers than the budget can track, say), found
/// before anything is read or created: sluice exits 2, as for a malformed command line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct UsageError(String);

/// A job stopped by Ctrl-C: sluice then exits with [`streaming::INTERRUPTED`].
#[derive(Debug, thiserror::Error)]
#[error("job {0} was interrupted")]
pub(crate) struct Interrupted(String);

/// The version of Apache Hadoop whose command lines, formats and console sluice follows (its
/// tests compare against this release).
const HADOOP_VERSION: &str = "3.4.2";

/// What `sluice version` prints: a first line as `hadoop version` begins (`Hadoop 3.4.2`),
/// which wrappers such as mrjob read to know what they talk to, then what this really is.
fn hadoop_version() -> String {
    format!(
        "Hadoop {HADOOP_VERSION}\n\
         This is sluice {}, a native MapReduce engine that runs Apache Hadoop {HADOOP_VERSION}'s \
         jobs and follows its command lines; it is not Apache Hadoop.\n",
        env!("CARGO_PKG_VERSION")
    )
}

fn main() -> ExitCode {
    // `sluice help streaming` shows what `sluice streaming -help` shows: the streaming options
    // are Hadoop's, parsed by sluice itself rather than by clap.
    // Not `args()`, which panics on an argument that is not UTF-8: clap refuses those itself.
    let mut raw: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    // `hadoop --config DIR COMMAND ...`, as wrappers run it: DIR is the site's configuration
    // directory, read as HADOOP_CONF_DIR is.
    if raw.first().is_some_and(|a| a == "--config") {
        let Some(dir) = raw.get(1).cloned() else {
            eprintln!("sluice: --config needs a directory: sluice --config DIR COMMAND ...");
            return ExitCode::from(2);
        };
        if !Path::new(&dir).is_dir() {
            // As Hadoop's scripts refuse it.
            eprintln!(
                "sluice: cannot find configuration directory \"{}\" (--config)",
                Path::new(&dir).display()
            );
            return ExitCode::from(1);
        }
        // Still one thread: nothing else reads the environment yet.
        std::env::set_var("HADOOP_CONF_DIR", &dir);
        raw.drain(..2);
    }
    if raw.len() == 2 && raw[0] == "help" && raw[1] == "streaming" {
        print!("{}", sluice_streaming::USAGE);
        return ExitCode::SUCCESS;
    }
    let mut cli = Cli::parse_from(std::iter::once(std::ffi::OsString::from("sluice")).chain(raw));
    let mut hadoop_program: Option<jar::HadoopProgram> = None;
    if let Command::Jar { jar, args } = cli.command {
        cli = match jar::command(&jar, &args) {
            Ok(jar::JarCommand::Help) => {
                let mut command = <Cli as clap::CommandFactory>::command();
                if let Some(jar) = command.find_subcommand_mut("jar") {
                    let _ = jar.print_long_help();
                }
                return ExitCode::SUCCESS;
            }
            Ok(jar::JarCommand::Streaming(args)) => Cli {
                command: Command::Streaming { args },
            },
            Ok(jar::JarCommand::Run { args, program }) => {
                // Tools built around `hadoop jar` read Hadoop's console (streaming's is
                // Hadoop's by default), and its exit status.
                progress::use_hadoop_console();
                hadoop_program = Some(program);
                let args = std::iter::once("sluice".to_string()).chain(args);
                match Cli::try_parse_from(args) {
                    Ok(cli) => cli,
                    Err(e) => {
                        let _ = e.print();
                        return ExitCode::from(program.bad_argument_status());
                    }
                }
            }
            Err(refusal) => {
                eprintln!("sluice jar: {}", refusal.message);
                return ExitCode::from(refusal.code);
            }
        };
    }
    if let Command::Fs { args } = &cli.command {
        return ExitCode::from(fs::run(args));
    }
    if let Command::Version = cli.command {
        print!("{}", hadoop_version());
        return ExitCode::SUCCESS;
    }
    if matches!(cli.command, Command::Streaming { .. } | Command::Worker(_)) {
        start_reaper();
    }
    if let Command::Streaming { args } = &cli.command {
        let code = streaming::run(args).unwrap_or_else(|error| {
            eprintln!("sluice: error: {error:#}");
            ExitCode::from(1)
        });
        sluice_streaming::orphans::stop_reaper();
        return code;
    }
    // Hadoop's programs read the site's mapred-site.xml beneath their -D settings (a site
    // that compresses output, or sets the reduce count, changes what they write).
    let result = match cli.command.defines_mut() {
        Some(defines) if hadoop_program.is_some() => {
            stores::add_mapred_site(defines).and_then(|()| run(cli))
        }
        _ => run(cli),
    };
    sluice_streaming::orphans::stop_reaper();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            if progress::in_hadoop_console() {
                console::log("ERROR", console::SLUICE, &format!("{error:#}"));
            } else {
                eprintln!("sluice: error: {error:#}");
            }
            let interrupted = error.chain().any(|cause| {
                cause.is::<Interrupted>()
                    || matches!(
                        cause.downcast_ref::<sluice_api::ExecError>(),
                        Some(sluice_api::ExecError::Cancelled)
                    )
            });
            if interrupted {
                ExitCode::from(streaming::INTERRUPTED)
            } else if let Some(status) = hadoop_program
                .and_then(|program| program.failure_status(refused_at_submission(&error)))
            {
                ExitCode::from(status)
            } else if error.chain().any(|cause| cause.is::<UsageError>()) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// Whether `error` refused the job before it ran because an input is missing or the output
/// exists: what Hadoop's job client refuses at submission.
fn refused_at_submission(error: &anyhow::Error) -> bool {
    let refusal = |e: &sluice_io::IoError| {
        matches!(
            e,
            sluice_io::IoError::InputNotFound { .. }
                | sluice_io::IoError::PatternMatchesNothing { .. }
                | sluice_io::IoError::HiddenInput { .. }
                | sluice_io::IoError::OutputExists { .. }
        )
    };
    error.chain().any(|cause| {
        cause
            .downcast_ref::<sluice_io::IoError>()
            .is_some_and(refusal)
            || matches!(
                cause.downcast_ref::<sluice_api::ExecError>(),
                Some(sluice_api::ExecError::Io(e)) if refusal(e)
            )
    })
}

/// Makes the streaming programs this process starts die with it, whatever ends it (see
/// `sluice_streaming::orphans`); without a reaper they would only end when their pipes close.
fn start_reaper() {
    let started =
        std::env::current_exe().and_then(|exe| sluice_streaming::orphans::start_reaper(&exe));
    if let Err(e) = started {
        eprintln!(
            "sluice: warning: cannot start the process that stops this one's programs if it is \
             killed: {e}"
        );
    }
}

fn run(mut cli: Cli) -> Result<()> {
    // Every reader of a setting sees it as Hadoop's `Configuration.get` returns it.
    if let Some(defines) = cli.command.defines_mut() {
        stores::substitute_defines(defines)?;
    }
    match cli.command {
        Command::Run(job) => run_builtin(job),
        Command::Streaming { .. } | Command::Jar { .. } | Command::Fs { .. } | Command::Version => {
            Ok(())
        }
        Command::Worker(args) => cluster::run_worker(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Secret { file } => cluster::write_secret(&file),
        Command::Reap { parent, token } => {
            let killed = sluice_streaming::orphans::serve_reaper(std::io::stdin().lock(), &token);
            if killed > 0 {
                eprintln!(
                    "sluice: process {parent} ended with programs still running; killed them \
                     ({killed} signals sent)"
                );
            }
            Ok(())
        }
        #[cfg(feature = "remote")]
        Command::Cleanup { journal } => stores::run_watcher(&journal),
        Command::Gen(GenData::Random(args)) => random::run(&args),
        Command::Gen(GenData::Graph(args)) => gen_graph::graph(&args),
        Command::Gen(GenData::Points(args)) => gen_graph::points(&args),
        Command::Gen(GenData::Randomwriter(args)) => {
            randomwriter::run(randomwriter::Generator::Bytes, &args)
        }
        Command::Gen(GenData::Randomtextwriter(args)) => {
            randomwriter::run(randomwriter::Generator::Text, &args)
        }
        Command::Gen(GenData::Text {
            size,
            output,
            define,
            files,
            seed,
            quiet,
        }) => {
            let files = match files {
                Some(files) => files,
                None => usize::try_from(size.div_ceil(64 << 20).max(1))
                    .context("--size is too large for one file per 64 MiB; give --files")?,
            };
            let store_config = stores::store_config(&define)?;
            let output = stores::resolve("--output", &output, &store_config)?;
            let stores = stores::stores(&store_config, "gen-text");
            let status = Arc::new(JobStatus::default());
            cancel_on_ctrl_c(&status)?;
            let started = std::time::Instant::now();
            let threads = default_threads();
            let written = gen::generate_text(&stores, &output, size, files, seed, threads, &status)
                .context("gen text failed; no output was written")?;
            if !quiet {
                eprintln!(
                    "sluice: wrote {} in {files} file(s) to {output} in {:.2} s",
                    human_bytes(written),
                    started.elapsed().as_secs_f64()
                );
            }
            Ok(())
        }
    }
}

fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

fn run_builtin(job: RunJob) -> Result<()> {
    // The job is built from its description, as every process that runs its tasks builds it.
    let (spec, common) = match job {
        RunJob::Wordcount {
            text_input,
            output_format,
            common,
        } => {
            let sequence_file_output =
                formats::sequence_file_output(output_format, &common.define)?;
            let spec = JobSpec::WordCount {
                reducers: common.reducers()?,
                // A SequenceFile compresses inside; the codec keys are read for it instead.
                output_codec: match sequence_file_output {
                    Some(_) => None,
                    None => compression::text(&common.define)?,
                },
                sequence_file_input: formats::reads_sequence_files(
                    text_input.input_format,
                    &common,
                )?,
                sequence_file_output,
            };
            (spec, common)
        }
        RunJob::Grep {
            pattern,
            regex_syntax,
            group,
            text_input,
            common,
        } => {
            formats::text_output_only("grep", &common.define)?;
            let java = regex_syntax == RegexSyntax::Java;
            let rust_pattern = if java {
                sluice_hadoop::java_regex::translate(&pattern)
                    .map_err(|e| UsageError(format!("--pattern {pattern}: {e}")))?
            } else {
                pattern.clone()
            };
            let regex = parse_regex(&rust_pattern)
                .map_err(|e| UsageError(format!("--pattern {pattern}: {e}")))?;
            if group > regex.captures_len() - 1 {
                anyhow::bail!(
                    "--group {group} but the pattern has only {} capture group(s)",
                    regex.captures_len() - 1
                );
            }
            let spec = JobSpec::Grep {
                pattern: regex.as_str().to_string(),
                java_lines: java,
                group,
                reducers: common.reducers()?,
                output_codec: compression::text(&common.define)?,
                sequence_file_input: formats::reads_sequence_files(
                    text_input.input_format,
                    &common,
                )?,
            };
            (spec, common)
        }
        RunJob::Sort {
            input_format,
            common,
        } => (seqsort::sort_spec(input_format, &common)?, common),
        RunJob::Invertedindex { text_input, common } => {
            formats::text_output_only("invertedindex", &common.define)?;
            let spec = JobSpec::InvertedIndex {
                reducers: common.reducers()?,
                output_codec: compression::text(&common.define)?,
                sequence_file_input: formats::reads_sequence_files(
                    text_input.input_format,
                    &common,
                )?,
            };
            (spec, common)
        }
        RunJob::Terasort {
            sample_size,
            common,
        } => return tera::run_terasort(sample_size, &common),
        RunJob::Teragen(args) => return tera::run_teragen(&args),
        RunJob::Teravalidate(args) => return tera::run_teravalidate(&args),
        RunJob::Dfsio(args) => return dfsio::run(&args),
        RunJob::Pagerank(args) => return iterate::pagerank(&args),
        RunJob::ConnectedComponents(args) => return iterate::connected_components(&args),
        RunJob::Kmeans(args) => return iterate::kmeans(&args),
    };
    common.check()?;
    let status = Arc::new(JobStatus::default());
    let built = spec.build(Arc::clone(&status))?;
    execute(&spec, built.job(), &common, Codec::Lz4, status).map(drop)
}

/// The engine's configuration of job `name` from the common options (spilling with
/// `default_codec` unless `--spill-codec` says otherwise).
fn job_config(name: &str, args: &CommonArgs, default_codec: Codec) -> Result<JobConfig> {
    let memory = usize::try_from(args.memory()?).context("--memory is too large")?;
    let store_config = stores::store_config(&args.define)?;
    let inputs = stores::resolve_all("--input", &args.inputs(), &store_config)?;
    let output = stores::resolve("--output", &args.output, &store_config)?;
    let mut config = JobConfig::new(inputs, output)
        .with_nested_directories(args.nested_directories()?)
        .with_stores(stores::stores(&store_config, name))
        .with_memory(memory)
        .with_threads(args.threads()?)
        .with_spill_codec(args.spill_codec.unwrap_or(default_codec))
        .with_reduce_split_bytes(args.reduce_split.0);
    let (map_attempts, reduce_attempts) = args.attempts()?;
    config = config.with_attempts(map_attempts, reduce_attempts);
    if let Some(size) = args.split_size {
        config = config.with_fixed_split_size(size);
    }
    Ok(config.with_spill_parents(args.spill_dir.clone()))
}

/// Runs `job` (built from `spec`) with the common options (spilling with `default_codec`
/// unless `--spill-codec` says otherwise), on this machine or the `--cluster`, showing
/// progress and then the summary. `status` is the job's live status.
fn execute(
    spec: &JobSpec,
    job: &Job,
    args: &CommonArgs,
    default_codec: Codec,
    status: Arc<JobStatus>,
) -> Result<JobReport> {
    let config = job_config(&job.name, args, default_codec)?;
    args.warn_options_workers_ignore();
    cancel_on_ctrl_c(&status)?;
    let shape = progress::JobShape {
        reduces: job.stages.iter().any(|stage| stage.partitions > 0),
        hadoop_counters: true,
    };
    let display = progress::Display::start_job(Arc::clone(&status), args.quiet, shape);
    let result = match &args.cluster {
        None => run_job(job, &config, Arc::clone(&status))
            .map(|report| (report, None))
            .map_err(anyhow::Error::new),
        Some(target) => cluster::run_on(
            target,
            args.secret_file.as_deref(),
            sluice_cluster::ClusterJob {
                spec,
                job,
                config: &config,
                defines: args.define.clone(),
                job_id: sluice_cluster::new_job_id(),
                worker_timeout: cluster::worker_timeout()?,
            },
            args.memory()?,
            config.threads,
            Arc::clone(&status),
        )
        .map(|report| (report.report.clone(), Some(report))),
    };
    display.stop();
    let (report, cluster_report) = result
        .map_err(|e| match e.downcast::<sluice_api::ExecError>() {
            Ok(sluice_api::ExecError::Cancelled) => {
                anyhow::Error::new(Interrupted(job.name.clone()))
            }
            Ok(other) => anyhow::Error::new(other),
            Err(e) => match e.downcast::<sluice_cluster::ClusterError>() {
                Ok(sluice_cluster::ClusterError::Exec(sluice_api::ExecError::Cancelled)) => {
                    anyhow::Error::new(Interrupted(job.name.clone()))
                }
                Ok(other) => anyhow::Error::new(other),
                Err(e) => e,
            },
        })
        .with_context(|| format!("job {} failed; no output was written", job.name))?;
    if let Some(path) = &args.report {
        match &cluster_report {
            Some(cluster) => write_json(path, cluster)?,
            None => write_report(path, &report)?,
        }
    }
    if !args.quiet {
        progress::print_summary(&report);
        if let Some(cluster) = &cluster_report {
            cluster::print_workers(cluster);
        }
    }
    Ok(report)
}

/// Makes Ctrl-C (and SIGTERM) cancel the job: tasks stop, the output is not committed, and
/// sluice exits 130. A second Ctrl-C, while the job winds down (a task blocked on a read that
/// never ends, say), exits at once; a later run removes what it leaves.
///
/// One interrupt can arrive twice: `timeout`, for one, sends the signal it gets to its child
/// and then to the child's whole process group. A second signal within [`SAME_INTERRUPT`] of
/// the first is taken as the same one, so that the job still cleans up.
pub(crate) fn cancel_on_ctrl_c(status: &Arc<JobStatus>) -> Result<()> {
    let status = Arc::clone(status);
    let first = std::sync::OnceLock::<std::time::Instant>::new();
    on_interrupt(move || {
        let now = std::time::Instant::now();
        let again = match first.get() {
            Some(at) if now.duration_since(*at) < SAME_INTERRUPT => return,
            Some(_) => true,
            None => {
                let _ = first.set(now);
                // Cancelled already (a task failed): this interrupt is the user's second word.
                status.is_cancelled()
            }
        };
        if again {
            eprintln!("sluice: interrupted again; exiting now");
            std::process::exit(i32::from(streaming::INTERRUPTED));
        }
        status.cancel();
    })
    .context("cannot install the Ctrl-C handler")
}

/// Runs `handler` on Ctrl-C, `SIGTERM` and `SIGHUP`, except for those of the signals this
/// process started with ignored: `nohup sluice ... &` and a shell script's background jobs
/// ignore `SIGHUP` or `SIGINT` on purpose, so that closing the terminal or a Ctrl-C meant for
/// the script leaves them running. They stay ignored, as Hadoop's client leaves them (and the
/// job's programs inherit that, as they would under `nohup`).
pub(crate) fn on_interrupt<F>(handler: F) -> Result<(), ctrlc::Error>
where
    F: FnMut() + 'static + Send,
{
    use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
    let ignore = SigAction::new(SigHandler::SigIgn, SaFlags::empty(), SigSet::empty());
    let ignored: Vec<Signal> = [Signal::SIGINT, Signal::SIGHUP]
        .into_iter()
        .filter(|&signal| {
            // SAFETY: the dispositions swapped here are "ignore" and the one the process
            // started with, put back at once; no handler of ours runs in between.
            unsafe {
                match sigaction(signal, &ignore) {
                    Ok(old) => {
                        let _ = sigaction(signal, &old);
                        matches!(old.handler(), SigHandler::SigIgn)
                    }
                    Err(_) => false,
                }
            }
        })
        .collect();
    ctrlc::set_handler(handler)?;
    for signal in ignored {
        // SAFETY: "ignore" runs no code of ours; it replaces the handler `ctrlc` installed
        // for a signal the process was started ignoring.
        let _ = unsafe { sigaction(signal, &ignore) };
    }
    Ok(())
}

/// How soon after an interrupt another one is the same interrupt delivered twice.
pub(crate) const SAME_INTERRUPT: std::time::Duration = std::time::Duration::from_millis(500);

/// Writes a cluster job's report (the job's, with each worker's part) as JSON.
fn write_json(path: &std::path::Path, report: &sluice_cluster::ClusterReport) -> Result<()> {
    let text = serde_json::to_string_pretty(report).context("cannot serialise the report")?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("cannot write report {}", path.display()))
}

fn write_report(path: &std::path::Path, report: &JobReport) -> Result<()> {
    let mut json = serde_json::to_value(report).context("cannot serialise the report")?;
    if let (Some(obj), Some(rss)) = (json.as_object_mut(), progress::peak_rss_bytes()) {
        obj.insert("peak_rss_bytes".into(), rss.into());
    }
    let text = serde_json::to_string_pretty(&json).context("cannot serialise the report")?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("cannot write report {}", path.display()))
}
