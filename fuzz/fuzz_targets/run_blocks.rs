//! Spill blocks and run files (sluice-format): checksummed, optionally compressed blocks of
//! `varint klen, varint vlen, key, value` records.
//!
//! Mode 0: arbitrary bytes, with every block's checksum recomputed so that the reader gets
//! past it to the headers' lengths, the decompressors and the record decoder. Whatever
//! `RunReader` accepts, `verify_blocks` must accept too, with the same raw length; and no
//! block yields more records than its bytes allow.
//! Mode 1: records chosen by the fuzzer, written by `RunWriter` with a chosen codec and block
//! size, must read back exactly.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice_format::{verify_blocks, Codec, RunReader, RunWriter, BLOCK_HEADER_LEN};

/// Rewrites the checksum of every block whose header and body are complete.
fn fix_checksums(data: &mut [u8]) {
    let mut at = 0;
    while data.len() - at >= BLOCK_HEADER_LEN {
        let stored = u32::from_le_bytes([data[at + 4], data[at + 5], data[at + 6], data[at + 7]]);
        let Some(end) = usize::try_from(stored)
            .ok()
            .and_then(|n| (at + BLOCK_HEADER_LEN).checked_add(n))
            .filter(|&end| end <= data.len())
        else {
            return;
        };
        let crc = crc32c::crc32c_append(
            crc32c::crc32c(&data[at..at + 12]),
            &data[at + BLOCK_HEADER_LEN..end],
        );
        data[at + 12..at + 16].copy_from_slice(&crc.to_le_bytes());
        at = end;
    }
}

fn hostile(data: &[u8]) {
    let mut bytes = data.to_vec();
    fix_checksums(&mut bytes);
    let verified = verify_blocks(&bytes, "fuzz", 0);
    let mut reader = RunReader::new(&bytes[..], "fuzz", 0);
    let mut records = 0usize;
    let mut record_bytes = 0usize;
    let clean = loop {
        match reader.advance() {
            Ok(true) => {
                records += 1;
                record_bytes += reader.key().len() + reader.value().len();
            }
            Ok(false) => break true,
            Err(_) => break false,
        }
    };
    if clean {
        let raw = verified.expect("a run the reader accepts passes verify_blocks");
        assert_eq!(reader.offset(), bytes.len() as u64);
        // Every record takes at least its two one-byte varints of the raw bytes.
        let raw = usize::try_from(raw).expect("fits");
        assert!(
            records * 2 + record_bytes <= raw,
            "{records} records from {raw} raw bytes"
        );
    }
}

fn round_trip(u: &mut Unstructured<'_>) -> arbitrary::Result<()> {
    let codec = match u8::arbitrary(u)? % 3 {
        0 => Codec::None,
        1 => Codec::Lz4,
        _ => Codec::Zstd { level: 1 },
    };
    let block_size = usize::from(u16::arbitrary(u)?) + 1;
    let records = Vec::<(&[u8], &[u8])>::arbitrary(u)?;
    let mut writer = RunWriter::new(Vec::new(), codec, block_size, "fuzz");
    for (k, v) in &records {
        writer.write_record(k, v).expect("write");
    }
    let written = writer.records_written();
    let bytes = writer.into_inner().expect("finish");
    assert_eq!(written, records.len() as u64);
    verify_blocks(&bytes, "fuzz", 0).expect("written blocks verify");
    let mut reader = RunReader::new(&bytes[..], "fuzz", 0);
    for (k, v) in &records {
        assert!(reader.advance().expect("read"));
        assert_eq!(reader.key(), *k);
        assert_eq!(reader.value(), *v);
    }
    assert!(!reader.advance().expect("end"));
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, data)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        hostile(data);
    } else {
        let _ = round_trip(&mut Unstructured::new(data));
    }
});
