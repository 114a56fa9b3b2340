//! Reading one split of a bzip2 file, so that several map tasks share a large `.bz2` input.
//!
//! bzip2 compresses in blocks of at most 900 kB that are decoded independently. Each block starts
//! with the 48-bit number 0x314159265359 (π) and its 32-bit CRC, at any *bit* offset; a stream ends
//! with 0x177245385090 (√π) and the CRC of its blocks' CRCs. Hadoop's `BZip2Codec` is therefore a
//! splittable codec: the task of a byte range starts at the first block marker in it and reads on
//! past the range's end as far as its last line goes. [`Bzip2Split`] does the same:
//!
//! * It finds the first block marker at or after the split's start, and decodes block after
//!   block while their markers lie before the split's end.
//! * Each block is decoded on its own: its bits are copied, shifted to a byte boundary, between a
//!   stream header and an end-of-stream marker whose combined CRC is the block's CRC, so the
//!   decoder checks the block's CRC as it would in the whole file.
//! * After the split's last block it goes on decoding only as far as the first line terminator:
//!   the line running across the split's end belongs to this split, and the next split, which
//!   starts at that block, discards everything up to its first terminator (the rule of plain
//!   splits, [`LineReader`](crate::LineReader), with the block starts as the boundaries).
//!
//! So a split of bytes `s..e` reads, as Hadoop 3.4's `LineRecordReader` does, the lines that
//! start after the first byte of the first block whose marker starts in byte `s` or later (any
//! line when `s` is 0), up to and including the line that starts at the first byte of the
//! first block whose marker starts in byte `e` or later. The first block belongs to the first
//! split whatever its length (a later split looks for markers from byte 5 on). The key of a line is Hadoop's too: its offset in the
//! uncompressed data in the first split; in a later one, `s` plus its distance from the first
//! byte of the split's first block.
//!
//! The end of a block is where the next marker is, found by searching the bits. Inside compressed
//! data the 48 bits of a marker turn up by chance about once in 35 TB; a block cut short by such
//! a false marker fails to decode before it has produced a byte (bzip2 parses a whole block
//! before its first output byte), and is then decoded again up to the marker after.
//! Concatenated streams (`pbzip2`'s output) read as one.

use std::io::{self, Cursor, Read};

/// The marker before every block: the 48 bits of the BCD digits of π.
const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
/// The marker ending a stream: the BCD digits of √π.
const END_MAGIC: u64 = 0x1772_4538_5090;
/// The bits of a marker.
const MAGIC_BITS: u64 = 48;
/// A marker and the CRC after it.
const MARKER_AND_CRC_BITS: u64 = MAGIC_BITS + 32;
/// The byte holding the start of a file's first block marker, after the 4-byte stream header.
const FIRST_MARKER_BYTE: u64 = 4;
/// The longest a block's compressed bits may run, false markers skipped: bzip2's largest block
/// (900 kB, which incompressible data leaves a little larger) with room to spare. Beyond it the
/// file is not bzip2.
const MAX_BLOCK_BYTES: usize = 2 << 20;
/// Compressed bytes read from the source at a time.
const READ_CHUNK: usize = 256 << 10;

/// For each two bytes, whether they can be the second and third bytes of a marker starting in
/// the byte before them: those two bytes lie inside the marker at any of its 8 bit offsets, so
/// a search looks closer at 16 pairs in 65,536 (scanning is then a small part of decoding).
static MARKER_PAIRS: [bool; 1 << 16] = marker_pairs();

const fn marker_pairs() -> [bool; 1 << 16] {
    let mut table = [false; 1 << 16];
    let magics = [BLOCK_MAGIC, END_MAGIC];
    let mut m = 0;
    while m < magics.len() {
        let mut shift = 0;
        while shift < 8 {
            // The marker at bit `shift` of a 64-bit big-endian word: bytes 1 and 2 are its
            // bits 55..40.
            let word = magics[m] << (16 - shift);
            table[((word >> 40) & 0xffff) as usize] = true;
            shift += 1;
        }
        m += 1;
    }
    table
}

/// What a marker found in the bits starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    /// A block.
    Block,
    /// The end of a stream.
    End,
}

