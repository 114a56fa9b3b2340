//! Reading a job's output directory the way tests compare it.

use std::fs;
use std::path::Path;

/// Every line of every part file (`part-*`) in the output directory `dir`, sorted: what an
/// identity job's output holds, whatever its partitioning and the order of values within a
/// key.
///
/// # Panics
/// When the directory or a part file cannot be read, or a part file is not UTF-8: the test
/// cannot go on.
pub fn sorted_part_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        if !entry.file_name().to_string_lossy().starts_with("part-") {
            continue;
        }
        let text = fs::read_to_string(entry.path())
            .unwrap_or_else(|e| panic!("{}: {e}", entry.path().display()));
        lines.extend(text.lines().map(str::to_string));
    }
    lines.sort();
    lines
}
