//! `sluice run sort`'s two inputs: text lines, or SequenceFiles (Hadoop's `sort` example over
//! RandomWriter's output), told apart by the files' first bytes unless `--input-format` says.

use std::io::Read;

use anyhow::{bail, Context, Result};
use clap::ValueEnum;
use sluice_io::seqfile::SeqFileReader;
use sluice_io::{Compression, Split, Storage, StoredInput};
use sluice_spec::JobSpec;

use crate::{compression, stores, CommonArgs};

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
        return Ok(JobSpec::Sort {
            reducers,
            output_codec: compression::text(&common.define)?,
        });
    }
    let config = stores::store_config(&common.define)?;
    let inputs = stores::resolve_all("--input", &common.input, &config)?;
    let stores = stores::stores(&config, "sort");
    let files = sluice_io::discover(&stores, &inputs).context("cannot list the input")?;
    if format == SortInput::Auto && !starts_as_sequence_file(&stores, &files)? {
        return Ok(JobSpec::Sort {
            reducers,
            output_codec: compression::text(&common.define)?,
        });
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
        compression: compression::sequence_file(&common.define)?,
    })
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
