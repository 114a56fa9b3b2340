//! `-inputformat org.apache.hadoop.mapred.lib.CombineTextInputFormat`: many small files read by
//! few map tasks.
//!
//! The splits are planned when the job is built, as Hadoop's `CombineFileInputFormat` plans them
//! ([`sluice_io::plan_combined_splits`]), from `mapreduce.input.fileinputformat.split.maxsize`
//! and the per-node and per-rack minimums, and handed to the engine as they are
//! ([`PlannedInput`]). A task reads its ranges one after another, each as `TextInputFormat`
//! reads a split; the mapper is sent the byte offset key too (`offset\tline`: Hadoop's streaming
//! leaves keys out by default only for `TextInputFormat`), and its environment names the first
//! range (`mapreduce_map_input_file`, `_start`, `_length`), as Hadoop's record reader sets them
//! before the program starts.

use sluice_api::PlannedInput;
use sluice_io::{plan_combined_splits, CombineSizes, StoredInput};

use super::conf::JobConf;
use super::StreamingError;

/// The class names that select it. Hadoop's streaming knows no short name for it, and runs
/// only the old API's class.
pub(super) const COMBINE_INPUT: &[&str] = &["org.apache.hadoop.mapred.lib.CombineTextInputFormat"];

/// The new API's class, which Hadoop's streaming job cannot run.
pub(super) const NEW_API_COMBINE_INPUT: &str =
    "org.apache.hadoop.mapreduce.lib.input.CombineTextInputFormat";

/// The largest split, from which a split is closed (0: no maximum).
const MAX_SIZE: &str = "mapreduce.input.fileinputformat.split.maxsize";
/// What a node's leftover chunks need to be a split of their own.
const MIN_PER_NODE: &str = "mapreduce.input.fileinputformat.split.minsize.per.node";
/// What a rack's leftover chunks need to be a split of their own.
const MIN_PER_RACK: &str = "mapreduce.input.fileinputformat.split.minsize.per.rack";

/// The sizes the job's configuration sets, checked as Hadoop checks them.
///
/// # Errors
/// [`StreamingError::Usage`] for a value that is not a whole number; [`StreamingError::Launch`]
/// for sizes Hadoop refuses (a minimum above the maximum, a per-node minimum above the
/// per-rack one).
pub(super) fn sizes(conf: &JobConf) -> Result<CombineSizes, StreamingError> {
    let sizes = CombineSizes {
        max: conf.get_u64(MAX_SIZE, 0)?,
        min_per_node: conf.get_u64(MIN_PER_NODE, 0)?,
        min_per_rack: conf.get_u64(MIN_PER_RACK, 0)?,
    };
    // Hadoop's job fails at submission with its input format's message.
    sizes.check().map_err(StreamingError::Launch)?;
    Ok(sizes)
}

/// Packs `files` into the job's map tasks.
pub(super) fn plan(files: Vec<StoredInput>, sizes: CombineSizes) -> PlannedInput {
    let splits = plan_combined_splits(&files, sizes);
    PlannedInput { files, splits }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_read_under_both_names_and_checked() {
        let mut conf = JobConf::default();
        assert_eq!(sizes(&conf).unwrap(), CombineSizes::default());
        conf.set("mapred.max.split.size", "100");
        conf.set("mapred.min.split.size.per.node", "10");
        conf.set("mapred.min.split.size.per.rack", "20");
        let got = sizes(&conf).unwrap();
        assert_eq!((got.max, got.min_per_node, got.min_per_rack), (100, 10, 20));

        let mut bad = JobConf::default();
        bad.set(MAX_SIZE, "10");
        bad.set(MIN_PER_NODE, "11");
        let err = sizes(&bad).unwrap_err().to_string();
        assert!(err.contains("Minimum split size pernode 11"), "{err}");
        let mut bad = JobConf::default();
        bad.set(MAX_SIZE, "-1");
        assert!(sizes(&bad).unwrap_err().to_string().contains(MAX_SIZE));
    }
}
