//! Hadoop Streaming's command line: generic options (`-D`, `-conf`, `-files`, ...) followed by
//! the streaming options (`-input`, `-mapper`, ...), parsed as Hadoop parses them.

use std::path::PathBuf;

use super::conf::JobConf;
use super::submission::ShippedFiles;
use super::StreamingError;
use sluice_io::Location;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Action {
    /// Run the job.
    #[default]
    Run,
    /// Print the short usage (`-help`).
    Help,
    /// Print the detailed usage (`-info`).
    Info,
}

/// A parsed `sluice streaming` command line.
#[derive(Debug, Clone, Default)]
pub struct StreamingArgs {
    /// Every `-D`, `-jobconf` and `-conf` setting.
    pub conf: JobConf,
    /// `-input` paths (comma-separated lists are split), in order.
    pub inputs: Vec<String>,
    /// `-output`.
    pub output: Option<String>,
    /// `-mapper` command or class.
    pub mapper: Option<String>,
    /// `-combiner` command or class.
    pub combiner: Option<String>,
    /// `-reducer` command, class, `NONE` or `aggregate`.
    pub reducer: Option<String>,
    /// `-file`, `-files` and `-cacheFile` entries: a path, optionally `#name` for the name it
    /// gets in the task's working directory.
    pub files: Vec<String>,
    /// `-archives` and `-cacheArchive` entries: a path, optionally `#name` for the name its
    /// unpacked directory gets in the task's working directory.
    pub archives: Vec<String>,
    /// `-conf` files, as given (their settings are in `conf`).
    pub conf_files: Vec<String>,
    /// `-inputformat` class.
    pub input_format: Option<String>,
    /// `-outputformat` class.
    pub output_format: Option<String>,
    /// `-partitioner` class.
    pub partitioner: Option<String>,
    /// `-cmdenv NAME=VALUE` settings, in order.
    pub cmdenv: Vec<(String, String)>,
    /// `-io` identifier (`text`, `rawbytes`, `typedbytes`, `keyonlytext`).
    pub io: Option<String>,
    /// `-lazyOutput`.
    pub lazy_output: bool,
    /// `-verbose`.
    pub verbose: bool,
    /// `-D` values without a `=`, which Hadoop's option parser ignores: for a warning.
    pub ignored_defines: Vec<String>,
    /// `-files` entries left out because an earlier entry of another path has the same name
    /// in the working directory, with that entry: for a warning (Hadoop ships the first).
    pub shadowed_files: Vec<(String, String)>,
    /// Run, or print help.
    pub action: Action,
}

impl StreamingArgs {
    /// The local files and directories the job reads from the machine it is submitted from,
    /// as the command line names them: `-conf` files, then `-files`/`-file` paths, then
    /// `-archives` paths (without their `#name`), each once; not those on HDFS or S3, which
    /// each machine downloads. A job whose tasks run elsewhere ships them there (see
    /// [`ShippedFiles`]).
    pub fn local_files(&self) -> Vec<String> {
        let entries = self
            .files
            .iter()
            .chain(&self.archives)
            .map(|entry| {
                entry
                    .split_once('#')
                    .map_or(entry.as_str(), |(path, _)| path)
            })
            .filter(|path| !crate::localise::is_remote(path));
        let mut files: Vec<String> = Vec::new();
        for file in self.conf_files.iter().map(String::as_str).chain(entries) {
            if !files.iter().any(|f| f == file) {
                files.push(file.to_string());
            }
        }
        files
    }

    /// The `-output` location: a local path, `file:`, `hdfs://` or `s3://` URI, a plain path
    /// on the default file system (`-fs`, `-D fs.defaultFS`) as in Hadoop.
    ///
    /// # Errors
    /// [`StreamingError::Usage`] if `-output` is missing or is not a location.
    pub fn output_location(&self) -> Result<Location, StreamingError> {
        let output = self
            .output
            .as_deref()
            .ok_or_else(|| StreamingError::Usage("Required argument: -output".into()))?;
        self.location("-output", output)
    }

    /// The `-input` locations, resolved as [`StreamingArgs::output_location`].
    ///
    /// # Errors
    /// [`StreamingError::Usage`] if one is not a location.
    pub fn input_locations(&self) -> Result<Vec<Location>, StreamingError> {
        self.inputs
            .iter()
            .map(|input| self.location("-input", input))
            .collect()
    }

    /// `text`, given as `option`, as a location on this job's default file system.
    fn location(&self, option: &str, text: &str) -> Result<Location, StreamingError> {
        // Read trimmed, as Hadoop reads it (a site file may put the value on a line of its own).
        let default_fs = match self.conf.get("fs.defaultFS").map(str::trim) {
            Some(fs) => Some(
                self.conf
                    .substitute(fs, &[])
                    .map_err(|e| StreamingError::Usage(format!("-D fs.defaultFS: {e}")))?,
            ),
            None => None,
        };
        Location::resolve(text, default_fs.as_deref(), &user_name())
            .map_err(|e| StreamingError::Usage(format!("{option} {e}")))
    }
}

/// Hadoop's generic options (`GenericOptionsParser`).
const GENERIC: &[&str] = &[
    "-D",
    "-conf",
    "-fs",
    "-jt",
    "-files",
    "-libjars",
    "-archives",
    "-tokenCacheFile",
];

