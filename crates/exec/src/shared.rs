//! What the local driver's tasks share: the shuffle's resources, and each task's memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sluice_api::{Combine, Stage, TaskContext};
use sluice_mapside::{Collector, CollectorSpec, MapCombine, PartitioningCollector};
use sluice_shuffle::Resources;

/// What the driver's tasks share: the shuffle's resources, and the memory each running task may
/// hold.
pub(crate) struct Shared {
    pub(crate) runs: Resources,
    /// Bytes each running task may hold.
    pub(crate) task_share: usize,
    /// Allocation unit of counting collectors' tables.
    pub(crate) table_block: usize,
    /// Tasks that run at once in this process.
    pub(crate) threads: usize,
    /// From how many bytes a last stage's partition is split into key ranges.
    pub(crate) reduce_split_bytes: Option<u64>,
    /// Reduce tasks of large partitions (of at least `reduce_split_bytes`) running now: a
    /// task splits its partition only into as many ranges as there are threads the others
    /// leave. Tasks of small partitions are not counted: they end soon.
    pub(crate) running_reduces: AtomicUsize,
}

/// Counts a reduce task of a large partition as running for as long as it lives.
pub(crate) struct Running<'a>(&'a AtomicUsize);

impl Running<'_> {
    /// Reduce tasks of large partitions running besides this one.
    pub(crate) fn others(&self) -> usize {
        self.0.load(Ordering::Relaxed).saturating_sub(1)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Shared {
    /// Counts a reduce task of a large partition as running until the result is dropped.
    pub(crate) fn reduce_started(&self) -> Running<'_> {
        self.running_reduces.fetch_add(1, Ordering::Relaxed);
        Running(&self.running_reduces)
    }

    /// A collector for `stage`'s input, allowed `limit` bytes, for the task of `ctx`.
    pub(crate) fn collector<'a>(
        &'a self,
        stage: &'a Stage,
        limit: usize,
        ctx: &TaskContext,
    ) -> PartitioningCollector<'a> {
        let combine = match &stage.combine {
            Combine::None => MapCombine::None,
            Combine::SumCounts => MapCombine::SumCounts(Arc::clone(&stage.partitioner)),
            Combine::Reducer(factory) => MapCombine::Reducer(factory(ctx)),
        };
        let spec = CollectorSpec {
            partitions: stage.partitions,
            order: &stage.order,
            combine,
        };
        PartitioningCollector::new(
            Collector::new(&self.runs, spec, limit, self.table_block).counting_for(*ctx),
            Arc::clone(&stage.partitioner),
        )
    }
}
