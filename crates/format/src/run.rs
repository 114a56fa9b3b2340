//! Sorted runs: records packed into blocks.
//!
//! The writer never splits a record across blocks, so the reader can hand out keys and values
//! as slices of the current decoded block: a k-way merge looks at the heads of many runs without
//! copying a byte. Neither side allocates per record; both reuse one buffer per role.

use std::io::{Read, Write};

use crate::block::{BlockReader, BlockWriter, MAX_BLOCK_LEN, RETAINED_BUFFER};
use crate::record;
use crate::{Codec, FormatError};

/// Packs records into blocks of about `block_size` raw bytes and writes them with a [`crate::BlockWriter`].
///
/// After an error the run is incomplete and the writer should be dropped.
pub struct RunWriter<W: Write> {
    blocks: BlockWriter<W>,
    block_size: usize,
    /// Encoded records of the block being filled.
    pending: Vec<u8>,
    records: u64,
}

impl<W: Write> RunWriter<W> {
    /// A writer that flushes a block whenever adding the next record would exceed `block_size`
    /// (a record larger than `block_size` gets a block of its own). `name` is used in errors.
    ///
    /// `block_size` counts encoded (uncompressed) record bytes, length prefixes included. A
    /// `block_size` of 0 puts every record in its own block.
    pub fn new(inner: W, codec: Codec, block_size: usize, name: impl Into<String>) -> Self {
        RunWriter {
            blocks: BlockWriter::new(inner, codec, name),
            block_size,
            pending: Vec::new(),
            records: 0,
        }
    }

    /// Appends one record.
    ///
    /// # Errors
    /// I/O and codec errors of the block writer; [`FormatError::Corrupt`] if the encoded record
    /// would exceed [`MAX_BLOCK_LEN`] (1 GiB), which no block can hold.
    pub fn write_record(&mut self, key: &[u8], value: &[u8]) -> Result<(), FormatError> {
        let len = record::encoded_len(key.len(), value.len());
        if len > MAX_BLOCK_LEN {
            return Err(FormatError::Corrupt {
                source_name: self.blocks.name().to_string(),
                offset: self.position(),
                detail: format!(
                    "record of {len} bytes (key {}, value {}) exceeds the maximum block length {MAX_BLOCK_LEN}",
                    key.len(),
                    value.len()
                ),
            });
        }
        if !self.pending.is_empty() && self.pending.len() + len > self.block_size {
            self.flush_block()?;
        }
        record::encode(&mut self.pending, key, value)?;
        self.records += 1;
        Ok(())
    }

    /// Writes out the partially filled block, so that the next record starts a new block and
    /// [`RunWriter::position`] marks a segment boundary.
    ///
    /// Does nothing if no record is pending.
    ///
    /// # Errors
    /// I/O and codec errors.
    pub fn finish_segment(&mut self) -> Result<(), FormatError> {
        self.flush_block()
    }

    /// Bytes written to the inner writer so far (call after `finish_segment` for a boundary).
    ///
    /// Records still pending in the current block are not counted.
    pub fn position(&self) -> u64 {
        self.blocks.bytes_written()
    }

    /// Encoded (uncompressed) record bytes written to the inner writer so far: the sum of the
    /// raw lengths of the blocks behind [`RunWriter::position`]. Kept per block, not per record.
    pub fn raw_position(&self) -> u64 {
        self.blocks.raw_bytes_written()
    }

    /// The most bytes this writer's buffers hold until the block being filled is written: that
    /// block, and the block writer's buffer once it has compressed it (see
    /// [`BlockWriter::buffered_bytes_with`](crate::BlockWriter::buffered_bytes_with)).
    pub fn buffered_bytes(&self) -> usize {
        self.pending
            .capacity()
            .saturating_add(self.blocks.buffered_bytes_with(self.pending.len()))
    }

    /// Records written so far.
    ///
    /// Counts every record accepted by [`RunWriter::write_record`], including those still
    /// pending in the current block.
    pub fn records_written(&self) -> u64 {
        self.records
    }

    /// Flushes the last block and gives the inner writer back (not flushed itself).
    ///
    /// # Errors
    /// I/O and codec errors.
    pub fn into_inner(mut self) -> Result<W, FormatError> {
        self.flush_block()?;
        Ok(self.blocks.into_inner())
    }

    /// Writes the pending records as one block (nothing if there are none).
    fn flush_block(&mut self) -> Result<(), FormatError> {
        // `write_block` writes nothing for an empty payload.
        let result = self.blocks.write_block(&self.pending);
        self.pending.clear();
        if self.pending.capacity() > RETAINED_BUFFER.max(self.block_size.saturating_mul(2)) {
            // A huge record had a block of its own: do not keep its memory for the others.
            self.pending = Vec::new();
        }
        result.map(drop)
    }
}

/// Where the reader stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading; the current record (if any) is valid.
    Reading,
    /// The stream ended cleanly.
    Ended,
    /// An error was returned; the position is unknown, so nothing more is read.
    Failed,
}

