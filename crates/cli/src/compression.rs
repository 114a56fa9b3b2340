//! Compressed output as Hadoop's `FileOutputFormat` keys ask for it (`-D
//! mapreduce.output.fileoutputformat.compress=true`, its codec and, for SequenceFiles, its
//! type; the current key names and the old ones), for sluice's own jobs and generators.
//! `sluice streaming` reads the same keys through its job configuration.

use anyhow::{bail, Context, Result};
use sluice_io::OutputCodec;
use sluice_spec::SeqCompression;

/// The codec when none is named, as in Hadoop.
const DEFAULT_CODEC: &str = "org.apache.hadoop.io.compress.DefaultCodec";

/// Whether part files are compressed (old name `mapred.output.compress`).
const COMPRESS: [&str; 2] = [
    "mapreduce.output.fileoutputformat.compress",
    "mapred.output.compress",
];
/// `NONE`, `RECORD` (the default) or `BLOCK`.
const COMPRESS_TYPE: [&str; 2] = [
    "mapreduce.output.fileoutputformat.compress.type",
    "mapred.output.compression.type",
];
/// The codec's class (default `DefaultCodec`).
const COMPRESS_CODEC: [&str; 2] = [
    "mapreduce.output.fileoutputformat.compress.codec",
    "mapred.output.compression.codec",
];

/// The last value `-D` gives a key under either of its names.
fn defined<'a>(defines: &'a [(String, String)], names: [&str; 2]) -> Option<(&'a str, &'a str)> {
    defines
        .iter()
        .rev()
        .find(|(key, _)| names.contains(&key.as_str()))
        .map(|(key, value)| (key.as_str(), value.trim()))
}

/// Whether `-D` turns output compression on, read as Hadoop's `getBoolean` reads it.
fn compressed_output(defines: &[(String, String)]) -> Result<bool> {
    match defined(defines, COMPRESS) {
        None => Ok(false),
        Some((_, value)) if value.eq_ignore_ascii_case("true") => Ok(true),
        Some((_, value)) if value.eq_ignore_ascii_case("false") => Ok(false),
        Some((key, value)) => bail!("-D {key}={value}: expected true or false"),
    }
}

/// The SequenceFile output compression `-D` asks for, as Hadoop's `SequenceFileOutputFormat`
/// takes it (`RECORD` and `DefaultCodec` unless told otherwise; current or old key names):
/// for `sluice run sort` and `sluice gen randomwriter`.
pub(crate) fn sequence_file(defines: &[(String, String)]) -> Result<Option<SeqCompression>> {
    if !compressed_output(defines)? {
        return Ok(None);
    }
    let kind = defined(defines, COMPRESS_TYPE).map_or("RECORD", |(_, v)| v);
    let codec = defined(defines, COMPRESS_CODEC).map_or(DEFAULT_CODEC, |(_, v)| v);
    let compression = SeqCompression {
        kind: kind.to_string(),
        codec: codec.to_string(),
    };
    // Refused here, naming the keys, rather than when the job is built.
    compression.parse().with_context(|| {
        format!(
            "-D {}={kind} -D {}={codec}",
            COMPRESS_TYPE[0], COMPRESS_CODEC[0]
        )
    })?;
    Ok(Some(compression))
}

/// The codec class of a text job's part files `-D` asks for (`None`: uncompressed): the
/// class named by the codec key, `DefaultCodec` when unset. A class sluice does not write is
/// refused here, naming the key.
pub(crate) fn text(defines: &[(String, String)]) -> Result<Option<String>> {
    if !compressed_output(defines)? {
        return Ok(None);
    }
    let (key, codec) =
        defined(defines, COMPRESS_CODEC).unwrap_or((COMPRESS_CODEC[0], DEFAULT_CODEC));
    if OutputCodec::from_class_name(codec).is_none() {
        bail!(
            "-D {key}={codec}: not a codec sluice writes part files with (it writes {})",
            OutputCodec::class_names().join(", ")
        );
    }
    Ok(Some(codec.to_string()))
}
