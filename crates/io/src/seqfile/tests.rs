//! Round trips, split rules and corrupt files. Hadoop's own reader and writer check the format
//! in `crates/io/tests/seqfile_hadoop.rs`.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::{FileStatus, IoError, LocalStorage, Location, Split, StoredInput};

const TEXT: &str = "org.apache.hadoop.io.Text";

/// Serialised keys and values.
type Records = Vec<(Vec<u8>, Vec<u8>)>;

fn text(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    sluice_hadoop::writable::write_text(&mut out, bytes).unwrap();
    out
}

fn write(records: &[(Vec<u8>, Vec<u8>)], options: SeqWriteOptions) -> Vec<u8> {
    let mut w = SeqFileWriter::new(Vec::new(), options).unwrap();
    for (k, v) in records {
        w.append(k, v).unwrap();
    }
    w.finish().unwrap()
}

fn input(path: &Path) -> StoredInput {
    let len = std::fs::metadata(path).unwrap().len();
    StoredInput::new(FileStatus::file(Location::from_path(path), len))
}

/// The records of one split of the file at `path`.
fn read_split(path: &Path, start: u64, len: u64) -> Result<Records, IoError> {
    let split = Split {
        file: 0,
        start,
        len,
    };
    let mut r = SeqFileReader::open_in(&LocalStorage::new(), &input(path), &split)?;
    let mut out = Vec::new();
    while let Some((_, k, v)) = r.next_record()? {
        out.push((k.to_vec(), v.to_vec()));
    }
    Ok(out)
}

fn records(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..n)
        .map(|i| {
            let key = text(format!("key{:05}", (i * 7919) % 100_000).as_bytes());
            let value = text("value ".repeat(i % 13).as_bytes());
            (key, value)
        })
        .collect()
}

fn options(kind: CompressionKind, codec: Option<SeqCodec>) -> SeqWriteOptions {
    let mut o = SeqWriteOptions::new(TEXT, TEXT);
    o.compression = kind;
    o.codec = codec;
    o
}

const ALL_CODECS: [SeqCodec; 7] = [
    SeqCodec::Default,
    SeqCodec::Deflate,
    SeqCodec::Gzip,
    SeqCodec::Bzip2,
    SeqCodec::Snappy,
    SeqCodec::Lz4,
    SeqCodec::Zstd,
];

#[test]
fn the_header_is_laid_out_as_hadoops() {
    // Built by hand from SequenceFile.Writer.writeFileHeader: "SEQ", 6, the class names as
    // Text.writeString, the two flags, the codec class, the metadata count and pairs, the sync.
    let mut o = options(CompressionKind::Block, Some(SeqCodec::Gzip));
    o.key_class = "K".into();
    o.value_class = "VV".into();
    o.metadata = vec![(b"a".to_vec(), b"bc".to_vec())];
    let bytes = write(&[], o);
    let codec = b"org.apache.hadoop.io.compress.GzipCodec";
    let mut want = b"SEQ\x06\x01K\x02VV\x01\x01".to_vec();
    want.push(codec.len() as u8);
    want.extend_from_slice(codec);
    want.extend_from_slice(&[0, 0, 0, 1, 1, b'a', 2, b'b', b'c']);
    assert_eq!(&bytes[..want.len()], &want[..]);
    // The sync marker ends the header, and an empty block-compressed file has no block.
    assert_eq!(bytes.len(), want.len() + 16);
}

#[test]
fn records_are_laid_out_as_hadoops() {
    let bytes = write(
        &[(b"k".to_vec(), b"vv".to_vec())],
        options(CompressionKind::None, None),
    );
    // Record length 3, key length 1, key, value; no sync entry before the first record (the
    // writer's last sync position starts at 0 and the interval has not passed).
    assert_eq!(&bytes[bytes.len() - 11..], b"\0\0\0\x03\0\0\0\x01kvv");
}

