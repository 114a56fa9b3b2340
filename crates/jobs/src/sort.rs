//! Sort: the lines of the input ordered by their key.

use super::PassThrough;
use sluice_api::{Emit, ExecError, Job, Mapper, OutputFormat, Stage};

struct SortMapper {
    /// The current line's rest after its key, and the newline.
    rest: Vec<u8>,
}

impl Mapper for SortMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        let key_end = memchr::memchr(b'\t', line).unwrap_or(line.len());
        let (key, rest) = line.split_at(key_end);
        // The value is what follows the key (the tab and the value, or nothing) and the line's
        // end, so that key and value written one after the other are the line: the key is not
        // carried twice through the sort.
        self.rest.clear();
        self.rest.extend_from_slice(rest);
        self.rest.push(b'\n');
        out.emit(key, &self.rest)
    }
}

/// Sorts `key\tvalue` lines by key (the bytes before the first tab; a line without a tab is all
/// key), comparing unsigned bytes.
///
/// Output: the input lines, unchanged, sorted by key; lines with equal keys keep their input
/// order (files in input order, then by position). With several reducers each part file is sorted
/// and keys are spread by Hadoop's hash partitioner (as in Hadoop's `Sort` example).
pub fn sort(reducers: usize) -> Job {
    Job::new("sort", |_| SortMapper { rest: Vec::new() })
        // Records pass through one by one: nothing is kept from one key to the next.
        .with_stage(Stage::new(reducers, |_| PassThrough).with_independent_keys())
        // Key, then the rest of the line with its newline.
        .with_output(OutputFormat::Raw)
}
