//! Getting bytes in and out of a sluice job on local files.
//!
//! # Brief overview
//!
//! * [`discover_inputs`] turns the user's `--input` arguments (files, directories, globs) into a
//!   sorted list of [`InputFile`]s, skipping hidden names (`_x`, `.x`) as Hadoop does.
//! * [`plan_splits`] cuts them into [`Split`]s: byte ranges for plain files, whole files for
//!   compressed ones; [`plan_line_splits`] cuts them into splits of N lines each (Hadoop's
//!   `NLineInputFormat`).
//! * [`LineReader`] reads the lines of one split with Hadoop `TextInputFormat` semantics;
//!   [`FixedRecordReader`] reads fixed-length records (Hadoop's `TeraInputFormat`).
//! * [`CompressedWriter`] compresses part files as Hadoop's codecs do ([`OutputCodec`]).
//! * [`OutputCommitter`] writes part files into a hidden temporary directory and renames it into
//!   place only when the job succeeds, then writes `_SUCCESS`.
#![forbid(unsafe_code)]

mod codec;
mod direct;
mod error;
mod fixed;
mod input;
mod line;
mod location;
mod nline;
mod output;
mod readahead;
mod split;

pub use codec::{CompressedWriter, OutputCodec};
pub use direct::{DirectWriter, DIRECT_CHUNK};
pub use error::IoError;
pub use fixed::FixedRecordReader;
pub use input::{discover_inputs, Compression, InputFile};
pub use line::LineReader;
pub use location::local_path;
pub use nline::plan_line_splits;
pub use output::OutputCommitter;
pub use readahead::ReadAhead;
pub use split::{plan_splits, Split};
