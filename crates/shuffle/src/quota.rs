//! The budget's share for runs held in memory between stages.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sluice_spill::{MemoryPool, MemoryReservation};

/// The budget's share for runs kept in memory between stages.
#[derive(Debug)]
pub struct MemRunQuota {
    pool: MemoryPool,
    cap: usize,
    held: AtomicUsize,
}

impl MemRunQuota {
    /// A share of `pool` of at most `cap` bytes.
    pub fn new(pool: MemoryPool, cap: usize) -> Arc<MemRunQuota> {
        Arc::new(MemRunQuota {
            pool,
            cap,
            held: AtomicUsize::new(0),
        })
    }

    /// Reserves `bytes` for an in-memory run if both the quota and the pool allow.
    pub fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<QuotaReservation> {
        let before = self.held.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) <= self.cap {
            if let Some(memory) = self.pool.try_reserve(bytes) {
                return Some(QuotaReservation {
                    memory,
                    quota: Arc::clone(self),
                });
            }
        }
        self.held.fetch_sub(bytes, Ordering::Relaxed);
        None
    }
}

/// Bytes of the pool held by an in-memory run, also counted against the [`MemRunQuota`].
#[derive(Debug)]
pub struct QuotaReservation {
    memory: MemoryReservation,
    quota: Arc<MemRunQuota>,
}

impl QuotaReservation {
    /// Bytes held.
    pub fn size(&self) -> usize {
        self.memory.size()
    }

    /// Grows by `bytes`: within the quota and the pool if they allow, else beyond them (a
    /// *forced* reservation, counted by the pool and reported), for a run that must hold
    /// more than was reserved for it before it was built.
    pub fn grow(&mut self, bytes: usize) {
        let before = self.quota.held.fetch_add(bytes, Ordering::Relaxed);
        if before.saturating_add(bytes) <= self.quota.cap && self.memory.try_grow(bytes) {
            return;
        }
        self.memory.grow_forced(bytes);
    }

    /// Gives `bytes` back to the pool and the quota.
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.memory.size());
        self.memory.shrink(bytes);
        self.quota.held.fetch_sub(bytes, Ordering::Relaxed);
    }
}

impl Drop for QuotaReservation {
    fn drop(&mut self) {
        self.quota
            .held
            .fetch_sub(self.memory.size(), Ordering::Relaxed);
    }
}
