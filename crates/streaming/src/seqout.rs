//! SequenceFile output of a streaming job: the `-outputformat` classes that write
//! SequenceFiles, the key and value classes Hadoop's streaming job declares for them, and the
//! compression keys they read.
//!
//! Hadoop's `StreamJob` declares the job's output classes from the `-io` identifier of the
//! program that writes the output (`text`: `Text`/`Text`, `rawbytes`: `BytesWritable`,
//! `typedbytes`: `TypedBytesWritable`, `keyonlytext`: `Text`/`NullWritable`) when that writer
//! is a command or its `stream.*.output` key is set; otherwise the job keeps
//! `mapreduce.job.output.key.class` / `.value.class` (`LongWritable` / `Text` by default).
//! `SequenceFile.Writer` then fails every record whose class is not the declared one; sluice
//! refuses such a job before it starts.

use sluice_api::{SequenceOutput, Serialized};
use sluice_io::seqfile::{CompressionKind, SeqCodec};

use super::compress::{CODEC, COMPRESS};
use super::conf::JobConf;
use super::protocol::Kind;
use super::StreamingError;

/// `-outputformat` of Hadoop's SequenceFiles of `Writable`s.
pub const SEQUENCE_OUTPUT: &str = "org.apache.hadoop.mapred.SequenceFileOutputFormat";

/// `-outputformat` of SequenceFiles whose records are the programs' raw bytes.
pub const SEQUENCE_BINARY_OUTPUT: &str =
    "org.apache.hadoop.mapred.SequenceFileAsBinaryOutputFormat";

/// The compression type of SequenceFile output (old name `mapred.output.compression.type`).
pub const COMPRESS_TYPE: &str = "mapreduce.output.fileoutputformat.compress.type";

/// The job's output key class, used when the output's writer is not a command.
pub const OUTPUT_KEY_CLASS: &str = "mapreduce.job.output.key.class";

/// The job's output value class.
pub const OUTPUT_VALUE_CLASS: &str = "mapreduce.job.output.value.class";

/// `SequenceFileAsBinaryOutputFormat`'s key class for the header.
pub const BINARY_KEY_CLASS: &str = "mapreduce.output.seqbinaryoutputformat.key.class";

/// `SequenceFileAsBinaryOutputFormat`'s value class for the header.
pub const BINARY_VALUE_CLASS: &str = "mapreduce.output.seqbinaryoutputformat.value.class";

const TEXT: &str = "org.apache.hadoop.io.Text";
const BYTES: &str = "org.apache.hadoop.io.BytesWritable";
const TYPED_BYTES: &str = "org.apache.hadoop.typedbytes.TypedBytesWritable";
const NULL: &str = "org.apache.hadoop.io.NullWritable";
const LONG: &str = "org.apache.hadoop.io.LongWritable";

/// Which SequenceFile output format `-outputformat` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceFormat {
    /// `SequenceFileOutputFormat`: each record holds the `Writable`s the program's framing
    /// makes.
    Writables,
    /// `SequenceFileAsBinaryOutputFormat`: each record holds the bytes of the program's
    /// `BytesWritable`s as they are.
    AsBinary,
}

impl SequenceFormat {
    /// The format `-outputformat NAME` names, if it is one of these.
    pub fn of(name: &str) -> Option<SequenceFormat> {
        match name {
            SEQUENCE_OUTPUT => Some(SequenceFormat::Writables),
            SEQUENCE_BINARY_OUTPUT => Some(SequenceFormat::AsBinary),
            _ => None,
        }
    }

    fn class(self) -> &'static str {
        match self {
            SequenceFormat::Writables => SEQUENCE_OUTPUT,
            SequenceFormat::AsBinary => SEQUENCE_BINARY_OUTPUT,
        }
    }
}

/// The key and value classes of the objects a writer of `kind` produces.
fn classes(kind: Kind) -> Option<(&'static str, &'static str)> {
    match kind {
        Kind::Text => Some((TEXT, TEXT)),
        Kind::Bytes => Some((BYTES, BYTES)),
        Kind::TypedBytes => Some((TYPED_BYTES, TYPED_BYTES)),
        Kind::KeyOnly => Some((TEXT, NULL)),
        Kind::Offset => None,
    }
}

/// How an object of class `class` is serialised from the bytes the job emits for it.
fn serialized(class: &str) -> Serialized {
    match class {
        TEXT => Serialized::Text,
        NULL => Serialized::Null,
        _ => Serialized::Bytes,
    }
}

/// What the output of the job is written by.
#[derive(Debug, Clone, Copy)]
pub struct FinalWriter {
    /// The kind of objects it emits.
    pub emits: Kind,
    /// The kind Hadoop's job declares for the output when it takes it from the `-io`
    /// identifier (the writer is a command, or its `stream.*.output` key is set); `None`
    /// when the job keeps the configured output classes.
    pub declared: Option<Kind>,
}

