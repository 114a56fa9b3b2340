//! `LineReader` against an obviously correct reference splitter: for every split size, the lines
//! of all splits of a file, in order, must be exactly the lines of the whole file.

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use sluice_io::{plan_splits, Compression, InputFile, IoError, LineReader};

type Lines = Vec<(u64, Vec<u8>)>;

/// Splits the whole file at `\r\n`, `\r` and `\n`, remembering where each line starts.
fn reference(data: &[u8]) -> Lines {
    let mut lines = Vec::new();
    let mut begin = 0;
    let mut i = 0;
    while i < data.len() {
        let terminator = if data[i] == b'\r' && data.get(i + 1) == Some(&b'\n') {
            2
        } else if data[i] == b'\r' || data[i] == b'\n' {
            1
        } else {
            0
        };
        if terminator == 0 {
            i += 1;
            continue;
        }
        lines.push((begin as u64, data[begin..i].to_vec()));
        i += terminator;
        begin = i;
    }
    if begin < data.len() {
        lines.push((begin as u64, data[begin..].to_vec()));
    }
    lines
}

fn drain(mut reader: LineReader) -> Lines {
    let mut out = Vec::new();
    while let Some((offset, line)) = reader.next_line().expect("read a line") {
        out.push((offset, line.to_vec()));
    }
    out
}

/// A stream that hands out at most `chunk` bytes per read, like a pipe, so that buffered data
/// ends at awkward places (between `\r` and `\n`, for one).
struct Trickle {
    data: Cursor<Vec<u8>>,
    chunk: usize,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.chunk);
        self.data.read(&mut buf[..n])
    }
}

/// Lines of every split of in-memory `data`, cut every `size` bytes, via `from_reader`.
fn lines_in_memory(data: &[u8], size: usize) -> Lines {
    lines_trickled(data, size, usize::MAX)
}

/// Like [`lines_in_memory`], reading at most `chunk` bytes at a time.
fn lines_trickled(data: &[u8], size: usize, chunk: usize) -> Lines {
    let mut out = Vec::new();
    let mut start = 0;
    loop {
        let end = (start + size).min(data.len());
        let stream = Box::new(Trickle {
            data: Cursor::new(data[start..].to_vec()),
            chunk,
        });
        out.extend(drain(LineReader::from_reader(
            stream,
            start as u64,
            end as u64,
            "memory",
        )));
        if end == data.len() {
            return out;
        }
        start = end;
    }
}

fn input_file(path: &Path) -> InputFile {
    InputFile {
        path: path.to_path_buf(),
        len: std::fs::metadata(path).expect("metadata").len(),
        compression: Compression::from_path(path),
    }
}

/// Lines of every split of a file on disk, as planned by `plan_splits`.
fn lines_on_disk(path: &Path, size: u64) -> Lines {
    let file = input_file(path);
    let files = [file];
    let mut out = Vec::new();
    for split in plan_splits(&files, size) {
        out.extend(drain(
            LineReader::open(&files[0], &split).expect("open split"),
        ));
    }
    out
}

fn write_file(dir: &Path, name: &str, data: &[u8]) -> PathBuf {
    let path = dir.join(name);
    let mut file = std::fs::File::create(&path).expect("create");
    file.write_all(data).expect("write");
    path
}

/// Every awkward case at once: all terminators, runs of them, empty lines, non-UTF-8 bytes, a
/// `\r\n` at many different offsets (so some split boundary falls inside it) and no final newline.
fn mixed_sample() -> Vec<u8> {
    let mut data = Vec::new();
    data.extend_from_slice(b"\r\n\nfirst\r\nsecond\rthird\n\n\n\r\r\n\r\n");
    for i in 0..12 {
        data.extend(std::iter::repeat_n(b'x', i));
        data.extend_from_slice(match i % 3 {
            0 => b"\r\n",
            1 => b"\r",
            _ => b"\n",
        });
    }
    data.extend_from_slice(b"\xff\xfe\x00bin\r\r\r\n\n\xc3\x28\r\nlast line, no newline");
    data
}

#[test]
fn mixed_sample_every_split_size() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = mixed_sample();
    let path = write_file(dir.path(), "mixed.txt", &data);
    let expected = reference(&data);
    assert!(expected.len() > 25 && expected.iter().any(|(_, l)| l.is_empty()));
    for size in (1..=45).chain([64, 100, 1000, 1 << 20]) {
        assert_eq!(lines_on_disk(&path, size), expected, "split size {size}");
        assert_eq!(
            lines_in_memory(&data, size as usize),
            expected,
            "split size {size}"
        );
    }
}

#[test]
fn terminators_at_end_of_file() {
    for (data, lines) in [
        (&b""[..], vec![]),
        (b"a", vec![(0, &b"a"[..])]),
        (b"a\n", vec![(0, b"a")]),
        (b"a\r", vec![(0, b"a")]),
        (b"a\r\n", vec![(0, b"a")]),
        (b"a\n\n", vec![(0, b"a"), (2, b"")]),
        (b"a\r\r", vec![(0, b"a"), (2, b"")]),
        (b"\n", vec![(0, b"")]),
    ] {
        let expected: Lines = lines.into_iter().map(|(o, l)| (o, l.to_vec())).collect();
        for size in 1..=4 {
            assert_eq!(
                lines_in_memory(data, size),
                expected,
                "{data:?} size {size}"
            );
        }
    }
}

