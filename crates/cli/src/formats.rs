//! What the built-in jobs read and write: text lines or Hadoop SequenceFiles, as
//! `--input-format` / `--output-format` say, or as Hadoop's job keys say
//! (`-D mapreduce.job.inputformat.class=...SequenceFileInputFormat`, as HiBench runs WordCount
//! on RandomTextWriter's output), or, for the input, as the files' first bytes say.

use std::io::Read;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use sluice_io::{Compression, Storage, StoredInput};
use sluice_spec::SequenceFileOutput;

use crate::{compression, stores, CommonArgs};

/// What a job reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InputFormatArg {
    /// SequenceFiles if `-D mapreduce.job.inputformat.class` names SequenceFileInputFormat or
    /// the first non-empty input file starts with `SEQ` and a version byte, else text.
    Auto,
    /// Text lines.
    Text,
    /// Hadoop SequenceFiles.
    Sequencefile,
}

/// `--input-format` of the line jobs (wordcount, grep, invertedindex).
#[derive(Debug, Args)]
pub(crate) struct TextInputArgs {
    /// What the input is: text lines; or SequenceFiles of Text values, each value read as a
    /// line (as Hadoop's mappers get them from SequenceFileInputFormat). auto: SequenceFiles if
    /// -D mapreduce.job.inputformat.class names SequenceFileInputFormat or the first non-empty,
    /// uncompressed input file starts with `SEQ` and a version byte.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) input_format: InputFormatArg,
}

/// What a job writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormatArg {
    /// Text, unless `-D mapreduce.job.outputformat.class` names SequenceFileOutputFormat.
    Auto,
    /// `key<TAB>value` lines.
    Text,
    /// Hadoop SequenceFiles.
    Sequencefile,
}

/// The input format's class (new API, then the old one).
const INPUT_FORMAT_CLASS: [&str; 2] = [
    "mapreduce.job.inputformat.class",
    "mapred.input.format.class",
];
/// The output format's class (new API, then the old one).
const OUTPUT_FORMAT_CLASS: [&str; 2] = [
    "mapreduce.job.outputformat.class",
    "mapred.output.format.class",
];

/// Whether the format class `-D` names under one of `keys` is the SequenceFile format
/// (`sequence_file`, by its simple name) or the text one (`text`); `None` if no key is given.
/// Any other class is refused, naming the key and the two classes.
fn format_class(
    defines: &[(String, String)],
    keys: [&str; 2],
    text: &str,
    sequence_file: &str,
) -> Result<Option<bool>> {
    let Some((key, class)) = defines
        .iter()
        .rev()
        .find(|(key, _)| keys.contains(&key.as_str()))
    else {
        return Ok(None);
    };
    let class = class.trim();
    // Both APIs' classes (org.apache.hadoop.mapred.X and ...mapreduce.lib.input.X) and the
    // short name streaming users write.
    let simple = class.rsplit('.').next().unwrap_or(class);
    if simple == text {
        Ok(Some(false))
    } else if simple == sequence_file {
        Ok(Some(true))
    } else {
        bail!("-D {key}={class}: sluice's built-in jobs take {text} or {sequence_file}")
    }
}

/// Whether the job reads SequenceFiles: `format` if it is not `auto`; else what `-D`'s input
/// format class says; else whether the first non-empty uncompressed input file starts with
/// SequenceFile's magic, `SEQ` and a version byte.
pub(crate) fn reads_sequence_files(format: InputFormatArg, common: &CommonArgs) -> Result<bool> {
    match format {
        InputFormatArg::Text => return Ok(false),
        InputFormatArg::Sequencefile => return Ok(true),
        InputFormatArg::Auto => {}
    }
    if let Some(sequence_files) = format_class(
        &common.define,
        INPUT_FORMAT_CLASS,
        "TextInputFormat",
        "SequenceFileInputFormat",
    )? {
        return Ok(sequence_files);
    }
    let config = stores::store_config(&common.define)?;
    let inputs = stores::resolve_all("--input", &common.inputs(), &config)?;
    let stores = stores::stores(&config, "input-format");
    let files = sluice_io::discover(&stores, &inputs).context("cannot list the input")?;
    starts_as_sequence_file(&stores, &files)
}

