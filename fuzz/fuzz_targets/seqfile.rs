//! Hadoop SequenceFiles (sluice-io's `seqfile`): header, records, record and block
//! compression with every codec, sync markers, splits.
//!
//! Mode 0: arbitrary bytes read as a file, whole and as two splits cut anywhere: errors, never
//! a panic, and the reader stops.
//! Mode 2: a file written as in mode 1, with bytes flipped, read as in mode 0.
//! Mode 1: records chosen by the fuzzer, written by `SeqFileWriter` with a chosen compression,
//! codec, sync interval and block size, must read back exactly, and two splits cut at any byte
//! must together return every record once, in order (what Hadoop's splits promise).
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_io::seqfile::{
    CompressionKind, SeqCodec, SeqFileReader, SeqFileWriter, SeqWriteOptions,
};
use sluice_io::{FileStatus, LocalStorage, Location, Split, StoredInput};

type Records = Vec<(Vec<u8>, Vec<u8>)>;

const TEXT: &str = "org.apache.hadoop.io.Text";
const BYTES: &str = "org.apache.hadoop.io.BytesWritable";

/// This process's own file, rewritten for each input.
fn path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("sluice-fuzz-{}.seq", std::process::id()))
    })
}

/// The records of the split `[start, start + len)`; at most `limit` of them.
fn read_split(
    path: &Path,
    file_len: u64,
    start: u64,
    len: u64,
    limit: usize,
) -> Result<Records, String> {
    let input = StoredInput::new(FileStatus::file(Location::from_path(path), file_len));
    let split = Split {
        file: 0,
        start,
        len,
    };
    let mut reader =
        SeqFileReader::open_in(&LocalStorage::new(), &input, &split).map_err(|e| e.to_string())?;
    let mut out = Records::new();
    while let Some((_, k, v)) = reader.next_record().map_err(|e| e.to_string())? {
        out.push((k.to_vec(), v.to_vec()));
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

fn hostile(data: &[u8], cut: u64) {
    let path = path();
    std::fs::write(path, data).expect("write");
    let len = data.len() as u64;
    let _ = read_split(path, len, 0, len, 100_000);
    let cut = cut % (len + 1);
    let _ = read_split(path, len, 0, cut, 100_000);
    let _ = read_split(path, len, cut, len - cut, 100_000);
}

/// Writes a file of fuzzer-chosen records and options and checks that it reads back, whole
/// and split; returns its bytes.
fn round_trip(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let mut options = SeqWriteOptions::new(BYTES, TEXT);
    options.compression = match u8::arbitrary(u)? % 3 {
        0 => CompressionKind::None,
        1 => CompressionKind::Record,
        _ => CompressionKind::Block,
    };
    options.codec = Some(match u8::arbitrary(u)? % 7 {
        0 => SeqCodec::Default,
        1 => SeqCodec::Deflate,
        2 => SeqCodec::Gzip,
        3 => SeqCodec::Bzip2,
        4 => SeqCodec::Snappy,
        5 => SeqCodec::Lz4,
        _ => SeqCodec::Zstd,
    });
    options.sync_interval = u64::from(u16::arbitrary(u)?);
    options.block_size = usize::from(u16::arbitrary(u)?) + 1;
    let cut = u32::arbitrary(u)?;
    let pairs = Vec::<(&[u8], &[u8])>::arbitrary(u)?;
    let mut records = Records::new();
    let mut writer = SeqFileWriter::new(Vec::new(), options).expect("writer");
    for (k, v) in pairs {
        // Keys as BytesWritable (a 4-byte length), values as Text (a vint length).
        let mut key = (k.len() as u32).to_be_bytes().to_vec();
        key.extend_from_slice(k);
        let mut value = Vec::new();
        sluice_hadoop::writable::write_text(&mut value, v).expect("text");
        writer.append(&key, &value).expect("append");
        records.push((key, value));
    }
    let bytes = writer.finish().expect("finish");
    let path = path();
    std::fs::write(path, &bytes).expect("write");
    let len = bytes.len() as u64;
    let whole = read_split(path, len, 0, len, usize::MAX).expect("a written file reads");
    assert_eq!(whole, records);
    let cut = u64::from(cut) % (len + 1);
    let mut halves = read_split(path, len, 0, cut, usize::MAX).expect("first split");
    halves.extend(read_split(path, len, cut, len - cut, usize::MAX).expect("second split"));
    assert_eq!(halves, records, "split at {cut} of {len}");
    Ok(bytes)
}

fuzz_target!(|data: &[u8]| {
    let [mode, c0, c1, data @ ..] = data else {
        return;
    };
    let cut = u64::from(u16::from_le_bytes([*c0, *c1]));
    match mode % 3 {
        0 => hostile(data, cut),
        1 => {
            let _ = round_trip(&mut Unstructured::new(data));
        }
        _ => {
            // A valid file with bytes flipped: gets past the magic and the header into the
            // records, blocks and decompressors.
            let mut u = Unstructured::new(data);
            let Ok(mut bytes) = round_trip(&mut u) else {
                return;
            };
            while !u.is_empty() && !bytes.is_empty() {
                let (Ok(at), Ok(xor)) = (u32::arbitrary(&mut u), u8::arbitrary(&mut u)) else {
                    break;
                };
                let at = at as usize % bytes.len();
                bytes[at] ^= xor;
            }
            hostile(&bytes, cut);
        }
    }
});
