//! Sorting and merging of key/value records, all keys compared as unsigned bytes (the order of
//! Hadoop's `Text`).
//!
//! It sits on `sluice-format` and under the map side and the shuffle, which sort and merge
//! with it; it knows nothing of jobs, files or memory budgets.
//!
//! # Brief overview
//!
//! * [`RecordBuffer`]: the map side's in-memory store. Records are appended into large blocks;
//!   a compact fixed-size index entry per record (partition, 8-byte normalised key prefix,
//!   location) is what gets sorted, so sorting moves 32-byte entries, never the records.
//! * [`SortedCursor`]: anything that yields records in key order one at a time — a spill file
//!   segment, an in-memory run ([`BytesCursor`]), or a [`Merger`] of other cursors.
//! * [`Merger`]: a k-way merge over cursors with a tournament tree; equal keys come out in the
//!   order of their sources, which keeps the whole pipeline stable.
// The one `unsafe` block is a cache prefetch hint (`buffer::prefetch`); everything else is safe.
#![deny(unsafe_code)]

mod buffer;
mod counts;
mod cursor;
mod merge;
mod order;
mod prefix;
mod radix;
mod tolerant;

pub use buffer::{RecordBuffer, RecordTooLarge, INDEX_ENTRY_BYTES};
pub use counts::{CountTable, ShortKey};
pub use cursor::{BytesCursor, CursorError, SortedCursor};
pub use merge::Merger;
pub use order::{KeyComparator, KeyOrder};
pub use prefix::normalized_prefix;
pub use tolerant::sort_tolerant_by;
