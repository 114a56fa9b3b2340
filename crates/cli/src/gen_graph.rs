//! `sluice gen graph` and `sluice gen points`: the inputs of the iterative jobs.
//!
//! Graphs are R-MAT graphs as Graph500 draws them, written as an edge list (`src<TAB>dst`
//! lines); points are clustered points in `--dimensions` dimensions, one per line. Record `i`
//! depends on the seed and `i` only (see `sluice_jobs::rmat_edges`), so the same seed and
//! sizes give the same records whatever the number of files or threads; the files split the
//! records in order. The output is committed as a job's: it appears whole, with `_SUCCESS`,
//! or not at all.

use std::io::Write;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use sluice_api::JobStatus;
use sluice_exec::JobOutput;
use sluice_io::{JobCommitter, Location, PartAttempt, DEFAULT_WRITE_BUFFER};
use sluice_jobs::{rmat_edges, GraphShape, PointsShape, PointsWriter};

use crate::{at_least_one, cancel_on_ctrl_c, default_threads, parse_any_location, stores, tasks};

/// Records per file when `--files` is not given.
const RECORDS_PER_FILE: u64 = 4 << 20;

/// Records generated between writes (and checks for Ctrl-C).
const RECORDS_PER_CHUNK: u64 = 16 << 10;

/// Where and how the records are written.
#[derive(Args)]
pub(crate) struct OutputArgs {
    /// Output directory (local, file://, hdfs:// or s3://); must not exist.
    #[arg(long, short = 'o', value_parser = parse_any_location)]
    output: String,
    /// A Hadoop-style setting (-D fs.defaultFS=hdfs://nn:8020, ...), as for `sluice run`.
    #[arg(short = 'D', value_name = "KEY=VALUE", value_parser = stores::parse_define)]
    pub(crate) define: Vec<(String, String)>,
    /// Number of files, part-NNNNN.txt [default: one per 4Mi records, at least 1].
    #[arg(long, value_parser = at_least_one)]
    files: Option<usize>,
    /// Seed: the same seed and sizes give the same records.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Print nothing but errors.
    #[arg(long, short = 'q')]
    quiet: bool,
}

/// Options of `sluice gen graph`.
#[derive(Args)]
pub(crate) struct GraphArgs {
    /// Graph500's scale: 2^SCALE vertices.
    #[arg(long, conflicts_with_all = ["vertices", "edges"], required_unless_present = "vertices")]
    scale: Option<u32>,
    /// Graph500's edge factor: edges per vertex (with --scale).
    #[arg(long, default_value_t = 16, requires = "scale")]
    edge_factor: u64,
    /// Number of vertices, ids 0..VERTICES (instead of --scale).
    #[arg(long, requires = "edges")]
    vertices: Option<u64>,
    /// Number of edges (with --vertices).
    #[arg(long, requires = "vertices")]
    edges: Option<u64>,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
}

/// How the coordinates of a point are separated.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Separator {
    /// `1.5 -2.25 3.0`
    Space,
    /// `1.5,-2.25,3.0`
    Comma,
}

/// Options of `sluice gen points`.
#[derive(Args)]
pub(crate) struct PointsArgs {
    /// Number of points.
    #[arg(long)]
    points: u64,
    /// Coordinates per point.
    #[arg(long, default_value_t = 2, value_parser = at_least_one)]
    dimensions: usize,
    /// Centres the points are drawn around (uniform in [-100, 100) on every axis).
    #[arg(long, default_value_t = 8, value_parser = at_least_one)]
    clusters: usize,
    /// Standard deviation of each coordinate around its centre.
    #[arg(long, default_value_t = 1.0)]
    spread: f64,
    /// Between coordinates.
    #[arg(long, value_enum, default_value = "space")]
    separator: Separator,
    #[command(flatten)]
    pub(crate) out: OutputArgs,
}

/// `sluice gen graph`.
pub(crate) fn graph(args: &GraphArgs) -> Result<()> {
    draw_graph(args, &*interruptible()?)
}

