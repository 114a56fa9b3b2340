//! Where a task's output goes: a collector of the next stage's input, or a part file.

use sluice_api::{CountSink, CounterValues, Emit, ExecError, JobStatus, TaskContext};
use sluice_mapside::PartitioningCollector;
use sluice_shuffle::RunCatalog;

use crate::part_file::TextOutput;

/// Where a task's output goes.
pub(crate) enum TaskSink<'a> {
    Collect(PartitioningCollector<'a>),
    Text(TextOutput<'a>),
}

impl Emit for TaskSink<'_> {
    fn emit(&mut self, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        match self {
            TaskSink::Collect(c) => c.emit(key, value),
            TaskSink::Text(t) => t.emit(key, value),
        }
    }

    fn counted(&mut self) -> Option<&mut dyn CountSink> {
        match self {
            TaskSink::Collect(c) => c.counted(),
            TaskSink::Text(_) => None,
        }
    }
}

impl TaskSink<'_> {
    /// Finishes the output of task `task` (its attempt `attempt`): hands runs to `store`, or
    /// flushes the part file and counts what it holds.
    pub(crate) fn finish(
        self,
        task: usize,
        store: Option<&RunCatalog>,
        status: &JobStatus,
        attempt: &TaskContext,
    ) -> Result<(), ExecError> {
        match (self, store) {
            (TaskSink::Collect(c), Some(store)) => store.add(task, c.into_inner().finish()?),
            (TaskSink::Text(t), _) => {
                let (records, bytes) = t.finish()?;
                let written = CounterValues {
                    output_records: records,
                    output_bytes: bytes,
                    ..CounterValues::default()
                };
                status.count(attempt, &written);
            }
            (TaskSink::Collect(_), None) => {
                return Err(ExecError::Config(
                    "collector without a shuffle store".into(),
                ))
            }
        }
        Ok(())
    }
}

/// How often (in records) a task publishes progress and checks for cancellation.
pub(crate) const CHECK_EVERY: u64 = 4096;
