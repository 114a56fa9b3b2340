//! Compressed inputs decode to the same lines, with uncompressed offsets, and are read whole.

use std::io::Write;
use std::path::{Path, PathBuf};

use sluice_io::{discover_inputs, plan_splits, Compression, IoError, LineReader};

fn plain() -> Vec<u8> {
    let mut data = b"alpha\r\nbeta\rgamma\n\n\xff\xfe delta\r\r\n".to_vec();
    data.extend(std::iter::repeat_n(b'q', 1_500_000));
    data.extend_from_slice(b"\nomega without newline\r");
    data
}

/// The lines of plain `data`, computed independently of the reader.
fn reference(data: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut lines = Vec::new();
    let mut begin = 0;
    let mut i = 0;
    while i < data.len() {
        let terminator = match (data[i], data.get(i + 1)) {
            (b'\r', Some(b'\n')) => 2,
            (b'\r' | b'\n', _) => 1,
            _ => 0,
        };
        if terminator == 0 {
            i += 1;
        } else {
            lines.push((begin as u64, data[begin..i].to_vec()));
            i += terminator;
            begin = i;
        }
    }
    if begin < data.len() {
        lines.push((begin as u64, data[begin..].to_vec()));
    }
    lines
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).expect("gzip");
    encoder.finish().expect("gzip")
}

fn zstd(data: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(data, 3).expect("zstd")
}

fn lz4(data: &[u8]) -> Vec<u8> {
    let mut encoder = lz4_flex::frame::FrameEncoder::new(Vec::new());
    encoder.write_all(data).expect("lz4");
    encoder.finish().expect("lz4")
}

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut encoder = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    encoder.write_all(data).expect("bzip2");
    encoder.finish().expect("bzip2")
}

fn zlib(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).expect("zlib");
    encoder.finish().expect("zlib")
}

/// Hadoop's block framing (`BlockCompressorStream`), written here independently of sluice's
/// writer: blocks of `block` bytes, each cut into chunks of `chunk` bytes compressed on their
/// own, as Hadoop does for a single write larger than a block.
fn hadoop_blocks(
    data: &[u8],
    block: usize,
    chunk: usize,
    compress: impl Fn(&[u8]) -> Vec<u8>,
) -> Vec<u8> {
    let mut out = Vec::new();
    for b in data.chunks(block) {
        out.extend(u32::try_from(b.len()).expect("block").to_be_bytes());
        for c in b.chunks(chunk) {
            let compressed = compress(c);
            out.extend(
                u32::try_from(compressed.len())
                    .expect("chunk")
                    .to_be_bytes(),
            );
            out.extend(compressed);
        }
    }
    out
}

fn hadoop_lz4(data: &[u8]) -> Vec<u8> {
    hadoop_blocks(data, 261_100, 100_000, lz4_flex::block::compress)
}

fn hadoop_snappy(data: &[u8]) -> Vec<u8> {
    hadoop_blocks(data, 218_422, 100_000, |c| {
        snap::raw::Encoder::new().compress_vec(c).expect("snappy")
    })
}

/// Part files Hadoop 3.4.2 wrote (`-mapper cat -reducer cat` over `b\t2`, `a\t1`, `c\t3`,
/// `hello world`) with `Lz4Codec`, `SnappyCodec` and `DefaultCodec`.
const HADOOP_LZ4: &[u8] = &[
    0x00, 0x00, 0x00, 0x19, 0x00, 0x00, 0x00, 0x1b, 0xf0, 0x0a, 0x61, 0x09, 0x31, 0x0a, 0x62, 0x09,
    0x32, 0x0a, 0x63, 0x09, 0x33, 0x0a, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x77, 0x6f, 0x72, 0x6c,
    0x64, 0x09, 0x0a,
];
const HADOOP_SNAPPY: &[u8] = &[
    0x00, 0x00, 0x00, 0x19, 0x00, 0x00, 0x00, 0x1b, 0x19, 0x60, 0x61, 0x09, 0x31, 0x0a, 0x62, 0x09,
    0x32, 0x0a, 0x63, 0x09, 0x33, 0x0a, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x20, 0x77, 0x6f, 0x72, 0x6c,
    0x64, 0x09, 0x0a,
];
const HADOOP_DEFLATE: &[u8] = &[
    0x78, 0x9c, 0x4b, 0xe4, 0x34, 0xe4, 0x4a, 0xe2, 0x34, 0xe2, 0x4a, 0xe6, 0x34, 0xe6, 0xca, 0x48,
    0xcd, 0xc9, 0xc9, 0x57, 0x28, 0xcf, 0x2f, 0xca, 0x49, 0xe1, 0xe4, 0x02, 0x00, 0x4a, 0x55, 0x06,
    0x65,
];

