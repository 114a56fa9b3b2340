//! Part files, as Hadoop's `TextOutputFormat` writes them (or, for fixed-length records, its
//! `TeraOutputFormat`).

use std::io::Write;
use std::path::PathBuf;

use sluice_io::{DirectWriter, IoError, OutputCommitter};

use crate::{Emit, ExecError};

/// How emitted pairs become lines of the part files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// `key \t value \n` — Hadoop's `TextOutputFormat`.
    #[default]
    KeyValue,
    /// `key SEPARATOR value \n` — `TextOutputFormat` with
    /// `mapreduce.output.textoutputformat.separator` set.
    KeyValueWith(Vec<u8>),
    /// `value \n` — the key is only used for sorting and grouping.
    ValueOnly,
    /// `key value`, nothing between or after: records of a fixed-length format (Hadoop's
    /// `TeraOutputFormat`).
    Raw,
}

/// How part files are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartNames {
    /// `part-r-NNNNN` from reducers, `part-m-NNNNN` from map-only jobs: what Hadoop's
    /// MapReduce API (and its example jobs) write.
    #[default]
    Typed,
    /// `part-NNNNN` from either: what Hadoop's older API, which Hadoop Streaming uses, writes.
    Plain,
}

impl PartNames {
    /// The file name of task `task`'s output.
    pub fn name(self, is_map: bool, task: usize) -> String {
        match (self, is_map) {
            (PartNames::Typed, true) => format!("part-m-{task:05}"),
            (PartNames::Typed, false) => format!("part-r-{task:05}"),
            (PartNames::Plain, _) => format!("part-{task:05}"),
        }
    }
}

/// One part file being written, past the page cache ([`DirectWriter`]): a job's output is
/// usually far larger than what is worth caching, and the cache's copy of every byte costs more
/// than formatting it.
pub(crate) struct TextOutput {
    /// `None` until the first record when the output is lazy.
    writer: Option<DirectWriter>,
    path: PathBuf,
    /// Chunk size of the writer, for a lazy output's writer created later.
    chunk: usize,
    /// Between key and value; `None` writes the value only.
    separator: Option<Vec<u8>>,
    /// After each record (a line end, or nothing for raw records).
    terminator: &'static [u8],
    pub(crate) records: u64,
    pub(crate) bytes: u64,
}

impl TextOutput {
    /// A part file `name` in the committer's temporary directory. A `lazy` output creates its
    /// file only when the first record arrives (Hadoop's `-lazyOutput`); otherwise the file is
    /// created now, so that a task without output still leaves an empty part file.
    /// The writer holds two chunks of `chunk` bytes.
    pub(crate) fn create(
        committer: &OutputCommitter,
        name: &str,
        format: &OutputFormat,
        lazy: bool,
        chunk: usize,
    ) -> Result<TextOutput, ExecError> {
        // A previous attempt of the same task may have left the file: start over.
        committer.remove_file(name)?;
        let path = committer.temp_dir().join(name);
        let writer = if lazy {
            None
        } else {
            Some(
                DirectWriter::create_with(&path, chunk).map_err(|source| IoError::Write {
                    path: path.clone(),
                    source,
                })?,
            )
        };
        let separator = match format {
            OutputFormat::KeyValue => Some(b"\t".to_vec()),
            OutputFormat::KeyValueWith(separator) => Some(separator.clone()),
            OutputFormat::ValueOnly => None,
            OutputFormat::Raw => Some(Vec::new()),
        };
        let terminator: &[u8] = if *format == OutputFormat::Raw {
            b""
        } else {
            b"\n"
        };
        Ok(TextOutput {
            writer,
            path,
            chunk,
            separator,
            terminator,
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
        if let Some(writer) = self.writer.take() {
            if let Err(e) = writer.finish() {
                return Err(self.write_error(e));
            }
        }
        Ok((self.records, self.bytes))
    }

    fn write_line(&mut self, key: &[u8], value: &[u8]) -> std::io::Result<usize> {
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self
                .writer
                .insert(DirectWriter::create_with(&self.path, self.chunk)?),
        };
        let mut written = value.len() + self.terminator.len();
        if let Some(separator) = &self.separator {
            writer.write_all(key)?;
            writer.write_all(separator)?;
            written += key.len() + separator.len();
        }
        writer.write_all(value)?;
        writer.write_all(self.terminator)?;
        Ok(written)
    }
}

impl Emit for TextOutput {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        match self.write_line(key, value) {
            Ok(written) => {
                self.records += 1;
                self.bytes += written as u64;
                Ok(())
            }
            Err(e) => Err(self.write_error(e)),
        }
    }
}
