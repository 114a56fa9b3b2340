//! The built-in jobs, each the native twin of a Hadoop example.
//!
//! A client of the engine: the jobs are made with `sluice-api`'s builders and run by any
//! driver (`sluice_exec::run_job` on one machine). TeraGen and TeraValidate use the local
//! driver's task pool and its committed output (`sluice_exec::JobOutput`), on any store.
//!
//! | job | map | combine | reduce | output |
//! |---|---|---|---|---|
//! | [`wordcount`] | words of each line, count 1 | sum (hash table) | sum | `word\tcount` |
//! | [`wordcount_to_sequence_files`] | the same | sum | sum | SequenceFiles of `Text` / `IntWritable` |
//! | [`grep`] | every regex match, count 1 | sum | sum, then re-sort by count | `count\tmatch` |
//! | [`sort`] | key = line up to the first tab, value = the rest and the newline | — | identity | key and value: the lines, sorted by key |
//! | [`sort_sequence_files`] | SequenceFile records; key by its class's comparator | — | identity | SequenceFiles, sorted (Hadoop's `sort` example) |
//! | [`inverted_index`] | words, file path | distinct | sorted distinct paths | `word\tpath,path` |
//! | [`terasort`] | 100-byte rows; sampled total-order partitions | — | identity | the rows, sorted |
//!
//! [`reading_text_values`] makes any of the line jobs read SequenceFiles instead, each record's
//! `Text` value taken as a line (WordCount and Grep given Hadoop's `SequenceFileInputFormat`).
//!
//! The iterative jobs [`pagerank`], [`connected_components`] and [`kmeans`] run a chain of
//! such jobs, one per iteration, through the same driver (see their module).
//!
//! [`teragen`] and [`teravalidate`] (the sort benchmark's generator and checker, Hadoop's file
//! formats) are not MapReduce jobs and run on their own.
//!
//! All keys are ordered as unsigned bytes, like Hadoop's `Text`.

mod grep;
mod index;
mod iterative;
mod seqsort;
mod seqtext;
mod sort;
mod tera;
mod terasort;
mod wordcount;

pub use grep::{grep, grep_lines, GrepLines};
pub use index::inverted_index;
pub use iterative::{
    connected_components, kmeans, pagerank, rmat_edges, GraphShape, IterationStep, IterativeConfig,
    IterativeReport, KmeansSettings, PageRankSettings, PointsShape, PointsWriter, Progress,
    RmatEdges, DAMPING,
};
pub use seqsort::sort_sequence_files;
pub use seqtext::{reading_text_values, TEXT_CLASS};
pub use sort::sort;
pub use tera::{
    teragen, teragen_range, teravalidate, TeraGenReport, TeraValidateReport, MAX_MISORDERS_LISTED,
};
pub use terasort::{
    sample_terasort, sample_terasort_in, terasort, terasort_job, RowChecksums, TeraSample,
    TeraSort, DEFAULT_SAMPLE_SIZE, SPILL_CODEC as TERASORT_SPILL_CODEC,
};
pub use wordcount::{tokenize, wordcount, wordcount_to_sequence_files, INT_CLASS};

use sluice_api::{decode_count, Emit, ExecError, Reducer, SortedInput, Values};

/// The identity reducer of the sorting jobs: every record of the merged input, unchanged and in
/// order. It reads the input as one stream instead of group by group, since nothing here needs
/// the groups (grouping would copy every new key once more).
pub(crate) struct PassThrough;

impl Reducer for PassThrough {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        while let Some(value) = values.next_value()? {
            out.emit(key, value)?;
        }
        Ok(())
    }

    fn run(&mut self, input: &mut dyn SortedInput, out: &mut dyn Emit) -> Result<(), ExecError> {
        while input.advance()? {
            out.emit(input.key(), input.value())?;
        }
        Ok(())
    }
}

/// Sums the counts of one key (values written by [`sluice_api::encode_count`]): the body of every
/// reducer that adds up counts.
///
/// # Errors
/// A corrupt run, or a value that is not an encoded count.
pub fn sum_counts(values: &mut Values<'_>) -> Result<u64, ExecError> {
    let mut total = 0u64;
    while let Some(v) = values.next_value()? {
        total = total.wrapping_add(decode_count(v)?);
    }
    Ok(total)
}
