//! `sluice bench`: runs a suite of workloads at a chosen size, checks every output against an
//! independent reference, and writes what happened as JSON and as one self-contained HTML page
//! with plots (time per phase, throughput, peak memory, CPU and memory over time).
//!
//! Every run is a separate process, the `sluice` command a user would type (this binary), so
//! the numbers are those of a real run: process start, planning, commit and all. Inputs are
//! generated once per size and seed into the work directory and reused; outputs are checked,
//! then removed. With `--baselines`, the workloads a GNU coreutils pipeline can do (word count,
//! grep, sort) are run that way too, watched and checked the same way.

mod html;
mod sample;
mod verify;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::Serialize;

use crate::size::{human_bytes, parse_size};
use crate::{default_threads, parse_location, thread_count};

pub(crate) use sample::Sample;

/// The regular expression of the grep workload: runs of two or more vowels (many matches,
/// many distinct; the same in Rust's syntax and POSIX extended syntax).
const GREP_PATTERN: &str = "[aeiou]{2,}";

/// Iterations of PageRank and k-means (a fixed number: the tolerance is 0).
const ITERATIONS: usize = 10;

/// Clusters of the k-means workload (as many as the generator draws points around).
const CLUSTERS: usize = 8;

/// Seed of every generated input.
const SEED: u64 = 42;

/// Options of `sluice bench`.
#[derive(Args)]
pub(crate) struct BenchArgs {
    /// What to run: a suite (all; text: wordcount, grep, sort, invertedindex, streaming;
    /// sort: sort, terasort; graph: pagerank, connected-components, kmeans) or workload names,
    /// separated by commas.
    #[arg(long, default_value = "all", value_parser = parse_suite)]
    suite: Suite,
    /// Input size of each workload: bytes of text, of TeraGen rows, of edge list or of points.
    #[arg(long, default_value = "64MiB", value_parser = parse_size_arg)]
    size: u64,
    /// Memory budget of every job (and of `sort -S` in the baselines).
    #[arg(long, short = 'm', default_value = "1GiB", value_parser = parse_size_arg)]
    memory: u64,
    /// Worker threads of every job [default: number of cores].
    #[arg(long, short = 't', value_parser = thread_count)]
    threads: Option<usize>,
    /// Reduce partitions of the jobs that take them [default: the threads].
    #[arg(long, short = 'r', value_parser = crate::at_least_one)]
    reducers: Option<usize>,
    /// Runs of each system; the fastest is reported (every run's time is in the JSON).
    #[arg(long, default_value_t = 1, value_parser = crate::at_least_one)]
    runs: usize,
    /// Also run the workloads a GNU coreutils pipeline can do (wordcount, grep, sort) that
    /// way, side by side, with the same memory and threads.
    #[arg(long)]
    baselines: bool,
    /// Directory for the generated inputs (kept and reused), the outputs and the report.
    #[arg(long, default_value = "sluice-bench", value_parser = parse_location)]
    work: PathBuf,
    /// Where to write report.json and report.html [default: WORK/report].
    #[arg(long, value_parser = parse_location)]
    report: Option<PathBuf>,
    /// Keep every output directory (they are removed once checked).
    #[arg(long)]
    keep_outputs: bool,
    /// Print nothing but errors and the report's path.
    #[arg(long, short = 'q')]
    quiet: bool,
}

fn parse_size_arg(text: &str) -> Result<u64, String> {
    match parse_size(text)? {
        0 => Err("must be at least 1 byte".into()),
        n => Ok(n),
    }
}

/// A workload of the suite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Workload {
    Wordcount,
    Grep,
    Sort,
    Invertedindex,
    Streaming,
    Terasort,
    Pagerank,
    ConnectedComponents,
    Kmeans,
}

impl Workload {
    const ALL: [Workload; 9] = [
        Workload::Wordcount,
        Workload::Grep,
        Workload::Sort,
        Workload::Invertedindex,
        Workload::Streaming,
        Workload::Terasort,
        Workload::Pagerank,
        Workload::ConnectedComponents,
        Workload::Kmeans,
    ];

