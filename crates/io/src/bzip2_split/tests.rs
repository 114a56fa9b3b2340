use std::io::{Read, Write};

use super::*;
use crate::LineReader;

/// Lines of varied lengths (some empty, some over a block long), ended by `\n`, `\r\n` or
/// `\r`, from a simple deterministic generator.
fn text(bytes: usize, seed: u64) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        state >> 33
    };
    let mut out = Vec::with_capacity(bytes + 200_000);
    while out.len() < bytes {
        let len = match next() % 100 {
            0 => 150_000 + next() % 100_000,
            1..=5 => 0,
            _ => next() % 120,
        };
        let line_no = out.len();
        for i in 0..len {
            // Letters with some repetition, so blocks compress but not to nothing.
            out.push(b'a' + ((line_no as u64 + i * (next() % 3)) % 26) as u8);
        }
        match next() % 10 {
            0 => out.extend_from_slice(b"\r\n"),
            1 => out.push(b'\r'),
            _ => out.push(b'\n'),
        }
    }
    out
}

fn compress(data: &[u8], level: u32) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The lines of `data` as Hadoop's line reader sees them, written independently of it.
fn reference_lines(data: &[u8]) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut line = Vec::new();
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'\n' => lines.push(std::mem::take(&mut line)),
            b'\r' => {
                lines.push(std::mem::take(&mut line));
                if data.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
            }
            b => line.push(b),
        }
        i += 1;
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

thread_local! {
    /// The file the last [`split_lines`] call of this test wrote, and its bytes.
    static ON_DISK: std::cell::RefCell<Option<(tempfile::TempDir, Vec<u8>)>> =
        const { std::cell::RefCell::new(None) };
}

/// `file` as a `.bz2` file on disk (written again only when the bytes change).
fn on_disk(file: &[u8]) -> crate::InputFile {
    ON_DISK.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.as_ref().is_none_or(|(_, bytes)| bytes != file) {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("t.bz2"), file).unwrap();
            *cell = Some((dir, file.to_vec()));
        }
        let path = cell.as_ref().unwrap().0.path().join("t.bz2");
        crate::InputFile {
            path,
            len: file.len() as u64,
            compression: crate::Compression::Bzip2,
        }
    })
}

/// The lines the split of bytes `start..start + len` of the compressed `file` reads, through
/// the line reader of a job.
fn split_lines(file: &[u8], start: usize, len: usize) -> std::io::Result<Vec<Vec<u8>>> {
    let input = on_disk(file);
    let split = crate::Split {
        file: 0,
        start: start as u64,
        len: len as u64,
    };
    let error = |e: crate::IoError| {
        std::io::Error::other(format!(
            "{e}: {}",
            std::error::Error::source(&e)
                .map(ToString::to_string)
                .unwrap_or_default()
        ))
    };
    let mut reader = LineReader::open(&input, &split).map_err(error)?;
    let mut lines = Vec::new();
    while let Some((_, line)) = reader.next_line().map_err(error)? {
        lines.push(line.to_vec());
    }
    Ok(lines)
}

/// The lines of all splits of `size` bytes of `file`, in order.
fn all_splits(file: &[u8], size: usize) -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < file.len() {
        lines.extend(split_lines(file, start, size).unwrap());
        start += size;
    }
    lines
}

#[test]
fn every_line_is_read_by_exactly_one_split() {
    let data = text(1_500_000, 7);
    let file = compress(&data, 1);
    let want = reference_lines(&data);
    let block = file.len() / 10;
    for size in [
        file.len(),
        file.len() / 2,
        block,
        block + 1,
        block - 1,
        block / 3,
        7_777,
        1_000,
    ] {
        let got = all_splits(&file, size);
        assert_eq!(got.len(), want.len(), "split size {size}");
        assert!(got == want, "split size {size}: lines differ");
    }
}

#[test]
fn several_splits_of_a_large_file_share_its_lines() {
    // With more splits than blocks, most splits hold no block start and read nothing.
    let data = text(400_000, 11);
    let file = compress(&data, 1);
    let empty = (0..file.len())
        .step_by(500)
        .filter(|&s| split_lines(&file, s, 500).unwrap().is_empty())
        .count();
    assert!(empty > 0);
    assert!(all_splits(&file, 500) == reference_lines(&data));
}

