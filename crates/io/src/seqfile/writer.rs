//! Writing a SequenceFile as Hadoop's `SequenceFile.Writer` (and its record- and
//! block-compressing subclasses) writes it.

use std::hash::{BuildHasher, Hasher};
use std::io::{self, Write};

use sluice_hadoop::writable;

use super::{CompressionKind, SeqCodec, SeqHeader, BLOCK_SIZE, SYNC_ESCAPE, SYNC_INTERVAL};

/// How a [`SeqFileWriter`] writes: classes, compression, metadata, and Hadoop's two sizes.
#[derive(Debug, Clone)]
pub struct SeqWriteOptions {
    /// The key class name written in the header (the keys must be its serialised values).
    pub key_class: String,
    /// The value class name.
    pub value_class: String,
    /// Record, block or no compression.
    pub compression: CompressionKind,
    /// The codec when compressed (`DefaultCodec` if `None`).
    pub codec: Option<SeqCodec>,
    /// Metadata pairs for the header.
    pub metadata: Vec<(Vec<u8>, Vec<u8>)>,
    /// Bytes between sync entries ([`SYNC_INTERVAL`] by default, as Hadoop's writer).
    pub sync_interval: u64,
    /// Uncompressed key and value bytes that make a block ([`BLOCK_SIZE`] by default).
    pub block_size: usize,
}

impl SeqWriteOptions {
    /// Options for an uncompressed file of these classes, with Hadoop's default sizes.
    pub fn new(key_class: impl Into<String>, value_class: impl Into<String>) -> SeqWriteOptions {
        SeqWriteOptions {
            key_class: key_class.into(),
            value_class: value_class.into(),
            compression: CompressionKind::None,
            codec: None,
            metadata: Vec::new(),
            sync_interval: SYNC_INTERVAL,
            block_size: BLOCK_SIZE,
        }
    }
}

/// Writes records to a SequenceFile over `W`. [`SeqFileWriter::finish`] writes the last block
/// of a block-compressed file; a writer dropped without it loses that block.
pub struct SeqFileWriter<W: Write> {
    out: W,
    /// Bytes written so far.
    pos: u64,
    /// Where the last sync entry ended (0 before the first, as in Hadoop).
    last_sync: u64,
    sync: [u8; 16],
    options: SeqWriteOptions,
    codec: SeqCodec,
    /// A record's compressed value, reused.
    scratch: Vec<u8>,
    /// The block being gathered: key lengths, keys, value lengths, values.
    block: [Vec<u8>; 4],
    block_records: i32,
}

impl<W: Write> SeqFileWriter<W> {
    /// Starts a file: writes the header with a fresh sync marker.
    ///
    /// # Errors
    /// The writer's error, or a header Hadoop could not read (a class name over 2 GiB).
    pub fn new(out: W, options: SeqWriteOptions) -> io::Result<SeqFileWriter<W>> {
        let sync = fresh_sync();
        let codec = options.codec.unwrap_or(SeqCodec::Default);
        let header = SeqHeader {
            key_class: options.key_class.clone(),
            value_class: options.value_class.clone(),
            compression: options.compression,
            codec: (options.compression != CompressionKind::None).then_some(codec),
            metadata: options.metadata.clone(),
            sync,
        };
        let mut writer = SeqFileWriter {
            out,
            pos: 0,
            last_sync: 0,
            sync,
            options,
            codec,
            scratch: Vec::new(),
            block: Default::default(),
            block_records: 0,
        };
        writer.put(&header.encode()?)?;
        Ok(writer)
    }

    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// A sync entry, unless one ends right here (Hadoop's `Writer.sync`).
    fn sync_entry(&mut self) -> io::Result<()> {
        if self.last_sync != self.pos {
            self.put(&SYNC_ESCAPE)?;
            let sync = self.sync;
            self.put(&sync)?;
            self.last_sync = self.pos;
        }
        Ok(())
    }

    /// Appends a record: `key` and `value` are the serialised key and value.
    ///
    /// # Errors
    /// The writer's error, or a record longer than a Java `int` can count.
    pub fn append(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        match self.options.compression {
            CompressionKind::Block => self.append_to_block(key, value),
            CompressionKind::None | CompressionKind::Record => {
                if self.pos >= self.last_sync + self.options.sync_interval {
                    self.sync_entry()?;
                }
                let mut compressed = std::mem::take(&mut self.scratch);
                let written = self.write_record(key, value, &mut compressed);
                self.scratch = compressed;
                written
            }
        }
    }

    /// Writes one record, its value compressed into `compressed` first when records are.
    fn write_record(
        &mut self,
        key: &[u8],
        value: &[u8],
        compressed: &mut Vec<u8>,
    ) -> io::Result<()> {
        let value: &[u8] = if self.options.compression == CompressionKind::Record {
            compressed.clear();
            self.codec.compress(value, compressed)?;
            compressed
        } else {
            value
        };
        let record_len = java_len(key.len() as u64 + value.len() as u64)?;
        let key_len = java_len(key.len() as u64)?;
        let mut head = [0u8; 8];
        head[..4].copy_from_slice(&record_len.to_be_bytes());
        head[4..].copy_from_slice(&key_len.to_be_bytes());
        self.put(&head)?;
        self.put(key)?;
        self.put(value)
    }

    fn append_to_block(&mut self, key: &[u8], value: &[u8]) -> io::Result<()> {
        writable::write_vint(&mut self.block[0], java_len(key.len() as u64)?);
        self.block[1].extend_from_slice(key);
        writable::write_vint(&mut self.block[2], java_len(value.len() as u64)?);
        self.block[3].extend_from_slice(value);
        self.block_records += 1;
        if self.block[1].len() + self.block[3].len() >= self.options.block_size {
            self.write_block()?;
        }
        Ok(())
    }

    /// Writes the gathered block (Hadoop's `BlockCompressWriter.sync`).
    fn write_block(&mut self) -> io::Result<()> {
        if self.block_records == 0 {
            return Ok(());
        }
        self.sync_entry()?;
        let mut head = Vec::new();
        writable::write_vint(&mut head, self.block_records);
        self.put(&head)?;
        for i in 0..4 {
            let mut compressed = std::mem::take(&mut self.scratch);
            compressed.clear();
            self.codec.compress(&self.block[i], &mut compressed)?;
            head.clear();
            writable::write_vint(&mut head, java_len(compressed.len() as u64)?);
            self.put(&head)?;
            self.put(&compressed)?;
            self.scratch = compressed;
            self.block[i].clear();
        }
        self.block_records = 0;
        Ok(())
    }

    /// Writes what is still gathered and returns the inner writer (not flushed).
    ///
    /// # Errors
    /// The writer's error.
    pub fn finish(mut self) -> io::Result<W> {
        if self.options.compression == CompressionKind::Block {
            self.write_block()?;
        }
        Ok(self.out)
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

/// A length as the non-negative Java `int` the format stores.
fn java_len(len: u64) -> io::Result<i32> {
    i32::try_from(len).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a SequenceFile record of {len} bytes is longer than Hadoop's 2 GiB limit"),
        )
    })
}

/// A sync marker unlikely to occur in the data or in another file: 16 bytes from the
/// randomly keyed hasher of the standard library, fed the time and the process id (Hadoop
/// hashes a UUID and the time).
fn fresh_sync() -> [u8; 16] {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mut out = [0u8; 16];
    for (i, half) in out.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(now);
        h.write_u32(std::process::id());
        h.write_usize(i);
        half.copy_from_slice(&h.finish().to_be_bytes());
    }
    out
}
