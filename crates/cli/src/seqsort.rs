//! `sluice run sort`'s two inputs: text lines, or SequenceFiles (Hadoop's `sort` example over
//! RandomWriter's output), told apart by the files' first bytes unless `--input-format` says.

use std::io::Read;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use sluice_io::seqfile::SeqFileReader;
use sluice_io::{Compression, Split, Storage, StoredInput};
use sluice_spec::{JobSpec, SeqCompression};

use crate::{stores, CommonArgs};

/// What `sluice run sort` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum SortInput {
    /// SequenceFiles if the first non-empty input file starts with `SEQ`, else text.
    Auto,
    /// `key<TAB>value` lines.
    Text,
    /// Hadoop SequenceFiles.
    Sequencefile,
}

/// The sort job for `common`'s inputs read as `format` says: a text sort, or a SequenceFile
/// sort with the classes the files' headers name (every file must name the same).
pub(crate) fn sort_spec(format: SortInput, common: &CommonArgs) -> Result<JobSpec> {
    let reducers = common.reducers;
    if format == SortInput::Text {
        return Ok(JobSpec::Sort { reducers });
    }
    let config = stores::store_config(&common.define)?;
    let inputs = stores::resolve_all("--input", &common.input, &config)?;
    let stores = stores::stores(&config, "sort");
    let files = sluice_io::discover(&stores, &inputs).context("cannot list the input")?;
    if format == SortInput::Auto && !starts_as_sequence_file(&stores, &files)? {
        return Ok(JobSpec::Sort { reducers });
    }
    let mut classes: Option<(String, String, String)> = None;
    for file in &files {
        let whole = Split {
            file: 0,
            start: 0,
            len: 0,
        };
        let reader = SeqFileReader::open_in(&stores, file, &whole).with_context(|| {
            format!(
                "the sort's input is SequenceFiles, but {} is not one",
                file.location()
            )
        })?;
        let header = reader.header();
        match &classes {
            None => {
                classes = Some((
                    header.key_class.clone(),
                    header.value_class.clone(),
                    file.location().to_string(),
                ));
            }
            Some((key, value, first))
                if (key, value) != (&header.key_class, &header.value_class) =>
            {
                bail!(
                    "{} holds {} keys and {} values, but {first} holds {key} and {value}: a \
                     sort's SequenceFiles must all be of the same classes",
                    file.location(),
                    header.key_class,
                    header.value_class
                )
            }
            Some(_) => {}
        }
    }
    let Some((key_class, value_class, _)) = classes else {
        bail!("--input-format sequencefile, but the input holds no file");
    };
    Ok(JobSpec::SortSequenceFile {
        reducers,
        key_class,
        value_class,
        compression: output_compression(&common.define)?,
    })
}

/// Whether part files are compressed (old name `mapred.output.compress`).
pub(crate) const COMPRESS: [&str; 2] = [
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
pub(crate) fn compressed_output(defines: &[(String, String)]) -> Result<bool> {
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
pub(crate) fn output_compression(defines: &[(String, String)]) -> Result<Option<SeqCompression>> {
    if !compressed_output(defines)? {
        return Ok(None);
    }
    let kind = defined(defines, COMPRESS_TYPE).map_or("RECORD", |(_, v)| v);
    let codec = defined(defines, COMPRESS_CODEC)
        .map_or("org.apache.hadoop.io.compress.DefaultCodec", |(_, v)| v);
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

/// Whether the first non-empty uncompressed file starts with SequenceFile's magic `SEQ`.
fn starts_as_sequence_file(storage: &dyn Storage, files: &[StoredInput]) -> Result<bool> {
    let Some(first) = files
        .iter()
        .find(|f| f.status.len > 0 && f.compression == Compression::None)
    else {
        return Ok(false);
    };
    let mut magic = Vec::with_capacity(3);
    storage
        .open_range(first.location(), 0, 3)
        .and_then(|input| {
            input
                .take(3)
                .read_to_end(&mut magic)
                .map_err(|source| sluice_io::IoError::Read {
                    path: first.location().error_path(),
                    source,
                })
        })
        .with_context(|| format!("cannot read {}", first.location()))?;
    Ok(magic == b"SEQ")
}
