use std::io::{Read, Write};

use crate::{Codec, FormatError};

/// Packs records into blocks of about `block_size` raw bytes and writes them with a [`crate::BlockWriter`].
pub struct RunWriter<W: Write> {
    inner: W,
    _todo: (Codec, usize),
}

impl<W: Write> RunWriter<W> {
    /// A writer that flushes a block whenever adding the next record would exceed `block_size`
    /// (a record larger than `block_size` gets a block of its own). `name` is used in errors.
    pub fn new(inner: W, codec: Codec, block_size: usize, name: impl Into<String>) -> Self {
        let _ = name.into();
        RunWriter { inner, _todo: (codec, block_size) }
    }

    /// Appends one record.
    ///
    /// # Errors
    /// I/O and codec errors of the block writer.
    pub fn write_record(&mut self, key: &[u8], value: &[u8]) -> Result<(), FormatError> {
        todo!("{} {}", key.len(), value.len())
    }

    /// Writes out the partially filled block, so that the next record starts a new block and
    /// [`RunWriter::position`] marks a segment boundary.
    ///
    /// # Errors
    /// I/O and codec errors.
    pub fn finish_segment(&mut self) -> Result<(), FormatError> {
        todo!()
    }

    /// Bytes written to the inner writer so far (call after `finish_segment` for a boundary).
    pub fn position(&self) -> u64 {
        todo!()
    }

    /// Records written so far.
    pub fn records_written(&self) -> u64 {
        todo!()
    }

    /// Flushes the last block and gives the inner writer back (not flushed itself).
    ///
    /// # Errors
    /// I/O and codec errors.
    pub fn into_inner(self) -> Result<W, FormatError> {
        Ok(self.inner)
    }
}

/// A cursor over the records of a run written by [`RunWriter`].
///
/// ```text
/// while reader.advance()? { use(reader.key(), reader.value()) }
/// ```
pub struct RunReader<R: Read> {
    inner: R,
}

impl<R: Read> RunReader<R> {
    /// A reader over `inner`; `name` and `start_offset` as for [`crate::BlockReader::new`].
    pub fn new(inner: R, name: impl Into<String>, start_offset: u64) -> Self {
        let _ = (name.into(), start_offset);
        RunReader { inner }
    }

    /// Moves to the next record; `false` at the end of the run.
    ///
    /// # Errors
    /// Any [`FormatError`] of the blocks or records.
    pub fn advance(&mut self) -> Result<bool, FormatError> {
        let _ = &mut self.inner;
        todo!()
    }

    /// Key of the current record (empty before the first `advance` or after the end).
    pub fn key(&self) -> &[u8] {
        todo!()
    }

    /// Value of the current record.
    pub fn value(&self) -> &[u8] {
        todo!()
    }
}
