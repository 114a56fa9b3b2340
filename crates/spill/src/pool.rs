//! The shared memory budget.
//!
//! The pool is only a counter: it does not allocate. Callers reserve before they allocate and
//! release (by dropping or shrinking the reservation) after they free, so `used()` is an upper
//! bound of the bytes the job holds in its large buffers.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A budget of bytes shared by all tasks of a job. Cheap to clone: clones share the budget.
#[derive(Clone)]
pub struct MemoryPool {
    inner: Arc<PoolState>,
}

struct PoolState {
    budget: usize,
    used: AtomicUsize,
    peak: AtomicUsize,
    /// Bytes handed out beyond the budget by `reserve_forced` (summed over the job).
    forced: AtomicUsize,
}

impl MemoryPool {
    /// A pool of `budget` bytes.
    pub fn new(budget: usize) -> MemoryPool {
        MemoryPool {
            inner: Arc::new(PoolState {
                budget,
                used: AtomicUsize::new(0),
                peak: AtomicUsize::new(0),
                forced: AtomicUsize::new(0),
            }),
        }
    }

    /// The budget in bytes.
    pub fn budget(&self) -> usize {
        self.inner.budget
    }

    /// Bytes reserved right now.
    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// Bytes not reserved right now (0 when over budget after a forced reservation).
    pub fn available(&self) -> usize {
        self.budget().saturating_sub(self.used())
    }

    /// The most bytes ever reserved at once.
    pub fn peak(&self) -> usize {
        self.inner.peak.load(Ordering::Relaxed)
    }

    /// Bytes ever reserved beyond the budget by [`MemoryPool::reserve_forced`].
    pub fn forced_bytes(&self) -> usize {
        self.inner.forced.load(Ordering::Relaxed)
    }

    /// A reservation of zero bytes, to be grown later.
    pub fn empty_reservation(&self) -> MemoryReservation {
        MemoryReservation {
            pool: self.clone(),
            size: 0,
        }
    }

    /// Reserves `bytes` if the budget allows, atomically with respect to other reservers.
    pub fn try_reserve(&self, bytes: usize) -> Option<MemoryReservation> {
        self.try_acquire(bytes).then(|| MemoryReservation {
            pool: self.clone(),
            size: bytes,
        })
    }

    /// Reserves `bytes` even beyond the budget. Used only where refusing would make the job fail
    /// although nothing else can be freed (a single record larger than the whole budget); the
    /// excess is counted in [`MemoryPool::forced_bytes`] and reported to the user.
    pub fn reserve_forced(&self, bytes: usize) -> MemoryReservation {
        self.acquire_forced(bytes);
        MemoryReservation {
            pool: self.clone(),
            size: bytes,
        }
    }

    fn try_acquire(&self, bytes: usize) -> bool {
        let state = &self.inner;
        let mut used = state.used.load(Ordering::Relaxed);
        loop {
            let Some(new_used) = used.checked_add(bytes).filter(|&n| n <= state.budget) else {
                return false;
            };
            // Relaxed is enough: the counter guards no other memory, it only has to be exact.
            match state.used.compare_exchange_weak(
                used,
                new_used,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    state.peak.fetch_max(new_used, Ordering::Relaxed);
                    return true;
                }
                Err(actual) => used = actual,
            }
        }
    }

    fn acquire_forced(&self, bytes: usize) {
        let state = &self.inner;
        let before = state.used.fetch_add(bytes, Ordering::Relaxed);
        let after = before.saturating_add(bytes);
        state.peak.fetch_max(after, Ordering::Relaxed);
        let excess = after.saturating_sub(state.budget.max(before));
        if excess > 0 {
            state.forced.fetch_add(excess, Ordering::Relaxed);
        }
    }

    fn release(&self, bytes: usize) {
        let before = self.inner.used.fetch_sub(bytes, Ordering::Relaxed);
        debug_assert!(before >= bytes, "released more than reserved");
    }
}

impl fmt::Debug for MemoryPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryPool")
            .field("budget", &self.budget())
            .field("used", &self.used())
            .field("peak", &self.peak())
            .finish()
    }
}

