//! The index file beside every spill file: its segment table on disk.
//!
//! The layout is described byte by byte in the documentation of the `file` module. Everything
//! read from an index is checked before it is used: the header, the file's length against the
//! partition count (with checked arithmetic), the CRC32C of the whole index and of every entry,
//! and that the segments tile the data file exactly.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::SpillError;

/// First bytes of every index file.
const MAGIC: [u8; 8] = *b"SLUICEIX";
/// Layout version; bumped on any change of the layout.
const VERSION: u32 = 1;
/// Magic (8), version (4), partition count (8), data file length (8).
const HEADER_LEN: usize = 28;
/// Offset, raw length, stored length, records (8 each), entry checksum (4).
const ENTRY_LEN: usize = 36;
/// Bytes of an entry covered by its checksum (everything before the checksum).
const ENTRY_FIELDS_LEN: usize = 32;
/// The CRC32C of everything before it, at the end of the file.
const TRAILER_LEN: usize = 4;

/// Where one partition's records are inside a spill file: one entry of its index.
///
/// Segments tile the data file in partition order; a partition without records has an empty
/// segment at the offset where the next one starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Segment {
    /// Byte offset of the segment's first block in the data file.
    pub offset: u64,
    /// Encoded record bytes before compression (the sum of the blocks' raw lengths): what the
    /// records take once decoded, e.g. to decide whether a fetched segment fits in memory.
    pub raw_len: u64,
    /// Bytes of the segment in the data file: its blocks as stored, headers included.
    pub stored_len: u64,
    /// Records in the segment.
    pub records: u64,
}

impl Segment {
    /// Offset just past the segment, or `None` if that does not fit in a `u64` (a damaged
    /// entry).
    fn end(&self) -> Option<u64> {
        self.offset.checked_add(self.stored_len)
    }
}

/// What is wrong with an index file (see [`SpillError::Index`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum IndexProblem {
    /// The file is too short to hold even a header and the trailing checksum.
    #[error("only {len} bytes, too short for a header and a checksum")]
    TooShort {
        /// Length of the file.
        len: u64,
    },
    /// The file does not start with the index magic: it is not a spill index.
    #[error("not a spill index: starts with {found:02x?}")]
    BadMagic {
        /// The first eight bytes.
        found: [u8; 8],
    },
    /// The index was written in a layout this reader does not know.
    #[error("unsupported index version {version} (this reader knows {VERSION})")]
    UnsupportedVersion {
        /// The version in the header.
        version: u32,
    },
    /// The file's length does not match its partition count: truncated, extended, or the count
    /// is damaged.
    #[error("{len} bytes is not the length of an index of {partitions} partitions")]
    WrongLength {
        /// Length of the file.
        len: u64,
        /// Partition count in the header.
        partitions: u64,
    },
    /// The CRC32C of the whole index does not match.
    #[error("checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    ChecksumMismatch {
        /// The checksum at the end of the file.
        stored: u32,
        /// The checksum of the bytes before it.
        computed: u32,
    },
    /// One entry's CRC32C does not match.
    #[error("entry of partition {partition}: checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    EntryChecksumMismatch {
        /// The partition of the entry.
        partition: u64,
        /// The checksum in the entry.
        stored: u32,
        /// The checksum of the entry's fields.
        computed: u32,
    },
    /// A segment does not start where the previous one ends.
    #[error("segment of partition {partition} starts at byte {offset}, expected {expected}")]
    SegmentMisplaced {
        /// The partition of the segment.
        partition: u64,
        /// Its offset in the index.
        offset: u64,
        /// Where the previous segment ends (0 for the first).
        expected: u64,
    },
    /// A segment extends past the end of the data file.
    #[error("segment of partition {partition} ({stored_len} bytes at byte {offset}) extends beyond the data file's {data_len} bytes")]
    SegmentBeyondData {
        /// The partition of the segment.
        partition: u64,
        /// Its offset.
        offset: u64,
        /// Its stored length.
        stored_len: u64,
        /// Length of the data file according to the index header.
        data_len: u64,
    },
    /// The segments end before the data file does.
    #[error("segments end at byte {end}, but the data file has {data_len} bytes")]
    SegmentsEndEarly {
        /// Where the last segment ends.
        end: u64,
        /// Length of the data file according to the index header.
        data_len: u64,
    },
    /// The data file on disk is not as long as the index says: it is truncated, or it is not
    /// the file this index was written for.
    #[error("data file {data_path} is {actual} bytes, the index describes {expected}")]
    DataFileLength {
        /// The data file.
        data_path: PathBuf,
        /// Its length on disk.
        actual: u64,
        /// Its length according to the index.
        expected: u64,
    },
}

/// The segment table of a spill file, read from (or written to) its index file.
///
/// Reading an index takes no ownership of anything: nothing is deleted when it is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpillIndex {
    path: PathBuf,
    data_len: u64,
    segments: Vec<Segment>,
}

impl SpillIndex {
    /// Where the index of the data file `data_path` is: beside it, with the extension `index`
    /// (`run-000001.spill` → `run-000001.index`).
    pub fn path_for(data_path: &Path) -> PathBuf {
        data_path.with_extension("index")
    }