#[test]
fn files_hadoop_wrote_are_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let want: Vec<(u64, Vec<u8>)> = vec![
        (0, b"a\t1".to_vec()),
        (4, b"b\t2".to_vec()),
        (8, b"c\t3".to_vec()),
        (12, b"hello world\t".to_vec()),
    ];
    for (name, bytes) in [
        ("part-00000.lz4", HADOOP_LZ4),
        ("part-00000.snappy", HADOOP_SNAPPY),
        ("part-00000.deflate", HADOOP_DEFLATE),
        // Hadoop's empty lz4 or snappy part file: one block of length 0.
        ("empty.lz4", &[0, 0, 0, 0][..]),
        ("empty.snappy", &[0, 0, 0, 0][..]),
    ] {
        let path = write(dir.path(), name, bytes);
        let lines = read_lines(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = if name.starts_with("empty") {
            &[][..]
        } else {
            &want[..]
        };
        assert_eq!(lines, want, "{name}");
    }
}

#[test]
fn corrupt_hadoop_blocks_are_decompress_errors_naming_file_and_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = plain();
    // A chunk length of 2 GiB in the second block: refused, nothing that size allocated.
    let mut bytes = hadoop_snappy(&data);
    // Walk the first block's chunks (of 100,000 uncompressed bytes each) to the second block.
    let be32 = |b: &[u8], at: usize| {
        u32::from_be_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize
    };
    let mut left = be32(&bytes, 0);
    let mut at = 4;
    while left > 0 {
        at += 4 + be32(&bytes, at);
        left -= left.min(100_000);
    }
    at += 4;
    bytes[at..at + 4].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    let path = write(dir.path(), "bad.snappy", &bytes);
    match read_lines(&path) {
        Err(IoError::Decompress {
            path: named,
            codec,
            source,
            ..
        }) => {
            assert_eq!(named, path);
            assert_eq!(codec, "snappy");
            let message = source.to_string();
            assert!(
                message.contains(&format!("compressed byte {at}"))
                    && message.contains("chunk length 2147483648"),
                "{message}"
            );
        }
        other => panic!("expected a decompress error, got {other:?}"),
    }
    // A truncated lz4 block stream.
    let bytes = hadoop_lz4(&data);
    let path = write(dir.path(), "short.lz4", &bytes[..bytes.len() - 10]);
    match read_lines(&path) {
        Err(IoError::Decompress { codec, source, .. }) => {
            assert_eq!(codec, "lz4");
            assert!(
                source.to_string().contains("ends inside a chunk"),
                "{source}"
            );
        }
        other => panic!("expected a decompress error, got {other:?}"),
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

/// Reads every split `plan_splits` makes of the single file at `path` with a tiny split size,
/// in order.
fn read_lines(path: &Path) -> Result<Vec<(u64, Vec<u8>)>, IoError> {
    let files = discover_inputs(&[path.to_path_buf()])?;
    let splits = plan_splits(&files, 7);
    if files[0].compression != Compression::Bzip2 {
        assert_eq!(splits.len(), 1, "a compressed file is one split");
    }
    // A bzip2 file is cut too; its one block starts in the first split, which reads it all.
    let mut lines = Vec::new();
    for split in &splits {
        let mut reader = LineReader::open(&files[0], split)?;
        while let Some((offset, line)) = reader.next_line()? {
            lines.push((offset, line.to_vec()));
        }
    }
    Ok(lines)
}

#[test]
fn every_codec_decodes_to_the_plain_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = plain();
    let expected = reference(&data);
    let half = data.len() / 2;
    let mut two_members = gzip(&data[..half]);
    two_members.extend(gzip(&data[half..]));
    let mut two_bz_streams = bzip2(&data[..half]);
    two_bz_streams.extend(bzip2(&data[half..]));
    let mut two_zlib_streams = zlib(&data[..half]);
    two_zlib_streams.extend(zlib(&data[half..]));
    let cases = [
        ("a.gz", gzip(&data), Compression::Gzip),
        ("multi.gz", two_members, Compression::Gzip),
        ("a.zst", zstd(&data), Compression::Zstd),
        ("a.zstd", zstd(&data), Compression::Zstd),
        ("a.lz4", lz4(&data), Compression::Lz4),
        ("a.bz2", bzip2(&data), Compression::Bzip2),
        ("multi.bz2", two_bz_streams, Compression::Bzip2),
        ("a.deflate", zlib(&data), Compression::Deflate),
        ("multi.deflate", two_zlib_streams, Compression::Deflate),
        ("hadoop.lz4", hadoop_lz4(&data), Compression::Lz4),
        ("a.snappy", hadoop_snappy(&data), Compression::Snappy),
    ];
    for (name, bytes, codec) in cases {
        let path = write(dir.path(), name, &bytes);
        assert_eq!(Compression::from_path(&path), codec);
        let lines = read_lines(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        if codec == Compression::Bzip2 {
            // A later split's keys count from its start, as Hadoop's do (see `bzip2_split`).
            let values =
                |lines: &[(u64, Vec<u8>)]| lines.iter().map(|l| l.1.clone()).collect::<Vec<_>>();
            assert!(values(&lines) == values(&expected), "{name}");
        } else {
            assert!(lines == expected, "{name}");
        }
    }
}

#[test]
fn bytes_consumed_counts_uncompressed_bytes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = plain();
    let path = write(dir.path(), "a.gz", &gzip(&data));
    let files = discover_inputs(&[path]).expect("discover");
    let split = plan_splits(&files, 1 << 30)[0];
    let mut reader = LineReader::open(&files[0], &split).expect("open");
    while reader.next_line().expect("read").is_some() {}
    assert_eq!(reader.bytes_consumed(), data.len() as u64);
}

