//! mrjob (0.7.4, from PyPI) driving sluice as its Hadoop: `-r hadoop --hadoop-bin sluice`.
//! mrjob asks `sluice version`, uploads the job's script and archives with `sluice fs`, runs
//! `sluice jar hadoop-streaming.jar` with `-files`/`-archives` URIs and a setup wrapper, reads
//! the counters from the console, streams the output back with `sluice fs -cat` and removes
//! its directory. The word counts are checked against a count made here, a two-step job with
//! sorted values against mrjob's own in-process runner (`-r inline`).
//!
//! Without the `test-clients` feature (mrjob installed: `python3 -m pip install
//! mrjob==0.7.4`) these tests are ignored, with the reason; the HDFS one also needs
//! `test-stores`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use super::harness::{finish, Scratch, SLUICE};

/// A word count with a combiner and a counter, as mrjob users write one.
const WORD_COUNT: &str = r#"
from mrjob.job import MRJob

class MRWordCount(MRJob):
    def mapper(self, _, line):
        for word in line.split():
            yield word.lower(), 1

    def combiner(self, word, counts):
        yield word, sum(counts)

    def reducer(self, word, counts):
        self.increment_counter("words", "distinct", 1)
        yield word, sum(counts)

if __name__ == "__main__":
    MRWordCount.run()
"#;

/// A job whose mapper imports a package shipped in an archive through mrjob's `--setup`
/// (`export PYTHONPATH=$PYTHONPATH:shout.tar.gz#/`), which mrjob passes as `-archives`.
const SHOUT: &str = r#"
from mrjob.job import MRJob

class MRShout(MRJob):
    def mapper(self, _, line):
        from shout import shout
        for word in line.split():
            yield shout(word), 1

    def reducer(self, word, counts):
        yield word, sum(counts)

if __name__ == "__main__":
    MRShout.run()
"#;

/// Two steps, the second one's values sorted (`SORT_VALUES`: mrjob's KeyFieldBasedPartitioner
/// and two key fields).
const TOP: &str = r#"
from mrjob.job import MRJob
from mrjob.step import MRStep

class MRTop(MRJob):
    SORT_VALUES = True

    def steps(self):
        return [MRStep(mapper=self.words, combiner=self.add, reducer=self.count),
                MRStep(reducer=self.order)]

    def words(self, _, line):
        for word in line.split():
            yield word.lower(), 1

    def add(self, word, counts):
        yield word, sum(counts)

    def count(self, word, counts):
        yield len(word) % 3, (sum(counts), word)

    def order(self, bucket, pairs):
        yield bucket, list(pairs)

if __name__ == "__main__":
    MRTop.run()
"#;

/// Runs a job class through mrjob's runner and prints its output lines and counters as JSON.
const DRIVER: &str = r#"
import importlib, json, sys
module, name = sys.argv[1], sys.argv[2]
job = getattr(importlib.import_module(module), name)(args=sys.argv[3:])
with job.make_runner() as runner:
    runner.run()
    lines = sorted("%s\t%s" % pair for pair in job.parse_output(runner.cat_output()))
    print(json.dumps({"output": lines, "counters": runner.counters()}))
"#;

const INPUT_ONE: &str = "the cat The dog\n\nA cat\ta DOG  dog\n";
const INPUT_TWO: &str = "zebra the\nÉcole école\n";

/// The word counts of the inputs, made here: words split at white space, lower-cased.
fn reference(inputs: &[&str], shout: bool) -> Vec<String> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for text in inputs {
        for word in text.split_whitespace() {
            let key = if shout {
                format!("{}!", word.to_uppercase())
            } else {
                word.to_lowercase()
            };
            *counts.entry(key).or_default() += 1;
        }
    }
    let mut lines: Vec<String> = counts.iter().map(|(w, n)| format!("{w}\t{n}")).collect();
    lines.sort();
    lines
}

/// Writes the jobs, the driver, the inputs, the archive and an empty stand-in for the
/// streaming jar (sluice knows it by its name) into `scratch`.
fn prepare(scratch: &Scratch) {
    scratch.write("mr_word_count.py", WORD_COUNT);
    scratch.write("mr_shout.py", SHOUT);
    scratch.write("mr_top.py", TOP);
    scratch.write("driver.py", DRIVER);
    scratch.write("in/one.txt", INPUT_ONE);
    scratch.write("in/two.txt", INPUT_TWO);
    scratch.write("hadoop-streaming-3.4.2.jar", "");
    scratch.write(
        "lib/shout/__init__.py",
        "def shout(word):\n    return word.upper() + '!'\n",
    );
    let tar = Command::new("tar")
        .args(["czf", "shout.tar.gz", "-C", "lib", "shout"])
        .current_dir(scratch.dir.path())
        .status()
        .unwrap();
    assert!(tar.success());
}

/// Runs `job` (module and class) through mrjob with `extra` options; returns the output lines
/// and the counters mrjob read from sluice's console.
fn run_mrjob(
    scratch: &Scratch,
    job: (&str, &str),
    extra: &[&str],
    hadoop_conf_dir: Option<&Path>,
) -> (Vec<String>, serde_json::Value) {
    let streaming_jar = scratch.arg("hadoop-streaming-3.4.2.jar");
    let mut args = vec!["-r", "hadoop", "--hadoop-bin", SLUICE];
    args.extend(["--hadoop-streaming-jar", &streaming_jar]);
    args.extend(extra);
    drive(scratch, job, &args, hadoop_conf_dir)
}

