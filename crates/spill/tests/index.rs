//! The index beside every spill file: round trips, damage, and reading from another process.
// Test helpers unwrap: a panic there is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use sluice_format::{record, Codec, RunReader};
use sluice_spill::{IndexProblem, SegmentReader, SpillDir, SpillError, SpillFile, SpillIndex};

type Records = Vec<(Vec<u8>, Vec<u8>)>;

/// Partitions of the files written here; those in `EMPTY` get no records (first, middle, last).
const PARTITIONS: usize = 7;
const EMPTY: [usize; 3] = [0, 3, 6];
/// Small, so that segments span many blocks and big records get blocks of their own.
const BLOCK_SIZE: usize = 256;

const CODECS: [Codec; 3] = [Codec::None, Codec::Lz4, Codec::Zstd { level: 3 }];

/// splitmix64: a reproducible stream from a seed, so that the parent of the cross-process test
/// knows what its child wrote without being told.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The records of each partition, keys sorted: compressible and random values, a few larger
/// than a block.
fn records(seed: u64) -> Vec<Records> {
    let mut state = seed;
    (0..PARTITIONS)
        .map(|p| {
            if EMPTY.contains(&p) {
                return Vec::new();
            }
            let n = 20 + next(&mut state) % 200;
            (0..n)
                .map(|i| {
                    let key = format!("p{p}-{i:05}").into_bytes();
                    let value = match next(&mut state) % 4 {
                        0 => (0..next(&mut state) % 64)
                            .map(|_| next(&mut state) as u8)
                            .collect(),
                        1 => vec![b'x'; 300 + (next(&mut state) % 500) as usize],
                        _ => format!("value {i} of partition {p} ")
                            .repeat(i as usize % 5)
                            .into_bytes(),
                    };
                    (key, value)
                })
                .collect()
        })
        .collect()
}

/// Encoded bytes of `records` before compression: what the index must call the raw length.
fn raw_len(records: &Records) -> u64 {
    records
        .iter()
        .map(|(k, v)| record::encoded_len(k.len(), v.len()) as u64)
        .sum()
}

fn write_file(dir: &SpillDir, codec: Codec, expected: &[Records]) -> SpillFile {
    let mut writer = dir.create_writer(PARTITIONS, codec, BLOCK_SIZE).unwrap();
    for (p, records) in expected.iter().enumerate() {
        for (k, v) in records {
            writer.write(p, k, v).unwrap();
        }
    }
    writer.finish().unwrap()
}

fn read_all(mut reader: SegmentReader) -> Records {
    let mut out = Vec::new();
    while reader.advance().unwrap() {
        out.push((reader.key().to_vec(), reader.value().to_vec()));
    }
    out
}

/// Decodes a segment shipped as stored, as a receiver without the file would.
fn decode_stored(stored: &[u8], offset: u64) -> Records {
    let mut reader = RunReader::new(stored, "shipped segment", offset);
    let mut out = Vec::new();
    while reader.advance().unwrap() {
        out.push((reader.key().to_vec(), reader.value().to_vec()));
    }
    assert_eq!(reader.offset(), offset + stored.len() as u64);
    out
}

/// Checks everything a reader of `file` can see against `expected`, computed independently.
fn check_partitions(file: &SpillFile, expected: &[Records]) {
    assert_eq!(file.partitions(), expected.len());
    let mut end = 0;
    for (p, want) in expected.iter().enumerate() {
        let segment = file.segment(p).unwrap();
        assert_eq!(
            segment.offset, end,
            "partition {p} does not start where {p}-1 ends"
        );
        end += segment.stored_len;
        assert_eq!(segment.records, want.len() as u64, "partition {p}");
        assert_eq!(file.records(p), want.len() as u64, "partition {p}");
        assert_eq!(segment.raw_len, raw_len(want), "partition {p}");
        assert_eq!(segment.stored_len == 0, want.is_empty(), "partition {p}");
        assert_eq!(
            &read_all(file.open_segment(p).unwrap()),
            want,
            "partition {p}"
        );
        let stored = file.read_stored(p).unwrap();
        assert_eq!(
            &decode_stored(&stored, segment.offset),
            want,
            "partition {p}"
        );
        let entry = SpillIndex::read_entry(file.index_path(), p).unwrap();
        assert_eq!(entry, segment, "partition {p}");
    }
    assert_eq!(end, file.bytes());
    assert_eq!(end, std::fs::metadata(file.path()).unwrap().len());
    assert!(file.segment(PARTITIONS).is_none());
}