/// How the job writes SequenceFiles (`None`: it writes text): `format` if it is not `auto`,
/// else what `-D`'s output format class says; compressed as `-D`'s output compression keys
/// say for a SequenceFile.
pub(crate) fn sequence_file_output(
    format: OutputFormatArg,
    defines: &[(String, String)],
) -> Result<Option<SequenceFileOutput>> {
    let sequence_files = match format {
        OutputFormatArg::Text => false,
        OutputFormatArg::Sequencefile => true,
        OutputFormatArg::Auto => format_class(
            defines,
            OUTPUT_FORMAT_CLASS,
            "TextOutputFormat",
            "SequenceFileOutputFormat",
        )?
        .unwrap_or(false),
    };
    Ok(if sequence_files {
        Some(SequenceFileOutput {
            compression: compression::sequence_file(defines)?,
        })
    } else {
        None
    })
}

/// Settings of Hadoop's that change what a job writes and that the built-in jobs do not do:
/// each key (and its old name), the values that change nothing (compared without case), and
/// what it does in Hadoop.
const UNHONOURED: &[(&str, &str, &[&str], &str)] = &[
    (
        "mapreduce.output.textoutputformat.separator",
        "mapred.textoutputformat.separator",
        &["\t"],
        "another separator between key and value",
    ),
    (
        "textinputformat.record.delimiter",
        "textinputformat.record.delimiter",
        &[],
        "records cut at another delimiter than line ends",
    ),
    (
        "mapreduce.output.basename",
        "mapreduce.output.basename",
        &["part"],
        "part files of another name",
    ),
    (
        "mapreduce.fileoutputcommitter.marksuccessfuljobs",
        "mapreduce.fileoutputcommitter.marksuccessfuljobs",
        &["true"],
        "no _SUCCESS file",
    ),
    (
        "mapreduce.job.partitioner.class",
        "mapred.partitioner.class",
        &[
            "org.apache.hadoop.mapreduce.lib.partition.HashPartitioner",
            "org.apache.hadoop.mapred.lib.HashPartitioner",
        ],
        "keys spread over the part files by another partitioner",
    ),
    (
        "mapreduce.job.output.key.comparator.class",
        "mapred.output.key.comparator.class",
        &[],
        "keys sorted in another order",
    ),
    (
        "mapreduce.job.output.group.comparator.class",
        "mapred.output.value.groupfn.class",
        &[],
        "keys grouped for the reducer in another way",
    ),
];

/// Refuses the `-D` settings the built-in jobs would otherwise ignore while Hadoop's job would
/// write another output for them (a wrapper's `-D` meant for Hadoop's wordcount must not make
/// a different output without a word). `sluice streaming` honours or refuses them itself.
pub(crate) fn refuse_unhonoured(defines: &[(String, String)]) -> Result<()> {
    for (key, old, harmless, what) in UNHONOURED {
        let given = defines
            .iter()
            .rev()
            .find(|(k, v)| (k == key || k == old) && !v.is_empty());
        if let Some((k, v)) = given {
            let changes_nothing = |h: &&str| v == h || h.eq_ignore_ascii_case(v.trim());
            if !harmless.iter().any(changes_nothing) {
                bail!(
                    "-D {k}={v}: Hadoop's job would write {what}; sluice's built-in jobs do \
                     not (leave it out, or run the job with sluice streaming)"
                );
            }
        }
    }
    Ok(())
}

/// Refuses `-D`'s output format class unless it is text: for the jobs that write text only.
pub(crate) fn text_output_only(job: &str, defines: &[(String, String)]) -> Result<()> {
    if sequence_file_output(OutputFormatArg::Auto, defines)?.is_some() {
        bail!(
            "-D {}=...SequenceFileOutputFormat: {job} writes text part files only (SequenceFile \
             output is for wordcount, and for sort given SequenceFiles)",
            OUTPUT_FORMAT_CLASS[0]
        );
    }
    Ok(())
}

