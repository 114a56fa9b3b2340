//! What every task of a job shares: the memory budget, the share of it for held runs, the place
//! runs spill to, and record buffers kept for reuse.

use std::sync::{Arc, Mutex};

use sluice_api::{ExecError, JobStatus};
use sluice_sort::RecordBuffer;
use sluice_spill::{MemoryPool, MemoryReservation};

use crate::quota::MemRunQuota;
use crate::run::{spill_table_bytes, ReservedRun, Run, RunSink, RunWriter, SpillTarget};

/// Block size of sort-mode record buffers: small enough that every storage bucket can have a
/// partly filled one, large enough that allocations are rare.
pub const SORT_BLOCK: usize = 64 * 1024;

/// What every task of a job shares. The local driver makes one per job; the cluster's workers
/// and the Hadoop plugin make one per process.
pub struct Resources {
    pool: MemoryPool,
    quota: Arc<MemRunQuota>,
    spills: Box<dyn SpillTarget>,
    write_chunk: usize,
    sort_buckets: usize,
    /// Record buffers of finished tasks, emptied but with their memory and its reservation,
    /// for the next task on any thread: a task then writes into memory that is already
    /// mapped instead of faulting in fresh pages (measured: about 3 GB of page faults in a
    /// 10 GB sort). Emptied at the end of each phase so that the memory returns to the pool.
    spare_buffers: Mutex<Vec<(RecordBuffer, MemoryReservation)>>,
    status: Arc<JobStatus>,
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resources")
            .field("pool", &self.pool)
            .field("quota", &self.quota)
            .field("write_chunk", &self.write_chunk)
            .finish_non_exhaustive()
    }
}

impl Resources {
    /// Resources over `pool`, of which `held_cap` bytes may be held by runs kept in memory;
    /// runs that leave memory go to `spills`. `write_chunk` is the chunk size of file
    /// writers (each holds two); `sort_buckets` the storage buckets of sort-mode record
    /// buffers (see [`RecordBuffer::with_buckets`]).
    pub fn new(
        pool: MemoryPool,
        held_cap: usize,
        spills: Box<dyn SpillTarget>,
        write_chunk: usize,
        sort_buckets: usize,
        status: Arc<JobStatus>,
    ) -> Resources {
        Resources {
            quota: MemRunQuota::new(pool.clone(), held_cap),
            pool,
            spills,
            write_chunk,
            sort_buckets,
            spare_buffers: Mutex::new(Vec::new()),
            status,
        }
    }

    /// The job's memory pool.
    pub fn pool(&self) -> &MemoryPool {
        &self.pool
    }

    /// The share of the pool for runs held in memory.
    pub fn quota(&self) -> &Arc<MemRunQuota> {
        &self.quota
    }

    /// Where runs that leave memory go.
    pub fn spills(&self) -> &dyn SpillTarget {
        &*self.spills
    }

    /// Starts a spill file of `partitions` partitions whose run keeps its partition table
    /// (see [`spill_table_bytes`]) reserved for as long as it lives, beyond the budget if it
    /// must: many reducers times many spills are seen.
    ///
    /// # Errors
    /// The spill file cannot be created.
    pub fn create_spill(&self, partitions: usize) -> Result<Box<dyn RunWriter>, ExecError> {
        let table = self.reserve_or_force(spill_table_bytes(partitions));
        let writer = self.spills().create(partitions)?;
        Ok(Box::new(TableReserved { writer, table }))
    }

    /// Chunk size of file writers (each holds two).
    pub fn write_chunk(&self) -> usize {
        self.write_chunk
    }

    /// The job's status: counters, and whether it was cancelled.
    pub fn status(&self) -> &Arc<JobStatus> {
        &self.status
    }

