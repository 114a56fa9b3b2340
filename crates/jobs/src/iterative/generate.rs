//! Seeded generators of the iterative jobs' inputs: R-MAT graphs and clustered points.
//!
//! Both are pure functions of (seed, record number): record `i` is drawn from its own
//! generator seeded from the seed and `i`, so any range of records can be generated alone,
//! on any thread, into any number of files, and the same seed always gives the same records.

/// SplitMix64: small, well mixed, and stable forever (the data of a seed never changes).
struct SplitMix64(u64);

impl SplitMix64 {
    /// The generator of record `index` under `seed`.
    fn for_record(seed: u64, index: u64) -> SplitMix64 {
        let mut mix = SplitMix64(seed ^ 0x6a09_e667_f3bc_c908);
        let base = mix.next();
        SplitMix64(base ^ index.wrapping_mul(0xd1b5_4a32_d192_ed03))
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `[0, 1)` with 53 random bits.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        let wide = u128::from(self.next()) * u128::from(n);
        // The high half of a 64x64-bit product is below `n`, so it fits.
        u64::try_from(wide >> 64).unwrap_or(0)
    }

    /// A standard normal number (Box-Muller).
    fn normal(&mut self) -> f64 {
        let u = 1.0 - self.unit();
        let v = self.unit();
        (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
    }
}

/// The size of an R-MAT graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphShape {
    /// Vertices are `0..vertices`.
    pub vertices: u64,
    /// Edges drawn (repeats and self-loops included, as R-MAT draws them).
    pub edges: u64,
}

impl GraphShape {
    /// Graph500's sizes: `2^scale` vertices and `edge_factor` edges per vertex. `None` if
    /// that does not fit in 64 bits.
    pub fn from_scale(scale: u32, edge_factor: u64) -> Option<GraphShape> {
        let vertices = 1u64.checked_shl(scale).filter(|_| scale < 64)?;
        Some(GraphShape {
            vertices,
            edges: vertices.checked_mul(edge_factor)?,
        })
    }
}

/// The R-MAT probabilities of Graph500 (a, b, c; d = 1 - a - b - c = 0.05): the quadrant
/// of the adjacency matrix an edge falls in, at each halving.
const RMAT: (f64, f64, f64) = (0.57, 0.19, 0.19);

/// The edges `first..first + count` of the R-MAT graph of `shape` under `seed`, as
/// `(src, dst)`.
///
/// Each edge is placed by halving the adjacency matrix `ceil(log2(vertices))` times,
/// choosing a quadrant with Graph500's probabilities each time (no noise, no relabelling:
/// low ids are the hubs). An edge that lands outside `0..vertices` (when `vertices` is not
/// a power of two) is drawn again.
pub fn rmat_edges(shape: GraphShape, seed: u64, first: u64, count: u64) -> RmatEdges {
    let levels = if shape.vertices <= 1 {
        0
    } else {
        64 - (shape.vertices - 1).leading_zeros()
    };
    RmatEdges {
        shape,
        seed,
        levels,
        next: first,
        end: first.saturating_add(count).min(shape.edges),
    }
}

/// The iterator [`rmat_edges`] returns.
#[derive(Debug, Clone)]
pub struct RmatEdges {
    shape: GraphShape,
    seed: u64,
    levels: u32,
    next: u64,
    end: u64,
}

impl Iterator for RmatEdges {
    type Item = (u64, u64);

    fn next(&mut self) -> Option<(u64, u64)> {
        if self.next >= self.end || self.shape.vertices == 0 {
            return None;
        }
        let mut rng = SplitMix64::for_record(self.seed, self.next);
        self.next += 1;
        let (a, b, c) = RMAT;
        loop {
            let (mut src, mut dst) = (0u64, 0u64);
            for _ in 0..self.levels {
                let x = rng.unit();
                let (down, right) = if x < a {
                    (0, 0)
                } else if x < a + b {
                    (0, 1)
                } else if x < a + b + c {
                    (1, 0)
                } else {
                    (1, 1)
                };
                src = (src << 1) | down;
                dst = (dst << 1) | right;
            }
            if src < self.shape.vertices && dst < self.shape.vertices {
                return Some((src, dst));
            }
        }
    }
}

/// The size and spread of a set of clustered points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PointsShape {
    /// Points drawn.
    pub points: u64,
    /// Coordinates per point.
    pub dimensions: usize,
    /// Centres the points are drawn around.
    pub clusters: usize,
    /// Standard deviation of every coordinate around its centre.
    pub spread: f64,
}

