//! `sluice run sort`'s two inputs: text lines, or SequenceFiles (Hadoop's `sort` example over
//! RandomWriter's output), told apart as [`formats::reads_sequence_files`] says.

use anyhow::{bail, Context, Result};
use sluice_io::seqfile::SeqFileReader;
use sluice_io::Split;
use sluice_spec::JobSpec;

use crate::formats::{self, InputFormatArg};
use crate::{compression, stores, CommonArgs};

/// The sort job for `common`'s inputs read as `format` says: a text sort, or a SequenceFile
/// sort with the classes the files' headers name (every file must name the same).
pub(crate) fn sort_spec(format: InputFormatArg, common: &CommonArgs) -> Result<JobSpec> {
    let reducers = common.reducers()?;
    if !formats::reads_sequence_files(format, common)? {
        formats::text_output_only("a sort of text", &common.define)?;
        return Ok(JobSpec::Sort {
            reducers,
            output_codec: compression::text(&common.define)?,
        });
    }
    let config = stores::store_config(&common.define)?;
    let inputs = stores::resolve_all("--input", &common.inputs(), &config)?;
    let stores = stores::stores(&config, "sort");
    let files = sluice_io::discover(&stores, &inputs).context("cannot list the input")?;
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
    let Some((key_class, value_class, first)) = classes else {
        bail!("--input-format sequencefile, but the input holds no file");
    };
    for (what, option, found, settings) in [
        (
            "key",
            "Key",
            &key_class,
            [
                "mapreduce.map.output.key.class",
                "mapreduce.job.output.key.class",
            ],
        ),
        (
            "value",
            "Value",
            &value_class,
            [
                "mapreduce.map.output.value.class",
                "mapreduce.job.output.value.class",
            ],
        ),
    ] {
        if let Some((setting, declared)) = declared_class(&common.define, settings) {
            if declared != found.as_str() {
                // Only the job output setting is the one Hadoop's sort example fills in.
                let origin = if setting.starts_with("mapreduce.job.") {
                    format!(
                        "; Hadoop's sort example sets it from -out{option}, BytesWritable \
                         unless given"
                    )
                } else {
                    String::new()
                };
                bail!(
                    "{first} holds {found} {what}s, but the job's map output {what}s are \
                     {declared} (-D {setting}{origin}): Hadoop fails such a job (\"Type \
                     mismatch in {what} from map: expected {declared}, received {found}\"); \
                     give the input's class"
                );
            }
        }
    }
    Ok(JobSpec::SortSequenceFile {
        reducers,
        key_class,
        value_class,
        compression: compression::sequence_file(&common.define)?,
    })
}

/// The class a job's settings give its map output keys or values (`settings`: the map output
/// setting, then the job output setting it defaults to, as in Hadoop), with the setting that
/// named it; the last of repeated settings wins.
fn declared_class<'a>(
    define: &'a [(String, String)],
    settings: [&'static str; 2],
) -> Option<(&'static str, &'a str)> {
    settings.into_iter().find_map(|setting| {
        define
            .iter()
            .rev()
            .find(|(key, _)| key == setting)
            .map(|(_, class)| (setting, class.trim()))
    })
}
