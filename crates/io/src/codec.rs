//! Hadoop's compression codecs as byte streams: the writer of compressed part files
//! ([`CompressedWriter`]) and the reader of the block framing that Hadoop's `Lz4Codec` and
//! `SnappyCodec` write (`BlockCompressorStream`).
//!
//! The block framing, as Hadoop writes and reads it: the stream is a sequence of blocks; a block
//! is the 4-byte big-endian length of its uncompressed bytes, then one or more chunks, each a
//! 4-byte big-endian compressed length and that many bytes of a raw (unframed) lz4 or snappy
//! block, until the chunks have produced the block's uncompressed length. A block of length 0
//! ends the stream (Hadoop writes one for an empty stream, and its reader stops at it).

use std::io::{self, BufRead, Read, Write};

/// Hadoop's default buffer of its lz4 and snappy codecs (`io.compression.codec.lz4.buffersize`,
/// `io.compression.codec.snappy.buffersize`): 256 KiB. A reader with the default settings
/// decompresses one chunk into a buffer of this size, so chunks must not produce more.
const HADOOP_BUFFER: usize = 256 * 1024;

/// The most uncompressed or compressed bytes one chunk may hold when read. Hadoop's writers make
/// chunks of at most [`HADOOP_BUFFER`] bytes (more only with a larger configured buffer); the
/// bound keeps a corrupt length from turning into a huge allocation.
const MAX_CHUNK: usize = 16 << 20;

/// The raw block compressor inside Hadoop's block framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockCodec {
    /// Raw lz4 blocks (`Lz4Codec`).
    Lz4,
    /// Raw snappy (`SnappyCodec`).
    Snappy,
}

impl BlockCodec {
    /// Uncompressed bytes per block as Hadoop's codec sizes them: its buffer less the
    /// compressor's worst-case overhead (`Lz4Codec`: buffer/255 + 16, `SnappyCodec`:
    /// buffer/6 + 32), so that a block's compressed form always fits the reader's buffer.
    fn block_size(self) -> usize {
        match self {
            BlockCodec::Lz4 => HADOOP_BUFFER - (HADOOP_BUFFER / 255 + 16),
            BlockCodec::Snappy => HADOOP_BUFFER - (HADOOP_BUFFER / 6 + 32),
        }
    }

    fn name(self) -> &'static str {
        match self {
            BlockCodec::Lz4 => "lz4",
            BlockCodec::Snappy => "snappy",
        }
    }

    /// Compresses `data` into `out` (replacing its contents).
    fn compress(self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        match self {
            BlockCodec::Lz4 => {
                out.resize(lz4_flex::block::get_maximum_output_size(data.len()), 0);
                let n = lz4_flex::block::compress_into(data, out).map_err(io::Error::other)?;
                out.truncate(n);
            }
            BlockCodec::Snappy => {
                out.resize(snap::raw::max_compress_len(data.len()), 0);
                let n = snap::raw::Encoder::new()
                    .compress(data, out)
                    .map_err(io::Error::other)?;
                out.truncate(n);
            }
        }
        Ok(())
    }
}

/// Writes Hadoop's block framing of `codec` over `inner`.
pub(crate) struct BlockWriter<W: Write> {
    inner: W,
    codec: BlockCodec,
    /// Uncompressed bytes of the block being filled.
    block: Vec<u8>,
    /// The compressed form of a block, reused.
    compressed: Vec<u8>,
    /// Whether a block has been written: an empty stream still gets its zero-length block.
    wrote_block: bool,
}

impl<W: Write> BlockWriter<W> {
    fn new(inner: W, codec: BlockCodec) -> BlockWriter<W> {
        BlockWriter {
            inner,
            codec,
            block: Vec::with_capacity(codec.block_size()),
            compressed: Vec::new(),
            wrote_block: false,
        }
    }

    fn write_block(&mut self) -> io::Result<()> {
        self.codec.compress(&self.block, &mut self.compressed)?;
        self.inner.write_all(&be32(self.block.len())?)?;
        self.inner.write_all(&be32(self.compressed.len())?)?;
        self.inner.write_all(&self.compressed)?;
        self.block.clear();
        self.wrote_block = true;
        Ok(())
    }