/// The memory of a reader's or writer's reused buffers beyond what they usually hold, counted
/// in a [`MemoryPool`] as it comes and goes: a huge record (a 100 MB line) grows them far past a
/// block for as long as it is read or written, and their owner cannot refuse it.
///
/// The bytes up to `baseline` are the caller's to reserve (a merge reserves each reader's usual
/// buffers); [`BufferAccount::update`] holds a reservation of the rest, from the budget if it
/// has room, else beyond it (counted as forced, and reported as for any record larger than the
/// budget).
#[derive(Debug)]
pub struct BufferAccount {
    reservation: MemoryReservation,
    baseline: usize,
}

impl BufferAccount {
    /// An account of buffers that usually hold up to `baseline` bytes, drawing on `pool`.
    pub fn new(pool: &MemoryPool, baseline: usize) -> BufferAccount {
        BufferAccount {
            reservation: pool.empty_reservation(),
            baseline,
        }
    }

    /// Counts buffers now holding (or about to hold) `held` bytes: the reservation becomes
    /// what they hold beyond the baseline.
    pub fn update(&mut self, held: usize) {
        let beyond = held.saturating_sub(self.baseline);
        let size = self.reservation.size();
        if beyond < size {
            self.reservation.shrink(size - beyond);
        } else if beyond > size && !self.reservation.try_grow(beyond - size) {
            self.reservation.grow_forced(beyond - size);
        }
    }

    /// Bytes counted beyond the baseline right now.
    pub fn counted(&self) -> usize {
        self.reservation.size()
    }
}

impl sluice_format::BufferWatch for BufferAccount {
    fn holding(&mut self, bytes: usize) {
        self.update(bytes);
    }
}

/// Bytes taken from a [`MemoryPool`]; they return to the pool when the reservation is dropped.
#[derive(Debug)]
pub struct MemoryReservation {
    pool: MemoryPool,
    size: usize,
}

impl MemoryReservation {
    /// Bytes held.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The pool this reservation draws from.
    pub fn pool(&self) -> &MemoryPool {
        &self.pool
    }

    /// Grows by `bytes` if the budget allows; `false` (and no change) otherwise.
    pub fn try_grow(&mut self, bytes: usize) -> bool {
        if self.pool.try_acquire(bytes) {
            self.size += bytes;
            true
        } else {
            false
        }
    }

    /// Grows by `bytes` even beyond the budget (see [`MemoryPool::reserve_forced`]).
    pub fn grow_forced(&mut self, bytes: usize) {
        self.pool.acquire_forced(bytes);
        self.size += bytes;
    }

    /// Gives `bytes` back to the pool (at most what is held).
    pub fn shrink(&mut self, bytes: usize) {
        let bytes = bytes.min(self.size);
        self.pool.release(bytes);
        self.size -= bytes;
    }

    /// Resizes to exactly `bytes`, growing only if the budget allows. Returns whether the
    /// reservation now holds `bytes`.
    pub fn try_resize(&mut self, bytes: usize) -> bool {
        if bytes <= self.size {
            self.shrink(self.size - bytes);
            true
        } else {
            self.try_grow(bytes - self.size)
        }
    }

    /// Gives everything back; the reservation stays usable with size 0.
    pub fn free(&mut self) {
        self.shrink(self.size);
    }

    /// Moves `bytes` (at most what is held) into a new reservation on the same pool.
    pub fn split(&mut self, bytes: usize) -> MemoryReservation {
        let bytes = bytes.min(self.size);
        self.size -= bytes;
        MemoryReservation {
            pool: self.pool.clone(),
            size: bytes,
        }
    }

    /// Takes over another reservation's bytes (both must be of the same pool).
    pub fn merge(&mut self, mut other: MemoryReservation) {
        debug_assert!(Arc::ptr_eq(&self.pool.inner, &other.pool.inner));
        self.size += other.size;
        other.size = 0;
    }
}

