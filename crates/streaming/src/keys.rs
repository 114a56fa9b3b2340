//! Which configuration keys a streaming job honours, which it refuses and which it may ignore.
//!
//! Hadoop ignores keys it does not know, and so does sluice; but a key whose effect sluice does
//! not reproduce, and which would change the output or what the job means, must not be dropped
//! silently: the job would "succeed" with output Hadoop would not write. [`KEYS`] lists the
//! keys sluice reads or users are likely to set, each with its [`Status`]; [`check`] refuses
//! the refused ones when the job is built, unless the value is one that behaves as Hadoop's
//! default. `docs/CONFIGURATION.md` is the same table for users; the tests below keep the
//! table, the code that reads keys, and that document in step.
//!
//! The check also carries out `mapreduce.input.fileinputformat.input.dir.recursive`: without
//! it (Hadoop's default) a directory inside an input directory fails the job at submission,
//! as Hadoop's old-API `FileInputFormat` does ("Not a file").

use super::conf::JobConf;
use super::options::{local_path, StreamingArgs};
use super::StreamingError;
use sluice_io::{is_hidden_name, Location, NestedDirectories, Storage as _, Stores};

/// What sluice does with a key.
#[derive(Debug, Clone, Copy)]
pub enum Status {
    /// Read and acted on as Hadoop does; the text says what it does in sluice.
    Honoured(&'static str),
    /// Set by the job itself (from the command line, or per task) for the programs to read; a
    /// user's value is replaced, as Hadoop replaces it.
    Set(&'static str),
    /// Not read: it cannot change the output (cluster or JVM tuning), or Hadoop's streaming
    /// job does not read it either. The text says why.
    Ignored(&'static str),
    /// Refused when set to a value other than those [`Accept`] lets through: its effect
    /// changes the output or the job, and sluice does not reproduce it. The text says why.
    Refused(Accept, &'static str),
}

/// The values of a refused key that are accepted because they behave as Hadoop's default.
#[derive(Debug, Clone, Copy)]
pub enum Accept {
    /// No value.
    Nothing,
    /// Exactly these values (surrounding blanks ignored).
    Values(&'static [&'static str]),
    /// A boolean equal to this one (`true`/`false` in any case).
    Bool(bool),
    /// A whole number of at least this.
    AtLeast(i64),
    /// Decided by the command line and the other settings.
    When(fn(&StreamingArgs, &JobConf, &str) -> bool),
}

impl Accept {
    fn accepts(self, args: &StreamingArgs, conf: &JobConf, value: &str) -> bool {
        let value = value.trim();
        match self {
            Accept::Nothing => false,
            Accept::Values(values) => values.contains(&value),
            Accept::Bool(b) => value.eq_ignore_ascii_case(if b { "true" } else { "false" }),
            Accept::AtLeast(n) => value.parse::<i64>().is_ok_and(|v| v >= n),
            Accept::When(f) => f(args, conf, value),
        }
    }
}

/// A configuration key: its current name, its older names, and what sluice does with it.
#[derive(Debug, Clone, Copy)]
pub struct Key {
    /// The current (Hadoop 3) name.
    pub name: &'static str,
    /// Older names that Hadoop still reads for it.
    pub old: &'static [&'static str],
    /// What sluice does with it.
    pub status: Status,
}

/// Whether directories inside input directories are read (default false: they fail the job).
pub const RECURSIVE: &str = "mapreduce.input.fileinputformat.input.dir.recursive";

/// Whether directories inside input directories are left out, when they are not read
/// (default false: they fail the job).
pub const IGNORE_SUBDIRS: &str =
    "mapreduce.input.fileinputformat.input.dir.nonrecursive.ignore.subdirs";

/// What the job does with directories inside input directories: reads them with
/// [`RECURSIVE`], leaves them out with [`IGNORE_SUBDIRS`] (and not [`RECURSIVE`]); `None` when
/// neither is set, where such a directory fails the job.
///
/// # Errors
/// A value that is not a boolean.
pub fn nested_directories(conf: &JobConf) -> Result<Option<NestedDirectories>, StreamingError> {
    if conf.get_bool(RECURSIVE, false)? {
        Ok(Some(NestedDirectories::Read))
    } else if conf.get_bool(IGNORE_SUBDIRS, false)? {
        Ok(Some(NestedDirectories::Skip))
    } else {
        Ok(None)
    }
}

const fn key(name: &'static str, old: &'static [&'static str], status: Status) -> Key {
    Key { name, old, status }
}

use Accept::{AtLeast, Bool, Nothing, Values, When};
use Status::{Honoured, Ignored, Refused, Set};

const TUNING: &str = "cluster or JVM tuning; it cannot change the output";
const NEW_API: &str = "Hadoop refuses it for a streaming job (\"incompatible with map/reduce \
    compatibility mode\": streaming runs on the old API), and its value is a Java class sluice \
    cannot run";
const OLD_API_IGNORES: &str = "a new-API key that Hadoop's streaming job (old API) does not read";
const SKIPPING: &str = "skipping bad records drops input after failed attempts; sluice does not \
    skip records, so the job would fail where Hadoop's writes partial output";
const FAILURES: &str = "tolerating failed tasks makes Hadoop's job succeed without their output; \
    sluice fails the job when a task fails";

/// Every key sluice reads or users are likely to give a streaming job.
#[rustfmt::skip]
pub const KEYS: &[Key] = &[
    // The streaming job's own keys.
    key("stream.map.input.field.separator", &[], Honoured("between key and value written to the mapper")),
    key("stream.map.output.field.separator", &[], Honoured("splits the mapper's output lines into key and value")),
    key("stream.num.map.output.key.fields", &[], Honoured("separators that belong to the mapper's key")),
    key("stream.reduce.input.field.separator", &[], Honoured("between key and value written to the combiner and reducer")),
    key("stream.reduce.output.field.separator", &[], Honoured("splits the reducer's output lines")),
    key("stream.num.reduce.output.key.fields", &[], Honoured("separators that belong to the reducer's key")),
    key("stream.map.input.ignoreKey", &[], Honoured("whether the mapper is sent the input's key")),
    key("stream.non.zero.exit.is.failure", &[], Honoured("false: a program's non-zero exit status does not fail its task")),
    key("stream.stderr.reporter.prefix", &[], Honoured("prefix of the counter and status lines on a program's stderr")),
    key("stream.map.input", &[], Honoured("framing of the mapper's input (as -io)")),
    key("stream.map.output", &[], Honoured("framing of the mapper's output (as -io)")),
    key("stream.reduce.input", &[], Honoured("framing of the reducer's input (as -io)")),
    key("stream.reduce.output", &[], Honoured("framing of the reducer's output (as -io)")),
    key("stream.map.streamprocessor", &[], Set("the -mapper command, URL-encoded as Hadoop stores it")),
    key("stream.reduce.streamprocessor", &[], Set("the -reducer command, URL-encoded as Hadoop stores it")),
    key("stream.combine.streamprocessor", &[], Set("the -combiner command, URL-encoded as Hadoop stores it")),
    key("stream.addenvironment", &[], Set("HADOOP_ROOT_LOGGER= and the -cmdenv settings, joined with spaces; a -D value is replaced even without -cmdenv, as in Hadoop")),
    key("stream.map.input.writer.class", &[], Ignored("Hadoop's streaming job replaces it with the class -io or stream.map.input names")),
    key("stream.map.output.reader.class", &[], Ignored("Hadoop's streaming job replaces it with the class -io or stream.map.output names")),
    key("stream.reduce.input.writer.class", &[], Ignored("Hadoop's streaming job replaces it with the class -io or stream.reduce.input names")),
    key("stream.reduce.output.reader.class", &[], Ignored("Hadoop's streaming job replaces it with the class -io or stream.reduce.output names")),
    key("stream.io.identifier.resolver.class", &[], Refused(Values(&["org.apache.hadoop.streaming.io.IdentifierResolver"]), "a Java class that maps -io identifiers to Java readers and writers; sluice knows text, rawbytes, typedbytes and keyonlytext")),
    key("stream.recordreader.class", &[], Ignored("only read with -inputreader, which sluice refuses")),
    key("stream.jobconf.truncate.limit", &[], Honoured("configuration values in the programs' environment are cut to this many characters, as Hadoop cuts them (-1, the default: whole)")),
    key("stream.joindelay.milli", &[], Honoured("ms a task waits, after a program's successful exit, for a process it left to close its output; what comes later is not read (0, the default: no limit)")),
    key("stream.tmpdir", &[], Ignored("where Hadoop builds the job's jar")),
    // The number of tasks.
    key("mapreduce.job.reduces", &["mapred.reduce.tasks"], Honoured("number of reduce tasks (as -numReduceTasks; 0 for a map-only job)")),
    key("mapreduce.job.maps", &["mapred.map.tasks"], Set("the number of input splits; as in Hadoop's local mode, a value given does not change the splits")),
    // Input.
    key("mapreduce.input.fileinputformat.inputdir", &["mapred.input.dir"], Refused(Nothing, "Hadoop adds these paths to the -input paths; give them with -input")),
    key(RECURSIVE, &[], Honoured("true: files in directories inside input directories are read too; false (the default): such a directory fails the job (\"Not a file\"), as in Hadoop")),
    key(IGNORE_SUBDIRS, &[], Honoured("true, and not recursive: directories inside input directories are left out, with everything in them, as in Hadoop")),
    key("mapreduce.input.fileinputformat.split.minsize", &["mapred.min.split.size"], Honoured("smallest split size")),
    key("mapreduce.input.fileinputformat.split.maxsize", &["mapred.max.split.size"], Honoured("CombineTextInputFormat's largest split (0: one split per node); the other input formats do not read it, as Hadoop's old-API FileInputFormat does not")),
    key("mapreduce.input.fileinputformat.split.minsize.per.node", &["mapred.min.split.size.per.node"], Honoured("CombineTextInputFormat: the bytes a node's leftover chunks need to make a split of their own")),
    key("mapreduce.input.fileinputformat.split.minsize.per.rack", &["mapred.min.split.size.per.rack"], Honoured("CombineTextInputFormat: the bytes a rack's leftover chunks need to make a split of their own")),
    key("fs.local.block.size", &[], Honoured("the local block size, which is the split size (32 MiB)")),
    key("mapreduce.input.fileinputformat.list-status.num-threads", &[], Ignored("how many threads list the input; sluice numbers the splits in a fixed order")),
    key("mapreduce.input.pathFilter.class", &["mapred.input.pathFilter.class"], Refused(Nothing, "input path filters are Java classes sluice cannot run; sluice skips only hidden names (_x, .x), as Hadoop's default filter does")),
    key("mapreduce.job.inputformat.class", &[], Refused(Nothing, NEW_API)),
    key("mapred.input.format.class", &[], Ignored("Hadoop's streaming job replaces it with the -inputformat class")),
    key("mapreduce.input.keyvaluelinerecordreader.key.value.separator", &["key.value.separator.in.input.line"], Honoured("KeyValueTextInputFormat's separator (its first byte)")),
    key("mapreduce.input.lineinputformat.linespermap", &["mapred.line.input.format.linespermap"], Honoured("lines per map task of NLineInputFormat")),
    key("mapreduce.input.linerecordreader.line.maxlength", &["mapred.linerecordreader.maxlength"], Refused(AtLeast(2_147_483_647), "Hadoop drops input lines this long or longer; sluice reads every line whole")),
    key("textinputformat.record.delimiter", &[], Refused(Nothing, "a custom record delimiter; sluice's text input ends records at \\n, \\r\\n or \\r only")),
    // Output.
    key("mapreduce.output.fileoutputformat.outputdir", &["mapred.output.dir"], Set("the -output directory")),
    key("mapreduce.output.textoutputformat.separator", &["mapred.textoutputformat.separator"], Honoured("between key and value in the part files")),
    key("mapreduce.output.fileoutputformat.compress", &["mapred.output.compress"], Honoured("true: the part files are compressed")),
    key("mapreduce.output.fileoutputformat.compress.codec", &["mapred.output.compression.codec"], Honoured("the codec of compressed part files")),
    key("mapreduce.output.fileoutputformat.compress.type", &["mapred.output.compression.type"], Honoured("RECORD (the default) or BLOCK compression of SequenceFile output; text part files do not read it")),
    key("mapreduce.job.output.key.class", &["mapred.output.key.class"], Honoured("the key class of SequenceFile output when aggregate or an identity class writes it (a command's -io framing decides otherwise, as in Hadoop); it must be the class of what is written")),
    key("mapreduce.job.output.value.class", &["mapred.output.value.class"], Honoured("the value class of SequenceFile output, as the key class")),
    key("mapreduce.output.seqbinaryoutputformat.key.class", &[], Honoured("the key class SequenceFileAsBinaryOutputFormat names in its files' headers")),
    key("mapreduce.output.seqbinaryoutputformat.value.class", &[], Honoured("the value class SequenceFileAsBinaryOutputFormat names in its files' headers")),
    key("mapreduce.output.basename", &[], Ignored("Hadoop's streaming job (old API) names its part files part-NNNNN whatever it says")),
    key("mapreduce.job.outputformat.class", &[], Refused(Nothing, NEW_API)),
    key("mapred.output.format.class", &[], Ignored("Hadoop's streaming job replaces it with the -outputformat class")),
    key("mapreduce.output.lazyoutputformat.outputformat", &[], Ignored("Hadoop's streaming job sets it from -outputformat with -lazyOutput, and reads it only then")),
    key("mapreduce.fileoutputcommitter.marksuccessfuljobs", &[], Refused(Bool(true), "false: Hadoop writes no _SUCCESS file; sluice always writes one")),
    key("mapreduce.fileoutputcommitter.algorithm.version", &[], Ignored("how tasks' output is committed; the final output is the same")),
    key("io.compression.codec.lz4.buffersize", &[], Ignored("how an .lz4 part file is cut into blocks; it decodes to the same bytes")),
    key("io.compression.codec.snappy.buffersize", &[], Ignored("how a .snappy part file is cut into blocks; it decodes to the same bytes")),
    key("zlib.compress.level", &[], Ignored("how hard .deflate and .gz part files are compressed; they decode to the same bytes")),
    // Sort, grouping, partitioning and the Java classes of the tasks.
    key("mapreduce.job.output.key.comparator.class", &["mapred.output.key.comparator.class"], Honoured("KeyFieldBasedComparator sorts by key fields (other classes are refused)")),
    key("mapreduce.partition.keycomparator.options", &["mapred.text.key.comparator.options"], Honoured("-kPOS1[,POS2][n][r] options of KeyFieldBasedComparator")),
    key("mapreduce.partition.keypartitioner.options", &["mapred.text.key.partitioner.options"], Honoured("-kPOS1[,POS2] options of KeyFieldBasedPartitioner")),
    key("num.key.fields.for.partition", &[], Honoured("KeyFieldBasedPartitioner partitions on the first N key fields (0: the whole key); wins over mapreduce.partition.keypartitioner.options when set, as in Hadoop")),
    key("mapreduce.map.output.key.field.separator", &["map.output.key.field.separator"], Honoured("field separator of the key-field options")),
    key("mapreduce.job.output.group.comparator.class", &["mapred.output.value.groupfn.class"], Refused(When(default_grouping), "grouping comparators are Java classes sluice cannot run; sluice groups the reduce input by equal keys")),
    key("mapreduce.job.partitioner.class", &[], Refused(Nothing, NEW_API)),
    key("mapred.partitioner.class", &[], Refused(When(partitioner_default), "Hadoop uses this partitioner when -partitioner is not given, and sluice does not read it; give the class with -partitioner")),
    key("mapreduce.job.map.class", &[], Refused(Nothing, NEW_API)),
    key("mapreduce.job.reduce.class", &[], Refused(Nothing, NEW_API)),
    key("mapreduce.job.combine.class", &[], Ignored(OLD_API_IGNORES)),
    key("mapred.mapper.class", &[], Refused(When(mapper_default), "Hadoop runs this Java class as the mapper when -mapper is not given; sluice cannot run Java classes: use -mapper with a command")),
    key("mapred.map.runner.class", &[], Refused(When(mapper_given), "a Java map runner, used when -mapper is not given; sluice cannot run Java classes: use -mapper with a command")),
    key("mapred.reducer.class", &[], Refused(When(reducer_default), "Hadoop runs this Java class as the reducer when -reducer is not given; sluice cannot run Java classes: use -reducer with a command")),
    key("mapred.combiner.class", &[], Refused(When(combiner_given), "Hadoop runs this Java class as the combiner when -combiner is not given; sluice cannot run Java classes: use -combiner with a command")),
    // Failures and retries.
    key("mapreduce.map.maxattempts", &["mapred.map.max.attempts"], Honoured("runs of a failing map task before the job fails")),
    key("mapreduce.reduce.maxattempts", &["mapred.reduce.max.attempts"], Honoured("runs of a failing reduce task before the job fails")),
    key("mapreduce.task.timeout", &["mapred.task.timeout"], Honoured("ms a program may go without reading, writing or reporting before it is killed")),
    key("mapreduce.job.counters.group.name.max", &[], Honoured("a counter group's name is longer than this many characters (128) is cut to one fewer, as in Hadoop")),
    key("mapreduce.job.counters.counter.name.max", &[], Honoured("a counter's name is longer than this many characters (64) is cut to one fewer, as in Hadoop; names equal once cut are one counter")),
    key("mapreduce.job.counters.max", &["mapreduce.job.counters.limit"], Honoured("counters a program may report in one task attempt (120); one more fails the attempt, as in Hadoop")),
    key("mapreduce.job.counters.groups.max", &[], Honoured("counter groups a program may report in one task attempt (50); one more fails the attempt, as in Hadoop")),
    key("mapreduce.map.failures.maxpercent", &["mapred.max.map.failures.percent"], Refused(Values(&["0"]), FAILURES)),
    key("mapreduce.reduce.failures.maxpercent", &["mapred.max.reduce.failures.percent"], Refused(Values(&["0"]), FAILURES)),
    key("mapreduce.map.skip.maxrecords", &["mapred.skip.map.max.skip.records"], Refused(Values(&["0"]), SKIPPING)),
    key("mapreduce.reduce.skip.maxgroups", &["mapred.skip.reduce.max.skip.groups"], Refused(Values(&["0"]), SKIPPING)),
    key("mapreduce.task.skip.start.attempts", &["mapred.skip.attempts.to.start.skipping"], Ignored("only acts with mapreduce.map.skip.maxrecords or mapreduce.reduce.skip.maxgroups, which sluice refuses")),
    key("mapreduce.map.skip.proc-count.auto-incr", &["mapred.skip.map.auto.incr.proc.count"], Ignored("only acts in skipping mode, which sluice refuses")),
    key("mapreduce.reduce.skip.proc-count.auto-incr", &["mapred.skip.reduce.auto.incr.proc.count"], Ignored("only acts in skipping mode, which sluice refuses")),
    // The programs' environment and files.
    key("mapreduce.map.env", &["mapred.map.child.env"], Honoured("NAME=VALUE,... variables in the mapper's and combiner's environment, as a cluster sets them (mapreduce.map.env.NAME=VALUE too; $NAME expanded); -cmdenv overrides them")),
    key("mapreduce.reduce.env", &["mapred.reduce.child.env"], Honoured("NAME=VALUE,... variables in the reducer's environment, as mapreduce.map.env")),
    key("mapred.child.env", &[], Honoured("the variables of map and reduce tasks whose own key (mapreduce.map.env, mapreduce.reduce.env) is not set")),
    key("mapreduce.admin.user.env", &[], Honoured("variables set before the task's own ones (a name set by both gets both values, joined by :); unlike Hadoop, no default")),
    key("mapreduce.job.cache.files", &[], Refused(Nothing, "files for the tasks' working directory: use -files")),
    key("mapreduce.job.cache.archives", &[], Refused(Nothing, "archives for the tasks' working directory: use -archives")),
    key("mapreduce.job.working.dir", &["mapred.working.dir"], Refused(When(working_dir_default), "relative -input and -output paths would be resolved against it; sluice resolves them against its own working directory")),
    key("fs.defaultFS", &["fs.default.name"], Refused(When(known_fs), "sluice knows the local file system (file:///), HDFS (hdfs://namenode:port) and S3 (s3://bucket)")),
    key("mapreduce.job.id", &["mapred.job.id"], Set("the job's id")),
    key("mapreduce.task.id", &["mapred.tip.id"], Set("the task's id")),
    key("mapreduce.task.attempt.id", &["mapred.task.id"], Set("the task attempt's id")),
    key("mapreduce.task.partition", &["mapred.task.partition"], Set("the task's number")),
    key("mapreduce.task.ismap", &["mapred.task.is.map"], Set("true in map tasks")),
    key("mapreduce.map.input.file", &["map.input.file"], Set("the map task's input file")),
    key("mapreduce.map.input.start", &["map.input.start"], Set("the map task's first byte")),
    key("mapreduce.map.input.length", &["map.input.length"], Set("the map task's split length")),
    // sluice's own keys.
    key("sluice.console", &[], Honoured("hadoop (default): Hadoop's console records; sluice: sluice's own layout")),
    key("sluice.progress", &[], Honoured("false: no progress output")),
    key("sluice.memory", &[], Honoured("the job's memory budget (default 1GiB)")),
    key("sluice.threads", &[], Honoured("tasks run at once (default: the cores)")),
    key("sluice.keep.logs", &[], Honoured("true: keep the programs' stderr logs of a successful job")),
    key("sluice.shm.ring.size", &[], Honoured("bytes of each shared-memory ring")),
    // Cluster, JVM and scheduling keys: they cannot change the output.
    key("mapreduce.job.name", &["mapred.job.name"], Set("the job's name as the programs see it (default streaming); nothing else reads it")),
    key("mapreduce.job.queuename", &["mapred.job.queue.name"], Ignored(TUNING)),
    key("mapreduce.job.priority", &["mapred.job.priority"], Ignored(TUNING)),
    key("mapreduce.framework.name", &[], Ignored("sluice runs the job itself, with the output Hadoop writes in any framework")),
    key("mapreduce.jobtracker.address", &["mapred.job.tracker"], Ignored("sluice runs the job itself")),
    key("yarn.resourcemanager.address", &[], Ignored("sluice runs the job itself")),
    key("hadoop.tmp.dir", &[], Honoured("Hadoop's scratch space: when set and mapreduce.cluster.local.dir is not, the job spills in its mapred/local, as Hadoop does; unset, sluice spills beside a local output, else in the system's temporary directory. ${hadoop.tmp.dir} in other values is /tmp/hadoop-USER when unset")),
    key("mapreduce.cluster.local.dir", &["mapred.local.dir"], Honoured("where the job's spill files go, spread over the directories (one per disk) that can be used; on a cluster each worker uses its own")),
    key("mapreduce.map.memory.mb", &["mapred.job.map.memory.mb"], Ignored(TUNING)),
    key("mapreduce.reduce.memory.mb", &["mapred.job.reduce.memory.mb"], Ignored(TUNING)),
    key("mapreduce.map.cpu.vcores", &[], Ignored(TUNING)),
    key("mapreduce.reduce.cpu.vcores", &[], Ignored(TUNING)),
    key("mapreduce.map.java.opts", &[], Ignored(TUNING)),
    key("mapreduce.reduce.java.opts", &[], Ignored(TUNING)),
    key("mapred.child.java.opts", &[], Ignored(TUNING)),
    key("yarn.app.mapreduce.am.resource.mb", &[], Ignored(TUNING)),
    key("mapreduce.map.output.compress", &["mapred.compress.map.output"], Ignored("compresses the intermediate map output only")),
    key("mapreduce.map.output.compress.codec", &["mapred.map.output.compression.codec"], Ignored("compresses the intermediate map output only")),
    key("mapreduce.map.speculative", &["mapred.map.tasks.speculative.execution"], Ignored("duplicate attempts of slow tasks; the output is the same")),
    key("mapreduce.reduce.speculative", &["mapred.reduce.tasks.speculative.execution"], Ignored("duplicate attempts of slow tasks; the output is the same")),
    key("mapreduce.job.reduce.slowstart.completedmaps", &["mapred.reduce.slowstart.completed.maps"], Ignored(TUNING)),
    key("mapreduce.task.io.sort.mb", &["io.sort.mb"], Ignored("sort buffer size; sluice.memory sets sluice's budget")),
    key("mapreduce.task.io.sort.factor", &["io.sort.factor"], Ignored(TUNING)),
    key("mapreduce.map.sort.spill.percent", &["io.sort.spill.percent"], Ignored(TUNING)),
    key("mapreduce.reduce.shuffle.parallelcopies", &["mapred.reduce.parallel.copies"], Ignored(TUNING)),
    key("mapreduce.job.ubertask.enable", &[], Ignored(TUNING)),
    key("mapreduce.job.ubertask.maxmaps", &[], Ignored(TUNING)),
    key("mapreduce.job.ubertask.maxreduces", &[], Ignored(TUNING)),
    key("mapreduce.job.jvm.numtasks", &["mapred.job.reuse.jvm.num.tasks"], Ignored(TUNING)),
    key("mapreduce.job.user.classpath.first", &[], Ignored(TUNING)),
    key("mapreduce.task.userlog.limit.kb", &[], Ignored("log retention")),
    key("mapreduce.map.log.level", &[], Ignored("Hadoop's own log level")),
    key("mapreduce.reduce.log.level", &[], Ignored("Hadoop's own log level")),
    key("io.file.buffer.size", &[], Ignored(TUNING)),
    key("dfs.replication", &[], Ignored("HDFS only")),
    key("dfs.blocksize", &["dfs.block.size"], Ignored("HDFS only; local input is split by fs.local.block.size")),
];

/// The key of [`KEYS`] named `name` (current or old name).
pub fn lookup(name: &str) -> Option<&'static Key> {
    KEYS.iter()
        .find(|k| k.name == name || k.old.contains(&name))
}

/// Refuses the job if a refused key is set to a value that does not behave as Hadoop's
/// default, and carries out [`RECURSIVE`].
///
/// # Errors
/// [`StreamingError::Usage`] naming the key, its value and why it is refused;
/// [`StreamingError::Launch`] for a directory inside an input directory when [`RECURSIVE`] is
/// false, as Hadoop's job fails to launch.
pub fn check(args: &StreamingArgs, conf: &JobConf, stores: &Stores) -> Result<(), StreamingError> {
    for key in KEYS {
        let Status::Refused(accept, why) = key.status else {
            continue;
        };
        // An old name Hadoop renames is the key itself; one it does not (`dfs.block.size`
        // outside HDFS's settings) is a key of its own.
        let names = std::iter::once(key.name).chain(
            key.old
                .iter()
                .copied()
                .filter(|old| super::conf::current_name(old) == *old),
        );
        for name in names {
            let Some(value) = conf.get(name) else {
                continue;
            };
            if accept.accepts(args, conf, value) {
                continue;
            }
            // The name the user wrote, and the other names of the key, to find it by.
            let given = conf.given_name(name);
            let others: Vec<&str> = std::iter::once(key.name)
                .chain(key.old.iter().copied())
                .filter(|other| *other != given && super::conf::current_name(other) == key.name)
                .collect();
            let also = if others.is_empty() {
                String::new()
            } else {
                format!(" (also named {})", others.join(", "))
            };
            return Err(StreamingError::Usage(match conf.origin(name) {
                None => format!("-D {given}={value}{also}: {why}"),
                Some(file) => {
                    let way_out = if matches!(accept, Accept::Nothing) {
                        "remove it from the file".to_string()
                    } else {
                        format!("a -D {given}=... setting overrides the file")
                    };
                    format!("{file} sets {given}={value}{also}: {why} ({way_out})")
                }
            }));
        }
    }
    if nested_directories(conf)?.is_none() {
        refuse_nested_directories(args, stores)?;
    }
    Ok(())
}

/// Hadoop's old-API `FileInputFormat` lists each input directory one level deep when it is not
/// recursive, and a directory among the entries fails the job at submission ("Not a file").
/// Hidden entries (`_x`, `.x`) are skipped first. Inputs that cannot be listed, or an existing
/// output, are left to the checks that report them (Hadoop reports those first; an existing
/// output is no error for `NullOutputFormat`, which checks nothing).
fn refuse_nested_directories(args: &StreamingArgs, stores: &Stores) -> Result<(), StreamingError> {
    let discards = args.output_format.as_deref() == Some(crate::job::NULL_OUTPUT);
    let output_exists = !discards
        && args
            .output_location()
            .ok()
            .and_then(|output| stores.status(&output).ok().flatten())
            .is_some();
    let Ok(inputs) = args.input_locations() else {
        return Ok(());
    };
    if output_exists {
        return Ok(());
    }
    for input in inputs {
        for dir in listed_directories(stores, &input) {
            if let Some(nested) = first_visible_subdirectory(stores, &dir) {
                return Err(StreamingError::Launch(format!(
                    "Not a file: {} (a directory inside an input directory; Hadoop reads \
                     those only with -D {RECURSIVE}=true)",
                    hadoop_name(&nested)
                )));
            }
        }
    }
    Ok(())
}

/// The directories an `-input` argument makes Hadoop list: the argument itself, or for a glob
/// the directories it matches.
fn listed_directories(stores: &Stores, input: &Location) -> Vec<Location> {
    let found = if input.is_glob() {
        stores.glob_visible(input).unwrap_or_default()
    } else {
        stores.status(input).ok().flatten().into_iter().collect()
    };
    found
        .into_iter()
        .filter(|status| status.is_dir)
        .map(|status| status.location)
        .collect()
}

/// A visible entry of `dir` that is a directory (links followed), if there is one: the first
/// by name, whatever order the store lists in.
fn first_visible_subdirectory(stores: &Stores, dir: &Location) -> Option<Location> {
    let entries = stores.list(dir).ok()?;
    entries
        .into_iter()
        .filter(|e| {
            e.is_dir
                && !e
                    .location
                    .file_name()
                    .is_none_or(|n| is_hidden_name(n.as_encoded_bytes()))
        })
        .map(|e| e.location)
        .min_by_key(|l| l.to_string())
}

/// A location as Hadoop names it in messages: `file:/absolute/path` for a local one.
fn hadoop_name(location: &Location) -> String {
    match location.as_local_path() {
        Some(path) => {
            let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
            format!("file:{}", absolute.display())
        }
        None => location.to_string(),
    }
}

/// Hadoop loads these keys' classes by their full names only.
fn is_class(value: &str, names: &[&str]) -> bool {
    names.contains(&value)
}

/// Grouping as Hadoop does without the key: by the sort comparator (`Text`'s bytes when no
/// comparator is set).
fn default_grouping(_: &StreamingArgs, conf: &JobConf, value: &str) -> bool {
    match conf.get("mapreduce.job.output.key.comparator.class") {
        Some(sort) => value == sort.trim(),
        None => value == "org.apache.hadoop.io.Text$Comparator",
    }
}

fn partitioner_default(args: &StreamingArgs, _: &JobConf, value: &str) -> bool {
    args.partitioner.is_some()
        || is_class(
            value,
            &[
                "org.apache.hadoop.mapred.lib.HashPartitioner",
                "org.apache.hadoop.mapreduce.lib.partition.HashPartitioner",
            ],
        )
}

fn mapper_given(args: &StreamingArgs, _: &JobConf, _: &str) -> bool {
    args.mapper.is_some()
}

fn mapper_default(args: &StreamingArgs, conf: &JobConf, value: &str) -> bool {
    mapper_given(args, conf, value)
        || is_class(value, &["org.apache.hadoop.mapred.lib.IdentityMapper"])
}

fn reducer_default(args: &StreamingArgs, _: &JobConf, value: &str) -> bool {
    args.reducer.is_some() || is_class(value, &["org.apache.hadoop.mapred.lib.IdentityReducer"])
}

fn combiner_given(args: &StreamingArgs, _: &JobConf, _: &str) -> bool {
    args.combiner.is_some()
}

fn working_dir_default(_: &StreamingArgs, _: &JobConf, value: &str) -> bool {
    let here = std::env::current_dir().ok();
    local_path("-D mapreduce.job.working.dir", value)
        .ok()
        .and_then(|p| std::path::absolute(p).ok())
        .is_some_and(|p| Some(p) == here)
}

fn known_fs(_: &StreamingArgs, _: &JobConf, value: &str) -> bool {
    super::options::is_known_fs(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_with(settings: &[(&str, &str)]) -> StreamingArgs {
        let mut args = StreamingArgs::default();
        for (k, v) in settings {
            args.conf.set(k, *v);
        }
        args
    }

    fn refusal(settings: &[(&str, &str)]) -> Option<String> {
        let args = args_with(settings);
        check(&args, &args.conf, &Stores::local())
            .err()
            .map(|e| e.to_string())
    }

    /// The table's old names are Hadoop's names for its keys ([`super::super::deprecated`]),
    /// except where Hadoop's streaming job renames nothing (HDFS's own old names, which only
    /// HDFS's settings rename).
    #[test]
    fn every_old_name_is_hadoops_name_for_its_key() {
        let mut own = Vec::new();
        for key in KEYS {
            for old in key.old {
                match super::super::conf::current_name(old) {
                    current if current == key.name => {}
                    current if current == *old => own.push(*old),
                    other => panic!("{old} is Hadoop's old name of {other}, not of {}", key.name),
                }
            }
        }
        assert_eq!(own, ["dfs.block.size"]);
    }

    #[test]
    fn refused_keys_name_the_key_the_value_and_the_reason() {
        let message =
            refusal(&[("mapreduce.job.output.group.comparator.class", "my.Grouping")]).unwrap();
        assert!(
            message.starts_with(
                "-D mapreduce.job.output.group.comparator.class=my.Grouping (also named \
                 mapred.output.value.groupfn.class): grouping comparators"
            ),
            "{message}"
        );
        // Given under its old name, the key is named as given.
        let message = refusal(&[("mapred.output.value.groupfn.class", "x.Y")]).unwrap();
        assert!(
            message.starts_with(
                "-D mapred.output.value.groupfn.class=x.Y (also named \
                 mapreduce.job.output.group.comparator.class): grouping comparators"
            ),
            "{message}"
        );
        assert!(refusal(&[("textinputformat.record.delimiter", "\n")]).is_some());
        assert!(refusal(&[("mapreduce.input.linerecordreader.line.maxlength", "100")]).is_some());
        assert!(refusal(&[("mapred.linerecordreader.maxlength", "100")]).is_some());
        assert!(refusal(&[("mapreduce.job.outputformat.class", "x.Y")]).is_some());
        assert!(refusal(&[("fs.default.name", "hdfs://nn:8020")]).is_none());
        assert!(refusal(&[("fs.default.name", "gs://bucket")]).is_some());
        assert!(
            refusal(&[("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")]).is_some()
        );
        assert!(refusal(&[("mapred.mapper.class", "my.Mapper")]).is_some());
    }

    #[test]
    fn default_values_are_accepted() {
        for settings in [
            &[(
                "mapreduce.job.output.group.comparator.class",
                "org.apache.hadoop.io.Text$Comparator",
            )][..],
            &[
                (
                    "mapreduce.job.output.key.comparator.class",
                    "org.apache.hadoop.mapred.lib.KeyFieldBasedComparator",
                ),
                (
                    "mapreduce.job.output.group.comparator.class",
                    " org.apache.hadoop.mapred.lib.KeyFieldBasedComparator",
                ),
            ][..],
            &[(
                "mapreduce.input.linerecordreader.line.maxlength",
                "2147483647",
            )][..],
            &[("mapreduce.fileoutputcommitter.marksuccessfuljobs", "TRUE")][..],
            &[("fs.defaultFS", "file:///")][..],
            &[("mapreduce.map.skip.maxrecords", "0")][..],
            &[(
                "mapred.partitioner.class",
                "org.apache.hadoop.mapred.lib.HashPartitioner",
            )][..],
            &[(
                "mapred.mapper.class",
                "org.apache.hadoop.mapred.lib.IdentityMapper",
            )][..],
            &[(RECURSIVE, "false")][..],
            &[("mapreduce.output.basename", "data")][..],
            &[("some.unknown.key", "x")][..],
        ] {
            assert_eq!(refusal(settings), None, "{settings:?}");
        }
    }

    #[test]
    fn java_class_keys_are_accepted_when_the_command_line_replaces_them() {
        let mut args = args_with(&[
            ("mapred.mapper.class", "my.Mapper"),
            ("mapred.reducer.class", "my.Reducer"),
            ("mapred.partitioner.class", "my.Partitioner"),
        ]);
        assert!(check(&args, &args.conf, &Stores::local()).is_err());
        args.mapper = Some("cat".into());
        args.reducer = Some("cat".into());
        args.partitioner = Some("HashPartitioner".into());
        assert!(check(&args, &args.conf, &Stores::local()).is_ok());
    }

    #[test]
    fn nested_directories_need_the_recursive_key() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in");
        std::fs::create_dir_all(input.join("sub")).unwrap();
        std::fs::create_dir_all(input.join("_hidden")).unwrap();
        std::fs::write(input.join("a"), "x\n").unwrap();
        std::fs::write(input.join("sub/b"), "y\n").unwrap();
        let mut args = StreamingArgs {
            inputs: vec![input.display().to_string()],
            output: Some(dir.path().join("out").display().to_string()),
            ..StreamingArgs::default()
        };
        let message = check(&args, &args.conf, &Stores::local())
            .unwrap_err()
            .to_string();
        assert!(message.starts_with("Not a file: file:/"), "{message}");
        assert!(message.contains("in/sub "), "{message}");
        // Through a glob matching the directory too.
        args.inputs = vec![dir.path().join("i*").display().to_string()];
        assert!(check(&args, &args.conf, &Stores::local()).is_err());
        args.conf.set(RECURSIVE, "true");
        assert!(check(&args, &args.conf, &Stores::local()).is_ok());
        // Only hidden subdirectories: nothing to refuse.
        std::fs::remove_dir_all(input.join("sub")).unwrap();
        args.conf.set(RECURSIVE, "false");
        assert!(check(&args, &args.conf, &Stores::local()).is_ok());
    }

    #[test]
    fn the_table_has_each_name_once() {
        let mut names: Vec<&str> = KEYS
            .iter()
            .flat_map(|k| std::iter::once(k.name).chain(k.old.iter().copied()))
            .collect();
        let all = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all, "a key is listed twice");
    }

    /// Sources of the code that reads keys: everything before its tests.
    fn sources() -> Vec<(&'static str, &'static str)> {
        let files = [
            ("job.rs", include_str!("job.rs")),
            ("options.rs", include_str!("options.rs")),
            ("compress.rs", include_str!("compress.rs")),
            ("seqout.rs", include_str!("seqout.rs")),
            ("nline.rs", include_str!("nline.rs")),
            ("combine.rs", include_str!("combine.rs")),
            ("task.rs", include_str!("task.rs")),
            ("process.rs", include_str!("process.rs")),
            ("aggregate.rs", include_str!("aggregate.rs")),
            ("protocol.rs", include_str!("protocol.rs")),
            ("command.rs", include_str!("command.rs")),
            ("scratch.rs", include_str!("scratch.rs")),
            ("task_env.rs", include_str!("task_env.rs")),
            ("lib.rs", include_str!("lib.rs")),
            (
                "cli streaming.rs",
                include_str!("../../cli/src/streaming.rs"),
            ),
        ];
        files
            .into_iter()
            .map(|(name, text)| (name, text.split("#[cfg(test)]").next().unwrap_or(text)))
            .collect()
    }

    /// The string literals of `source` that look like configuration keys.
    fn key_literals(source: &str) -> Vec<&str> {
        let literal = regex::Regex::new(r#""([^"\\\n]*)""#).unwrap();
        let key = regex::Regex::new(
            r"^(stream|mapreduce|mapred|sluice|fs|textinputformat|io|hadoop|map|reduce|dfs|yarn|num)\.[a-z][A-Za-z0-9_.\-]*$",
        )
        .unwrap();
        literal
            .captures_iter(source)
            .filter_map(|c| c.get(1).map(|m| m.as_str()))
            .filter(|s| key.is_match(s))
            .collect()
    }

    #[test]
    fn every_key_the_code_uses_is_listed_and_not_as_ignored() {
        for (file, source) in sources() {
            for name in key_literals(source) {
                let listed = lookup(name).map(|k| k.status);
                assert!(
                    matches!(
                        listed,
                        Some(Status::Honoured(_) | Status::Set(_) | Status::Refused(..))
                    ),
                    "{file} uses key {name}, which keys.rs lists as {listed:?}; list it as \
                     honoured, set or refused"
                );
            }
        }
    }

    #[test]
    fn every_honoured_key_is_read_by_the_code() {
        let used: Vec<&str> = sources()
            .into_iter()
            .flat_map(|(_, s)| key_literals(s))
            .collect();
        for key in KEYS {
            if let Status::Honoured(_) = key.status {
                let read = key.name == RECURSIVE
                    || key.name == IGNORE_SUBDIRS
                    || used.iter().any(|u| *u == key.name || key.old.contains(u));
                assert!(
                    read,
                    "{} is listed as honoured but no code reads it",
                    key.name
                );
            }
        }
    }

    /// Each key's row in the document's tables (`| `name` | `old`, ... | status | ... |`)
    /// gives the table's old names and status, so that the page cannot drift from the code.
    #[test]
    fn the_documentation_gives_each_key_its_old_names_and_status() {
        let doc = include_str!("../../../docs/CONFIGURATION.md");
        let mut rows = std::collections::HashMap::new();
        for line in doc.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if let [_, name, old, status, ..] = cells[..] {
                rows.insert(name.trim_matches('`'), (old, status));
            }
        }
        for key in KEYS {
            let Some((old, status)) = rows.get(key.name) else {
                panic!("docs/CONFIGURATION.md has no row for {}", key.name);
            };
            let expected_old: Vec<String> = key.old.iter().map(|o| format!("`{o}`")).collect();
            assert_eq!(
                *old,
                expected_old.join(", ").as_str(),
                "{}'s old names",
                key.name
            );
            let expected_status = match key.status {
                Honoured(_) => "honoured",
                Set(_) => "set by sluice",
                Ignored(_) => "ignored",
                Refused(..) => "refused",
            };
            assert_eq!(*status, expected_status, "{}'s status", key.name);
        }
    }

    #[test]
    fn the_documentation_lists_every_key() {
        let doc = include_str!("../../../docs/CONFIGURATION.md");
        for key in KEYS {
            for name in std::iter::once(&key.name).chain(key.old) {
                assert!(
                    doc.contains(&format!("`{name}`")),
                    "docs/CONFIGURATION.md does not list {name}"
                );
            }
        }
    }
}
