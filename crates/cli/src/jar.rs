//! `sluice jar JAR ARGS`: the command lines of `hadoop jar` for the jars whose jobs sluice has
//! natively, so that wrappers and benchmark scripts built around `$HADOOP_CMD jar ...` run
//! unchanged with sluice as the command.
//!
//! - Hadoop Streaming's jar (`hadoop-streaming*.jar`): the arguments are `sluice streaming`'s.
//! - Hadoop's examples jar (`hadoop-mapreduce-examples*.jar`): `wordcount`, `grep`,
//!   `terasort`, `teragen` and `teravalidate`, with Hadoop's generic options (`-D`, `-fs`) and
//!   positional arguments, become the `sluice run` command of the same job.
//!
//! No jar is read: only its file name says which it is, so no Hadoop needs to be installed.

/// What a `sluice jar` command line runs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum JarCommand {
    /// `sluice streaming` with these arguments.
    Streaming(Vec<String>),
    /// `sluice` with these arguments (starting with `run`).
    Run(Vec<String>),
    /// `sluice jar`'s own help (`sluice jar -help`; any `-help` after the jar is the jar's).
    Help,
}

/// The examples sluice runs, with Hadoop's usage line of each.
const EXAMPLES: &[(&str, &str)] = &[
    ("wordcount", "wordcount <in> [<in>...] <out>"),
    ("grep", "grep <inDir> <outDir> <regex> [<group>]"),
    ("terasort", "terasort <input dir> <output dir>"),
    ("teragen", "teragen <num rows> <output dir>"),
    ("teravalidate", "teravalidate <out-dir> <report-dir>"),
];

/// The command `sluice jar JAR ARGS` stands for.
///
/// # Errors
/// A message for the user: a jar sluice does not run, an example it does not have, a generic
/// option it cannot honour, or the wrong number of arguments (with Hadoop's usage line).
pub(crate) fn command(jar: &str, args: &[String]) -> Result<JarCommand, String> {
    if ["-h", "--help", "-help"].contains(&jar) {
        return Ok(JarCommand::Help);
    }
    let name = jar.rsplit('/').next().unwrap_or(jar);
    if !name.ends_with(".jar") {
        return Err(format!("{jar}: not a jar (its name does not end in .jar)"));
    }
    if name.starts_with("hadoop-streaming") {
        return Ok(JarCommand::Streaming(args.to_vec()));
    }
    if name.starts_with("hadoop-mapreduce-examples") {
        return example(args).map(JarCommand::Run);
    }
    Err(format!(
        "{jar}: sluice runs Hadoop Streaming's jar (hadoop-streaming*.jar) and the {} jobs of \
         Hadoop's examples jar (hadoop-mapreduce-examples*.jar) only; the jobs of other jars \
         are Java code, which sluice does not run",
        known()
    ))
}

/// The names of [`EXAMPLES`], for messages.
fn known() -> String {
    let names: Vec<&str> = EXAMPLES.iter().map(|(name, _)| *name).collect();
    names.join(", ")
}

/// `sluice run ...` for the examples jar's `PROGRAM [GENERIC OPTIONS] ARGS`.
fn example(args: &[String]) -> Result<Vec<String>, String> {
    let Some((program, rest)) = args.split_first() else {
        return Err(format!(
            "an example program must be given: one of {} (sluice runs these natively)",
            known()
        ));
    };
    let Some((_, usage)) = EXAMPLES.iter().find(|(name, _)| name == program) else {
        return Err(format!(
            "{program}: sluice runs the examples {} natively, not {program}",
            known()
        ));
    };
    let (mut run, positional) = generic_options(rest)?;
    let flag = |run: &mut Vec<String>, name: &str, value: &str| {
        run.push(name.to_string());
        run.push(value.to_string());
    };
    match (program.as_str(), positional.as_slice()) {
        ("wordcount", [inputs @ .., output]) if !inputs.is_empty() => {
            for input in inputs {
                flag(&mut run, "--input", input);
            }
            flag(&mut run, "--output", output);
        }
        ("grep", [input, output, regex, group @ ..]) if group.len() <= 1 => {
            flag(&mut run, "--input", input);
            flag(&mut run, "--output", output);
            flag(&mut run, "--pattern", regex);
            if let [group] = group {
                flag(&mut run, "--group", group);
            }
        }
        ("terasort" | "teravalidate", [input, output]) => {
            flag(&mut run, "--input", input);
            flag(&mut run, "--output", output);
        }
        ("teragen", [rows, output]) => {
            flag(&mut run, "--rows", rows);
            flag(&mut run, "--output", output);
        }
        _ => return Err(format!("Usage: {usage}")),
    }
    let mut command = vec!["run".to_string(), program.clone()];
    command.append(&mut run);
    Ok(command)
}