/// Options that only make sense with a Hadoop cluster or a JVM; refused with the reason.
const REFUSED: &[(&str, &str)] = &[
    ("-libjars", "Java code cannot run in sluice; the job's programs must be commands"),
    ("-tokenCacheFile", "sluice does not use security tokens"),
    ("-inputreader", "record readers are Java classes; only line input is supported"),
    ("-mapdebug", "debug scripts are not supported; the failing program's stderr is in the error and the task log"),
    ("-reducedebug", "debug scripts are not supported; the failing program's stderr is in the error and the task log"),
    ("-dfs", "sluice reads and writes local files"),
    ("-additionalconfspec", "use -conf"),
];

/// Parses Hadoop Streaming's arguments (everything after `sluice streaming`).
///
/// # Errors
/// [`StreamingError::Usage`] naming the offending option: unknown options, missing values,
/// malformed `-D`/`-cmdenv` settings, options sluice cannot honour.
pub fn parse_args(args: &[String]) -> Result<StreamingArgs, StreamingError> {
    parse_shipped_args(args, &ShippedFiles::default())
}

/// [`parse_args`] on a machine the job's local files were shipped to: `-conf` files are read
/// from their copies in `shipped`.
///
/// # Errors
/// As [`parse_args`].
pub fn parse_shipped_args(
    args: &[String],
    shipped: &ShippedFiles,
) -> Result<StreamingArgs, StreamingError> {
    let mut parsed = StreamingArgs::default();
    let mut i = 0;
    let usage = |m: String| StreamingError::Usage(m);
    // Hadoop's ToolRunner takes generic options only before the first streaming option.
    let mut streaming_seen = false;
    let mut cmdenv: Vec<String> = Vec::new();
    // The -conf files' settings: Hadoop loads them as resources beneath every setting of the
    // command line (-fs, -D, the streaming options), wherever they stand in it.
    let mut resources = JobConf::new();
    // -fs: Hadoop sets it before any -D, so a -D fs.defaultFS wins wherever it stands.
    let mut fs_option = None;
    let mut reduces_given = false;
    // -cacheFile and -cacheArchive entries (whether an archive, the entry), in order.
    let mut cached: Vec<(bool, String)> = Vec::new();
    while i < args.len() {
        let arg = args[i].as_str();
        let generic = GENERIC.contains(&arg) || (arg.starts_with("-D") && arg.len() > 2);
        if generic && streaming_seen {
            return Err(usage(format!(
                "Unrecognized option: {arg} (generic options such as -D and -files must come \
                 before the streaming options, as in Hadoop)"
            )));
        }
        streaming_seen |= !generic;
        let mut value = |name: &str| -> Result<String, StreamingError> {
            i += 1;
            args.get(i)
                .cloned()
                .ok_or_else(|| usage(format!("option {name} needs a value")))
        };
        match arg {
            "-D" => {
                let setting = value("-D")?;
                define(&mut parsed, &setting);
            }
            _ if arg.starts_with("-D") && arg.len() > 2 => define(&mut parsed, &arg[2..]),
            "-jobconf" => {
                let setting = value("-jobconf")?;
                set_property(&mut parsed.conf, &setting, "-jobconf")?;
            }
            "-conf" => {
                let file = value("-conf")?;
                resources.load_xml(&shipped.locate("-conf", &file)?)?;
                parsed.conf_files.push(file);
            }
            "-jt" => {
                let jt = value("-jt")?;
                if jt != "local" {
                    return Err(usage(format!(
                        "-jt {jt}: sluice runs the job itself (use -jt local or leave it out)"
                    )));
                }
            }
            "-fs" => {
                let fs = value("-fs")?;
                if !is_known_fs(&fs) {
                    return Err(usage(format!(
                        "-fs {fs}: sluice knows the local file system (file:///), HDFS \
                         (hdfs://namenode:port) and S3 (s3://bucket)"
                    )));
                }
                fs_option = Some(fs);
            }
            "-files" => {
                let list = value("-files")?;
                for entry in list.split(',').filter(|s| !s.is_empty()) {
                    let entry = decode_uri_entry("-files", entry)?;
                    check_file_entry("-files", &entry)?;
                    parsed.files.push(entry);
                }
            }
            "-archives" => {
                let list = value("-archives")?;
                for entry in list.split(',').filter(|s| !s.is_empty()) {
                    let entry = decode_uri_entry("-archives", entry)?;
                    check_file_entry("-archives", &entry)?;
                    parsed.archives.push(entry);
                }
            }
            // Streaming's deprecated forms of -files and -archives: URIs on the default file
            // system, each with its link name; resolved once the settings are all read.
            "-cacheFile" | "-cacheArchive" => {
                let list = value(arg)?;
                for entry in list.split(',').filter(|s| !s.is_empty()) {
                    if entry
                        .split_once('#')
                        .is_none_or(|(_, name)| name.is_empty())
                    {
                        return Err(usage(format!(
                            "{arg} {entry}: You need to specify the uris as \
                             scheme://path#linkname, Please specify a different link name for \
                             all of your caching URIs (as Hadoop)"
                        )));
                    }
                    cached.push((arg == "-cacheArchive", entry.to_string()));
                }
            }
            "-file" => {
                // Streaming's own option ships a file of the submitting machine only.
                let entry = value("-file")?;
                let path = entry
                    .split_once('#')
                    .map_or(entry.as_str(), |(path, _)| path);
                local_path("-file", path)?;
                parsed.files.push(entry);
            }
            "-input" => {
                let list = value("-input")?;
                parsed.inputs.extend(split_input_list(&list));
            }
            // An option that takes one value keeps the first it is given, as Hadoop's parser
            // does (a wrapper that appends a user's `-output` to its own writes where Hadoop
            // writes).
            "-output" => first(&mut parsed.output, value("-output")?),
            "-mapper" => first(&mut parsed.mapper, value("-mapper")?),
            "-combiner" => first(&mut parsed.combiner, value("-combiner")?),
            "-reducer" => first(&mut parsed.reducer, value("-reducer")?),
            "-inputformat" => first(&mut parsed.input_format, value("-inputformat")?),
            "-outputformat" => first(&mut parsed.output_format, value("-outputformat")?),
            "-partitioner" => first(&mut parsed.partitioner, value("-partitioner")?),
            "-numReduceTasks" => {
                let n = value("-numReduceTasks")?;
                if n.trim().parse::<u64>().is_err() {
                    return Err(usage(format!(
                        "-numReduceTasks {n}: expected a whole number"
                    )));
                }
                if !reduces_given {
                    reduces_given = true;
                    parsed.conf.set("mapreduce.job.reduces", n.trim());
                }
            }
            "-cmdenv" => {
                cmdenv.push(value("-cmdenv")?);
            }
            "-io" => first(&mut parsed.io, value("-io")?),
            "-lazyOutput" => parsed.lazy_output = true,
            "-verbose" | "-debug" => parsed.verbose = true,
            "-background" => {}
            "-help" | "--help" | "-h" => parsed.action = Action::Help,
            "-info" => parsed.action = Action::Info,
            _ => {
                if let Some((_, why)) = REFUSED.iter().find(|(name, _)| *name == arg) {
                    return Err(usage(format!("{arg} is not supported: {why}")));
                }
                return Err(usage(format!("Unrecognized option: {arg}")));
            }
        }
        i += 1;
    }
    for (option, command) in [
        ("-mapper", &parsed.mapper),
        ("-combiner", &parsed.combiner),
        ("-reducer", &parsed.reducer),
    ] {
        let Some(command) = command else { continue };
        if let Some(operator) = super::command::shell_operator(command) {
            return Err(usage(format!(
                "{option} {command}: there is no shell: a command runs as Hadoop runs it, split \
                 at spaces, so '{operator}' would reach the program as an argument; to run a \
                 pipeline, give it to a shell: {option} \"bash -c '...'\" (or ship a script \
                 with -files)"
            )));
        }
    }
    // Hadoop joins the -cmdenv settings with spaces and splits them again at spaces: a value
    // ends at its first space, what follows is a setting of its own, and a word without `=`
    // is dropped. Programs see exactly what they see under Hadoop.
    let joined = cmdenv.join(" ");
    // Hadoop's job keeps the settings under this key, after the empty HADOOP_ROOT_LOGGER it
    // always sets, replacing any -D value; the programs see it as `stream_addenvironment`.
    let mut environment = String::from("HADOOP_ROOT_LOGGER=");
    for setting in &cmdenv {
        environment.push(' ');
        environment.push_str(setting);
    }
    parsed.conf.set("stream.addenvironment", environment);
    if let Some(fs) = fs_option {
        if parsed.conf.get("fs.defaultFS").is_none() {
            parsed.conf.set("fs.defaultFS", fs);
        }
    }
    // `-D NAME=` (an empty value) unsets NAME, whatever the -conf files say: Hadoop writes it
    // into the job's file as an empty value, which its tasks read as no value at all.
    let emptied: Vec<String> = parsed
        .conf
        .entries()
        .filter(|(_, value)| value.is_empty())
        .map(|(name, _)| name.to_string())
        .collect();
    parsed.conf = resources.overridden_by(std::mem::take(&mut parsed.conf));
    for name in &emptied {
        parsed.conf.remove(name);
    }
    parsed.cmdenv = split_environment(&joined).collect();
    for (archive, entry) in cached {
        let option = if archive {
            "-cacheArchive"
        } else {
            "-cacheFile"
        };
        let decoded = decode_uri_entry(option, &entry)?;
        let (path, name) = decoded.split_once('#').unwrap_or((&decoded, ""));
        let location = parsed.location(option, path)?;
        let resolved = format!("{location}#{name}");
        check_file_entry(option, &resolved)?;
        if archive {
            parsed.archives.push(resolved);
        } else {
            parsed.files.push(resolved);
        }
    }
    parsed.shadowed_files = keep_first_of_each_name(&mut parsed.files);
    Ok(parsed)
}

