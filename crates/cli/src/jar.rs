//! `sluice jar JAR ARGS`: the command lines of `hadoop jar` for the jars whose jobs sluice has
//! natively, so that wrappers and benchmark scripts built around `$HADOOP_CMD jar ...` run
//! unchanged with sluice as the command.
//!
//! - Hadoop Streaming's jar (`hadoop-streaming*.jar`): the arguments are `sluice streaming`'s.
//! - Hadoop's examples jar (`hadoop-mapreduce-examples*.jar`): `wordcount`, `grep`, `sort`,
//!   `terasort`, `teragen`, `teravalidate`, `randomwriter` and `randomtextwriter`, with
//!   Hadoop's generic options (`-D`, `-fs`) and the program's own arguments, become the
//!   `sluice run` (or `sluice gen`) command of the same job.
//! - Hadoop's job client tests jar (`hadoop-mapreduce-client-jobclient*-tests.jar`):
//!   `TestDFSIO` with its options becomes `sluice run dfsio`.
//!
//! No jar is read: only its file name says which it is, so no Hadoop needs to be installed.

/// What a `sluice jar` command line runs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum JarCommand {
    /// `sluice streaming` with these arguments.
    Streaming(Vec<String>),
    /// A program of Hadoop's examples jar, or TestDFSIO of its job client tests jar: `sluice`
    /// with these arguments (`run ...` or `gen ...`); failing, it exits as `program` does.
    Run {
        /// The `sluice` command line.
        args: Vec<String>,
        /// Whose exit statuses it takes.
        program: HadoopProgram,
    },
    /// `sluice jar`'s own help (`sluice jar -help`; any `-help` after the jar is the jar's).
    Help,
}

/// The Hadoop program a `sluice jar` command stands for, for its exit status: Hadoop's
/// programs end with an exception, which the examples jar's driver and TestDFSIO turn into
/// different statuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HadoopProgram {
    /// A program of the examples jar: 255 when its job is refused before it runs (an input
    /// missing, the output there, an argument that is not a number), 1 when the job fails.
    Example,
    /// TestDFSIO: 254 whatever failed.
    Dfsio,
}

impl HadoopProgram {
    /// The exit status for a command line `sluice` cannot parse (`teragen x`, `-nrFiles x`):
    /// Hadoop's program fails to parse the number and throws.
    pub(crate) fn bad_argument_status(self) -> u8 {
        match self {
            HadoopProgram::Example => DRIVER_ERROR,
            HadoopProgram::Dfsio => DFSIO_EXCEPTION,
        }
    }

    /// The exit status for a job that ended with an error, given whether it was refused
    /// before it ran; `None` where sluice's own status (1) is Hadoop's too.
    pub(crate) fn failure_status(self, refused_before_running: bool) -> Option<u8> {
        match self {
            HadoopProgram::Example => refused_before_running.then_some(DRIVER_ERROR),
            HadoopProgram::Dfsio => Some(DFSIO_EXCEPTION),
        }
    }
}

/// The examples sluice runs, with Hadoop's usage line of each.
const EXAMPLES: &[(&str, &str)] = &[
    ("wordcount", "wordcount <in> [<in>...] <out>"),
    ("grep", "grep <inDir> <outDir> <regex> [<group>]"),
    (
        "sort",
        "sort [-r <reduces>] [-inFormat <input format class>] [-outFormat <output format class>] \
         [-outKey <output key class>] [-outValue <output value class>] <input> <output>",
    ),
    ("terasort", "terasort <input dir> <output dir>"),
    ("teragen", "teragen <num rows> <output dir>"),
    ("teravalidate", "teravalidate <out-dir> <report-dir>"),
    ("randomwriter", "randomwriter <out-dir>"),
    (
        "randomtextwriter",
        "randomtextwriter [-outFormat <output format class>] <output>",
    ),
];

/// The class Hadoop's `sort` gives its output keys and values unless told (`-outKey`,
/// `-outValue`); input of other classes fails it, and so it fails sluice's.
const SORT_DEFAULT_CLASS: &str = "org.apache.hadoop.io.BytesWritable";

/// Why `sluice jar` does not run a command line: the message for the user, and the exit
/// status, Hadoop's for the same command line where Hadoop refuses it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refusal {
    /// What is wrong, for the user.
    pub(crate) message: String,
    /// The exit status: as `hadoop jar` exits for the same mistake (no example program or
    /// an unknown one 255, an example's usage error 2, TeraValidate's 1), else 1.
    pub(crate) code: u8,
}

impl Refusal {
    /// A program of a Hadoop jar that sluice does not run: sluice's refusal (1) if the jar's
    /// driver has it (`hadoop_only`), else the driver's refusal of an unknown program.
    fn program_not_run(message: String, program: &str, hadoop_only: &[&str]) -> Refusal {
        let code = if hadoop_only.contains(&program) {
            1
        } else {
            DRIVER_ERROR
        };
        Refusal { message, code }
    }
}

