//! What the local driver's tasks share: the shuffle's resources, and each task's memory.

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
}

impl Shared {
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
            Collector::new(&self.runs, spec, limit, self.table_block),
            Arc::clone(&stage.partitioner),
        )
    }
}
