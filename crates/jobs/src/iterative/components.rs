//! Connected components by label propagation, one MapReduce job per iteration.
//!
//! Edges are taken as undirected; every vertex named by the edge list is in the graph. Each
//! vertex starts labelled with its own id, and every iteration gives each vertex the
//! smallest label among its own and its neighbours'. When an iteration changes no label,
//! every vertex carries the smallest id of its component (reached after at most the
//! largest component's diameter plus one iterations); the run stops there or at the
//! iteration limit.
//!
//! The state between iterations is the lines `vertex<TAB>label<TAB>neighbours`; the output
//! is `vertex<TAB>label` lines, by increasing vertex id in each part file.

use std::sync::Arc;
use std::time::Instant;

use sluice_api::{Combine, Emit, ExecError, Job, Mapper, Reducer, Stage, Values};
use sluice_io::Location;

use super::pagerank::{FromKey, StateToKey};
use super::parse;
use super::{
    discard, step, IterativeConfig, IterativeReport, Progress, Scratch, Tallied, Tally, Tallying,
};

const NEIGHBOUR: u8 = b'N';
const STRUCTURE: u8 = b'S';
const LABEL: u8 = b'L';

/// Labels every vertex of the edge lists `config.job.inputs` with the smallest vertex id of
/// its component, into `config.job.output` (see the module's documentation), telling
/// `progress` about each iteration.
///
/// # Errors
/// A malformed input line (naming its file and offset), and any job's error; the output is
/// then not written.
pub fn connected_components(
    config: &IterativeConfig,
    status: Arc<sluice_api::JobStatus>,
    progress: Progress<'_>,
) -> Result<IterativeReport, ExecError> {
    let mut scratch = Scratch::new(config, status)?;
    let partitions = scratch.partitions();
    let counts = Tally::new(partitions);
    let (mut state, _) = scratch.run_on_input(&prepare_job(partitions, &counts))?;
    let vertices: u64 = counts.shares().iter().sum();
    let mut steps = Vec::new();
    let mut converged = vertices == 0;
    if vertices > 0 {
        for iteration in 1..=config.max_iterations {
            let started = Instant::now();
            let tally = Tally::new(partitions);
            let (next, _) = scratch.run(
                &iteration_job(partitions, &tally),
                vec![Location::from_path(&state)],
            )?;
            discard(&state);
            state = next;
            let changed: u64 = tally.shares().iter().sum();
            converged = changed == 0;
            let s = step(iteration, changed as f64, converged, started);
            progress("connected-components", &s);
            steps.push(s);
            if converged || scratch.status().is_cancelled() {
                break;
            }
        }
    }
    let output = Job::new("connected-components-output", |_| StateToKey).with_stage(
        Stage::new(config.reducers, |_| FromKey { text: Vec::new() }).with_independent_keys(),
    );
    scratch.finish(&output, &state, "connected-components", steps, converged)
}

/// Edges in, one state line per vertex out: `vertex<TAB>vertex<TAB>neighbours`, the
/// neighbours distinct and without the vertex itself. The tally counts vertices.
fn prepare_job(partitions: usize, counts: &Arc<Tally<u64>>) -> Job {
    let counts = Arc::clone(counts);
    Job::new("connected-components-prepare", |_| EdgeMapper).with_stage(Stage::new(
        partitions,
        move |ctx| {
            Tallying::new(
                Neighbours {
                    ids: Vec::new(),
                    line: Vec::new(),
                    vertices: 0,
                },
                &counts,
                ctx,
            )
        },
    ))
}

struct EdgeMapper;

impl Mapper for EdgeMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if parse::skipped(line) {
            return Ok(());
        }
        let (a, b) = parse::edge_or_error(line)?;
        out.emit(&parse::key(a), &parse::tagged(NEIGHBOUR, b.to_le_bytes()))?;
        out.emit(&parse::key(b), &parse::tagged(NEIGHBOUR, a.to_le_bytes()))
    }
}

struct Neighbours {
    ids: Vec<u64>,
    line: Vec<u8>,
    vertices: u64,
}