    /// Reads and checks a whole index file.
    ///
    /// # Errors
    /// [`SpillError::Io`] if the file cannot be read; [`SpillError::Index`] naming the file and
    /// the [`IndexProblem`] if it is damaged in any way.
    pub fn read(path: &Path) -> Result<SpillIndex, SpillError> {
        let mut file = File::open(path).map_err(io_error(path))?;
        let header = Header::read(&mut file, path)?;
        let mut bytes = header.bytes.to_vec();
        file.read_to_end(&mut bytes).map_err(io_error(path))?;
        let bad = |problem| index_error(path, problem);
        // The file may have changed since its length was checked against the header.
        let Some((body, trailer)) = bytes.split_last_chunk::<TRAILER_LEN>() else {
            return Err(bad(IndexProblem::TooShort {
                len: bytes.len() as u64,
            }));
        };
        if Some(bytes.len() as u64) != index_len(header.partitions) {
            return Err(bad(IndexProblem::WrongLength {
                len: bytes.len() as u64,
                partitions: header.partitions,
            }));
        }
        let stored = u32::from_le_bytes(*trailer);
        let computed = crc32c::crc32c(body);
        if stored != computed {
            return Err(bad(IndexProblem::ChecksumMismatch { stored, computed }));
        }

        // The length check above bounds the partition count by the file's size.
        let mut segments = Vec::with_capacity(body.len() / ENTRY_LEN);
        let mut entries = &body[HEADER_LEN..];
        let mut end = 0u64;
        while let Some((entry, rest)) = entries.split_first_chunk::<ENTRY_LEN>() {
            entries = rest;
            let partition = segments.len() as u64;
            let segment = decode_entry(entry, partition, header.data_len).map_err(bad)?;
            if segment.offset != end {
                return Err(bad(IndexProblem::SegmentMisplaced {
                    partition,
                    offset: segment.offset,
                    expected: end,
                }));
            }
            end = check_in_data(&segment, partition, header.data_len).map_err(bad)?;
            segments.push(segment);
        }
        if end != header.data_len {
            return Err(bad(IndexProblem::SegmentsEndEarly {
                end,
                data_len: header.data_len,
            }));
        }
        Ok(SpillIndex {
            path: path.to_path_buf(),
            data_len: header.data_len,
            segments,
        })
    }

    /// Reads one partition's entry without reading the rest of the index: the header, one
    /// positioned read, and the entry's own checksum (which is why entries have one). Its
    /// segment is checked to lie within the data file as the header describes it.
    ///
    /// # Errors
    /// [`SpillError::NoSuchPartition`] if the index has no such partition; otherwise as for
    /// [`SpillIndex::read`].
    pub fn read_entry(path: &Path, partition: usize) -> Result<Segment, SpillError> {
        let mut file = File::open(path).map_err(io_error(path))?;
        let header = Header::read(&mut file, path)?;
        let partition_u64 = partition as u64;
        if partition_u64 >= header.partitions {
            return Err(SpillError::NoSuchPartition {
                path: path.to_path_buf(),
                partition,
                partitions: header.partitions,
            });
        }
        // Cannot overflow: the header checked that all entries fit in the file's length.
        let at = HEADER_LEN as u64 + partition_u64 * ENTRY_LEN as u64;
        let mut entry = [0u8; ENTRY_LEN];
        file.seek(SeekFrom::Start(at))
            .and_then(|_| file.read_exact(&mut entry))
            .map_err(io_error(path))?;
        let bad = |problem| index_error(path, problem);
        let segment = decode_entry(&entry, partition_u64, header.data_len).map_err(bad)?;
        check_in_data(&segment, partition_u64, header.data_len).map_err(bad)?;
        Ok(segment)
    }

