//! Decoding compressed part files for comparison. Compressed bytes differ between
//! implementations (levels, block sizes, headers), so a case with `decompress = true` compares
//! what the files decode to; the file names, extension included, must still be equal.
//!
//! The decoders are written here, apart from sluice's reader: gzip, bzip2, zlib and zstd by
//! their libraries, Hadoop's block framing (`Lz4Codec`, `SnappyCodec`) by the few lines below.

use std::io::Read;

/// What the part file `name` decodes to, chosen by its extension as Hadoop's
/// `CompressionCodecFactory` does; a name without a codec extension is returned as it is.
pub(crate) fn decompress(name: &str, bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let read = |mut r: Box<dyn Read + '_>, out: &mut Vec<u8>| {
        r.read_to_end(out).map(|_| ()).map_err(|e| e.to_string())
    };
    if name.ends_with(".gz") {
        read(Box::new(flate2::read::MultiGzDecoder::new(bytes)), &mut out)?;
    } else if name.ends_with(".bz2") {
        read(Box::new(bzip2::read::MultiBzDecoder::new(bytes)), &mut out)?;
    } else if name.ends_with(".deflate") {
        read(Box::new(flate2::read::ZlibDecoder::new(bytes)), &mut out)?;
    } else if name.ends_with(".zst") {
        out = zstd::stream::decode_all(bytes).map_err(|e| e.to_string())?;
    } else if name.ends_with(".lz4") {
        out = hadoop_blocks(bytes, |chunk, len| {
            lz4_flex::block::decompress(chunk, len).map_err(|e| e.to_string())
        })?;
    } else if name.ends_with(".snappy") {
        out = hadoop_blocks(bytes, |chunk, _| {
            snap::raw::Decoder::new()
                .decompress_vec(chunk)
                .map_err(|e| e.to_string())
        })?;
    } else {
        out = bytes.to_vec();
    }
    Ok(out)
}

/// Hadoop's `BlockCompressorStream` framing: blocks of (big-endian uncompressed length, then
/// chunks of big-endian compressed length and bytes until the block is complete); a block of
/// length 0 ends the stream. `decode(chunk, at_most)` decodes one chunk.
fn hadoop_blocks(
    bytes: &[u8],
    decode: impl Fn(&[u8], usize) -> Result<Vec<u8>, String>,
) -> Result<Vec<u8>, String> {
    let be32 = |at: usize| -> Result<usize, String> {
        bytes
            .get(at..at + 4)
            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| format!("truncated length at byte {at}"))
    };
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let mut left = be32(at)?;
        at += 4;
        if left == 0 {
            break;
        }
        while left > 0 {
            let len = be32(at)?;
            let chunk = bytes
                .get(at + 4..at + 4 + len)
                .ok_or_else(|| format!("truncated chunk at byte {at}"))?;
            let decoded = decode(chunk, left)?;
            if decoded.is_empty() || decoded.len() > left {
                return Err(format!("chunk at byte {at} decodes to {}", decoded.len()));
            }
            left -= decoded.len();
            out.extend(decoded);
            at += 4 + len;
        }
    }
    Ok(out)
}
