//! The header of a SequenceFile and the codecs it can name.

use std::io::{self, Read};

use sluice_hadoop::writable;

use super::{CompressionKind, SYNC_HASH_SIZE};
use crate::codec::{CompressedWriter, OutputCodec};
use crate::line::decoder;
use crate::Compression;

/// A codec a SequenceFile names, with Hadoop's class name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqCodec {
    /// `DefaultCodec`: zlib.
    Default,
    /// `DeflateCodec`: zlib too, under its other name.
    Deflate,
    /// `GzipCodec`: a gzip member per buffer.
    Gzip,
    /// `BZip2Codec`.
    Bzip2,
    /// `SnappyCodec`, in Hadoop's block framing.
    Snappy,
    /// `Lz4Codec`, in Hadoop's block framing.
    Lz4,
    /// `ZStandardCodec`: a zstd frame.
    Zstd,
}

const CODECS: [SeqCodec; 7] = [
    SeqCodec::Default,
    SeqCodec::Deflate,
    SeqCodec::Gzip,
    SeqCodec::Bzip2,
    SeqCodec::Snappy,
    SeqCodec::Lz4,
    SeqCodec::Zstd,
];

impl SeqCodec {
    /// The codec's Java class name.
    pub fn class_name(self) -> &'static str {
        match self {
            SeqCodec::Default => "org.apache.hadoop.io.compress.DefaultCodec",
            SeqCodec::Deflate => "org.apache.hadoop.io.compress.DeflateCodec",
            SeqCodec::Gzip => "org.apache.hadoop.io.compress.GzipCodec",
            SeqCodec::Bzip2 => "org.apache.hadoop.io.compress.BZip2Codec",
            SeqCodec::Snappy => "org.apache.hadoop.io.compress.SnappyCodec",
            SeqCodec::Lz4 => "org.apache.hadoop.io.compress.Lz4Codec",
            SeqCodec::Zstd => "org.apache.hadoop.io.compress.ZStandardCodec",
        }
    }

    /// Every codec, in a fixed order.
    pub(crate) fn all() -> [SeqCodec; 7] {
        CODECS
    }

    /// The codec of a class name; `None` for one sluice does not know.
    pub fn from_class_name(name: &str) -> Option<SeqCodec> {
        CODECS.into_iter().find(|c| c.class_name() == name)
    }

    /// The codec of a compressed part file of the same class.
    pub fn from_output_codec(codec: OutputCodec) -> Option<SeqCodec> {
        Some(match codec {
            OutputCodec::None => return None,
            OutputCodec::Gzip => SeqCodec::Gzip,
            OutputCodec::Bzip2 => SeqCodec::Bzip2,
            OutputCodec::Deflate => SeqCodec::Default,
            OutputCodec::Zstd => SeqCodec::Zstd,
            OutputCodec::Lz4 => SeqCodec::Lz4,
            OutputCodec::Snappy => SeqCodec::Snappy,
        })
    }

    /// The part-file codec that writes the same streams.
    pub(crate) fn output(self) -> OutputCodec {
        match self {
            SeqCodec::Default | SeqCodec::Deflate => OutputCodec::Deflate,
            SeqCodec::Gzip => OutputCodec::Gzip,
            SeqCodec::Bzip2 => OutputCodec::Bzip2,
            SeqCodec::Snappy => OutputCodec::Snappy,
            SeqCodec::Lz4 => OutputCodec::Lz4,
            SeqCodec::Zstd => OutputCodec::Zstd,
        }
    }

    fn input(self) -> Compression {
        match self {
            SeqCodec::Default | SeqCodec::Deflate => Compression::Deflate,
            SeqCodec::Gzip => Compression::Gzip,
            SeqCodec::Bzip2 => Compression::Bzip2,
            SeqCodec::Snappy => Compression::Snappy,
            SeqCodec::Lz4 => Compression::Lz4,
            SeqCodec::Zstd => Compression::Zstd,
        }
    }

    /// Short name for messages.
    pub fn name(self) -> &'static str {
        self.input().name()
    }

    /// `data` as one finished stream of the codec, appended to `out`.
    pub(crate) fn compress(self, data: &[u8], out: &mut Vec<u8>) -> io::Result<()> {
        let mut w = CompressedWriter::new(self.output(), std::mem::take(out))?;
        io::Write::write_all(&mut w, data)?;
        *out = w.finish()?;
        Ok(())
    }

    /// Decodes one stream of the codec into `out` (cleared first), refusing to produce more
    /// than `limit` bytes.
    pub(crate) fn decompress(self, data: &[u8], limit: u64, out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        let reader = decoder(self.input(), io::Cursor::new(data.to_vec()))?;
        let got = reader.take(limit.saturating_add(1)).read_to_end(out)?;
        if got as u64 > limit {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("decodes to more than {limit} bytes"),
            ));
        }
        Ok(())
    }
}