    /// Its name on the command line and in the report.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::Wordcount => "wordcount",
            Workload::Grep => "grep",
            Workload::Sort => "sort",
            Workload::Invertedindex => "invertedindex",
            Workload::Streaming => "streaming",
            Workload::Terasort => "terasort",
            Workload::Pagerank => "pagerank",
            Workload::ConnectedComponents => "connected-components",
            Workload::Kmeans => "kmeans",
        }
    }

    /// What it does, in a few words.
    fn description(self) -> String {
        match self {
            Workload::Wordcount => "word count of a text corpus".into(),
            Workload::Grep => format!("count of every match of {GREP_PATTERN} in the corpus"),
            Workload::Sort => "sort of the corpus's lines".into(),
            Workload::Invertedindex => "the files holding each word of the corpus".into(),
            Workload::Streaming => {
                "Hadoop Streaming word count: tr as the mapper, uniq -c as the reducer".into()
            }
            Workload::Terasort => "TeraSort of TeraGen's 100-byte rows".into(),
            Workload::Pagerank => format!("{ITERATIONS} PageRank iterations of an R-MAT graph"),
            Workload::ConnectedComponents => {
                "connected components of an R-MAT graph, until no label changes".into()
            }
            Workload::Kmeans => format!("{ITERATIONS} k-means iterations, k = {CLUSTERS}"),
        }
    }

    /// The input it reads.
    fn input(self) -> InputKind {
        match self {
            Workload::Wordcount
            | Workload::Grep
            | Workload::Sort
            | Workload::Invertedindex
            | Workload::Streaming => InputKind::Text,
            Workload::Terasort => InputKind::Rows,
            Workload::Pagerank | Workload::ConnectedComponents => InputKind::Graph,
            Workload::Kmeans => InputKind::Points,
        }
    }

    /// Whether a coreutils pipeline does the same work.
    fn has_baseline(self) -> bool {
        matches!(self, Workload::Wordcount | Workload::Grep | Workload::Sort)
    }

    /// Whether sluice writes a JSON report of it (streaming jobs do not take --report).
    fn reports(self) -> bool {
        self != Workload::Streaming
    }
}

/// The workloads to run, in order.
#[derive(Debug, Clone)]
pub(crate) struct Suite(Vec<Workload>);

fn parse_suite(text: &str) -> Result<Suite, String> {
    let mut chosen: Vec<Workload> = Vec::new();
    for name in text.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let add: Vec<Workload> = match name {
            "all" => Workload::ALL.to_vec(),
            "text" => vec![
                Workload::Wordcount,
                Workload::Grep,
                Workload::Sort,
                Workload::Invertedindex,
                Workload::Streaming,
            ],
            "sort" => vec![Workload::Sort, Workload::Terasort],
            "graph" => vec![
                Workload::Pagerank,
                Workload::ConnectedComponents,
                Workload::Kmeans,
            ],
            other => match Workload::ALL.iter().find(|w| w.name() == other) {
                Some(&w) => vec![w],
                None => {
                    let names: Vec<&str> = Workload::ALL.iter().map(|w| w.name()).collect();
                    return Err(format!(
                        "unknown workload {other:?}: the suites are all, text, sort and graph; \
                         the workloads {}",
                        names.join(", ")
                    ));
                }
            },
        };
        for w in add {
            if !chosen.contains(&w) {
                chosen.push(w);
            }
        }
    }
    if chosen.is_empty() {
        return Err("no workload named".into());
    }
    Ok(Suite(chosen))
}

/// The inputs the workloads read, each generated once per size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputKind {
    /// `sluice gen text`: a Zipf corpus in at least 8 files.
    Text,
    /// `sluice run teragen`: 100-byte rows.
    Rows,
    /// `sluice gen graph`: an R-MAT edge list.
    Graph,
    /// `sluice gen points`: 2-dimensional points around 8 centres.
    Points,
}

