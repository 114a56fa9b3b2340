//! sluice inside unmodified Hadoop: the native library of the map-output collector plugin
//! (`plugin/` holds its Java side).
//!
//! Hadoop's map task hands its output records to a `MapOutputCollector`; the plugin's Java
//! collector serialises them with the job's serializers into direct-buffer batches of about
//! 1 MB and hands each batch to this library in one JNI call. Here they go into sluice's own
//! map side, the engine's third execution path:
//!
//! ```text
//!  Java collect() ─► batch ─► entry (JNI) ─► NativeCollector ─► sluice_mapside::Collector
//!                                                │ (sort, sum combiner, spills: sluice's)
//!  Java flush()   ─► entry ─► merge_partition ─► IFileWriter ─► file.out (+ index via Java)
//! ```
//!
//! * `entry`: every JNI entry point; no panic crosses into the JVM.
//! * `keys`: Hadoop's key comparators as byte order (keys converted at the boundary).
//! * `collector`: one task's collector and its final merge.
//! * `ifile`: Hadoop's IFile segments and index entries.
//! * `merge`: one reduce task's merge of the fetched map outputs (the shuffle plugin).
//! * `streaming`: one Hadoop Streaming program's shared-memory rings (`-io shm`).

pub mod entry;

pub mod collector;
pub mod error;
pub mod ifile;
pub mod keys;
pub mod merge;
pub mod streaming;
