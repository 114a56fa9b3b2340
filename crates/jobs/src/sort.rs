//! Sort: the lines of the input ordered by their key.

use super::PassThrough;
use sluice_api::{Emit, ExecError, Job, Mapper, OutputFormat, Stage};

struct SortMapper;

impl Mapper for SortMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let key_end = memchr::memchr(b'\t', line).unwrap_or(line.len());
        out.emit(&line[..key_end], line)
    }
}

/// Sorts `key\tvalue` lines by key (the bytes before the first tab; a line without a tab is all
/// key), comparing unsigned bytes.
///
/// Output: the input lines, unchanged, sorted by key; lines with equal keys keep their input
/// order (files in path order, then by position). With several reducers each part file is sorted
/// and keys are spread by Hadoop's hash partitioner (as in Hadoop's `Sort` example).
pub fn sort(reducers: usize) -> Job {
    Job::new("sort", |_| SortMapper)
        // Records pass through one by one: nothing is kept from one key to the next.
        .with_stage(Stage::new(reducers, |_| PassThrough).with_independent_keys())
        .with_output(OutputFormat::ValueOnly)
}