impl InputKind {
    fn name(self) -> &'static str {
        match self {
            InputKind::Text => "text",
            InputKind::Rows => "rows",
            InputKind::Graph => "graph",
            InputKind::Points => "points",
        }
    }

    /// The arguments of the sluice command that writes it, of about `size` bytes, to `dir`.
    fn generate(self, size: u64, dir: &Path) -> Vec<String> {
        let dir = dir.display().to_string();
        let seed = SEED.to_string();
        let mut args: Vec<String> = match self {
            InputKind::Text => {
                let files = size.div_ceil(64 << 20).max(8);
                let size = size.to_string();
                [
                    "gen",
                    "text",
                    "--size",
                    &size,
                    "--files",
                    &files.to_string(),
                ]
                .map(String::from)
                .to_vec()
            }
            InputKind::Rows => {
                let rows = (size / 100).max(1).to_string();
                ["run", "teragen", "--rows", &rows]
                    .map(String::from)
                    .to_vec()
            }
            InputKind::Graph => {
                let (vertices, edges) = graph_shape(size);
                let (vertices, edges) = (vertices.to_string(), edges.to_string());
                ["gen", "graph", "--vertices", &vertices, "--edges", &edges]
                    .map(String::from)
                    .to_vec()
            }
            InputKind::Points => {
                // `-12.345678 98.765432\n`: about 21 bytes a point.
                let points = (size / 21).max(CLUSTERS as u64).to_string();
                ["gen", "points", "--points", &points, "--clusters", "8"]
                    .map(String::from)
                    .to_vec()
            }
        };
        if self != InputKind::Rows {
            args.extend(["--seed".into(), seed]);
        }
        args.extend(["--output".into(), dir, "--quiet".into()]);
        args
    }
}

/// Vertices and edges of an edge list of about `size` bytes, 16 edges a vertex (Graph500's
/// edge factor). R-MAT's ids crowd at the low end, so a line's length is measured on the
/// first edges the generator would draw, and the count refined a few times.
fn graph_shape(size: u64) -> (u64, u64) {
    const SAMPLE: u64 = 4096;
    let mut edges = (size / 8).max(16);
    for _ in 0..4 {
        let shape = sluice_jobs::GraphShape {
            vertices: (edges / 16).max(2),
            edges,
        };
        let digits = |v: u64| u64::from(v.checked_ilog10().unwrap_or(0)) + 1;
        let (mut lines, mut bytes) = (0u64, 0u64);
        for (src, dst) in sluice_jobs::rmat_edges(shape, SEED, 0, SAMPLE) {
            lines += 1;
            bytes += digits(src) + digits(dst) + 2;
        }
        let per_edge = bytes as f64 / lines.max(1) as f64;
        edges = ((size as f64 / per_edge.max(1.0)) as u64).max(16);
    }
    ((edges / 16).max(2), edges)
}

/// Who ran a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum System {
    /// This sluice.
    Sluice,
    /// A GNU coreutils pipeline.
    Coreutils,
}

impl System {
    pub(crate) fn name(self) -> &'static str {
        match self {
            System::Sluice => "sluice",
            System::Coreutils => "coreutils",
        }
    }
}

/// The whole report, as written to report.json.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    /// When the suite started (UTC, RFC 3339).
    pub(crate) started: String,
    /// sluice's version.
    pub(crate) version: &'static str,
    /// The machine it ran on.
    pub(crate) machine: Machine,
    /// The settings every workload had.
    pub(crate) settings: Settings,
    /// Each workload's results.
    pub(crate) workloads: Vec<WorkloadResult>,
}

/// The machine.
#[derive(Debug, Serialize)]
pub(crate) struct Machine {
    /// The CPU's model name.
    pub(crate) cpu: String,
    /// Cores this process may use.
    pub(crate) cores: usize,
    /// Physical memory.
    pub(crate) memory_bytes: u64,
    /// The Linux kernel's release.
    pub(crate) kernel: String,
}

/// The settings of a suite.
#[derive(Debug, Serialize)]
pub(crate) struct Settings {
    /// Input size asked of each workload.
    pub(crate) size_bytes: u64,
    /// Memory budget of every job.
    pub(crate) memory_bytes: u64,
    /// Worker threads of every job.
    pub(crate) threads: usize,
    /// Reduce partitions of the jobs that take them.
    pub(crate) reducers: usize,
    /// Runs of each system.
    pub(crate) runs: usize,
}