/// The SequenceFile output of a job whose output `writer` writes in `format`.
///
/// # Errors
/// [`StreamingError::Usage`] for a job Hadoop fails: objects of another class than the
/// declared one (`wrong key class`), `SequenceFileAsBinaryOutputFormat` with objects that are
/// not `BytesWritable`s, an unknown compression type or codec;
/// [`StreamingError::InvalidConf`] for `SequenceFileAsBinaryOutputFormat` with record
/// compression, which Hadoop refuses at submission.
pub fn sequence_output(
    conf: &JobConf,
    format: SequenceFormat,
    writer: FinalWriter,
) -> Result<SequenceOutput, StreamingError> {
    let name = format.class();
    let Some((key_emitted, value_emitted)) = classes(writer.emits) else {
        return Err(StreamingError::Usage(format!(
            "-outputformat {name}: the output's keys are byte offsets (LongWritable) written \
             as text; give a -mapper such as 'cat'"
        )));
    };
    let (key_class, value_class) = match writer.declared.and_then(classes) {
        Some((key, value)) => (key.to_string(), value.to_string()),
        None => (
            conf.get(OUTPUT_KEY_CLASS)
                .map_or(LONG, str::trim)
                .to_string(),
            conf.get(OUTPUT_VALUE_CLASS)
                .map_or(TEXT, str::trim)
                .to_string(),
        ),
    };
    let (compression, codec) = compression(conf, format)?;
    match format {
        SequenceFormat::Writables => {
            for (what, emitted, declared, key) in [
                ("key", key_emitted, &key_class, OUTPUT_KEY_CLASS),
                ("value", value_emitted, &value_class, OUTPUT_VALUE_CLASS),
            ] {
                if emitted != declared {
                    return Err(StreamingError::Usage(format!(
                        "-outputformat {name}: the job's output {what} class is {declared} \
                         ({key}, which Hadoop's streaming job takes from -io only when a \
                         command writes the output) but the output holds {emitted}; Hadoop's \
                         SequenceFile writer fails every task with \"wrong {what} class: \
                         {emitted} is not class {declared}\""
                    )));
                }
            }
            Ok(SequenceOutput {
                key: serialized(&key_class),
                value: serialized(&value_class),
                key_class,
                value_class,
                compression,
                codec,
            })
        }
        SequenceFormat::AsBinary => {
            if !matches!(writer.emits, Kind::Bytes | Kind::TypedBytes) {
                return Err(StreamingError::Usage(format!(
                    "-outputformat {name} writes BytesWritable keys and values, but the \
                     output holds {key_emitted} keys (Hadoop's tasks fail with a \
                     ClassCastException); use -io rawbytes or -io typedbytes"
                )));
            }
            let header = |key: &str, declared: String| {
                conf.get(key)
                    .map_or(declared, |class| class.trim().to_string())
            };
            Ok(SequenceOutput {
                key_class: header(BINARY_KEY_CLASS, key_class),
                value_class: header(BINARY_VALUE_CLASS, value_class),
                key: Serialized::Raw,
                value: Serialized::Raw,
                compression,
                codec,
            })
        }
    }
}

