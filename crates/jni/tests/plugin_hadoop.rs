//! Differential tests of the native map-output collector inside Apache Hadoop 3.4.2: each of
//! Hadoop's example jobs runs in local mode twice, with Hadoop's own collector and with
//! `org.sluice.hadoop.NativeMapOutputCollector` first in
//! `mapreduce.job.map.output.collector.class`, and the two runs must agree:
//!
//! * the output files are byte-identical (grep's, whose order among equal counts Hadoop leaves
//!   unspecified, are compared per count);
//! * the record counters are equal (all of the map output and shuffle counters when neither run
//!   spills more than once; with a 1 MB sort buffer the two spill at different records, so
//!   then only those that do not depend on where spills fall);
//! * the collector was used (the `sluice` counter group counts the tasks, and no task logged a
//!   refusal; jobs with a combiner of their own run it called back per batch), or, for the jobs
//!   it must refuse, was not (no `sluice` counters, the refusal
//!   logged with its reason) and Hadoop's output came out all the same.
//!
//! The native reduce-side merge (`org.sluice.hadoop.NativeShuffle` as
//! `mapreduce.job.reduce.shuffle.consumer.plugin.class`) is checked the same way, alone and
//! with the collector: the same output and record counters, `sluice/NATIVE_MERGE_TASKS` equal to
//! the reduce tasks, and, where the map outputs fit in its memory, no byte of intermediate data
//! on the reduce side's disk (its own counter is 0, and fewer records are spilled than Hadoop
//! spills, whose final merge writes every record its reducers read); with a 1 MB merge memory, its spill files are used and the
//! output is still Hadoop's. The jobs it must refuse fall back to Hadoop's merge.
//!
//! A last case makes the library panic inside an entry point: the JVM must get an
//! `IOException` with the panic's message and go on.
//!
//! All jobs run in one JVM (`tests/plugin/ExamplesBatch.java`), from the jars `make hadoop`
//! and `make plugin` put in `target/hadoop/lib` and `target/plugin`.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Stdio;

use sluice_testkit::console::{counter_blocks, Counters, FRAMEWORK_GROUP, RECORD_COUNTERS};

mod common;
use common::*;

/// Counters that are equal when both collectors spill once per task.
const SPILL_COUNTERS: &[&str] = &[
    "Combine input records",
    "Combine output records",
    "Spilled Records",
    "Map output materialized bytes",
    "Reduce input records",
    "Reduce shuffle bytes",
];

/// What a job must show about the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Used in every map task; `exact`: every counter of [`SPILL_COUNTERS`] equal too.
    Native { exact: bool },
    /// Used in every map task, map output compressed: every counter of [`SPILL_COUNTERS`]
    /// equal but the compressed sizes (another compressor makes other bytes), and those are
    /// what the shuffle moved in both runs.
    Compressed,
    /// Refused, logging this reason.
    Refused(&'static str),
    /// Not asked for: the plugin run uses Hadoop's collector.
    Stock,
    /// Both runs fail, the plugin's with this message from Java code it called back.
    Fails(&'static str),
}

/// What a job must show about the native merge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merge {
    /// Not asked for.
    NotAsked,
    /// Used in every reduce task; `disk`: whether its memory is too small for the map
    /// outputs, so that some go to its spill files (else none may).
    Native { disk: bool },
    /// Refused, logging this reason, and Hadoop's merge used.
    Refused(&'static str),
}

/// How the outputs are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compare {
    Bytes,
    /// Runs of lines with the same first tab-separated field, in order, each run's lines as
    /// a sorted list: the order of keys is checked, not the order within a key.
    PerKey,
    /// The lines of each file, sorted: the files hold the values of one key (`NullWritable`,
    /// which `TextOutputFormat` does not print).
    Sorted,
}

struct Job {
    name: &'static str,
    /// Class and arguments; `{in:NAME}` is the input NAME, `{out}` the output directory,
    /// `{out:JOB}` the output of JOB's run of the same kind.
    args: Vec<String>,
    options: Vec<String>,
    expect: Expect,
    compare: Compare,
    /// The plugin's run is in a JVM where the library cannot load.
    unloadable: bool,
    /// The settings of the plugin's run.
    plugin: Vec<String>,
    merge: Merge,
}