    fn finish(mut self) -> io::Result<W> {
        if !self.block.is_empty() {
            self.write_block()?;
        } else if !self.wrote_block {
            // Hadoop's own empty stream: one block of length 0 and no chunk.
            self.inner.write_all(&[0; 4])?;
        }
        Ok(self.inner)
    }
}

impl<W: Write> Write for BlockWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = self.codec.block_size() - self.block.len();
        let n = buf.len().min(room);
        self.block.extend_from_slice(&buf[..n]);
        if self.block.len() == self.codec.block_size() {
            self.write_block()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A length as the framing's 4-byte big-endian field.
fn be32(len: usize) -> io::Result<[u8; 4]> {
    u32::try_from(len)
        .map(u32::to_be_bytes)
        .map_err(|_| io::Error::other("block longer than 4 GiB"))
}

/// Reads Hadoop's block framing of `codec`; errors say at which compressed byte the framing
/// went wrong.
pub(crate) struct BlockReader<R: Read> {
    inner: R,
    codec: BlockCodec,
    /// Uncompressed bytes the current block has still to produce.
    block_left: u64,
    /// Decompressed bytes of the last chunk: `out[pos..len]` are still to be returned. `out`
    /// only grows, so that a chunk is decompressed without zeroing the buffer again.
    out: Vec<u8>,
    pos: usize,
    len: usize,
    /// The compressed bytes of a chunk, reused.
    chunk: Vec<u8>,
    /// Compressed bytes consumed so far.
    offset: u64,
    done: bool,
}

impl<R: Read> BlockReader<R> {
    pub(crate) fn new(inner: R, codec: BlockCodec) -> BlockReader<R> {
        BlockReader {
            inner,
            codec,
            block_left: 0,
            out: Vec::new(),
            pos: 0,
            len: 0,
            chunk: Vec::new(),
            offset: 0,
            done: false,
        }
    }

    fn corrupt(&self, what: impl std::fmt::Display) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "corrupt Hadoop {} block stream at compressed byte {}: {what}",
                self.codec.name(),
                self.offset
            ),
        )
    }

    /// Reads a 4-byte big-endian length; `None` at a clean end of the stream when `eof_ok`.
    fn read_len(&mut self, eof_ok: bool, what: &str) -> io::Result<Option<u32>> {
        let mut bytes = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match self.inner.read(&mut bytes[got..]) {
                Ok(0) if got == 0 && eof_ok => return Ok(None),
                Ok(0) => return Err(self.corrupt(format!("the stream ends inside {what}"))),
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.offset += 4;
        Ok(Some(u32::from_be_bytes(bytes)))
    }

    /// Decodes the next chunk into `out`; false at the end of the stream.
    fn next_chunk(&mut self) -> io::Result<bool> {
        if self.block_left == 0 {
            match self.read_len(true, "a block length")? {
                // Hadoop's reader ends the stream at a block of length 0 (its empty stream).
                None | Some(0) => return Ok(false),
                // The length is a Java int: a negative one is corrupt.
                Some(n) if n > i32::MAX as u32 => {
                    return Err(self.corrupt(format!("block length {n} is negative")))
                }
                Some(n) => self.block_left = u64::from(n),
            }
        }
        let at = self.offset;
        let clen = self
            .read_len(false, "a chunk length")?
            .unwrap_or_default()
            .try_into()
            .unwrap_or(usize::MAX);
        if clen == 0 || clen > MAX_CHUNK {
            self.offset = at;
            return Err(self.corrupt(format!(
                "chunk length {clen} is not between 1 and {MAX_CHUNK}"
            )));
        }
        self.chunk.resize(clen, 0);
        if let Err(e) = self.inner.read_exact(&mut self.chunk) {
            return Err(if e.kind() == io::ErrorKind::UnexpectedEof {
                self.corrupt(format!("the stream ends inside a chunk of {clen} bytes"))
            } else {
                e
            });
        }
        let left = usize::try_from(self.block_left).unwrap_or(usize::MAX);
        let n = match self.codec {
            BlockCodec::Lz4 => {
                // A raw lz4 block does not say how long it decodes; lz4 expands at most 255
                // times, and no chunk may decode past the end of its block.
                let limit = left
                    .min(MAX_CHUNK)
                    .min(clen.saturating_mul(255).saturating_add(255));
                if self.out.len() < limit {
                    self.out.resize(limit, 0);
                }
                lz4_flex::block::decompress_into(&self.chunk, &mut self.out[..limit])
                    .map_err(|e| self.corrupt(format!("chunk of {clen} bytes: {e}")))?
            }
            BlockCodec::Snappy => {
                let n = snap::raw::decompress_len(&self.chunk)
                    .map_err(|e| self.corrupt(format!("chunk of {clen} bytes: {e}")))?;
                if n > left.min(MAX_CHUNK) {
                    return Err(self.corrupt(format!(
                        "a chunk decodes to {n} bytes, more than the {left} left in its block"
                    )));
                }
                if self.out.len() < n {
                    self.out.resize(n, 0);
                }
                snap::raw::Decoder::new()
                    .decompress(&self.chunk, &mut self.out[..n])
                    .map_err(|e| self.corrupt(format!("chunk of {clen} bytes: {e}")))?
            }
        };
        if n == 0 {
            return Err(self.corrupt("a chunk decodes to nothing"));
        }
        self.offset += clen as u64;
        self.block_left -= n as u64;
        self.pos = 0;
        self.len = n;
        Ok(true)
    }
}