impl From<String> for Refusal {
    /// A refusal of sluice's own (something Hadoop would run): exit status 1.
    fn from(message: String) -> Refusal {
        Refusal { message, code: 1 }
    }
}

/// Exit status (their `-1`) of the drivers of Hadoop's jars (`ExampleDriver`,
/// `MapredTestDriver`) when no program or an unknown one is named; of an example whose job an
/// exception stops before it runs (an input missing, the output there, an argument that is
/// not a number); and of TestDFSIO's usage errors.
const DRIVER_ERROR: u8 = 255;

/// The programs of Hadoop's examples jar that sluice does not run: naming one is a refusal of
/// sluice's (exit status 1), not the unknown program Hadoop would refuse.
const HADOOP_ONLY_EXAMPLES: &[&str] = &[
    "aggregatewordcount",
    "aggregatewordhist",
    "bbp",
    "dbcount",
    "distbbp",
    "join",
    "multifilewc",
    "pentomino",
    "pi",
    "secondarysort",
    "sudoku",
    "wordmean",
    "wordmedian",
    "wordstandarddeviation",
];

/// The exit status of example `program`'s usage error in Hadoop: 2 (`printUsage`, `return 2`),
/// but TeraValidate's is 1.
fn usage_status(program: &str) -> u8 {
    if program == "teravalidate" {
        1
    } else {
        2
    }
}

/// The command `sluice jar JAR ARGS` stands for.
///
/// # Errors
/// A message for the user, with the exit status: a jar sluice does not run, an example it
/// does not have, a generic option it cannot honour, or the wrong number of arguments (with
/// Hadoop's usage line).
pub(crate) fn command(jar: &str, args: &[String]) -> Result<JarCommand, Refusal> {
    if ["-h", "--help", "-help"].contains(&jar) {
        return Ok(JarCommand::Help);
    }
    let name = jar.rsplit('/').next().unwrap_or(jar);
    if !name.ends_with(".jar") {
        return Err(format!("{jar}: not a jar (its name does not end in .jar)").into());
    }
    if name.starts_with("hadoop-streaming") {
        return Ok(JarCommand::Streaming(args.to_vec()));
    }
    if name.starts_with("hadoop-mapreduce-examples") {
        return example(args).map(|args| JarCommand::Run {
            args,
            program: HadoopProgram::Example,
        });
    }
    if name.starts_with("hadoop-mapreduce-client-jobclient") && name.ends_with("-tests.jar") {
        return jobclient_test(args).map(|args| JarCommand::Run {
            args,
            program: HadoopProgram::Dfsio,
        });
    }
    Err(Refusal::from(format!(
        "{jar}: sluice runs Hadoop Streaming's jar (hadoop-streaming*.jar), the {} jobs of \
         Hadoop's examples jar (hadoop-mapreduce-examples*.jar) and TestDFSIO of its job \
         client tests jar (hadoop-mapreduce-client-jobclient*-tests.jar) only; the jobs of \
         other jars are Java code, which sluice does not run",
        known()
    )))
}

/// Exit status of TestDFSIO (its `-2`) when an exception ends it: a number it cannot parse, a
/// job that fails or cannot start (TestDFSIO turns a usage error into `-1`, 255).
const DFSIO_EXCEPTION: u8 = 254;

/// The programs of the job client tests jar's driver (Hadoop 3.4's `MapredTestDriver`) other
/// than TestDFSIO: naming one is a refusal of sluice's (exit status 1), not the unknown program
/// Hadoop refuses with 255.
const HADOOP_ONLY_TESTS: &[&str] = &[
    "DFSCIOTest",
    "DistributedFSCheck",
    "JHLogAnalyzer",
    "MRReliabilityTest",
    "NNdataGenerator",
    "NNloadGenerator",
    "NNloadGeneratorMR",
    "NNstructureGenerator",
    "SliveTest",
    "fail",
    "filebench",
    "gsleep",
    "largesorter",
    "loadgen",
    "mapredtest",
    "minicluster",
    "mrbench",
    "nnbench",
    "nnbenchWithoutMR",
    "sleep",
    "testbigmapoutput",
    "testfilesystem",
    "testmapredsort",
    "testsequencefile",
    "testsequencefileinputformat",
    "testtextinputformat",
    "threadedmapbench",
    "timelineperformance",
];