fn job(name: &'static str, class: &str, options: &[&str], args: &[&str], expect: Expect) -> Job {
    Job {
        name,
        args: std::iter::once(format!("{EXAMPLES}.{class}"))
            .chain(args.iter().map(|a| a.to_string()))
            .collect(),
        options: options.iter().map(|o| o.to_string()).collect(),
        expect,
        compare: Compare::Bytes,
        unloadable: false,
        plugin: vec![COLLECTOR.to_string()],
        merge: Merge::NotAsked,
    }
}

/// A job whose plugin run uses the native merge (and the collector if `collector`).
fn merged(
    name: &'static str,
    class: &str,
    options: &[&str],
    args: &[&str],
    collector: bool,
    merge: Merge,
) -> Job {
    let expect = if collector {
        Expect::Native { exact: true }
    } else {
        Expect::Stock
    };
    let mut j = job(name, class, options, args, expect);
    j.plugin = if collector {
        vec![COLLECTOR.to_string(), SHUFFLE.to_string()]
    } else {
        vec![SHUFFLE.to_string()]
    };
    j.merge = merge;
    j
}

fn write_inputs(scratch: &Path) {
    let put = |name: &str, file: &str, contents: String| {
        let dir = scratch.join("in").join(name);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(file), contents).unwrap();
    };
    put("text", "a.txt", text(3000, 8, 4000, 1));
    put("text", "b.txt", text(1000, 5, 4000, 2));
    put("big", "big.txt", text(40_000, 8, 50_000, 3));
    put(
        "few",
        "few.txt",
        "red blue red\ngreen\nblue red\n".repeat(10),
    );
    put("pairs", "pairs.txt", pairs(2000, 4));
    put("empty", "empty.txt", String::new());
    let mut rng = Lcg(5);
    let numbers: String = (0..3000)
        .map(|_| format!("{}\n", rng.next(4_000_001) as i64 - 2_000_000))
        .collect();
    put("numbers", "numbers.txt", numbers);
}

/// The key-type jobs: name, and the type `ExamplesBatch$KeyTypes` makes keys of.
const KEY_TYPES: &[(&str, &str)] = &[
    ("keys-int", "int"),
    ("keys-long", "long"),
    ("keys-long-decreasing", "long-decreasing"),
    ("keys-vint", "vint"),
    ("keys-vlong", "vlong"),
    ("keys-byte", "byte"),
    ("keys-boolean", "boolean"),
    ("keys-null", "null"),
    ("keys-bytes", "bytes"),
];