/// What a SequenceFile's header says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeqHeader {
    /// The key class name.
    pub key_class: String,
    /// The value class name.
    pub value_class: String,
    /// How records are compressed.
    pub compression: CompressionKind,
    /// The codec of a compressed file.
    pub codec: Option<SeqCodec>,
    /// The metadata pairs, in file order.
    pub metadata: Vec<(Vec<u8>, Vec<u8>)>,
    /// The sync marker.
    pub sync: [u8; SYNC_HASH_SIZE],
}

/// The version byte this module writes and the oldest it reads (metadata came with 6).
const VERSION: u8 = 6;

/// The bytes [`starts_as_sequence_file`] needs.
pub const SNIFF_LEN: usize = 4;

/// Whether a file whose first bytes are `start` is a SequenceFile: `SEQ` then a version byte
/// Hadoop has written (1 to 6). The version byte tells a SequenceFile from a text file that
/// happens to start with `SEQ` (a header line `SEQ_ID<TAB>...`), which Hadoop's text jobs
/// read as text; an old version is still taken for a SequenceFile, so that its reader says
/// which versions it reads.
pub fn starts_as_sequence_file(start: &[u8]) -> bool {
    matches!(start, [b'S', b'E', b'Q', version, ..] if (1..=VERSION).contains(version))
}