impl Reducer for Neighbours {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let v = parse::unkey(key)?;
        self.ids.clear();
        while let Some(value) = values.next_value()? {
            let n = parse::payload(value).ok_or_else(|| parse::bad_state(value))?;
            if n != v {
                self.ids.push(n);
            }
        }
        self.ids.sort_unstable();
        self.ids.dedup();
        self.line.clear();
        parse::write_u64(&mut self.line, v);
        self.line.push(b'\t');
        for (i, n) in self.ids.iter().enumerate() {
            if i > 0 {
                self.line.push(b',');
            }
            parse::write_u64(&mut self.line, *n);
        }
        self.vertices += 1;
        out.emit(v.to_string().as_bytes(), &self.line)
    }
}

impl Tallied for Neighbours {
    type Share = u64;
    fn share(&self) -> u64 {
        self.vertices
    }
}

fn iteration_job(partitions: usize, tally: &Arc<Tally<u64>>) -> Job {
    let tally = Arc::clone(tally);
    Job::new("connected-components", |_| LabelMapper {
        value: Vec::new(),
    })
    .with_stage(
        Stage::new(partitions, move |ctx| {
            Tallying::new(
                LabelReducer {
                    line: Vec::new(),
                    neighbours: Vec::new(),
                    changed: 0,
                },
                &tally,
                ctx,
            )
        })
        .with_combine(Combine::Reducer(Arc::new(|_| {
            Box::new(SmallestLabel) as Box<dyn Reducer>
        }))),
    )
}

/// Sends each vertex's structure to itself and its label to its neighbours.
struct LabelMapper {
    value: Vec<u8>,
}

impl Mapper for LabelMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let (v, label, neighbours) = parse::state(line).ok_or_else(|| parse::bad_state(line))?;
        let label = parse::vertex(label).ok_or_else(|| parse::bad_state(line))?;
        self.value.clear();
        self.value.push(STRUCTURE);
        self.value.extend_from_slice(&label.to_le_bytes());
        self.value.extend_from_slice(neighbours);
        out.emit(&parse::key(v), &self.value)?;
        let message = parse::tagged(LABEL, label.to_le_bytes());
        for n in parse::adjacency(neighbours) {
            let n = n.ok_or_else(|| parse::bad_state(line))?;
            out.emit(&parse::key(n), &message)?;
        }
        Ok(())
    }
}

/// The combiner: a key's labels reduced to the smallest, its structure passed on.
struct SmallestLabel;

impl Reducer for SmallestLabel {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let mut smallest = None;
        while let Some(value) = values.next_value()? {
            if value.first() == Some(&LABEL) {
                let label = parse::payload(value).ok_or_else(|| parse::bad_state(value))?;
                smallest = Some(smallest.map_or(label, |s: u64| s.min(label)));
            } else {
                out.emit(key, value)?;
            }
        }
        if let Some(label) = smallest {
            out.emit(key, &parse::tagged(LABEL, label.to_le_bytes()))?;
        }
        Ok(())
    }
}

struct LabelReducer {
    line: Vec<u8>,
    neighbours: Vec<u8>,
    changed: u64,
}

impl Reducer for LabelReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let v = parse::unkey(key)?;
        let mut old = None;
        let mut smallest = u64::MAX;
        self.neighbours.clear();
        while let Some(value) = values.next_value()? {
            let x = parse::payload(value).ok_or_else(|| parse::bad_state(value))?;
            match value.first() {
                Some(&LABEL) => smallest = smallest.min(x),
                Some(&STRUCTURE) => {
                    old = Some(x);
                    self.neighbours.clear();
                    self.neighbours.extend_from_slice(&value[9..]);
                }
                _ => return Err(parse::bad_state(value)),
            }
        }
        let old = old.ok_or_else(|| {
            ExecError::user(format!("connected components: vertex {v} has no state"))
        })?;
        let label = old.min(smallest);
        self.changed += u64::from(label != old);
        self.line.clear();
        parse::write_u64(&mut self.line, label);
        self.line.push(b'\t');
        self.line.extend_from_slice(&self.neighbours);
        out.emit(v.to_string().as_bytes(), &self.line)
    }
}

impl Tallied for LabelReducer {
    type Share = u64;
    fn share(&self) -> u64 {
        self.changed
    }
}