/// TestDFSIO's usage line (Hadoop 3.4), for its errors.
const TEST_DFSIO_USAGE: &str = "TestDFSIO [genericOptions] -read [-random | -backward | -skip \
     [-skipSize Size]] | -write | -append | -truncate | -clean [-compression codecClassName] \
     [-nrFiles N] [-size Size[B|KB|MB|GB|TB]] [-resFile resultFileName] [-bufferSize Bytes] \
     [-storagePolicy storagePolicyName] [-erasureCodePolicy erasureCodePolicyName]";

/// `sluice run dfsio ...` for the job client tests jar's `TestDFSIO [GENERIC OPTIONS] ARGS`.
/// The test's directory is `-D test.build.data` or TestDFSIO's `/benchmarks/TestDFSIO` on the
/// default file system, as in Hadoop.
///
/// # Errors
/// A refusal with the status Hadoop's driver and TestDFSIO exit with for the same command
/// line: 255 for no program, an unknown one or a usage error, 254 for a size that is not a
/// number; 1 for what sluice does not run.
fn jobclient_test(args: &[String]) -> Result<Vec<String>, Refusal> {
    let Some((program, rest)) = args.split_first() else {
        return Err(Refusal {
            message: "a program must be given: sluice runs TestDFSIO of this jar".to_string(),
            code: DRIVER_ERROR,
        });
    };
    if program != "TestDFSIO" {
        return Err(Refusal::program_not_run(
            format!("{program}: sluice runs TestDFSIO of this jar natively, not {program}"),
            program,
            HADOOP_ONLY_TESTS,
        ));
    }
    let (settings, options) = generic_options(rest)?;
    let directory = settings
        .iter()
        .rev()
        .find_map(|setting| setting.strip_prefix("test.build.data="))
        .unwrap_or("/benchmarks/TestDFSIO")
        .to_string();
    let usage = |problem: String| Refusal {
        message: format!("{problem}\nUsage: {TEST_DFSIO_USAGE}"),
        code: DRIVER_ERROR,
    };
    let unsupported = |option: &str| {
        Refusal::from(format!(
            "{option} is not supported: sluice's TestDFSIO writes, reads back whole and cleans, \
             uncompressed, in parallel, with the store's own policies\nUsage: {TEST_DFSIO_USAGE}"
        ))
    };
    // TestDFSIO's defaults: one file of 1 MB.
    let (mut mode, mut files, mut bytes, mut result_file) = (None, "1".to_string(), 1 << 20, None);
    let mut options = options.iter();
    while let Some(option) = options.next() {
        // A missing value is an exception in TestDFSIO (it reads past its arguments).
        let mut value = || {
            option_value(&mut options, option).map_err(|problem| Refusal {
                code: DFSIO_EXCEPTION,
                ..usage(problem)
            })
        };
        // TestDFSIO compares its options ignoring case; `-seq` and `-compression` by prefix.
        let name = option.to_ascii_lowercase();
        match name.as_str() {
            "-write" | "-read" | "-clean" => mode = Some(format!("-{name}")),
            "-nrfiles" => files = value()?,
            "-size" | "-filesize" => {
                let size = value()?;
                bytes = dfsio_size(&size).map_err(|e| Refusal {
                    message: format!("{option} {size}: {e}"),
                    code: DFSIO_EXCEPTION,
                })?;
            }
            "-resfile" => result_file = Some(value()?),
            // How large each read or write call is: sluice's stores choose their own.
            "-buffersize" => drop(value()?),
            "-append" | "-truncate" | "-random" | "-backward" | "-skip" | "-skipsize"
            | "-storagepolicy" | "-erasurecodepolicy" => return Err(unsupported(option)),
            prefixed if prefixed.starts_with("-seq") || prefixed.starts_with("-compression") => {
                return Err(unsupported(option))
            }
            _ => return Err(usage(format!("Illegal argument: {option}"))),
        }
    }
    let Some(mode) = mode else {
        return Err(usage("-write, -read or -clean must be given".to_string()));
    };
    let mut command = vec!["run".to_string(), "dfsio".to_string(), mode.clone()];
    command.extend(defines(settings));
    if mode != "--clean" {
        command.extend([
            "--files".to_string(),
            files,
            "--size".to_string(),
            bytes.to_string(),
        ]);
    }
    if let Some(file) = result_file {
        command.extend(["--result-file".to_string(), file]);
    }
    command.extend(["--output".to_string(), directory]);
    Ok(command)
}

/// Bytes of TestDFSIO's `-size`: a whole number with an optional unit `B`, `KB`, `MB`, `GB`
/// or `TB` (any case), each 1024 times the last; `MB` when none is given, as in Hadoop.
fn dfsio_size(text: &str) -> Result<u64, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| "not a whole number of bytes, KB, MB, GB or TB".to_string())?;
    let shift = match unit.to_ascii_uppercase().as_str() {
        "B" => 0,
        "KB" => 10,
        "" | "MB" => 20,
        "GB" => 30,
        "TB" => 40,
        _ => return Err(format!("unknown unit {unit:?} (B, KB, MB, GB or TB)")),
    };
    number
        .checked_mul(1 << shift)
        .ok_or_else(|| "too large".to_string())
}