impl SeqHeader {
    /// The header's bytes.
    ///
    /// # Errors
    /// A class name or metadata entry longer than Hadoop can read.
    pub fn encode(&self) -> io::Result<Vec<u8>> {
        let bad = |e: writable::WritableError| io::Error::new(io::ErrorKind::InvalidInput, e);
        let mut out = b"SEQ".to_vec();
        out.push(VERSION);
        writable::write_text(&mut out, self.key_class.as_bytes()).map_err(bad)?;
        writable::write_text(&mut out, self.value_class.as_bytes()).map_err(bad)?;
        out.push(u8::from(self.compression != CompressionKind::None));
        out.push(u8::from(self.compression == CompressionKind::Block));
        if self.compression != CompressionKind::None {
            let codec = self.codec.unwrap_or(SeqCodec::Default);
            writable::write_text(&mut out, codec.class_name().as_bytes()).map_err(bad)?;
        }
        let count = i32::try_from(self.metadata.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many metadata pairs"))?;
        out.extend_from_slice(&count.to_be_bytes());
        for (name, value) in &self.metadata {
            writable::write_text(&mut out, name).map_err(bad)?;
            writable::write_text(&mut out, value).map_err(bad)?;
        }
        out.extend_from_slice(&self.sync);
        Ok(out)
    }

    /// Reads a header from the start of a file; returns it and its length in bytes. Lengths in
    /// it are checked against `file_len` before anything is allocated for them.
    ///
    /// # Errors
    /// `(offset, reason)`: where the header is wrong and why (not a SequenceFile, a version
    /// sluice does not read, an unknown codec, a truncated header).
    pub(crate) fn read(
        input: &mut impl Read,
        file_len: u64,
    ) -> Result<(SeqHeader, u64), (u64, String)> {
        let mut r = Counting {
            inner: input,
            pos: 0,
            len: file_len,
        };
        let magic = r.bytes(4)?;
        if magic[..3] != *b"SEQ" {
            return Err((0, "not a SequenceFile (it does not start with SEQ)".into()));
        }
        if magic[3] != VERSION {
            return Err((
                3,
                format!(
                    "SequenceFile version {} is not read by sluice (only version 6, which Hadoop \
                     has written since 0.20)",
                    magic[3]
                ),
            ));
        }
        let key_class = r.string("the key class")?;
        let value_class = r.string("the value class")?;
        let flags = r.bytes(2)?;
        let compression = match (flags[0] != 0, flags[1] != 0) {
            (false, _) => CompressionKind::None,
            (true, false) => CompressionKind::Record,
            (true, true) => CompressionKind::Block,
        };
        let codec = if compression == CompressionKind::None {
            None
        } else {
            let at = r.pos;
            let name = r.string("the codec class")?;
            Some(SeqCodec::from_class_name(&name).ok_or_else(|| {
                (at, format!("unknown compression codec {name} (sluice reads Hadoop's DefaultCodec, DeflateCodec, GzipCodec, BZip2Codec, SnappyCodec, Lz4Codec and ZStandardCodec)"))
            })?)
        };
        let at = r.pos;
        let count = i32::from_be_bytes(r.array()?);
        let count =
            usize::try_from(count).map_err(|_| (at, format!("negative metadata count {count}")))?;
        let mut metadata = Vec::new();
        for _ in 0..count {
            let name = r.text("a metadata name")?;
            let value = r.text("a metadata value")?;
            metadata.push((name, value));
        }
        let sync = r.array()?;
        Ok((
            SeqHeader {
                key_class,
                value_class,
                compression,
                codec,
                metadata,
                sync,
            },
            r.pos,
        ))
    }
}

/// A reader that counts its position and refuses lengths past the file's end.
struct Counting<'a, R: Read> {
    inner: &'a mut R,
    pos: u64,
    len: u64,
}

impl<R: Read> Counting<'_, R> {
    fn bytes(&mut self, n: u64) -> Result<Vec<u8>, (u64, String)> {
        if n > self.len.saturating_sub(self.pos) {
            return Err((
                self.pos,
                format!("the header needs {n} more bytes but the file ends first"),
            ));
        }
        let mut buf = vec![0; usize::try_from(n).unwrap_or(usize::MAX)];
        self.inner
            .read_exact(&mut buf)
            .map_err(|e| (self.pos, format!("cannot read the header: {e}")))?;
        self.pos += n;
        Ok(buf)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], (u64, String)> {
        let bytes = self.bytes(N as u64)?;
        let mut out = [0; N];
        out.copy_from_slice(&bytes);
        Ok(out)
    }

    /// A `Text`'s bytes: a vint length, then the bytes.
    fn text(&mut self, what: &str) -> Result<Vec<u8>, (u64, String)> {
        let at = self.pos;
        let first = self.bytes(1)?[0];
        let size = writable::decode_vint_size(first);
        let mut encoded = vec![first];
        encoded.extend(self.bytes(size as u64 - 1)?);
        let len = writable::WritableReader::new(&encoded)
            .read_vint()
            .map_err(|e| (at, format!("{what}: {e}")))?;
        let len =
            u64::try_from(len).map_err(|_| (at, format!("{what} has a negative length {len}")))?;
        self.bytes(len)
    }

    /// A `Text` that must be UTF-8 (a class name).
    fn string(&mut self, what: &str) -> Result<String, (u64, String)> {
        let at = self.pos;
        String::from_utf8(self.text(what)?).map_err(|_| (at, format!("{what} is not UTF-8")))
    }
}
