//! The native map-output collector on a real YARN cluster: Hadoop 3.4's `MiniMRYarnCluster`
//! (two NodeManagers; every map and reduce task in a container JVM of its own), started once
//! by `tests/plugin/ExamplesBatch.java --yarn` for all the jobs. Each job runs twice on it,
//! with Hadoop's own collector and with `org.sluice.hadoop.NativeMapOutputCollector` first in
//! `mapreduce.job.map.output.collector.class`, the plugin jar shipped with `-libjars` as a
//! user would ship it. So each map task's JVM extracts and loads the library itself (several
//! at once on the two NodeManagers), and Hadoop's `ShuffleHandler` serves the `file.out` the
//! library wrote over HTTP to the reducers' fetchers. The two runs must agree:
//!
//! * the output files are byte-identical;
//! * the record counters are equal;
//! * the collector was used in every map task (`sluice`/`NATIVE_COLLECTOR_TASKS` equals
//!   `Launched map tasks`, and no task's log holds a refusal), or, for secondarysort (its sort
//!   comparator is set in code), refused in every task (no `sluice` counter, the refusal in
//!   the tasks' logs) with Hadoop's output all the same.
//!
//! Some jobs' plugin runs also replace the reduce-side merge (`org.sluice.hadoop.NativeShuffle`):
//! Hadoop's fetchers then fetch the map outputs over HTTP from the `ShuffleHandler`, with the
//! job token, into the native merge of each reduce task's JVM. Those must show
//! `sluice`/`NATIVE_MERGE_TASKS` equal to `Launched reduce tasks`, each reduce task's log line
//! of its native merge, and no bytes on the reduce side's disk unless the job gives the merge
//! too little memory (then its spill files, and still Hadoop's output).
//!
//! The same cluster runs one Hadoop Streaming job whose programs print the variables YARN's
//! tasks get from `mapreduce.map.env` and its kin (`tests/yarn/streaming-task-env`): its
//! output must be the case's `expected`, which `sluice streaming` is held to as well.
//!
//! Inputs and outputs are on the cluster's HDFS (the driver copies them), as the distributed
//! cache (`-libjars`, terasort's partition file) needs. The jars come from `make yarn` (`target/yarn/lib`: the minicluster, the examples) and
//! `make plugin` (`target/plugin/sluice-plugin.jar`).
#![allow(clippy::unwrap_used)]

use std::fs;
use std::path::Path;

use sluice_testkit::console::{counter_blocks, Counters, FRAMEWORK_GROUP, RECORD_COUNTERS};

mod common;
use common::*;

/// What a refusing task logs.
const REFUSAL: &str = "sluice: native collector not used";

struct Job {
    name: &'static str,
    /// The example's class, after `org.apache.hadoop.examples.`.
    class: &'static str,
    options: &'static [&'static str],
    /// Arguments; `{in:NAME}` is the input NAME, `{out}` the output directory.
    args: &'static [&'static str],
    /// The collector must be used (else: refused, logging this reason).
    refusal: Option<&'static str>,
    /// Some native task must have spilled more than once.
    spills: bool,
    /// The plugin run puts the native collector first.
    collector: bool,
    /// The plugin run replaces the reduce-side merge: `Some(disk)`, where `disk` says
    /// whether its memory is too small for the map outputs.
    merge: Option<bool>,
}

const JOBS: &[Job] = &[
    Job {
        name: "wordcount",
        class: "WordCount",
        // A 1 MB sort buffer: the native collector spills several times in each task.
        options: &["mapreduce.job.reduces=3", "mapreduce.task.io.sort.mb=1"],
        args: &["{in:text}", "{out}"],
        refusal: None,
        spills: true,
        collector: true,
        merge: Some(false),
    },
    Job {
        name: "terasort",
        class: "terasort.TeraSort",
        options: &["mapreduce.job.reduces=2"],
        args: &["{in:teragen}", "{out}"],
        refusal: None,
        spills: false,
        collector: true,
        merge: None,
    },
    Job {
        // Hadoop's own map outputs fetched over HTTP into native merges too small for them.
        name: "terasort-native-merge-spills",
        class: "terasort.TeraSort",
        options: &["mapreduce.job.reduces=2", "sluice.reduce.merge.memory.mb=1"],
        args: &["{in:teragen}", "{out}"],
        refusal: None,
        spills: false,
        collector: false,
        merge: Some(true),
    },
    Job {
        // Compressed segments served by the ShuffleHandler and decompressed by the fetchers.
        name: "terasort-compressed-map-output",
        class: "terasort.TeraSort",
        options: &[
            "mapreduce.job.reduces=2",
            "mapreduce.map.output.compress=true",
        ],
        args: &["{in:teragen}", "{out}"],
        refusal: None,
        spills: false,
        collector: true,
        merge: Some(false),
    },
    Job {
        name: "secondarysort",
        class: "SecondarySort",
        options: &["mapreduce.job.reduces=2"],
        args: &["{in:pairs}", "{out}"],
        refusal: Some(
            "the sort comparator org.apache.hadoop.examples.SecondarySort$IntPair$Comparator",
        ),
        spills: false,
        collector: true,
        merge: None,
    },
];

