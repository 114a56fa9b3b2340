//! Inverted index: for every word, the files that contain it.

use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;

use crate::tokenize;
use sluice_api::{
    Combine, Emit, ExecError, Job, MapInput, Mapper, Reducer, Stage, TaskContext, Values,
};

struct IndexMapper {
    path: Vec<u8>,
}

impl Mapper for IndexMapper {
    fn map(&mut self, _offset: u64, line: &[u8], out: &mut dyn Emit) -> Result<(), ExecError> {
        for word in tokenize(line) {
            out.emit(word, &self.path)?;
        }
        Ok(())
    }
}

/// Emits each distinct value of a key once (combiner): a map task reads one file, so its values
/// for a word are all the same path.
struct DistinctCombiner {
    seen: Vec<Vec<u8>>,
}

impl Reducer for DistinctCombiner {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        self.seen.clear();
        while let Some(v) = values.next_value()? {
            if !self.seen.iter().any(|s| s == v) {
                self.seen.push(v.to_vec());
                out.emit(key, v)?;
            }
        }
        Ok(())
    }
}

/// Joins the sorted, distinct paths of a word with commas.
struct PostingsReducer {
    paths: Vec<Vec<u8>>,
    line: Vec<u8>,
}

impl Reducer for PostingsReducer {
    fn reduce(
        &mut self,
        key: &[u8],
        values: &mut Values<'_>,
        out: &mut dyn Emit,
    ) -> Result<(), ExecError> {
        self.paths.clear();
        while let Some(v) = values.next_value()? {
            self.paths.push(v.to_vec());
        }
        self.paths.sort_unstable();
        self.paths.dedup();
        self.line.clear();
        for (i, path) in self.paths.iter().enumerate() {
            if i > 0 {
                self.line.push(b',');
            }
            self.line.extend_from_slice(path);
        }
        out.emit(key, &self.line)
    }
}

/// Maps every word (split as in [`crate::wordcount`]) to the input files containing it.
///
/// Output: `word\tpath1,path2,...` lines sorted by word; the paths are sorted by bytes, each
/// once, spelled as discovered from the `--input` arguments (`docs/` gives `docs/a.txt`).
pub fn inverted_index(reducers: usize) -> Job {
    let distinct = Combine::Reducer(Arc::new(|_: &TaskContext| {
        Box::new(DistinctCombiner { seen: Vec::new() }) as Box<dyn Reducer>
    }));
    Job::new("invertedindex", |input: &MapInput| IndexMapper {
        // A local file's path exactly as its bytes, any other as its URI.
        path: match input.location.as_local_path() {
            Some(path) => path.as_os_str().as_bytes().to_vec(),
            None => input.location.to_string().into_bytes(),
        },
    })
    .with_stage(
        Stage::new(reducers, |_| PostingsReducer {
            paths: Vec::new(),
            line: Vec::new(),
        })
        .with_combine(distinct)
        // A word's postings depend on its own paths; the buffers are cleared for each word.
        .with_independent_keys(),
    )
}
