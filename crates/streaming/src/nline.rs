//! `-inputformat org.apache.hadoop.mapred.lib.NLineInputFormat`: one map task per N lines of
//! input (`mapreduce.input.lineinputformat.linespermap`, default 1).
//!
//! The splits are planned when the job is built, since the programs are told how many map
//! tasks there are, and handed to the engine as they are ([`PlannedInput`]). A task reads its
//! split like `TextInputFormat` does; unlike with `TextInputFormat` the mapper is sent the
//! byte offset key too (`offset\tline`), as Hadoop's streaming ignores keys by default only
//! for `TextInputFormat`.

use std::num::NonZeroU64;

use sluice_io::{IoError, Storage, StoredInput};

use super::conf::JobConf;
use super::StreamingError;
use sluice_api::PlannedInput;

/// The class names that select it. Hadoop's streaming knows no short name for it.
pub(super) const NLINE_INPUT: &[&str] = &["org.apache.hadoop.mapred.lib.NLineInputFormat"];

/// Lines per map task.
const LINES_PER_MAP: &str = "mapreduce.input.lineinputformat.linespermap";

/// The number of lines per map task, read as Hadoop's `Configuration.getInt` reads it
/// (surrounding blanks ignored, an optional sign, `0x` for hexadecimal, at most 2^31 - 1).
/// The programs then see it as `mapreduce_input_lineinputformat_linespermap`, spelled as
/// given, or `1` (the value Hadoop's defaults give it).
///
/// # Errors
/// [`StreamingError::Usage`] naming the key for anything but a whole number from 1. Hadoop
/// takes 0 and negative numbers as "the whole file in one split"; sluice refuses them.
pub(super) fn lines_per_map(conf: &mut JobConf) -> Result<NonZeroU64, StreamingError> {
    // Either name sets it (the one set last wins, as in Hadoop); messages name the one given.
    let key = conf.given_name(LINES_PER_MAP).to_string();
    let value = conf.get(LINES_PER_MAP).unwrap_or("1").to_string();
    let lines = java_int(&value)
        .and_then(|n| u64::try_from(n).ok())
        .and_then(NonZeroU64::new)
        .ok_or_else(|| {
            StreamingError::Usage(format!(
                "-D {key}={value}: NLineInputFormat needs a whole number of lines per map task, \
                 at least 1"
            ))
        })?;
    conf.set_default(LINES_PER_MAP, value);
    Ok(lines)
}

/// A value as Java's `Configuration.getInt` parses it, or `None` where that throws.
fn java_int(value: &str) -> Option<i32> {
    // Java's `trim`: every character up to and including the space.
    let value = value.trim_matches(|c: char| c <= ' ');
    let (negative, digits) = match value.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, value),
    };
    let hex = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"));
    match hex {
        Some(hex) if negative => i32::from_str_radix(&format!("-{hex}"), 16).ok(),
        Some(hex) => i32::from_str_radix(hex, 16).ok(),
        None => value.parse().ok(),
    }
}

/// Cuts `files` into splits of `lines` lines.
///
/// # Errors
/// [`StreamingError::Usage`] for a compressed input that is not empty (Hadoop counts the line
/// breaks of its compressed bytes, and its job fails: "Cannot seek in GzipCodec compressed
/// stream"); [`StreamingError::Setup`] if a file cannot be read.
pub(super) fn plan(
    storage: &dyn Storage,
    files: Vec<StoredInput>,
    lines: NonZeroU64,
) -> Result<PlannedInput, StreamingError> {
    match sluice_io::plan_line_splits_in(storage, &files, lines) {
        Ok(splits) => Ok(PlannedInput {
            files,
            splits: splits.into_iter().map(sluice_io::MapSplit::File).collect(),
        }),
        Err(IoError::Read { path, source }) => Err(StreamingError::Setup {
            context: format!(
                "cannot read {} to cut it into splits of lines (NLineInputFormat)",
                path.display()
            ),
            source,
        }),
        Err(other) => Err(StreamingError::Usage(format!(
            "-inputformat NLineInputFormat: {other}; Hadoop cuts the compressed bytes and its job \
             fails (\"Cannot seek in ... compressed stream\"): decompress the input first"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD_LINES_PER_MAP: &str = "mapred.line.input.format.linespermap";

    fn lines(settings: &[(&str, &str)]) -> Result<(u64, Option<String>), String> {
        let mut conf = JobConf::new();
        for (key, value) in settings {
            conf.set(key, *value);
        }
        let n = lines_per_map(&mut conf).map_err(|e| e.to_string())?;
        assert!(
            !conf.entries().any(|(k, _)| k == OLD_LINES_PER_MAP),
            "the old name is not exported"
        );
        Ok((n.get(), conf.get(LINES_PER_MAP).map(str::to_string)))
    }

    #[test]
    fn lines_per_map_as_hadoop_reads_it() {
        assert_eq!(lines(&[]), Ok((1, Some("1".into()))));
        assert_eq!(lines(&[(LINES_PER_MAP, "3")]), Ok((3, Some("3".into()))));
        // Values Hadoop 3.4.2 was run with: the programs saw them as given.
        assert_eq!(
            lines(&[(LINES_PER_MAP, " 0x2 ")]),
            Ok((2, Some(" 0x2 ".into())))
        );
        assert_eq!(lines(&[(LINES_PER_MAP, "+4")]), Ok((4, Some("+4".into()))));
        assert_eq!(
            lines(&[(OLD_LINES_PER_MAP, "100")]),
            Ok((100, Some("100".into())))
        );
        assert_eq!(
            lines(&[(OLD_LINES_PER_MAP, "2"), (LINES_PER_MAP, "4")]),
            Ok((4, Some("4".into())))
        );
        assert_eq!(
            lines(&[(LINES_PER_MAP, "4"), (OLD_LINES_PER_MAP, "2")]),
            Ok((2, Some("2".into()))),
            "the name set last wins"
        );
        assert_eq!(
            lines(&[(LINES_PER_MAP, "2147483647")]).map(|r| r.0),
            Ok(i32::MAX as u64)
        );
    }

    #[test]
    fn lines_per_map_must_be_a_whole_number_from_one() {
        for bad in ["0", "-1", "-0x1", "abc", "", "1.5", "2147483648", "0x"] {
            let message = lines(&[(LINES_PER_MAP, bad)]).expect_err(bad);
            assert!(message.contains(LINES_PER_MAP), "{message}");
            assert!(message.contains("at least 1"), "{message}");
        }
        let message = lines(&[(OLD_LINES_PER_MAP, "x")]).expect_err("x");
        assert!(message.contains(OLD_LINES_PER_MAP), "{message}");
    }
}
