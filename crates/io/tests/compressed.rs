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

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("write");
    path
}

/// Reads every split `plan_splits` makes of the single file at `path` with a tiny split size.
fn read_lines(path: &Path) -> Result<Vec<(u64, Vec<u8>)>, IoError> {
    let files = discover_inputs(&[path.to_path_buf()])?;
    let splits = plan_splits(&files, 7);
    assert_eq!(splits.len(), 1, "a compressed file is one split");
    let mut reader = LineReader::open(&files[0], &splits[0])?;
    let mut lines = Vec::new();
    while let Some((offset, line)) = reader.next_line()? {
        lines.push((offset, line.to_vec()));
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
    let cases = [
        ("a.gz", gzip(&data), Compression::Gzip),
        ("multi.gz", two_members, Compression::Gzip),
        ("a.zst", zstd(&data), Compression::Zstd),
        ("a.zstd", zstd(&data), Compression::Zstd),
        ("a.lz4", lz4(&data), Compression::Lz4),
        ("a.bz2", bzip2(&data), Compression::Bzip2),
        ("multi.bz2", two_bz_streams, Compression::Bzip2),
    ];
    for (name, bytes, codec) in cases {
        let path = write(dir.path(), name, &bytes);
        assert_eq!(Compression::from_path(&path), codec);
        let lines = read_lines(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(lines, expected, "{name}");
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

#[test]
fn empty_compressed_files_have_no_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["e.gz", "e.zst", "e.lz4", "e.bz2"] {
        let path = write(dir.path(), name, b"");
        assert_eq!(read_lines(&path).expect(name), Vec::new(), "{name}");
    }
    let path = write(dir.path(), "empty-content.gz", &gzip(b""));
    assert_eq!(read_lines(&path).expect("gzip of nothing"), Vec::new());
}