    /// Writes the index of a finished data file of `data_len` bytes to `path`, atomically: it is
    /// written under a temporary name and renamed, so a reader sees the whole index or none.
    /// Since the data file is complete before, an index present means its data file is whole.
    ///
    /// Not synced to disk, like the data file: the engine writes many spill files and must not
    /// wait for the device on each.
    pub(crate) fn write(
        path: &Path,
        data_len: u64,
        segments: Vec<Segment>,
    ) -> Result<SpillIndex, SpillError> {
        let bytes = encode(data_len, &segments);
        let temp = path.with_extension("index.tmp");
        std::fs::write(&temp, &bytes)
            .and_then(|()| std::fs::rename(&temp, path))
            .map_err(|source| {
                let _ = std::fs::remove_file(&temp);
                SpillError::Io {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        Ok(SpillIndex {
            path: path.to_path_buf(),
            data_len,
            segments,
        })
    }

    /// The index file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Length of the data file the index describes.
    pub fn data_len(&self) -> u64 {
        self.data_len
    }

    /// The segments, one per partition in partition order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }
}

/// The checked header of an index file.
struct Header {
    bytes: [u8; HEADER_LEN],
    partitions: u64,
    data_len: u64,
}

impl Header {
    /// Reads the header from the start of `file` and checks it against the file's length.
    fn read(file: &mut File, path: &Path) -> Result<Header, SpillError> {
        let bad = |problem| index_error(path, problem);
        let len = file.metadata().map_err(io_error(path))?.len();
        if len < (HEADER_LEN + TRAILER_LEN) as u64 {
            return Err(bad(IndexProblem::TooShort { len }));
        }
        let mut bytes = [0u8; HEADER_LEN];
        file.read_exact(&mut bytes).map_err(io_error(path))?;
        let (magic, rest) = split::<8>(&bytes);
        let (version, rest) = split::<4>(rest);
        let (partitions, rest) = split::<8>(rest);
        let (data_len, _) = split::<8>(rest);
        if magic != MAGIC {
            return Err(bad(IndexProblem::BadMagic { found: magic }));
        }
        let version = u32::from_le_bytes(version);
        if version != VERSION {
            return Err(bad(IndexProblem::UnsupportedVersion { version }));
        }
        let partitions = u64::from_le_bytes(partitions);
        if index_len(partitions) != Some(len) {
            return Err(bad(IndexProblem::WrongLength { len, partitions }));
        }
        Ok(Header {
            bytes,
            partitions,
            data_len: u64::from_le_bytes(data_len),
        })
    }
}

/// Length of an index of `partitions` entries, if it fits in a `u64`.
fn index_len(partitions: u64) -> Option<u64> {
    partitions
        .checked_mul(ENTRY_LEN as u64)?
        .checked_add((HEADER_LEN + TRAILER_LEN) as u64)
}

/// The first `N` bytes of `bytes` as an array, and the rest. Only called with constant sizes
/// that add up to the fixed-size array being taken apart, so it cannot run short.
fn split<const N: usize>(bytes: &[u8]) -> ([u8; N], &[u8]) {
    let (head, rest) = bytes.split_at(N);
    let mut array = [0u8; N];
    array.copy_from_slice(head);
    (array, rest)
}

/// The checksum of an entry: CRC32C of its partition number and the data file's length (both
/// u64 LE), then its fields. Binding the partition and the file length into it means an entry
/// read on its own ([`SpillIndex::read_entry`]) is known to be the right one, and its bounds
/// check is against the right length.
///
/// Why the entry and not the segment's bytes: those are already covered, block by block, by the
/// blocks' own CRC32Cs, which a server checks without decompressing
/// ([`crate::SpillFile::verify_stored`]) and the reducer checks again as it decodes. A second
/// checksum over the same bytes would cost the writer another pass over everything it spills
/// and protect nothing new; what the blocks cannot vouch for is where the segment is and how
/// long it is.
fn entry_checksum(partition: u64, data_len: u64, fields: &[u8]) -> u32 {
    let crc = crc32c::crc32c(&partition.to_le_bytes());
    let crc = crc32c::crc32c_append(crc, &data_len.to_le_bytes());
    crc32c::crc32c_append(crc, fields)
}

/// Decodes and checks one entry.
fn decode_entry(
    entry: &[u8; ENTRY_LEN],
    partition: u64,
    data_len: u64,
) -> Result<Segment, IndexProblem> {
    let (offset, rest) = split::<8>(entry);
    let (raw_len, rest) = split::<8>(rest);
    let (stored_len, rest) = split::<8>(rest);
    let (records, rest) = split::<8>(rest);
    let (stored, _) = split::<4>(rest);
    let stored = u32::from_le_bytes(stored);
    let computed = entry_checksum(partition, data_len, &entry[..ENTRY_FIELDS_LEN]);
    if stored != computed {
        return Err(IndexProblem::EntryChecksumMismatch {
            partition,
            stored,
            computed,
        });
    }
    Ok(Segment {
        offset: u64::from_le_bytes(offset),
        raw_len: u64::from_le_bytes(raw_len),
        stored_len: u64::from_le_bytes(stored_len),
        records: u64::from_le_bytes(records),
    })
}

/// Checks that `segment` lies within a data file of `data_len` bytes; returns its end.
fn check_in_data(segment: &Segment, partition: u64, data_len: u64) -> Result<u64, IndexProblem> {
    match segment.end() {
        Some(end) if end <= data_len => Ok(end),
        _ => Err(IndexProblem::SegmentBeyondData {
            partition,
            offset: segment.offset,
            stored_len: segment.stored_len,
            data_len,
        }),
    }
}

/// The bytes of an index (see the layout in the `file` module).
fn encode(data_len: u64, segments: &[Segment]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + segments.len() * ENTRY_LEN + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(segments.len() as u64).to_le_bytes());
    out.extend_from_slice(&data_len.to_le_bytes());
    for (partition, segment) in segments.iter().enumerate() {
        let start = out.len();
        for field in [
            segment.offset,
            segment.raw_len,
            segment.stored_len,
            segment.records,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        let crc = entry_checksum(partition as u64, data_len, &out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn io_error(path: &Path) -> impl FnOnce(io::Error) -> SpillError + '_ {
    move |source| SpillError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn index_error(path: &Path, problem: IndexProblem) -> SpillError {
    SpillError::Index {
        path: path.to_path_buf(),
        problem,
    }
}