/// The names of [`EXAMPLES`], for messages.
fn known() -> String {
    let names: Vec<&str> = EXAMPLES.iter().map(|(name, _)| *name).collect();
    names.join(", ")
}

/// `sluice run ...` for the examples jar's `PROGRAM [GENERIC OPTIONS] ARGS`.
fn example(args: &[String]) -> Result<Vec<String>, Refusal> {
    let Some((program, rest)) = args.split_first() else {
        return Err(Refusal {
            message: format!(
                "an example program must be given: one of {} (sluice runs these natively)",
                known()
            ),
            code: DRIVER_ERROR,
        });
    };
    let Some((_, usage)) = EXAMPLES.iter().find(|(name, _)| name == program) else {
        return Err(Refusal::program_not_run(
            format!(
                "{program}: sluice runs the examples {} natively, not {program}",
                known()
            ),
            program,
            HADOOP_ONLY_EXAMPLES,
        ));
    };
    let usage_error = || Refusal {
        message: format!("Usage: {usage}"),
        code: usage_status(program),
    };
    let (settings, positional) = generic_options(rest)?;
    let mut run = defines(settings);
    let flag = |run: &mut Vec<String>, name: &str, value: &str| {
        run.push(name.to_string());
        run.push(value.to_string());
    };
    match (program.as_str(), positional.as_slice()) {
        ("wordcount", [inputs @ .., output]) if !inputs.is_empty() => {
            // Each argument is one path (`addInputPath`), commas and all, unlike grep's and
            // sort's, which Hadoop splits at commas.
            for input in inputs {
                flag(&mut run, "--input-path", input);
            }
            flag(&mut run, "--output", output);
        }
        ("grep", [input, output, regex, group @ ..]) if group.len() <= 1 => {
            // Hadoop compiles the pattern as Java's: what sluice cannot match as Java does is
            // refused here, before the job, in Hadoop's words.
            if let Err(e) = sluice_hadoop::java_regex::translate(regex) {
                return Err(Refusal {
                    message: format!("java.util.regex.PatternSyntaxException: {e}\n{regex}"),
                    code: DRIVER_ERROR,
                });
            }
            flag(&mut run, "--input", input);
            flag(&mut run, "--output", output);
            flag(&mut run, "--pattern", regex);
            flag(&mut run, "--regex-syntax", "java");
            if let [group] = group {
                flag(&mut run, "--group", group);
            }
        }
        // TeraValidate's `--input` is one location already, never split.
        ("teravalidate", [input, output]) => {
            flag(&mut run, "--input", input);
            flag(&mut run, "--output", output);
        }
        ("terasort", [input, output]) => {
            flag(&mut run, "--input-path", input);
            flag(&mut run, "--output", output);
        }
        ("teragen", [rows, output]) => {
            flag(&mut run, "--rows", rows);
            flag(&mut run, "--output", output);
        }
        ("sort", args) => sort(args, &mut run).map_err(|e| Refusal {
            message: format!("{}\nUsage: {usage}", e.message),
            code: e.code,
        })?,
        ("randomwriter", [output]) => flag(&mut run, "--output", output),
        ("randomtextwriter", args) => {
            // Hadoop takes `-outFormat CLASS` anywhere and the one argument left as the output.
            let mut outputs = Vec::new();
            let mut args = args.iter();
            while let Some(arg) = args.next() {
                if arg == "-outFormat" {
                    let class = option_value(&mut args, arg)?;
                    sequence_file_format(arg, &class, "SequenceFileOutputFormat")?;
                } else {
                    outputs.push(arg);
                }
            }
            let [output] = outputs.as_slice() else {
                return Err(usage_error());
            };
            flag(&mut run, "--output", output);
        }
        _ => return Err(usage_error()),
    }
    let verb = if program.starts_with("random") {
        // Without a total, Hadoop writes `mapsperhost` (10) maps on each host: one host here.
        let prefix = format!("mapreduce.{program}.");
        let given = |name: &str| {
            run.iter()
                .any(|arg| arg.starts_with(&format!("{prefix}{name}=")))
        };
        if !given("totalbytes") && !given("mapsperhost") {
            run.extend(["-D".to_string(), format!("{prefix}mapsperhost=10")]);
        }
        "gen"
    } else {
        "run"
    };
    let mut command = vec![verb.to_string(), program.clone()];
    command.append(&mut run);
    Ok(command)
}

