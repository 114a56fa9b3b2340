//! The budget's share for runs held in memory between stages.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use sluice_spill::{MemoryPool, MemoryReservation};

/// Something holding runs in memory that could live elsewhere, asked to let some go before
/// a run that must be in memory to be cheap is sent to disk instead.
///
/// A cluster worker keeps each map task's output for owners that may have to pull it; once
/// pushed, that copy is read only if something fails, so it moves to disk before the
/// partitions the worker reduces itself do.
pub trait Reclaim: Send + Sync {
    /// Frees what it can of about `bytes` of the quota (by moving runs to disk); returns the
    /// bytes it expects to have freed. Called with no lock of the quota held.
    fn reclaim(&self, bytes: usize) -> usize;
}

/// Reclaims one reservation may ask for before it gives up.
const RECLAIM_ROUNDS: usize = 8;

thread_local! {
    /// Whether this thread is inside a reclaim (which must not wait for itself).
    static RECLAIMING: Cell<bool> = const { Cell::new(false) };
}

/// The budget's share for runs kept in memory between stages.
pub struct MemRunQuota {
    pool: MemoryPool,
    cap: usize,
    held: AtomicUsize,
    /// Asked to free memory when a reservation does not fit.
    reclaimer: OnceLock<Weak<dyn Reclaim>>,
    /// Held while a reclaim runs: one at a time.
    reclaiming: Mutex<()>,
}

impl std::fmt::Debug for MemRunQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemRunQuota")
            .field("cap", &self.cap)
            .field("held", &self.held)
            .field("reclaimer", &self.reclaimer.get().is_some())
            .finish_non_exhaustive()
    }
}

impl MemRunQuota {
    /// A share of `pool` of at most `cap` bytes.
    pub fn new(pool: MemoryPool, cap: usize) -> Arc<MemRunQuota> {
        Arc::new(MemRunQuota {
            pool,
            cap,
            held: AtomicUsize::new(0),
            reclaimer: OnceLock::new(),
            reclaiming: Mutex::new(()),
        })
    }

    /// Asks `reclaimer` to free memory whenever a reservation does not fit, before the
    /// caller is told to go to disk. Only the first reclaimer set is kept.
    pub fn set_reclaimer(&self, reclaimer: Weak<dyn Reclaim>) {
        let _ = self.reclaimer.set(reclaimer);
    }

    /// Bytes reserved from the quota now.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Reserves `bytes` for an in-memory run if both the quota and the pool allow, after
    /// asking the reclaimer (if any) to make room when they do not. Reclaims run one at a
    /// time: a thread that finds one under way waits for it, then tries again.
    pub fn try_reserve(self: &Arc<Self>, bytes: usize) -> Option<QuotaReservation> {
        if let Some(reservation) = self.reserve(bytes) {
            return Some(reservation);
        }
        // A reservation larger than the whole quota never fits: nothing to free for it. A
        // reclaimer's own reservations (none today) are not reclaimed for.
        if bytes > self.cap || RECLAIMING.get() {
            return None;
        }
        let reclaimer = self.reclaimer.get().and_then(Weak::upgrade)?;
        let _one_at_a_time = self.reclaiming.lock().unwrap_or_else(|p| p.into_inner());
        // Threads reserving without a reclaim may take the room a reclaim made: reclaim
        // again while that frees something, a few times at most.
        for _ in 0..RECLAIM_ROUNDS {
            // The first time, the reclaim this thread waited for may have made room.
            if let Some(reservation) = self.reserve(bytes) {
                return Some(reservation);
            }
            let short = self
                .held()
                .saturating_add(bytes)
                .saturating_sub(self.cap)
                .max(bytes.saturating_sub(self.pool.available()));
            RECLAIMING.set(true);
            let freed = reclaimer.reclaim(short.max(1));
            RECLAIMING.set(false);
            if freed == 0 {
                return None;
            }
        }
        self.reserve(bytes)
    }

    fn reserve(self: &Arc<Self>, bytes: usize) -> Option<QuotaReservation> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Holds reservations it lets go of, oldest first, when asked to reclaim.
    #[derive(Default)]
    struct Holder {
        held: Mutex<Vec<QuotaReservation>>,
        asked: AtomicUsize,
    }

    impl Reclaim for Holder {
        fn reclaim(&self, bytes: usize) -> usize {
            self.asked.fetch_add(1, Ordering::Relaxed);
            let mut held = self.held.lock().expect("lock");
            let mut freed = 0;
            while freed < bytes && !held.is_empty() {
                freed += held.remove(0).size();
            }
            freed
        }
    }

    fn quota_with(cap: usize) -> (Arc<MemRunQuota>, Arc<Holder>) {
        let quota = MemRunQuota::new(MemoryPool::new(cap), cap);
        let holder = Arc::new(Holder::default());
        let weak: Weak<dyn Reclaim> = Arc::downgrade(&holder) as Weak<dyn Reclaim>;
        quota.set_reclaimer(weak);
        (quota, holder)
    }

    #[test]
    fn a_reservation_that_does_not_fit_has_the_reclaimer_make_room_first() {
        let (quota, holder) = quota_with(1000);
        for _ in 0..4 {
            let r = quota.try_reserve(200).expect("room");
            holder.held.lock().expect("lock").push(r);
        }
        assert_eq!(quota.held(), 800);
        let r = quota.try_reserve(500).expect("room made by the reclaimer");
        assert_eq!(holder.asked.load(Ordering::Relaxed), 1);
        // 300 were missing: the two oldest went, and no more.
        assert_eq!(holder.held.lock().expect("lock").len(), 2);
        assert_eq!(quota.held(), 900);
        drop(r);
        assert_eq!(quota.held(), 400);
    }

    #[test]
    fn nothing_to_reclaim_or_too_large_a_reservation_is_refused() {
        let (quota, holder) = quota_with(1000);
        let kept = quota.try_reserve(900).expect("room");
        assert!(quota.try_reserve(200).is_none(), "the holder had nothing");
        assert_eq!(holder.asked.load(Ordering::Relaxed), 1);
        assert!(quota.try_reserve(1001).is_none());
        assert_eq!(
            holder.asked.load(Ordering::Relaxed),
            1,
            "asked for the impossible"
        );
        assert_eq!(quota.held(), 900);
        drop(kept);
        // A reclaimer gone (its job ended) is not asked.
        drop(holder);
        let full = quota.try_reserve(1000).expect("room");
        assert!(quota.try_reserve(1).is_none());
        drop(full);
        assert_eq!(quota.held(), 0);
    }

    /// Threads reserve at once, each giving every reservation to the reclaimer as soon as it
    /// has it: at most one per thread is not reclaimable at any time, so that every
    /// reservation fits after a reclaim, including while another thread's reclaim runs.
    #[test]
    fn threads_reserving_at_once_all_get_room_when_it_can_be_reclaimed() {
        const THREADS: usize = 8;
        const EACH: usize = 100;
        let (quota, holder) = quota_with(THREADS * EACH + EACH);
        let refused = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..THREADS {
                scope.spawn(|| {
                    for _ in 0..2_000 {
                        match quota.try_reserve(EACH) {
                            Some(r) => holder.held.lock().expect("lock").push(r),
                            None => {
                                refused.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(refused.load(Ordering::Relaxed), 0);
        let held: usize = holder
            .held
            .lock()
            .expect("lock")
            .iter()
            .map(|r| r.size())
            .sum();
        assert_eq!(quota.held(), held);
        assert!(held <= quota.cap, "{held}");
        assert_eq!(quota.pool.forced_bytes(), 0);
        assert!(holder.asked.load(Ordering::Relaxed) > 0);
    }
}
