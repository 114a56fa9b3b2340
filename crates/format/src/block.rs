//! Checksummed, optionally compressed blocks: the unit of I/O and of integrity checking.
//!
//! # Layout
//!
//! ```text
//! byte 0       codec id of the stored bytes (0 none, 1 lz4, 2 zstd)
//! bytes 1..4   reserved, zero
//! bytes 4..8   stored_len, u32 LE: bytes following the header
//! bytes 8..12  raw_len, u32 LE: bytes after decompression
//! bytes 12..16 CRC32C over header bytes 0..12 followed by the stored bytes
//! ```
//!
//! The checksum covers the header fields as well as the data, so a flipped bit in a length or
//! in the codec id is detected like one in the payload. It is verified *before* decompressing:
//! decompressors must never see unverified input, and a mismatch should be reported as such,
//! not as whatever the decompressor makes of garbage.
//!
//! LZ4 blocks use the raw LZ4 block format (no frame: `raw_len` in our header is all the
//! decoder needs); zstd blocks are single zstd frames. A block whose compressed form is not
//! smaller than the payload is stored with codec id 0, whatever the writer's codec, so readers
//! skip decompression for incompressible data.
//!
//! # End of stream
//!
//! A stream is simply blocks back to back; there is no trailer. Zero bytes where a header would
//! start is a clean end, 1..=15 bytes is a truncated header. Consequently a stream cut exactly at
//! a block boundary reads as a shorter, valid stream: callers that must detect that keep the
//! expected length elsewhere (the spill layer records segment lengths) and compare it with
//! [`BlockReader::offset`] at the end.
//!
//! # Buffers
//!
//! Writer and reader each keep their scratch buffers (and LZ4 hash table / zstd contexts) for
//! their whole life: after the largest block has been seen, no block allocates.

use std::io::{self, Read, Write};

use lz4_flex::block::CompressTable;

use crate::{Codec, FormatError};

/// Bytes in a block header: codec id (1), reserved zeros (3), stored length (u32 LE),
/// raw length (u32 LE), CRC32C (u32 LE) over the first 12 header bytes followed by the stored bytes.
pub const BLOCK_HEADER_LEN: usize = 16;

/// Largest raw (uncompressed) block the reader accepts. Guards against allocating gigabytes
/// because a corrupt header claims so.
pub const MAX_BLOCK_LEN: usize = 1 << 30;

/// Bytes of the header covered by the checksum (everything before the checksum itself).
const CHECKED_HEADER_LEN: usize = 12;

/// When reading a block body of a length taken from an unverified header, the body buffer grows
/// by at most this much (or by doubling) before the bytes are actually there. A corrupt length
/// on a short stream thus costs a failed read, not a gigabyte allocation.
const READ_GROW_STEP: usize = 1 << 20;

/// The fields of a block header.
#[derive(Debug, Clone, Copy)]
struct Header {
    codec_id: u8,
    reserved: [u8; 3],
    stored_len: u32,
    raw_len: u32,
    crc: u32,
}

impl Header {
    /// Header bytes, with the checksum of these fields followed by `stored`.
    fn encode(codec_id: u8, stored: &[u8], raw_len: u32) -> [u8; BLOCK_HEADER_LEN] {
        let mut bytes = [0u8; BLOCK_HEADER_LEN];
        bytes[0] = codec_id;
        // `stored` is never longer than the payload, which was checked against MAX_BLOCK_LEN.
        bytes[4..8].copy_from_slice(&(stored.len() as u32).to_le_bytes());
        bytes[8..12].copy_from_slice(&raw_len.to_le_bytes());
        let crc = block_crc(&bytes, stored);
        bytes[12..16].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    /// Parses header bytes without judging them.
    fn decode(bytes: &[u8; BLOCK_HEADER_LEN]) -> Header {
        let u32_at = |at: usize| {
            u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
        };
        Header {
            codec_id: bytes[0],
            reserved: [bytes[1], bytes[2], bytes[3]],
            stored_len: u32_at(4),
            raw_len: u32_at(8),
            crc: u32_at(12),
        }
    }

    /// Why these header bytes cannot start a valid block, if they cannot. Checked before reading
    /// the body, whose length comes from this header.
    fn check(&self) -> Result<Codec, String> {
        let codec = Codec::from_id(self.codec_id)
            .map_err(|_| format!("unknown codec id {} in block header", self.codec_id))?;
        if self.reserved != [0; 3] {
            return Err(format!(
                "nonzero reserved header bytes {:02x?}",
                self.reserved
            ));
        }
        for (what, len) in [("stored", self.stored_len), ("raw", self.raw_len)] {
            if len as usize > MAX_BLOCK_LEN {
                return Err(format!(
                    "{what} length {len} exceeds the maximum block length {MAX_BLOCK_LEN}"
                ));
            }
        }
        if codec == Codec::None && self.stored_len != self.raw_len {
            return Err(format!(
                "uncompressed block with stored length {} but raw length {}",
                self.stored_len, self.raw_len
            ));
        }
        Ok(codec)
    }
}

/// The checksum of a block: CRC32C of header bytes 0..12, then of the stored bytes.
fn block_crc(header: &[u8; BLOCK_HEADER_LEN], stored: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&header[..CHECKED_HEADER_LEN]), stored)
}

