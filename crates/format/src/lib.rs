//! Byte formats shared by every stage of sluice.
//!
//! The bottom of the workspace: it depends on no other sluice crate, and every crate that
//! reads or writes records (the sort, the spill files, the shuffle, the Hadoop formats) uses
//! it.
//!
//! # Brief overview
//!
//! * [`record`]: how one key/value pair is laid out in memory and inside a block
//!   (`varint key_len, varint value_len, key bytes, value bytes`).
//! * [`Codec`]: block compression (`none`, `lz4`, `zstd`).
//! * [`BlockWriter`] / [`BlockReader`]: a stream of self-describing blocks, each with a
//!   CRC32C so that a flipped bit in a spill file is detected, never silently merged.
//!   [`verify_blocks`] checks stored blocks (e.g. a segment a server ships as is) without
//!   decompressing them.
//! * [`RunWriter`] / [`RunReader`]: a sorted run = records packed into blocks. The reader is a
//!   cursor (`advance`, then `key` / `value`) so that a k-way merge can look at the current
//!   record of many runs at once without copying.
//!
//! # What callers must know
//!
//! * Every byte read is checked: a damaged block is reported as
//!   [`FormatError::ChecksumMismatch`] or [`FormatError::Corrupt`] with the absolute offset of
//!   its header, and no record of it is returned. Readers never panic on bad input.
//! * A stream cut exactly at a block boundary reads as a valid, shorter stream (there is no
//!   trailer). Callers that know the expected length compare it with [`RunReader::offset`] /
//!   [`BlockReader::offset`] once the end is reached.
//! * After a reader returned an error it stays failed; after a writer returned an error the
//!   output is incomplete and the writer should be dropped.
//! * Readers and writers reuse their buffers: once warmed up they do not allocate per record or
//!   per block. Writers issue two `write_all` calls per block, so give them a buffered writer.
//!
//! # Where this crate sits
//!
//! These are sluice's own formats, the bytes its stages hand each other: nothing here knows
//! about partitions, files or memory budgets (those live in higher crates), and nothing here
//! reproduces Hadoop. Hadoop's formats (Java string order, key-field options, typed bytes,
//! TeraGen rows, `Writable` serialisation) are in `sluice-hadoop`, beside this crate.
#![forbid(unsafe_code)]

mod block;
mod codec;
mod error;
pub mod record;
mod run;

pub use block::{
    block_len, verify_blocks, BlockReader, BlockWriter, BufferWatch, BLOCK_HEADER_LEN,
    MAX_BLOCK_LEN,
};
pub use codec::Codec;
pub use error::FormatError;
pub use run::{RunReader, RunWriter};