/// Runs `job` in mrjob's own process (`-r inline`, no Hadoop): the reference for jobs whose
/// output is more than a word count.
fn run_inline(scratch: &Scratch, job: (&str, &str)) -> Vec<String> {
    drive(scratch, job, &["-r", "inline"], None).0
}

fn drive(
    scratch: &Scratch,
    job: (&str, &str),
    args: &[&str],
    hadoop_conf_dir: Option<&Path>,
) -> (Vec<String>, serde_json::Value) {
    let mut command = Command::new("python3");
    command
        .arg("driver.py")
        .args([job.0, job.1])
        .args(args)
        .args([scratch.arg("in/one.txt"), scratch.arg("in/two.txt")])
        .current_dir(scratch.dir.path())
        .env("TMPDIR", scratch.dir.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("HADOOP_HOME")
        .env_remove("HADOOP_PREFIX")
        .stdin(Stdio::null());
    match hadoop_conf_dir {
        Some(dir) => command.env("HADOOP_CONF_DIR", dir),
        None => command.env_remove("HADOOP_CONF_DIR"),
    };
    let done = finish(command);
    assert_eq!(done.code, Some(0), "mrjob failed:\n{}", done.stderr);
    let last = done.stdout.lines().last().unwrap_or_default();
    let result: serde_json::Value = serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("driver output {last:?}: {e}\n{}", done.stderr));
    let lines = result["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect();
    (lines, result["counters"].clone())
}

/// Checks the counters mrjob parsed from the console of the one step.
fn check_counters(counters: &serde_json::Value, distinct: usize) {
    let step = &counters[0];
    assert_eq!(
        step["words"]["distinct"].as_u64(),
        u64::try_from(distinct).ok(),
        "{counters}"
    );
    assert_eq!(
        step["Map-Reduce Framework"]["Map input records"].as_u64(),
        Some(5),
        "{counters}"
    );
}

#[test]
#[cfg_attr(
    not(feature = "test-clients"),
    ignore = "needs mrjob (python3 -m pip install mrjob==0.7.4); cargo test --features test-clients"
)]
fn mrjob_runs_jobs_on_sluice_as_its_hadoop_over_local_files() {
    let scratch = Scratch::new();
    prepare(&scratch);
    let tmp = format!("file://{}", scratch.arg("mrjob-tmp"));
    let (lines, counters) = run_mrjob(
        &scratch,
        ("mr_word_count", "MRWordCount"),
        &["--hadoop-tmp-dir", &tmp],
        None,
    );
    let expected = reference(&[INPUT_ONE, INPUT_TWO], false);
    assert_eq!(lines, expected);
    check_counters(&counters, expected.len());

    let (lines, _) = run_mrjob(
        &scratch,
        ("mr_shout", "MRShout"),
        &[
            "--hadoop-tmp-dir",
            &tmp,
            "--setup",
            "export PYTHONPATH=$PYTHONPATH:shout.tar.gz#/",
        ],
        None,
    );
    assert_eq!(lines, reference(&[INPUT_ONE, INPUT_TWO], true));

    let (lines, _) = run_mrjob(
        &scratch,
        ("mr_top", "MRTop"),
        &["--hadoop-tmp-dir", &tmp],
        None,
    );
    assert_eq!(lines, run_inline(&scratch, ("mr_top", "MRTop")));
    // mrjob removed its directory with `sluice fs -rm -r`.
    let left: Vec<_> = std::fs::read_dir(scratch.path("mrjob-tmp"))
        .map(|entries| entries.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "mrjob's files were left: {left:?}");
}

#[test]
#[cfg_attr(
    not(all(feature = "test-clients", feature = "test-stores")),
    ignore = "needs mrjob and an HDFS server (make stores); cargo test --features test-clients,test-stores"
)]
fn mrjob_runs_jobs_on_sluice_over_hdfs() {
    let dfs = sluice_testkit::MiniDfs::start(sluice_testkit::MiniDfsOptions::default())
        .unwrap_or_else(|e| panic!("MiniDFS: {e}"));
    let scratch = Scratch::new();
    prepare(&scratch);
    // As a cluster's users have it: the default file system is HDFS, where mrjob puts its
    // files (hdfs:///user/NAME/tmp/mrjob/...), the job's input and its output.
    scratch.write(
        "conf/core-site.xml",
        &format!(
            "<configuration><property><name>fs.defaultFS</name><value>{}</value></property>\
             </configuration>",
            dfs.uri()
        ),
    );
    let conf = scratch.path("conf");
    let (lines, counters) = run_mrjob(&scratch, ("mr_word_count", "MRWordCount"), &[], Some(&conf));
    let expected = reference(&[INPUT_ONE, INPUT_TWO], false);
    assert_eq!(lines, expected);
    check_counters(&counters, expected.len());
    let (lines, _) = run_mrjob(
        &scratch,
        ("mr_shout", "MRShout"),
        &["--setup", "export PYTHONPATH=$PYTHONPATH:shout.tar.gz#/"],
        Some(&conf),
    );
    assert_eq!(lines, reference(&[INPUT_ONE, INPUT_TWO], true));
    // mrjob's directory on HDFS is gone again.
    let listed = dfs.fs(&["-ls", "-R", "/user"]);
    let listing = String::from_utf8_lossy(&listed.stdout);
    assert!(
        !listing.contains("mr_word_count") && !listing.contains("mr_shout"),
        "mrjob's files were left on HDFS:\n{listing}"
    );
}