/// Whether the first non-empty uncompressed file starts as a SequenceFile (`SEQ` and a
/// version byte: `sluice_io::seqfile::starts_as_sequence_file`).
pub(crate) fn starts_as_sequence_file(
    storage: &dyn Storage,
    files: &[StoredInput],
) -> Result<bool> {
    let Some(first) = files
        .iter()
        .find(|f| f.status.len > 0 && f.compression == Compression::None)
    else {
        return Ok(false);
    };
    const LEN: u64 = sluice_io::seqfile::SNIFF_LEN as u64;
    let mut magic = Vec::with_capacity(sluice_io::seqfile::SNIFF_LEN);
    storage
        .open_range(first.location(), 0, LEN)
        .and_then(|input| {
            input
                .take(LEN)
                .read_to_end(&mut magic)
                .map_err(|source| sluice_io::IoError::Read {
                    path: first.location().error_path(),
                    source,
                })
        })
        .with_context(|| format!("cannot read {}", first.location()))?;
    Ok(sluice_io::seqfile::starts_as_sequence_file(&magic))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(key: &str, value: &str) -> Vec<(String, String)> {
        vec![(key.to_string(), value.to_string())]
    }

    /// Settings that would make Hadoop's job write another output are refused, naming the
    /// key; their default values, and settings that change nothing, are not.
    #[test]
    fn settings_the_built_in_jobs_would_ignore_are_refused() {
        for (key, value) in [
            ("mapreduce.output.textoutputformat.separator", ","),
            ("mapred.textoutputformat.separator", ";"),
            ("textinputformat.record.delimiter", "-"),
            ("mapreduce.output.basename", "result"),
            ("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false"),
            (
                "mapreduce.job.partitioner.class",
                "org.apache.hadoop.mapred.lib.KeyFieldBasedPartitioner",
            ),
            (
                "mapreduce.job.output.key.comparator.class",
                "org.apache.hadoop.mapred.lib.KeyFieldBasedComparator",
            ),
        ] {
            let e = refuse_unhonoured(&d(key, value)).unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
        for (key, value) in [
            ("mapreduce.output.textoutputformat.separator", "\t"),
            ("mapreduce.output.basename", "part"),
            ("mapreduce.fileoutputcommitter.marksuccessfuljobs", "TRUE"),
            (
                "mapred.partitioner.class",
                "org.apache.hadoop.mapred.lib.HashPartitioner",
            ),
            ("mapreduce.job.reduces", "3"),
            ("mapreduce.output.basename", ""),
        ] {
            assert!(refuse_unhonoured(&d(key, value)).is_ok(), "{key}={value}");
        }
    }

    #[test]
    fn format_classes_of_both_apis_are_understood() {
        let keys = INPUT_FORMAT_CLASS;
        let text = "TextInputFormat";
        let seq = "SequenceFileInputFormat";
        for (key, class, expected) in [
            (
                "mapreduce.job.inputformat.class",
                "org.apache.hadoop.mapreduce.lib.input.SequenceFileInputFormat",
                true,
            ),
            (
                "mapred.input.format.class",
                "org.apache.hadoop.mapred.SequenceFileInputFormat",
                true,
            ),
            (
                "mapreduce.job.inputformat.class",
                " org.apache.hadoop.mapreduce.lib.input.TextInputFormat ",
                false,
            ),
        ] {
            assert_eq!(
                format_class(&d(key, class), keys, text, seq).unwrap(),
                Some(expected),
                "{key}={class}"
            );
        }
        assert_eq!(format_class(&[], keys, text, seq).unwrap(), None);
        let other = format_class(
            &d(
                "mapreduce.job.inputformat.class",
                "org.apache.hadoop.mapreduce.lib.input.KeyValueTextInputFormat",
            ),
            keys,
            text,
            seq,
        )
        .unwrap_err()
        .to_string();
        assert!(other.contains("KeyValueTextInputFormat"), "{other}");
        assert!(other.contains("SequenceFileInputFormat"), "{other}");
    }

    #[test]
    fn the_last_definition_wins_and_flags_win_over_keys() {
        let defines = vec![
            (
                "mapreduce.job.outputformat.class".to_string(),
                "org.apache.hadoop.mapreduce.lib.output.SequenceFileOutputFormat".to_string(),
            ),
            (
                "mapred.output.format.class".to_string(),
                "org.apache.hadoop.mapred.TextOutputFormat".to_string(),
            ),
        ];
        assert_eq!(
            sequence_file_output(OutputFormatArg::Auto, &defines).unwrap(),
            None
        );
        assert_eq!(
            sequence_file_output(OutputFormatArg::Sequencefile, &defines).unwrap(),
            Some(SequenceFileOutput { compression: None })
        );
        assert!(sequence_file_output(OutputFormatArg::Auto, &defines[..1])
            .unwrap()
            .is_some());
        assert!(text_output_only("grep", &defines[..1]).is_err());
        assert!(text_output_only("grep", &defines).is_ok());
    }
}