/// Hadoop's generic options at the start of `args`, as `sluice run` options, and the
/// arguments after them. `-D key=value` (or `-Dkey=value`) is kept; `-fs URI` is `-D
/// fs.defaultFS=URI`; the options that ship Java code or name a Hadoop service are refused.
fn generic_options(args: &[String]) -> Result<(Vec<String>, Vec<String>), String> {
    let mut options = Vec::new();
    let mut rest = args.iter();
    let mut positional = Vec::new();
    while let Some(arg) = rest.next() {
        let mut value = |name: &str| {
            rest.next()
                .cloned()
                .ok_or_else(|| format!("generic option {name} needs a value"))
        };
        match arg.as_str() {
            "-D" => {
                let setting = value("-D")?;
                options.extend(["-D".to_string(), setting]);
            }
            "-fs" => {
                let fs = value("-fs")?;
                options.extend(["-D".to_string(), format!("fs.defaultFS={fs}")]);
            }
            "-libjars" | "-files" | "-archives" | "-conf" | "-jt" | "-tokenCacheFile" => {
                return Err(format!(
                    "generic option {arg} is not supported by sluice's built-in jobs (they need \
                     no jars, files or Hadoop services; settings go in -D key=value)"
                ));
            }
            joined if joined.len() > 2 && joined.starts_with("-D") => {
                let setting = joined.strip_prefix("-D").unwrap_or(joined);
                options.extend(["-D".to_string(), setting.to_string()]);
            }
            _ => {
                positional.push(arg.clone());
                positional.extend(rest.cloned());
                break;
            }
        }
    }
    Ok((options, positional))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| (*s).to_string()).collect()
    }

    fn run(jar: &str, args: &[&str]) -> Result<JarCommand, String> {
        command(jar, &strings(args))
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
            Ok(JarCommand::Run(strings(&[
                "run",
                "wordcount",
                "-D",
                "mapreduce.job.reduces=3",
                "--input",
                "in1",
                "--input",
                "in2",
                "--output",
                "out"
            ])))
        );
        assert_eq!(
            run(jar, &["grep", "-Da=b", "in", "out", "dfs[a-z.]+", "0"]),
            Ok(JarCommand::Run(strings(&[
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
                "--group",
                "0"
            ])))
        );
        assert_eq!(
            run(jar, &["teragen", "-fs", "hdfs://nn:8020", "10m", "gen"]),
            Ok(JarCommand::Run(strings(&[
                "run",
                "teragen",
                "-D",
                "fs.defaultFS=hdfs://nn:8020",
                "--rows",
                "10m",
                "--output",
                "gen"
            ])))
        );
        assert_eq!(
            run(jar, &["teravalidate", "sorted", "report"]),
            Ok(JarCommand::Run(strings(&[
                "run",
                "teravalidate",
                "--input",
                "sorted",
                "--output",
                "report"
            ])))
        );
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
        let e = run("my-job.jar", &["a"]).unwrap_err();
        assert!(e.contains("Java code"), "{e}");
        let e = run("hadoop-streaming", &[]).unwrap_err();
        assert!(e.contains("not a jar"), "{e}");
    }
}
