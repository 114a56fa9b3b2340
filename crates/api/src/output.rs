//! How a job's part files are formatted and named.

/// How emitted pairs become lines of the part files.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// `key \t value \n` — Hadoop's `TextOutputFormat`.
    #[default]
    KeyValue,
    /// `key SEPARATOR value \n` — `TextOutputFormat` with
    /// `mapreduce.output.textoutputformat.separator` set.
    KeyValueWith(Vec<u8>),
    /// `value \n` — the key is only used for sorting and grouping.
    ValueOnly,
    /// `key value`, nothing between or after: records of a fixed-length format (Hadoop's
    /// `TeraOutputFormat`).
    Raw,
}

/// How part files are named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartNames {
    /// `part-r-NNNNN` from reducers, `part-m-NNNNN` from map-only jobs: what Hadoop's
    /// MapReduce API (and its example jobs) write.
    #[default]
    Typed,
    /// `part-NNNNN` from either: what Hadoop's older API, which Hadoop Streaming uses, writes.
    Plain,
}

impl PartNames {
    /// The file name of task `task`'s output.
    pub fn name(self, is_map: bool, task: usize) -> String {
        match (self, is_map) {
            (PartNames::Typed, true) => format!("part-m-{task:05}"),
            (PartNames::Typed, false) => format!("part-r-{task:05}"),
            (PartNames::Plain, _) => format!("part-{task:05}"),
        }
    }
}
