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

/// A SequenceFile as text to compare: a header line (key class, value class, compression
/// type, codec class, metadata pairs), then one line per record, key and value in escaped
/// bytes, tab between. Sync markers are random, so two files of the same records differ in
/// bytes; this view does not. Written apart from sluice's reader, after Hadoop's
/// `SequenceFile.Reader`; it decodes `DefaultCodec`/`DeflateCodec` (zlib) and `GzipCodec`.
pub(crate) fn sequence_file(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut r = Cursor { bytes, at: 0 };
    if r.take(4)? != b"SEQ\x06" {
        return Err("not a version 6 SequenceFile".into());
    }
    let key_class = r.text()?;
    let value_class = r.text()?;
    let compressed = r.take(1)?[0] != 0;
    let blocked = r.take(1)?[0] != 0;
    let codec = if compressed { r.text()? } else { String::new() };
    let pairs = r.be32()?;
    let mut metadata = Vec::new();
    for _ in 0..pairs {
        metadata.push(format!("{}={}", r.text()?, r.text()?));
    }
    let sync = r.take(16)?.to_vec();
    let kind = match (compressed, blocked) {
        (false, _) => "NONE",
        (true, false) => "RECORD",
        (true, true) => "BLOCK",
    };
    let mut out = format!(
        "{key_class} {value_class} {kind} {codec} [{}]\n",
        metadata.join(",")
    )
    .into_bytes();
    let inflate = |data: &[u8]| -> Result<Vec<u8>, String> {
        let mut plain = Vec::new();
        let result = match codec.as_str() {
            "org.apache.hadoop.io.compress.DefaultCodec"
            | "org.apache.hadoop.io.compress.DeflateCodec" => {
                flate2::read::ZlibDecoder::new(data).read_to_end(&mut plain)
            }
            "org.apache.hadoop.io.compress.GzipCodec" => {
                flate2::read::MultiGzDecoder::new(data).read_to_end(&mut plain)
            }
            other => return Err(format!("codec {other} is not decoded by the test")),
        };
        result.map_err(|e| e.to_string())?;
        Ok(plain)
    };
    let mut record = |key: &[u8], value: &[u8]| {
        out.extend(key.escape_ascii().to_string().bytes());
        out.push(b'\t');
        out.extend(value.escape_ascii().to_string().bytes());
        out.push(b'\n');
    };
    while r.at < bytes.len() {
        if blocked {
            if r.be32()? != u32::MAX || r.take(16)? != sync.as_slice() {
                return Err(format!("no sync entry before the block at {}", r.at));
            }
            let records = r.vint()?;
            let mut buffers = Vec::new();
            for _ in 0..4 {
                let len = r.vint()?;
                buffers.push(inflate(r.take(len)?)?);
            }
            let (mut key_lens, mut keys) = (Cursor::new(&buffers[0]), Cursor::new(&buffers[1]));
            let (mut value_lens, mut values) = (Cursor::new(&buffers[2]), Cursor::new(&buffers[3]));
            for _ in 0..records {
                let key = keys.take(key_lens.vint()?)?;
                let value = values.take(value_lens.vint()?)?;
                record(key, value);
            }
            continue;
        }
        let len = r.be32()?;
        if len == u32::MAX {
            if r.take(16)? != sync.as_slice() {
                return Err(format!("a bad sync marker before {}", r.at));
            }
            continue;
        }
        let key_len = r.be32()? as usize;
        let body = r.take(len as usize)?;
        let (key, value) = body
            .split_at_checked(key_len)
            .ok_or("a key longer than its record")?;
        if compressed {
            record(key, &inflate(value)?);
        } else {
            record(key, value);
        }
    }
    Ok(out)
}

/// Reads big-endian integers, Hadoop's vints and `Text` strings.
struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, at: 0 }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let got = self
            .bytes
            .get(self.at..self.at + n)
            .ok_or_else(|| format!("truncated: {n} bytes wanted at {}", self.at))?;
        self.at += n;
        Ok(got)
    }

    fn be32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// `WritableUtils.readVInt` of a non-negative length.
    fn vint(&mut self) -> Result<usize, String> {
        let first = self.take(1)?[0] as i8;
        if first >= -112 {
            return usize::try_from(first).map_err(|_| "a negative length".to_string());
        }
        if first < -120 {
            return Err("a negative length".into());
        }
        let mut value = 0usize;
        for &b in self.take((-112 - i32::from(first)) as usize)? {
            value = (value << 8) | usize::from(b);
        }
        Ok(value)
    }

    fn text(&mut self) -> Result<String, String> {
        let len = self.vint()?;
        Ok(String::from_utf8_lossy(self.take(len)?).into_owned())
    }
}
