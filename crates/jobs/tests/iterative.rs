//! The iterative jobs against small, obviously correct references written here: dense power
//! iteration for PageRank, union-find for connected components, Lloyd's algorithm for
//! k-means.

// Helpers of these tests are not `#[test]` functions, so clippy's test allowance does not cover
// them; a panic there is a test failure, which is what we want.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sluice_api::{JobConfig, JobStatus};
use sluice_jobs::{
    connected_components, kmeans, pagerank, rmat_edges, GraphShape, IterativeConfig,
    IterativeReport, KmeansSettings, PageRankSettings, PointsShape, PointsWriter,
};

fn config(
    inputs: Vec<PathBuf>,
    output: &Path,
    reducers: usize,
    iterations: usize,
) -> IterativeConfig {
    IterativeConfig {
        job: JobConfig::new(inputs, output)
            .with_threads(2)
            .with_memory(64 << 20)
            // Several map tasks per file, so that partial sums meet in the shuffle.
            .with_fixed_split_size(16 << 10),
        reducers,
        max_iterations: iterations,
    }
}

fn quiet() -> impl FnMut(&str, &sluice_jobs::IterationStep) {
    |_, _| {}
}

fn write_edges(path: &Path, edges: &[(u64, u64)]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text: String = edges.iter().map(|(s, d)| format!("{s}\t{d}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// The `key<TAB>value` lines of every part file, in part order, checking that each part is
/// in increasing key order and that the output was committed.
fn read_output(dir: &Path) -> Vec<(u64, String)> {
    assert!(
        dir.join("_SUCCESS").exists(),
        "no _SUCCESS in {}",
        dir.display()
    );
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("part-r-"))
        .collect();
    names.sort();
    let mut all = Vec::new();
    for name in names {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let mut last = None;
        for line in text.lines() {
            let (k, v) = line.split_once('\t').unwrap();
            let k: u64 = k.parse().unwrap();
            assert!(last < Some(k), "part file out of order at {k}");
            last = Some(k);
            all.push((k, v.to_string()));
        }
    }
    all
}

/// Dense power iteration: ranks from 1/N, damping 0.85, dangling mass spread evenly; stops
/// when the L1 change is below `tolerance` or after `limit` iterations. Returns the ranks by
/// vertex and the iterations run.
fn reference_pagerank(
    edges: &[(u64, u64)],
    tolerance: f64,
    limit: usize,
) -> (BTreeMap<u64, f64>, usize) {
    let ids: Vec<u64> = edges
        .iter()
        .flat_map(|&(s, d)| [s, d])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let index = |v: u64| ids.binary_search(&v).unwrap();
    let n = ids.len();
    let mut out_degree = vec![0usize; n];
    for &(s, _) in edges {
        out_degree[index(s)] += 1;
    }
    let mut rank = vec![1.0 / n as f64; n];
    let mut iterations = 0;
    while iterations < limit {
        iterations += 1;
        let dangling: f64 = (0..n)
            .filter(|&i| out_degree[i] == 0)
            .map(|i| rank[i])
            .sum();
        let mut next = vec![0.0; n];
        for &(s, d) in edges {
            next[index(d)] += rank[index(s)] / out_degree[index(s)] as f64;
        }
        for x in &mut next {
            *x = 0.15 / n as f64 + 0.85 * (*x + dangling / n as f64);
        }
        let change: f64 = rank.iter().zip(&next).map(|(a, b)| (a - b).abs()).sum();
        rank = next;
        if change < tolerance {
            break;
        }
    }
    (ids.into_iter().zip(rank).collect(), iterations)
}

fn run_pagerank(
    dir: &Path,
    edges: &[(u64, u64)],
    tolerance: f64,
    iterations: usize,
) -> (BTreeMap<u64, f64>, IterativeReport) {
    let input = dir.join("edges.txt");
    write_edges(&input, edges);
    let output = dir.join("ranks");
    let report = pagerank(
        &config(vec![input], &output, 3, iterations),
        PageRankSettings { tolerance },
        Arc::new(JobStatus::default()),
        &mut quiet(),
    )
    .unwrap();
    let ranks = read_output(&output)
        .into_iter()
        .map(|(v, r)| (v, r.parse::<f64>().unwrap()))
        .collect();
    (ranks, report)
}

fn assert_ranks_close(got: &BTreeMap<u64, f64>, want: &BTreeMap<u64, f64>) {
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (v, r) in want {
        assert!((got[v] - r).abs() < 1e-12, "vertex {v}: {} vs {r}", got[v]);
    }
}

#[test]
fn pagerank_matches_power_iteration_on_an_rmat_graph() {
    let dir = tempfile::tempdir().unwrap();
    let shape = GraphShape {
        vertices: 1000,
        edges: 6000,
    };
    let edges: Vec<_> = rmat_edges(shape, 11, 0, shape.edges).collect();
    // R-MAT leaves many vertices without out-edges, and draws self-loops.
    assert!(edges.iter().any(|(s, d)| s == d));
    let (ranks, report) = run_pagerank(dir.path(), &edges, 1e-9, 100);
    let (want, iterations) = reference_pagerank(&edges, 1e-9, 100);
    assert_ranks_close(&ranks, &want);
    assert!(report.converged);
    assert_eq!(report.iterations, iterations);
    assert!(report.steps.last().unwrap().delta < 1e-9);
    let total: f64 = ranks.values().sum();
    assert!((total - 1.0).abs() < 1e-9, "ranks sum to {total}");
}

#[test]
fn pagerank_stops_at_the_iteration_limit() {
    let dir = tempfile::tempdir().unwrap();
    let shape = GraphShape {
        vertices: 500,
        edges: 3000,
    };
    let edges: Vec<_> = rmat_edges(shape, 3, 0, shape.edges).collect();
    let (ranks, report) = run_pagerank(dir.path(), &edges, 0.0, 4);
    let (want, _) = reference_pagerank(&edges, 0.0, 4);
    assert_ranks_close(&ranks, &want);
    assert!(!report.converged);
    assert_eq!(report.iterations, 4);
    assert_eq!(report.steps.len(), 4);
    assert!(report.steps.windows(2).all(|w| w[1].delta < w[0].delta));
    // The summary is the run's: the user's one input file (not the last job's input, the
    // previous iteration's parts), the map tasks of every iteration, the run's wall time.
    let run = &report.output;
    assert_eq!(run.input_files, 1, "{run:?}");
    assert!(run.splits > report.iterations, "{run:?}");
    assert_eq!(run.counters.map_tasks, run.splits as u64, "{run:?}");
    assert_eq!(run.wall_seconds, report.wall_seconds);
}

#[test]
fn pagerank_of_dangling_vertices_self_loops_and_repeated_edges() {
    let dir = tempfile::tempdir().unwrap();
    // 3 and 7 have no out-edges; 2 loops on itself; 1 -> 2 twice.
    let edges = [
        (1, 2),
        (1, 2),
        (2, 2),
        (2, 3),
        (4, 1),
        (4, 7),
        (3, 3),
        (5, 6),
        (6, 5),
    ];
    let edges: Vec<(u64, u64)> = edges
        .iter()
        .map(|&(s, d)| (s, d))
        .filter(|&(s, d)| !(s == 3 && d == 3))
        .collect();
    let input = dir.path().join("edges.txt");
    let mut text: String = "# a comment, then a blank line\n\n".into();
    text += &edges
        .iter()
        .map(|(s, d)| format!("{s} {d}\r\n"))
        .collect::<String>();
    std::fs::write(&input, text).unwrap();
    let output = dir.path().join("ranks");
    let report = pagerank(
        &config(vec![input], &output, 1, 200),
        PageRankSettings { tolerance: 1e-12 },
        Arc::new(JobStatus::default()),
        &mut quiet(),
    )
    .unwrap();
    let ranks: BTreeMap<u64, f64> = read_output(&output)
        .into_iter()
        .map(|(v, r)| (v, r.parse().unwrap()))
        .collect();
    let (want, iterations) = reference_pagerank(&edges, 1e-12, 200);
    assert_ranks_close(&ranks, &want);
    assert_eq!(report.iterations, iterations);
    assert!(report.converged);
}

/// Union-find with path halving; the label of a vertex is its set's smallest member.
fn reference_components(edges: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    let mut parent: BTreeMap<u64, u64> = BTreeMap::new();
    fn find(parent: &mut BTreeMap<u64, u64>, mut x: u64) -> u64 {
        while parent[&x] != x {
            let up = parent[&parent[&x]];
            parent.insert(x, up);
            x = up;
        }
        x
    }
    for &(a, b) in edges {
        parent.entry(a).or_insert(a);
        parent.entry(b).or_insert(b);
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        // The smaller root becomes the parent, so every root is its set's minimum.
        if ra < rb {
            parent.insert(rb, ra);
        } else {
            parent.insert(ra, rb);
        }
    }
    let vertices: Vec<u64> = parent.keys().copied().collect();
    vertices
        .into_iter()
        .map(|v| (v, find(&mut parent, v)))
        .collect()
}

fn run_components(
    dir: &Path,
    edges: &[(u64, u64)],
    iterations: usize,
) -> (BTreeMap<u64, u64>, IterativeReport) {
    let input = dir.join("edges.txt");
    write_edges(&input, edges);
    let output = dir.join("labels");
    let report = connected_components(
        &config(vec![input], &output, 2, iterations),
        Arc::new(JobStatus::default()),
        &mut quiet(),
    )
    .unwrap();
    let labels = read_output(&output)
        .into_iter()
        .map(|(v, l)| (v, l.parse().unwrap()))
        .collect();
    (labels, report)
}

#[test]
fn components_match_union_find() {
    let dir = tempfile::tempdir().unwrap();
    // A sparse R-MAT graph has one big component and many small ones; relabelling the ids
    // keeps the smallest id of a component away from its hub.
    let shape = GraphShape {
        vertices: 4000,
        edges: 2500,
    };
    let edges: Vec<(u64, u64)> = rmat_edges(shape, 21, 0, shape.edges)
        .map(|(s, d)| ((s * 7919) % 4001 + 10, (d * 7919) % 4001 + 10))
        .chain([(5, 5), (3, 2), (1u64 << 40, 3)])
        .collect();
    let (labels, report) = run_components(dir.path(), &edges, 100);
    let want = reference_components(&edges);
    assert_eq!(labels, want);
    let components = want.values().collect::<BTreeSet<_>>().len();
    assert!(components > 10, "only {components} components");
    assert!(report.converged);
    // The last iteration changed nothing; the one before it did.
    let steps = &report.steps;
    assert_eq!(steps.last().unwrap().delta, 0.0);
    assert!(steps.len() >= 2 && steps[steps.len() - 2].delta > 0.0);
}

#[test]
fn components_stop_at_the_iteration_limit() {
    let dir = tempfile::tempdir().unwrap();
    // A path 9 - 8 - ... - 0: label 0 travels one edge per iteration.
    let edges: Vec<(u64, u64)> = (0..9).map(|i| (9 - i, 8 - i)).collect();
    let (labels, report) = run_components(dir.path(), &edges, 3);
    assert!(!report.converged);
    assert_eq!(report.iterations, 3);
    let want: BTreeMap<u64, u64> = (0..10u64).map(|v| (v, v.saturating_sub(3))).collect();
    assert_eq!(labels, want);
    let (labels, report) = run_components(&dir.path().join("again"), &edges, 100);
    assert!(report.converged);
    // 9 iterations move label 0 to vertex 9; a 10th sees no change.
    assert_eq!(report.iterations, 10);
    assert!(labels.values().all(|&l| l == 0));
}

/// Lloyd's algorithm from the first `k` points: nearest centre by squared distance, the
/// lower index on a tie, a centre without points kept; stops when no centre moved by
/// `tolerance` or after `limit` iterations.
fn reference_kmeans(
    points: &[Vec<f64>],
    k: usize,
    tolerance: f64,
    limit: usize,
) -> (Vec<Vec<f64>>, usize) {
    let mut centres: Vec<Vec<f64>> = points[..k].to_vec();
    let d = points[0].len();
    for iteration in 1..=limit {
        let mut sums = vec![vec![0.0; d]; k];
        let mut counts = vec![0usize; k];
        for p in points {
            let dist = |c: &Vec<f64>| c.iter().zip(p).map(|(a, b)| (a - b) * (a - b)).sum::<f64>();
            let mut best = 0;
            for i in 1..k {
                if dist(&centres[i]) < dist(&centres[best]) {
                    best = i;
                }
            }
            counts[best] += 1;
            for (s, x) in sums[best].iter_mut().zip(p) {
                *s += x;
            }
        }
        let mut moved: f64 = 0.0;
        for i in 0..k {
            if counts[i] > 0 {
                let mean: Vec<f64> = sums[i].iter().map(|s| s / counts[i] as f64).collect();
                let step = mean
                    .iter()
                    .zip(&centres[i])
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
                    .sqrt();
                moved = moved.max(step);
                centres[i] = mean;
            }
        }
        if moved < tolerance {
            return (centres, iteration);
        }
    }
    (centres, limit)
}

fn generate_points(path: &Path, shape: PointsShape, separator: u8) -> Vec<Vec<f64>> {
    let writer = PointsWriter::new(shape, 17, separator);
    let mut text = Vec::new();
    for i in 0..shape.points {
        writer.write_point(i, &mut text);
    }
    std::fs::write(path, &text).unwrap();
    String::from_utf8(text)
        .unwrap()
        .lines()
        .map(|l| l.split([',', ' ']).map(|x| x.parse().unwrap()).collect())
        .collect()
}

fn run_kmeans(
    dir: &Path,
    k: usize,
    tolerance: f64,
    iterations: usize,
) -> Result<(Vec<Vec<f64>>, IterativeReport), sluice_api::ExecError> {
    let output = dir.join("centres");
    let report = kmeans(
        &config(vec![dir.join("points")], &output, 1, iterations),
        KmeansSettings {
            clusters: k,
            tolerance,
        },
        Arc::new(JobStatus::default()),
        &mut quiet(),
    )?;
    let centres = read_output(&output)
        .into_iter()
        .enumerate()
        .map(|(i, (index, c))| {
            assert_eq!(i as u64, index);
            c.split(',').map(|x| x.parse().unwrap()).collect()
        })
        .collect();
    Ok((centres, report))
}

fn assert_centres_close(got: &[Vec<f64>], want: &[Vec<f64>]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.len(), w.len());
        for (a, b) in g.iter().zip(w) {
            assert!((a - b).abs() < 1e-9, "centre {g:?} vs {w:?}");
        }
    }
}