/// `sluice gen points`.
pub(crate) fn points(args: &PointsArgs) -> Result<()> {
    draw_points(args, &*interruptible()?)
}

/// A status that Ctrl-C cancels.
fn interruptible() -> Result<Arc<JobStatus>> {
    let status = Arc::new(JobStatus::default());
    cancel_on_ctrl_c(&status)?;
    Ok(status)
}

fn draw_graph(args: &GraphArgs, status: &JobStatus) -> Result<()> {
    let shape = match (args.scale, args.vertices, args.edges) {
        (Some(scale), _, _) => GraphShape::from_scale(scale, args.edge_factor)
            .filter(|_| scale <= 48)
            .with_context(|| {
                format!(
                    "--scale {scale} --edge-factor {}: too large",
                    args.edge_factor
                )
            })?,
        (None, Some(vertices), Some(edges)) => {
            if vertices == 0 && edges > 0 {
                bail!("--vertices 0 cannot have edges");
            }
            GraphShape { vertices, edges }
        }
        _ => bail!("give --scale, or --vertices and --edges"),
    };
    let seed = args.out.seed;
    generate(
        &args.out,
        status,
        "gen graph",
        shape.edges,
        move |first, count, out: &mut Vec<u8>| {
            for (src, dst) in rmat_edges(shape, seed, first, count) {
                // Writing to a Vec cannot fail.
                let _ = writeln!(out, "{src}\t{dst}");
            }
        },
    )
}

fn draw_points(args: &PointsArgs, status: &JobStatus) -> Result<()> {
    if !(args.spread.is_finite() && args.spread >= 0.0) {
        bail!("--spread {}: expected a number of at least 0", args.spread);
    }
    let shape = PointsShape {
        points: args.points,
        dimensions: args.dimensions,
        clusters: args.clusters,
        spread: args.spread,
    };
    let separator = match args.separator {
        Separator::Space => b' ',
        Separator::Comma => b',',
    };
    let writer = PointsWriter::new(shape, args.out.seed, separator);
    generate(
        &args.out,
        status,
        "gen points",
        args.points,
        move |first, count, out: &mut Vec<u8>| {
            for i in first..first + count {
                writer.write_point(i, out);
            }
        },
    )
}