/// Leaves out each `-files` entry whose name in the working directory an earlier entry has
/// (`-files d/x,e/x`), as Hadoop does: it ships the first and warns of the others, and drops
/// a repeated entry without a word. Returns the entries left out that named another path, each
/// with the entry kept in its place.
fn keep_first_of_each_name(files: &mut Vec<String>) -> Vec<(String, String)> {
    let mut kept: Vec<String> = Vec::with_capacity(files.len());
    let mut shadowed = Vec::new();
    for entry in files.drain(..) {
        match kept.iter().find(|k| link_name(k) == link_name(&entry)) {
            Some(first) if *first == entry => {}
            Some(first) => shadowed.push((entry, first.clone())),
            None => kept.push(entry),
        }
    }
    *files = kept;
    shadowed
}

/// The name a `-files` entry (`path` or `path#name`) gets in the working directory: its
/// `#name`, else its path's last name.
fn link_name(entry: &str) -> &str {
    match entry.split_once('#') {
        Some((_, name)) => name,
        None => entry
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or(entry),
    }
}

/// Cuts `-cmdenv` settings joined with spaces (as Hadoop keeps them in
/// `stream.addenvironment`) back into `(name, value)` pairs, as Hadoop's tasks do: a value ends
/// at its first space and a word without `=` is dropped.
pub(crate) fn split_environment(text: &str) -> impl Iterator<Item = (String, String)> + '_ {
    text.split(' ')
        .filter_map(|word| word.split_once('='))
        .map(|(name, value)| (name.to_string(), value.to_string()))
}

