//! Hadoop's SequenceFile (`org.apache.hadoop.io.SequenceFile`, version 6), read and written
//! byte for byte as Hadoop 3.4 does.
//!
//! # Layout
//!
//! ```text
//! header   "SEQ" 6, key class, value class (Text.writeString: vint length, UTF-8),
//!          compressed (1 byte), block-compressed (1 byte), [codec class if compressed],
//!          metadata (4-byte count, then Text name / Text value pairs), 16-byte sync marker
//! records  (not block-compressed) 4-byte record length, 4-byte key length, key, value
//!          (the value is one complete codec stream when record-compressed);
//!          before a record, when 102,400 bytes have passed since the last sync
//!          (SequenceFile.SYNC_INTERVAL), a sync entry: 4-byte -1, then the 16 sync bytes
//! blocks    (block-compressed) sync entry, vint record count, then four buffers, each a vint
//!          compressed length and one complete codec stream: the keys' vint lengths, the keys,
//!          the values' vint lengths, the values. A block is written when its keys and values
//!          reach 1,000,000 bytes (io.seqfile.compress.blocksize) and at the end.
//! ```
//!
//! Every integer is big-endian; keys and values are their `Writable`'s serialised bytes, which
//! this module passes through unchanged (`sluice_hadoop::writable_type` reads them).
//!
//! # Splits
//!
//! A split of a SequenceFile reads what Hadoop's `SequenceFileRecordReader` reads: it starts at
//! the first sync entry at or after its first byte (the first split at the end of the header)
//! and reads records until it meets a sync entry that starts at or after its end. So the
//! records between two sync entries belong to the split holding the first of the two.
//!
//! # Codecs
//!
//! A compressed file names its codec class: `DefaultCodec`/`DeflateCodec` (zlib), `GzipCodec`,
//! `BZip2Codec`, `SnappyCodec` and `Lz4Codec` (Hadoop's block framing), `ZStandardCodec`. Each
//! compressed buffer or value is one finished stream of the codec, made and read by the same
//! code as compressed part files (`crate::codec`).

mod header;
mod reader;
mod writer;

pub use header::{starts_as_sequence_file, SeqCodec, SeqHeader, SNIFF_LEN};
pub use reader::{SeqFileReader, SeqRecord};
pub use writer::{SeqFileWriter, SeqWriteOptions};

/// How a SequenceFile's records are compressed (Hadoop's `SequenceFile.CompressionType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompressionKind {
    /// Keys and values stored as they are.
    #[default]
    None,
    /// Each value compressed on its own; keys stored as they are.
    Record,
    /// Records gathered in blocks, whose keys, values and lengths are compressed together.
    Block,
}

impl CompressionKind {
    /// Parses Hadoop's names (`NONE`, `RECORD`, `BLOCK`), as
    /// `mapreduce.output.fileoutputformat.compress.type` takes them.
    pub fn parse(name: &str) -> Option<CompressionKind> {
        match name {
            "NONE" => Some(CompressionKind::None),
            "RECORD" => Some(CompressionKind::Record),
            "BLOCK" => Some(CompressionKind::Block),
            _ => None,
        }
    }
}

/// The sync entry's escape: a record length of -1.
const SYNC_ESCAPE: [u8; 4] = [0xff; 4];

/// Bytes of a sync marker.
pub const SYNC_HASH_SIZE: usize = 16;

/// Bytes of a sync entry: the escape and the marker.
const SYNC_SIZE: u64 = 4 + SYNC_HASH_SIZE as u64;

/// Hadoop's `SequenceFile.SYNC_INTERVAL`: a sync entry goes before the first record written
/// this many bytes after the last one.
pub const SYNC_INTERVAL: u64 = 5 * 1024 * SYNC_SIZE;

/// Hadoop's `io.seqfile.compress.blocksize` default: a block is written once its keys and
/// values reach this many bytes.
pub const BLOCK_SIZE: usize = 1_000_000;

/// The most bytes one decompressed buffer or value may hold: a corrupt or hostile file cannot
/// make a reader allocate more than this for one buffer. Hadoop's writer keeps blocks near
/// [`BLOCK_SIZE`]; only a single record of this size would need more.
pub const MAX_DECOMPRESSED: u64 = 1 << 30;

/// A key and value as one byte string, the form a SequenceFile record takes in the engine's
/// map input (whose records are single byte strings): a 4-byte big-endian key length, the
/// key, then the value.
///
/// # Errors
/// A key longer than 4 GiB is refused (Hadoop's keys are at most 2 GiB).
pub fn join_pair(key: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<(), std::io::Error> {
    let len = u32::try_from(key.len())
        .map_err(|_| std::io::Error::other("a SequenceFile key longer than 4 GiB"))?;
    out.clear();
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    Ok(())
}

/// The key and value of a record made by [`join_pair`]; `None` if `record` is not one.
pub fn split_pair(record: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = record.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
    (len <= rest.len()).then(|| rest.split_at(len))
}

#[cfg(test)]
mod tests;
