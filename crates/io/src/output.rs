use std::fs::File;
use std::path::{Path, PathBuf};

use crate::IoError;

/// Writes a job's output atomically.
///
/// Part files are created in a hidden sibling directory (`.NAME.sluice-tmp-PID` next to the output
/// directory `NAME`). [`OutputCommitter::commit`] renames it to the output path and then writes an
/// empty `_SUCCESS` file. If the committer is dropped without a commit (an error, a panic), the
/// temporary directory is removed, so a failed job leaves neither output nor `_SUCCESS`.
pub struct OutputCommitter {
    final_dir: PathBuf,
    temp_dir: PathBuf,
}

impl OutputCommitter {
    /// Prepares to write `output`.
    ///
    /// # Errors
    /// [`IoError::OutputExists`] if `output` exists (file or directory); [`IoError::Write`] if the
    /// temporary directory cannot be created (e.g. the parent directory is missing or read-only).
    pub fn create(output: &Path) -> Result<OutputCommitter, IoError> {
        todo!("{}", output.display())
    }

    /// The directory the part files are written into until commit.
    pub fn temp_dir(&self) -> &Path {
        &self.temp_dir
    }

    /// The output directory as it will be after commit.
    pub fn final_dir(&self) -> &Path {
        &self.final_dir
    }

    /// Creates (truncating) a file named `name` in the temporary directory.
    ///
    /// # Errors
    /// [`IoError::Write`] naming the file.
    pub fn create_file(&self, name: &str) -> Result<File, IoError> {
        todo!("{name}")
    }

    /// Syncs the part files, renames the temporary directory to the output path and writes
    /// `_SUCCESS`. Returns the output path.
    ///
    /// # Errors
    /// [`IoError::OutputExists`] if the output appeared meanwhile; [`IoError::Write`] otherwise. On
    /// error nothing is left at the output path.
    pub fn commit(self) -> Result<PathBuf, IoError> {
        todo!()
    }
}