impl<R: Read> Read for BlockReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.len {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            if !self.next_chunk()? {
                self.done = true;
            }
        }
        let n = buf.len().min(self.len - self.pos);
        buf[..n].copy_from_slice(&self.out[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// A decoder of one compressed stream (a zlib stream, an LZ4 frame) over a buffered reader,
/// which stops at the end of its stream and hands the reader back with what follows.
pub(crate) trait StreamDecoder<R: BufRead>: Read {
    /// A decoder of the stream that starts at `inner`'s position.
    fn start(inner: R) -> Self;
    /// The reader, positioned just after the stream.
    fn into_inner(self) -> R;
}

impl<R: BufRead> StreamDecoder<R> for flate2::bufread::ZlibDecoder<R> {
    fn start(inner: R) -> Self {
        flate2::bufread::ZlibDecoder::new(inner)
    }
    fn into_inner(self) -> R {
        flate2::bufread::ZlibDecoder::into_inner(self)
    }
}

impl<R: BufRead> StreamDecoder<R> for lz4_flex::frame::FrameDecoder<R> {
    fn start(inner: R) -> Self {
        lz4_flex::frame::FrameDecoder::new(inner)
    }
    fn into_inner(self) -> R {
        lz4_flex::frame::FrameDecoder::into_inner(self)
    }
}

/// Reads every stream of a file of concatenated streams: Hadoop's `DefaultCodec` reader goes
/// on with a new zlib stream when one ends and bytes follow (as concatenated part files give),
/// and the `lz4` tool decodes every frame of `cat a.lz4 b.lz4`, while a single decoder stops at
/// the end of its stream.
pub(crate) struct Concatenated<R: BufRead, D: StreamDecoder<R>> {
    decoder: Option<D>,
    reader: std::marker::PhantomData<R>,
}

impl<R: BufRead, D: StreamDecoder<R>> Concatenated<R, D> {
    pub(crate) fn new(inner: R) -> Concatenated<R, D> {
        Concatenated {
            decoder: Some(D::start(inner)),
            reader: std::marker::PhantomData,
        }
    }
}

impl<R: BufRead, D: StreamDecoder<R>> Read for Concatenated<R, D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let Some(decoder) = self.decoder.as_mut() else {
                return Ok(0);
            };
            let n = decoder.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            // The decoder consumed exactly its stream: what is left starts the next.
            let mut inner = match self.decoder.take() {
                Some(d) => d.into_inner(),
                None => return Ok(0),
            };
            if inner.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.decoder = Some(D::start(inner));
        }
    }
}

/// Every zlib stream of a `.deflate` file.
pub(crate) type ZlibStreams<R> = Concatenated<R, flate2::bufread::ZlibDecoder<R>>;

