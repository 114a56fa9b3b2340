//! Text output files, as Hadoop's `TextOutputFormat` writes them.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use sluice_io::{IoError, OutputCommitter};

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

/// Buffer of each part file writer.
pub(crate) const OUTPUT_BUFFER: usize = 256 * 1024;

/// One part file being written.
pub(crate) struct TextOutput {
    /// `None` until the first record when the output is lazy.
    writer: Option<BufWriter<File>>,
    path: PathBuf,
    /// Between key and value; `None` writes the value only.
    separator: Option<Vec<u8>>,
    /// After each record (a line end, or nothing for raw records).
    terminator: &'static [u8],
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    /// Bytes up to which the kernel was asked to start writing the file back.
    written_back: u64,
}

/// Written bytes after which a part file's pages are handed to the kernel's writeback.
const WRITEBACK_STEP: u64 = 16 << 20;

impl TextOutput {
    /// A part file `name` in the committer's temporary directory. A `lazy` output creates its
    /// file only when the first record arrives (Hadoop's `-lazyOutput`); otherwise the file is
    /// created now, so that a task without output still leaves an empty part file.
    pub(crate) fn create(
        committer: &OutputCommitter,
        name: &str,
        format: &OutputFormat,
        lazy: bool,
    ) -> Result<TextOutput, ExecError> {
        // A previous attempt of the same task may have left the file: start over.
        committer.remove_file(name)?;
        let writer = if lazy {
            None
        } else {
            let file = committer.create_file(name)?;
            Some(BufWriter::with_capacity(OUTPUT_BUFFER, file))
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
            path: committer.temp_dir().join(name),
            separator,
            terminator,
            records: 0,
            bytes: 0,
            written_back: 0,
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
        if let Some(writer) = &mut self.writer {
            if let Err(e) = writer.flush() {
                return Err(self.write_error(e));
            }
        }
        Ok((self.records, self.bytes))
    }

    fn write_line(&mut self, key: &[u8], value: &[u8]) -> std::io::Result<usize> {
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self.writer.insert(BufWriter::with_capacity(
                OUTPUT_BUFFER,
                File::create(&self.path)?,
            )),
        };
        let mut written = value.len() + self.terminator.len();
        if let Some(separator) = &self.separator {
            writer.write_all(key)?;
            writer.write_all(separator)?;
            written += key.len() + separator.len();
        }
        writer.write_all(value)?;
        writer.write_all(self.terminator)?;
        let in_file = self.bytes + written as u64 - writer.buffer().len() as u64;
        if in_file - self.written_back >= WRITEBACK_STEP {
            // Start writing the pages back now, while the task goes on, so that the fsync at
            // commit has little left to wait for. Only a hint: errors do not matter here.
            let _ = nix::fcntl::posix_fadvise(
                writer.get_ref(),
                self.written_back as i64,
                (in_file - self.written_back) as i64,
                nix::fcntl::PosixFadviseAdvice::POSIX_FADV_DONTNEED,
            );
            self.written_back = in_file;
        }
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