/// `sluice run sort` options for the arguments of Hadoop's `sort` example, which parses its
/// options wherever they stand and takes the two arguments left as input and output. The
/// input is SequenceFiles (Hadoop's default input format); the key and value classes, Hadoop's
/// `BytesWritable` unless given, become the job's output classes, which the input's must be.
fn sort(args: &[String], run: &mut Vec<String>) -> Result<(), Refusal> {
    let mut classes = [
        SORT_DEFAULT_CLASS.to_string(),
        SORT_DEFAULT_CLASS.to_string(),
    ];
    let mut paths = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        // A missing value is a usage error in Hadoop's sort too.
        let mut value = || {
            option_value(&mut args, arg).map_err(|message| Refusal {
                message,
                code: usage_status("sort"),
            })
        };
        match arg.as_str() {
            "-r" => run.extend(["--reducers".to_string(), value()?]),
            "-inFormat" => sequence_file_format(arg, &value()?, "SequenceFileInputFormat")?,
            "-outFormat" => sequence_file_format(arg, &value()?, "SequenceFileOutputFormat")?,
            "-outKey" => classes[0] = value()?,
            "-outValue" => classes[1] = value()?,
            "-totalOrder" => {
                return Err(
                    "-totalOrder is not supported: sluice's sort partitions keys by \
                            hash, as Hadoop's sort does without it"
                        .to_string()
                        .into(),
                )
            }
            _ => paths.push(arg),
        }
    }
    let [input, output] = paths.as_slice() else {
        return Err(Refusal {
            message: format!(
                "sort takes an input and an output, not {} argument(s)",
                paths.len()
            ),
            code: usage_status("sort"),
        });
    };
    let [key, value] = classes;
    run.extend([
        "-D".to_string(),
        format!("mapreduce.job.output.key.class={key}"),
        "-D".to_string(),
        format!("mapreduce.job.output.value.class={value}"),
        "--input-format".to_string(),
        "sequencefile".to_string(),
        "--input".to_string(),
        (*input).clone(),
        "--output".to_string(),
        (*output).clone(),
    ]);
    Ok(())
}

/// Accepts `class` for `option` only if it is Hadoop's SequenceFile format `expected` (the
/// only format these examples' jobs read or write in sluice).
fn sequence_file_format(option: &str, class: &str, expected: &str) -> Result<(), String> {
    let name = class.rsplit('.').next().unwrap_or(class);
    if name == expected {
        Ok(())
    } else {
        Err(format!(
            "{option} {class}: sluice runs this example with Hadoop's {expected} only"
        ))
    }
}

/// The argument after `option` in `args`, which `option` needs.
fn option_value<'a>(
    args: &mut impl Iterator<Item = &'a String>,
    option: &str,
) -> Result<String, String> {
    args.next()
        .cloned()
        .ok_or_else(|| format!("{option} needs a value"))
}

/// `settings` (`key=value`) as `sluice run` options: `-D` before each. One without a `=` or a
/// name is left out with a warning, as Hadoop's `GenericOptionsParser` ignores it.
fn defines(settings: Vec<String>) -> Vec<String> {
    settings
        .into_iter()
        .filter(|setting| {
            let named = setting
                .split_once('=')
                .is_some_and(|(name, _)| !name.trim().is_empty());
            if !named {
                crate::console::log(
                    "WARN",
                    crate::console::SLUICE,
                    &format!("-D {setting}: not NAME=VALUE; ignored, as Hadoop ignores it"),
                );
            }
            named
        })
        .flat_map(|setting| ["-D".to_string(), setting])
        .collect()
}