/// Size beyond which a reused buffer is not kept at its high-water mark: one block of a huge
/// record (a 100 MB line) must not keep its buffers for every later block.
pub(crate) const RETAINED_BUFFER: usize = 1 << 20;

/// Grows `buf` so that it holds at least `len` initialised bytes; shrinks it when it is far
/// larger than needed and than [`RETAINED_BUFFER`] (left so by an earlier huge block).
///
/// Buffers are used by slicing `..len`; keeping their length at the high-water mark means the
/// zero-filling of `resize` happens once, not for every block.
fn ensure_len(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        if len > RETAINED_BUFFER {
            // Exactly: a huge block's buffer is not doubled (and is counted as what it is).
            // Smaller ones grow as usual, so that blocks of varying size stop allocating.
            buf.reserve_exact(len - buf.len());
        }
        buf.resize(len, 0);
    } else {
        release_oversized(buf, len);
    }
}

/// Frees `buf` when it holds more than [`RETAINED_BUFFER`] and more than twice the `len` bytes
/// now needed: the memory of one huge block goes back once a normal one follows.
fn release_oversized(buf: &mut Vec<u8>, len: usize) {
    if buf.capacity() > RETAINED_BUFFER.max(len.saturating_mul(2)) {
        *buf = Vec::new();
        buf.resize(len, 0);
    }
}

/// Per-writer compression state, kept across blocks so steady-state blocks allocate nothing.
enum Compressor {
    None,
    /// LZ4 with its reusable hash table.
    Lz4(CompressTable),
    /// zstd; the context is created on the first block because creation can fail and
    /// [`BlockWriter::new`] cannot.
    Zstd {
        level: i32,
        context: Option<zstd::bulk::Compressor<'static>>,
    },
}

impl Compressor {
    fn new(codec: Codec) -> Self {
        match codec {
            Codec::None => Compressor::None,
            Codec::Lz4 => Compressor::Lz4(CompressTable::default()),
            Codec::Zstd { level } => Compressor::Zstd {
                level,
                context: None,
            },
        }
    }

    /// Compresses `payload` into `out` (grown as needed) and returns the compressed length, or
    /// `None` when the block should be stored uncompressed (codec none, or no gain).
    fn compress(&mut self, payload: &[u8], out: &mut Vec<u8>) -> Result<Option<usize>, String> {
        let len = match self {
            Compressor::None => return Ok(None),
            Compressor::Lz4(table) => {
                let bound = lz4_flex::block::get_maximum_output_size(payload.len());
                ensure_len(out, bound);
                lz4_flex::block::compress_into_with_table(payload, &mut out[..bound], table)
                    .map_err(|e| e.to_string())?
            }
            Compressor::Zstd { level, context } => {
                let context = match context {
                    Some(context) => context,
                    None => context
                        .insert(zstd::bulk::Compressor::new(*level).map_err(|e| e.to_string())?),
                };
                let bound = zstd::zstd_safe::compress_bound(payload.len());
                ensure_len(out, bound);
                context
                    .compress_to_buffer(payload, &mut out[..bound])
                    .map_err(|e| e.to_string())?
            }
        };
        Ok((len < payload.len()).then_some(len))
    }
}