fn jobs() -> Vec<Job> {
    let native = Expect::Native { exact: true };
    let spills = Expect::Native { exact: false };
    let reduces = |n: &'static str| n;
    let mut jobs = vec![
        job("wordcount-1-reducer", "WordCount", &[reduces("mapreduce.job.reduces=1")], &["{in:text}", "{out}"], native),
        job("wordcount-4-reducers", "WordCount", &["mapreduce.job.reduces=4"], &["{in:text}", "{out}"], native),
        job("wordcount-more-reducers-than-keys", "WordCount", &["mapreduce.job.reduces=7"], &["{in:few}", "{out}"], native),
        job("wordcount-many-spills", "WordCount", &["mapreduce.job.reduces=3", "mapreduce.task.io.sort.mb=1"], &["{in:big}", "{out}"], spills),
        job("terasort", "terasort.TeraSort", &["mapreduce.job.reduces=3"], &["{in:teragen}", "{out}"], native),
        job("terasort-many-spills", "terasort.TeraSort", &["mapreduce.job.reduces=2", "mapreduce.task.io.sort.mb=1"], &["{in:teragen}", "{out}"], spills),
        job("grep", "Grep", &["mapreduce.job.reduces=2"], &["{in:text}", "{out}", "w1[0-9]*"], native),
        job("secondarysort-falls-back", "SecondarySort", &[], &["{in:pairs}", "{out}"], Expect::Refused("the sort comparator org.apache.hadoop.examples.SecondarySort$IntPair$Comparator")),
        job("wordcount-default-codec-map-output", "WordCount", &["mapreduce.job.reduces=2", "mapreduce.map.output.compress=true"], &["{in:text}", "{out}"], Expect::Compressed),
        job("wordcount-gzip-map-output", "WordCount", &["mapreduce.job.reduces=3", "mapred.compress.map.output=true", "mapred.map.output.compression.codec=org.apache.hadoop.io.compress.GzipCodec"], &["{in:text}", "{out}"], Expect::Compressed),
        job("terasort-bzip2-map-output", "terasort.TeraSort", &["mapreduce.job.reduces=2", "mapreduce.map.output.compress=true", "mapreduce.map.output.compress.codec=org.apache.hadoop.io.compress.BZip2Codec"], &["{in:teragen}", "{out}"], Expect::Compressed),
        job("lz4-map-output-falls-back", "WordCount", &["mapreduce.job.reduces=2", "mapreduce.map.output.compress=true", "mapreduce.map.output.compress.codec=org.apache.hadoop.io.compress.Lz4Codec"], &["{in:text}", "{out}"], Expect::Refused("the map output codec org.apache.hadoop.io.compress.Lz4Codec is not one sluice writes")),
        job("multifilewc", "MultiFileWordCount", &[], &["{in:text}", "{out}"], native),
        // Hadoop's validator over each run's terasort output: the same report (checksum, no
        // misorder) for the native output as for Hadoop's.
        job("teravalidate", "terasort.TeraValidate", &[], &["{out:terasort}", "{out}"], native),
        job("sort-randomwriter", "Sort", &[], &["-r", "2", "-outFormat", "org.apache.hadoop.mapreduce.lib.output.TextOutputFormat", "-outKey", "org.apache.hadoop.io.BytesWritable", "-outValue", "org.apache.hadoop.io.BytesWritable", "{in:random}", "{out}"], native),
        job("unloadable-library-falls-back", "WordCount", &["mapreduce.job.reduces=2"], &["{in:text}", "{out}"], Expect::Refused("the sluice library does not load on ")),
        // Java combiners, called back per batch of whole groups.
        job("aggregatewordcount-java-combiner", "AggregateWordCount", &[], &["{in:text}", "{out}", "2", "textinputformat"], native),
        job("wordmean-java-combiner-many-spills", "WordMean", &["mapreduce.task.io.sort.mb=1"], &["{in:big}", "{out}"], spills),
        job("combiner-grouping-falls-back", "AggregateWordCount", &["mapreduce.job.combiner.group.comparator.class=org.apache.hadoop.io.Text$Comparator"], &["{in:text}", "{out}", "2", "textinputformat"], Expect::Refused("the combiner groups keys with a comparator of its own")),
    ];
    let levitated = Merge::Native { disk: false };
    let gzip = "mapred.map.output.compression.codec=org.apache.hadoop.io.compress.GzipCodec";
    jobs.extend([
        merged(
            "merge-wordcount-3-reducers",
            "WordCount",
            &["mapreduce.job.reduces=3"],
            &["{in:text}", "{out}"],
            false,
            levitated,
        ),
        merged(
            "merge-wordcount-with-collector",
            "WordCount",
            &["mapreduce.job.reduces=2"],
            &["{in:big}", "{out}"],
            true,
            levitated,
        ),
        merged(
            "merge-wordcount-spills",
            "WordCount",
            &[
                "mapreduce.job.reduces=2",
                "sluice.reduce.merge.memory.mb=1",
                "mapreduce.input.fileinputformat.split.maxsize=200000",
            ],
            &["{in:big}", "{out}"],
            false,
            Merge::Native { disk: true },
        ),
        merged(
            "merge-terasort-with-collector",
            "terasort.TeraSort",
            &["mapreduce.job.reduces=2"],
            &["{in:teragen}", "{out}"],
            true,
            levitated,
        ),
        merged(
            "merge-terasort-spills",
            "terasort.TeraSort",
            &[
                "mapreduce.job.reduces=1",
                "sluice.reduce.merge.memory.mb=1",
                "mapreduce.input.fileinputformat.split.maxsize=300000",
            ],
            &["{in:teragen}", "{out}"],
            false,
            Merge::Native { disk: true },
        ),
        merged(
            "merge-gzip-map-output",
            "WordCount",
            &[
                "mapreduce.job.reduces=2",
                "mapred.compress.map.output=true",
                gzip,
            ],
            &["{in:text}", "{out}"],
            false,
            levitated,
        ),
        merged(
            "merge-sort-randomwriter",
            "Sort",
            &[],
            &[
                "-r",
                "2",
                "-outFormat",
                "org.apache.hadoop.mapreduce.lib.output.TextOutputFormat",
                "-outKey",
                "org.apache.hadoop.io.BytesWritable",
                "-outValue",
                "org.apache.hadoop.io.BytesWritable",
                "{in:random}",
                "{out}",
            ],
            false,
            levitated,
        ),
        merged(
            "merge-aggregatewordcount-java-combiner",
            "AggregateWordCount",
            &[],
            &["{in:text}", "{out}", "2", "textinputformat"],
            true,
            levitated,
        ),
        merged(
            "merge-more-reducers-than-keys",
            "WordCount",
            &["mapreduce.job.reduces=7"],
            &["{in:few}", "{out}"],
            false,
            levitated,
        ),
        merged(
            "merge-empty-input",
            "WordCount",
            &["mapreduce.job.reduces=2"],
            &["{in:empty}", "{out}"],
            true,
            levitated,
        ),
        merged(
            "merge-grep",
            "Grep",
            &["mapreduce.job.reduces=2"],
            &["{in:text}", "{out}", "w1[0-9]*"],
            false,
            levitated,
        ),
        merged(
            "merge-secondarysort-falls-back",
            "SecondarySort",
            &[],
            &["{in:pairs}", "{out}"],
            false,
            Merge::Refused(
                "the sort comparator org.apache.hadoop.examples.SecondarySort$IntPair$Comparator",
            ),
        ),
        merged(
            "merge-unloadable-library-falls-back",
            "WordCount",
            &["mapreduce.job.reduces=2"],
            &["{in:text}", "{out}"],
            false,
            Merge::Refused("the sluice library does not load on "),
        ),
    ]);
    // A job of the test driver's own for each key type no example uses: the order of keys
    // must be Hadoop's, the order of values within a key is unspecified.
    for (name, kind) in KEY_TYPES {
        let args = [*kind, "{in:numbers}", "{out}"];
        let mut j = job(name, "", &["mapreduce.job.reduces=2"], &args, native);
        j.args[0] = "ExamplesBatch$KeyTypes".to_string();
        jobs.push(j);
        if *kind == "int" {
            // A Java combiner that throws, called back from native code: the task fails with
            // its exception, the JVM goes on.
            let fails = Expect::Fails("java.io.IOException: the combiner failed on purpose");
            let options = ["mapreduce.job.reduces=2", "keytypes.combiner=throw"];
            let mut j = job("java-combiner-throws", "", &options, &args, fails);
            j.args[0] = "ExamplesBatch$KeyTypes".to_string();
            jobs.push(j);
        }
        // And through the native merge too.
        let mut j = merged(
            Box::leak(format!("merge-{name}").into_boxed_str()),
            "",
            &["mapreduce.job.reduces=2"],
            &args,
            true,
            levitated,
        );
        j.args[0] = "ExamplesBatch$KeyTypes".to_string();
        jobs.push(j);
    }
    for j in &mut jobs {
        let name = j.name.strip_prefix("merge-").unwrap_or(j.name);
        j.compare = if name == "keys-null" {
            Compare::Sorted
        } else if name == "grep" || name.starts_with("keys-") {
            Compare::PerKey
        } else {
            Compare::Bytes
        };
        j.unloadable = name == "unloadable-library-falls-back";
    }
    jobs
}