#[test]
fn kmeans_matches_lloyds_algorithm() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("points")).unwrap();
    let shape = PointsShape {
        points: 3000,
        dimensions: 3,
        clusters: 6,
        spread: 8.0,
    };
    let points = generate_points(&dir.path().join("points/a.txt"), shape, b',');
    let (centres, report) = run_kmeans(dir.path(), 6, 1e-6, 100).unwrap();
    let (want, iterations) = reference_kmeans(&points, 6, 1e-6, 100);
    assert_centres_close(&centres, &want);
    assert!(report.converged);
    assert_eq!(report.iterations, iterations);
    assert!(
        iterations > 2,
        "converged at once: the test would show little"
    );

    // Stopped early: the centres after exactly 2 iterations.
    std::fs::remove_dir_all(dir.path().join("centres")).unwrap();
    let (centres, report) = run_kmeans(dir.path(), 6, 1e-6, 2).unwrap();
    let (want, _) = reference_kmeans(&points, 6, 1e-6, 2);
    assert_centres_close(&centres, &want);
    assert!(!report.converged);
    assert_eq!(report.iterations, 2);
}

#[test]
fn kmeans_reads_space_separated_points_across_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("points")).unwrap();
    let shape = PointsShape {
        points: 1500,
        dimensions: 2,
        clusters: 4,
        spread: 20.0,
    };
    let mut points = generate_points(&dir.path().join("points/a.txt"), shape, b' ');
    let more = PointsShape {
        points: 700,
        ..shape
    };
    points.extend(generate_points(
        &dir.path().join("points/b.txt"),
        more,
        b' ',
    ));
    let (centres, _) = run_kmeans(dir.path(), 4, 1e-9, 100).unwrap();
    let (want, _) = reference_kmeans(&points, 4, 1e-9, 100);
    assert_centres_close(&centres, &want);
}