/// A cursor over the records of a run written by [`RunWriter`].
///
/// ```text
/// while reader.advance()? { use(reader.key(), reader.value()) }
/// ```
///
/// The run ends where the underlying reader ends. A run truncated exactly at a block boundary
/// therefore reads as a shorter valid run: callers that know the run's length (the spill layer
/// records segment lengths) should check [`RunReader::offset`] against it at the end. After an
/// error, `advance` keeps returning errors and `key`/`value` are empty.
pub struct RunReader<R: Read> {
    blocks: BlockReader<R>,
    state: State,
    /// Length of the current block (0 when there is none).
    block_len: usize,
    /// Position of the next record in the current block.
    next: usize,
    /// The current record, as positions in the current block.
    key_start: usize,
    key_len: usize,
    value_len: usize,
}

impl<R: Read> RunReader<R> {
    /// A reader over `inner`; `name` and `start_offset` as for [`crate::BlockReader::new`].
    pub fn new(inner: R, name: impl Into<String>, start_offset: u64) -> Self {
        RunReader {
            blocks: BlockReader::new(inner, name, start_offset),
            state: State::Reading,
            block_len: 0,
            next: 0,
            key_start: 0,
            key_len: 0,
            value_len: 0,
        }
    }

    /// Moves to the next record; `false` at the end of the run.
    ///
    /// Empty blocks are skipped. Once `false` has been returned, further calls return `false`
    /// without reading.
    ///
    /// # Errors
    /// Any [`FormatError`] of the blocks or records. A record that does not decode inside a block
    /// whose checksum was valid is reported as [`FormatError::Corrupt`] with this run's name and
    /// the block's offset.
    #[inline]
    pub fn advance(&mut self) -> Result<bool, FormatError> {
        if self.next < self.block_len {
            return self.decode_next().map(|()| true);
        }
        self.advance_to_next_block()
    }

    /// Slow path of [`RunReader::advance`]: the current block is exhausted.
    fn advance_to_next_block(&mut self) -> Result<bool, FormatError> {
        self.clear_current();
        loop {
            match self.state {
                State::Reading => {}
                State::Ended => return Ok(false),
                State::Failed => {
                    return Err(FormatError::Corrupt {
                        source_name: self.name_for_error(),
                        offset: self.blocks.block_offset(),
                        detail: "run reader used after an earlier error".to_string(),
                    })
                }
            }
            match self.blocks.next_block() {
                Ok(Some(block)) => {
                    self.block_len = block.len();
                    self.next = 0;
                    if self.block_len > 0 {
                        return self.decode_next().map(|()| true);
                    }
                }
                Ok(None) => self.state = State::Ended,
                Err(e) => {
                    self.state = State::Failed;
                    return Err(e);
                }
            }
        }
    }

    /// Decodes the record at `next` in the current block and makes it current.
    #[inline]
    fn decode_next(&mut self) -> Result<(), FormatError> {
        match record::decode(self.blocks.current_block(), self.next) {
            Ok(span) => {
                self.key_start = span.key_start;
                self.key_len = span.key_len;
                self.value_len = span.value_len;
                self.next = span.next;
                Ok(())
            }
            Err(e) => {
                let pos = self.next;
                self.clear_current();
                self.state = State::Failed;
                Err(self.record_error(pos, e))
            }
        }
    }

    /// Forgets the current record and block.
    fn clear_current(&mut self) {
        self.block_len = 0;
        self.next = 0;
        self.key_start = 0;
        self.key_len = 0;
        self.value_len = 0;
    }

    /// Rewrites a record decoding error to name this run and the block it is in.
    fn record_error(&self, pos: usize, error: FormatError) -> FormatError {
        let detail = match error {
            FormatError::Corrupt { detail, .. } => detail,
            other => other.to_string(),
        };
        FormatError::Corrupt {
            source_name: self.name_for_error(),
            offset: self.blocks.block_offset(),
            detail: format!("bad record at byte {pos} of the decoded block: {detail}"),
        }
    }

    fn name_for_error(&self) -> String {
        self.blocks.name().to_string()
    }

    /// Bytes this reader's block buffers hold (see
    /// [`BlockReader::buffered_bytes`](crate::BlockReader::buffered_bytes)).
    pub fn buffered_bytes(&self) -> usize {
        self.blocks.buffered_bytes()
    }

    /// Tells `watch` what the block buffers hold around every block read from now on (see
    /// [`BlockReader::watch_buffers`](crate::BlockReader::watch_buffers)).
    pub fn watch_buffers(&mut self, watch: Box<dyn crate::BufferWatch>) {
        self.blocks.watch_buffers(watch);
    }

    /// Absolute offset just past the last block read; at the end of the run, where it ended.
    /// See [`crate::BlockReader::offset`].
    pub fn offset(&self) -> u64 {
        self.blocks.offset()
    }

    /// Key of the current record (empty before the first `advance` or after the end).
    #[inline]
    pub fn key(&self) -> &[u8] {
        // In bounds: `decode` checked the span against this block, and `clear_current` zeroes
        // the span whenever the block changes.
        &self.blocks.current_block()[self.key_start..self.key_start + self.key_len]
    }

    /// Value of the current record.
    #[inline]
    pub fn value(&self) -> &[u8] {
        let start = self.key_start + self.key_len;
        &self.blocks.current_block()[start..start + self.value_len]
    }
}