/// A `-files`, `-archives`, `-cacheFile` or `-cacheArchive` entry (`path` or `path#name`) with
/// its percent escapes decoded: Hadoop reads these entries as URIs, so `-files 'a%20b#c%41'`
/// ships the file `a b` as `cA`. A `%` that starts no escape is kept as it is (Hadoop refuses
/// the entry). Streaming's own `-file` takes a plain path and is not decoded, as in Hadoop.
///
/// # Errors
/// [`StreamingError::Usage`] if an escape stands for a `#` or for bytes that are not UTF-8.
fn decode_uri_entry(option: &str, entry: &str) -> Result<String, StreamingError> {
    let decode = |part: &str| {
        percent_encoding::percent_decode_str(part)
            .decode_utf8()
            .map(|text| text.into_owned())
            .map_err(|_| {
                StreamingError::Usage(format!(
                    "{option} {entry}: its percent escapes do not make UTF-8 text"
                ))
            })
    };
    let (path, name) = match entry.split_once('#') {
        Some((path, name)) => (decode(path)?, Some(decode(name)?)),
        None => (decode(entry)?, None),
    };
    if path.contains('#') || name.as_deref().is_some_and(|n| n.contains('#')) {
        return Err(StreamingError::Usage(format!(
            "{option} {entry}: an escaped '#' (%23) cannot be part of a name here"
        )));
    }
    Ok(match name {
        Some(name) => format!("{path}#{name}"),
        None => path,
    })
}

/// Refuses a `-files`/`-file`/`-archives` entry (`path` or `path#name`) whose path is
/// neither local nor on a remote store sluice serves (HDFS, S3).
fn check_file_entry(option: &str, entry: &str) -> Result<(), StreamingError> {
    let path = entry.split_once('#').map_or(entry, |(path, _)| path);
    if crate::localise::is_remote(path) {
        return Ok(());
    }
    local_path(option, path).map(drop)
}

/// Sets `slot` to `value` unless an earlier occurrence of its option set it.
fn first(slot: &mut Option<String>, value: String) {
    slot.get_or_insert(value);
}

/// Applies a `-D` setting. One without a `=` is noted and ignored, as Hadoop's
/// `GenericOptionsParser` ignores it (a wrapper that passes `-D flag` runs there); so is one
/// with an empty name, which no job reads (Hadoop sets it).
fn define(parsed: &mut StreamingArgs, setting: &str) {
    match setting.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => parsed.conf.set(name.trim(), value),
        _ => parsed.ignored_defines.push(setting.to_string()),
    }
}

/// Applies a `NAME=VALUE` setting.
fn set_property(conf: &mut JobConf, setting: &str, option: &str) -> Result<(), StreamingError> {
    match setting.split_once('=') {
        Some((name, value)) if !name.trim().is_empty() => {
            conf.set(name.trim(), value);
            Ok(())
        }
        _ => Err(StreamingError::Usage(format!(
            "{option} {setting}: expected NAME=VALUE"
        ))),
    }
}

/// Whether a default file system (`-fs`, `fs.defaultFS`) is one sluice can serve.
pub(crate) fn is_known_fs(uri: &str) -> bool {
    uri == "local"
        || uri.starts_with("file:")
        || Location::parse(uri).is_ok_and(|l| l.scheme() != sluice_io::Scheme::File)
}

/// The user Hadoop would act as: `HADOOP_USER_NAME`, else the login name.
fn user_name() -> String {
    ["HADOOP_USER_NAME", "USER", "LOGNAME"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "root".to_string())
}