#[test]
fn concatenated_streams_read_as_one() {
    let first = text(300_000, 1);
    let second = text(250_000, 2);
    let mut file = compress(&first, 1);
    file.extend(compress(b"", 9));
    file.extend(compress(&second, 2));
    let mut data = first.clone();
    data.extend_from_slice(&second);
    let want = reference_lines(&data);
    for size in [file.len(), 40_000, 12_345] {
        assert!(all_splits(&file, size) == want, "split size {size}");
    }
}

#[test]
fn a_leading_empty_stream_gives_no_line_twice() {
    // Hadoop's first split reads the first block wherever it is, so after an empty first
    // stream the next split reads it too; here each line is read once.
    let data = text(300_000, 4);
    let mut file = compress(b"", 9);
    file.extend(compress(&data, 1));
    let want = reference_lines(&data);
    // The empty stream is 14 bytes; the first block's marker is in byte 18.
    for cut in 1..40 {
        let mut got = split_lines(&file, 0, cut).unwrap();
        got.extend(split_lines(&file, cut, file.len() - cut).unwrap());
        assert!(got == want, "splits cut at byte {cut}");
    }
    assert!(all_splits(&file, 7_000) == want);
}

#[test]
fn each_block_decodes_on_its_own() {
    let data = text(700_000, 3);
    let file = compress(&data, 1);
    let mut markers = Vec::new();
    let mut from = 0;
    while let Some((bit, marker)) = find_marker(&file, from, &|_| true) {
        markers.push((bit, marker));
        from = bit + 1;
    }
    assert_eq!(markers.last().map(|m| m.1), Some(Marker::End));
    assert!(markers.len() > 5, "{} markers", markers.len());
    let mut decoded = Vec::new();
    for pair in markers.windows(2) {
        let stream = standalone_block(&file, pair[0].0, pair[1].0 - pair[0].0);
        bzip2::read::BzDecoder::new(&stream[..])
            .read_to_end(&mut decoded)
            .unwrap();
    }
    assert!(decoded == data);
}

#[test]
fn markers_are_found_at_every_bit_offset() {
    for shift in 0..40u64 {
        for (magic, kind) in [(BLOCK_MAGIC, Marker::Block), (END_MAGIC, Marker::End)] {
            let mut out = BitWriter::with_capacity(32);
            out.push(0x5555_5555, shift);
            out.push(magic, MAGIC_BITS);
            out.push(0x0f0f, 16);
            assert_eq!(
                find_marker(&out.bytes, 0, &|_| true),
                Some((shift, kind)),
                "shift {shift}"
            );
            assert_eq!(find_marker(&out.bytes, shift + 1, &|_| true), None);
            // Cut short by a byte, the marker is not there.
            let short = &out.bytes[..(shift + MAGIC_BITS).div_ceil(8) as usize - 1];
            assert_eq!(find_marker(short, 0, &|_| true), None, "shift {shift}");
        }
    }
}

#[test]
fn a_cut_file_fails_in_the_splits_reading_its_last_block() {
    let data = text(600_000, 5);
    let file = compress(&data, 1);
    let cut = &file[..file.len() * 2 / 3];
    let failed = (0..cut.len())
        .step_by(20_000)
        .filter_map(|start| split_lines(cut, start, 20_000).err())
        .collect::<Vec<_>>();
    // The split holding the cut block's marker fails, and so does any earlier one whose last
    // line runs on into that block.
    assert!(!failed.is_empty());
    for e in &failed {
        assert!(e.to_string().contains("cut short"), "{e}");
    }
    assert!(split_lines(cut, 0, cut.len()).is_err());
}

#[test]
fn a_corrupt_block_fails_its_crc() {
    let data = text(600_000, 9);
    let mut file = compress(&data, 1);
    let at = file.len() / 2;
    file[at] ^= 0x10;
    let whole = split_lines(&file, 0, file.len());
    assert!(whole.is_err(), "a flipped bit went unnoticed");
}

#[test]
fn other_data_is_refused_and_an_empty_file_is_empty() {
    let err = split_lines(b"PK\x03\x04 not bzip2 at all", 0, 100).unwrap_err();
    assert!(err.to_string().contains("not bzip2"), "{err}");
    assert!(split_lines(b"", 0, 0).unwrap().is_empty());
}
