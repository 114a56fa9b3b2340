//! The text jobs over SequenceFiles: Hadoop's WordCount and Grep given
//! `SequenceFileInputFormat` (HiBench's word count reads RandomTextWriter's output so, and
//! writes `SequenceFileOutputFormat`), and sluice's inverted index likewise.
//!
//! Those mappers take a `Text` value and ignore the key; over SequenceFiles the framework hands
//! them each record's value where `TextInputFormat` hands them a line. [`reading_text_values`]
//! does that for any line job: the record's value, decoded as a `Text`, is the mapper's line.

use std::sync::Arc;

use sluice_api::{Emit, ExecError, InputFormat, Job, MapInput, Mapper};
use sluice_hadoop::writable::WritableReader;
use sluice_io::seqfile::split_pair;

/// The class of the values the text jobs read: their mappers take a `Text` value (Hadoop's
/// fail with a `ClassCastException` on any other).
pub const TEXT_CLASS: &str = "org.apache.hadoop.io.Text";

/// `job`, reading SequenceFiles instead of lines: each record's `Text` value reaches the
/// mapper as a line would, its offset the record's position in the file; keys are ignored, as
/// WordCount's and Grep's mappers ignore theirs. A file whose values are of another class
/// fails its map task, naming the file and the class. Files are not combined into shared
/// splits (each names its own classes).
pub fn reading_text_values(mut job: Job) -> Job {
    let inner = Arc::clone(&job.mapper);
    job.mapper = Arc::new(move |input: &MapInput| {
        Box::new(ValueAsLine {
            inner: inner(input),
            classes: check_value_class(input),
        }) as Box<dyn Mapper>
    });
    job.input = InputFormat::SequenceFile;
    job.small_files_combined = false;
    job
}

/// Whether the split's file holds `Text` values; the error names the file otherwise.
fn check_value_class(input: &MapInput) -> Result<(), String> {
    match &input.record_classes {
        Some((_, value)) if value == TEXT_CLASS => Ok(()),
        Some((_, value)) => Err(format!(
            "{} holds values of class {value}, but the job reads {TEXT_CLASS} values (as \
             Hadoop's WordCount and Grep mappers do)",
            input.location
        )),
        None => Err(format!("{} is not read as a SequenceFile", input.location)),
    }
}

/// A line job's mapper fed the `Text` value of each SequenceFile record.
struct ValueAsLine {
    inner: Box<dyn Mapper>,
    /// Whether this task's file holds `Text` values (checked at the first record, so that an
    /// empty split of any file passes, as in Hadoop).
    classes: Result<(), String>,
}

impl Mapper for ValueAsLine {
    fn map(&mut self, offset: u64, record: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if let Err(message) = &self.classes {
            return Err(ExecError::User {
                message: message.clone(),
            });
        }
        let (_, value) = split_pair(record).ok_or_else(|| ExecError::User {
            message: "a SequenceFile record without its key length".into(),
        })?;
        let mut reader = WritableReader::new(value);
        let text = reader
            .read_text()
            .and_then(|text| reader.finish("value").map(|()| text))
            .map_err(|e| ExecError::User {
                message: format!("a value that is not a serialised Text: {e}"),
            })?;
        self.inner.map(offset, text, out)
    }

    fn finish(&mut self, out: &mut dyn Emit) -> Result<(), ExecError> {
        self.inner.finish(out)
    }
}
