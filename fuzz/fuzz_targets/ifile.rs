//! Hadoop's IFile map output (`file.out`) as the plugin writes it: sluice writes IFiles but
//! never reads one, so this target checks the writer against an independent reader written
//! from Hadoop's `IFile.Reader` and `WritableUtils.readVInt`: every segment holds exactly the
//! records appended, then the end marker, then the CRC32 of its bytes, where its index entry
//! says.
#![no_main]

use std::path::PathBuf;
use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_io::OutputCodec;
use sluice_jni::ifile::IFileWriter;

fn path() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        std::env::temp_dir().join(format!("sluice-fuzz-{}.out", std::process::id()))
    })
}

/// `WritableUtils.readVLong`; `None` past the end of `data`.
fn read_vint(data: &[u8], at: &mut usize) -> Option<i64> {
    let first = *data.get(*at)? as i8;
    *at += 1;
    if first >= -112 {
        return Some(i64::from(first));
    }
    let negative = first < -120;
    let len = if negative {
        -119 - i32::from(first)
    } else {
        -111 - i32::from(first)
    };
    let mut value = 0i64;
    for _ in 1..len {
        value = value << 8 | i64::from(*data.get(*at)?);
        *at += 1;
    }
    Some(if negative { !value } else { value })
}

/// CRC32 with the zlib polynomial, bit by bit.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                crc >> 1 ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn run(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let segments = Vec::<Vec<(&[u8], &[u8])>>::arbitrary(u)?;
    let file = path();
    let file = file.to_str().expect("UTF-8 path");
    let mut writer = IFileWriter::create(file, OutputCodec::None).expect("create");
    let mut entries = Vec::new();
    for segment in &segments {
        for (k, v) in segment {
            writer.append(k, v).expect("append");
        }
        entries.push(writer.end_segment().expect("end segment"));
    }
    let total: usize = segments.iter().map(Vec::len).sum();
    assert_eq!(writer.records(), total as u64);
    writer.finish().expect("finish");
    let file = std::fs::read(path()).expect("read");

    let mut start = 0u64;
    for (segment, entry) in segments.iter().zip(&entries) {
        assert_eq!(entry.start, start);
        assert_eq!(entry.part_length, entry.raw_length + 4);
        let begin = usize::try_from(entry.start).expect("small");
        let raw_end = begin + usize::try_from(entry.raw_length).expect("small");
        let bytes = &file[begin..raw_end];
        let mut at = 0;
        for (k, v) in segment {
            let klen = read_vint(bytes, &mut at).expect("key length");
            let vlen = read_vint(bytes, &mut at).expect("value length");
            assert_eq!((klen, vlen), (k.len() as i64, v.len() as i64));
            assert_eq!(&bytes[at..at + k.len()], *k);
            at += k.len();
            assert_eq!(&bytes[at..at + v.len()], *v);
            at += v.len();
        }
        assert_eq!(read_vint(bytes, &mut at), Some(-1));
        assert_eq!(read_vint(bytes, &mut at), Some(-1));
        assert_eq!(at, bytes.len(), "the raw length ends at the end marker");
        let crc = u32::from_be_bytes(file[raw_end..raw_end + 4].try_into().expect("4 bytes"));
        assert_eq!(crc, crc32(bytes));
        start += entry.part_length;
    }
    assert_eq!(start, file.len() as u64);
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