/// Splits a comma-separated list of input paths as Hadoop's `FileInputFormat.addInputPaths`
/// does: commas inside `{...}` glob alternatives do not separate paths.
pub fn split_input_list(list: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut depth = 0usize;
    let mut current = String::new();
    for c in list.chars() {
        match c {
            '{' => {
                depth += 1;
                current.push(c);
            }
            '}' => {
                depth = depth.saturating_sub(1);
                current.push(c);
            }
            ',' if depth == 0 => {
                if !current.is_empty() {
                    paths.push(std::mem::take(&mut current));
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        paths.push(current);
    }
    paths
}

/// The local path that `location`, the value of `option`, names: a plain path, or a `file:`
/// URI as Hadoop accepts it (`file:///a/b`, `file:/a/b`, `file://localhost/a/b`).
///
/// # Errors
/// [`StreamingError::Usage`] naming the option, for another scheme (`hdfs://...`), another host
/// or a relative `file:` path.
pub fn local_path(option: &str, location: &str) -> Result<PathBuf, StreamingError> {
    sluice_io::local_path(location).map_err(|e| StreamingError::Usage(format!("{option} {e}")))
}

/// Short usage, printed by `-help` and after a usage error.
pub const USAGE: &str = "\
Usage: sluice streaming [CLUSTER OPTIONS] [GENERIC OPTIONS] [STREAMING OPTIONS]

Runs a Hadoop Streaming job natively: the same options, the same -D keys, the same output.

Cluster options (sluice's own, first; without them the job runs on this machine):
  --cluster workers=HOST:PORT,...   run on workers started with `sluice worker`
  --cluster yarn[:N]                run on N workers in YARN containers (default 2)
  --secret-file <file>              the cluster's secret (default: $SLUICE_SECRET_FILE)

Generic options (before the streaming options):
  -D <name=value>           set a job configuration property
  -conf <file.xml>          read properties from a Hadoop configuration file
  -files <f1,f2,...>        files placed in each task's working directory (path#name renames;
                            local paths, or hdfs:// and s3:// URIs, downloaded)
  -archives <a1,a2,...>     archives (.zip, .jar, .tar, .tar.gz, .tgz) unpacked into a
                            directory of each task's working directory, named as the
                            archive or by path#name (local, hdfs:// or s3://)
  -fs <uri>                 the default file system (file:///, hdfs://nn:8020, s3a://bucket)

Streaming options:
  -input <path>             input file, directory or glob; repeatable, comma-separated lists
  -output <path>            output directory; must not exist
  -mapper <cmd|class>       the map program (default: identity)
  -combiner <cmd|class>     a program run over each map task's sorted output
  -reducer <cmd|class>      the reduce program; NONE for a map-only job; aggregate for
                            Hadoop's value aggregators (LongValueSum:key, ...)
  -file <path>              a file for the tasks' working directory (same as -files)
  -cacheFile <uri#name>     deprecated -files: URIs on the default file system, each #name
  -cacheArchive <uri#name>  deprecated -archives, likewise
  -inputformat <class>      TextInputFormat (default), KeyValueTextInputFormat, or
                            org.apache.hadoop.mapred.lib.NLineInputFormat: a map task per
                            N lines, the mapper gets offset<TAB>line;
                            org.apache.hadoop.mapred.lib.CombineTextInputFormat: many small
                            files a map task (as large as split.maxsize; without it one task),
                            the mapper gets offset<TAB>line (the line alone with
                            -D stream.map.input.ignoreKey=true); SequenceFileInputFormat,
                            SequenceFileAsTextInputFormat, or
                            org.apache.hadoop.mapred.SequenceFileAsBinaryInputFormat
  -outputformat <class>     org.apache.hadoop.mapred.TextOutputFormat (default),
                            org.apache.hadoop.mapred.SequenceFileOutputFormat or
                            org.apache.hadoop.mapred.SequenceFileAsBinaryOutputFormat
  -partitioner <class>      HashPartitioner (default) or KeyFieldBasedPartitioner
  -numReduceTasks <n>       number of reduce tasks (default 1)
  -cmdenv <name=value>      environment variable for the programs; repeatable
  -io <identifier>          text (default), rawbytes, typedbytes or keyonlytext; or shm:
                            records cross through shared memory instead of pipes in all four
                            directions (the programs must link a sluice shm client;
                            docs/shm-protocol.md). To keep a program on pipes, set
                            stream.*=shm for the other directions instead
  -lazyOutput               create a part file only when a task writes something
  -verbose                  print the job's configuration and task logs' locations
  -info                     detailed help: the keys sluice understands
  -help                     this help
";

/// Detailed usage, printed by `-info`.
pub const INFO: &str = "\
Every key sluice honours, refuses or ignores, and why: docs/CONFIGURATION.md. Keys that
would change the output in a way sluice does not reproduce are refused, naming the reason.

Keys understood (old Hadoop 1 names are accepted too):
  mapreduce.job.reduces                       reduce tasks (as -numReduceTasks)
  stream.map.input.field.separator            between key and value written to the mapper
  stream.map.output.field.separator           splits the mapper's lines into key and value
  stream.num.map.output.key.fields            separators that belong to the key (default 1)
  stream.reduce.input.field.separator         between key and value written to the reducer
  stream.reduce.output.field.separator        splits the reducer's lines
  stream.num.reduce.output.key.fields         as for the map side
  stream.map.input.ignoreKey                  write only the value to the mapper
  stream.non.zero.exit.is.failure             false: a non-zero exit status is not a failure
  stream.map.input / stream.map.output / stream.reduce.input / stream.reduce.output
                                              text, rawbytes, typedbytes or keyonlytext; or
                                              shm: that direction goes through shared memory,
                                              framed as -io says (text by default)
  sluice.shm.ring.size                        bytes of each shared-memory ring: a power of two
                                              from 4096 to 1 GiB (default 1048576); the
                                              rings count against sluice.memory
  mapreduce.map.output.key.field.separator    field separator of key-field options
  mapreduce.partition.keypartitioner.options  -kPOS1[,POS2] for KeyFieldBasedPartitioner
  mapreduce.job.output.key.comparator.class   KeyFieldBasedComparator for secondary sort
  mapreduce.partition.keycomparator.options   -kPOS1[,POS2][n][r] for the comparator
  mapreduce.input.keyvaluelinerecordreader.key.value.separator
                                              KeyValueTextInputFormat's separator
  mapreduce.input.lineinputformat.linespermap lines per map task of NLineInputFormat
                                              (default 1; a whole number from 1)
  mapreduce.output.textoutputformat.separator between key and value in the part files
  mapreduce.output.fileoutputformat.compress  true: compress the part files (default false)
  mapreduce.output.fileoutputformat.compress.codec
                                              org.apache.hadoop.io.compress.X, X one of
                                              GzipCodec (.gz), BZip2Codec (.bz2),
                                              DefaultCodec (the default) or DeflateCodec
                                              (.deflate), ZStandardCodec (.zst), Lz4Codec
                                              (.lz4), SnappyCodec (.snappy)
  mapreduce.map.maxattempts / mapreduce.reduce.maxattempts
                                              runs of a failing task before the job fails (4)
  mapreduce.task.timeout                      ms a program may go without reading, writing
                                              or reporting before it is killed (600000; 0: never)
  mapreduce.input.fileinputformat.split.minsize
                                              smallest input split (splits are 32 MiB,
                                              fs.local.block.size, as in Hadoop's local mode)
  mapreduce.input.fileinputformat.split.maxsize
                                              CombineTextInputFormat's largest split (also
                                              split.minsize.per.node, split.minsize.per.rack)
  mapreduce.input.fileinputformat.input.dir.recursive
                                              true: read the files of directories inside
                                              input directories (default false: such a
                                              directory fails the job, as in Hadoop)
  sluice.memory                               memory budget of the job (default 1GiB)
  sluice.threads                              tasks run at once (default: the cores)
  sluice.console                              hadoop (default): Hadoop's console records on
                                              stderr; sluice: sluice's own layout
  sluice.progress                             false: no progress output (also
                                              SLUICE_PROGRESS=0)
  sluice.keep.logs                            true: keep the programs' stderr logs of a
                                              successful job (a failed job's are kept)

The programs start with the variables of -D mapreduce.map.env (mappers and combiners) or
mapreduce.reduce.env (reducers), NAME=VALUE,... as on a Hadoop cluster; then they get the
job configuration as environment variables (dots and other punctuation become '_':
mapreduce_task_id, mapreduce_map_input_file, ...), then the -cmdenv variables. A line
'reporter:counter:GROUP,NAME,AMOUNT' or 'reporter:status:MESSAGE' on a program's stderr
updates a counter or the task status; other stderr goes to the task's log.
";

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    /// `-files`, `-archives` and `-cacheFile` entries are URIs to Hadoop, decoded in their
    /// path and `#name`; `-file` takes a plain path, kept as given.
    #[test]
    fn uri_entries_are_percent_decoded_and_plain_paths_are_not() {
        let parsed = parse_args(&args(&[
            "-files",
            "s%41,d/a%20b#n%41me,x%zz",
            "-archives",
            "t%2Etgz",
            "-input",
            "in",
            "-output",
            "out",
            "-mapper",
            "cat",
            "-file",
            "p%41.py",
        ]))
        .unwrap();
        assert_eq!(parsed.files, ["sA", "d/a b#nAme", "x%zz", "p%41.py"]);
        assert_eq!(parsed.archives, ["t.tgz"]);
        let message = |entry: &str| {
            parse_args(&args(&["-files", entry, "-mapper", "cat"]))
                .unwrap_err()
                .to_string()
        };
        assert!(message("a%23b").contains("'#'"));
        assert!(message("a%FF").contains("UTF-8"));
    }

    /// Of `-files` entries with one name in the working directory the first is kept; one of
    /// another path is reported, a repeated entry is not.
    #[test]
    fn the_first_file_of_each_name_is_shipped() {
        let parsed = parse_args(&args(&[
            "-files",
            "d/x,e/x,d/x,f/y#x,g/x/,h/z",
            "-mapper",
            "cat",
        ]))
        .unwrap();
        assert_eq!(parsed.files, ["d/x", "h/z"]);
        assert_eq!(
            parsed.shadowed_files,
            [
                ("e/x".to_string(), "d/x".to_string()),
                ("f/y#x".to_string(), "d/x".to_string()),
                ("g/x/".to_string(), "d/x".to_string()),
            ]
        );
    }

    #[test]
    fn local_files_are_the_conf_files_then_the_shipped_paths_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("site.xml");
        std::fs::write(
            &conf,
            "<configuration><property><name>a.b</name><value>1</value></property></configuration>",
        )
        .unwrap();
        let conf = conf.display().to_string();
        let parsed = parse_args(&args(&[
            "-conf",
            &conf,
            "-files",
            "lib/map.py#m,dict.txt",
            "-archives",
            "env.tgz#env,dict.txt",
            "-file",
            "lib/map.py",
            "-mapper",
            "m",
            "-cacheArchive",
            "/abs/more.zip#more,hdfs://nn:8020/apps/remote.tgz#remote",
        ]))
        .unwrap();
        assert_eq!(
            parsed.local_files(),
            [
                conf.as_str(),
                "lib/map.py",
                "dict.txt",
                "env.tgz",
                "/abs/more.zip"
            ]
        );
        assert_eq!(
            parsed.archives,
            [
                "env.tgz#env",
                "dict.txt",
                "/abs/more.zip#more",
                "hdfs://nn:8020/apps/remote.tgz#remote"
            ]
        );
        assert_eq!(parsed.conf.get("a.b"), Some("1"));

        // Shipped: the copy is read, not the path named.
        let copy = dir.path().join("copy.xml");
        std::fs::write(
            &copy,
            "<configuration><property><name>a.b</name><value>2</value></property></configuration>",
        )
        .unwrap();
        let mut shipped = ShippedFiles::default();
        shipped.insert("elsewhere/site.xml", &copy);
        let parsed = parse_shipped_args(&args(&["-conf", "elsewhere/site.xml"]), &shipped).unwrap();
        assert_eq!(parsed.conf.get("a.b"), Some("2"));
        assert_eq!(parsed.conf_files, ["elsewhere/site.xml"]);
    }

    #[test]
    fn a_typical_command_line() {
        let parsed = parse_args(&args(&[
            "-D",
            "mapreduce.job.reduces=4",
            "-Dstream.num.map.output.key.fields=2",
            "-files",
            "m.py,r.py#reduce.py",
            "-input",
            "logs/",
            "-input",
            "a,b/{c,d}",
            "-output",
            "out",
            "-mapper",
            "python3 m.py",
            "-reducer",
            "python3 reduce.py",
            "-cmdenv",
            "LANG=C.UTF-8",
            "-cmdenv",
            "X=a=b",
            "-cmdenv",
            "SPACED=a b=2 c",
            "-cmdenv",
            "NOVALUE",
            "-lazyOutput",
        ]))
        .unwrap();
        assert_eq!(parsed.conf.get("mapred.reduce.tasks"), Some("4"));
        assert_eq!(
            parsed.conf.get("stream.num.map.output.key.fields"),
            Some("2")
        );
        assert_eq!(parsed.files, vec!["m.py", "r.py#reduce.py"]);
        assert_eq!(parsed.inputs, vec!["logs/", "a", "b/{c,d}"]);
        assert_eq!(parsed.output.as_deref(), Some("out"));
        assert_eq!(parsed.mapper.as_deref(), Some("python3 m.py"));
        assert_eq!(
            parsed.cmdenv,
            vec![
                ("LANG".to_string(), "C.UTF-8".to_string()),
                ("X".to_string(), "a=b".to_string()),
                ("SPACED".to_string(), "a".to_string()),
                ("b".to_string(), "2".to_string())
            ]
        );
        assert!(parsed.lazy_output);
        assert_eq!(parsed.action, Action::Run);
    }

    /// An option given twice keeps its first value, as Hadoop's `getOptionValue` does.
    #[test]
    fn an_option_given_twice_keeps_its_first_value() {
        let parsed = parse_args(&args(&[
            "-output",
            "first",
            "-mapper",
            "cat",
            "-numReduceTasks",
            "1",
            "-output",
            "second",
            "-mapper",
            "wc",
            "-numReduceTasks",
            "3",
            "-reducer",
            "a",
            "-reducer",
            "b",
        ]))
        .unwrap();
        assert_eq!(parsed.output.as_deref(), Some("first"));
        assert_eq!(parsed.mapper.as_deref(), Some("cat"));
        assert_eq!(parsed.reducer.as_deref(), Some("a"));
        assert_eq!(parsed.conf.get("mapreduce.job.reduces"), Some("1"));
    }

    #[test]
    fn num_reduce_tasks_is_the_reduces_key() {
        let parsed = parse_args(&args(&["-numReduceTasks", "0"])).unwrap();
        assert_eq!(parsed.conf.get("mapreduce.job.reduces"), Some("0"));
        assert!(parse_args(&args(&["-numReduceTasks", "x"])).is_err());
    }

    /// `-D flag` and `-D =x` are ignored, as Hadoop ignores them, and noted for a warning.
    #[test]
    fn defines_without_a_name_and_value_are_ignored() {
        let parsed =
            parse_args(&args(&["-D", "flag", "-Dother", "-D", "=x", "-D", "a=b"])).unwrap();
        assert_eq!(parsed.ignored_defines, ["flag", "other", "=x"]);
        assert_eq!(parsed.conf.get("a"), Some("b"));
        assert_eq!(parsed.conf.get("flag"), None);
    }

    #[test]
    fn bad_command_lines_say_what_is_wrong() {
        let message = |list: &[&str]| parse_args(&args(list)).unwrap_err().to_string();
        assert!(message(&["-bogus"]).contains("Unrecognized option: -bogus"));
        assert!(message(&["-input", "x", "-D", "a=b"]).contains("Unrecognized option: -D"));
        assert!(message(&["-mapper", "cat", "-files", "x"]).contains("before the streaming"));
        assert!(message(&["-input"]).contains("-input needs a value"));
        assert!(message(&["-jobconf", "novalue"]).contains("expected NAME=VALUE"));
        assert!(message(&["-libjars", "x.jar"]).contains("Java code"));
        assert!(message(&["-fs", "ftp://x"]).contains("sluice knows"));
        assert!(message(&["-mapper", "cat", "-archives", "x.tgz"]).contains("before the streaming"));
        assert!(message(&["-archives"]).contains("-archives needs a value"));
        let unknown = message(&["-archives", "gs://bucket/env.tgz#env"]);
        assert!(
            unknown.starts_with("-archives gs://bucket/env.tgz"),
            "{unknown}"
        );
        let pipeline = message(&["-mapper", "cut -f1 | sort"]);
        assert!(pipeline.contains("there is no shell"), "{pipeline}");
        assert!(pipeline.contains("bash -c"), "{pipeline}");
    }

    /// Streaming's deprecated `-cacheFile`/`-cacheArchive` take URIs on the default file
    /// system, each with a link name.
    #[test]
    fn cache_options_name_links_on_the_default_file_system() {
        let parsed = parse_args(&args(&[
            "-fs",
            "hdfs://nn:8020",
            "-mapper",
            "cat",
            "-cacheFile",
            "/apps/table.tsv#table,file:///local/x.txt#x",
            "-cacheArchive",
            "env.tgz#env",
        ]))
        .unwrap();
        assert_eq!(
            parsed.files,
            [
                "hdfs://nn:8020/apps/table.tsv#table",
                "file:///local/x.txt#x"
            ]
        );
        assert_eq!(
            parsed.archives,
            ["hdfs://nn:8020/user/root/env.tgz#env"].map(|a| a.replace("root", &user_name()))
        );
        assert_eq!(parsed.local_files(), ["file:///local/x.txt"]);
        for bad in ["/apps/table.tsv", "/apps/table.tsv#"] {
            let error = parse_args(&args(&["-cacheFile", bad]))
                .unwrap_err()
                .to_string();
            assert!(error.contains("scheme://path#linkname"), "{error}");
        }
    }

    #[test]
    fn help_and_info() {
        assert_eq!(parse_args(&args(&["-help"])).unwrap().action, Action::Help);
        assert_eq!(parse_args(&args(&["-info"])).unwrap().action, Action::Info);
    }

    #[test]
    fn input_lists_keep_glob_alternatives_together() {
        assert_eq!(split_input_list("a,,b"), vec!["a", "b"]);
        assert_eq!(split_input_list("x/{1,2}/*,y"), vec!["x/{1,2}/*", "y"]);
    }

    #[test]
    fn file_scheme_is_stripped() {
        let path = |l: &str| local_path("-input", l).unwrap();
        assert_eq!(path("file:///tmp/x"), PathBuf::from("/tmp/x"));
        assert_eq!(path("file:/tmp/x"), PathBuf::from("/tmp/x"));
        assert_eq!(path("file://localhost/tmp/x"), PathBuf::from("/tmp/x"));
        assert_eq!(path("rel/x"), PathBuf::from("rel/x"));
        let refused = local_path("-output", "hdfs://nn/x")
            .unwrap_err()
            .to_string();
        assert!(refused.starts_with("-output hdfs://nn/x: "), "{refused}");
    }

    #[test]
    fn output_may_be_a_file_uri() {
        let parsed = parse_args(&args(&["-output", "file:///abs/out"])).unwrap();
        assert_eq!(
            parsed.output_location().unwrap().to_string(),
            "file:///abs/out"
        );
        let parsed = parse_args(&args(&["-output", "s3a://b/out"])).unwrap();
        assert_eq!(parsed.output_location().unwrap().to_string(), "s3a://b/out");
        let parsed = parse_args(&args(&["-fs", "hdfs://nn:8020", "-output", "/o"])).unwrap();
        assert_eq!(
            parsed.output_location().unwrap().to_string(),
            "hdfs://nn:8020/o"
        );
        let parsed = parse_args(&args(&["-output", "gs://b/out"])).unwrap();
        assert!(parsed.output_location().is_err());
    }

    /// Hadoop's `GenericOptionsParser` applies `-fs`, then the `-conf` files (as resources
    /// beneath), then every `-D`, whatever their order; streaming's own options come after.
    #[test]
    fn the_command_line_stacks_as_hadoops_generic_options_parser_does() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("c.xml");
        std::fs::write(
            &conf,
            "<configuration>\
             <property><name>a</name><value>file</value></property>\
             <property><name>b</name><value>file</value></property>\
             <property><name>mapreduce.job.reduces</name><value>7</value></property>\
             </configuration>",
        )
        .unwrap();
        let conf = conf.display().to_string();
        let parsed = parse_args(&args(&[
            "-D",
            "fs.defaultFS=hdfs://from-d:8020",
            "-fs",
            "hdfs://from-fs:8020",
            "-D",
            "a=dash-d",
            "-conf",
            &conf,
            "-numReduceTasks",
            "2",
        ]))
        .unwrap();
        assert_eq!(parsed.conf.get("fs.defaultFS"), Some("hdfs://from-d:8020"));
        assert_eq!(parsed.conf.get("a"), Some("dash-d"));
        assert_eq!(parsed.conf.get("b"), Some("file"));
        assert_eq!(parsed.conf.get("mapreduce.job.reduces"), Some("2"));
        assert_eq!(parsed.conf.origin("b"), Some(conf.as_str()));
        assert_eq!(parsed.conf.origin("a"), None);
        let parsed = parse_args(&args(&["-fs", "hdfs://from-fs:8020"])).unwrap();
        assert_eq!(parsed.conf.get("fs.defaultFS"), Some("hdfs://from-fs:8020"));
    }
}