    /// A record buffer for a collector of `partitions` partitions allowed `limit` bytes: a spare
    /// one (with its reservation) if one fits, else a new, empty one.
    pub fn record_buffer(
        &self,
        partitions: usize,
        limit: usize,
    ) -> (RecordBuffer, MemoryReservation) {
        let mut spares = self.spare_buffers.lock().unwrap_or_else(|p| p.into_inner());
        let fits = spares.iter().rposition(|(buffer, reservation)| {
            buffer.has_layout(SORT_BLOCK, partitions, self.sort_buckets)
                && reservation.size() <= limit
        });
        match fits {
            Some(i) => spares.swap_remove(i),
            None => (
                RecordBuffer::with_buckets(SORT_BLOCK, partitions, self.sort_buckets),
                self.pool.empty_reservation(),
            ),
        }
    }

    /// Keeps an emptied record buffer and its reservation for the next task.
    pub fn offer_record_buffer(&self, buffer: RecordBuffer, reservation: MemoryReservation) {
        if buffer.is_empty() {
            let mut spares = self.spare_buffers.lock().unwrap_or_else(|p| p.into_inner());
            spares.push((buffer, reservation));
        }
    }

    /// Frees the spare record buffers (at the end of a phase, or when memory is short);
    /// returns whether there were any.
    pub fn drop_spare_buffers(&self) -> bool {
        let spares =
            std::mem::take(&mut *self.spare_buffers.lock().unwrap_or_else(|p| p.into_inner()));
        !spares.is_empty()
    }

    /// Reserves `bytes` from the pool, freeing the spare record buffers first if the pool is
    /// short, and beyond the budget (a *forced* reservation, reported) only if that is not
    /// enough.
    pub fn reserve_or_force(&self, bytes: usize) -> MemoryReservation {
        if let Some(reservation) = self.pool.try_reserve(bytes) {
            return reservation;
        }
        if self.drop_spare_buffers() {
            if let Some(reservation) = self.pool.try_reserve(bytes) {
                return reservation;
            }
        }
        self.pool.reserve_forced(bytes)
    }

    /// [`ExecError::Cancelled`] if the job was cancelled.
    ///
    /// # Errors
    /// As said.
    pub fn check_cancelled(&self) -> Result<(), ExecError> {
        if self.status.is_cancelled() {
            Err(ExecError::Cancelled)
        } else {
            Ok(())
        }
    }
}

/// A spill writer whose run holds its partition table's reservation (see
/// [`Resources::create_spill`]).
struct TableReserved {
    writer: Box<dyn RunWriter>,
    table: MemoryReservation,
}

impl RunSink for TableReserved {
    fn write(&mut self, partition: usize, key: &[u8], value: &[u8]) -> Result<(), ExecError> {
        self.writer.write(partition, key, value)
    }
    fn write_encoded(&mut self, partition: usize, encoded: &[u8]) -> Result<u64, ExecError> {
        self.writer.write_encoded(partition, encoded)
    }
}

impl RunWriter for TableReserved {
    fn finish(self: Box<Self>) -> Result<Run, ExecError> {
        let TableReserved { writer, table } = *self;
        Ok(ReservedRun::wrap(writer.finish()?, table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::LocalSpills;
    use sluice_format::Codec;
    use sluice_spill::SpillDir;

    #[test]
    fn a_spill_keeps_its_partition_table_reserved_while_its_run_lives() {
        let parent = tempfile::tempdir().unwrap();
        let pool = MemoryPool::new(1 << 30);
        let spills = LocalSpills::new(
            SpillDir::create_in(parent.path()).unwrap(),
            Codec::None,
            crate::SPILL_BLOCK,
        );
        let res = Resources::new(
            pool.clone(),
            0,
            Box::new(spills),
            64 * 1024,
            1,
            Arc::new(JobStatus::default()),
        );
        let partitions = 100_000;
        let mut writer = res.create_spill(partitions).unwrap();
        assert_eq!(pool.used(), spill_table_bytes(partitions));
        writer.write(7, b"key", b"value").unwrap();
        let run = writer.finish().unwrap();
        assert!(run.has_records(7));
        assert_eq!(pool.used(), spill_table_bytes(partitions));
        drop(run);
        assert_eq!(pool.used(), 0);
    }
}