#[test]
fn kmeans_refuses_fewer_points_than_clusters_and_mixed_dimensions() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("points"), "1,2\n3,4\n").unwrap();
    let error = run_kmeans(dir.path(), 3, 0.1, 10).unwrap_err().to_string();
    assert!(error.contains("2 point(s)"), "{error}");
    assert!(!dir.path().join("centres").exists());
    std::fs::write(dir.path().join("points"), "1,2\n3,4\n5,6,7\n").unwrap();
    let error = format!(
        "{:#}",
        anyhow_chain(run_kmeans(dir.path(), 2, 0.1, 10).unwrap_err())
    );
    assert!(
        error.contains("record at byte 8") && error.contains("points"),
        "{error}"
    );
    assert!(!dir.path().join("centres").exists());
}

/// An error and its sources, as one line.
fn anyhow_chain(error: sluice_api::ExecError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(s) = source {
        text += &format!(": {s}");
        source = s.source();
    }
    text
}

#[test]
fn an_empty_graph_gives_empty_committed_output() {
    let dir = tempfile::tempdir().unwrap();
    let (ranks, report) = run_pagerank(dir.path(), &[], 1e-9, 10);
    assert!(ranks.is_empty());
    assert_eq!(report.iterations, 0);
    assert!(report.converged);
    let (labels, report) = run_components(&dir.path().join("cc"), &[], 10);
    assert!(labels.is_empty());
    assert_eq!(report.iterations, 0);
    std::fs::write(dir.path().join("points"), "").unwrap();
    let error = run_kmeans(dir.path(), 1, 0.1, 10).unwrap_err().to_string();
    assert!(error.contains("0 point(s)"), "{error}");
}