#[test]
fn every_codec_and_kind_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    // Few records: bzip2 sets up 900 KB blocks for every record-compressed value.
    let data = records(250);
    let mut cases = vec![(CompressionKind::None, None)];
    for codec in ALL_CODECS {
        cases.push((CompressionKind::Record, Some(codec)));
        cases.push((CompressionKind::Block, Some(codec)));
    }
    for (kind, codec) in cases {
        let mut o = options(kind, codec);
        o.block_size = 400;
        o.sync_interval = 300;
        let path = dir.path().join("f");
        std::fs::write(&path, write(&data, o)).unwrap();
        let back = read_split(&path, 0, u64::MAX).unwrap();
        assert!(back == data, "{kind:?} {codec:?}");
        let len = std::fs::metadata(&path).unwrap().len();
        // Splits of 512 bytes give every record once, in order.
        let mut joined = Vec::new();
        let mut start = 0;
        while start < len {
            joined.extend(read_split(&path, start, 512).unwrap());
            start += 512;
        }
        assert!(joined == data, "splits of {kind:?} {codec:?}");
    }
}

#[test]
fn a_header_names_its_problem() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let check = |bytes: &[u8], offset: u64, text: &str| {
        std::fs::write(&path, bytes).unwrap();
        match read_split(&path, 0, 100) {
            Err(IoError::SequenceFile {
                offset: o, reason, ..
            }) => assert!(o == offset && reason.contains(text), "{o} {reason}"),
            other => panic!("{other:?}"),
        }
    };
    check(b"PAR1", 0, "not a SequenceFile");
    check(b"SEQ\x05", 3, "version 5");
    check(b"SEQ\x06\x7f", 5, "file ends first");
    let mut unknown = b"SEQ\x06\x01K\x01V\x01\x00\x04Nope".to_vec();
    unknown.extend_from_slice(&[0; 30]);
    check(&unknown, 10, "unknown compression codec Nope");
}

#[test]
fn corrupt_records_are_errors_with_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let good = write(&records(10), options(CompressionKind::None, None));
    let header_len = good.len()
        - records(10)
            .iter()
            .map(|(k, v)| 8 + k.len() + v.len())
            .sum::<usize>();
    // A record length far past the end: refused before anything is allocated.
    let mut huge = good.clone();
    huge[header_len..header_len + 4].copy_from_slice(&0x7fff_fff0u32.to_be_bytes());
    huge[header_len + 4..header_len + 8].copy_from_slice(&0x10u32.to_be_bytes());
    let err = read_split_all(&path, &huge).unwrap_err().to_string();
    assert!(
        err.contains(&format!("at byte {}", header_len + 24)) && err.contains("past the end"),
        "{err}"
    );
    // A key longer than its record.
    let mut key = good.clone();
    key[header_len + 4..header_len + 8].copy_from_slice(&0x7fu32.to_be_bytes());
    let err = read_split_all(&path, &key).unwrap_err().to_string();
    assert!(
        err.contains(&format!("at byte {header_len}")) && err.contains("exceeds"),
        "{err}"
    );
    // A sync entry whose marker is not the header's.
    let mut sync = good[..header_len].to_vec();
    sync.extend_from_slice(&[0xff; 4]);
    sync.extend_from_slice(&[7; 16]);
    sync.extend_from_slice(&good[header_len..]);
    let err = read_split_all(&path, &sync).unwrap_err().to_string();
    assert!(err.contains("sync marker differs"), "{err}");
}

fn read_split_all(path: &Path, bytes: &[u8]) -> Result<Records, IoError> {
    std::fs::write(path, bytes).unwrap();
    read_split(path, 0, u64::MAX)
}

#[test]
fn a_compressed_buffer_cannot_decode_past_the_limit() {
    // A zlib stream of 2 MB of zeros, decoded with a 1 MB limit.
    let mut compressed = Vec::new();
    SeqCodec::Default
        .compress(&vec![0; 2 << 20], &mut compressed)
        .unwrap();
    let mut out = Vec::new();
    let err = SeqCodec::Default
        .decompress(&compressed, 1 << 20, &mut out)
        .unwrap_err();
    assert!(err.to_string().contains("more than 1048576"), "{err}");
}

