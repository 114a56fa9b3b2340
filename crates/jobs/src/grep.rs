//! Grep, as Hadoop's `Grep` example: count every match of a regular expression, then list the
//! matches by decreasing count.

use regex::bytes::Regex;

use crate::sum_counts;
use sluice_api::{Combine, Emit, ExecError, Job, Mapper, Reducer, Stage, Values, Writable};

struct GrepMapper {
    regex: Regex,
    group: usize,
}

impl Mapper for GrepMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        if self.group == 0 {
            for m in self.regex.find_iter(line) {
                out.emit_count(m.as_bytes(), 1)?;
            }
        } else {
            for caps in self.regex.captures_iter(line) {
                // A group that did not take part in the match yields nothing, as in Java.
                if let Some(m) = caps.get(self.group) {
                    out.emit_count(m.as_bytes(), 1)?;
                }
            }
        }
        Ok(())
    }
}

/// Stage 1: sums the counts of a match, and re-keys it so that byte order is
/// (count descending, match ascending): key = `!count` as 8 big-endian bytes, then the match.
struct CountReducer {
    key: Vec<u8>,
}

impl Reducer for CountReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let total = sum_counts(values)?;
        self.key.clear();
        self.key.extend_from_slice(&(!total).to_be_bytes());
        self.key.extend_from_slice(key);
        out.emit(&self.key, &[])
    }
}

/// Stage 2: decodes the re-keyed records into `count \t match`.
struct ByCountReducer {
    count: Vec<u8>,
}

impl Reducer for ByCountReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        let Some((count, matched)) = key.split_first_chunk::<8>() else {
            return Err(ExecError::user("grep: malformed intermediate key"));
        };
        self.count.clear();
        self.count
            .extend_from_slice((!u64::from_be_bytes(*count)).to_string().as_bytes());
        while values.next_value()?.is_some() {
            out.emit(&self.count, matched)?;
        }
        Ok(())
    }
}

/// Counts every match of `regex` (or of its capture group `group`) in every line.
///
/// Output: one file `part-r-00000` of `count\tmatch` lines, by decreasing count, ties by match
/// bytes. `reducers` sets the parallelism of the counting stage only (as Hadoop's Grep, whose
/// sorting job has one reducer). Lines are matched as bytes; a match cannot span lines.
pub fn grep(regex: Regex, group: usize, reducers: usize) -> Job {
    Job::new("grep", move |_| GrepMapper {
        regex: regex.clone(),
        group,
    })
    .with_stage(
        Stage::new(reducers, |_| CountReducer { key: Vec::new() }).with_combine(Combine::SumCounts),
    )
    // Stage 1 feeds stage 2 and stays whole; stage 2 writes each (count, match) key's line
    // from that key alone, so its single partition may be split.
    .with_stage(Stage::new(1, |_| ByCountReducer { count: Vec::new() }).with_independent_keys())
    // A match counts the same whichever file it is in.
    .with_small_files_combined()
    // Hadoop's Grep: its counting job's RegexMapper emits Text matches, LongWritable ones.
    .with_map_output_types(Writable::Text, Writable::Long)
}
