//! Compressed output of a streaming job: Hadoop's `FileOutputFormat` compression keys, read
//! into the engine's [`OutputCodec`].

use sluice_io::OutputCodec;

use super::conf::JobConf;
use super::StreamingError;

/// Whether part files are compressed (old name `mapred.output.compress`).
pub const COMPRESS: &str = "mapreduce.output.fileoutputformat.compress";

/// The codec's Java class (old name `mapred.output.compression.codec`).
pub const CODEC: &str = "mapreduce.output.fileoutputformat.compress.codec";

/// The codec when [`CODEC`] is not set, as in Hadoop.
pub const DEFAULT_CODEC: &str = "org.apache.hadoop.io.compress.DefaultCodec";

/// The codec of the job's part files: none unless [`COMPRESS`] is true, then the class named
/// by [`CODEC`] (Hadoop's `DefaultCodec` when unset). The codec key is only read when output
/// is compressed, as in Hadoop.
///
/// # Errors
/// [`StreamingError::Usage`] naming the key when [`COMPRESS`] is not `true` or `false` (Hadoop
/// would silently take an unreadable value as false), or when the codec class is not one sluice
/// writes (Hadoop fails the job: the class is not found).
pub fn output_codec(conf: &JobConf) -> Result<OutputCodec, StreamingError> {
    if !conf.get_bool(COMPRESS, false)? {
        return Ok(OutputCodec::None);
    }
    let class = conf.get(CODEC).map_or(DEFAULT_CODEC, str::trim);
    OutputCodec::from_class_name(class).ok_or_else(|| {
        StreamingError::Usage(format!(
            "-D {CODEC}={class}: unknown compression codec; sluice writes {}",
            OutputCodec::class_names().join(", ")
        ))
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn codec(settings: &[(&str, &str)]) -> Result<OutputCodec, StreamingError> {
        let mut conf = JobConf::new();
        for (key, value) in settings {
            conf.set(key, *value);
        }
        output_codec(&conf)
    }

    #[test]
    fn compression_is_off_unless_asked_for() {
        assert_eq!(codec(&[]).unwrap(), OutputCodec::None);
        assert_eq!(
            codec(&[(COMPRESS, "false"), (CODEC, "no.such.Codec")]).unwrap(),
            OutputCodec::None
        );
    }

    #[test]
    fn every_hadoop_codec_and_the_default() {
        assert_eq!(codec(&[(COMPRESS, "true")]).unwrap(), OutputCodec::Deflate);
        let classes = [
            ("DefaultCodec", OutputCodec::Deflate),
            ("DeflateCodec", OutputCodec::Deflate),
            ("GzipCodec", OutputCodec::Gzip),
            ("BZip2Codec", OutputCodec::Bzip2),
            ("ZStandardCodec", OutputCodec::Zstd),
            ("Lz4Codec", OutputCodec::Lz4),
            ("SnappyCodec", OutputCodec::Snappy),
        ];
        for (class, want) in classes {
            let class = format!("org.apache.hadoop.io.compress.{class}");
            assert_eq!(codec(&[(COMPRESS, "TRUE"), (CODEC, &class)]).unwrap(), want);
        }
    }

    #[test]
    fn old_key_names_work() {
        let got = codec(&[
            ("mapred.output.compress", "true"),
            (
                "mapred.output.compression.codec",
                "org.apache.hadoop.io.compress.GzipCodec",
            ),
        ]);
        assert_eq!(got.unwrap(), OutputCodec::Gzip);
    }

    #[test]
    fn unknown_codecs_and_non_booleans_are_refused_naming_the_key() {
        let err = codec(&[(COMPRESS, "true"), (CODEC, "GzipCodec")]).unwrap_err();
        assert!(err.to_string().contains(CODEC), "{err}");
        assert!(err.to_string().contains("GzipCodec"), "{err}");
        let err = codec(&[(COMPRESS, "yes")]).unwrap_err();
        assert!(err.to_string().contains(COMPRESS), "{err}");
    }
}