#[test]
fn every_codec_round_trips_through_the_index() {
    let parent = tempfile::tempdir().unwrap();
    let dir = SpillDir::create_in(parent.path()).unwrap();
    for (i, codec) in CODECS.into_iter().enumerate() {
        let expected = records(i as u64);
        let written = write_file(&dir, codec, &expected);
        assert_eq!(written.index_path(), SpillIndex::path_for(written.path()));
        check_partitions(&written, &expected);

        let opened = SpillFile::open(written.path()).unwrap();
        check_partitions(&opened, &expected);
        let index = SpillIndex::read(written.index_path()).unwrap();
        assert_eq!(index.data_len(), written.bytes());
        let segments: Vec<_> = (0..PARTITIONS)
            .map(|p| written.segment(p).unwrap())
            .collect();
        assert_eq!(index.segments(), &segments[..], "{codec}");

        // Reading through the index deletes nothing; the writer's file deletes both.
        let (data, index) = (
            written.path().to_path_buf(),
            written.index_path().to_path_buf(),
        );
        drop(opened);
        assert!(data.exists() && index.exists());
        drop(written);
        assert!(!data.exists() && !index.exists());
    }
    // No temporary index is left behind.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn a_file_without_records_has_a_valid_index() {
    let parent = tempfile::tempdir().unwrap();
    let dir = SpillDir::create_in(parent.path()).unwrap();
    let file = write_file(&dir, Codec::Lz4, &vec![Vec::new(); PARTITIONS]);
    assert_eq!(file.bytes(), 0);
    check_partitions(
        &SpillFile::open(file.path()).unwrap(),
        &vec![Vec::new(); PARTITIONS],
    );
}

/// A spill file and the good bytes of its index (fields drop in order: file, then directories).
struct Fixture {
    file: SpillFile,
    index: Vec<u8>,
    _dir: SpillDir,
    _parent: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let parent = tempfile::tempdir().unwrap();
        let dir = SpillDir::create_in(parent.path()).unwrap();
        let file = write_file(&dir, Codec::Lz4, &records(7));
        let index = std::fs::read(file.index_path()).unwrap();
        Fixture {
            file,
            index,
            _dir: dir,
            _parent: parent,
        }
    }

    /// Opens the file with `index` as its index and returns the problem reported, checking
    /// that the error names the index file. The good index is put back afterwards.
    fn problem_with(&self, index: &[u8]) -> IndexProblem {
        std::fs::write(self.file.index_path(), index).unwrap();
        let result = SpillFile::open(self.file.path());
        std::fs::write(self.file.index_path(), &self.index).unwrap();
        let Err(error) = result else {
            panic!("a damaged index was accepted");
        };
        let message = error.to_string();
        let index_path = self.file.index_path().display().to_string();
        assert!(message.contains(&index_path), "{message}");
        match error {
            SpillError::Index { path, problem } => {
                assert_eq!(path, self.file.index_path());
                problem
            }
            other => panic!("expected an index error, got {other}"),
        }
    }
}

/// Rewrites the checksums of index bytes as the documented layout defines them: each entry's
/// over its partition, the data file's length and its fields, then the whole file's.
fn reseal(index: &mut [u8]) {
    let data_len = &index[20..28].to_vec();
    let entries = (index.len() - 32) / 36;
    for p in 0..entries {
        let at = 28 + 36 * p;
        let crc = crc32c::crc32c(&(p as u64).to_le_bytes());
        let crc = crc32c::crc32c_append(crc, data_len);
        let crc = crc32c::crc32c_append(crc, &index[at..at + 32]);
        index[at + 32..at + 36].copy_from_slice(&crc.to_le_bytes());
    }
    let end = index.len() - 4;
    let crc = crc32c::crc32c(&index[..end]);
    index[end..].copy_from_slice(&crc.to_le_bytes());
}