/// The class, the generic options, then the arguments with their places filled in.
fn arguments(job: &Job, scratch: &Path, run: &str, plugin: bool) -> Vec<String> {
    let mut out = vec![job.args[0].clone()];
    let tmp = scratch.join("tmp").join(run);
    let mut options = vec![
        "mapreduce.framework.name=local".to_string(),
        "fs.defaultFS=file:///".to_string(),
        format!("hadoop.tmp.dir={}", tmp.display()),
    ];
    options.extend(job.options.iter().cloned());
    if plugin {
        options.extend(job.plugin.iter().cloned());
    }
    for o in options {
        out.push("-D".into());
        out.push(o);
    }
    for a in &job.args[1..] {
        out.push(if a == "{out}" {
            scratch.join("out").join(run).display().to_string()
        } else if let Some(name) = a.strip_prefix("{in:").and_then(|a| a.strip_suffix('}')) {
            scratch.join("in").join(name).display().to_string()
        } else if let Some(job) = a.strip_prefix("{out:").and_then(|a| a.strip_suffix('}')) {
            // The output of another job's run of the same kind (stock or plugin).
            let kind = if plugin { "plugin" } else { "stock" };
            scratch
                .join("out")
                .join(format!("{job}-{kind}"))
                .display()
                .to_string()
        } else {
            a.clone()
        });
    }
    out
}