/// Two files of text (so two map tasks that start together) and the pairs of secondarysort.
fn write_inputs(scratch: &Path) {
    let put = |name: &str, file: &str, contents: String| {
        let dir = scratch.join("in").join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(file), contents).unwrap();
    };
    put("text", "a.txt", text(25_000, 8, 50_000, 1));
    put("text", "b.txt", text(20_000, 8, 50_000, 2));
    put("pairs", "pairs.txt", pairs(2000, 4));
    let case = root().join(TASK_ENV);
    put(
        "task-env",
        "part",
        fs::read_to_string(case.join("input/part")).unwrap(),
    );
}

/// A Hadoop Streaming job whose programs print the variables the cluster set from
/// `mapreduce.map.env` and its kin: its output is the reference `sluice streaming` is held to
/// (`crates/cli/tests/streaming_task_env.rs`), kept in the case's `expected`.
const TASK_ENV: &str = "tests/yarn/streaming-task-env";

/// The streaming job of [`TASK_ENV`]: its arguments, with the case's places filled in.
fn task_env_arguments() -> Vec<String> {
    let case = root().join(TASK_ENV);
    let args = fs::read_to_string(case.join("args")).unwrap();
    let mut out = vec!["org.apache.hadoop.streaming.HadoopStreaming".to_string()];
    out.extend(args.lines().map(|line| {
        line.replace("{case}", &case.display().to_string())
            .replace("{input}", "/in/task-env")
            .replace("{output}", "/out/streaming-task-env")
    }));
    out
}

/// Hadoop's output of [`TASK_ENV`] is the case's `expected`.
fn check_task_env(scratch: &Path) -> Result<(), String> {
    let result = scratch.join("results/streaming-task-env");
    let exit = fs::read_to_string(result.join("exit")).unwrap_or_default();
    let log = fs::read_to_string(result.join("log")).unwrap_or_default();
    if exit.trim() != "0" {
        return Err(format!("exited {exit}:\n{log}"));
    }
    if !log.contains("Running job: job_") || log.contains("job_local") {
        return Err(format!("did not run on YARN:\n{log}"));
    }
    let output = outputs(&scratch.join("out/streaming-task-env"));
    let expected = fs::read(root().join(TASK_ENV).join("expected")).unwrap();
    match output.get("part-00000") {
        Some(part) if output.len() == 1 && *part == expected => Ok(()),
        _ => Err(format!(
            "the output is not {TASK_ENV}/expected: {:?}",
            output
                .iter()
                .map(|(name, bytes)| (name, String::from_utf8_lossy(bytes)))
                .collect::<Vec<_>>()
        )),
    }
}

/// The class, the generic options, then the arguments with their places filled in.
fn arguments(job: &Job, run: &str, plugin: Option<&Path>) -> Vec<String> {
    let mut out = vec![format!("{EXAMPLES}.{}", job.class)];
    for o in job.options {
        out.push("-D".into());
        out.push(o.to_string());
    }
    if let Some(jar) = plugin {
        if job.collector {
            out.extend(["-D".to_string(), COLLECTOR.to_string()]);
        }
        if job.merge.is_some() {
            out.extend(["-D".to_string(), SHUFFLE.to_string()]);
        }
        out.extend(["-libjars".to_string(), jar.display().to_string()]);
    }
    for a in job.args {
        // Paths of the cluster's HDFS: the driver copies `in` there first and `/out` back.
        out.push(if *a == "{out}" {
            format!("/out/{run}")
        } else if let Some(name) = a.strip_prefix("{in:").and_then(|a| a.strip_suffix('}')) {
            format!("/in/{name}")
        } else {
            a.to_string()
        });
    }
    out
}

/// The applications of the jobs a client log names ("Running job: job_A_B" runs as the
/// application `application_A_B`).
fn applications(log: &str) -> Vec<String> {
    log.lines()
        .filter_map(|l| l.split("Running job: job_").nth(1))
        .map(|id| format!("application_{}", id.trim()))
        .collect()
}