/// Writes records `0..records` into the files, `fill(first, count, buffer)` appending the
/// lines of records `first..first + count`.
fn generate(
    args: &OutputArgs,
    status: &JobStatus,
    name: &str,
    records: u64,
    fill: impl Fn(u64, u64, &mut Vec<u8>) + Sync,
) -> Result<()> {
    let files = match args.files {
        Some(files) => u64::try_from(files).context("--files is too large")?,
        None => records.div_ceil(RECORDS_PER_FILE).max(1),
    };
    let file_count = usize::try_from(files).context("too many files")?;
    let store_config = stores::store_config(&args.define)?;
    let output = stores::resolve("--output", &args.output, &store_config)?;
    let stores = stores::stores(&store_config, name);
    let started = std::time::Instant::now();
    let job = JobOutput::set_up(&stores, &output)?;
    let written = tasks::run_parallel(name, file_count, default_threads(), status, |index, _| {
        let i = u64::try_from(index).context("file number")?;
        // File i holds records [i * records / files, (i + 1) * records / files).
        let bound = |i: u64| {
            u64::try_from(u128::from(i) * u128::from(records) / u128::from(files))
                .context("record number")
        };
        let (first, end) = (bound(i)?, bound(i + 1)?);
        write_part(
            job.committer(),
            &format!("part-{index:05}.txt"),
            status,
            name,
            |out| {
                let mut next = first;
                let mut buffer = Vec::with_capacity(1 << 20);
                let mut bytes = 0u64;
                while next < end {
                    if status.is_cancelled() {
                        return Err(tasks::interrupted(name));
                    }
                    let count = RECORDS_PER_CHUNK.min(end - next);
                    buffer.clear();
                    fill(next, count, &mut buffer);
                    out.write_all(&buffer)?;
                    bytes += buffer.len() as u64;
                    next += count;
                }
                Ok(bytes)
            },
        )
    })
    .with_context(|| format!("{name} failed; no output was written"))?;
    let output = job.commit()?;
    if !args.quiet {
        let total: u64 = written.iter().sum();
        eprintln!(
            "sluice: wrote {records} records ({}) in {files} file(s) to {output} in {:.2} s",
            crate::size::human_bytes(total),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Writes part file `name` as its task's only attempt and commits it; a failed attempt is
/// aborted.
fn write_part(
    committer: &dyn JobCommitter,
    name: &str,
    status: &JobStatus,
    command: &str,
    body: impl FnOnce(&mut dyn Write) -> Result<u64>,
) -> Result<u64> {
    let part = PartAttempt::new(name, 0);
    let path: Location = committer.output().join(name);
    let result = committer
        .create_part(part, DEFAULT_WRITE_BUFFER)
        .map_err(anyhow::Error::from)
        .and_then(|mut out| {
            let bytes = body(&mut out).with_context(|| format!("cannot write {path}"))?;
            out.finish()
                .with_context(|| format!("cannot write {path}"))?;
            committer.commit_task(part)?;
            Ok(bytes)
        });
    if result.is_err() {
        // The whole output is aborted too; this drops the attempt's file at once.
        let _ = committer.abort_task(part);
        if status.is_cancelled() {
            return Err(tasks::interrupted(command));
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(dir: &std::path::Path, files: usize) -> OutputArgs {
        OutputArgs {
            output: dir.to_str().unwrap().to_string(),
            define: Vec::new(),
            files: Some(files),
            seed: 7,
            quiet: true,
        }
    }

    /// The part files of `dir`, concatenated in order.
    fn concatenated(dir: &std::path::Path) -> String {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names.first().map(String::as_str), Some("_SUCCESS"));
        names[1..]
            .iter()
            .map(|n| std::fs::read_to_string(dir.join(n)).unwrap())
            .collect()
    }

    #[test]
    fn a_graph_is_the_same_whatever_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let graph = |name: &str, files| GraphArgs {
            scale: None,
            edge_factor: 16,
            vertices: Some(1000),
            edges: Some(50_000),
            out: out(&dir.path().join(name), files),
        };
        draw_graph(&graph("one", 1), &JobStatus::default()).unwrap();
        draw_graph(&graph("three", 3), &JobStatus::default()).unwrap();
        let one = concatenated(&dir.path().join("one"));
        assert_eq!(one, concatenated(&dir.path().join("three")));
        let edges: Vec<(u64, u64)> = one
            .lines()
            .map(|l| {
                let (s, d) = l.split_once('\t').unwrap();
                (s.parse().unwrap(), d.parse().unwrap())
            })
            .collect();
        assert_eq!(edges.len(), 50_000);
        assert!(edges.iter().all(|&(s, d)| s < 1000 && d < 1000));
        // What the library draws for the same seed, record for record.
        let shape = GraphShape {
            vertices: 1000,
            edges: 50_000,
        };
        assert!(rmat_edges(shape, 7, 0, 50_000).eq(edges.iter().copied()));
    }

    #[test]
    fn points_are_the_same_whatever_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let points = |name: &str, files| PointsArgs {
            points: 10_001,
            dimensions: 3,
            clusters: 4,
            spread: 1.0,
            separator: Separator::Comma,
            out: out(&dir.path().join(name), files),
        };
        draw_points(&points("one", 1), &JobStatus::default()).unwrap();
        draw_points(&points("four", 4), &JobStatus::default()).unwrap();
        let one = concatenated(&dir.path().join("one"));
        assert_eq!(one, concatenated(&dir.path().join("four")));
        assert_eq!(one.lines().count(), 10_001);
        assert!(one
            .lines()
            .all(|l| l.split(',').filter_map(|x| x.parse::<f64>().ok()).count() == 3));
    }
}
