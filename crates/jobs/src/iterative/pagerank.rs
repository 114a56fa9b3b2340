//! PageRank by power iteration, one MapReduce job per iteration.
//!
//! The graph is the edge list's: every line `src<TAB>dst` is one directed edge (a repeated
//! line is a parallel edge and counts again; a self-loop is an ordinary edge), and the
//! vertices are every id named in either column. Ranks start at `1/N`; each iteration
//! computes, for every vertex `v`,
//!
//! ```text
//! rank'(v) = (1 - d) / N  +  d * ( sum over edges u->v of rank(u) / outdegree(u)  +  D / N )
//! ```
//!
//! with damping `d` = 0.85 and `D` the total rank of the dangling vertices (those without
//! out-edges), spread evenly over all vertices as the random surfer jumps anywhere from a
//! dead end: the usual definition (Page et al.; NetworkX's `pagerank`, Spark's
//! `PageRank`), under which the ranks always sum to 1. The run stops when the L1 change
//! `sum |rank' - rank|` of an iteration is below the tolerance, or at the iteration limit.
//!
//! The state between iterations is the lines `vertex<TAB>rank<TAB>adjacency` in the scratch
//! directory; the output is `vertex<TAB>rank` lines, by increasing vertex id in each part
//! file, the rank written as the shortest decimal that reads back as the same 64-bit float
//! (Rust's `{:e}`: `1.0185e-7`).

use std::sync::Arc;
use std::time::Instant;

use sluice_api::{Combine, Emit, ExecError, Job, Mapper, Reducer, Stage, Values};
use sluice_io::Location;

use super::parse;
use super::{
    discard, step, IterativeConfig, IterativeReport, Progress, Scratch, Tallied, Tally, Tallying,
};

/// The damping factor: the probability that the random surfer follows a link.
pub const DAMPING: f64 = 0.85;

const EDGE: u8 = b'E';
const VERTEX: u8 = b'V';
const STRUCTURE: u8 = b'S';
const CONTRIBUTION: u8 = b'C';
/// The rank field of a state line before the first iteration: `1/N`.
const INITIAL: &[u8] = b"-";

/// PageRank's own settings.
#[derive(Debug, Clone, Copy)]
pub struct PageRankSettings {
    /// The run converges when an iteration changes the ranks by less than this in L1 norm.
    pub tolerance: f64,
}

/// Computes the PageRank of every vertex of the edge lists `config.job.inputs` into
/// `config.job.output` (see the module's documentation), telling `progress` about each
/// iteration.
///
/// # Errors
/// A malformed input line (naming its file and offset), and any job's error; the output is
/// then not written.
pub fn pagerank(
    config: &IterativeConfig,
    settings: PageRankSettings,
    status: Arc<sluice_api::JobStatus>,
    progress: Progress<'_>,
) -> Result<IterativeReport, ExecError> {
    let mut scratch = Scratch::new(config, status)?;
    let partitions = scratch.partitions();
    let counts = Tally::new(partitions);
    let (mut state, _) = scratch.run_on_input(&prepare_job(partitions, &counts))?;
    let (vertices, dangling_vertices) = counts
        .shares()
        .iter()
        .fold((0u64, 0u64), |(v, d), s| (v + s.0, d + s.1));
    let mut steps = Vec::new();
    let mut converged = vertices == 0;
    if vertices > 0 {
        let n = vertices as f64;
        let mut dangling = dangling_vertices as f64 / n;
        for iteration in 1..=config.max_iterations {
            let started = Instant::now();
            let tally = Tally::new(partitions);
            let job = iteration_job(partitions, n, dangling, &tally);
            let (next, _) = scratch.run(&job, vec![Location::from_path(&state)])?;
            discard(&state);
            state = next;
            let (l1, next_dangling) = tally
                .shares()
                .iter()
                .fold((0.0, 0.0), |(l, d), s: &Share| (l + s.l1, d + s.dangling));
            dangling = next_dangling;
            converged = l1 < settings.tolerance;
            let s = step(iteration, l1, converged, started);
            progress("pagerank", &s);
            steps.push(s);
            if converged || scratch.status().is_cancelled() {
                break;
            }
        }
    }
    scratch.finish(
        &output_job(config.reducers),
        &state,
        "pagerank",
        steps,
        converged,
    )
}

/// Edges in, one state line per vertex out: `vertex<TAB>-<TAB>adjacency`. The tally
/// counts (vertices, dangling vertices).
fn prepare_job(partitions: usize, counts: &Arc<Tally<(u64, u64)>>) -> Job {
    let counts = Arc::clone(counts);
    Job::new("pagerank-prepare", |_| EdgeMapper).with_stage(Stage::new(partitions, move |ctx| {
        Tallying::new(
            Adjacency {
                line: Vec::new(),
                share: (0, 0),
            },
            &counts,
            ctx,
        )
    }))
}

struct EdgeMapper;

impl Mapper for EdgeMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if parse::skipped(line) {
            return Ok(());
        }
        let (src, dst) = parse::edge_or_error(line)?;
        out.emit(&parse::key(src), &parse::tagged(EDGE, dst.to_le_bytes()))?;
        out.emit(&parse::key(dst), &[VERTEX])
    }
}

/// Collects a vertex's out-edges into its first state line.
struct Adjacency {
    line: Vec<u8>,
    share: (u64, u64),
}

impl Reducer for Adjacency {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let v = parse::unkey(key)?;
        self.line.clear();
        self.line.extend_from_slice(INITIAL);
        self.line.push(b'\t');
        let mut degree = 0u64;
        while let Some(value) = values.next_value()? {
            if value.first() == Some(&EDGE) {
                let dst = parse::payload(value).ok_or_else(|| parse::bad_state(value))?;
                if degree > 0 {
                    self.line.push(b',');
                }
                parse::write_u64(&mut self.line, dst);
                degree += 1;
            }
        }
        self.share.0 += 1;
        self.share.1 += u64::from(degree == 0);
        out.emit(v.to_string().as_bytes(), &self.line)
    }
}

