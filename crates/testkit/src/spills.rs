//! Finding the spill directories a job makes while it runs.

use std::fs;
use std::path::{Path, PathBuf};

/// The spill directories (`.sluice-spill-*`, one per job and place) directly in `parent`;
/// none if it cannot be read (not made yet, or removed).
pub fn spill_dirs(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(parent) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".sluice-spill-")
                && e.file_type().is_ok_and(|t| t.is_dir())
        })
        .map(|e| e.path())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_spill_directories_are_found() {
        let dir = tempfile::tempdir().unwrap();
        assert!(spill_dirs(&dir.path().join("missing")).is_empty());
        fs::create_dir(dir.path().join(".sluice-spill-1-2")).unwrap();
        fs::create_dir(dir.path().join("sluice-spill-3")).unwrap();
        fs::write(dir.path().join(".sluice-spill-file"), "").unwrap();
        assert_eq!(
            spill_dirs(dir.path()),
            [dir.path().join(".sluice-spill-1-2")]
        );
    }
}
