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
//! # Hadoop compatibility
//!
//! * [`keyfield`]: Hadoop's `KeyFieldBasedComparator` and `KeyFieldBasedPartitioner`
//!   (`-k2,2nr`-style key options), reproducing Hadoop's exact order and partition numbers.
//! * [`typedbytes`]: Hadoop Streaming's typed bytes (`-io typedbytes`): cutting a child's
//!   output into raw values, encoding map input, and the text Hadoop prints for a value.
//! * [`tera`]: the rows Hadoop's TeraGen writes (byte-exact, any row number) and the
//!   TeraGen/TeraValidate checksum.
//! * [`words`]: the words of a line as Java's `StringTokenizer` cuts them (Hadoop's
//!   `WordCount`), classified 64 bytes at a time.
//! * [`java`]: Java's string order, string hash, lossy UTF-8 decoding and `Double.toString`,
//!   which the modules above need to print and order values as Hadoop does.
//!
//! Apart from the partition arithmetic of `keyfield` and `typedbytes`, nothing here knows about
//! partitions, files or memory budgets: those live in higher crates.
// The one `unsafe` block calls the SSE2 classifier of `words` (see its SAFETY comment);
// everything else is safe.
#![deny(unsafe_code)]

mod block;
mod codec;
mod error;
pub mod java;
pub mod keyfield;
pub mod record;
mod run;
pub mod tera;
pub mod typedbytes;
pub mod words;

pub use block::{verify_blocks, BlockReader, BlockWriter, BLOCK_HEADER_LEN, MAX_BLOCK_LEN};
pub use codec::Codec;
pub use error::FormatError;
pub use run::{RunReader, RunWriter};
