//! The references a benchmark's outputs are checked against: each workload computed again the
//! plainest way, in memory, from the input files (a word count in a hash map, PageRank by
//! power iteration over an edge array, components by union-find, Lloyd's k-means in a loop),
//! sharing no code with the jobs. Sorted outputs are checked without sorting again: every part
//! file in order, and the same lines as the input, as a count and an order-free digest.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::path::{Path, PathBuf};

use anyhow::{bail, ensure, Context, Result};

/// The bytes that end a word in Hadoop's WordCount (`StringTokenizer`'s defaults).
const WORD_SEPARATORS: &[u8] = b" \t\n\r\x0c";

/// The data files of a job's input or output directory, in path order: `_SUCCESS`, `.crc`
/// files and other names starting with `_` or `.` are not data.
pub(crate) fn data_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('_') || name.starts_with('.') || !entry.path().is_file() {
            continue;
        }
        files.push(entry.path());
    }
    files.sort();
    Ok(files)
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

/// The lines of a file, without their `\n`.
fn lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    bytes
        .split(|&b| b == b'\n')
        .filter(move |_| !bytes.is_empty())
}

/// Splits `key<TAB>value`; a line without a tab is all key.
fn key_value(line: &[u8]) -> (&[u8], &[u8]) {
    match line.iter().position(|&b| b == b'\t') {
        Some(tab) => (&line[..tab], &line[tab + 1..]),
        None => (line, b""),
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn number<T: std::str::FromStr>(bytes: &[u8], what: &str, file: &Path) -> Result<T> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .with_context(|| {
            format!(
                "{}: {what} {:?} is not a number",
                file.display(),
                text(bytes)
            )
        })
}

/// Word counts of the input, as Hadoop's WordCount computes them.
pub(crate) fn word_counts(input: &[PathBuf]) -> Result<HashMap<Vec<u8>, u64>> {
    let mut counts = HashMap::new();
    for path in input {
        for word in read(path)?.split(|b| WORD_SEPARATORS.contains(b)) {
            if !word.is_empty() {
                *counts.entry(word.to_vec()).or_insert(0) += 1;
            }
        }
    }
    Ok(counts)
}

/// Checks `word<TAB>count` part files: the expected counts, each file by word bytes.
pub(crate) fn check_word_counts(output: &Path, expected: &HashMap<Vec<u8>, u64>) -> Result<()> {
    let mut seen = HashMap::new();
    for file in data_files(output)? {
        let bytes = read(&file)?;
        let mut previous: Option<&[u8]> = None;
        for line in lines(&bytes) {
            let (word, count) = key_value(line);
            if let Some(previous) = previous {
                ensure!(
                    previous < word,
                    "{}: {:?} comes after {:?}",
                    file.display(),
                    text(word),
                    text(previous)
                );
            }
            previous = Some(word);
            seen.insert(word.to_vec(), number(count, "count", &file)?);
        }
    }
    same_counts(&seen, expected, output)
}

/// Checks the output of a `uniq -c` reducer or pipeline (`   COUNT WORD` lines, in one or
/// more files; trailing tabs of streaming's output ignored): the expected counts. An empty
/// word (a line the splitting left empty) is not a word.
pub(crate) fn check_uniq_counts(output: &Path, expected: &HashMap<Vec<u8>, u64>) -> Result<()> {
    let files = if output.is_dir() {
        data_files(output)?
    } else {
        vec![output.to_path_buf()]
    };
    let mut seen: HashMap<Vec<u8>, u64> = HashMap::new();
    for file in files {
        let bytes = read(&file)?;
        for line in lines(&bytes) {
            let mut fields = line.split(|b| b" \t".contains(b)).filter(|f| !f.is_empty());
            let Some(count) = fields.next() else { continue };
            let count: u64 = number(count, "count", &file)?;
            match (fields.next(), fields.next()) {
                (None, _) => continue,
                (Some(word), None) => *seen.entry(word.to_vec()).or_insert(0) += count,
                (Some(_), Some(_)) => {
                    bail!("{}: {:?} is not `COUNT WORD`", file.display(), text(line))
                }
            }
        }
    }
    same_counts(&seen, expected, output)
}

fn same_counts(
    seen: &HashMap<Vec<u8>, u64>,
    expected: &HashMap<Vec<u8>, u64>,
    output: &Path,
) -> Result<()> {
    for (word, count) in expected {
        match seen.get(word) {
            Some(found) if found == count => {}
            Some(found) => bail!(
                "{}: {:?} counted {found} times, expected {count}",
                output.display(),
                text(word)
            ),
            None => bail!("{}: {:?} is missing", output.display(), text(word)),
        }
    }
    if let Some(extra) = seen.keys().find(|w| !expected.contains_key(*w)) {
        bail!(
            "{}: {:?} is not in the input",
            output.display(),
            text(extra)
        );
    }
    Ok(())
}

/// Counts of every match of `pattern` in the input's lines.
pub(crate) fn match_counts(
    input: &[PathBuf],
    pattern: &regex::bytes::Regex,
) -> Result<HashMap<Vec<u8>, u64>> {
    let mut counts = HashMap::new();
    for path in input {
        let bytes = read(path)?;
        for line in lines(&bytes) {
            for found in pattern.find_iter(line) {
                *counts.entry(found.as_bytes().to_vec()).or_insert(0) += 1;
            }
        }
    }
    Ok(counts)
}

/// Checks Grep's `count<TAB>match` output: the expected counts, by decreasing count, ties by
/// match bytes.
pub(crate) fn check_grep(output: &Path, expected: &HashMap<Vec<u8>, u64>) -> Result<()> {
    let mut seen = HashMap::new();
    for file in data_files(output)? {
        let bytes = read(&file)?;
        let mut previous: Option<(u64, Vec<u8>)> = None;
        for line in lines(&bytes) {
            let (count, found) = key_value(line);
            let count: u64 = number(count, "count", &file)?;
            if let Some((before, before_match)) = &previous {
                ensure!(
                    *before > count || (*before == count && before_match.as_slice() < found),
                    "{}: {count} {:?} is out of order",
                    file.display(),
                    text(found)
                );
            }
            previous = Some((count, found.to_vec()));
            seen.insert(found.to_vec(), count);
        }
    }
    same_counts(&seen, expected, output)
}

/// An order-free digest of records: their number, and the sum and xor of their hashes.
#[derive(Debug, Default, PartialEq, Eq, Clone, Copy)]
pub(crate) struct Digest {
    records: u64,
    sum: u64,
    xor: u64,
}

impl Digest {
    fn add(&mut self, record: &[u8]) {
        // A fixed-key SipHash: the same within one run, which is all a comparison needs.
        let hash = BuildHasherDefault::<DefaultHasher>::default().hash_one(record);
        self.records += 1;
        self.sum = self.sum.wrapping_add(hash);
        self.xor ^= hash;
    }
}

/// The digest of the input's lines.
pub(crate) fn line_digest(input: &[PathBuf]) -> Result<Digest> {
    let mut digest = Digest::default();
    for path in input {
        lines(&read(path)?).for_each(|line| digest.add(line));
    }
    Ok(digest)
}

/// Checks a sort's output: each file's lines by key (bytes before the first tab), and the
/// same lines as the input (`expected`).
pub(crate) fn check_sorted_lines(output: &[PathBuf], expected: Digest) -> Result<()> {
    let mut digest = Digest::default();
    for file in output {
        let bytes = read(file)?;
        let mut previous: Option<&[u8]> = None;
        for (n, line) in lines(&bytes).enumerate() {
            let key = key_value(line).0;
            if let Some(previous) = previous {
                ensure!(
                    previous <= key,
                    "{}: line {} is out of order",
                    file.display(),
                    n + 1
                );
            }
            previous = Some(key);
            digest.add(line);
        }
    }
    ensure!(
        digest == expected,
        "the output's lines are not the input's ({} lines read, {} expected)",
        digest.records,
        expected.records
    );
    Ok(())
}

/// The length of a TeraGen row and of its key.
const ROW: usize = 100;
const KEY: usize = 10;

/// The digest of the input's 100-byte rows.
pub(crate) fn row_digest(input: &[PathBuf]) -> Result<Digest> {
    let mut digest = Digest::default();
    for path in input {
        let bytes = read(path)?;
        ensure!(
            bytes.len() % ROW == 0,
            "{}: not 100-byte rows",
            path.display()
        );
        bytes.chunks_exact(ROW).for_each(|row| digest.add(row));
    }
    Ok(digest)
}

/// Checks TeraSort's output: its part files, in order, are one sequence of the input's rows
/// sorted by key (equal keys by the rest of the row).
pub(crate) fn check_terasort(output: &Path, expected: Digest) -> Result<()> {
    let mut digest = Digest::default();
    let mut previous: Option<[u8; ROW]> = None;
    for file in data_files(output)? {
        let bytes = read(&file)?;
        ensure!(
            bytes.len() % ROW == 0,
            "{}: not 100-byte rows",
            file.display()
        );
        for (n, row) in bytes.chunks_exact(ROW).enumerate() {
            if let Some(previous) = &previous {
                ensure!(
                    (&previous[..KEY], &previous[KEY..]) <= (&row[..KEY], &row[KEY..]),
                    "{}: row {} is out of order",
                    file.display(),
                    n + 1
                );
            }
            let mut copy = [0; ROW];
            copy.copy_from_slice(row);
            previous = Some(copy);
            digest.add(row);
        }
    }
    ensure!(
        digest == expected,
        "the output's rows are not the input's ({} rows read, {} expected)",
        digest.records,
        expected.records
    );
    Ok(())
}

/// For every word, the names of the input files holding it.
pub(crate) fn word_files(input: &[PathBuf]) -> Result<BTreeMap<Vec<u8>, BTreeSet<String>>> {
    let mut index: BTreeMap<Vec<u8>, BTreeSet<String>> = BTreeMap::new();
    for path in input {
        let name = file_name(path.as_os_str().as_encoded_bytes());
        for word in read(path)?.split(|b| WORD_SEPARATORS.contains(b)) {
            if !word.is_empty() && !index.get(word).is_some_and(|files| files.contains(&name)) {
                index.entry(word.to_vec()).or_default().insert(name.clone());
            }
        }
    }
    Ok(index)
}

/// The last component of a path or URI.
fn file_name(path: &[u8]) -> String {
    text(path.rsplit(|&b| b == b'/').next().unwrap_or(path))
}

/// Checks an inverted index (`word<TAB>path,path,...`) against `expected`, by file name.
pub(crate) fn check_index(
    output: &Path,
    expected: &BTreeMap<Vec<u8>, BTreeSet<String>>,
) -> Result<()> {
    let mut seen = BTreeMap::new();
    for file in data_files(output)? {
        let bytes = read(&file)?;
        for line in lines(&bytes) {
            let (word, paths) = key_value(line);
            let names: BTreeSet<String> = paths.split(|&b| b == b',').map(file_name).collect();
            seen.insert(word.to_vec(), names);
        }
    }
    if &seen != expected {
        let differs = expected
            .iter()
            .find(|(word, files)| seen.get(*word) != Some(*files))
            .map(|(word, _)| text(word))
            .or_else(|| {
                seen.keys()
                    .find(|w| !expected.contains_key(*w))
                    .map(|w| text(w))
            });
        bail!(
            "{}: the index differs from the reference at {:?}",
            output.display(),
            differs.unwrap_or_default()
        );
    }
    Ok(())
}

/// The edges `src<TAB>dst` of the input.
pub(crate) fn edges(input: &[PathBuf]) -> Result<Vec<(u64, u64)>> {
    let mut edges = Vec::new();
    for path in input {
        let bytes = read(path)?;
        for line in lines(&bytes) {
            let (src, dst) = key_value(line);
            edges.push((number(src, "vertex", path)?, number(dst, "vertex", path)?));
        }
    }
    Ok(edges)
}

/// PageRank by power iteration (damping 0.85; dangling rank spread over all vertices),
/// until an iteration's L1 change is below `tolerance` or after `max_iterations`.
pub(crate) fn pagerank(
    edges: &[(u64, u64)],
    tolerance: f64,
    max_iterations: usize,
) -> BTreeMap<u64, f64> {
    const DAMPING: f64 = 0.85;
    let vertices: BTreeSet<u64> = edges.iter().flat_map(|&(s, d)| [s, d]).collect();
    let index: HashMap<u64, usize> = vertices.iter().enumerate().map(|(i, &v)| (v, i)).collect();
    let n = vertices.len();
    let mut out_degree = vec![0u64; n];
    for (src, _) in edges {
        out_degree[index[src]] += 1;
    }
    let mut rank = vec![1.0 / n as f64; n];
    for _ in 0..max_iterations {
        let dangling: f64 = (0..n)
            .filter(|&v| out_degree[v] == 0)
            .map(|v| rank[v])
            .sum();
        let base = (1.0 - DAMPING) / n as f64 + DAMPING * dangling / n as f64;
        let mut incoming = vec![0.0; n];
        for (src, dst) in edges {
            let s = index[src];
            incoming[index[dst]] += rank[s] / out_degree[s] as f64;
        }
        let next: Vec<f64> = incoming.iter().map(|sum| base + DAMPING * sum).collect();
        let change: f64 = next.iter().zip(&rank).map(|(a, b)| (a - b).abs()).sum();
        rank = next;
        if change < tolerance {
            break;
        }
    }
    vertices.into_iter().zip(rank).collect()
}

/// Reads `vertex<TAB>number` output lines.
fn vertex_values<T: std::str::FromStr>(output: &Path) -> Result<BTreeMap<u64, T>> {
    let mut values = BTreeMap::new();
    for file in data_files(output)? {
        let bytes = read(&file)?;
        for line in lines(&bytes) {
            let (vertex, value) = key_value(line);
            values.insert(
                number(vertex, "vertex", &file)?,
                number(value, "value", &file)?,
            );
        }
    }
    Ok(values)
}

/// Checks PageRank's `vertex<TAB>rank` output against the reference, each rank to within a
/// millionth of itself (the sums are added in another order).
pub(crate) fn check_pagerank(output: &Path, expected: &BTreeMap<u64, f64>) -> Result<()> {
    let seen: BTreeMap<u64, f64> = vertex_values(output)?;
    ensure!(
        seen.len() == expected.len(),
        "{}: {} vertices, expected {}",
        output.display(),
        seen.len(),
        expected.len()
    );
    for (vertex, rank) in expected {
        let found = seen
            .get(vertex)
            .with_context(|| format!("{}: vertex {vertex} is missing", output.display()))?;
        ensure!(
            (found - rank).abs() <= 1e-6 * rank.abs(),
            "{}: vertex {vertex} has rank {found}, expected {rank}",
            output.display()
        );
    }
    Ok(())
}

/// Connected components of the edges taken as undirected, by union-find: each vertex's
/// smallest vertex id of its component.
pub(crate) fn components(edges: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    fn root(parent: &mut HashMap<u64, u64>, mut v: u64) -> u64 {
        while parent[&v] != v {
            let grand = parent[&parent[&v]];
            parent.insert(v, grand);
            v = grand;
        }
        v
    }
    let mut parent: HashMap<u64, u64> = HashMap::new();
    for &(a, b) in edges {
        parent.entry(a).or_insert(a);
        parent.entry(b).or_insert(b);
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        // The smaller root wins, so every root is its component's smallest vertex.
        parent.insert(ra.max(rb), ra.min(rb));
    }
    let vertices: Vec<u64> = parent.keys().copied().collect();
    vertices
        .into_iter()
        .map(|v| (v, root(&mut parent, v)))
        .collect()
}

/// Checks connected components' `vertex<TAB>label` output against the reference.
pub(crate) fn check_components(output: &Path, expected: &BTreeMap<u64, u64>) -> Result<()> {
    let seen: BTreeMap<u64, u64> = vertex_values(output)?;
    if &seen != expected {
        let vertex = expected
            .iter()
            .find(|(v, label)| seen.get(*v) != Some(*label))
            .map(|(v, _)| *v);
        bail!(
            "{}: labels differ from the reference ({} vertices, expected {}; first at vertex {:?})",
            output.display(),
            seen.len(),
            expected.len(),
            vertex
        );
    }
    Ok(())
}

/// The points of the input: numbers separated by spaces or commas, one point a line.
pub(crate) fn points(input: &[PathBuf]) -> Result<Vec<Vec<f64>>> {
    let mut points = Vec::new();
    for path in input {
        let bytes = read(path)?;
        for line in lines(&bytes) {
            let point = line
                .split(|b| b" ,\t".contains(b))
                .filter(|f| !f.is_empty())
                .map(|f| number(f, "coordinate", path))
                .collect::<Result<Vec<f64>>>()?;
            points.push(point);
        }
    }
    Ok(points)
}

/// Lloyd's k-means from the first `k` points, until no centre moves `tolerance` or more or
/// after `max_iterations`.
pub(crate) fn kmeans(
    points: &[Vec<f64>],
    k: usize,
    tolerance: f64,
    max_iterations: usize,
) -> Vec<Vec<f64>> {
    let distance =
        |a: &[f64], b: &[f64]| -> f64 { a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum() };
    let mut centres: Vec<Vec<f64>> = points.iter().take(k).cloned().collect();
    let dimensions = centres.first().map_or(0, Vec::len);
    for _ in 0..max_iterations {
        let mut sums = vec![vec![0.0; dimensions]; centres.len()];
        let mut counts = vec![0u64; centres.len()];
        for point in points {
            let mut nearest = 0;
            for c in 1..centres.len() {
                if distance(point, &centres[c]) < distance(point, &centres[nearest]) {
                    nearest = c;
                }
            }
            counts[nearest] += 1;
            sums[nearest]
                .iter_mut()
                .zip(point)
                .for_each(|(s, x)| *s += x);
        }
        let mut moved = 0.0_f64;
        for c in 0..centres.len() {
            if counts[c] > 0 {
                let next: Vec<f64> = sums[c].iter().map(|s| s / counts[c] as f64).collect();
                moved = moved.max(distance(&next, &centres[c]).sqrt());
                centres[c] = next;
            }
        }
        if moved < tolerance {
            break;
        }
    }
    centres
}

/// Checks k-means' `centre<TAB>x1,x2,...` output against the reference's centres, each
/// coordinate to within a millionth (of itself, or absolutely near zero).
pub(crate) fn check_kmeans(output: &Path, expected: &[Vec<f64>]) -> Result<()> {
    let mut seen: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for file in data_files(output)? {
        let bytes = read(&file)?;
        for line in lines(&bytes) {
            let (centre, coordinates) = key_value(line);
            let coordinates = coordinates
                .split(|&b| b == b',')
                .map(|c| number(c, "coordinate", &file))
                .collect::<Result<Vec<f64>>>()?;
            seen.insert(number(centre, "centre", &file)?, coordinates);
        }
    }
    ensure!(
        seen.len() == expected.len(),
        "{}: {} centres, expected {}",
        output.display(),
        seen.len(),
        expected.len()
    );
    for (c, centre) in expected.iter().enumerate() {
        let found = seen
            .get(&c)
            .with_context(|| format!("{}: centre {c} is missing", output.display()))?;
        let close = found.len() == centre.len()
            && found
                .iter()
                .zip(centre)
                .all(|(a, b)| (a - b).abs() <= 1e-6 * b.abs().max(1.0));
        ensure!(
            close,
            "{}: centre {c} is {found:?}, expected {centre:?}",
            output.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_with(files: &[(&str, &[u8])]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, bytes) in files {
            std::fs::write(dir.path().join(name), bytes).unwrap();
        }
        dir
    }

    fn counts(pairs: &[(&str, u64)]) -> HashMap<Vec<u8>, u64> {
        pairs
            .iter()
            .map(|(w, c)| (w.as_bytes().to_vec(), *c))
            .collect()
    }

    #[test]
    fn data_files_leave_out_markers_and_hidden_files() {
        let dir = dir_with(&[
            ("_SUCCESS", b""),
            (".part-0.crc", b""),
            ("b", b""),
            ("a", b""),
        ]);
        let names: Vec<_> = data_files(dir.path())
            .unwrap()
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["a", "b"]);
    }

    #[test]
    fn word_counts_split_as_hadoop_does() {
        let input = dir_with(&[("in", b"a b\ta\n\nc\r\nd\x0cd\xc3\xa9,a")]);
        let files = data_files(input.path()).unwrap();
        let expected = counts(&[("a", 2), ("b", 1), ("c", 1), ("d", 1), ("d\u{e9},a", 1)]);
        assert_eq!(word_counts(&files).unwrap(), expected);

        let good = dir_with(&[
            ("part-r-00000", b"a\t2\nc\t1\n"),
            ("part-r-00001", b"b\t1\nd\t1\nd\xc3\xa9,a\t1\n"),
        ]);
        check_word_counts(good.path(), &expected).unwrap();
        for wrong in [
            &b"a\t3\nb\t1\nc\t1\nd\t1\nd\xc3\xa9,a\t1\n"[..], // a count
            b"a\t2\nb\t1\nc\t1\nd\t1\n",                      // a word missing
            b"a\t2\nb\t1\nc\t1\nd\t1\nd\xc3\xa9,a\t1\nz\t1\n", // a word too many
            b"b\t1\na\t2\nc\t1\nd\t1\nd\xc3\xa9,a\t1\n",      // out of order
        ] {
            let dir = dir_with(&[("part-r-00000", wrong)]);
            assert!(
                check_word_counts(dir.path(), &expected).is_err(),
                "{:?}",
                text(wrong)
            );
        }
    }

    #[test]
    fn uniq_counts_in_the_shapes_streaming_and_pipelines_write() {
        let expected = counts(&[("a", 3), ("b", 1)]);
        let streaming = dir_with(&[
            ("part-00000", b"      2 a\t\n"),
            ("part-00001", b"      1 a\t\n      1 b\t\n"),
        ]);
        check_uniq_counts(streaming.path(), &expected).unwrap();
        let pipeline = dir_with(&[("out", b"      1 \n      3 a\n      1 b\n")]);
        check_uniq_counts(&pipeline.path().join("out"), &expected).unwrap();
        let wrong = dir_with(&[("out", b"      3 a\n")]);
        assert!(check_uniq_counts(&wrong.path().join("out"), &expected).is_err());
    }

    #[test]
    fn grep_output_by_decreasing_count_then_bytes() {
        let pattern = regex::bytes::Regex::new("[aeiou]{2,}").unwrap();
        let input = dir_with(&[("in", b"beautiful queue\nmoon aeiou\n")]);
        let expected = match_counts(&data_files(input.path()).unwrap(), &pattern).unwrap();
        assert_eq!(
            expected,
            counts(&[("eau", 1), ("ueue", 1), ("oo", 1), ("aeiou", 1)])
        );
        let good = dir_with(&[("part-r-00000", b"1\taeiou\n1\teau\n1\too\n1\tueue\n")]);
        check_grep(good.path(), &expected).unwrap();
        let disordered = dir_with(&[("part-r-00000", b"1\teau\n1\taeiou\n1\too\n1\tueue\n")]);
        assert!(check_grep(disordered.path(), &expected).is_err());
        let two = counts(&[("oo", 2), ("eau", 1)]);
        let by_count = dir_with(&[("part-r-00000", b"2\too\n1\teau\n")]);
        check_grep(by_count.path(), &two).unwrap();
        let wrong_way = dir_with(&[("part-r-00000", b"1\teau\n2\too\n")]);
        assert!(check_grep(wrong_way.path(), &two).is_err());
    }

    #[test]
    fn sorted_lines_are_the_input_s_lines_in_key_order() {
        let input = dir_with(&[("in", b"b\t1\na\t2\nb\t0\nc\n")]);
        let digest = line_digest(&data_files(input.path()).unwrap()).unwrap();
        let good = dir_with(&[
            ("part-r-00000", b"a\t2\nb\t1\nb\t0\n"),
            ("part-r-00001", b"c\n"),
        ]);
        check_sorted_lines(&data_files(good.path()).unwrap(), digest).unwrap();
        for wrong in [
            &b"a\t2\nb\t1\nc\n"[..],  // a line lost
            b"a\t2\nb\t1\nb\t1\nc\n", // a line changed
            b"b\t1\na\t2\nb\t0\nc\n", // out of order
        ] {
            let dir = dir_with(&[("part-r-00000", wrong)]);
            let files = data_files(dir.path()).unwrap();
            assert!(
                check_sorted_lines(&files, digest).is_err(),
                "{:?}",
                text(wrong)
            );
        }
    }

    #[test]
    fn terasort_output_is_one_sorted_sequence_across_files() {
        let row = |key: u8, rest: u8| {
            let mut r = vec![rest; ROW];
            r[..KEY].fill(key);
            r
        };
        let input = dir_with(&[("in", &[row(3, 0), row(1, 9), row(2, 0), row(1, 4)].concat())]);
        let digest = row_digest(&data_files(input.path()).unwrap()).unwrap();
        let good = dir_with(&[
            ("part-r-00000", &[row(1, 4), row(1, 9)].concat()),
            ("part-r-00001", &[row(2, 0), row(3, 0)].concat()),
        ]);
        check_terasort(good.path(), digest).unwrap();
        let across = dir_with(&[
            ("part-r-00000", &[row(2, 0), row(3, 0)].concat()),
            ("part-r-00001", &[row(1, 4), row(1, 9)].concat()),
        ]);
        assert!(check_terasort(across.path(), digest).is_err());
        let ties = dir_with(&[(
            "part-r-00000",
            &[row(1, 9), row(1, 4), row(2, 0), row(3, 0)].concat(),
        )]);
        assert!(check_terasort(ties.path(), digest).is_err());
        let lost = dir_with(&[("part-r-00000", &[row(1, 4), row(2, 0), row(3, 0)].concat())]);
        assert!(check_terasort(lost.path(), digest).is_err());
    }

    #[test]
    fn an_index_names_each_word_s_files() {
        let input = dir_with(&[("part-00000.txt", b"a b\n"), ("part-00001.txt", b"b c b\n")]);
        let expected = word_files(&data_files(input.path()).unwrap()).unwrap();
        let good = dir_with(&[(
            "part-r-00000",
            b"a\tin/part-00000.txt\nb\tin/part-00000.txt,in/part-00001.txt\nc\tin/part-00001.txt\n",
        )]);
        check_index(good.path(), &expected).unwrap();
        let wrong = dir_with(&[(
            "part-r-00000",
            b"a\tin/part-00000.txt\nb\tin/part-00001.txt\nc\tin/part-00001.txt\n",
        )]);
        assert!(check_index(wrong.path(), &expected).is_err());
    }

    #[test]
    fn pagerank_of_one_edge_by_hand() {
        // 0 -> 1; 1 dangles. From 1/2 each: base = 0.15/2 + 0.85 * 0.5/2 = 0.2875, and
        // vertex 1 also gets 0.85 * 0.5.
        let ranks = pagerank(&[(0, 1)], 0.0, 1);
        assert!((ranks[&0] - 0.2875).abs() < 1e-15 && (ranks[&1] - 0.7125).abs() < 1e-15);
        let good = dir_with(&[("part-r-00000", b"0\t0.2875\n1\t0.7125\n")]);
        check_pagerank(good.path(), &ranks).unwrap();
        let wrong = dir_with(&[("part-r-00000", b"0\t0.2876\n1\t0.7124\n")]);
        assert!(check_pagerank(wrong.path(), &ranks).is_err());
        let missing = dir_with(&[("part-r-00000", b"0\t0.2875\n")]);
        assert!(check_pagerank(missing.path(), &ranks).is_err());
        // Ranks of a graph without dangling vertices keep summing to one and stop early.
        let cycle = pagerank(&[(0, 1), (1, 2), (2, 0), (0, 2)], 1e-12, 1000);
        assert!((cycle.values().sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn components_are_labelled_by_their_smallest_vertex() {
        let labels = components(&[(5, 2), (3, 4), (2, 1), (9, 9)]);
        let expected: BTreeMap<u64, u64> = [(1, 1), (2, 1), (5, 1), (3, 3), (4, 3), (9, 9)]
            .into_iter()
            .collect();
        assert_eq!(labels, expected);
        let wrong = dir_with(&[("part-r-00000", b"1\t1\n2\t1\n3\t3\n4\t3\n5\t2\n9\t9\n")]);
        assert!(check_components(wrong.path(), &labels).is_err());
    }

    #[test]
    fn kmeans_of_two_obvious_clusters() {
        let input = dir_with(&[("in", b"0 0\n10,10\n1 1\n9 9\n")]);
        let points = points(&data_files(input.path()).unwrap()).unwrap();
        let centres = kmeans(&points, 2, 0.0, 5);
        assert_eq!(centres, vec![vec![0.5, 0.5], vec![9.5, 9.5]]);
        let good = dir_with(&[("part-r-00000", b"0\t0.5,0.5\n1\t9.5,9.5\n")]);
        check_kmeans(good.path(), &centres).unwrap();
        let swapped = dir_with(&[("part-r-00000", b"1\t0.5,0.5\n0\t9.5,9.5\n")]);
        assert!(check_kmeans(swapped.path(), &centres).is_err());
    }
}
