//! Text output files, as Hadoop's `TextOutputFormat` writes them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use sluice_io::{IoError, OutputCommitter};

use crate::{Emit, ExecError};

/// How emitted pairs become lines of the part files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// `key \t value \n` — Hadoop's `TextOutputFormat`.
    #[default]
    KeyValue,
    /// `value \n` — the key is only used for sorting and grouping.
    ValueOnly,
}

/// Buffer of each part file writer.
pub(crate) const OUTPUT_BUFFER: usize = 256 * 1024;

/// One part file being written.
pub(crate) struct TextOutput {
    writer: BufWriter<File>,
    path: PathBuf,
    format: OutputFormat,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
}

impl TextOutput {
    pub(crate) fn create(
        committer: &OutputCommitter,
        name: &str,
        format: OutputFormat,
    ) -> Result<TextOutput, ExecError> {
        let file = committer.create_file(name)?;
        Ok(TextOutput {
            writer: BufWriter::with_capacity(OUTPUT_BUFFER, file),
            path: committer.temp_dir().join(name),
            format,
            records: 0,
            bytes: 0,
        })
    }

    fn write_error(&self, source: std::io::Error) -> ExecError {
        ExecError::Io(IoError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// Flushes the file; returns (records, bytes) written.
    pub(crate) fn finish(mut self) -> Result<(u64, u64), ExecError> {
        if let Err(e) = self.writer.flush() {
            return Err(self.write_error(e));
        }
        Ok((self.records, self.bytes))
    }
}

impl Emit for TextOutput {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        let result = match self.format {
            OutputFormat::KeyValue => {
                self.bytes += (key.len() + value.len() + 2) as u64;
                self.writer
                    .write_all(key)
                    .and_then(|()| self.writer.write_all(b"\t"))
                    .and_then(|()| self.writer.write_all(value))
                    .and_then(|()| self.writer.write_all(b"\n"))
            }
            OutputFormat::ValueOnly => {
                self.bytes += (value.len() + 1) as u64;
                self.writer
                    .write_all(value)
                    .and_then(|()| self.writer.write_all(b"\n"))
            }
        };
        self.records += 1;
        result.map_err(|e| self.write_error(e))
    }
}