/// One workload: its input and what each system did with it.
#[derive(Debug, Serialize)]
pub(crate) struct WorkloadResult {
    pub(crate) workload: Workload,
    pub(crate) description: String,
    /// The input directory, its data bytes and files.
    pub(crate) input: PathBuf,
    pub(crate) input_bytes: u64,
    pub(crate) input_files: usize,
    pub(crate) systems: Vec<SystemResult>,
}

/// What one system did with a workload: its fastest run, and every run's time.
#[derive(Debug, Serialize)]
pub(crate) struct SystemResult {
    pub(crate) system: System,
    /// The command, as words.
    pub(crate) command: Vec<String>,
    /// Whether it ran and its output matched the reference.
    pub(crate) ok: bool,
    /// What the check found ("matches the reference", or what went wrong).
    pub(crate) check: String,
    pub(crate) wall_seconds: f64,
    pub(crate) run_seconds: Vec<f64>,
    pub(crate) cpu_seconds: f64,
    pub(crate) peak_rss_bytes: u64,
    /// Input bytes per wall second, in MB/s (10^6 bytes).
    pub(crate) throughput_mb_per_s: f64,
    /// The job's own phases (sluice) or iterations, in order; empty when it reports none.
    pub(crate) phases: Vec<Phase>,
    /// CPU and memory over time.
    pub(crate) samples: Vec<Sample>,
}

/// A phase of a job and its wall time.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Phase {
    pub(crate) name: String,
    pub(crate) seconds: f64,
}