/// The file offsets of every sync entry (escape included).
fn sync_points(bytes: &[u8]) -> Vec<u64> {
    let header_sync = {
        // The marker is the header's last 16 bytes; find it as the first occurrence.
        let (h, len) = SeqHeader::read(&mut &bytes[..], bytes.len() as u64).unwrap();
        assert_eq!(&bytes[len as usize - 16..len as usize], &h.sync);
        (h.sync, len)
    };
    memchr::memmem::find_iter(bytes, &header_sync.0)
        .filter(|&i| i as u64 >= header_sync.1)
        .map(|i| i as u64 - 4)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Splits whose boundaries are the sync points (and random points between them) give
    /// every record exactly once, in order, whatever the compression.
    #[test]
    fn splits_give_every_record_once(
        n in 0usize..400,
        seed in any::<u64>(),
        kind in 0u8..3,
        interval in 40u64..600,
        block in 20usize..2000,
        cuts in proptest::collection::vec(any::<u64>(), 0..12),
    ) {
        let data: Vec<(Vec<u8>, Vec<u8>)> = (0..n)
            .map(|i| {
                let x = seed.wrapping_mul(i as u64 + 1).rotate_left(17);
                (text(format!("{x:x}").as_bytes()), vec![b'v'; (x % 50) as usize])
            })
            .collect();
        let kind = [CompressionKind::None, CompressionKind::Record, CompressionKind::Block][usize::from(kind)];
        let codec = (kind != CompressionKind::None).then_some(SeqCodec::Snappy);
        let mut o = options(kind, codec);
        o.value_class = "org.apache.hadoop.io.BytesWritable".into();
        o.sync_interval = interval;
        o.block_size = block;
        let bytes = write(&data, o);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &bytes).unwrap();
        let len = bytes.len() as u64;
        let mut bounds: Vec<u64> = sync_points(&bytes);
        bounds.extend(cuts.iter().map(|c| c % (len + 1)));
        bounds.push(0);
        bounds.push(len);
        bounds.sort_unstable();
        bounds.dedup();
        let mut joined = Vec::new();
        for pair in bounds.windows(2) {
            joined.extend(read_split(&path, pair[0], pair[1] - pair[0]).unwrap());
        }
        prop_assert!(joined == data);
    }

    /// Any truncation or corruption of a file gives an error or records, never a panic.
    #[test]
    fn corrupt_files_never_panic(
        kind in 0u8..3,
        cut in any::<usize>(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
    ) {
        let kind = [CompressionKind::None, CompressionKind::Record, CompressionKind::Block][usize::from(kind)];
        let codec = (kind != CompressionKind::None).then_some(SeqCodec::Default);
        let mut o = options(kind, codec);
        o.sync_interval = 200;
        o.block_size = 300;
        let mut bytes = write(&records(60), o);
        for (at, b) in flips {
            let i = at % bytes.len();
            bytes[i] ^= b;
        }
        bytes.truncate(cut % (bytes.len() + 1));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &bytes).unwrap();
        let _ = read_split(&path, 0, u64::MAX);
        let _ = read_split(&path, bytes.len() as u64 / 2, u64::MAX);
    }
}

/// `SEQ` and a version byte Hadoop has written start a SequenceFile; a text line that starts
/// with `SEQ` (a TSV header) does not, nor a file too short to hold the version.
#[test]
fn a_sequence_file_is_told_by_its_magic_and_version() {
    let written = write(&records(1), SeqWriteOptions::new(TEXT, TEXT));
    assert!(starts_as_sequence_file(&written[..SNIFF_LEN]));
    assert!(starts_as_sequence_file(b"SEQ\x04"));
    assert!(!starts_as_sequence_file(b"SEQ_ID\tname\n"));
    assert!(!starts_as_sequence_file(b"SEQ\x00"));
    assert!(!starts_as_sequence_file(b"SEQ\x07"));
    assert!(!starts_as_sequence_file(b"SEQ"));
    assert!(!starts_as_sequence_file(b"seq\x06"));
}