/// Everything the map tasks' containers of `application` logged (`syslog` of each container
/// under the NodeManagers' log directories), concatenated.
fn task_logs(dir: &Path, application: &str, into: &mut String) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        if path.is_dir() {
            task_logs(&path, application, into);
        } else if e.file_name() == "syslog"
            && path.to_string_lossy().contains(&format!("/{application}/"))
        {
            into.push_str(&fs::read_to_string(&path).unwrap_or_default());
        }
    }
}

fn check(job: &Job, scratch: &Path) -> Result<(), String> {
    let result = |run: &str| scratch.join("results").join(run);
    let (stock, plugin) = (
        format!("{}-stock", job.name),
        format!("{}-plugin", job.name),
    );
    let mut logs = Vec::new();
    for run in [&stock, &plugin] {
        let exit = fs::read_to_string(result(run).join("exit")).unwrap_or_default();
        let log = fs::read_to_string(result(run).join("log")).unwrap_or_default();
        if exit.trim() != "0" {
            return Err(format!("{run} exited {exit}:\n{log}"));
        }
        if !log.contains("Running job: job_") || log.contains("job_local") {
            return Err(format!("{run} did not run on YARN:\n{log}"));
        }
        logs.push(log);
    }
    let (stock_files, plugin_files) = (
        outputs(&scratch.join("out").join(&stock)),
        outputs(&scratch.join("out").join(&plugin)),
    );
    if stock_files.is_empty() {
        return Err(format!("{stock} wrote no output"));
    }
    if stock_files != plugin_files {
        return Err(format!(
            "the outputs differ: see {} and {}",
            scratch.join("out").join(&stock).display(),
            scratch.join("out").join(&plugin).display()
        ));
    }
    let (stock_counters, plugin_counters) = (counter_blocks(&logs[0]), counter_blocks(&logs[1]));
    if stock_counters.len() != 1 || plugin_counters.len() != 1 {
        return Err(format!(
            "{} counter blocks in the stock log, {} with the plugin (one each expected)",
            stock_counters.len(),
            plugin_counters.len()
        ));
    }
    let (s, p) = (&stock_counters[0], &plugin_counters[0]);
    let get = |c: &Counters, group: &str, name: &str| c.get(group, name);
    for name in RECORD_COUNTERS {
        if get(s, FRAMEWORK_GROUP, name) != get(p, FRAMEWORK_GROUP, name) {
            return Err(format!(
                "{name} is {:?} in Hadoop, {:?} with the plugin",
                get(s, FRAMEWORK_GROUP, name),
                get(p, FRAMEWORK_GROUP, name)
            ));
        }
    }
    let maps = get(p, "Job Counters", "Launched map tasks");
    let native = get(p, "sluice", "NATIVE_COLLECTOR_TASKS");
    let apps = applications(&logs[1]);
    let mut tasks = String::new();
    for app in &apps {
        task_logs(&scratch.join("target"), app, &mut tasks);
    }
    if apps.len() != 1 || tasks.is_empty() {
        return Err(format!(
            "no task logs of the plugin's application ({apps:?}) under {}",
            scratch.join("target").display()
        ));
    }
    if let Some(disk) = job.merge {
        let reduces = get(p, "Job Counters", "Launched reduce tasks");
        let merged = get(p, "sluice", "NATIVE_MERGE_TASKS");
        if reduces.is_none() || merged != reduces {
            return Err(format!(
                "sluice/NATIVE_MERGE_TASKS is {merged:?}, Launched reduce tasks {reduces:?}"
            ));
        }
        let lines = tasks.matches("sluice: merging natively: ").count() as u64;
        if Some(lines) != reduces || tasks.contains("sluice: native merge not used") {
            return Err(format!(
                "{lines} reduce tasks logged a native merge:\n{tasks}"
            ));
        }
        let disk_bytes = get(p, "sluice", "NATIVE_MERGE_DISK_BYTES").unwrap_or(0);
        if (disk_bytes > 0) != disk {
            return Err(format!(
                "the native merges wrote {disk_bytes} bytes to disk"
            ));
        }
    }
    match job.refusal {
        None if !job.collector => {
            if native.is_some() {
                return Err(format!("the collector was used in {native:?} tasks"));
            }
        }
        None => {
            if maps.is_none() || native != maps {
                return Err(format!(
                    "sluice/NATIVE_COLLECTOR_TASKS is {native:?}, Launched map tasks {maps:?}"
                ));
            }
            if tasks.contains(REFUSAL) {
                return Err(format!("a task refused:\n{tasks}"));
            }
            // "... written natively: N runs, ...", one line per map task.
            let most_runs = tasks
                .lines()
                .filter_map(|l| l.split("written natively: ").nth(1))
                .filter_map(|rest| rest.split(' ').next()?.parse::<u64>().ok())
                .max();
            if job.spills && most_runs.is_none_or(|runs| runs < 2) {
                return Err(format!(
                    "no task spilled more than once ({most_runs:?} runs)"
                ));
            }
        }
        Some(why) => {
            if native.is_some() {
                return Err(format!("the collector was used in {native:?} tasks"));
            }
            if !tasks.contains(&format!("{REFUSAL}: {why}")) {
                return Err(format!(
                    "the refusal \"{why}\" is not in the task logs:\n{tasks}"
                ));
            }
        }
    }
    Ok(())
}

