use std::io::{Read, Write};

use crate::{Codec, FormatError};

/// Bytes in a block header: codec id (1), reserved zeros (3), stored length (u32 LE),
/// raw length (u32 LE), CRC32C (u32 LE) over the first 12 header bytes followed by the stored bytes.
pub const BLOCK_HEADER_LEN: usize = 16;

/// Largest raw (uncompressed) block the reader accepts. Guards against allocating gigabytes
/// because a corrupt header claims so.
pub const MAX_BLOCK_LEN: usize = 1 << 30;

/// Writes a stream of checksummed, optionally compressed blocks.
pub struct BlockWriter<W: Write> {
    inner: W,
    codec: Codec,
    _todo: (),
}

impl<W: Write> BlockWriter<W> {
    /// A writer that compresses every block with `codec`. `name` is used in error messages.
    pub fn new(inner: W, codec: Codec, name: impl Into<String>) -> Self {
        let _ = name.into();
        BlockWriter { inner, codec, _todo: () }
    }

    /// Compresses `payload`, writes header and stored bytes, and returns how many bytes went to
    /// the inner writer. An empty payload writes nothing and returns 0.
    ///
    /// # Errors
    /// I/O or codec failures; [`FormatError::Corrupt`] if `payload` exceeds [`MAX_BLOCK_LEN`].
    pub fn write_block(&mut self, payload: &[u8]) -> Result<u64, FormatError> {
        todo!("{} {:?}", payload.len(), self.codec)
    }

    /// Total bytes written to the inner writer so far.
    pub fn bytes_written(&self) -> u64 {
        todo!()
    }

    /// Mutable access to the inner writer (e.g. to flush it).
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Gives the inner writer back.
    pub fn into_inner(self) -> W {
        self.inner
    }
}

/// Reads the blocks written by [`BlockWriter`], verifying each checksum.
pub struct BlockReader<R: Read> {
    inner: R,
    _todo: (),
}

impl<R: Read> BlockReader<R> {
    /// A reader over `inner`. `name` names the source in errors; `start_offset` is the position of
    /// `inner`'s first byte within that source, so reported offsets are absolute.
    pub fn new(inner: R, name: impl Into<String>, start_offset: u64) -> Self {
        let _ = (name.into(), start_offset);
        BlockReader { inner, _todo: () }
    }

    /// Reads, verifies and decompresses the next block. Returns `Ok(None)` at a clean end of the
    /// stream (no byte of a further header).
    ///
    /// # Errors
    /// [`FormatError::ChecksumMismatch`], [`FormatError::Corrupt`] for a truncated or impossible
    /// block, I/O and codec errors.
    pub fn next_block(&mut self) -> Result<Option<&[u8]>, FormatError> {
        let _ = &mut self.inner;
        todo!()
    }
}
