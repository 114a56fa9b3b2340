//! k-means clustering by Lloyd's algorithm, one MapReduce job per iteration.
//!
//! The input is points, one per line: numbers separated by commas and/or spaces or tabs,
//! every point with the same number of coordinates. The initial centres are the first `k`
//! points of the input (files in input order, lines in file order), so a run is
//! deterministic; an input of fewer than `k` points is refused. Every iteration assigns each
//! point to its nearest centre (Euclidean distance; a tie goes to the lower-numbered centre)
//! and moves each centre to the mean of its points; a centre no point chose stays where it
//! is. The run stops when no centre moved by `tolerance` or more (Euclidean distance), or at
//! the iteration limit.
//!
//! The centres live in the driver's memory between iterations (k x d numbers), and each
//! iteration's job writes the new ones to the scratch directory, from which the driver reads
//! them. Map tasks sum their points per centre before anything is shuffled (k records per
//! task). The output is `centre<TAB>x1,x2,...` lines (centres numbered from 0, in order; the
//! coordinates as the shortest decimals that read back as the same 64-bit floats).

use std::sync::Arc;
use std::time::Instant;

use sluice_api::{Emit, ExecError, Job, Mapper, Reducer, Stage, Values};

use super::pagerank::{FromKey, StateToKey};
use super::parse;
use super::{discard, step, IterativeConfig, IterativeReport, Progress, Scratch};

/// k-means' own settings.
#[derive(Debug, Clone, Copy)]
pub struct KmeansSettings {
    /// Number of clusters (centres), at least 1.
    pub clusters: usize,
    /// The run converges when no centre moves by this much or more.
    pub tolerance: f64,
}

/// Clusters the points of `config.job.inputs` into `settings.clusters` clusters and writes
/// the centres to `config.job.output` (see the module's documentation), telling `progress`
/// about each iteration.
///
/// # Errors
/// A malformed point (naming its file and offset), a point of another dimension than the
/// first, fewer points than clusters, and any job's error; the output is then not written.
pub fn kmeans(
    config: &IterativeConfig,
    settings: KmeansSettings,
    status: Arc<sluice_api::JobStatus>,
    progress: Progress<'_>,
) -> Result<IterativeReport, ExecError> {
    let k = settings.clusters;
    if k == 0 {
        return Err(ExecError::Config("k-means needs at least 1 cluster".into()));
    }
    let mut scratch = Scratch::new(config, status)?;
    let (mut state, _) = scratch.run_on_input(&initial_job(k))?;
    let mut centres: Vec<Vec<f64>> = read_centres(&state)?.into_iter().map(|(_, c)| c).collect();
    if centres.len() < k {
        return Err(ExecError::Config(format!(
            "the input has {} point(s); {k} clusters need at least {k}",
            centres.len()
        )));
    }
    let dimensions = centres[0].len();
    if let Some(c) = centres.iter().find(|c| c.len() != dimensions) {
        return Err(ExecError::user(format!(
            "the first points of the input differ in dimension: {dimensions} and {} coordinates",
            c.len()
        )));
    }
    let partitions = scratch.partitions().min(k);
    let mut steps = Vec::new();
    let mut converged = false;
    for iteration in 1..=config.max_iterations {
        let started = Instant::now();
        let shared = Arc::new(centres.clone());
        let (next, _) = scratch.run_on_input(&iteration_job(&shared, partitions))?;
        discard(&state);
        state = next;
        let moved = read_centres(&state)?;
        let mut largest: f64 = 0.0;
        for (index, centre) in moved {
            let old = centres
                .get_mut(index)
                .filter(|c| c.len() == centre.len())
                .ok_or_else(|| ExecError::user(format!("k-means: corrupt centre {index}")))?;
            largest = largest.max(distance2(old, &centre).sqrt());
            *old = centre;
        }
        converged = largest < settings.tolerance;
        let s = step(iteration, largest, converged, started);
        progress("kmeans", &s);
        steps.push(s);
        if converged || scratch.status().is_cancelled() {
            break;
        }
    }
    // The last job's file holds the centres that moved; the output job reads all of them.
    let all = scratch_file(&state, &centres)?;
    let output = Job::new("kmeans-output", |_| StateToKey).with_stage(
        Stage::new(config.reducers, |_| FromKey { text: Vec::new() }).with_independent_keys(),
    );
    scratch.finish(&output, &all, "kmeans", steps, converged)
}

