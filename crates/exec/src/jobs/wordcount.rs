//! Word count, as Hadoop's `WordCount` example.

use std::sync::Arc;

use crate::jobs::sum_counts;
use crate::{
    encode_count, Combine, Emit, ExecError, HashPartitioner, Job, KeyOrder, MapInput, Mapper,
    OutputFormat, Reducer, Stage, TaskContext, Values,
};

/// Whether `b` separates words. These are the delimiters of Java's `StringTokenizer` default:
/// space, tab, newline, carriage return and form feed. Nothing else separates words (not
/// punctuation, not other whitespace such as vertical tab or non-ASCII spaces).
const fn is_delimiter(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c)
}

/// Splits a line into words the way Hadoop's `WordCount` does: maximal runs of bytes that are
/// not delimiters (see the module docs). Bytes are not decoded: a word is any byte string.
pub fn tokenize(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&b| is_delimiter(b)).filter(|w| !w.is_empty())
}

struct WordCountMapper;

impl Mapper for WordCountMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let one = encode_count(1);
        for word in tokenize(line) {
            out.emit(word, &one)?;
        }
        Ok(())
    }
}

struct SumReducer {
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
        self.text.extend_from_slice(total.to_string().as_bytes());
        out.emit(key, &self.text)
    }
}

/// Counts the occurrences of every word of the input.
///
/// Output: `word\tcount` lines sorted by word bytes, in `part-r-NNNNN` files, the word's
/// partition chosen by Hadoop's hash partitioner.
pub fn wordcount(reducers: usize) -> Job {
    Job::new(
        "wordcount",
        Arc::new(|_: &MapInput| Box::new(WordCountMapper) as Box<dyn Mapper>),
        vec![Stage {
            reducer: Arc::new(|_: &TaskContext| {
                Box::new(SumReducer { text: Vec::new() }) as Box<dyn Reducer>
            }),
            combine: Combine::SumCounts,
            partitioner: Arc::new(HashPartitioner),
            partitions: reducers,
            order: KeyOrder::Bytes,
        }],
        OutputFormat::KeyValue,
    )
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
