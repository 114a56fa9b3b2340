use std::io;

/// Errors raised while encoding or decoding sluice's byte formats.
///
/// `source` fields name what was being read (a spill file path, "in-memory run", ...) and
/// `offset` is the byte offset of the offending block within that source, so that a user
/// can tell which file is damaged.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// The underlying reader or writer failed.
    #[error("I/O error on {source_name}")]
    Io {
        /// What was being read or written.
        source_name: String,
        /// The error reported by the operating system.
        #[source]
        error: io::Error,
    },
    /// A block's CRC32C did not match its contents: the data was corrupted after it was written.
    #[error("checksum mismatch in block at offset {offset} of {source_name}: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// What was being read.
        source_name: String,
        /// Byte offset of the block header.
        offset: u64,
        /// The checksum stored in the block header.
        stored: u32,
        /// The checksum computed over the bytes read.
        computed: u32,
    },
    /// The bytes do not form a valid block or record (bad header, truncated data, impossible lengths).
    #[error("corrupt data at offset {offset} of {source_name}: {detail}")]
    Corrupt {
        /// What was being read.
        source_name: String,
        /// Byte offset of the block (or record) where the problem was found.
        offset: u64,
        /// What exactly is wrong.
        detail: String,
    },
    /// A record whose key or value is longer than the 4 GiB a record's length can say.
    #[error(
        "record too long to encode: key {key_len} bytes, value {value_len} bytes (at most {} each)",
        u32::MAX
    )]
    RecordTooLong {
        /// The key's length.
        key_len: usize,
        /// The value's length.
        value_len: usize,
    },
    /// A codec name or id is not one sluice knows.
    #[error("unknown codec {0:?} (expected none, lz4 or zstd)")]
    UnknownCodec(String),
    /// The compression library failed to compress or decompress a block.
    #[error("{codec} failed on block at offset {offset} of {source_name}: {detail}")]
    Codec {
        /// Which codec failed.
        codec: &'static str,
        /// What was being read or written.
        source_name: String,
        /// Byte offset of the block.
        offset: u64,
        /// The library's message.
        detail: String,
    },
}