fn set_u64(index: &mut [u8], at: usize, value: u64) {
    index[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// Byte offset of a field of `partition`'s entry: 0 offset, 8 raw length, 16 stored length.
fn field(partition: usize, at: usize) -> usize {
    28 + 36 * partition + at
}

#[test]
fn the_index_is_laid_out_as_documented() {
    let f = Fixture::new();
    let index = &f.index;
    assert_eq!(&index[..8], b"SLUICEIX");
    assert_eq!(index[8..12], 1u32.to_le_bytes());
    assert_eq!(index[12..20], (PARTITIONS as u64).to_le_bytes());
    assert_eq!(index[20..28], f.file.bytes().to_le_bytes());
    assert_eq!(index.len(), 28 + 36 * PARTITIONS + 4);
    for p in 0..PARTITIONS {
        let segment = f.file.segment(p).unwrap();
        let at = field(p, 0);
        let fields: Vec<u64> = (0..4)
            .map(|i| u64::from_le_bytes(index[at + 8 * i..at + 8 * i + 8].try_into().unwrap()))
            .collect();
        assert_eq!(
            fields,
            [
                segment.offset,
                segment.raw_len,
                segment.stored_len,
                segment.records
            ]
        );
    }
    let mut resealed = index.clone();
    reseal(&mut resealed);
    assert_eq!(&resealed, index);
}

#[test]
fn every_flipped_byte_of_the_index_is_reported() {
    let f = Fixture::new();
    for at in 0..f.index.len() {
        let mut index = f.index.clone();
        index[at] ^= 0x10;
        let problem = f.problem_with(&index);
        let expected = match at {
            0..8 => matches!(problem, IndexProblem::BadMagic { .. }),
            8..12 => matches!(problem, IndexProblem::UnsupportedVersion { .. }),
            12..20 => matches!(problem, IndexProblem::WrongLength { .. }),
            _ => matches!(problem, IndexProblem::ChecksumMismatch { .. }),
        };
        assert!(expected, "byte {at}: {problem}");
    }
}

#[test]
fn a_truncated_or_extended_index_is_reported() {
    let f = Fixture::new();
    for len in 0..f.index.len() {
        let problem = f.problem_with(&f.index[..len]);
        assert!(
            matches!(
                problem,
                IndexProblem::TooShort { .. } | IndexProblem::WrongLength { .. }
            ),
            "cut to {len}: {problem}"
        );
    }
    let mut longer = f.index.clone();
    longer.push(0);
    assert!(matches!(
        f.problem_with(&longer),
        IndexProblem::WrongLength { .. }
    ));
    // The header's count is checked against the length without overflowing.
    let mut huge = f.index.clone();
    set_u64(&mut huge, 12, u64::MAX);
    reseal_header_only(&mut huge);
    assert!(matches!(
        f.problem_with(&huge),
        IndexProblem::WrongLength {
            partitions: u64::MAX,
            ..
        }
    ));
}

/// Rewrites only the trailing checksum (entries keep theirs).
fn reseal_header_only(index: &mut [u8]) {
    let end = index.len() - 4;
    let crc = crc32c::crc32c(&index[..end]);
    index[end..].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn a_wrong_magic_or_version_is_reported() {
    let f = Fixture::new();
    let mut index = f.index.clone();
    index[..8].copy_from_slice(b"SLUICEIY");
    reseal(&mut index);
    assert!(
        matches!(f.problem_with(&index), IndexProblem::BadMagic { found } if &found == b"SLUICEIY")
    );
    let mut index = f.index.clone();
    index[8..12].copy_from_slice(&2u32.to_le_bytes());
    reseal(&mut index);
    assert!(matches!(
        f.problem_with(&index),
        IndexProblem::UnsupportedVersion { version: 2 }
    ));
}

#[test]
fn an_entry_with_a_bad_checksum_is_reported_even_if_the_whole_index_is_resealed() {
    let f = Fixture::new();
    let mut index = f.index.clone();
    index[field(2, 24)] ^= 1; // records of partition 2
    reseal_header_only(&mut index);
    assert!(matches!(
        f.problem_with(&index),
        IndexProblem::EntryChecksumMismatch { partition: 2, .. }
    ));
    // Entries are bound to their position: swapping two (each intact) is detected.
    let mut index = f.index.clone();
    let (one, two) = (field(1, 0), field(2, 0));
    let entry_one = index[one..one + 36].to_vec();
    index.copy_within(two..two + 36, one);
    index[two..two + 36].copy_from_slice(&entry_one);
    reseal_header_only(&mut index);
    assert!(matches!(
        f.problem_with(&index),
        IndexProblem::EntryChecksumMismatch { partition: 1, .. }
    ));
}

#[test]
fn segments_outside_the_data_file_are_reported() {
    let f = Fixture::new();
    let data_len = f.file.bytes();
    let last = PARTITIONS - 2; // the last partition with records
    let segment = f.file.segment(last).unwrap();

    // The last segment one byte longer than the data file.
    let mut index = f.index.clone();
    set_u64(&mut index, field(last, 16), segment.stored_len + 1);
    reseal(&mut index);
    assert!(matches!(
        f.problem_with(&index),
        IndexProblem::SegmentBeyondData { partition, data_len: len, .. } if partition == last as u64 && len == data_len
    ));

    // A segment starting elsewhere than where the previous one ends.
    let mut index = f.index.clone();
    set_u64(
        &mut index,
        field(2, 0),
        f.file.segment(2).unwrap().offset + 16,
    );
    reseal(&mut index);
    assert!(matches!(
        f.problem_with(&index),
        IndexProblem::SegmentMisplaced { partition: 2, .. }
    ));

    // An offset and length that overflow.
    let mut index = f.index.clone();
    set_u64(&mut index, field(0, 0), u64::MAX);
    set_u64(&mut index, field(0, 16), 2);
    reseal(&mut index);
    std::fs::write(f.file.index_path(), &index).unwrap();
    match SpillIndex::read_entry(f.file.index_path(), 0) {
        Err(SpillError::Index {
            problem: IndexProblem::SegmentBeyondData { partition: 0, .. },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    std::fs::write(f.file.index_path(), &f.index).unwrap();

    // Segments that stop before the data file ends.
    let mut index = f.index.clone();
    set_u64(&mut index, 20, data_len + 100);
    reseal(&mut index);
    assert!(matches!(
        f.problem_with(&index),
        IndexProblem::SegmentsEndEarly { end, data_len: len } if end == data_len && len == data_len + 100
    ));
}

#[test]
fn a_truncated_data_file_is_reported_by_its_index() {
    let f = Fixture::new();
    let data = std::fs::read(f.file.path()).unwrap();
    std::fs::write(f.file.path(), &data[..data.len() - 1]).unwrap();
    match SpillFile::open(f.file.path()) {
        Err(SpillError::Index {
            path,
            problem:
                IndexProblem::DataFileLength {
                    data_path,
                    actual,
                    expected,
                },
        }) => {
            assert_eq!(path, f.file.index_path());
            assert_eq!(data_path, f.file.path());
            assert_eq!(
                (actual, expected),
                (data.len() as u64 - 1, data.len() as u64)
            );
        }
        other => panic!("{other:?}"),
    }
    // The file opened before it was cut still finds out, from the blocks.
    assert!(f.file.read_stored(PARTITIONS - 2).is_err());
}

#[test]
fn stored_segments_are_verified_without_decoding() {
    let f = Fixture::new();
    let p = 1;
    let stored = f.file.read_stored(p).unwrap();
    f.file.verify_stored(p, &stored).unwrap();
    assert!(f
        .file
        .verify_stored(p, &stored[..stored.len() - 1])
        .is_err());
    // The other partition's bytes are valid blocks, but not this segment.
    let other = f.file.read_stored(2).unwrap();
    assert!(f.file.verify_stored(p, &other).is_err());
    for at in [0, 10, stored.len() / 2, stored.len() - 1] {
        let mut damaged = stored.clone();
        damaged[at] ^= 0x01;
        match f.file.verify_stored(p, &damaged) {
            Err(SpillError::Format(e)) => {
                assert!(
                    e.to_string().contains(&f.file.path().display().to_string()),
                    "{e}"
                );
            }
            other => panic!("byte {at}: {other:?}"),
        }
    }
    assert!(matches!(
        f.file.read_stored(PARTITIONS),
        Err(SpillError::NoSuchPartition {
            partition: PARTITIONS,
            ..
        })
    ));
    assert!(matches!(
        SpillIndex::read_entry(f.file.index_path(), PARTITIONS),
        Err(SpillError::NoSuchPartition {
            partition: PARTITIONS,
            ..
        })
    ));
}

/// Set for the child process of the cross-process test: where it writes, and its seed.
const CHILD_DIR: &str = "SLUICE_SPILL_TEST_CHILD_DIR";
const CHILD_SEED: &str = "SLUICE_SPILL_TEST_CHILD_SEED";
const CHILD_CODEC: &str = "SLUICE_SPILL_TEST_CHILD_CODEC";
/// What the child prints before the data file's path.
const WROTE: &str = "wrote spill file: ";

/// Not a test by itself: the child half of `another_process_reads_each_partition_through_the_index`,
/// which runs this test binary again with only this test and the variables above set. Without
/// them it does nothing.
#[test]
fn child_writes_spill_file() {
    let (Some(dir), Ok(seed), Ok(codec)) = (
        std::env::var_os(CHILD_DIR),
        std::env::var(CHILD_SEED),
        std::env::var(CHILD_CODEC),
    ) else {
        return;
    };
    let spill = SpillDir::create_in(Path::new(&dir)).unwrap();
    let file = write_file(
        &spill,
        codec.parse().unwrap(),
        &records(seed.parse().unwrap()),
    );
    println!("{WROTE}{}", file.path().display());
    // Keep the files after this process ends, as map output served by another process would
    // be: dropping the run and its directory would delete them. The parent's temporary
    // directory removes them.
    std::mem::forget(file);
    std::mem::forget(spill);
}

#[test]
fn another_process_reads_each_partition_through_the_index() {
    let exe = std::env::current_exe().unwrap();
    for (i, codec) in CODECS.into_iter().enumerate() {
        let parent = tempfile::tempdir().unwrap();
        // A seed of this run's own, so that only a child that wrote what it was asked passes.
        let seed = u64::from(std::process::id()) * 8 + i as u64;
        let output = Command::new(&exe)
            .args([
                "child_writes_spill_file",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, parent.path())
            .env(CHILD_SEED, seed.to_string())
            .env(CHILD_CODEC, codec.to_string())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let path = PathBuf::from(
            stdout
                .lines()
                // The test harness may print on the same line first.
                .find_map(|line| line.split_once(WROTE).map(|(_, path)| path))
                .unwrap_or_else(|| panic!("the child named no file:\n{stdout}")),
        );

        // Each partition by name, in an order of our own, each through a fresh open of the
        // index: nothing of the writer's memory is here.
        let expected = records(seed);
        for p in (0..PARTITIONS).rev() {
            let file = SpillFile::open(&path).unwrap();
            assert_eq!(
                file.records(p),
                expected[p].len() as u64,
                "{codec} partition {p}"
            );
            assert_eq!(
                read_all(file.open_segment(p).unwrap()),
                expected[p],
                "{codec} partition {p}"
            );
            let segment = SpillIndex::read_entry(&SpillIndex::path_for(&path), p).unwrap();
            assert_eq!(
                segment.raw_len,
                raw_len(&expected[p]),
                "{codec} partition {p}"
            );
            assert_eq!(
                decode_stored(&file.read_stored(p).unwrap(), segment.offset),
                expected[p],
                "{codec} partition {p}"
            );
        }
        // And all of it at once, as a restarted reducer would.
        let file = SpillFile::open(&path).unwrap();
        check_partitions(&file, &expected);
        drop(file);
        assert!(path.exists(), "reading through the index deleted the file");
    }
}
