//! Part files, as Hadoop's `TextOutputFormat` writes them (or, for fixed-length records, its
//! `TeraOutputFormat`).

use std::io::Write;
use std::path::PathBuf;

use sluice_io::{CompressedWriter, DirectWriter, IoError, OutputCodec, OutputCommitter};

use sluice_api::{Emit, ExecError, OutputFormat};

/// The file under a part file: written directly, or through a compressor (the plain path
/// stays free of any compression layer).
enum PartWriter {
    Plain(DirectWriter),
    Compressed(CompressedWriter<DirectWriter>),
}

impl PartWriter {
    fn create(path: &std::path::Path, chunk: usize, codec: OutputCodec) -> std::io::Result<Self> {
        let file = DirectWriter::create_with(path, chunk)?;
        Ok(match codec {
            OutputCodec::None => PartWriter::Plain(file),
            codec => PartWriter::Compressed(CompressedWriter::new(codec, file)?),
        })
    }

    fn finish(self) -> std::io::Result<u64> {
        match self {
            PartWriter::Plain(file) => file.finish(),
            PartWriter::Compressed(writer) => writer.finish()?.finish(),
        }
    }
}

/// One part file being written, past the page cache ([`DirectWriter`]): a job's output is
/// usually far larger than what is worth caching, and the cache's copy of every byte costs more
/// than formatting it.
pub(crate) struct TextOutput {
    /// `None` until the first record when the output is lazy.
    writer: Option<PartWriter>,
    path: PathBuf,
    /// Chunk size of the writer, for a lazy output's writer created later.
    chunk: usize,
    /// How the file is compressed.
    codec: OutputCodec,
    /// Between key and value; `None` writes the value only.
    separator: Option<Vec<u8>>,
    /// After each record (a line end, or nothing for raw records).
    terminator: &'static [u8],
    pub(crate) records: u64,
    pub(crate) bytes: u64,
}

impl TextOutput {
    /// A part file `name` in the committer's temporary directory, with the extension of
    /// `codec` (Hadoop's `part-00000.gz`). A `lazy` output creates its file only when the first
    /// record arrives (Hadoop's `-lazyOutput`); otherwise the file is created now, so that a
    /// task without output still leaves an empty part file (compressed, it holds the codec's
    /// empty stream, as Hadoop's does). The writer holds two chunks of `chunk` bytes.
    pub(crate) fn create(
        committer: &OutputCommitter,
        name: &str,
        format: &OutputFormat,
        codec: OutputCodec,
        lazy: bool,
        chunk: usize,
    ) -> Result<TextOutput, ExecError> {
        let name = format!("{name}{}", codec.extension());
        // A previous attempt of the same task may have left the file: start over.
        committer.remove_file(&name)?;
        let path = committer.temp_dir().join(&name);
        let writer = if lazy {
            None
        } else {
            Some(
                PartWriter::create(&path, chunk, codec).map_err(|source| IoError::Write {
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
            codec,
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

    /// Flushes the file; returns (records, bytes) written. The bytes are those of the file:
    /// for a compressed one, its compressed size (Hadoop's `Bytes Written` counts what reaches
    /// the file system).
    pub(crate) fn finish(mut self) -> Result<(u64, u64), ExecError> {
        let compressed = self.codec != OutputCodec::None;
        if let Some(writer) = self.writer.take() {
            match writer.finish() {
                Ok(file_bytes) if compressed => self.bytes = file_bytes,
                Ok(_) => {}
                Err(e) => return Err(self.write_error(e)),
            }
        }
        Ok((self.records, self.bytes))
    }

    fn write_line(&mut self, key: &[u8], value: &[u8]) -> std::io::Result<usize> {
        let writer = match &mut self.writer {
            Some(writer) => writer,
            None => self
                .writer
                .insert(PartWriter::create(&self.path, self.chunk, self.codec)?),
        };
        // One branch per record; each arm is the writer's own monomorphic code.
        let (separator, terminator) = (self.separator.as_deref(), self.terminator);
        match writer {
            PartWriter::Plain(w) => put_line(w, key, separator, value, terminator),
            PartWriter::Compressed(w) => put_line(w, key, separator, value, terminator),
        }
    }
}

/// Writes one record; returns its length in (uncompressed) bytes.
#[inline(always)]
fn put_line<W: Write>(
    writer: &mut W,
    key: &[u8],
    separator: Option<&[u8]>,
    value: &[u8],
    terminator: &[u8],
) -> std::io::Result<usize> {
    let mut written = value.len() + terminator.len();
    if let Some(separator) = separator {
        writer.write_all(key)?;
        writer.write_all(separator)?;
        written += key.len() + separator.len();
    }
    writer.write_all(value)?;
    writer.write_all(terminator)?;
    Ok(written)
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