#[test]
fn corrupt_gzip_is_a_decompress_error_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = gzip(&plain());
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0x5a;
    }
    let path = write(dir.path(), "bad.gz", &bytes);
    match read_lines(&path) {
        Err(IoError::Decompress {
            path: named, codec, ..
        }) => {
            assert_eq!(named, path);
            assert_eq!(codec, "gzip");
        }
        other => panic!("expected a decompress error, got {other:?}"),
    }
}

#[test]
fn garbage_and_truncated_streams_are_decompress_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = plain();
    let truncated = |mut bytes: Vec<u8>| {
        bytes.truncate(bytes.len() / 2);
        bytes
    };
    let cases = [
        ("not-really.gz", b"this is not gzip at all\n".to_vec()),
        ("cut.gz", truncated(gzip(&data))),
        ("cut.zst", truncated(zstd(&data))),
        ("cut.lz4", truncated(lz4(&data))),
        ("cut.bz2", truncated(bzip2(&data))),
    ];
    for (name, bytes) in cases {
        let path = write(dir.path(), name, &bytes);
        match read_lines(&path) {
            Err(IoError::Decompress { path: named, .. }) => assert_eq!(named, path, "{name}"),
            other => panic!("{name}: expected a decompress error, got {other:?}"),
        }
    }
}

/// An empty file of a block or bzip2 format has no lines, as Hadoop reads it; the gzip of
/// nothing has none either.
#[test]
fn empty_compressed_files_have_no_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["e.zst", "e.lz4", "e.bz2", "e.snappy"] {
        let path = write(dir.path(), name, b"");
        assert_eq!(read_lines(&path).expect(name), Vec::new(), "{name}");
    }
    let path = write(dir.path(), "empty-content.gz", &gzip(b""));
    assert_eq!(read_lines(&path).expect("gzip of nothing"), Vec::new());
}

/// An empty `.gz` or `.deflate` file is a truncated stream (a gzip or zlib stream holds at
/// least a header), and an error naming the file, as Hadoop's `EOFException` fails the task.
#[test]
fn an_empty_gzip_or_deflate_file_is_a_decompress_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, codec) in [("e.gz", "gzip"), ("e.deflate", "deflate")] {
        let path = write(dir.path(), name, b"");
        match read_lines(&path) {
            Err(IoError::Decompress {
                path: named,
                codec: named_codec,
                source,
                ..
            }) => {
                assert_eq!((named, named_codec), (path, codec));
                assert!(source.to_string().contains("the file is empty"), "{source}");
            }
            other => panic!("{name}: expected a decompress error, got {other:?}"),
        }
    }
}