/// Writes every centre into a new directory beside `state` for the output job to read.
fn scratch_file(
    state: &std::path::Path,
    centres: &[Vec<f64>],
) -> Result<std::path::PathBuf, ExecError> {
    let dir = state.with_extension("centres");
    let mut text = Vec::new();
    for (i, c) in centres.iter().enumerate() {
        parse::write_u64(&mut text, i as u64);
        text.push(b'\t');
        write_point(&mut text, c);
        text.push(b'\n');
    }
    let io = |e: std::io::Error| {
        ExecError::Io(sluice_io::IoError::Write {
            path: dir.clone(),
            source: e,
        })
    };
    std::fs::create_dir(&dir).map_err(io)?;
    std::fs::write(dir.join("centres"), text).map_err(io)?;
    Ok(dir)
}

fn write_point(out: &mut Vec<u8>, point: &[f64]) {
    use std::io::Write;
    for (i, x) in point.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let _ = write!(out, "{x}");
    }
}

fn distance2(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// Reads the `index<TAB>coordinates` lines of a scratch directory's part files, in index
/// order.
fn read_centres(dir: &std::path::Path) -> Result<Vec<(usize, Vec<f64>)>, ExecError> {
    let io = |path: &std::path::Path, e: std::io::Error| {
        ExecError::Io(sluice_io::IoError::Read {
            path: path.to_path_buf(),
            source: e,
        })
    };
    let mut centres = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
        let path = entry.map_err(|e| io(dir, e))?.path();
        let visible = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("part-"));
        if !visible {
            continue;
        }
        let text = std::fs::read(&path).map_err(|e| io(&path, e))?;
        let mut point = Vec::new();
        for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
            let (index, coordinates, _) =
                parse::state(line).ok_or_else(|| parse::bad_state(line))?;
            parse::point(coordinates, &mut point).ok_or_else(|| parse::bad_state(line))?;
            let index = usize::try_from(index).map_err(|_| parse::bad_state(line))?;
            centres.push((index, point.clone()));
        }
    }
    centres.sort_by_key(|(i, _)| *i);
    Ok(centres)
}

/// The first `k` points of the input, as centres `0..k`: each map task sends its split's
/// first `k` points keyed by (task, offset), so that one reducer sees them in input order.
fn initial_job(k: usize) -> Job {
    Job::new("kmeans-initial", move |input| FirstPoints {
        task: input.task as u64,
        left: k,
        point: Vec::new(),
    })
    .with_stage(Stage::new(1, move |_| TakeFirst {
        left: k,
        taken: 0,
        line: Vec::new(),
    }))
}

struct FirstPoints {
    task: u64,
    left: usize,
    point: Vec<f64>,
}

impl Mapper for FirstPoints {
    fn map(&mut self, offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if self.left == 0 || parse::skipped(line) {
            return Ok(());
        }
        parse::point(line, &mut self.point).ok_or_else(|| parse::bad_line(POINT_EXPECTED, line))?;
        self.left -= 1;
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&self.task.to_be_bytes());
        key[8..].copy_from_slice(&offset.to_be_bytes());
        let mut value = Vec::new();
        write_point(&mut value, &self.point);
        out.emit(&key, &value)
    }
}

const POINT_EXPECTED: &str = "expected a point: numbers separated by commas or spaces";

/// Numbers the first `left` points it sees (its input is in input order).
struct TakeFirst {
    left: usize,
    taken: u64,
    line: Vec<u8>,
}