/// Every LZ4 frame of a `.lz4` file in the frame format.
pub(crate) type Lz4Frames<R> = Concatenated<R, lz4_flex::frame::FrameDecoder<R>>;

/// The codec a part file is written with: what Hadoop's `CompressionCodec` of the same name
/// writes, readable by Hadoop and by sluice's own input side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputCodec {
    /// Plain bytes, no extension.
    #[default]
    None,
    /// `GzipCodec`: one gzip member, `.gz`.
    Gzip,
    /// `BZip2Codec`: one bzip2 stream (900 KB blocks), `.bz2`.
    Bzip2,
    /// `DefaultCodec` and `DeflateCodec`: a zlib stream, `.deflate`.
    Deflate,
    /// `ZStandardCodec`: a zstd frame (level 3, Hadoop's default), `.zst`.
    Zstd,
    /// `Lz4Codec`: Hadoop's block framing of raw lz4 blocks, `.lz4`.
    Lz4,
    /// `SnappyCodec`: Hadoop's block framing of raw snappy, `.snappy`.
    Snappy,
}

impl OutputCodec {
    /// The codec of part files written with Hadoop's codec class `name` (`DefaultCodec` and
    /// `DeflateCodec` both write zlib streams); `None` for a class sluice does not write.
    pub fn from_class_name(name: &str) -> Option<OutputCodec> {
        crate::seqfile::SeqCodec::from_class_name(name).map(|codec| codec.output())
    }

    /// The Java class names [`OutputCodec::from_class_name`] knows, for messages.
    pub fn class_names() -> Vec<&'static str> {
        crate::seqfile::SeqCodec::all()
            .into_iter()
            .map(|codec| codec.class_name())
            .collect()
    }

    /// The extension Hadoop gives a part file of this codec (`.gz`; empty for none).
    pub fn extension(self) -> &'static str {
        match self {
            OutputCodec::None => "",
            OutputCodec::Gzip => ".gz",
            OutputCodec::Bzip2 => ".bz2",
            OutputCodec::Deflate => ".deflate",
            OutputCodec::Zstd => ".zst",
            OutputCodec::Lz4 => ".lz4",
            OutputCodec::Snappy => ".snappy",
        }
    }
}

/// A compressing writer over `W`. [`CompressedWriter::finish`] ends the stream (a dropped
/// writer may leave it incomplete) and hands back `W`.
pub struct CompressedWriter<W: Write> {
    encoder: Encoder<W>,
}

enum Encoder<W: Write> {
    Plain(W),
    Gzip(flate2::write::GzEncoder<W>),
    Bzip2(bzip2::write::BzEncoder<W>),
    Deflate(flate2::write::ZlibEncoder<W>),
    Zstd(zstd::stream::write::Encoder<'static, W>),
    Block(BlockWriter<W>),
}

impl<W: Write> CompressedWriter<W> {
    /// Starts a stream of `codec` on `inner`, at the compression level Hadoop's codec uses by
    /// default (zlib's 6, bzip2's 9, zstd's 3). [`OutputCodec::None`] passes bytes through.
    ///
    /// # Errors
    /// The encoder's error if it cannot be set up (zstd allocates its context here).
    pub fn new(codec: OutputCodec, inner: W) -> io::Result<CompressedWriter<W>> {
        let level = flate2::Compression::default();
        let encoder = match codec {
            OutputCodec::None => Encoder::Plain(inner),
            OutputCodec::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(inner, level)),
            OutputCodec::Bzip2 => Encoder::Bzip2(bzip2::write::BzEncoder::new(
                inner,
                bzip2::Compression::best(),
            )),
            OutputCodec::Deflate => Encoder::Deflate(flate2::write::ZlibEncoder::new(inner, level)),
            OutputCodec::Zstd => Encoder::Zstd(zstd::stream::write::Encoder::new(inner, 3)?),
            OutputCodec::Lz4 => Encoder::Block(BlockWriter::new(inner, BlockCodec::Lz4)),
            OutputCodec::Snappy => Encoder::Block(BlockWriter::new(inner, BlockCodec::Snappy)),
        };
        Ok(CompressedWriter { encoder })
    }