/// Writes a stream of checksummed, optionally compressed blocks.
///
/// Each block is two `write_all` calls (header, stored bytes), so `inner` should be buffered
/// (e.g. a `BufWriter`) unless blocks are large. After an error the stream is in an unknown state
/// and the writer should be dropped.
pub struct BlockWriter<W: Write> {
    inner: W,
    codec: Codec,
    name: String,
    compressor: Compressor,
    /// Compressed bytes of the current block; reused for every block.
    compressed: Vec<u8>,
    bytes_written: u64,
    /// Payload bytes of the blocks written, before compression.
    raw_bytes_written: u64,
}

impl<W: Write> BlockWriter<W> {
    /// A writer that compresses every block with `codec`. `name` is used in error messages.
    pub fn new(inner: W, codec: Codec, name: impl Into<String>) -> Self {
        BlockWriter {
            inner,
            codec,
            name: name.into(),
            compressor: Compressor::new(codec),
            compressed: Vec::new(),
            bytes_written: 0,
            raw_bytes_written: 0,
        }
    }

    /// Compresses `payload`, writes header and stored bytes, and returns how many bytes went to
    /// the inner writer. An empty payload writes nothing and returns 0.
    ///
    /// If compression does not make the payload smaller, the block is stored uncompressed
    /// (codec id 0).
    ///
    /// # Errors
    /// I/O or codec failures; [`FormatError::Corrupt`] if `payload` exceeds [`MAX_BLOCK_LEN`].
    pub fn write_block(&mut self, payload: &[u8]) -> Result<u64, FormatError> {
        if payload.is_empty() {
            return Ok(0);
        }
        if payload.len() > MAX_BLOCK_LEN {
            return Err(FormatError::Corrupt {
                source_name: self.name.clone(),
                offset: self.bytes_written,
                detail: format!(
                    "block of {} bytes exceeds the maximum block length {MAX_BLOCK_LEN}",
                    payload.len()
                ),
            });
        }
        let compressed_len = self
            .compressor
            .compress(payload, &mut self.compressed)
            .map_err(|detail| FormatError::Codec {
                codec: self.codec.name(),
                source_name: self.name.clone(),
                offset: self.bytes_written,
                detail,
            })?;
        let (codec_id, stored) = match compressed_len {
            Some(len) => (self.codec.id(), &self.compressed[..len]),
            None => (Codec::None.id(), payload),
        };
        // Checked above: the payload length fits in u32.
        let header = Header::encode(codec_id, stored, payload.len() as u32);
        let written = (BLOCK_HEADER_LEN + stored.len()) as u64;
        self.inner
            .write_all(&header)
            .and_then(|()| self.inner.write_all(stored))
            .map_err(|error| FormatError::Io {
                source_name: self.name.clone(),
                error,
            })?;
        self.bytes_written += written;
        self.raw_bytes_written += payload.len() as u64;
        Ok(written)
    }

    /// The name given to [`BlockWriter::new`].
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Bytes this writer's reused buffer holds once a block of `payload_len` bytes has been
    /// compressed into it: its capacity, or the codec's bound for such a block if larger. What
    /// a huge block takes, and keeps held until a normal one lets it go, for callers that count
    /// memory.
    pub fn buffered_bytes_with(&self, payload_len: usize) -> usize {
        let bound = match self.compressor {
            Compressor::None => 0,
            Compressor::Lz4(_) => lz4_flex::block::get_maximum_output_size(payload_len),
            Compressor::Zstd { .. } => zstd::zstd_safe::compress_bound(payload_len),
        };
        self.compressed.capacity().max(bound)
    }

