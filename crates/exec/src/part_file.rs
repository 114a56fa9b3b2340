//! Part files, as Hadoop's `TextOutputFormat` writes them (or, for fixed-length records, its
//! `TeraOutputFormat`; or its `SequenceFileOutputFormat`), through the job's output committer.

use std::io::Write;
use std::path::PathBuf;

use sluice_io::seqfile::{SeqFileWriter, SeqWriteOptions};
use sluice_io::{CompressedWriter, IoError, JobCommitter, OutputCodec, PartAttempt, StorageWriter};

use sluice_api::{Emit, ExecError, OutputFormat, SequenceOutput};

/// The file under a part file: written directly, through a compressor (the plain path stays
/// free of any compression layer), or as a SequenceFile.
enum PartWriter {
    Plain(StorageWriter),
    Compressed(CompressedWriter<StorageWriter>),
    Sequence(Box<SequenceWriter>),
}

/// A SequenceFile part file and the buffers its records are serialised into.
struct SequenceWriter {
    writer: SeqFileWriter<StorageWriter>,
    format: SequenceOutput,
    key: Vec<u8>,
    value: Vec<u8>,
}

impl SequenceWriter {
    /// Appends one record; returns the bytes of its serialised key and value.
    fn append(&mut self, key: &[u8], value: &[u8]) -> std::io::Result<usize> {
        self.key.clear();
        self.value.clear();
        self.format
            .key
            .put(key, &mut self.key)
            .and_then(|()| self.format.value.put(value, &mut self.value))
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        self.writer.append(&self.key, &self.value)?;
        Ok(self.key.len() + self.value.len())
    }
}

impl PartWriter {
    fn create(file: StorageWriter, codec: OutputCodec, format: &Records) -> std::io::Result<Self> {
        if let Records::Sequence(format) = format {
            let options = SeqWriteOptions {
                compression: format.compression,
                codec: Some(format.codec),
                ..SeqWriteOptions::new(format.key_class.clone(), format.value_class.clone())
            };
            return Ok(PartWriter::Sequence(Box::new(SequenceWriter {
                writer: SeqFileWriter::new(file, options)?,
                format: format.clone(),
                key: Vec::new(),
                value: Vec::new(),
            })));
        }
        Ok(match codec {
            OutputCodec::None => PartWriter::Plain(file),
            codec => PartWriter::Compressed(CompressedWriter::new(codec, file)?),
        })
    }

    fn finish(self) -> std::io::Result<u64> {
        match self {
            PartWriter::Plain(file) => file.finish(),
            PartWriter::Compressed(writer) => writer.finish()?.finish(),
            PartWriter::Sequence(writer) => writer.writer.finish()?.finish(),
        }
    }
}

/// How records become the bytes of a part file.
#[derive(Debug, Clone)]
enum Records {
    /// Lines (or raw records) of a text file.
    Lines(LineFormat),
    /// Records of a SequenceFile.
    Sequence(SequenceOutput),
}

/// One part file being written by one task attempt. On local disk it is written past the page
/// cache (the committer's writer is a `DirectWriter`): a job's output is usually far larger
/// than what is worth caching, and the cache's copy of every byte costs more than formatting
/// it.
pub(crate) struct TextOutput<'c> {
    committer: &'c dyn JobCommitter,
    /// The part file's name, with the codec's extension.
    name: String,
    attempt: u32,
    /// `None` until the first record when the output is lazy.
    writer: Option<PartWriter>,
    /// The file as messages name it.
    path: PathBuf,
    /// Chunk size of the writer, for a lazy output's writer created later.
    chunk: usize,
    /// How the file is compressed (a SequenceFile compresses inside, as its format says).
    codec: OutputCodec,
    /// How a record becomes bytes of the file.
    format: Records,
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    /// The records go nowhere ([`OutputFormat::Discard`]): none of their bytes count as
    /// written, as Hadoop's `Bytes Written` is 0 for `NullOutputFormat`.
    discard: bool,
}