/// Writes points: each point picks one of `clusters` centres (uniform in `[-100, 100)` on
/// every axis, drawn from the seed) uniformly, then adds normal noise of standard deviation
/// `spread` to each coordinate. Coordinates are written with 6 decimals.
#[derive(Debug, Clone)]
pub struct PointsWriter {
    shape: PointsShape,
    seed: u64,
    centres: Vec<f64>,
    separator: u8,
}

impl PointsWriter {
    /// The writer of `shape`'s points under `seed`, their coordinates separated by
    /// `separator` (a comma or a space).
    pub fn new(shape: PointsShape, seed: u64, separator: u8) -> PointsWriter {
        let mut rng = SplitMix64::for_record(seed, u64::MAX);
        let centres = (0..shape.clusters.saturating_mul(shape.dimensions))
            .map(|_| rng.unit() * 200.0 - 100.0)
            .collect();
        PointsWriter {
            shape,
            seed,
            centres,
            separator,
        }
    }

    /// The centres the points are drawn around, for checks.
    pub fn centres(&self) -> Vec<Vec<f64>> {
        self.centres
            .chunks(self.shape.dimensions.max(1))
            .map(<[f64]>::to_vec)
            .collect()
    }

    /// Appends point `index` as a line (with its newline) to `out`.
    pub fn write_point(&self, index: u64, out: &mut Vec<u8>) {
        use std::io::Write;
        let d = self.shape.dimensions;
        let clusters = u64::try_from(self.shape.clusters).unwrap_or(u64::MAX);
        if d == 0 || clusters == 0 {
            return;
        }
        let mut rng = SplitMix64::for_record(self.seed, index);
        let cluster = usize::try_from(rng.below(clusters)).unwrap_or(0);
        let centre = &self.centres[cluster * d..(cluster + 1) * d];
        for (i, c) in centre.iter().enumerate() {
            if i > 0 {
                out.push(self.separator);
            }
            let x = c + self.shape.spread * rng.normal();
            // Writing to a Vec cannot fail.
            let _ = write!(out, "{x:.6}");
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmat_is_deterministic_skewed_and_in_range() {
        let shape = GraphShape::from_scale(10, 8).unwrap();
        let all: Vec<_> = rmat_edges(shape, 5, 0, shape.edges).collect();
        assert_eq!(all.len(), 8192);
        // Any range alone gives the same edges.
        let tail: Vec<_> = rmat_edges(shape, 5, 8000, 1000).collect();
        assert_eq!(tail, all[8000..]);
        assert_ne!(
            all,
            rmat_edges(shape, 6, 0, shape.edges).collect::<Vec<_>>()
        );
        assert!(all.iter().all(|&(s, d)| s < 1024 && d < 1024));
        // R-MAT's skew: vertex 0 (quadrant a at every level) has far more than its share.
        let zero = all.iter().filter(|&&(s, _)| s == 0).count();
        assert!(zero > 100, "vertex 0 has {zero} out-edges");
        let odd = GraphShape {
            vertices: 1000,
            edges: 5000,
        };
        assert!(rmat_edges(odd, 1, 0, 5000).all(|(s, d)| s < 1000 && d < 1000));
    }

    #[test]
    fn points_lie_around_their_centres() {
        let shape = PointsShape {
            points: 2000,
            dimensions: 3,
            clusters: 4,
            spread: 1.0,
        };
        let writer = PointsWriter::new(shape, 9, b',');
        let centres = writer.centres();
        let mut line = Vec::new();
        for i in 0..2000 {
            line.clear();
            writer.write_point(i, &mut line);
            let text = std::str::from_utf8(&line).unwrap().trim_end();
            let p: Vec<f64> = text.split(',').map(|x| x.parse().unwrap()).collect();
            assert_eq!(p.len(), 3);
            let nearest = centres
                .iter()
                .map(|c| {
                    c.iter()
                        .zip(&p)
                        .map(|(a, b)| (a - b) * (a - b))
                        .sum::<f64>()
                })
                .fold(f64::INFINITY, f64::min);
            // Within 8 standard deviations in 3 dimensions.
            assert!(
                nearest < 64.0 * 3.0,
                "point {i} is {nearest} from every centre"
            );
        }
    }
}