/// `sluice bench`. Exits with an error (after writing the report) if a run failed or an
/// output did not match its reference.
pub(crate) fn run(args: &BenchArgs) -> Result<()> {
    let threads = args.threads.unwrap_or_else(default_threads);
    let reducers = args.reducers.unwrap_or(threads);
    let sluice = std::env::current_exe().context("cannot find the sluice binary")?;
    let work = absolute(&args.work)?;
    let report_dir = match &args.report {
        Some(dir) => absolute(dir)?,
        None => work.join("report"),
    };
    for dir in [work.join("inputs"), work.join("runs"), report_dir.clone()] {
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let settings = Settings {
        size_bytes: args.size,
        memory_bytes: args.memory,
        threads,
        reducers,
        runs: args.runs,
    };
    let say = |text: String| {
        if !args.quiet {
            eprintln!("{text}");
        }
    };
    say(format!(
        "sluice bench: {} workload(s) of {} each, memory {}, {threads} thread(s), {reducers} \
         reducer(s); work directory {}",
        args.suite.0.len(),
        human_bytes(args.size),
        human_bytes(args.memory),
        work.display()
    ));
    let started = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut results = Vec::new();
    let total = args.suite.0.len();
    for (n, &workload) in args.suite.0.iter().enumerate() {
        let tag = format!("[{}/{total}] {}", n + 1, workload.name());
        let input = prepare_input(&sluice, &work, workload.input(), args.size, &say, &tag)?;
        let files = verify::data_files(&input)?;
        let input_bytes = files
            .iter()
            .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
            .sum();
        say(format!("{tag}: computing the reference"));
        let reference = Reference::compute(workload, &files)
            .with_context(|| format!("cannot compute the reference of {}", workload.name()))?;
        let mut systems = vec![System::Sluice];
        if args.baselines && workload.has_baseline() {
            systems.push(System::Coreutils);
        }
        let mut runs: Vec<Vec<SystemResult>> = systems.iter().map(|_| Vec::new()).collect();
        for run in 0..args.runs {
            for (s, &system) in systems.iter().enumerate() {
                let context = RunContext {
                    sluice: &sluice,
                    work: &work,
                    input: &input,
                    files: &files,
                    settings: &settings,
                };
                let result = run_once(&context, workload, system, input_bytes, &reference)?;
                say(format!(
                    "{tag}: {:<9} run {}/{}: {:>8.2} s  {:>8.1} MB/s  {:>5.1} cores  peak {:>10}  {}",
                    system.name(),
                    run + 1,
                    args.runs,
                    result.wall_seconds,
                    result.throughput_mb_per_s,
                    result.cpu_seconds / result.wall_seconds.max(1e-9),
                    human_bytes(result.peak_rss_bytes),
                    result.check
                ));
                if !args.keep_outputs {
                    remove(&output_path(&work, workload, system));
                }
                runs[s].push(result);
            }
        }
        results.push(WorkloadResult {
            workload,
            description: workload.description(),
            input,
            input_bytes,
            input_files: files.len(),
            systems: runs.into_iter().filter_map(fastest).collect(),
        });
    }
    let report = Report {
        started,
        version: env!("CARGO_PKG_VERSION"),
        machine: machine(),
        settings,
        workloads: results,
    };
    let json = report_dir.join("report.json");
    let page = report_dir.join("report.html");
    let text = serde_json::to_string_pretty(&report).context("cannot serialise the report")?;
    std::fs::write(&json, text + "\n")
        .with_context(|| format!("cannot write {}", json.display()))?;
    std::fs::write(&page, html::render(&report))
        .with_context(|| format!("cannot write {}", page.display()))?;
    println!("{}", page.display());
    let failed: Vec<String> = report
        .workloads
        .iter()
        .flat_map(|w| {
            w.systems
                .iter()
                .filter(|s| !s.ok)
                .map(move |s| format!("{} ({}): {}", w.workload.name(), s.system.name(), s.check))
        })
        .collect();
    if !failed.is_empty() {
        bail!(
            "{} run(s) failed or gave a wrong output:\n  {}",
            failed.len(),
            failed.join("\n  ")
        );
    }
    Ok(())
}

/// The run that stands for a system: its fastest successful run (or, if none succeeded, its
/// fastest), carrying every run's time, and failed with the first failure's message if any
/// run failed.
fn fastest(runs: Vec<SystemResult>) -> Option<SystemResult> {
    let times: Vec<f64> = runs.iter().map(|r| r.wall_seconds).collect();
    let failure = runs.iter().find(|r| !r.ok).map(|r| r.check.clone());
    let mut best = runs.into_iter().min_by(|a, b| {
        (!a.ok)
            .cmp(&!b.ok)
            .then(a.wall_seconds.total_cmp(&b.wall_seconds))
    })?;
    best.run_seconds = times;
    if let Some(check) = failure {
        best.ok = false;
        best.check = check;
    }
    Some(best)
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}

fn remove(path: &Path) {
    if path.is_dir() {
        let _ = std::fs::remove_dir_all(path);
    } else {
        let _ = std::fs::remove_file(path);
    }
}

/// Generates an input unless a complete one (with `_SUCCESS`) is there from an earlier run.
fn prepare_input(
    sluice: &Path,
    work: &Path,
    kind: InputKind,
    size: u64,
    say: &dyn Fn(String),
    tag: &str,
) -> Result<PathBuf> {
    let dir = work
        .join("inputs")
        .join(format!("{}-{size}-seed{SEED}", kind.name()));
    if dir.join("_SUCCESS").is_file() {
        return Ok(dir);
    }
    remove(&dir);
    say(format!(
        "{tag}: generating the {} input ({}) in {}",
        kind.name(),
        human_bytes(size),
        dir.display()
    ));
    let args = kind.generate(size, &dir);
    let output = Command::new(sluice)
        .args(&args)
        .output()
        .with_context(|| format!("cannot run {}", sluice.display()))?;
    if !output.status.success() {
        bail!(
            "sluice {} failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(dir)
}

/// The expected result of a workload, computed from its input.
enum Reference {
    Counts(std::collections::HashMap<Vec<u8>, u64>),
    Digest(verify::Digest),
    Index(std::collections::BTreeMap<Vec<u8>, std::collections::BTreeSet<String>>),
    Ranks(std::collections::BTreeMap<u64, f64>),
    Labels(std::collections::BTreeMap<u64, u64>),
    Centres(Vec<Vec<f64>>),
}

impl Reference {
    fn compute(workload: Workload, files: &[PathBuf]) -> Result<Reference> {
        Ok(match workload {
            Workload::Wordcount | Workload::Streaming => {
                Reference::Counts(verify::word_counts(files)?)
            }
            Workload::Grep => {
                let pattern = regex::bytes::Regex::new(GREP_PATTERN).context("bad pattern")?;
                Reference::Counts(verify::match_counts(files, &pattern)?)
            }
            Workload::Sort => Reference::Digest(verify::line_digest(files)?),
            Workload::Terasort => Reference::Digest(verify::row_digest(files)?),
            Workload::Invertedindex => Reference::Index(verify::word_files(files)?),
            Workload::Pagerank => {
                Reference::Ranks(verify::pagerank(&verify::edges(files)?, 0.0, ITERATIONS))
            }
            Workload::ConnectedComponents => {
                Reference::Labels(verify::components(&verify::edges(files)?))
            }
            Workload::Kmeans => Reference::Centres(verify::kmeans(
                &verify::points(files)?,
                CLUSTERS,
                0.0,
                ITERATIONS,
            )),
        })
    }

    /// Checks the output of `system` at `output` (a directory, or one file for a pipeline).
    fn check(&self, workload: Workload, system: System, output: &Path) -> Result<()> {
        let files = || -> Result<Vec<PathBuf>> {
            if output.is_dir() {
                verify::data_files(output)
            } else {
                Ok(vec![output.to_path_buf()])
            }
        };
        match (self, workload, system) {
            (Reference::Counts(counts), Workload::Wordcount, System::Sluice) => {
                verify::check_word_counts(output, counts)
            }
            (Reference::Counts(counts), Workload::Grep, System::Sluice) => {
                verify::check_grep(output, counts)
            }
            (Reference::Counts(counts), _, _) => verify::check_uniq_counts(output, counts),
            (Reference::Digest(digest), Workload::Terasort, _) => {
                verify::check_terasort(output, *digest)
            }
            (Reference::Digest(digest), _, _) => verify::check_sorted_lines(&files()?, *digest),
            (Reference::Index(index), _, _) => verify::check_index(output, index),
            (Reference::Ranks(ranks), _, _) => verify::check_pagerank(output, ranks),
            (Reference::Labels(labels), _, _) => verify::check_components(output, labels),
            (Reference::Centres(centres), _, _) => verify::check_kmeans(output, centres),
        }
    }
}

/// Where a workload's run writes: a directory for sluice, a file for a pipeline.
fn output_path(work: &Path, workload: Workload, system: System) -> PathBuf {
    work.join("runs")
        .join(format!("{}-{}", workload.name(), system.name()))
}

/// What every run needs.
struct RunContext<'a> {
    sluice: &'a Path,
    work: &'a Path,
    input: &'a Path,
    files: &'a [PathBuf],
    settings: &'a Settings,
}

/// Runs one system on one workload once, watches it and checks its output.
fn run_once(
    context: &RunContext<'_>,
    workload: Workload,
    system: System,
    input_bytes: u64,
    reference: &Reference,
) -> Result<SystemResult> {
    let output = output_path(context.work, workload, system);
    remove(&output);
    let report_file =
        context
            .work
            .join("runs")
            .join(format!("{}-{}.json", workload.name(), system.name()));
    remove(&report_file);
    let words = match system {
        System::Sluice => sluice_command(context, workload, &output, &report_file),
        System::Coreutils => pipeline_command(context, workload),
    };
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]);
    if system == System::Coreutils {
        command.args(context.files);
    }
    let stdout_to = (system == System::Coreutils).then_some(output.as_path());
    let watched = sample::watch(command, stdout_to)?;
    let mut phases = Vec::new();
    let mut peak_rss_bytes = watched.peak_rss_bytes;
    let (ok, check) = if !watched.status.success() {
        let message = watched.stderr_tail.lines().last().unwrap_or("").to_string();
        (false, format!("failed ({}): {message}", watched.status))
    } else {
        if workload.reports() && system == System::Sluice {
            let (job_phases, job_peak) = read_job_report(&report_file)?;
            phases = job_phases;
            peak_rss_bytes = peak_rss_bytes.max(job_peak);
        }
        match reference.check(workload, system, &output) {
            Ok(()) => (true, "matches the reference".to_string()),
            Err(e) => (false, format!("wrong output: {e:#}")),
        }
    };
    remove(&report_file);
    let wall = watched.wall_seconds;
    let mut command_words = words;
    if system == System::Coreutils {
        command_words.push(format!("{}/*", context.input.display()));
    }
    Ok(SystemResult {
        system,
        command: command_words,
        ok,
        check,
        wall_seconds: wall,
        run_seconds: vec![wall],
        cpu_seconds: watched.cpu_seconds,
        peak_rss_bytes,
        throughput_mb_per_s: input_bytes as f64 / 1e6 / wall.max(1e-9),
        phases,
        samples: watched.samples,
    })
}