#[test]
fn split_starting_at_a_line_start_skips_that_line() {
    // "aa\n" "bb\n" "cc\n": the split [3, 6) starts at "bb", which the first split reads.
    let data = b"aa\nbb\ncc\n";
    let first = drain(LineReader::from_reader(
        Box::new(Cursor::new(data.to_vec())),
        0,
        3,
        "m",
    ));
    assert_eq!(first, vec![(0, b"aa".to_vec()), (3, b"bb".to_vec())]);
    let second = drain(LineReader::from_reader(
        Box::new(Cursor::new(data[3..].to_vec())),
        3,
        6,
        "m",
    ));
    assert_eq!(second, vec![(6, b"cc".to_vec())]);
}

#[test]
fn crlf_straddling_a_boundary() {
    // The boundary (6) falls between the `\r` and the `\n` of the first line's terminator: the
    // first split reads the whole `\r\n` and stops (the next line starts at 7 > 6); the second
    // discards the `\n` as its partial first line and reads "fg".
    let data = b"abcde\r\nfg\n";
    let mut first = LineReader::from_reader(Box::new(Cursor::new(data.to_vec())), 0, 6, "m");
    assert_eq!(first.next_line().expect("read"), Some((0, &b"abcde"[..])));
    assert_eq!(first.next_line().expect("read"), None);
    assert_eq!(first.bytes_consumed(), 7);
    let mut second = LineReader::from_reader(Box::new(Cursor::new(data[6..].to_vec())), 6, 10, "m");
    assert_eq!(second.next_line().expect("read"), Some((7, &b"fg"[..])));
    assert_eq!(second.next_line().expect("read"), None);
    assert_eq!(second.bytes_consumed(), 4);
}

/// A line several times larger than the reader's 1 MiB buffer, among short ones.
fn long_line_sample() -> Vec<u8> {
    let mut data = b"short\r\n\r".to_vec();
    data.extend((0..5_000_000u32).map(|i| b'a' + (i % 26) as u8));
    data.extend_from_slice(b"\r\nafter\r");
    data.extend(std::iter::repeat_n(b'z', (1 << 20) - 1));
    data.extend_from_slice(b"\r\r\nend");
    data
}

#[test]
fn lines_longer_than_the_buffer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = long_line_sample();
    let path = write_file(dir.path(), "long.txt", &data);
    let expected = reference(&data);
    assert_eq!(expected[2].1.len(), 5_000_000);
    for size in [
        700_000,
        (1 << 20) - 1,
        1 << 20,
        (1 << 20) + 1,
        5_000_008,
        5_000_009,
        5_000_010,
        u64::MAX,
    ] {
        assert_eq!(lines_on_disk(&path, size), expected, "split size {size}");
    }
}

#[test]
fn crlf_across_the_first_buffer_refill() {
    // The `\r` is the last byte of the first 1 MiB read, its `\n` the first of the next one.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut data = vec![b'a'; (1 << 20) - 1];
    data.extend_from_slice(b"\r\nb\r");
    data.extend(vec![b'c'; (1 << 20) - 2]);
    data.extend_from_slice(b"\rd");
    let path = write_file(dir.path(), "aligned.txt", &data);
    let expected = reference(&data);
    assert_eq!(expected.len(), 4);
    for size in [1 << 19, u64::MAX] {
        assert_eq!(lines_on_disk(&path, size), expected, "split size {size}");
    }
}

#[test]
fn bytes_consumed_adds_up_over_splits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = mixed_sample();
    let path = write_file(dir.path(), "mixed.txt", &data);
    let files = [input_file(&path)];
    for size in [1, 7, 1000] {
        let splits = plan_splits(&files, size);
        let mut lines = 0;
        for split in &splits {
            let mut reader = LineReader::open(&files[0], split).expect("open");
            while reader.next_line().expect("read").is_some() {
                lines += 1;
            }
            // Everything up to the end of the last line read, measured from the split start.
            assert!(reader.bytes_consumed() >= split.len.min(data.len() as u64 - split.start));
        }
        assert_eq!(lines, reference(&data).len());
    }
}

#[test]
fn unopenable_file_is_a_read_error_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("gone.txt");
    let file = InputFile {
        path: path.clone(),
        len: 10,
        compression: Compression::None,
    };
    let split = sluice_io::Split {
        file: 0,
        start: 0,
        len: 10,
    };
    match LineReader::open(&file, &split) {
        Err(IoError::Read { path: named, .. }) => assert_eq!(named, path),
        Err(other) => panic!("wrong error {other}"),
        Ok(_) => panic!("opened a missing file"),
    }
}

fn content() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'a'), Just(0xff)];
    prop::collection::vec(byte, 0..160)
}

proptest! {
    #[test]
    fn random_content_every_small_split_size(data in content()) {
        let expected = reference(&data);
        for size in 1..=40 {
            prop_assert_eq!(lines_in_memory(&data, size), expected.clone(), "split size {}", size);
        }
    }

    #[test]
    fn random_content_read_in_small_pieces(data in content(), size in 1usize..50, chunk in 1usize..6) {
        prop_assert_eq!(lines_trickled(&data, size, chunk), reference(&data));
    }

    #[test]
    fn random_content_on_disk(data in content(), size in 1u64..50) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = write_file(dir.path(), "random.txt", &data);
        prop_assert_eq!(lines_on_disk(&path, size), reference(&data));
    }
}
