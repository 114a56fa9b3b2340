//! Byte formats shared by every stage of sluice.
//!
//! # Brief overview
//!
//! * [`record`]: how one key/value pair is laid out in memory and inside a block
//!   (`varint key_len, varint value_len, key bytes, value bytes`).
//! * [`Codec`]: block compression (`none`, `lz4`, `zstd`).
//! * [`BlockWriter`] / [`BlockReader`]: a stream of self-describing blocks, each with a
//!   CRC32C so that a flipped bit in a spill file is detected, never silently merged.
//! * [`RunWriter`] / [`RunReader`]: a sorted run = records packed into blocks. The reader is a
//!   cursor (`advance`, then `key` / `value`) so that a k-way merge can look at the current
//!   record of many runs at once without copying.
//!
//! Nothing here knows about partitions, files or memory budgets: those live in higher crates.
#![forbid(unsafe_code)]

mod block;
mod codec;
mod error;
pub mod record;
mod run;

pub use block::{BlockReader, BlockWriter, BLOCK_HEADER_LEN, MAX_BLOCK_LEN};
pub use codec::Codec;
pub use error::FormatError;
pub use run::{RunReader, RunWriter};