/// The decoded bytes of the bzip2 blocks whose markers lie in one byte range of a file, then
/// of the following blocks through the first line terminator (`\n` or `\r`).
pub(crate) struct Bzip2Split {
    /// The compressed bytes after those in `window`.
    source: Box<dyn Read + Send>,
    /// Compressed bytes; `window[0]` is the file's byte `base`.
    window: Vec<u8>,
    base: u64,
    /// The source has no more bytes.
    exhausted: bool,
    /// Blocks whose markers start at a bit before this belong to the split.
    end_bit: u64,
    /// The file bit offset of the marker of the next block to decode, if any.
    next_block: Option<u64>,
    /// The block being decoded.
    block: Option<Block>,
    /// Past the split's own blocks: bytes are delivered through the first line terminator.
    tail: bool,
    /// Nothing more to deliver.
    done: bool,
}

/// One block being decoded.
struct Block {
    decoder: bzip2::read::BzDecoder<Cursor<Vec<u8>>>,
    /// The file bit offset of its marker.
    start: u64,
    /// The file bit offset where its bits end (the next marker).
    end: u64,
    /// What starts at `end`.
    next: Marker,
    /// Whether it has produced a byte yet.
    produced: bool,
}

impl Bzip2Split {
    /// The split of the blocks whose markers start in bytes `start..end` of a file, read from
    /// `source`, which holds the file's bytes from `start` on.
    ///
    /// # Errors
    /// The source's read errors.
    pub(crate) fn new(source: Box<dyn Read + Send>, start: u64, end: u64) -> io::Result<Self> {
        let mut split = Bzip2Split {
            source,
            window: Vec::new(),
            base: start,
            exhausted: false,
            // A split that starts the file reaches at least past the first block's marker
            // (later splits start searching there), so that the first block is always read.
            end_bit: if start == 0 {
                end.max(FIRST_MARKER_BYTE + 1)
            } else {
                end
            }
            .saturating_mul(8),
            next_block: None,
            block: None,
            tail: false,
            done: false,
        };
        if start == 0 {
            while split.window.len() < 4 && !split.exhausted {
                split.read_more()?;
            }
            match split.window.get(..4) {
                None if split.window.is_empty() => {
                    // An empty file reads as empty, as Hadoop's bzip2 reader reads it.
                    split.done = true;
                    return Ok(split);
                }
                Some([b'B', b'Z', b'h', b'1'..=b'9']) => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "not bzip2 data: a bzip2 file starts with \"BZh\" and a block size \
                         digit",
                    ))
                }
            }
        }
        // A later split starts searching past the first block's marker (in byte 4), as in
        // Hadoop. (Hadoop's first split also reads the first block whatever its length and
        // wherever it is: after an empty first stream both it and the next split read that
        // block. Here it is the first split's only if its marker lies in the range above;
        // else the split that holds it reads it, as the start of the data: `LineReader`
        // looks back for that case.)
        let from = if start == 0 {
            0
        } else {
            start.max(FIRST_MARKER_BYTE + 1).saturating_mul(8)
        };
        let first = split.find(from, from, u64::MAX, |m| m == Marker::Block)?;
        match first {
            Some((bit, _)) if bit < split.end_bit => split.next_block = Some(bit),
            // No block starts in the range: its bytes belong to a block of an earlier split.
            _ => split.done = true,
        }
        Ok(split)
    }

    /// The file bit offset of the first block the split reads, if it reads any.
    pub(crate) fn first_block(&self) -> Option<u64> {
        self.next_block.filter(|_| !self.done)
    }

    /// The first marker accepted by `wanted` at or after file bit `from`, reading more of the
    /// source as needed; `None` at the end of the file, or past file bit `limit`. The window keeps
    /// its bytes from file bit `keep` on; those before it and before `from` are let go.
    fn find(
        &mut self,
        from: u64,
        keep: u64,
        limit: u64,
        wanted: impl Fn(Marker) -> bool,
    ) -> io::Result<Option<(u64, Marker)>> {
        let mut from = from;
        loop {
            self.drop_before(keep.min(from));
            let base_bit = self.base * 8;
            if let Some((bit, marker)) =
                find_marker(&self.window, from.saturating_sub(base_bit), &wanted)
            {
                return Ok(Some((base_bit + bit, marker)));
            }
            // All but the window's last 7 bytes are searched: a marker may straddle its end.
            from = from.max(base_bit + (self.window.len() as u64).saturating_sub(7) * 8);
            if self.exhausted || from > limit {
                return Ok(None);
            }
            self.read_more()?;
        }
    }

    /// Appends up to [`READ_CHUNK`] bytes of the source to the window.
    fn read_more(&mut self) -> io::Result<()> {
        let had = self.window.len();
        self.window.resize(had + READ_CHUNK, 0);
        loop {
            match self.source.read(&mut self.window[had..]) {
                Ok(n) => {
                    self.window.truncate(had + n.min(READ_CHUNK));
                    if n == 0 {
                        self.exhausted = true;
                    }
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.window.truncate(had);
                    return Err(e);
                }
            }
        }
    }

    /// Forgets the window's bytes before the one holding file bit `bit`, once they are at least
    /// half of it.
    fn drop_before(&mut self, bit: u64) {
        let byte = bit / 8;
        let drop = usize::try_from(byte.saturating_sub(self.base))
            .unwrap_or(usize::MAX)
            .min(self.window.len());
        if drop < self.window.len() / 2 {
            // Moving the kept bytes costs more than keeping the dropped ones a while.
            return;
        }
        self.window.drain(..drop);
        self.base += drop as u64;
    }

    /// Sets up the decoding of the block whose marker is at file bit `start`, its end being the
    /// first marker after `after` (a later one when an earlier was found false).
    fn open_block(&mut self, start: u64, after: u64) -> io::Result<Option<Block>> {
        let limit = start.saturating_add(MAX_BLOCK_BYTES as u64 * 8);
        let Some((end, next)) = self.find(after, start, limit, |_| true)? else {
            return Err(if self.exhausted {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the bzip2 data ends inside a block (the file was cut short)",
                )
            } else {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a bzip2 block runs on beyond 2 MiB: this is not bzip2 data",
                )
            });
        };
        let from = start.saturating_sub(self.base * 8);
        let bits = end - start;
        let stream = standalone_block(&self.window, from, bits);
        Ok(Some(Block {
            decoder: bzip2::read::BzDecoder::new(Cursor::new(stream)),
            start,
            end,
            next,
            produced: false,
        }))
    }

    /// Moves on to the block after `block`, if any.
    fn next_after(&mut self, block: &Block) -> io::Result<()> {
        self.next_block = match block.next {
            Marker::Block => Some(block.end),
            // A new stream may follow (concatenated files): its header, then its first block.
            Marker::End => {
                let from = block.end + MARKER_AND_CRC_BITS;
                self.find(from, from, u64::MAX, |m| m == Marker::Block)?
                    .map(|(bit, _)| bit)
            }
        };
        Ok(())
    }

    /// Reads decoded bytes of the current block into `buf`, moving from block to block;
    /// `Ok(0)` when the split is done.
    fn read_blocks(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.done {
                return Ok(0);
            }
            let Some(block) = self.block.as_mut() else {
                let Some(start) = self.next_block.take() else {
                    self.done = true;
                    return Ok(0);
                };
                if start >= self.end_bit {
                    self.tail = true;
                }
                self.block = self.open_block(start, start + MARKER_AND_CRC_BITS)?;
                continue;
            };
            match block.decoder.read(buf) {
                Ok(0) => {
                    let block = self.block.take().expect("a block is being decoded");
                    self.next_after(&block)?;
                }
                Ok(n) => {
                    block.produced = true;
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if !block.produced && block.next == Marker::Block => {
                    // The marker that ended the block may be one by chance inside it: decode
                    // the block again up to the marker after (a real error shows again there).
                    let (start, end) = (block.start, block.end);
                    self.block = None;
                    match self.open_block(start, end + 1) {
                        Ok(block) => self.block = block,
                        Err(_) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Read for Bzip2Split {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_blocks(buf)?;
        if self.tail && n > 0 {
            if let Some(at) = memchr::memchr2(b'\n', b'\r', &buf[..n]) {
                self.done = true;
                self.block = None;
                return Ok(at + 1);
            }
        }
        Ok(n)
    }
}

/// How far into a file a split looks back for blocks before its first one: only a file that
/// starts with empty streams (14 bytes each) has its first block past byte 4, and not far past.
pub(crate) const LOOK_BACK: u64 = 1 << 20;

/// The bit offset of the first block marker in `head`, the first bytes of a file.
pub(crate) fn first_block_of_data(head: &[u8]) -> Option<u64> {
    find_marker(head, 0, &|m| m == Marker::Block).map(|(bit, _)| bit)
}

/// The first marker accepted by `wanted` whose 48 bits start at bit `from` or later of `data`
/// and lie wholly in it: its bit offset and kind.
fn find_marker(data: &[u8], from: u64, wanted: &impl Fn(Marker) -> bool) -> Option<(u64, Marker)> {
    let total = data.len() as u64 * 8;
    let first = usize::try_from(from / 8).ok()?;
    for byte in first..data.len() {
        if let (Some(&second), Some(&third)) = (data.get(byte + 1), data.get(byte + 2)) {
            if !MARKER_PAIRS[usize::from(second) << 8 | usize::from(third)] {
                continue;
            }
        }
        let mut chunk = [0u8; 8];
        let have = (data.len() - byte).min(8);
        chunk[..have].copy_from_slice(&data[byte..byte + have]);
        let word = u64::from_be_bytes(chunk);
        for shift in 0..8u64 {
            let bit = byte as u64 * 8 + shift;
            if bit < from {
                continue;
            }
            if bit + MAGIC_BITS > total {
                return None;
            }
            let marker = match (word >> (16 - shift)) & ((1 << MAGIC_BITS) - 1) {
                BLOCK_MAGIC => Marker::Block,
                END_MAGIC => Marker::End,
                _ => continue,
            };
            if wanted(marker) {
                return Some((bit, marker));
            }
        }
    }
    None
}

/// A whole bzip2 stream holding one block: a header (of the largest block size, which admits
/// any block), the block's `bits` starting at bit `from` of `data` (its marker, CRC and body)
/// moved to a byte boundary, and an end-of-stream marker whose combined CRC — the CRC of the
/// blocks' CRCs — is the block's own.
fn standalone_block(data: &[u8], from: u64, bits: u64) -> Vec<u8> {
    let mut out = BitWriter::with_capacity(bits / 8 + 16);
    out.bytes.extend_from_slice(b"BZh9");
    out.bits = 32;
    out.copy(data, from, bits);
    let crc = read_bits(data, from + MAGIC_BITS, 32);
    out.push(END_MAGIC, MAGIC_BITS);
    out.push(crc, 32);
    out.bytes
}

/// `count` (at most 57) bits of `data` from bit `from`, as a number; bits past its end read 0.
fn read_bits(data: &[u8], from: u64, count: u64) -> u64 {
    let byte = usize::try_from(from / 8).unwrap_or(usize::MAX);
    let mut chunk = [0u8; 8];
    for (i, slot) in chunk.iter_mut().enumerate() {
        *slot = data.get(byte.saturating_add(i)).copied().unwrap_or(0);
    }
    let word = u64::from_be_bytes(chunk);
    (word << (from % 8)) >> (64 - count)
}

/// Bits appended to bytes, most significant bit first.
struct BitWriter {
    bytes: Vec<u8>,
    /// Bits written; the unused low bits of the last byte are 0.
    bits: u64,
}

impl BitWriter {
    fn with_capacity(bytes: u64) -> BitWriter {
        BitWriter {
            bytes: Vec::with_capacity(usize::try_from(bytes).unwrap_or(0)),
            bits: 0,
        }
    }

    /// Appends `count` bits of `data` from its bit `from`; the writer must be at a byte boundary.
    fn copy(&mut self, data: &[u8], from: u64, count: u64) {
        debug_assert_eq!(self.bits % 8, 0);
        let shift = (from % 8) as u32;
        let first = usize::try_from(from / 8).unwrap_or(usize::MAX);
        let whole = usize::try_from(count.div_ceil(8)).unwrap_or(0);
        let byte_at = |i: usize| data.get(i).copied().unwrap_or(0);
        if shift == 0 {
            self.bytes
                .extend((0..whole).map(|i| byte_at(first.saturating_add(i))));
        } else {
            self.bytes.extend((0..whole).map(|i| {
                let at = first.saturating_add(i);
                (byte_at(at) << shift) | (byte_at(at.saturating_add(1)) >> (8 - shift))
            }));
        }
        self.bits += count;
        let used = (self.bits % 8) as u32;
        if used != 0 {
            if let Some(last) = self.bytes.last_mut() {
                *last &= 0xffu8 << (8 - used);
            }
        }
    }

    /// Appends the low `count` bits of `value`, most significant first.
    fn push(&mut self, value: u64, count: u64) {
        for i in (0..count).rev() {
            let bit = (value >> i) & 1;
            let used = self.bits % 8;
            if used == 0 {
                self.bytes.push(0);
            }
            if bit == 1 {
                if let Some(last) = self.bytes.last_mut() {
                    *last |= 0x80 >> used;
                }
            }
            self.bits += 1;
        }
    }
}

#[cfg(test)]
mod tests;
