//! How a job's part files are formatted and named.

use sluice_hadoop::writable::{self, WritableError};
use sluice_io::seqfile::{CompressionKind, SeqCodec};

/// How emitted pairs become the records of the part files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// `key \t value \n` — Hadoop's `TextOutputFormat`.
    #[default]
    KeyValue,
    /// `key SEPARATOR value \n` — `TextOutputFormat` with
    /// `mapreduce.output.textoutputformat.separator` set.
    KeyValueWith(Vec<u8>),
    /// `value \n` — the key is only used for sorting and grouping.
    ValueOnly,
    /// `key value`, nothing between or after: records of a fixed-length format (Hadoop's
    /// `TeraOutputFormat`).
    Raw,
    /// SequenceFiles (Hadoop's `SequenceFileOutputFormat` and
    /// `SequenceFileAsBinaryOutputFormat`): each pair becomes one record, its key and value
    /// serialised as [`SequenceOutput`] says. The file names get no codec extension.
    SequenceFile(SequenceOutput),
    /// Nothing: the records are dropped, as Hadoop's `NullOutputFormat` drops them, for jobs
    /// run for what they do elsewhere. The output directory is made if it is missing and gets
    /// only `_SUCCESS`; one that exists already is kept with what it holds (Hadoop checks
    /// nothing of a `NullOutputFormat` output).
    Discard,
}

/// How the part files of [`OutputFormat::SequenceFile`] are written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SequenceOutput {
    /// The key class named in each file's header.
    pub key_class: String,
    /// The value class named in each file's header.
    pub value_class: String,
    /// How an emitted key becomes the record's key bytes.
    pub key: Serialized,
    /// How an emitted value becomes the record's value bytes.
    pub value: Serialized,
    /// Record, block or no compression.
    pub compression: CompressionKind,
    /// The codec of a compressed file.
    pub codec: SeqCodec,
}

/// How the bytes of an emitted key or value become the serialised `Writable` a SequenceFile
/// record holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serialized {
    /// A `Text`: a vint length, then the bytes.
    Text,
    /// A `BytesWritable` (or `TypedBytesWritable`): a 4-byte big-endian length, then the bytes.
    Bytes,
    /// A `NullWritable`: nothing at all.
    Null,
    /// The bytes as they are, already a serialised object
    /// (`SequenceFileAsBinaryOutputFormat`'s `appendRaw`).
    Raw,
}

impl Serialized {
    /// Appends the serialised form of `bytes` to `out`.
    ///
    /// # Errors
    /// Bytes longer than a Java array can hold (nothing is appended then).
    pub fn put(self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), WritableError> {
        match self {
            Serialized::Text => writable::write_text(out, bytes),
            Serialized::Bytes => writable::write_bytes_writable(out, bytes),
            Serialized::Null => Ok(()),
            Serialized::Raw => {
                out.extend_from_slice(bytes);
                Ok(())
            }
        }
    }
}

/// How part files are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartNames {
    /// `part-r-NNNNN` from reducers, `part-m-NNNNN` from map-only jobs: what Hadoop's
    /// MapReduce API (and its example jobs) write.
    #[default]
    Typed,
    /// `part-NNNNN` from either: what Hadoop's older API, which Hadoop Streaming uses, writes.
    Plain,
}

impl PartNames {
    /// The file name of task `task`'s output.
    pub fn name(self, is_map: bool, task: usize) -> String {
        match (self, is_map) {
            (PartNames::Typed, true) => format!("part-m-{task:05}"),
            (PartNames::Typed, false) => format!("part-r-{task:05}"),
            (PartNames::Plain, _) => format!("part-{task:05}"),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The serialised forms, as Hadoop's `Text.write`, `BytesWritable.write` and
    /// `NullWritable.write` lay them out (written out by hand here).
    #[test]
    fn serialised_forms_are_hadoops() {
        let mut out = Vec::new();
        Serialized::Text.put(b"abc", &mut out).unwrap();
        assert_eq!(out, b"\x03abc");
        out.clear();
        Serialized::Text.put(&[b'x'; 200], &mut out).unwrap();
        // WritableUtils.writeVInt(200): 0x8f (one length byte follows), then 200.
        assert_eq!(&out[..2], &[0x8f, 200]);
        assert_eq!(out.len(), 202);
        out.clear();
        Serialized::Bytes.put(b"ab", &mut out).unwrap();
        assert_eq!(out, b"\0\0\0\x02ab");
        out.clear();
        Serialized::Null.put(b"ignored", &mut out).unwrap();
        assert!(out.is_empty());
        Serialized::Raw.put(b"\x01\x02", &mut out).unwrap();
        assert_eq!(out, b"\x01\x02");
    }
}