/// The `sluice` command of a workload.
fn sluice_command(
    context: &RunContext<'_>,
    workload: Workload,
    output: &Path,
    report: &Path,
) -> Vec<String> {
    let s = context.settings;
    let input = context.input.display().to_string();
    let output = output.display().to_string();
    let mut words = vec![context.sluice.display().to_string()];
    if workload == Workload::Streaming {
        words.extend([
            "streaming".to_string(),
            "-D".into(),
            format!("sluice.memory={}", s.memory_bytes),
            "-D".into(),
            format!("sluice.threads={}", s.threads),
            "-D".into(),
            format!("mapreduce.job.reduces={}", s.reducers),
            "-input".into(),
            input,
            "-output".into(),
            output,
            "-mapper".into(),
            "tr -s ' \\t\\r\\f' '\\n'".into(),
            "-reducer".into(),
            "uniq -c".into(),
        ]);
        return words;
    }
    words.extend(["run".to_string(), workload.name().to_string()]);
    match workload {
        Workload::Grep => words.extend(["--pattern".into(), GREP_PATTERN.into()]),
        Workload::Pagerank => words.extend([
            "--iterations".into(),
            ITERATIONS.to_string(),
            "--tolerance".into(),
            "0".into(),
        ]),
        Workload::Kmeans => words.extend([
            "--clusters".into(),
            CLUSTERS.to_string(),
            "--iterations".into(),
            ITERATIONS.to_string(),
            "--tolerance".into(),
            "0".into(),
        ]),
        _ => {}
    }
    let iterative = matches!(
        workload,
        Workload::Pagerank | Workload::ConnectedComponents | Workload::Kmeans
    );
    words.extend([
        "--input".into(),
        input,
        "--output".into(),
        output,
        "--memory".into(),
        s.memory_bytes.to_string(),
        "--threads".into(),
        s.threads.to_string(),
        "--report".into(),
        report.display().to_string(),
        "--quiet".into(),
    ]);
    // Grep's second job sorts the matches into one file; the iterative jobs' reducers are
    // their own concern.
    if !iterative {
        words.extend(["--reducers".into(), s.reducers.to_string()]);
    }
    words
}