    /// Total bytes written to the inner writer so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Total payload bytes of the blocks written so far, as given to
    /// [`BlockWriter::write_block`] (before compression, without headers).
    pub fn raw_bytes_written(&self) -> u64 {
        self.raw_bytes_written
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

/// Which reader buffer holds the block last returned by [`BlockReader::next_block`].
#[derive(Debug, Clone, Copy)]
enum Current {
    /// Stored uncompressed: the first `len` bytes of `stored`.
    Stored(usize),
    /// Decompressed: the first `len` bytes of `raw`.
    Raw(usize),
}

/// Reads the blocks written by [`BlockWriter`], verifying each checksum.
///
/// A stream that ends exactly at a block boundary is indistinguishable from a complete one; see
/// [`BlockReader::offset`]. After an error, every further call returns an error: the position in
/// the stream is no longer known.
pub struct BlockReader<R: Read> {
    inner: R,
    name: String,
    /// Absolute offset of the next header.
    offset: u64,
    /// Absolute offset of the current block's header.
    block_offset: u64,
    /// Stored bytes of the current block; reused.
    stored: Vec<u8>,
    /// Decompressed bytes of the current block; reused.
    raw: Vec<u8>,
    current: Current,
    /// Created on the first zstd block.
    zstd: Option<zstd::bulk::Decompressor<'static>>,
    failed: bool,
    /// Told what the buffers are about to hold before each block grows them, and what they
    /// hold after it.
    watch: Option<Box<dyn BufferWatch>>,
}

/// Told how many bytes a reader's reused buffers hold: before a block grows them (what they
/// are about to hold) and after it (what they hold). A caller that counts memory sees a huge
/// record's block (a 100 MB line) before it is read, and lets it go once a normal block
/// follows.
pub trait BufferWatch: Send {
    /// The buffers hold, or are about to hold, `bytes` bytes.
    fn holding(&mut self, bytes: usize);
}

impl<R: Read> BlockReader<R> {
    /// A reader over `inner`. `name` names the source in errors; `start_offset` is the position of
    /// `inner`'s first byte within that source, so reported offsets are absolute.
    pub fn new(inner: R, name: impl Into<String>, start_offset: u64) -> Self {
        BlockReader {
            inner,
            name: name.into(),
            offset: start_offset,
            block_offset: start_offset,
            stored: Vec::new(),
            raw: Vec::new(),
            current: Current::Stored(0),
            zstd: None,
            failed: false,
            watch: None,
        }
    }

    /// Tells `watch` what the buffers hold around every block read from now on.
    pub fn watch_buffers(&mut self, watch: Box<dyn BufferWatch>) {
        self.watch = Some(watch);
    }

    /// Tells the watch, if any, that the buffers hold or are about to hold `bytes`.
    fn tell_watch(&mut self, bytes: usize) {
        if let Some(watch) = &mut self.watch {
            watch.holding(bytes);
        }
    }

    /// Reads, verifies and decompresses the next block. Returns `Ok(None)` at a clean end of the
    /// stream (no byte of a further header).
    ///
    /// Blocks with `raw_len` 0 are returned as empty slices (the writer never produces them).
    ///
    /// # Errors
    /// [`FormatError::ChecksumMismatch`], [`FormatError::Corrupt`] for a truncated or impossible
    /// block, I/O and codec errors. Anything wrong with the bytes themselves, including an
    /// unknown codec id and a block that fails to decompress despite a valid checksum, is
    /// `Corrupt`; [`FormatError::Codec`] only reports a decompressor that could not be created.
    /// Offsets are those of the block header.
    pub fn next_block(&mut self) -> Result<Option<&[u8]>, FormatError> {
        if self.failed {
            return Err(self.corrupt(self.block_offset, "block stream already failed".into()));
        }
        self.current = Current::Stored(0);
        self.block_offset = self.offset;
        let read = self.read_block();
        if self.watch.is_some() {
            self.tell_watch(self.buffered_bytes());
        }
        match read {
            Ok(Some(current)) => {
                self.current = current;
                Ok(Some(self.current_block()))
            }
            Ok(None) => Ok(None),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// Bytes this reader's reused buffers hold (their capacity): what a huge block keeps held
    /// until a normal one lets it go, for callers that count memory.
    pub fn buffered_bytes(&self) -> usize {
        self.stored.capacity().saturating_add(self.raw.capacity())
    }

    /// Absolute offset just past the last block read (`start_offset` before the first).
    ///
    /// At the end of a stream this is where the stream ended; compare it with the expected end to
    /// detect a stream truncated at a block boundary.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The block last returned by [`BlockReader::next_block`]; empty before the first, after the
    /// end and after an error.
    pub(crate) fn current_block(&self) -> &[u8] {
        match self.current {
            Current::Stored(len) => &self.stored[..len],
            Current::Raw(len) => &self.raw[..len],
        }
    }

    /// The source name given to [`BlockReader::new`].
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Absolute offset of the header of the block last returned (or being read).
    pub(crate) fn block_offset(&self) -> u64 {
        self.block_offset
    }

    /// Reads one block into the buffers and says where it is.
    fn read_block(&mut self) -> Result<Option<Current>, FormatError> {
        let mut header_bytes = [0u8; BLOCK_HEADER_LEN];
        match read_up_to(&mut self.inner, &mut header_bytes).map_err(|e| self.io(e))? {
            0 => return Ok(None),
            BLOCK_HEADER_LEN => {}
            n => {
                return Err(self.corrupt(
                    self.block_offset,
                    format!("truncated block header: {n} of {BLOCK_HEADER_LEN} bytes"),
                ))
            }
        }
        let header = Header::decode(&header_bytes);
        let codec = header
            .check()
            .map_err(|detail| self.corrupt(self.block_offset, detail))?;

        let stored_len = header.stored_len as usize;
        if self.watch.is_some() {
            // The length is not yet checked, but no larger than the largest block.
            let about = self.stored.capacity().max(stored_len);
            self.tell_watch(about.saturating_add(self.raw.capacity()));
        }
        read_exact_growing(&mut self.inner, &mut self.stored, stored_len).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                self.corrupt(
                    self.block_offset,
                    format!("truncated block: expected {stored_len} stored bytes"),
                )
            } else {
                self.io(e)
            }
        })?;
        let stored = &self.stored[..stored_len];

        let computed = block_crc(&header_bytes, stored);
        if computed != header.crc {
            return Err(FormatError::ChecksumMismatch {
                source_name: self.name.clone(),
                offset: self.block_offset,
                stored: header.crc,
                computed,
            });
        }
        self.offset += (BLOCK_HEADER_LEN + stored_len) as u64;

        let raw_len = header.raw_len as usize;
        if codec == Codec::None {
            // The block is used where it was read: a huge block's decompressed bytes need not
            // stay held for it.
            release_oversized(&mut self.raw, 0);
            return Ok(Some(Current::Stored(stored_len)));
        }
        if self.watch.is_some() {
            let about = self.raw.capacity().max(raw_len);
            self.tell_watch(self.stored.capacity().saturating_add(about));
        }
        self.decompress(codec, stored_len, raw_len)?;
        Ok(Some(Current::Raw(raw_len)))
    }

    /// Decompresses the first `stored_len` bytes of `stored` into `raw[..raw_len]`, which must be
    /// filled exactly.
    fn decompress(
        &mut self,
        codec: Codec,
        stored_len: usize,
        raw_len: usize,
    ) -> Result<(), FormatError> {
        plausible_raw_len(codec, &self.stored[..stored_len], raw_len)
            .map_err(|detail| self.corrupt(self.block_offset, detail))?;
        ensure_len(&mut self.raw, raw_len);
        let stored = &self.stored[..stored_len];
        let out = &mut self.raw[..raw_len];
        let result = match codec {
            // Not reached (stored blocks are returned in place), but correct if it were.
            Codec::None => {
                let n = stored.len().min(out.len());
                out[..n].copy_from_slice(&stored[..n]);
                Ok(stored.len())
            }
            Codec::Lz4 => lz4_flex::block::decompress_into(stored, out).map_err(|e| e.to_string()),
            Codec::Zstd { .. } => {
                let context = match &mut self.zstd {
                    Some(context) => context,
                    None => {
                        let context =
                            zstd::bulk::Decompressor::new().map_err(|e| FormatError::Codec {
                                codec: codec.name(),
                                source_name: self.name.clone(),
                                offset: self.block_offset,
                                detail: e.to_string(),
                            })?;
                        self.zstd.insert(context)
                    }
                };
                context
                    .decompress_to_buffer(stored, out)
                    .map_err(|e| e.to_string())
            }
        };
        match result {
            Ok(len) if len == raw_len => Ok(()),
            Ok(len) => Err(self.corrupt(
                self.block_offset,
                format!("block decompressed to {len} bytes, header says {raw_len}"),
            )),
            Err(detail) => Err(self.corrupt(
                self.block_offset,
                format!("{} decompression failed: {detail}", codec.name()),
            )),
        }
    }

    fn corrupt(&self, offset: u64, detail: String) -> FormatError {
        FormatError::Corrupt {
            source_name: self.name.clone(),
            offset,
            detail,
        }
    }

    fn io(&self, error: io::Error) -> FormatError {
        FormatError::Io {
            source_name: self.name.clone(),
            error,
        }
    }
}

/// Checks whole blocks as they are stored (e.g. a spill segment a server is about to ship)
/// without decompressing them: every header must be valid, every checksum must match and the
/// last block must end exactly at the end of `stored`. Returns the blocks' total raw length, for
/// the caller to compare with what it expects.
///
/// `name` and `start_offset` (the position of `stored[0]` in that source) are used in errors.
///
/// # Errors
/// [`FormatError::Corrupt`] for an impossible or truncated block, naming its header's offset;
/// [`FormatError::ChecksumMismatch`].
pub fn verify_blocks(stored: &[u8], name: &str, start_offset: u64) -> Result<u64, FormatError> {
    let mut at = 0;
    let mut raw_len = 0u64;
    while at < stored.len() {
        let offset = start_offset + at as u64;
        let corrupt = |detail: String| FormatError::Corrupt {
            source_name: name.to_string(),
            offset,
            detail,
        };
        let rest = &stored[at..];
        let Some((header_bytes, body)) = rest.split_first_chunk::<BLOCK_HEADER_LEN>() else {
            return Err(corrupt(format!(
                "truncated block header: {} of {BLOCK_HEADER_LEN} bytes",
                rest.len()
            )));
        };
        let header = Header::decode(header_bytes);
        header.check().map_err(corrupt)?;
        let stored_len = header.stored_len as usize;
        let Some(body) = body.get(..stored_len) else {
            return Err(corrupt(format!(
                "truncated block: expected {stored_len} stored bytes, {} left",
                body.len()
            )));
        };
        let computed = block_crc(header_bytes, body);
        if computed != header.crc {
            return Err(FormatError::ChecksumMismatch {
                source_name: name.to_string(),
                offset,
                stored: header.crc,
                computed,
            });
        }
        raw_len += u64::from(header.raw_len);
        at += BLOCK_HEADER_LEN + stored_len;
    }
    Ok(raw_len)
}

/// Bytes the block whose header is `header` takes in its stream, header included: where the
/// next block starts. The header is checked as a reader checks it before reading the body
/// (codec, reserved bytes, lengths); the checksum, which covers the body too, is not: whoever
/// reads the block checks it then. Lets a reader hop from block to block of a stream without
/// reading or decompressing the bodies it skips.
///
/// `name` and `offset` (the header's position in that source) are used in errors.
///
/// # Errors
/// [`FormatError::Corrupt`] for a header no writer produces.
pub fn block_len(
    header: &[u8; BLOCK_HEADER_LEN],
    name: &str,
    offset: u64,
) -> Result<u64, FormatError> {
    let header = Header::decode(header);
    header.check().map_err(|detail| FormatError::Corrupt {
        source_name: name.to_string(),
        offset,
        detail,
    })?;
    Ok(BLOCK_HEADER_LEN as u64 + u64::from(header.stored_len))
}

/// Most bytes one byte of an LZ4 block can decompress to: a match-length extension byte of 255
/// adds 255 bytes of output, and nothing in the format adds more per input byte.
const LZ4_MAX_EXPANSION: usize = 255;

/// Rejects a `raw_len` that `stored` cannot possibly decompress to, before `raw_len` bytes are
/// allocated. The checksum only proves the block is what a writer wrote; this guards against a
/// buggy or foreign writer making the reader allocate up to [`MAX_BLOCK_LEN`] for a tiny block.
fn plausible_raw_len(codec: Codec, stored: &[u8], raw_len: usize) -> Result<(), String> {
    match codec {
        Codec::None => Ok(()),
        Codec::Lz4 if raw_len > stored.len().saturating_mul(LZ4_MAX_EXPANSION) => Err(format!(
            "lz4 block of {} bytes cannot decompress to {raw_len} bytes",
            stored.len()
        )),
        Codec::Lz4 => Ok(()),
        // Our writer always records the content size in the frame; a frame without one (another
        // writer) is decompressed and its length checked afterwards.
        Codec::Zstd { .. } => match zstd::zstd_safe::get_frame_content_size(stored) {
            Ok(Some(size)) if size == raw_len as u64 => Ok(()),
            Ok(Some(size)) => Err(format!(
                "zstd frame holds {size} bytes, header says {raw_len}"
            )),
            Ok(None) => Ok(()),
            Err(e) => Err(format!("zstd decompression failed: {e}")),
        },
    }
}

/// Reads until `buf` is full or the stream ends; returns how many bytes were read.
fn read_up_to(inner: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match inner.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// Fills `buf[..len]` from `inner` (`UnexpectedEof` if the stream is shorter).
///
/// `len` comes from a header whose checksum cannot be verified until the body is read, so the
/// buffer is not grown to `len` blindly: beyond its current size it grows by at most doubling
/// (or [`READ_GROW_STEP`]) per read, so memory stays proportional to the bytes really present.
/// In the steady state `buf` is already big enough and this is one `read_exact`.
fn read_exact_growing(inner: &mut impl Read, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
    if buf.len() > len {
        release_oversized(buf, len);
    }
    let mut filled = 0;
    while filled < len {
        if buf.len() <= filled {
            let step = (len - filled).min(filled.max(READ_GROW_STEP));
            if filled + step > RETAINED_BUFFER {
                // Exactly, for a huge block: the steps double already, amortized growth would
                // double again. Smaller ones grow as usual (see `ensure_len`).
                buf.reserve_exact(filled + step - buf.len());
            }
            buf.resize(filled + step, 0);
        }
        let end = buf.len().min(len);
        inner.read_exact(&mut buf[filled..end])?;
        filled = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `chunk` bytes per call, to exercise partial reads.
    struct Trickle<'a> {
        data: &'a [u8],
        chunk: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.chunk).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    #[test]
    fn lz4_expansion_bound_holds_for_the_most_compressible_input() {
        let zeros = vec![0u8; 10 << 20];
        let compressed = lz4_flex::block::compress(&zeros);
        assert!(plausible_raw_len(Codec::Lz4, &compressed, zeros.len()).is_ok());
        assert!(zeros.len() > compressed.len() * 200, "{}", compressed.len());
    }

    #[test]
    fn zstd_frames_carry_their_content_size() {
        let payload = vec![1u8; 100_000];
        let mut writer = BlockWriter::new(Vec::new(), Codec::Zstd { level: 3 }, "test");
        writer.write_block(&payload).unwrap();
        let bytes = writer.into_inner();
        let stored = &bytes[BLOCK_HEADER_LEN..];
        assert_eq!(
            zstd::zstd_safe::get_frame_content_size(stored).unwrap(),
            Some(100_000)
        );
        assert!(plausible_raw_len(Codec::Zstd { level: 3 }, stored, 100_000).is_ok());
        assert!(plausible_raw_len(Codec::Zstd { level: 3 }, stored, 99_999).is_err());
    }

    /// Records what a reader's watch is told.
    struct Told(std::sync::Arc<std::sync::Mutex<Vec<usize>>>);

    impl BufferWatch for Told {
        fn holding(&mut self, bytes: usize) {
            self.0.lock().unwrap().push(bytes);
        }
    }

    #[test]
    fn a_watch_is_told_of_a_huge_block_before_it_is_read_and_after_it_is_let_go() {
        for codec in [Codec::None, Codec::Lz4, Codec::Zstd { level: 1 }] {
            let huge = vec![b'x'; 3 << 20];
            let mut writer = BlockWriter::new(Vec::new(), codec, "test");
            writer.write_block(b"small").unwrap();
            writer.write_block(&huge).unwrap();
            writer.write_block(b"small again").unwrap();
            let bytes = writer.into_inner();

            let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let mut reader = BlockReader::new(&bytes[..], "test", 0);
            reader.watch_buffers(Box::new(Told(told.clone())));
            assert_eq!(reader.next_block().unwrap().unwrap(), b"small");
            let before = told.lock().unwrap().len();
            assert_eq!(reader.next_block().unwrap().unwrap(), &huge[..]);
            let during = told.lock().unwrap()[before..].to_vec();
            // Told before the last read (what the buffers were about to hold), then after.
            assert!(during.len() >= 2, "{codec:?}: {during:?}");
            assert!(
                during[..during.len() - 1].iter().any(|&b| b >= huge.len()),
                "{codec:?}: not told before the huge block was read: {during:?}"
            );
            assert!(reader.buffered_bytes() >= huge.len());
            assert_eq!(*during.last().unwrap(), reader.buffered_bytes());
            assert_eq!(reader.next_block().unwrap().unwrap(), b"small again");
            let after = *told.lock().unwrap().last().unwrap();
            assert!(after < RETAINED_BUFFER, "{codec:?}: still holding {after}");
            assert_eq!(after, reader.buffered_bytes());
        }
    }

    #[test]
    fn a_writer_says_what_compressing_a_huge_block_takes() {
        let mut writer = BlockWriter::new(Vec::new(), Codec::Lz4, "test");
        assert!(writer.buffered_bytes_with(10 << 20) >= 10 << 20);
        writer.write_block(&vec![1u8; 4 << 20]).unwrap();
        assert!(writer.buffered_bytes_with(10) >= 4 << 20);
        writer.write_block(b"small").unwrap();
        assert!(writer.buffered_bytes_with(10) < RETAINED_BUFFER);
        let plain = BlockWriter::new(Vec::new(), Codec::None, "test");
        assert_eq!(plain.buffered_bytes_with(10 << 20), 0);
    }

    #[test]
    fn read_exact_growing_grows_in_bounded_steps() {
        let data = vec![7u8; 3 * READ_GROW_STEP + 5];
        let mut buf = Vec::new();
        read_exact_growing(&mut &data[..], &mut buf, data.len()).unwrap();
        assert_eq!(&buf[..data.len()], &data[..]);

        // A claimed length far beyond the data fails without allocating the claimed size.
        let mut buf = Vec::new();
        let err = read_exact_growing(&mut &data[..], &mut buf, MAX_BLOCK_LEN).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
        assert!(
            buf.len() <= 2 * data.len() + READ_GROW_STEP,
            "{}",
            buf.len()
        );
    }

    #[test]
    fn verify_blocks_checks_every_block_without_decompressing() {
        let payload: Vec<u8> = b"abcdefgh".iter().cycle().take(10_000).copied().collect();
        let mut writer = BlockWriter::new(Vec::new(), Codec::Lz4, "test");
        writer.write_block(&payload).unwrap();
        writer.write_block(b"tail").unwrap();
        let raw = writer.raw_bytes_written();
        let bytes = writer.into_inner();
        assert_eq!(raw, 10_004);
        assert_eq!(verify_blocks(&bytes, "test", 0).unwrap(), raw);
        assert_eq!(verify_blocks(&[], "test", 0).unwrap(), 0);

        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        assert!(matches!(
            verify_blocks(&flipped, "test", 100),
            Err(FormatError::ChecksumMismatch { offset, .. }) if offset > 100
        ));
        for cut in [bytes.len() - 1, bytes.len() - 5, BLOCK_HEADER_LEN - 1] {
            assert!(
                matches!(
                    verify_blocks(&bytes[..cut], "test", 0),
                    Err(FormatError::Corrupt { .. })
                ),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn partial_reads_are_reassembled() {
        let mut bytes = Vec::new();
        let mut writer = BlockWriter::new(&mut bytes, Codec::Lz4, "test");
        writer
            .write_block(b"hello hello hello hello hello")
            .unwrap();
        writer.write_block(b"x").unwrap();
        let mut reader = BlockReader::new(
            Trickle {
                data: &bytes,
                chunk: 3,
            },
            "test",
            0,
        );
        assert_eq!(
            reader.next_block().unwrap().unwrap(),
            b"hello hello hello hello hello"
        );
        assert_eq!(reader.next_block().unwrap().unwrap(), b"x");
        assert!(reader.next_block().unwrap().is_none());
    }

    #[test]
    fn buffers_are_reused_across_blocks() {
        let payload: Vec<u8> = b"abcdefgh".iter().cycle().take(10_000).copied().collect();
        let mut bytes = Vec::new();
        let mut writer = BlockWriter::new(&mut bytes, Codec::Lz4, "test");
        writer.write_block(&payload).unwrap();
        let compressed_ptr = writer.compressed.as_ptr();
        for _ in 0..10 {
            writer.write_block(&payload).unwrap();
        }
        assert_eq!(writer.compressed.as_ptr(), compressed_ptr);

        let mut reader = BlockReader::new(&bytes[..], "test", 0);
        reader.next_block().unwrap().unwrap();
        let (stored_ptr, raw_ptr) = (reader.stored.as_ptr(), reader.raw.as_ptr());
        while let Some(block) = reader.next_block().unwrap() {
            assert_eq!(block, &payload[..]);
        }
        assert_eq!(
            (reader.stored.as_ptr(), reader.raw.as_ptr()),
            (stored_ptr, raw_ptr)
        );
    }
}