impl Drop for MemoryReservation {
    fn drop(&mut self) {
        self.pool.release(self.size);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reservations_respect_budget_and_return_on_drop() {
        let pool = MemoryPool::new(100);
        let a = pool.try_reserve(60).unwrap();
        assert!(pool.try_reserve(41).is_none());
        let mut b = pool.try_reserve(40).unwrap();
        assert_eq!(pool.used(), 100);
        assert!(!b.try_grow(1));
        drop(a);
        assert_eq!(pool.used(), 40);
        assert!(b.try_grow(60));
        assert_eq!(pool.available(), 0);
        let c = b.split(30);
        assert_eq!((b.size(), c.size()), (70, 30));
        drop(b);
        drop(c);
        assert_eq!(pool.used(), 0);
        assert_eq!(pool.peak(), 100);
    }

    #[test]
    fn forced_reservation_is_counted_as_excess() {
        let pool = MemoryPool::new(10);
        let _a = pool.try_reserve(8).unwrap();
        let f = pool.reserve_forced(5);
        assert_eq!(pool.used(), 13);
        assert_eq!(pool.forced_bytes(), 3);
        assert!(pool.try_reserve(1).is_none());
        drop(f);
        assert_eq!(pool.used(), 8);
    }

    #[test]
    fn a_buffer_account_counts_what_is_beyond_its_baseline() {
        let pool = MemoryPool::new(100);
        let mut account = BufferAccount::new(&pool, 10);
        account.update(10);
        assert_eq!((account.counted(), pool.used()), (0, 0));
        account.update(60);
        assert_eq!(
            (account.counted(), pool.used(), pool.forced_bytes()),
            (50, 50, 0)
        );
        // Beyond the budget: forced, not refused.
        account.update(150);
        assert_eq!(
            (account.counted(), pool.used(), pool.forced_bytes()),
            (140, 140, 40)
        );
        account.update(20);
        assert_eq!((account.counted(), pool.used()), (10, 10));
        account.update(0);
        assert_eq!(pool.used(), 0);
        account.update(30);
        drop(account);
        assert_eq!(pool.used(), 0);
    }

    /// Many threads reserve, grow, shrink and drop concurrently; the budget must never be
    /// exceeded and everything must come back.
    #[test]
    fn hammer_from_many_threads() {
        let pool = MemoryPool::new(1000);
        let over = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            for t in 0..8usize {
                let pool = pool.clone();
                let over = &over;
                s.spawn(move || {
                    let mut held = Vec::new();
                    let mut x = t as u64 + 1;
                    for _ in 0..20_000 {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let n = (x % 97) as usize;
                        match x % 4 {
                            0 | 1 => {
                                if let Some(r) = pool.try_reserve(n) {
                                    held.push(r);
                                }
                            }
                            2 => {
                                if let Some(r) = held.last_mut() {
                                    r.try_grow(n);
                                }
                            }
                            _ => {
                                held.pop();
                            }
                        }
                        if pool.used() > pool.budget() {
                            over.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert!(!over.load(std::sync::atomic::Ordering::Relaxed));
        assert_eq!(pool.used(), 0);
        assert!(pool.peak() <= 1000);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Reserve(usize),
        Grow(usize, usize),
        Shrink(usize, usize),
        Drop(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0usize..64).prop_map(Op::Reserve),
            (0usize..8, 0usize..64).prop_map(|(i, n)| Op::Grow(i, n)),
            (0usize..8, 0usize..64).prop_map(|(i, n)| Op::Shrink(i, n)),
            (0usize..8).prop_map(Op::Drop),
        ]
    }

    proptest! {
        /// The pool behaves like a plain counter model: used = sum of live reservations <= budget.
        #[test]
        fn pool_matches_counter_model(ops in proptest::collection::vec(op(), 0..200)) {
            let budget = 150;
            let pool = MemoryPool::new(budget);
            let mut live: Vec<(MemoryReservation, usize)> = Vec::new();
            for op in ops {
                match op {
                    Op::Reserve(n) => {
                        let model_used: usize = live.iter().map(|(_, s)| s).sum();
                        let r = pool.try_reserve(n);
                        prop_assert_eq!(r.is_some(), model_used + n <= budget);
                        if let Some(r) = r { live.push((r, n)); }
                    }
                    Op::Grow(i, n) => if let Some(slot) = live.get_mut(i % 8) {
                        let model_used: usize = pool.used();
                        let ok = slot.0.try_grow(n);
                        prop_assert_eq!(ok, model_used + n <= budget);
                        if ok { slot.1 += n; }
                    },
                    Op::Shrink(i, n) => if let Some(slot) = live.get_mut(i % 8) {
                        slot.0.shrink(n);
                        slot.1 -= n.min(slot.1);
                    },
                    Op::Drop(i) => if i < live.len() { live.remove(i); },
                }
                let model_used: usize = live.iter().map(|(_, s)| s).sum();
                prop_assert_eq!(pool.used(), model_used);
                for (r, s) in &live { prop_assert_eq!(r.size(), *s); }
            }
        }
    }
}