fn sorted_lines(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<String>> {
    files
        .iter()
        .map(|(name, bytes)| {
            let mut lines: Vec<String> = String::from_utf8_lossy(bytes)
                .lines()
                .map(String::from)
                .collect();
            lines.sort();
            (name.clone(), lines)
        })
        .collect()
}

fn per_key(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<(String, Vec<String>)>> {
    files
        .iter()
        .map(|(name, bytes)| {
            // Runs of lines with equal keys, in file order; each run's lines sorted.
            let mut groups: Vec<(String, Vec<String>)> = Vec::new();
            for line in String::from_utf8_lossy(bytes).lines() {
                let key = line.split('\t').next().unwrap_or("").to_string();
                match groups.last_mut() {
                    Some((last, lines)) if *last == key => lines.push(line.to_string()),
                    _ => groups.push((key, vec![line.to_string()])),
                }
            }
            groups.iter_mut().for_each(|(_, g)| g.sort());
            (name.clone(), groups)
        })
        .collect()
}

fn check(job: &Job, scratch: &Path) -> Result<(), String> {
    let result = |run: &str| scratch.join("results").join(run);
    let (stock, plugin) = (
        format!("{}-stock", job.name),
        format!("{}-plugin", job.name),
    );
    if let Expect::Fails(why) = job.expect {
        for run in [&stock, &plugin] {
            let exit = fs::read_to_string(result(run).join("exit")).unwrap_or_default();
            if exit.trim() == "0" {
                return Err(format!("{run} succeeded"));
            }
        }
        let log = fs::read_to_string(result(&plugin).join("log")).unwrap_or_default();
        if !log.contains(why)
            || !log.contains("(called back per batch)")
            || log.contains("panicked")
        {
            return Err(format!(
                "the plugin run did not fail with \"{why}\":\n{log}"
            ));
        }
        return Ok(());
    }
    let mut logs = Vec::new();
    for run in [&stock, &plugin] {
        let exit = fs::read_to_string(result(run).join("exit")).unwrap_or_default();
        let log = fs::read_to_string(result(run).join("log")).unwrap_or_default();
        if exit.trim() != "0" {
            return Err(format!("{run} exited {exit}:\n{log}"));
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
    let same = match job.compare {
        Compare::Bytes => stock_files == plugin_files,
        Compare::PerKey => per_key(&stock_files) == per_key(&plugin_files),
        Compare::Sorted => sorted_lines(&stock_files) == sorted_lines(&plugin_files),
    };
    if !same {
        return Err(format!(
            "the outputs differ: see {} and {}",
            scratch.join("out").join(&stock).display(),
            scratch.join("out").join(&plugin).display()
        ));
    }
    let (stock_counters, plugin_counters) = (counter_blocks(&logs[0]), counter_blocks(&logs[1]));
    if stock_counters.is_empty() || stock_counters.len() != plugin_counters.len() {
        return Err(format!(
            "{} counter blocks in the stock log, {} with the plugin",
            stock_counters.len(),
            plugin_counters.len()
        ));
    }
    let mut compared: Vec<&str> = RECORD_COUNTERS.to_vec();
    let sizes = ["Map output materialized bytes", "Reduce shuffle bytes"];
    match job.expect {
        Expect::Native { exact: true } | Expect::Refused(_) | Expect::Stock => {
            compared.extend(SPILL_COUNTERS)
        }
        Expect::Compressed => compared.extend(SPILL_COUNTERS.iter().filter(|c| !sizes.contains(c))),
        // Handled above.
        Expect::Native { exact: false } | Expect::Fails(_) => {}
    }
    if let Merge::Native { .. } = job.merge {
        // The reduce side spills only what does not fit in the native merge's memory (checked
        // below); every map output is merged once.
        compared.retain(|c| *c != "Spilled Records");
        compared.extend(["Merged Map outputs", "Shuffled Maps "]);
    }
    for (i, (s, p)) in stock_counters.iter().zip(&plugin_counters).enumerate() {
        for name in &compared {
            let get = |c: &Counters| c.get(FRAMEWORK_GROUP, name);
            if get(s) != get(p) {
                return Err(format!(
                    "job {i}: {name} is {:?} in Hadoop, {:?} with the plugin",
                    get(s),
                    get(p)
                ));
            }
        }
        if job.expect == Expect::Compressed {
            let size = |c: &Counters, name: &str| c.get(FRAMEWORK_GROUP, name);
            let (stock, plugin) = (
                sizes.map(|name| size(s, name)),
                sizes.map(|name| size(p, name)),
            );
            // What the maps wrote is what the reducers fetched, in each run alike.
            if plugin[0].is_none_or(|bytes| bytes == 0)
                || (stock[0] == stock[1]) != (plugin[0] == plugin[1])
            {
                return Err(format!(
                    "job {i}: materialized and shuffled bytes {stock:?} in Hadoop, {plugin:?} with the plugin"
                ));
            }
        }
        let tasks = p.get("sluice", "NATIVE_COLLECTOR_TASKS");
        match job.expect {
            Expect::Native { .. } | Expect::Compressed => {
                if tasks.is_none_or(|t| t == 0) {
                    return Err(format!("job {i}: no sluice/NATIVE_COLLECTOR_TASKS counter"));
                }
            }
            Expect::Refused(_) | Expect::Stock | Expect::Fails(_) => {
                if tasks.is_some() {
                    return Err(format!("job {i}: the collector was used"));
                }
            }
        }
        check_merge(job, i, s, p)?;
    }
    if let Merge::Native { .. } = job.merge {
        // The last job's reduce tasks are its part files: each merged natively.
        let parts = plugin_files
            .keys()
            .filter(|n| n.starts_with("part-"))
            .count() as u64;
        let merged = plugin_counters
            .last()
            .and_then(|c| c.get("sluice", "NATIVE_MERGE_TASKS"));
        if merged != Some(parts) {
            return Err(format!(
                "{merged:?} reduce tasks merged natively, {parts} part files"
            ));
        }
        if logs[1].contains("sluice: native merge not used") {
            return Err(format!(
                "a reduce task refused the native merge:\n{}",
                logs[1]
            ));
        }
    }
    if let Merge::Refused(why) = job.merge {
        if !logs[1].contains(&format!("sluice: native merge not used: {why}")) {
            return Err(format!(
                "the merge's refusal \"{why}\" is not logged:\n{}",
                logs[1]
            ));
        }
    }
    if job.expect == (Expect::Native { exact: false }) {
        // These jobs exist to make the native collector spill: some task must have merged
        // several runs ("... written natively: N runs, ...").
        let most_runs = logs[1]
            .lines()
            .filter_map(|l| l.split("written natively: ").nth(1))
            .filter_map(|rest| rest.split(' ').next()?.parse::<u64>().ok())
            .max();
        if most_runs.is_none_or(|runs| runs < 2) {
            return Err(format!(
                "no task spilled more than once ({most_runs:?} runs)"
            ));
        }
    }
    if job.name.contains("java-combiner") {
        // The job's own combiner ran, called back by the library.
        let combined = plugin_counters.iter().all(|c| {
            c.get(FRAMEWORK_GROUP, "Combine input records")
                .is_some_and(|n| n > 0)
        });
        if !logs[1].contains("(called back per batch)") || !combined {
            return Err(format!(
                "the Java combiner was not called back:\n{}",
                logs[1]
            ));
        }
    }
    let refused = logs[1].contains("sluice: native collector not used");
    match job.expect {
        Expect::Native { .. } | Expect::Compressed if refused => {
            Err(format!("a task refused:\n{}", logs[1]))
        }
        Expect::Refused(why)
            if !logs[1].contains(&format!("sluice: native collector not used: {why}")) =>
        {
            Err(format!("the refusal \"{why}\" is not logged:\n{}", logs[1]))
        }
        _ => Ok(()),
    }
}

/// The native merge's counters of job `i` against the stock run's.
fn check_merge(job: &Job, i: usize, stock: &Counters, plugin: &Counters) -> Result<(), String> {
    let sluice = |name: &str| plugin.get("sluice", name);
    match job.merge {
        Merge::NotAsked => Ok(()),
        Merge::Refused(_) if sluice("NATIVE_MERGE_TASKS").is_some() => {
            Err(format!("job {i}: the native merge was used"))
        }
        Merge::Refused(_) => Ok(()),
        Merge::Native { .. } if sluice("NATIVE_MERGE_TASKS").is_none_or(|t| t == 0) => {
            Err(format!("job {i}: no sluice/NATIVE_MERGE_TASKS counter"))
        }
        Merge::Native { disk } => {
            let disk_bytes = sluice("NATIVE_MERGE_DISK_BYTES").unwrap_or(0);
            if (disk_bytes > 0) != disk {
                return Err(format!(
                    "job {i}: the native merge wrote {disk_bytes} bytes to disk"
                ));
            }
            // Hadoop spills every record its reducers read once more (its final merge goes
            // through disk); the native merge, when everything fits, none.
            let spilled = |c: &Counters| c.get(FRAMEWORK_GROUP, "Spilled Records").unwrap_or(0);
            if !disk && spilled(stock) > 0 && spilled(plugin) >= spilled(stock) {
                return Err(format!(
                    "job {i}: {} records spilled, Hadoop {}: the merge did not stay in memory",
                    spilled(plugin),
                    spilled(stock)
                ));
            }
            Ok(())
        }
    }
}

#[test]
#[cfg_attr(
    not(feature = "test-hadoop"),
    ignore = "needs Java 17, `make hadoop` and `make plugin` (the test-hadoop feature)"
)]
fn hadoop_examples_give_the_same_output_with_the_native_collector() {
    require(&[
        (
            "target/hadoop/lib/.complete",
            "`make hadoop` (tests/hadoop/fetch.sh)",
        ),
        ("target/plugin/sluice-plugin.jar", "`make plugin`"),
    ]);
    let root = root();
    let scratch_dir = tempfile::Builder::new()
        .prefix("plugin-hadoop")
        .tempdir_in(root.join("target"))
        .unwrap();
    let scratch_path = scratch_dir.path().to_path_buf();
    let scratch = scratch_path.as_path();
    write_inputs(scratch);
    let mut manifest = String::new();
    let teragen = vec![
        format!("{EXAMPLES}.terasort.TeraGen"),
        "-D".into(),
        "mapreduce.framework.name=local".into(),
        "-D".into(),
        "fs.defaultFS=file:///".into(),
        "-D".into(),
        format!("hadoop.tmp.dir={}", scratch.join("tmp/teragen").display()),
        "-D".into(),
        "mapreduce.job.maps=2".into(),
        "30000".into(),
        scratch.join("in/teragen").display().to_string(),
    ];
    case(
        &mut manifest,
        "teragen",
        &scratch.join("results/teragen"),
        &teragen,
    );
    let local = |run: &str| {
        [
            "mapreduce.framework.name=local".to_string(),
            "fs.defaultFS=file:///".to_string(),
            format!("hadoop.tmp.dir={}", scratch.join("tmp").join(run).display()),
        ]
        .into_iter()
        .flat_map(|o| ["-D".to_string(), o])
    };
    // SequenceFiles of random BytesWritable keys and values, for sort.
    let randomwriter: Vec<String> = std::iter::once(format!("{EXAMPLES}.RandomWriter"))
        .chain(local("randomwriter"))
        .chain(
            [
                "-D",
                "mapreduce.randomwriter.totalbytes=2000000",
                "-D",
                "mapreduce.randomwriter.bytespermap=1000000",
            ]
            .map(String::from),
        )
        .chain([scratch.join("in/random").display().to_string()])
        .collect();
    case(
        &mut manifest,
        "randomwriter",
        &scratch.join("results/randomwriter"),
        &randomwriter,
    );
    // SLUICE_PLUGIN_CASES=a,b runs only the named jobs.
    let only = std::env::var("SLUICE_PLUGIN_CASES").ok();
    let jobs: Vec<Job> = jobs()
        .into_iter()
        .filter(|j| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|n| n == j.name))
        })
        .collect();
    assert!(!jobs.is_empty(), "SLUICE_PLUGIN_CASES names no job");
    let mut unloadable = String::new();
    for job in &jobs {
        for plugin in [false, true] {
            let run = format!("{}-{}", job.name, if plugin { "plugin" } else { "stock" });
            let args = arguments(job, scratch, &run, plugin);
            let into = if plugin && job.unloadable {
                &mut unloadable
            } else {
                &mut manifest
            };
            case(into, &run, &scratch.join("results").join(&run), &args);
        }
    }
    case(
        &mut manifest,
        "panic",
        &scratch.join("results/panic"),
        &["@panic".to_string()],
    );
    fs::write(scratch.join("manifest"), manifest).unwrap();
    fs::write(scratch.join("manifest-unloadable"), &unloadable).unwrap();

    let classes = scratch.join("classes");
    let classpath = format!(
        "{}:{}:{}:{}/*",
        classes.display(),
        root.join("tests/plugin").display(),
        root.join("target/plugin/sluice-plugin.jar").display(),
        root.join("target/hadoop/lib").display()
    );
    compile_driver(&classes, &classpath);
    let batch = |manifest: &str, property: Option<String>| {
        let options: Vec<String> = property.into_iter().collect();
        let status = run_driver(
            &classpath,
            &options,
            &[&scratch.join(manifest)],
            scratch,
            Stdio::inherit(),
        );
        assert!(status.success(), "the Java driver failed: {status}");
    };
    batch("manifest", None);
    if !unloadable.is_empty() {
        // A library file that is not a library: loading it fails as a broken install would.
        let broken = scratch.join("broken.so");
        fs::write(&broken, "not a library").unwrap();
        batch(
            "manifest-unloadable",
            Some(format!("-Dsluice.native.library={}", broken.display())),
        );
    }
    for generator in ["teragen", "randomwriter"] {
        let exit = fs::read_to_string(scratch.join("results").join(generator).join("exit"));
        assert_eq!(exit.unwrap_or_default().trim(), "0", "{generator} failed");
    }

    let failures: Vec<String> = jobs
        .iter()
        .filter_map(|job| {
            check(job, scratch)
                .err()
                .map(|e| format!("{}: {e}", job.name))
        })
        .collect();

    let panic_log = fs::read_to_string(scratch.join("results/panic/log")).unwrap_or_default();
    let panic_exit = fs::read_to_string(scratch.join("results/panic/exit")).unwrap_or_default();
    let mut failures = failures;
    if panic_exit.trim() != "0"
        || !panic_log.contains(
            "java.io.IOException: sluice: native code panicked: forced for a test: message 42",
        )
    {
        failures.push(format!(
            "panic: not an IOException with the message:\n{panic_log}"
        ));
    }
    if !failures.is_empty() {
        // Kept for a look at the outputs and logs.
        let kept = scratch_dir.keep();
        panic!("{}\n\n(kept in {})", failures.join("\n\n"), kept.display());
    }
}
