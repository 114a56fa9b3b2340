//! Getting bytes in and out of a sluice job.
//!
//! # Storage behind traits
//!
//! The engine reads and writes through two traits, so that stores other than the local file
//! system can be added as implementations:
//!
//! * [`Location`]: a parsed, validated location — a local path or `file:` URI, and already the
//!   `hdfs://host:port/path` and `s3://bucket/key` forms (which no storage serves yet).
//! * [`Storage`] (object safe, shared as `Arc<dyn Storage>`): [`status`](Storage::status) and
//!   [`list`](Storage::list) giving [`FileStatus`]es, the recursive listing and glob expansion
//!   input discovery needs, ranged reads ([`open_range`](Storage::open_range)) and new files
//!   ([`create`](Storage::create), a [`StorageWriter`]). [`LocalStorage`] is the one
//!   implementation; [`storage_for`] picks the storage of a location.
//! * [`JobCommitter`]: Hadoop's output commit protocol (set up the job; per task attempt a
//!   part file's writer, committed or aborted; commit the job, making the output visible at
//!   once with `_SUCCESS`, or abort it). [`LocalRenameCommitter`] is the one implementation,
//!   built on [`OutputCommitter`].
//!
//! The readers and planners work on any storage: [`discover`] finds [`StoredInput`]s,
//! [`plan_input_splits`] and [`plan_line_splits_in`] cut them, and [`LineReader::open_in`] and
//! [`FixedRecordReader::open_in`] read their splits.
//!
//! # The local entry points
//!
//! The functions the engine uses today take local paths and are the local storage underneath:
//!
//! * [`discover_inputs`] turns the user's `--input` arguments (files, directories, globs) into a
//!   sorted list of [`InputFile`]s, skipping hidden names (`_x`, `.x`) as Hadoop does.
//! * [`plan_splits`] cuts them into [`Split`]s: byte ranges for plain and bzip2 files, whole
//!   files for other compressed ones; [`plan_line_splits`] cuts them into splits of N lines
//!   each (Hadoop's `NLineInputFormat`).
//! * [`LineReader`] reads the lines of one split with Hadoop `TextInputFormat` semantics;
//!   [`FixedRecordReader`] reads fixed-length records (Hadoop's `TeraInputFormat`).
//! * [`CompressedWriter`] compresses part files as Hadoop's codecs do ([`OutputCodec`]).
//! * [`OutputCommitter`] writes part files into a hidden temporary directory and renames it into
//!   place only when the job succeeds, then writes `_SUCCESS`; [`DiscardingCommitter`] commits
//!   a job whose records go nowhere (Hadoop's `NullOutputFormat`).
//! * [`seqfile`] reads and writes Hadoop's SequenceFiles, splits included.
//! * [`DirectWriter`] writes files past the page cache; [`ReadAhead`] reads a range of a file
//!   with read-ahead hints (the spill merge's many streams).
#![forbid(unsafe_code)]

mod braces;
mod bzip2_split;
mod checksum_file;
mod codec;
mod combine;
mod commit;
mod direct;
mod discard;
mod error;
mod fixed;
mod input;
mod line;
mod local;
mod location;
mod nline;
mod output;
mod owned_dir;
mod readahead;
pub mod seqfile;
mod split;
mod storage;
mod stores;

pub use checksum_file::is_checksum_file_name;
pub use codec::{CompressedWriter, OutputCodec};
pub use combine::{plan_combined_splits, CombineSizes};
pub use commit::{committer_for, JobCommitter, LocalRenameCommitter, PartAttempt};
pub use direct::{DirectWriter, DIRECT_CHUNK};
pub use discard::DiscardingCommitter;
pub use error::IoError;
pub use fixed::FixedRecordReader;
pub use input::{
    brace_alternatives, discover, discover_inputs, discover_with, is_hidden_name, Compression,
    InputFile, NestedDirectories, StoredInput,
};
pub use line::{open_decompressed, BufferBudget, LineReader};
pub use local::{available_bytes, LocalStorage};
pub use location::{local_path, Location, Scheme};
pub use nline::{plan_line_splits, plan_line_splits_in};
pub use output::{staging_prefix, OutputCommitter};
pub use owned_dir::{remove_abandoned, remove_if_unowned, OwnedDir};
pub use readahead::ReadAhead;
pub use split::{
    plan_block_splits, plan_input_splits, plan_splits, whole_compressed_files, MapSplit, Split,
};
pub use storage::{
    check_escapes, delete_files_by_listing, glob_all_by_listing, glob_by_listing, storage_for,
    walk_by_listing, BlockLocation, CachePolicy, FileStatus, ObjectWriter, Ownership, Storage,
    StorageWriter, DEFAULT_WRITE_BUFFER,
};
pub use stores::{RemoteStores, Stores};