#[test]
fn a_malformed_edge_names_its_file_and_offset_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("edges.txt");
    std::fs::write(&input, "1\t2\n2\t3\n3\tx\n").unwrap();
    for algorithm in ["pagerank", "cc"] {
        let output = dir.path().join(algorithm);
        let config = config(vec![input.clone()], &output, 1, 10);
        let status = Arc::new(JobStatus::default());
        let error = if algorithm == "pagerank" {
            pagerank(
                &config,
                PageRankSettings { tolerance: 0.1 },
                status,
                &mut quiet(),
            )
        } else {
            connected_components(&config, status, &mut quiet())
        }
        .unwrap_err();
        let text = anyhow_chain(error);
        assert!(
            text.contains("edges.txt") && text.contains("record at byte 8"),
            "{text}"
        );
        assert!(!output.exists());
    }
    // Nothing left beside the output either: the scratch directory is gone.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["edges.txt"]);
}

#[test]
fn an_existing_output_is_refused_before_any_iteration() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("edges.txt");
    write_edges(&input, &[(1, 2)]);
    let output = dir.path().join("out");
    std::fs::create_dir(&output).unwrap();
    let mut steps = 0;
    let error = pagerank(
        &config(vec![input], &output, 1, 10),
        PageRankSettings { tolerance: 0.1 },
        Arc::new(JobStatus::default()),
        &mut |_, _| steps += 1,
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            sluice_api::ExecError::Io(sluice_io::IoError::OutputExists { .. })
        ),
        "{error}"
    );
    assert_eq!(steps, 0);
}
