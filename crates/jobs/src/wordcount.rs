//! Word count, as Hadoop's `WordCount` example.

use sluice_hadoop::words::{words, Words};

use crate::seqtext::TEXT_CLASS;
use crate::sum_counts;
use sluice_api::{
    Combine, Emit, ExecError, Job, Mapper, OutputFormat, Reducer, SequenceOutput, Serialized,
    Stage, Values, Writable,
};
use sluice_io::seqfile::{CompressionKind, SeqCodec};

/// The class of WordCount's output values in a SequenceFile (its `IntSumReducer`'s).
pub const INT_CLASS: &str = "org.apache.hadoop.io.IntWritable";

/// Splits a line into words the way Hadoop's `WordCount` does: maximal runs of bytes other
/// than space, tab, newline, carriage return and form feed (Java's `StringTokenizer`; see
/// [`sluice_hadoop::words`]). Bytes are not decoded: a word is any byte string.
pub fn tokenize(line: &[u8]) -> Words<'_> {
    words(line)
}

/// Words of a line handed to the collector in one call, at most.
const SPAN_BATCH: usize = 4096;

struct WordCountMapper {
    /// The current line's words, handed to the collector in one call.
    spans: Vec<(usize, usize)>,
}

impl Mapper for WordCountMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        self.spans.clear();
        let mut words = tokenize(line);
        while let Some(span) = words.next_span() {
            self.spans.push(span);
            if self.spans.len() == SPAN_BATCH {
                // A long line's words go in batches: memory stays bounded (a 100 MB line has
                // 25 million words, 400 MB of spans).
                out.emit_counts(line, &self.spans, 1)?;
                self.spans.clear();
            }
        }
        out.emit_counts(line, &self.spans, 1)
    }
}

/// How the reducer writes a word's count.
#[derive(Clone, Copy)]
enum CountAs {
    /// Decimal digits, for text part files.
    Decimal,
    /// A serialised `IntWritable` (4 bytes, big-endian), for SequenceFiles. A count beyond
    /// `i32::MAX` wraps as the Java `int` sum of Hadoop's `IntSumReducer` does.
    IntWritable,
}

struct SumReducer {
    count_as: CountAs,
    text: Vec<u8>,
}

impl Reducer for SumReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let total = sum_counts(values)?;
        self.text.clear();
        match self.count_as {
            CountAs::Decimal => self.text.extend_from_slice(total.to_string().as_bytes()),
            // Java's int arithmetic: the low 32 bits of the sum, big-endian.
            CountAs::IntWritable => self.text.extend_from_slice(&total.to_be_bytes()[4..]),
        }
        out.emit(key, &self.text)
    }
}

/// Counts the occurrences of every word of the input.
///
/// Output: `word\tcount` lines sorted by word bytes, in `part-r-NNNNN` files, the word's
/// partition chosen by Hadoop's hash partitioner.
pub fn wordcount(reducers: usize) -> Job {
    Job::new("wordcount", |_| WordCountMapper { spans: Vec::new() })
        .with_stage(
            sum_stage(reducers, CountAs::Decimal)
                // A key's line depends on its counts alone.
                .with_independent_keys(),
        )
        // A word counts the same whichever file it is in.
        .with_small_files_combined()
        // Hadoop's WordCount: Text words, IntWritable counts.
        .with_map_output_types(Writable::Text, Writable::Int)
}

/// [`wordcount`] writing SequenceFiles, as Hadoop's WordCount does given
/// `SequenceFileOutputFormat`: `Text` words and `IntWritable` counts, in key order, compressed
/// as `compression` and `codec` say.
pub fn wordcount_to_sequence_files(
    reducers: usize,
    compression: CompressionKind,
    codec: SeqCodec,
) -> Job {
    // Not `with_independent_keys`: a SequenceFile's sync entries depend on where each record
    // lands in its file, so a partition is written by one writer from start to end.
    Job::new("wordcount", |_| WordCountMapper { spans: Vec::new() })
        .with_stage(sum_stage(reducers, CountAs::IntWritable))
        .with_map_output_types(Writable::Text, Writable::Int)
        .with_output(OutputFormat::SequenceFile(SequenceOutput {
            key_class: TEXT_CLASS.to_string(),
            value_class: INT_CLASS.to_string(),
            key: Serialized::Text,
            value: Serialized::Raw,
            compression,
            codec,
        }))
        .with_small_files_combined()
}

/// Word count's reduce stage: counts summed by the combiner and the reducer.
fn sum_stage(reducers: usize, count_as: CountAs) -> Stage {
    Stage::new(reducers, move |_| SumReducer {
        count_as,
        text: Vec::new(),
    })
    .with_combine(Combine::SumCounts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenizer_splits_like_string_tokenizer() {
        let words: Vec<&[u8]> = tokenize(b"  a\tbb\x0cc\rd\ne  \xff\xfe,x\x0by  ").collect();
        assert_eq!(
            words,
            vec![&b"a"[..], b"bb", b"c", b"d", b"e", b"\xff\xfe,x\x0by"]
        );
        assert_eq!(tokenize(b"").count(), 0);
        assert_eq!(tokenize(b" \t ").count(), 0);
    }
}