/// The coreutils pipeline of a workload, as `sh -c SCRIPT sh`; the input files follow as the
/// script's arguments, and its standard output is the output file.
fn pipeline_command(context: &RunContext<'_>, workload: Workload) -> Vec<String> {
    let s = context.settings;
    let tmp = context.work.join("runs").display().to_string();
    let sort = format!(
        "LC_ALL=C sort -S {}b --parallel={} -T '{}'",
        s.memory_bytes,
        s.threads,
        tmp.replace('\'', "'\\''")
    );
    let script = match workload {
        Workload::Wordcount => {
            format!("cat \"$@\" | tr -s ' \\t\\n\\r\\f' '\\n' | {sort} | LC_ALL=C uniq -c")
        }
        Workload::Grep => {
            format!("LC_ALL=C grep -ohE '{GREP_PATTERN}' \"$@\" | {sort} | LC_ALL=C uniq -c")
        }
        _ => format!("{sort} -s -t \"$(printf '\\t')\" -k1,1 \"$@\""),
    };
    vec!["sh".into(), "-c".into(), script, "sh".into()]
}

/// The phases (or iterations) and peak RSS of a job's `--report`.
fn read_job_report(path: &Path) -> Result<(Vec<Phase>, u64)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the job's report {}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let peak = json["peak_rss_bytes"].as_u64().unwrap_or(0);
    let mut phases = Vec::new();
    let phase = |name: String, seconds: &serde_json::Value| Phase {
        name,
        seconds: seconds.as_f64().unwrap_or(0.0),
    };
    if let Some(steps) = json["steps"].as_array() {
        // An iterative job: its iterations (the jobs reading the input and writing the
        // output are the rest of the wall time; `output.phases` sums every job's).
        for step in steps {
            let n = step["iteration"].as_u64().unwrap_or(0);
            phases.push(phase(format!("iteration {n}"), &step["seconds"]));
        }
    } else if let Some(list) = json["phases"].as_array() {
        for p in list {
            let name = p["phase"].as_str().unwrap_or("?").to_string();
            phases.push(phase(name, &p["seconds"]));
        }
    }
    Ok((phases, peak))
}