    /// Compresses what is buffered, writes the end of the stream, and returns the inner writer
    /// (not flushed: its owner finishes it).
    ///
    /// # Errors
    /// The encoder's or the inner writer's error.
    pub fn finish(self) -> io::Result<W> {
        match self.encoder {
            Encoder::Plain(w) => Ok(w),
            Encoder::Gzip(e) => e.finish(),
            Encoder::Bzip2(e) => e.finish(),
            Encoder::Deflate(e) => e.finish(),
            Encoder::Zstd(e) => e.finish(),
            Encoder::Block(e) => e.finish(),
        }
    }
}

impl<W: Write> Write for CompressedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.encoder {
            Encoder::Plain(w) => w.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Bzip2(e) => e.write(buf),
            Encoder::Deflate(e) => e.write(buf),
            Encoder::Zstd(e) => e.write(buf),
            Encoder::Block(e) => e.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.encoder {
            Encoder::Plain(w) => w.flush(),
            Encoder::Gzip(e) => e.flush(),
            Encoder::Bzip2(e) => e.flush(),
            Encoder::Deflate(e) => e.flush(),
            Encoder::Zstd(e) => e.flush(),
            Encoder::Block(e) => e.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn encode(codec: OutputCodec, data: &[u8], pieces: usize) -> Vec<u8> {
        let mut w = CompressedWriter::new(codec, Vec::new()).unwrap();
        for piece in data.chunks(pieces.max(1)) {
            w.write_all(piece).unwrap();
        }
        w.finish().unwrap()
    }

    fn read_all(mut r: impl Read) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        r.read_to_end(&mut out)?;
        Ok(out)
    }