/// Hadoop's generic options at the start of `args`, as settings (`key=value`), and the
/// arguments after them. `-D key=value` (or `-Dkey=value`) is kept; `-fs URI` is
/// `fs.defaultFS=URI`; a `-conf FILE`'s properties come first, so that every `-D` wins over
/// them as in Hadoop; `-jt local` is taken; the options that ship Java code or name a Hadoop
/// service are refused.
fn generic_options(args: &[String]) -> Result<(Vec<String>, Vec<String>), String> {
    let mut from_files = Vec::new();
    let mut settings = Vec::new();
    let mut rest = args.iter();
    let mut positional = Vec::new();
    while let Some(arg) = rest.next() {
        let mut value = || option_value(&mut rest, arg).map_err(|e| format!("generic option {e}"));
        match arg.as_str() {
            "-D" => settings.push(value()?),
            "-fs" => settings.push(format!("fs.defaultFS={}", value()?)),
            "-conf" => {
                let file = value()?;
                let mut conf = sluice_streaming::conf::JobConf::new();
                conf.load_xml(std::path::Path::new(&file))
                    .map_err(|e| e.to_string())?;
                from_files.extend(conf.entries().map(|(key, value)| format!("{key}={value}")));
            }
            "-jt" => {
                let tracker = value()?;
                if tracker != "local" {
                    return Err(format!(
                        "generic option -jt {tracker}: sluice runs the job itself (use -jt \
                         local, or leave it out)"
                    ));
                }
            }
            "-libjars" | "-files" | "-archives" | "-tokenCacheFile" => {
                return Err(format!(
                    "generic option {arg} is not supported by sluice's built-in jobs (they need \
                     no jars, files or Hadoop services; settings go in -D key=value or -conf FILE)"
                ));
            }
            joined if joined.len() > 2 && joined.starts_with("-D") => {
                let setting = joined.strip_prefix("-D").unwrap_or(joined);
                settings.push(setting.to_string());
            }
            _ => {
                positional.push(arg.clone());
                positional.extend(rest.cloned());
                break;
            }
        }
    }
    from_files.append(&mut settings);
    Ok((from_files, positional))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs_example(args: &[&str]) -> JarCommand {
        JarCommand::Run {
            args: strings(args),
            program: HadoopProgram::Example,
        }
    }

    fn runs_dfsio(args: &[&str]) -> JarCommand {
        JarCommand::Run {
            args: strings(args),
            program: HadoopProgram::Dfsio,
        }
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_string()).collect()
    }

    fn run(jar: &str, args: &[&str]) -> Result<JarCommand, String> {
        command(jar, &strings(args)).map_err(|r| r.message)
    }

    #[test]
    fn help_before_the_jar_is_sluice_jars_own() {
        for help in ["-h", "--help", "-help"] {
            assert_eq!(run(help, &[]), Ok(JarCommand::Help));
        }
        // After the jar, -help is the jar's: streaming's usage, not sluice jar's.
        assert_eq!(
            run("hadoop-streaming.jar", &["-help"]),
            Ok(JarCommand::Streaming(strings(&["-help"])))
        );
    }

    #[test]
    fn the_streaming_jar_passes_its_arguments_on() {
        assert_eq!(
            run(
                "/opt/hadoop/hadoop-streaming-3.4.3.jar",
                &["-input", "a", "-D", "k=v"]
            ),
            Ok(JarCommand::Streaming(strings(&[
                "-input", "a", "-D", "k=v"
            ])))
        );
        assert_eq!(
            run("hadoop-streaming.jar", &[]),
            Ok(JarCommand::Streaming(Vec::new()))
        );
    }

    #[test]
    fn examples_become_run_commands() {
        let jar = "/usr/lib/hadoop-mapreduce/hadoop-mapreduce-examples-3.4.3.jar";
        assert_eq!(
            run(
                jar,
                &[
                    "wordcount",
                    "-D",
                    "mapreduce.job.reduces=3",
                    "in1",
                    "in2",
                    "out"
                ]
            ),
            Ok(runs_example(&[
                "run",
                "wordcount",
                "-D",
                "mapreduce.job.reduces=3",
                "--input-path",
                "in1",
                "--input-path",
                "in2",
                "--output",
                "out"
            ]))
        );
        assert_eq!(
            run(jar, &["grep", "-Da=b", "in", "out", "dfs[a-z.]+", "0"]),
            Ok(runs_example(&[
                "run",
                "grep",
                "-D",
                "a=b",
                "--input",
                "in",
                "--output",
                "out",
                "--pattern",
                "dfs[a-z.]+",
                "--regex-syntax",
                "java",
                "--group",
                "0"
            ]))
        );
        assert_eq!(
            run(jar, &["teragen", "-fs", "hdfs://nn:8020", "10m", "gen"]),
            Ok(runs_example(&[
                "run",
                "teragen",
                "-D",
                "fs.defaultFS=hdfs://nn:8020",
                "--rows",
                "10m",
                "--output",
                "gen"
            ]))
        );
        // A setting without `=` or a name is ignored, as Hadoop ignores it.
        assert_eq!(
            run(
                jar,
                &["wordcount", "-D", "flag", "-D=x", "-Da=b", "in", "out"]
            ),
            Ok(runs_example(&[
                "run",
                "wordcount",
                "-D",
                "a=b",
                "--input-path",
                "in",
                "--output",
                "out"
            ]))
        );
        assert_eq!(
            run(jar, &["teravalidate", "sorted", "report"]),
            Ok(runs_example(&[
                "run",
                "teravalidate",
                "--input",
                "sorted",
                "--output",
                "report"
            ]))
        );
    }

    #[test]
    fn sort_and_the_random_writers_become_sluice_commands() {
        let jar = "hadoop-mapreduce-examples-3.4.3.jar";
        // HiBench's sort: its options in Hadoop's order, or anywhere among the paths.
        let expected = Ok(runs_example(&[
            "run",
            "sort",
            "-D",
            "mapreduce.job.reduces=9",
            "--reducers",
            "4",
            "-D",
            "mapreduce.job.output.key.class=org.apache.hadoop.io.Text",
            "-D",
            "mapreduce.job.output.value.class=org.apache.hadoop.io.Text",
            "--input-format",
            "sequencefile",
            "--input",
            "hdfs:///in",
            "--output",
            "hdfs:///out",
        ]));
        let text = "org.apache.hadoop.io.Text";
        let options = ["-outKey", text, "-outValue", text, "-r", "4"];
        let mut in_front = vec!["sort", "-D", "mapreduce.job.reduces=9"];
        in_front.extend(options);
        in_front.extend(["hdfs:///in", "hdfs:///out"]);
        assert_eq!(run(jar, &in_front), expected);
        let mut among = vec!["sort", "-D", "mapreduce.job.reduces=9", "hdfs:///in"];
        among.extend(options);
        among.push("hdfs:///out");
        assert_eq!(run(jar, &among), expected);
        // Unless told, Hadoop's sort expects BytesWritable (RandomWriter's classes).
        assert_eq!(
            run(
                jar,
                &[
                    "sort",
                    "-inFormat",
                    "org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat",
                    "in",
                    "out"
                ]
            ),
            Ok(runs_example(&[
                "run",
                "sort",
                "-D",
                "mapreduce.job.output.key.class=org.apache.hadoop.io.BytesWritable",
                "-D",
                "mapreduce.job.output.value.class=org.apache.hadoop.io.BytesWritable",
                "--input-format",
                "sequencefile",
                "--input",
                "in",
                "--output",
                "out",
            ]))
        );
        assert_eq!(
            run(
                jar,
                &[
                    "randomtextwriter",
                    "-D",
                    "mapreduce.randomtextwriter.totalbytes=1000000",
                    "-outFormat",
                    "org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat",
                    "rtw"
                ]
            ),
            Ok(runs_example(&[
                "gen",
                "randomtextwriter",
                "-D",
                "mapreduce.randomtextwriter.totalbytes=1000000",
                "--output",
                "rtw",
            ]))
        );
        assert_eq!(
            run(jar, &["randomwriter", "rw"]),
            Ok(runs_example(&[
                "gen",
                "randomwriter",
                "--output",
                "rw",
                "-D",
                "mapreduce.randomwriter.mapsperhost=10",
            ]))
        );
    }

    #[test]
    fn testdfsio_becomes_run_dfsio() {
        let jar =
            "/opt/hadoop/share/hadoop/mapreduce/hadoop-mapreduce-client-jobclient-3.4.3-tests.jar";
        assert_eq!(
            run(
                jar,
                &[
                    "TestDFSIO",
                    "-write",
                    "-nrFiles",
                    "10",
                    "-size",
                    "1GB",
                    "-resFile",
                    "r.log"
                ]
            ),
            Ok(runs_dfsio(&[
                "run",
                "dfsio",
                "--write",
                "--files",
                "10",
                "--size",
                "1073741824",
                "--result-file",
                "r.log",
                "--output",
                "/benchmarks/TestDFSIO",
            ]))
        );
        // Any case; one file of 1 MB unless told.
        assert_eq!(
            run(jar, &["TestDFSIO", "-READ", "-bufferSize", "1000000"]),
            Ok(runs_dfsio(&[
                "run",
                "dfsio",
                "--read",
                "--files",
                "1",
                "--size",
                "1048576",
                "--output",
                "/benchmarks/TestDFSIO",
            ]))
        );
        assert_eq!(
            run(jar, &["TestDFSIO", "-Dtest.build.data=hdfs:///b", "-clean"]),
            Ok(runs_dfsio(&[
                "run",
                "dfsio",
                "--clean",
                "-D",
                "test.build.data=hdfs:///b",
                "--output",
                "hdfs:///b",
            ]))
        );
        for (size, bytes) in [
            ("5", 5 << 20),
            ("10b", 10),
            ("3KB", 3 << 10),
            ("2mb", 2 << 20),
            ("7GB", 7 << 30),
            ("1TB", 1 << 40),
        ] {
            assert_eq!(dfsio_size(size), Ok(bytes), "{size}");
        }
        for size in ["", "MB", "1.5GB", "3PB", "-1", "99999999999TB"] {
            assert!(dfsio_size(size).is_err(), "{size}");
        }
        for (args, says) in [
            (
                &["TestDFSIO", "-nrFiles", "2"][..],
                "-write, -read or -clean",
            ),
            (
                &["TestDFSIO", "-read", "-random"][..],
                "-random is not supported",
            ),
            (&["TestDFSIO", "-write", "-size"][..], "-size needs a value"),
            (
                &["TestDFSIO", "-write", "-fast"][..],
                "Illegal argument: -fast",
            ),
            (
                &["TestDFSIO", "-write", "-seqWrite"][..],
                "-seqWrite is not supported",
            ),
            (&["sleep", "-m", "1"][..], "not sleep"),
            (&[][..], "a program must be given"),
        ] {
            let e = run(jar, args).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        }
    }

    #[test]
    fn what_sluice_cannot_run_is_refused_with_the_reason() {
        let jar = "hadoop-mapreduce-examples.jar";
        let refused = |args: &[&str], says: &str| {
            let e = run(jar, args).unwrap_err();
            assert!(e.contains(says), "{args:?}: {e}");
        };
        refused(
            &["terasort", "in"],
            "Usage: terasort <input dir> <output dir>",
        );
        refused(
            &["wordcount", "out"],
            "Usage: wordcount <in> [<in>...] <out>",
        );
        refused(&["grep", "a", "b", "c", "d", "e"], "Usage: grep");
        refused(&["pi", "10", "100"], "not pi");
        refused(&[], "an example program must be given");
        refused(
            &["wordcount", "-libjars", "x.jar", "a", "b"],
            "-libjars is not supported",
        );
        refused(&["wordcount", "-D"], "-D needs a value");
        refused(&["sort", "in"], "not 1 argument(s)");
        refused(&["sort", "a", "b", "c"], "Usage: sort [-r <reduces>]");
        refused(&["sort", "-r"], "-r needs a value");
        refused(
            &["sort", "-totalOrder", "0.1", "1000", "10", "a", "b"],
            "-totalOrder is not supported",
        );
        refused(
            &[
                "sort",
                "-inFormat",
                "org.apache.hadoop.mapreduce.lib.input.KeyValueTextInputFormat",
                "a",
                "b",
            ],
            "SequenceFileInputFormat only",
        );
        refused(&["randomwriter"], "Usage: randomwriter <out-dir>");
        refused(
            &[
                "randomtextwriter",
                "-outFormat",
                "org.apache.hadoop.mapreduce.lib.output.TextOutputFormat",
                "out",
            ],
            "SequenceFileOutputFormat only",
        );
        let e = run("my-job.jar", &["a"]).unwrap_err();
        assert!(e.contains("Java code"), "{e}");
        let e = run("hadoop-streaming", &[]).unwrap_err();
        assert!(e.contains("not a jar"), "{e}");
    }

    #[test]
    fn refusals_exit_as_hadoop_does() {
        // Measured with Hadoop 3.4's examples jar (the examples_hadoop tests compare them).
        let status = |args: &[&str]| {
            command("hadoop-mapreduce-examples-3.4.3.jar", &strings(args))
                .unwrap_err()
                .code
        };
        assert_eq!(status(&[]), 255);
        assert_eq!(status(&["nosuch"]), 255);
        assert_eq!(status(&["terasort", "in"]), 2);
        assert_eq!(status(&["teravalidate", "in"]), 1);
        assert_eq!(status(&["teragen", "5"]), 2);
        assert_eq!(status(&["wordcount", "out"]), 2);
        assert_eq!(status(&["sort", "a", "b", "c"]), 2);
        assert_eq!(status(&["sort", "-r"]), 2);
        assert_eq!(status(&["randomwriter"]), 2);
        assert_eq!(status(&["grep", "a", "b"]), 2);
        // What Hadoop runs and sluice does not: sluice's refusal.
        assert_eq!(status(&["pi", "10", "100"]), 1);
        assert_eq!(
            status(&["sort", "-totalOrder", "0.1", "1000", "10", "a", "b"]),
            1
        );
        assert_eq!(status(&["wordcount", "-libjars", "x.jar", "a", "b"]), 1);
    }

    #[test]
    fn test_dfsio_refusals_exit_as_hadoop_does() {
        // Measured with Hadoop 3.4's MapredTestDriver and TestDFSIO (the dfsio tests compare
        // them): 255 for its driver's and TestDFSIO's usage errors, 254 for an exception.
        let status = |args: &[&str]| {
            command(
                "hadoop-mapreduce-client-jobclient-3.4.3-tests.jar",
                &strings(args),
            )
            .unwrap_err()
            .code
        };
        assert_eq!(status(&[]), 255);
        assert_eq!(status(&["nosuch"]), 255);
        assert_eq!(status(&["TestDFSIO"]), 255);
        assert_eq!(status(&["TestDFSIO", "-bogus"]), 255);
        assert_eq!(status(&["TestDFSIO", "-write", "-nrFiles"]), 254);
        assert_eq!(status(&["TestDFSIO", "-size", "x", "-write"]), 254);
        // What Hadoop runs and sluice does not: sluice's refusal.
        assert_eq!(status(&["mrbench"]), 1);
        assert_eq!(status(&["TestDFSIO", "-write", "-append"]), 1);
    }
}