/// What the report says about the machine.
fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let memory_bytes = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_default();
    Machine {
        cpu,
        cores: default_threads(),
        memory_bytes,
        kernel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suites_and_names() {
        assert_eq!(parse_suite("all").unwrap().0, Workload::ALL.to_vec());
        assert_eq!(
            parse_suite("sort,wordcount,sort").unwrap().0,
            vec![Workload::Sort, Workload::Terasort, Workload::Wordcount]
        );
        assert_eq!(
            parse_suite("connected-components").unwrap().0,
            vec![Workload::ConnectedComponents]
        );
        let error = parse_suite("wordcont").unwrap_err();
        assert!(
            error.contains("wordcont") && error.contains("pagerank"),
            "{error}"
        );
        assert!(parse_suite(",").is_err());
    }

    fn result(wall_seconds: f64, ok: bool, check: &str) -> SystemResult {
        SystemResult {
            system: System::Sluice,
            command: Vec::new(),
            ok,
            check: check.into(),
            wall_seconds,
            run_seconds: vec![wall_seconds],
            cpu_seconds: 0.0,
            peak_rss_bytes: 0,
            throughput_mb_per_s: 0.0,
            phases: Vec::new(),
            samples: Vec::new(),
        }
    }

    #[test]
    fn the_fastest_run_stands_for_a_system_and_any_failure_fails_it() {
        let best = fastest(vec![result(3.0, true, "a"), result(2.0, true, "b")]).unwrap();
        assert_eq!(
            (best.wall_seconds, best.ok, best.run_seconds),
            (2.0, true, vec![3.0, 2.0])
        );
        let runs = vec![
            result(3.0, true, "ok"),
            result(0.1, false, "failed (exit 1)"),
        ];
        let best = fastest(runs).unwrap();
        assert_eq!(
            best.wall_seconds, 3.0,
            "a successful run's numbers are shown"
        );
        assert!(!best.ok);
        assert_eq!(best.check, "failed (exit 1)");
        assert!(fastest(Vec::new()).is_none());
    }

    #[test]
    fn an_edge_list_of_about_the_size_asked() {
        for size in [1 << 20, 64 << 20] {
            let (vertices, edges) = graph_shape(size);
            assert_eq!(vertices, edges / 16);
            // Every line, as `gen graph` writes it.
            let shape = sluice_jobs::GraphShape { vertices, edges };
            let bytes: u64 = sluice_jobs::rmat_edges(shape, SEED, 0, edges)
                .map(|(s, d)| format!("{s}\t{d}\n").len() as u64)
                .sum();
            let ratio = bytes as f64 / size as f64;
            assert!((0.95..1.05).contains(&ratio), "{size}: {bytes}");
        }
    }
}