impl Reducer for TakeFirst {
    fn reduce(
        &mut self,
        _key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        while let Some(value) = values.next_value()? {
            if self.left == 0 {
                break;
            }
            self.left -= 1;
            self.line.clear();
            parse::write_u64(&mut self.line, self.taken);
            self.taken += 1;
            out.emit(&self.line, value)?;
        }
        Ok(())
    }
}

fn iteration_job(centres: &Arc<Vec<Vec<f64>>>, partitions: usize) -> Job {
    let centres = Arc::clone(centres);
    Job::new("kmeans", move |_| {
        let k = centres.len();
        let d = centres.first().map_or(0, Vec::len);
        Assign {
            centres: Arc::clone(&centres),
            sums: vec![0.0; k * d],
            counts: vec![0; k],
            point: Vec::new(),
        }
    })
    .with_stage(Stage::new(partitions, |_| Mean {
        sums: Vec::new(),
        line: Vec::new(),
    }))
}

/// Assigns each point to its nearest centre, and sums the points of each centre.
struct Assign {
    centres: Arc<Vec<Vec<f64>>>,
    /// Centre `i`'s sum is `sums[i * d..(i + 1) * d]`.
    sums: Vec<f64>,
    counts: Vec<u64>,
    point: Vec<f64>,
}

impl Mapper for Assign {
    fn map(&mut self, _offset: u64, line: &[u8], _out: &mut dyn Emit) -> Result<(), ExecError> {
        if parse::skipped(line) {
            return Ok(());
        }
        parse::point(line, &mut self.point).ok_or_else(|| parse::bad_line(POINT_EXPECTED, line))?;
        let d = self.point.len();
        let mut nearest = 0;
        let mut best = f64::INFINITY;
        for (i, centre) in self.centres.iter().enumerate() {
            if centre.len() != d {
                let what = format!(
                    "a point of {d} coordinates among points of {}",
                    centre.len()
                );
                return Err(parse::bad_line(&what, line));
            }
            let dist = distance2(centre, &self.point);
            if dist < best {
                best = dist;
                nearest = i;
            }
        }
        self.counts[nearest] += 1;
        for (sum, x) in self.sums[nearest * d..(nearest + 1) * d]
            .iter_mut()
            .zip(&self.point)
        {
            *sum += x;
        }
        Ok(())
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), ExecError> {
        let d = self.centres.first().map_or(0, Vec::len);
        let mut value = Vec::with_capacity(8 + 8 * d);
        for (i, &count) in self.counts.iter().enumerate() {
            if count == 0 {
                continue;
            }
            value.clear();
            value.extend_from_slice(&count.to_le_bytes());
            for x in &self.sums[i * d..(i + 1) * d] {
                value.extend_from_slice(&x.to_le_bytes());
            }
            out.emit(&parse::key(i as u64), &value)?;
        }
        Ok(())
    }
}

/// Adds up a centre's partial sums and writes their mean.
struct Mean {
    sums: Vec<f64>,
    line: Vec<u8>,
}

impl Reducer for Mean {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let index = parse::unkey(key)?;
        let corrupt = || ExecError::user("k-means: corrupt partial sum in the shuffle");
        let mut count = 0u64;
        self.sums.clear();
        while let Some(value) = values.next_value()? {
            let (n, rest) = value.split_first_chunk::<8>().ok_or_else(corrupt)?;
            count += u64::from_le_bytes(*n);
            if self.sums.is_empty() {
                self.sums.resize(rest.len() / 8, 0.0);
            }
            if rest.len() != self.sums.len() * 8 {
                return Err(corrupt());
            }
            for (sum, x) in self.sums.iter_mut().zip(rest.chunks_exact(8)) {
                let bytes: [u8; 8] = x.try_into().map_err(|_| corrupt())?;
                *sum += f64::from_le_bytes(bytes);
            }
        }
        let mean: Vec<f64> = self.sums.iter().map(|s| s / count as f64).collect();
        self.line.clear();
        write_point(&mut self.line, &mean);
        out.emit(index.to_string().as_bytes(), &self.line)
    }
}