/// The compression of the files: none unless [`COMPRESS`] is true, then [`COMPRESS_TYPE`]
/// (`RECORD` by default, as Hadoop's `SequenceFileOutputFormat`) with the [`CODEC`] class
/// (`DefaultCodec` by default).
fn compression(
    conf: &JobConf,
    format: SequenceFormat,
) -> Result<(CompressionKind, SeqCodec), StreamingError> {
    if !conf.get_bool(COMPRESS, false)? {
        return Ok((CompressionKind::None, SeqCodec::Default));
    }
    let kind_name = conf.get(COMPRESS_TYPE).unwrap_or("RECORD");
    let kind = CompressionKind::parse(kind_name).ok_or_else(|| {
        StreamingError::Usage(format!(
            "-D {COMPRESS_TYPE}={kind_name}: not a SequenceFile compression type (NONE, \
             RECORD or BLOCK)"
        ))
    })?;
    if format == SequenceFormat::AsBinary && kind == CompressionKind::Record {
        return Err(StreamingError::InvalidConf(format!(
            "SequenceFileAsBinaryOutputFormat doesn't support Record Compression (-D \
             {COMPRESS_TYPE}=RECORD, the default when {COMPRESS} is true): use BLOCK"
        )));
    }
    let class = conf
        .get(CODEC)
        .map_or("org.apache.hadoop.io.compress.DefaultCodec", str::trim);
    let codec = SeqCodec::from_class_name(class).ok_or_else(|| {
        StreamingError::Usage(format!(
            "-D {CODEC}={class}: unknown compression codec for SequenceFile output"
        ))
    })?;
    Ok((kind, codec))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn conf(settings: &[(&str, &str)]) -> JobConf {
        let mut conf = JobConf::new();
        for (key, value) in settings {
            conf.set(key, *value);
        }
        conf
    }

    const COMMAND_TEXT: FinalWriter = FinalWriter {
        emits: Kind::Text,
        declared: Some(Kind::Text),
    };

    #[test]
    fn a_command_writes_the_classes_of_its_framing() {
        let out = sequence_output(&conf(&[]), SequenceFormat::Writables, COMMAND_TEXT).unwrap();
        assert_eq!(
            (out.key_class.as_str(), out.value_class.as_str()),
            (TEXT, TEXT)
        );
        assert_eq!((out.key, out.value), (Serialized::Text, Serialized::Text));
        assert_eq!(out.compression, CompressionKind::None);
        let key_only = FinalWriter {
            emits: Kind::KeyOnly,
            declared: Some(Kind::KeyOnly),
        };
        let out = sequence_output(&conf(&[]), SequenceFormat::Writables, key_only).unwrap();
        assert_eq!((out.key, out.value), (Serialized::Text, Serialized::Null));
        assert_eq!(out.value_class, NULL);
        // A command's classes win over the configured ones, as in Hadoop.
        let out = sequence_output(
            &conf(&[(OUTPUT_KEY_CLASS, LONG)]),
            SequenceFormat::Writables,
            COMMAND_TEXT,
        )
        .unwrap();
        assert_eq!(out.key_class, TEXT);
    }

    #[test]
    fn configured_classes_must_match_what_a_java_writer_emits() {
        let aggregate = FinalWriter {
            emits: Kind::Text,
            declared: None,
        };
        let err = sequence_output(&conf(&[]), SequenceFormat::Writables, aggregate).unwrap_err();
        assert!(
            err.to_string().contains("wrong key class: org.apache.hadoop.io.Text is not class org.apache.hadoop.io.LongWritable"),
            "{err}"
        );
        let texts = conf(&[(OUTPUT_KEY_CLASS, TEXT)]);
        assert!(sequence_output(&texts, SequenceFormat::Writables, aggregate).is_ok());
    }

    #[test]
    fn compression_type_and_codec() {
        let c = conf(&[(COMPRESS, "true")]);
        let out = sequence_output(&c, SequenceFormat::Writables, COMMAND_TEXT).unwrap();
        assert_eq!(
            (out.compression, out.codec),
            (CompressionKind::Record, SeqCodec::Default)
        );
        let c = conf(&[
            ("mapred.output.compress", "true"),
            ("mapred.output.compression.type", "BLOCK"),
            (CODEC, "org.apache.hadoop.io.compress.GzipCodec"),
        ]);
        let out = sequence_output(&c, SequenceFormat::Writables, COMMAND_TEXT).unwrap();
        assert_eq!(
            (out.compression, out.codec),
            (CompressionKind::Block, SeqCodec::Gzip)
        );
        let c = conf(&[(COMPRESS, "true"), (COMPRESS_TYPE, "block")]);
        let err = sequence_output(&c, SequenceFormat::Writables, COMMAND_TEXT).unwrap_err();
        assert!(err.to_string().contains(COMPRESS_TYPE), "{err}");
    }

    #[test]
    fn as_binary_wants_bytes_and_no_record_compression() {
        let raw = FinalWriter {
            emits: Kind::Bytes,
            declared: Some(Kind::Bytes),
        };
        let out = sequence_output(&conf(&[]), SequenceFormat::AsBinary, raw).unwrap();
        assert_eq!((out.key, out.value), (Serialized::Raw, Serialized::Raw));
        assert_eq!(out.key_class, BYTES);
        let named = conf(&[(BINARY_KEY_CLASS, "org.apache.hadoop.io.IntWritable")]);
        let out = sequence_output(&named, SequenceFormat::AsBinary, raw).unwrap();
        assert_eq!(out.key_class, "org.apache.hadoop.io.IntWritable");
        assert!(sequence_output(&conf(&[]), SequenceFormat::AsBinary, COMMAND_TEXT).is_err());
        let err = sequence_output(&conf(&[(COMPRESS, "true")]), SequenceFormat::AsBinary, raw)
            .unwrap_err();
        assert!(err.to_string().contains("Record Compression"), "{err}");
        let block = conf(&[(COMPRESS, "true"), (COMPRESS_TYPE, "BLOCK")]);
        assert!(sequence_output(&block, SequenceFormat::AsBinary, raw).is_ok());
    }
}