    /// Text with some repetition, some noise, and a size crossing several blocks.
    fn sample(len: usize) -> Vec<u8> {
        let mut x: u32 = 12345;
        (0..len)
            .map(|i| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                if i % 7 == 6 {
                    b'\n'
                } else if x.is_multiple_of(3) {
                    (x >> 16) as u8
                } else {
                    b'a' + (i % 5) as u8
                }
            })
            .collect()
    }

    #[test]
    fn block_framing_layout_is_hadoops() {
        let data = sample(BlockCodec::Lz4.block_size() * 2 + 100);
        let framed = encode(OutputCodec::Lz4, &data, 4096);
        // Three blocks: two full ones and the rest, each one chunk decoded independently.
        let mut at = 0;
        let mut decoded = Vec::new();
        while at < framed.len() {
            let n = u32::from_be_bytes(framed[at..at + 4].try_into().unwrap()) as usize;
            let c = u32::from_be_bytes(framed[at + 4..at + 8].try_into().unwrap()) as usize;
            assert!(n <= BlockCodec::Lz4.block_size() && c <= HADOOP_BUFFER);
            let chunk = &framed[at + 8..at + 8 + c];
            decoded.extend(lz4_flex::block::decompress(chunk, n).unwrap());
            at += 8 + c;
        }
        assert_eq!(decoded, data);
        assert_eq!(encode(OutputCodec::Lz4, b"", 1), vec![0, 0, 0, 0]);
        assert_eq!(encode(OutputCodec::Snappy, b"", 1), vec![0, 0, 0, 0]);
    }

    #[test]
    fn block_framing_round_trips() {
        for (codec, block) in [
            (OutputCodec::Lz4, BlockCodec::Lz4),
            (OutputCodec::Snappy, BlockCodec::Snappy),
        ] {
            for len in [
                0,
                1,
                100,
                block.block_size(),
                block.block_size() + 1,
                700_000,
            ] {
                let data = sample(len);
                for pieces in [1, 999, 1 << 20] {
                    let framed = encode(codec, &data, pieces);
                    let back = read_all(BlockReader::new(&framed[..], block)).unwrap();
                    assert_eq!(back, data, "{codec:?} len {len} pieces {pieces}");
                }
            }
        }
    }

    #[test]
    fn blocks_of_several_chunks_are_read() {
        // Hadoop writes one block of several chunks for a single write larger than a block.
        let data = sample(300_000);
        let (a, b) = data.split_at(120_000);
        let mut framed = (data.len() as u32).to_be_bytes().to_vec();
        for part in [a, b] {
            let c = snap::raw::Encoder::new().compress_vec(part).unwrap();
            framed.extend((c.len() as u32).to_be_bytes());
            framed.extend(c);
        }
        let back = read_all(BlockReader::new(&framed[..], BlockCodec::Snappy)).unwrap();
        assert_eq!(back, data);
    }

    #[test]
    fn corrupt_block_streams_are_errors_with_offsets() {
        let framed = encode(OutputCodec::Lz4, &sample(1000), 1000);
        let message = |bytes: &[u8], codec| {
            read_all(BlockReader::new(bytes, codec))
                .unwrap_err()
                .to_string()
        };
        // Truncated inside the chunk, inside a length, and after the block length.
        let m = message(&framed[..framed.len() - 3], BlockCodec::Lz4);
        assert!(
            m.contains("ends inside a chunk") && m.contains("byte 8"),
            "{m}"
        );
        assert!(message(&framed[..6], BlockCodec::Lz4).contains("ends inside a chunk length"));
        // A huge chunk length is refused before anything is allocated.
        let mut huge = framed.clone();
        huge[4..8].copy_from_slice(&u32::MAX.to_be_bytes());
        let m = message(&huge, BlockCodec::Lz4);
        assert!(
            m.contains("chunk length 4294967295") && m.contains("byte 4"),
            "{m}"
        );
        // A negative (Java int) block length.
        let mut negative = framed.clone();
        negative[0] = 0x80;
        assert!(message(&negative, BlockCodec::Lz4).contains("negative"));
        // Garbage inside the chunk.
        let mut garbage = framed.clone();
        for b in &mut garbage[8..] {
            *b = 0xff;
        }
        assert!(message(&garbage, BlockCodec::Lz4).contains("chunk of"));
        // A snappy chunk that decodes to more than its block announces.
        let mut short = encode(OutputCodec::Snappy, &sample(1000), 1000);
        short[2..4].copy_from_slice(&[0, 10]);
        assert!(message(&short, BlockCodec::Snappy).contains("more than the 10 left"));
    }

    #[test]
    fn a_zero_block_ends_the_stream_as_in_hadoop() {
        let mut framed = encode(OutputCodec::Snappy, b"abc\n", 1);
        framed.extend([0, 0, 0, 0, 9, 9, 9]);
        let back = read_all(BlockReader::new(&framed[..], BlockCodec::Snappy)).unwrap();
        assert_eq!(back, b"abc\n");
    }

    #[test]
    fn stream_codecs_round_trip_through_independent_decoders() {
        let data = sample(500_000);
        let gz = encode(OutputCodec::Gzip, &data, 777);
        assert_eq!(
            read_all(flate2::read::GzDecoder::new(&gz[..])).unwrap(),
            data
        );
        let bz = encode(OutputCodec::Bzip2, &data, 777);
        assert_eq!(
            read_all(bzip2::read::BzDecoder::new(&bz[..])).unwrap(),
            data
        );
        let zst = encode(OutputCodec::Zstd, &data, 777);
        assert_eq!(zstd::stream::decode_all(&zst[..]).unwrap(), data);
        let mut two = encode(OutputCodec::Deflate, &data, 777);
        two.extend(encode(OutputCodec::Deflate, b"tail\n", 1));
        let mut want = data.clone();
        want.extend(b"tail\n");
        assert_eq!(read_all(ZlibStreams::new(&two[..])).unwrap(), want);
        assert_eq!(encode(OutputCodec::None, &data, 777), data);
    }

    #[test]
    fn extensions_are_hadoops() {
        let all = [
            (OutputCodec::None, ""),
            (OutputCodec::Gzip, ".gz"),
            (OutputCodec::Bzip2, ".bz2"),
            (OutputCodec::Deflate, ".deflate"),
            (OutputCodec::Zstd, ".zst"),
            (OutputCodec::Lz4, ".lz4"),
            (OutputCodec::Snappy, ".snappy"),
        ];
        for (codec, ext) in all {
            assert_eq!(codec.extension(), ext);
        }
    }
}