#[test]
#[cfg_attr(
    not(feature = "test-yarn"),
    ignore = "needs Java 17, `make yarn` and `make plugin` (the test-yarn feature)"
)]
fn hadoop_examples_on_yarn_give_the_same_output_with_the_native_collector_and_merge() {
    require(&[
        (
            "target/yarn/lib/.complete",
            "`make yarn` (tests/yarn/fetch.sh)",
        ),
        (
            "target/yarn/lib/hadoop-mapreduce-client-jobclient-3.4.3-tests.jar",
            "`make yarn` (tests/yarn/fetch.sh)",
        ),
        ("target/plugin/sluice-plugin.jar", "`make plugin`"),
    ]);
    let root = root();
    let scratch_dir = tempfile::Builder::new()
        .prefix("plugin-yarn")
        .tempdir_in(root.join("target"))
        .unwrap();
    let scratch_path = scratch_dir.path().to_path_buf();
    let scratch = scratch_path.as_path();
    write_inputs(scratch);
    let jar = root.join("target/plugin/sluice-plugin.jar");

    let mut manifest = String::new();
    // terasort's input, generated in local mode into the HDFS (it is only input): two files.
    let teragen = [
        format!("{EXAMPLES}.terasort.TeraGen"),
        "-D".into(),
        "mapreduce.framework.name=local".into(),
        "-D".into(),
        format!("hadoop.tmp.dir={}", scratch.join("tmp/teragen").display()),
        "-D".into(),
        "mapreduce.job.maps=2".into(),
        "20000".into(),
        "/in/teragen".into(),
    ];
    case(
        &mut manifest,
        "teragen",
        &scratch.join("results/teragen"),
        &teragen,
    );
    for job in JOBS {
        for plugin in [None, Some(jar.as_path())] {
            let run = format!(
                "{}-{}",
                job.name,
                if plugin.is_some() { "plugin" } else { "stock" }
            );
            let args = arguments(job, &run, plugin);
            case(
                &mut manifest,
                &run,
                &scratch.join("results").join(&run),
                &args,
            );
        }
    }
    case(
        &mut manifest,
        "streaming-task-env",
        &scratch.join("results/streaming-task-env"),
        &task_env_arguments(),
    );
    fs::write(scratch.join("manifest"), manifest).unwrap();

    // The plugin jar is not on this classpath: the containers get the driver's classpath
    // (the mini cluster's rule), and the jobs must ship the jar themselves.
    let classes = scratch.join("classes");
    let conf = scratch.join("conf");
    // On the classpath from the start: a directory missing when the JVM starts is never
    // searched.
    fs::create_dir_all(&conf).unwrap();
    let lib = format!("{}/*", root.join("target/yarn/lib").display());
    compile_driver(&classes, &lib);
    let classpath = format!(
        "{}:{}:{}:{lib}",
        conf.display(),
        classes.display(),
        root.join("tests/plugin").display(),
    );
    let status = run_driver(
        &classpath,
        // The ResourceManager's web app of Hadoop 3.4 on Java 17.
        &["--add-opens=java.base/java.lang=ALL-UNNAMED".to_string()],
        &[Path::new("--yarn"), &conf, &scratch.join("manifest")],
        scratch,
        fs::File::create(scratch.join("cluster.log"))
            .unwrap()
            .into(),
    );
    let kept = |scratch_dir: tempfile::TempDir| scratch_dir.keep().display().to_string();
    if !status.success() {
        panic!(
            "the Java driver failed: {status} (see {}/cluster.log)",
            kept(scratch_dir)
        );
    }
    let exit = fs::read_to_string(scratch.join("results/teragen/exit"));
    assert_eq!(exit.unwrap_or_default().trim(), "0", "teragen failed");

    let mut failures: Vec<String> = JOBS
        .iter()
        .filter_map(|job| {
            check(job, scratch)
                .err()
                .map(|e| format!("{}: {e}", job.name))
        })
        .collect();
    if let Err(e) = check_task_env(scratch) {
        failures.push(format!("streaming-task-env: {e}"));
    }
    if !failures.is_empty() {
        panic!(
            "{}\n\n(kept in {})",
            failures.join("\n\n"),
            kept(scratch_dir)
        );
    }
}