impl<'c> TextOutput<'c> {
    /// Part file `name` of task attempt `attempt`, with the extension of `codec` (Hadoop's
    /// `part-00000.gz`; a SequenceFile's name has none, and `codec` is ignored for it: the
    /// format says how it is compressed), made by `committer`. A `lazy` output creates its file only when the
    /// first record arrives (Hadoop's `-lazyOutput`); otherwise the file is created now, so
    /// that a task without output still leaves an empty part file (compressed, it holds the
    /// codec's empty stream, as Hadoop's does). The writer holds two chunks of `chunk` bytes.
    pub(crate) fn create(
        committer: &'c dyn JobCommitter,
        name: &str,
        attempt: usize,
        format: &OutputFormat,
        codec: OutputCodec,
        lazy: bool,
        chunk: usize,
    ) -> Result<TextOutput<'c>, ExecError> {
        let (records, codec) = match format {
            OutputFormat::SequenceFile(sequence) => {
                (Records::Sequence(sequence.clone()), OutputCodec::None)
            }
            OutputFormat::Discard => (Records::Lines(LineFormat::of(format)), OutputCodec::None),
            lines => (Records::Lines(LineFormat::of(lines)), codec),
        };
        let name = format!("{name}{}", codec.extension());
        let path = committer.output().join(&name).error_path();
        let attempt = u32::try_from(attempt)
            .map_err(|_| ExecError::Config(format!("attempt {attempt} of {name}")))?;
        let mut output = TextOutput {
            committer,
            name,
            attempt,
            writer: None,
            path,
            chunk,
            codec,
            format: records,
            records: 0,
            bytes: 0,
            discard: *format == OutputFormat::Discard,
        };
        if !lazy {
            output.writer = Some(output.open()?);
        }
        Ok(output)
    }

    /// Creates the attempt's file.
    fn open(&self) -> Result<PartWriter, ExecError> {
        let part = PartAttempt::new(&self.name, self.attempt);
        let file = self.committer.create_part(part, self.chunk)?;
        PartWriter::create(file, self.codec, &self.format).map_err(|e| self.write_error(e))
    }

    fn write_error(&self, source: std::io::Error) -> ExecError {
        ExecError::Io(IoError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// Flushes the file; returns (records, bytes) written. The bytes are those of the file:
    /// for a compressed one or a SequenceFile, its size (Hadoop's `Bytes Written` counts what
    /// reaches the file system).
    pub(crate) fn finish(mut self) -> Result<(u64, u64), ExecError> {
        let compressed =
            self.codec != OutputCodec::None || matches!(self.format, Records::Sequence(_));
        if let Some(writer) = self.writer.take() {
            match writer.finish() {
                Ok(file_bytes) if compressed => self.bytes = file_bytes,
                Ok(_) => {}
                Err(e) => return Err(self.write_error(e)),
            }
            let part = PartAttempt::new(&self.name, self.attempt);
            self.committer.commit_task(part)?;
        }
        if self.discard {
            self.bytes = 0;
        }
        Ok((self.records, self.bytes))
    }

    fn write_line(&mut self, key: &[u8], value: &[u8]) -> std::io::Result<usize> {
        let Some(writer) = &mut self.writer else {
            return Err(std::io::Error::other(
                "a part file written before it was opened",
            ));
        };
        // One branch per record; each arm is the writer's own monomorphic code.
        match (writer, &self.format) {
            (PartWriter::Plain(w), Records::Lines(format)) => format.put(w, key, value),
            (PartWriter::Compressed(w), Records::Lines(format)) => format.put(w, key, value),
            (PartWriter::Sequence(w), _) => w.append(key, value),
            (_, Records::Sequence(_)) => Err(std::io::Error::other(
                "a SequenceFile record written to a text file",
            )),
        }
    }

    /// How records become bytes of this file, for output formatted elsewhere and appended
    /// with [`TextOutput::append`]; `None` for a SequenceFile, whose records only its own
    /// writer lays out.
    pub(crate) fn format(&self) -> Option<&LineFormat> {
        match &self.format {
            Records::Lines(format) => Some(format),
            Records::Sequence(_) => None,
        }
    }

    /// Appends `bytes`, records formatted by [`TextOutput::format`] elsewhere, to the file
    /// (creating a lazy output's file if it has none yet and `bytes` is not empty).
    pub(crate) fn append(&mut self, bytes: &[u8]) -> Result<(), ExecError> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.writer.is_none() {
            self.writer = Some(self.open()?);
        }
        let result = match &mut self.writer {
            Some(PartWriter::Plain(w)) => w.write_all(bytes),
            Some(PartWriter::Compressed(w)) => w.write_all(bytes),
            Some(PartWriter::Sequence(_)) => Err(std::io::Error::other(
                "formatted bytes appended to a SequenceFile",
            )),
            None => Ok(()),
        };
        result.map_err(|e| self.write_error(e))
    }

    /// Counts `records` records of `bytes` bytes appended with [`TextOutput::append`].
    pub(crate) fn count_appended(&mut self, records: u64, bytes: u64) {
        self.records += records;
        self.bytes += bytes;
    }
}

/// How a record becomes bytes of a part file.
#[derive(Debug, Clone)]
pub(crate) struct LineFormat {
    /// Between key and value; `None` writes the value only.
    separator: Option<Vec<u8>>,
    /// After each record (a line end, or nothing for raw records).
    terminator: &'static [u8],
}

impl LineFormat {
    /// The records of `format` (a text format).
    fn of(format: &OutputFormat) -> LineFormat {
        let separator = match format {
            OutputFormat::KeyValue => Some(b"\t".to_vec()),
            OutputFormat::KeyValueWith(separator) => Some(separator.clone()),
            OutputFormat::ValueOnly => None,
            OutputFormat::Raw | OutputFormat::SequenceFile(_) | OutputFormat::Discard => {
                Some(Vec::new())
            }
        };
        let terminator: &[u8] = if *format == OutputFormat::Raw {
            b""
        } else {
            b"\n"
        };
        LineFormat {
            separator,
            terminator,
        }
    }

    /// Bytes [`LineFormat::put`] writes for this record.
    pub(crate) fn len(&self, key: &[u8], value: &[u8]) -> usize {
        let keyed = self
            .separator
            .as_ref()
            .map_or(0, |separator| key.len() + separator.len());
        keyed + value.len() + self.terminator.len()
    }

    /// Writes one record; returns its length in (uncompressed) bytes.
    #[inline(always)]
    pub(crate) fn put<W: Write>(
        &self,
        writer: &mut W,
        key: &[u8],
        value: &[u8],
    ) -> std::io::Result<usize> {
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

impl Emit for TextOutput<'_> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        if self.writer.is_none() {
            // A lazy output's first record.
            self.writer = Some(self.open()?);
        }
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