impl Tallied for Adjacency {
    type Share = (u64, u64);
    fn share(&self) -> (u64, u64) {
        self.share
    }
}

/// One iteration's share of the L1 change and of the next dangling mass.
#[derive(Clone, Copy, Default)]
struct Share {
    l1: f64,
    dangling: f64,
}

fn iteration_job(partitions: usize, n: f64, dangling: f64, tally: &Arc<Tally<Share>>) -> Job {
    let tally = Arc::clone(tally);
    Job::new("pagerank", move |_| RankMapper {
        initial: 1.0 / n,
        value: Vec::new(),
    })
    .with_stage(
        Stage::new(partitions, move |ctx| {
            Tallying::new(
                RankReducer {
                    base: (1.0 - DAMPING) / n,
                    spread: dangling / n,
                    line: Vec::new(),
                    share: Share::default(),
                },
                &tally,
                ctx,
            )
        })
        .with_combine(Combine::Reducer(Arc::new(|_| {
            Box::new(SumContributions) as Box<dyn Reducer>
        }))),
    )
}

/// Sends each vertex's structure to itself and its rank, split evenly, along its out-edges.
struct RankMapper {
    initial: f64,
    value: Vec<u8>,
}

impl Mapper for RankMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let (v, rank, adjacency) = parse::state(line).ok_or_else(|| parse::bad_state(line))?;
        let rank = if rank == INITIAL {
            self.initial
        } else {
            parse::float(rank).ok_or_else(|| parse::bad_state(line))?
        };
        self.value.clear();
        self.value.push(STRUCTURE);
        self.value.extend_from_slice(&rank.to_le_bytes());
        self.value.extend_from_slice(adjacency);
        out.emit(&parse::key(v), &self.value)?;
        let degree = parse::adjacency(adjacency).count();
        if degree > 0 {
            let share = parse::tagged(CONTRIBUTION, (rank / degree as f64).to_le_bytes());
            for dst in parse::adjacency(adjacency) {
                let dst = dst.ok_or_else(|| parse::bad_state(line))?;
                out.emit(&parse::key(dst), &share)?;
            }
        }
        Ok(())
    }
}

/// The combiner: a key's contributions summed into one, its structure passed on.
struct SumContributions;

impl Reducer for SumContributions {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let mut sum = 0.0;
        let mut any = false;
        while let Some(value) = values.next_value()? {
            if value.first() == Some(&CONTRIBUTION) {
                sum +=
                    f64::from_bits(parse::payload(value).ok_or_else(|| parse::bad_state(value))?);
                any = true;
            } else {
                out.emit(key, value)?;
            }
        }
        if any {
            out.emit(key, &parse::tagged(CONTRIBUTION, sum.to_le_bytes()))?;
        }
        Ok(())
    }
}

struct RankReducer {
    /// `(1 - d) / N`.
    base: f64,
    /// The dangling mass's share of each vertex, `D / N`.
    spread: f64,
    line: Vec<u8>,
    share: Share,
}

impl Reducer for RankReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let v = parse::unkey(key)?;
        let mut incoming = 0.0;
        let mut old = None;
        self.line.clear();
        while let Some(value) = values.next_value()? {
            match value.first() {
                Some(&CONTRIBUTION) => {
                    incoming += f64::from_bits(
                        parse::payload(value).ok_or_else(|| parse::bad_state(value))?,
                    );
                }
                Some(&STRUCTURE) => {
                    old = Some(f64::from_bits(
                        parse::payload(value).ok_or_else(|| parse::bad_state(value))?,
                    ));
                    self.line.extend_from_slice(&value[9..]);
                }
                _ => return Err(parse::bad_state(value)),
            }
        }
        let old =
            old.ok_or_else(|| ExecError::user(format!("pagerank: vertex {v} has no state")))?;
        let rank = self.base + DAMPING * (incoming + self.spread);
        self.share.l1 += (rank - old).abs();
        if self.line.is_empty() {
            self.share.dangling += rank;
        }
        let adjacency = std::mem::take(&mut self.line);
        let mut value = Vec::with_capacity(adjacency.len() + 32);
        parse::write_f64(&mut value, rank);
        value.push(b'\t');
        value.extend_from_slice(&adjacency);
        self.line = adjacency;
        out.emit(v.to_string().as_bytes(), &value)
    }
}

impl Tallied for RankReducer {
    type Share = Share;
    fn share(&self) -> Share {
        self.share
    }
}

/// The final state in, `vertex<TAB>rank` out, in vertex order within each part file.
fn output_job(reducers: usize) -> Job {
    Job::new("pagerank-output", |_| StateToKey)
        .with_stage(Stage::new(reducers, |_| FromKey { text: Vec::new() }).with_independent_keys())
}

/// A state line as (vertex key, its first field): the rank, or a label.
pub(crate) struct StateToKey;

impl Mapper for StateToKey {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let (v, first, _) = parse::state(line).ok_or_else(|| parse::bad_state(line))?;
        out.emit(&parse::key(v), first)
    }
}

/// Writes a vertex key back as its decimal id.
pub(crate) struct FromKey {
    pub(crate) text: Vec<u8>,
}

impl Reducer for FromKey {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        self.text.clear();
        parse::write_u64(&mut self.text, parse::unkey(key)?);
        while let Some(value) = values.next_value()? {
            out.emit(&self.text, value)?;
        }
        Ok(())
    }
}
