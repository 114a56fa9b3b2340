//! One single-producer, single-consumer byte ring in shared memory, and the batched sleep and
//! wake-up rules of `docs/shm-protocol.md` ("Moving bytes", "Sleeping and waking").
//!
//! [`Producer`] and [`Consumer`] each own a private copy of the counter their side writes and
//! the last value they accepted of the other side's counter. With `checked` set (the engine's
//! side), every counter loaded from shared memory is validated before use: a peer that writes
//! nonsense gets a [`ShmError::Violation`], never an access outside the ring.

#[cfg(not(loom))]
use std::ptr::NonNull;
#[cfg(not(loom))]
use std::sync::Arc;
use std::time::Duration;

#[cfg(not(loom))]
use crate::layout::*;
#[cfg(not(loom))]
use crate::region::Region;
use crate::sync::{fence, FutexWord, Ordering};
#[cfg(not(loom))]
use crate::sync::{AtomicU32, AtomicU64};
use crate::ShmError;

/// Longest single sleep on a futex. Waits are bounded so that a dead or stopped peer is noticed
/// (`Sleeper::after_wake`) even if it never wakes us.
const WAIT_TIMEOUT: Duration = Duration::from_millis(100);

/// Waits in a row that may end without the peer having moved any bytes before each further
/// wait first pauses for [`FRUITLESS_PAUSE`]. A healthy peer wakes us only after it moved
/// bytes; one that bumps the wake-up counter in a loop would otherwise keep us spinning.
const FRUITLESS_WAITS: u32 = 64;

/// See [`FRUITLESS_WAITS`].
const FRUITLESS_PAUSE: Duration = Duration::from_millis(1);

/// Pauses after too many waits in a row that brought nothing (see [`FRUITLESS_WAITS`]).
fn pause_if_fruitless(fruitless: &mut u32) {
    *fruitless = fruitless.saturating_add(1);
    if *fruitless > FRUITLESS_WAITS {
        std::thread::sleep(FRUITLESS_PAUSE);
    }
}

/// What the owner of a ring does around a sleep.
pub(crate) trait Sleeper {
    /// Called just before this side sleeps: the flush-before-sleep rule (wake the peers of the
    /// other rings this side owes a wake-up).
    fn before_sleep(&mut self);
    /// Called after every wake-up or timeout (`timed_out`): checks that the peer is still
    /// there and that nobody asked this side to stop. An error ends the wait.
    fn after_wake(&mut self, timed_out: bool) -> Result<(), ShmError>;
}

/// A ring's words and data inside a region.
///
/// The ring is checked once, at construction, to lie inside the mapping; after that its
/// accessors are plain pointer arithmetic, because they run for every record.
///
/// This struct and its accessors are the seam the model checker uses: built with
/// `--cfg loom`, a `Ring` is `model::Ring` instead, whose words are loom's atomics and whose
/// data is loom cells on the heap, and the `Producer` and `Consumer` below run unchanged on it.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct Ring {
    /// Keeps the mapping alive as long as the pointer below is used.
    _memory: Memory,
    /// The control block; the data follows at `R_DATA`.
    control: NonNull<u8>,
    capacity: u64,
}

/// What keeps a ring's memory alive.
#[cfg(not(loom))]
#[derive(Debug)]
enum Memory {
    /// A mapping of the shared region: the only kind outside tests.
    Region(#[allow(dead_code, reason = "held, never read")] Arc<Region>),
    /// A heap block standing in for the region in tests under Miri, which cannot map a
    /// memory file (see `tests::Backing`).
    #[cfg(test)]
    Heap(#[allow(dead_code, reason = "held, never read")] Arc<tests::HeapBlock>),
}

// SAFETY: `control` points into a mapping kept alive by `_memory`; it is only used for atomics
// and raw copies (see `Region`), so the ring can move to and be shared with another thread.
#[cfg(not(loom))]
unsafe impl Send for Ring {}
// SAFETY: as for `Send`.
#[cfg(not(loom))]
unsafe impl Sync for Ring {}

#[cfg(not(loom))]
impl Ring {
    /// The ring `layout` describes; `layout` must come from a checked [`Layout`].
    pub(crate) fn new(region: Arc<Region>, layout: RingLayout) -> Ring {
        // Checks that the whole ring lies inside the mapping (see `Region::check`), and, as
        // the control block is 128-aligned in a page-aligned mapping, that every word of it
        // is aligned.
        let control = region.bytes(layout.offset as usize, (R_DATA + layout.capacity) as usize);
        assert!(layout.offset.is_multiple_of(128) && layout.capacity.is_power_of_two());
        Ring {
            _memory: Memory::Region(region),
            control,
            capacity: layout.capacity,
        }
    }

    /// A ring of `capacity` bytes in a heap block instead of a region (tests under Miri).
    #[cfg(test)]
    fn on_heap(block: Arc<tests::HeapBlock>, capacity: u64) -> Ring {
        assert!(capacity.is_power_of_two() && block.len() >= (R_DATA + capacity) as usize);
        Ring {
            control: block.start(),
            _memory: Memory::Heap(block),
            capacity,
        }
    }

    fn word<T>(&self, field: usize) -> &T {
        // SAFETY: `field` is one of the control block's constant offsets, all below `R_DATA`
        // and aligned for their type; the block lies inside the mapping (checked in `new`),
        // which lives as long as `self`. The word is only ever accessed atomically.
        unsafe { &*self.control.as_ptr().add(field).cast::<T>() }
    }

    pub(crate) fn tail(&self) -> &AtomicU64 {
        self.word(R_TAIL)
    }
    pub(crate) fn closed(&self) -> &AtomicU32 {
        self.word(R_CLOSED)
    }
    pub(crate) fn head(&self) -> &AtomicU64 {
        self.word(R_HEAD)
    }
    pub(crate) fn data_seq(&self) -> &FutexWord {
        self.word(R_DATA_SEQ)
    }
    fn consumer_sleeping(&self) -> &AtomicU32 {
        self.word(R_CONSUMER_SLEEPING)
    }
    pub(crate) fn space_seq(&self) -> &FutexWord {
        self.word(R_SPACE_SEQ)
    }
    fn producer_sleeping(&self) -> &AtomicU32 {
        self.word(R_PRODUCER_SLEEPING)
    }

    /// Where `len` bytes starting at counter `pos` lie in the data: the offset of the first
    /// byte, and how many fit before the end of the data (the rest wraps to offset 0).
    fn split(&self, pos: u64, len: usize) -> (usize, usize) {
        split(self.capacity, pos, len)
    }

    fn data(&self) -> *mut u8 {
        // SAFETY: the data starts `R_DATA` bytes into the ring, inside the mapping (`new`).
        unsafe { self.control.as_ptr().add(R_DATA as usize) }
    }

    /// Copies `src` (at most the capacity) into the data at counter `pos`.
    #[inline]
    fn copy_in(&self, pos: u64, src: &[u8]) {
        let (start, first) = self.split(pos, src.len());
        // SAFETY: `start + first <= capacity` and `src.len() - first <= capacity - first`
        // (`split`), so both pieces lie inside the data, which lies inside the mapping.
        // Private memory and the mapping never overlap. The consumer does not read these bytes
        // until we publish a `tail` that covers them.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), self.data().add(start), first);
            if first < src.len() {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr().add(first),
                    self.data(),
                    src.len() - first,
                );
            }
        }
    }

    /// Copies the data at counter `pos` into `dst` (at most the capacity).
    #[inline]
    fn copy_out(&self, pos: u64, dst: &mut [u8]) {
        let (start, first) = self.split(pos, dst.len());
        // SAFETY: as in `copy_in`, with the roles swapped. The bytes are copied, never
        // referenced: a misbehaving producer that writes them concurrently can only change
        // the values we get, which the framing code then parses like any pipe input.
        unsafe {
            std::ptr::copy_nonoverlapping(self.data().add(start), dst.as_mut_ptr(), first);
            if first < dst.len() {
                std::ptr::copy_nonoverlapping(
                    self.data(),
                    dst.as_mut_ptr().add(first),
                    dst.len() - first,
                );
            }
        }
    }
}

/// Where `len` bytes starting at counter `pos` lie in the data of a ring of `capacity` bytes
/// (see `Ring::split`).
fn split(capacity: u64, pos: u64, len: usize) -> (usize, usize) {
    assert!(len as u64 <= capacity);
    let start = (pos & (capacity - 1)) as usize;
    (start, len.min(capacity as usize - start))
}

#[cfg(loom)]
pub(crate) use model::Ring;

/// The ring as the model checker sees it (a `--cfg loom` build): the same words and the same
/// data, but as loom objects on the heap, because loom can only follow accesses made through
/// its own types. Each data byte is a loom cell, so that loom also reports a read of a byte
/// that is not ordered after its write (a `tail` or `head` published too early).
#[cfg(loom)]
mod model {
    use std::sync::Arc;

    use loom::cell::UnsafeCell;

    use crate::sync::{AtomicU32, AtomicU64, FutexWord};

    /// One ring's memory, shared by the two sides.
    struct Memory {
        tail: AtomicU64,
        closed: AtomicU32,
        head: AtomicU64,
        data_seq: FutexWord,
        consumer_sleeping: AtomicU32,
        space_seq: FutexWord,
        producer_sleeping: AtomicU32,
        data: Box<[UnsafeCell<u8>]>,
    }

    // SAFETY: as in the real ring, both sides access the data, each byte ordered by the
    // protocol's counters; here loom checks every access against that ordering and fails the
    // model on a race, so sharing the cells between the model's threads is what is under test.
    unsafe impl Sync for Memory {}

    /// One side's view of a ring (see the `Ring` of a normal build).
    pub(crate) struct Ring {
        memory: Arc<Memory>,
        pub(super) capacity: u64,
    }

    impl std::fmt::Debug for Ring {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("Ring")
                .field("capacity", &self.capacity)
                .finish_non_exhaustive()
        }
    }

    impl Ring {
        /// A fresh, empty ring of `capacity` bytes (a power of two), inside a loom model.
        pub(crate) fn new(capacity: u64) -> Ring {
            assert!(capacity.is_power_of_two());
            let data = (0..capacity).map(|_| UnsafeCell::new(0)).collect();
            Ring {
                memory: Arc::new(Memory {
                    tail: AtomicU64::new(0),
                    closed: AtomicU32::new(0),
                    head: AtomicU64::new(0),
                    data_seq: FutexWord::new(0),
                    consumer_sleeping: AtomicU32::new(0),
                    space_seq: FutexWord::new(0),
                    producer_sleeping: AtomicU32::new(0),
                    data,
                }),
                capacity,
            }
        }

        /// Another view of the same ring, for the other side.
        pub(crate) fn share(&self) -> Ring {
            Ring {
                memory: Arc::clone(&self.memory),
                capacity: self.capacity,
            }
        }

        pub(crate) fn tail(&self) -> &AtomicU64 {
            &self.memory.tail
        }
        pub(crate) fn closed(&self) -> &AtomicU32 {
            &self.memory.closed
        }
        pub(crate) fn head(&self) -> &AtomicU64 {
            &self.memory.head
        }
        pub(crate) fn data_seq(&self) -> &FutexWord {
            &self.memory.data_seq
        }
        pub(super) fn consumer_sleeping(&self) -> &AtomicU32 {
            &self.memory.consumer_sleeping
        }
        pub(crate) fn space_seq(&self) -> &FutexWord {
            &self.memory.space_seq
        }
        pub(super) fn producer_sleeping(&self) -> &AtomicU32 {
            &self.memory.producer_sleeping
        }

        /// As the normal `Ring::copy_in`, one cell at a time.
        pub(super) fn copy_in(&self, pos: u64, src: &[u8]) {
            let (start, first) = super::split(self.capacity, pos, src.len());
            let places = (start..start + first).chain(0..src.len() - first);
            for (at, &byte) in places.zip(src) {
                // SAFETY: loom checks that no other access to this cell races with this one,
                // and fails the model if one does.
                self.memory.data[at].with_mut(|p| unsafe { *p = byte });
            }
        }

        /// As the normal `Ring::copy_out`, one cell at a time.
        pub(super) fn copy_out(&self, pos: u64, dst: &mut [u8]) {
            let (start, first) = super::split(self.capacity, pos, dst.len());
            let places = (start..start + first).chain(0..dst.len() - first);
            for (at, byte) in places.zip(dst) {
                // SAFETY: as in `copy_in`.
                *byte = self.memory.data[at].with(|p| unsafe { *p });
            }
        }
    }
}

/// Bumps a wake-up counter and wakes whoever sleeps on it.
fn wake(seq: &FutexWord) {
    seq.fetch_add(1, Ordering::SeqCst);
    crate::sync::wake_all(seq);
}

/// Sleeps on `seq` while it still holds `seen`, for at most `timeout`. Returns whether the
/// sleep timed out; every outcome sends the caller back to re-check the ring.
fn sleep(seq: &FutexWord, seen: u32, timeout: Duration) -> bool {
    crate::sync::wait(seq, seen, timeout)
}

/// The writing side of a ring.
#[derive(Debug)]
pub(crate) struct Producer {
    ring: Ring,
    /// Bytes ever written: the authoritative value, whatever shared memory holds.
    tail: u64,
    /// The consumer's `head` as last loaded (and, if `checked`, validated).
    head: u64,
    /// `tail` when the consumer was last considered for a wake-up.
    announced: u64,
    batch: u64,
    checked: bool,
    closed: bool,
    wait_timeout: Duration,
    /// Waits since bytes last moved.
    fruitless: u32,
}

impl Producer {
    /// The producer of a fresh ring. `checked`: validate every `head` the peer publishes.
    pub(crate) fn new(ring: Ring, checked: bool) -> Producer {
        let batch = ring.capacity / 4;
        Producer {
            ring,
            tail: 0,
            head: 0,
            announced: 0,
            batch,
            checked,
            closed: false,
            wait_timeout: WAIT_TIMEOUT,
            fruitless: 0,
        }
    }

    /// Sleeps at most `timeout` at a time (tests: long enough that a lost wake-up shows).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_wait_timeout(mut self, timeout: Duration) -> Producer {
        self.wait_timeout = timeout;
        self
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> u64 {
        self.tail
    }

    /// Space we know is free. Never more than the capacity, whatever an unchecked peer wrote.
    fn free(&self) -> u64 {
        self.ring
            .capacity
            .saturating_sub(self.tail.wrapping_sub(self.head))
    }

    fn load_head(&mut self) -> Result<(), ShmError> {
        let head = self.ring.head().load(Ordering::Acquire);
        if self.checked && (head < self.head || head > self.tail) {
            return Err(ShmError::Violation(format!(
                "the consumer's head moved from {} to {head}, outside 0..={} written",
                self.head, self.tail
            )));
        }
        self.head = head;
        Ok(())
    }

    /// Copies as much of `buf` as fits, first waiting for space if the ring is full.
    /// Returns the number of bytes copied: at least one unless `buf` is empty.
    pub(crate) fn write(
        &mut self,
        buf: &[u8],
        sleeper: &mut dyn Sleeper,
    ) -> Result<usize, ShmError> {
        if buf.is_empty() {
            return Ok(0);
        }
        // The consumer's counter is loaded only when the space we know of is not enough, so
        // that the line it lives on is not pulled over for every record.
        if self.free() < buf.len() as u64 {
            self.load_head()?;
        }
        while self.free() == 0 {
            self.wait_for_space(sleeper)?;
        }
        let n = buf.len().min(self.free() as usize);
        self.fruitless = 0;
        self.ring.copy_in(self.tail, &buf[..n]);
        self.tail += n as u64;
        // Release: the copy above is visible before the counter that covers it.
        self.ring.tail().store(self.tail, Ordering::Release);
        if self.tail - self.announced >= self.batch {
            self.wake_consumer();
        }
        Ok(n)
    }

    /// Writes all of `buf`, waiting for space as often as needed.
    pub(crate) fn write_all(
        &mut self,
        mut buf: &[u8],
        sleeper: &mut dyn Sleeper,
    ) -> Result<(), ShmError> {
        while !buf.is_empty() {
            let n = self.write(buf, sleeper)?;
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Wakes a sleeping consumer if it has not been told about every byte written.
    pub(crate) fn flush(&mut self) {
        if self.tail != self.announced {
            self.wake_consumer();
        }
    }

    fn wake_consumer(&mut self) {
        self.announced = self.tail;
        // Orders the `tail` store before the load of `consumer_sleeping`; the consumer orders
        // its store of `consumer_sleeping` before its re-check of `tail` the same way, so at
        // least one of the two sees the other (no lost wake-up).
        fence(Ordering::SeqCst);
        if self.ring.consumer_sleeping().load(Ordering::SeqCst) != 0 {
            wake(self.ring.data_seq());
        }
    }

    /// Marks the end of the stream and wakes the consumer, whether or not it sleeps.
    pub(crate) fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.announced = self.tail;
        self.ring.closed().store(1, Ordering::Release);
        wake(self.ring.data_seq());
    }

    fn set_awake(&self) {
        self.ring.producer_sleeping().store(0, Ordering::SeqCst);
    }

    fn wait_for_space(&mut self, sleeper: &mut dyn Sleeper) -> Result<(), ShmError> {
        pause_if_fruitless(&mut self.fruitless);
        sleeper.before_sleep();
        // The consumer frees space only for bytes it knows of.
        self.flush();
        self.ring.producer_sleeping().store(1, Ordering::SeqCst);
        // The re-check of `head` below must not move before the store above (the consumer's
        // `wake_producer` has the matching fence).
        fence(Ordering::SeqCst);
        let seen = self.ring.space_seq().load(Ordering::SeqCst);
        let loaded = self.load_head();
        if loaded.is_err() || self.free() > 0 {
            self.set_awake();
            return loaded;
        }
        let timed_out = sleep(self.ring.space_seq(), seen, self.wait_timeout);
        self.set_awake();
        sleeper.after_wake(timed_out)?;
        self.load_head()
    }
}

/// The reading side of a ring.
#[derive(Debug)]
pub(crate) struct Consumer {
    ring: Ring,
    /// Bytes ever consumed: the authoritative value.
    head: u64,
    /// The producer's `tail` as last loaded (and, if `checked`, validated).
    tail: u64,
    /// `head` when the producer was last considered for a wake-up.
    announced: u64,
    batch: u64,
    checked: bool,
    wait_timeout: Duration,
    /// Waits since bytes last moved.
    fruitless: u32,
}

impl Consumer {
    /// The consumer of a fresh ring. `checked`: validate every `tail` the peer publishes.
    pub(crate) fn new(ring: Ring, checked: bool) -> Consumer {
        let batch = ring.capacity / 4;
        Consumer {
            ring,
            head: 0,
            tail: 0,
            announced: 0,
            batch,
            checked,
            wait_timeout: WAIT_TIMEOUT,
            fruitless: 0,
        }
    }

    /// As [`Producer::with_wait_timeout`].
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_wait_timeout(mut self, timeout: Duration) -> Consumer {
        self.wait_timeout = timeout;
        self
    }

    /// Bytes consumed so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.head
    }

    fn load_tail(&mut self) -> Result<(), ShmError> {
        let tail = self.ring.tail().load(Ordering::Acquire);
        if self.checked && (tail < self.tail || tail - self.head > self.ring.capacity) {
            return Err(ShmError::Violation(format!(
                "the producer's tail moved from {} to {tail}, with {} bytes consumed and a capacity of {}",
                self.tail, self.head, self.ring.capacity
            )));
        }
        self.tail = tail;
        Ok(())
    }

    /// Copies available bytes into `buf` without waiting. Returns 0 if none are available.
    pub(crate) fn try_read(&mut self, buf: &mut [u8]) -> Result<usize, ShmError> {
        if self.tail == self.head {
            self.load_tail()?;
        }
        // Never more than the capacity, whatever an unchecked peer wrote.
        let available = self.tail.wrapping_sub(self.head).min(self.ring.capacity);
        let n = buf.len().min(available as usize);
        if n == 0 {
            return Ok(0);
        }
        self.fruitless = 0;
        self.ring.copy_out(self.head, &mut buf[..n]);
        self.head += n as u64;
        // Release: our reads of the data happen before the producer may overwrite it.
        self.ring.head().store(self.head, Ordering::Release);
        if self.head - self.announced >= self.batch {
            self.wake_producer();
        }
        Ok(n)
    }

    /// Copies available bytes into `buf`, waiting for some if the ring is empty. Returns 0 at
    /// the end of the stream (or if `buf` is empty).
    pub(crate) fn read(
        &mut self,
        buf: &mut [u8],
        sleeper: &mut dyn Sleeper,
    ) -> Result<usize, ShmError> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let n = self.try_read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            // `closed` before `tail`: a producer sets `closed` after its last `tail`, so a
            // closed ring that is still empty after this reload is really at its end.
            if self.ring.closed().load(Ordering::Acquire) != 0 {
                self.load_tail()?;
                if self.tail == self.head {
                    return Ok(0);
                }
                continue;
            }
            self.wait_for_data(sleeper)?;
        }
    }

    /// Whether the producer has closed the ring (it may still hold bytes).
    pub(crate) fn is_closed(&self) -> bool {
        self.ring.closed().load(Ordering::Acquire) != 0
    }

    /// Wakes a sleeping producer if it has not been told about all the space freed.
    pub(crate) fn flush(&mut self) {
        if self.head != self.announced {
            self.wake_producer();
        }
    }

    fn wake_producer(&mut self) {
        self.announced = self.head;
        // As in `Producer::wake_consumer`.
        fence(Ordering::SeqCst);
        if self.ring.producer_sleeping().load(Ordering::SeqCst) != 0 {
            wake(self.ring.space_seq());
        }
    }

    fn set_awake(&self) {
        self.ring.consumer_sleeping().store(0, Ordering::SeqCst);
    }

    fn wait_for_data(&mut self, sleeper: &mut dyn Sleeper) -> Result<(), ShmError> {
        pause_if_fruitless(&mut self.fruitless);
        sleeper.before_sleep();
        self.flush();
        self.ring.consumer_sleeping().store(1, Ordering::SeqCst);
        // As in `Producer::wait_for_space`.
        fence(Ordering::SeqCst);
        let seen = self.ring.data_seq().load(Ordering::SeqCst);
        let loaded = self.load_tail();
        let closed = self.ring.closed().load(Ordering::SeqCst) != 0;
        if loaded.is_err() || self.tail > self.head || closed {
            self.set_awake();
            return loaded;
        }
        let timed_out = sleep(self.ring.data_seq(), seen, self.wait_timeout);
        self.set_awake();
        sleeper.after_wake(timed_out)
    }
}

#[cfg(all(test, loom))]
mod loom_tests;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A sleeper for tests where both sides are healthy: with the long timeouts of `pair`, a
    /// sleep that ends by timeout is a lost wake-up, and fails the test at once.
    struct Patient;

    impl Sleeper for Patient {
        fn before_sleep(&mut self) {}
        fn after_wake(&mut self, timed_out: bool) -> Result<(), ShmError> {
            if timed_out {
                return Err(ShmError::Violation("a wake-up was lost".into()));
            }
            Ok(())
        }
    }

    /// Longer than any healthy peer takes to wake us, however busy the machine.
    const LOST_WAKE_UP: Duration = Duration::from_secs(10);

    /// Zeroed, 128-aligned heap memory for one ring: what the tests use instead of a shared
    /// region under Miri, which cannot create or map a memory file.
    #[derive(Debug)]
    pub(super) struct HeapBlock {
        start: NonNull<u8>,
        layout: std::alloc::Layout,
    }

    // SAFETY: as for `Region`: the block is only accessed through atomics and raw copies.
    unsafe impl Send for HeapBlock {}
    // SAFETY: as for `Send`.
    unsafe impl Sync for HeapBlock {}

    impl HeapBlock {
        fn new(len: usize) -> HeapBlock {
            let layout = std::alloc::Layout::from_size_align(len, 128).expect("block layout");
            // SAFETY: `layout` has a non-zero size (a ring is at least its control block).
            let start = unsafe { std::alloc::alloc_zeroed(layout) };
            let start = NonNull::new(start).expect("out of memory");
            HeapBlock { start, layout }
        }

        pub(super) fn start(&self) -> NonNull<u8> {
            self.start
        }

        pub(super) fn len(&self) -> usize {
            self.layout.size()
        }
    }

    impl Drop for HeapBlock {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` with this layout; every ring on it holds an `Arc` of
            // the block, so none is left when it drops.
            unsafe { std::alloc::dealloc(self.start.as_ptr(), self.layout) }
        }
    }

    /// The memory of the ring under test, from which each side gets its own view.
    enum Backing {
        /// A real shared region, each view on its own mapping, as two processes have.
        Region(Arc<Region>, RingLayout),
        /// A heap block (under Miri).
        Heap(Arc<HeapBlock>, u64),
    }

    impl Backing {
        fn new(capacity: u64) -> Backing {
            if cfg!(miri) {
                let block = HeapBlock::new((R_DATA + capacity) as usize);
                return Backing::Heap(Arc::new(block), capacity);
            }
            let layout = Layout::new(Some(capacity), None).expect("layout");
            let region = Region::create(&layout).expect("region");
            Backing::Region(Arc::new(region), layout.input.expect("ring"))
        }

        /// Another view of the ring, on a mapping of its own.
        fn ring(&self) -> Ring {
            match self {
                Backing::Region(region, layout) => Ring::new(Arc::new(region.map_again()), *layout),
                Backing::Heap(block, capacity) => Ring::on_heap(Arc::clone(block), *capacity),
            }
        }
    }

    /// A producer and a consumer of one ring, each on its own mapping of the region (outside
    /// Miri).
    fn pair(capacity: u64, checked: bool) -> (Producer, Consumer, Backing) {
        let backing = Backing::new(capacity);
        let producer = Producer::new(backing.ring(), checked).with_wait_timeout(LOST_WAKE_UP);
        let consumer = Consumer::new(backing.ring(), checked).with_wait_timeout(LOST_WAKE_UP);
        (producer, consumer, backing)
    }

    /// Bytes that tell their own position, so that a misplaced copy shows.
    fn pattern(from: u64, len: usize) -> Vec<u8> {
        (from..from + len as u64)
            .map(|i| (i % 251) as u8 ^ (i >> 8) as u8)
            .collect()
    }

    /// Proptest's defaults, except under Miri: a few cases (each is interpreted, slowly), and
    /// no regression file (Miri's isolation keeps tests off the file system).
    fn proptest_config() -> ProptestConfig {
        if cfg!(miri) {
            ProptestConfig {
                cases: 4,
                failure_persistence: None,
                ..ProptestConfig::default()
            }
        } else {
            ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(proptest_config())]

        /// Any interleaving of writes and reads of any sizes delivers the written bytes in
        /// order: the model is a queue of bytes.
        #[test]
        fn interleaved_writes_and_reads_keep_the_byte_stream(
            ops in prop::collection::vec((any::<bool>(), 0usize..10_000), 1..200),
        ) {
            let (mut producer, mut consumer, _) = pair(4096, true);
            let (mut written, mut read) = (Vec::new(), Vec::new());
            for (is_write, size) in ops {
                if is_write {
                    // In one thread a full ring would wait forever: write what fits, by the
                    // model's count (the producer finds out by itself when to reload `head`).
                    let free = 4096 - (written.len() - read.len());
                    let n = size.min(free);
                    let bytes = pattern(written.len() as u64, n);
                    prop_assert_eq!(producer.write(&bytes, &mut Patient).expect("write"), n);
                    written.extend_from_slice(&bytes);
                } else {
                    let mut buf = vec![0; size];
                    let n = consumer.try_read(&mut buf).expect("read");
                    read.extend_from_slice(&buf[..n]);
                    prop_assert!(read.len() <= written.len());
                }
            }
            producer.close();
            let mut buf = vec![0; 5000];
            loop {
                let n = consumer.read(&mut buf, &mut Patient).expect("read");
                if n == 0 {
                    break;
                }
                read.extend_from_slice(&buf[..n]);
            }
            prop_assert_eq!(read, written);
        }
    }

    /// Two threads, a small ring, random sizes on both sides: every byte arrives in order,
    /// with the sleeping and waking of a full and an empty ring exercised many times.
    #[test]
    fn threads_hammering_a_small_ring_keep_the_byte_stream() {
        // Under Miri, which interprets every step, one small run: enough for a few hundred
        // sleeps and wake-ups in the executions it picks.
        let runs: &[(u64, usize)] = if cfg!(miri) {
            &[(4096, 64 << 10)]
        } else {
            &[(4096, 8 << 20), (65536, 32 << 20)]
        };
        for &(capacity, total) in runs {
            let (mut producer, mut consumer, _) = pair(capacity, true);
            let expected = pattern(0, total);
            std::thread::scope(|scope| {
                let data = &expected;
                scope.spawn(move || {
                    let mut sleeper = Patient;
                    let mut at = 0;
                    let mut rng = 7u64;
                    while at < data.len() {
                        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
                        let len = ((rng >> 33) as usize % (2 * capacity as usize)).max(1);
                        let end = (at + len).min(data.len());
                        producer
                            .write_all(&data[at..end], &mut sleeper)
                            .expect("write");
                        at = end;
                    }
                    producer.close();
                });
                // Every sleep must end with a wake-up, none by the timeout (see `Patient`): no
                // wake-up is lost, and the flush-before-sleep rule wakes whoever waits.
                let mut sleeper = Patient;
                let mut got = Vec::with_capacity(total);
                let mut buf = vec![0; 3 * capacity as usize];
                let mut rng = 11u64;
                loop {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1);
                    let len = ((rng >> 33) as usize % buf.len()).max(1);
                    let n = consumer.read(&mut buf[..len], &mut sleeper).expect("read");
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                }
                assert!(got == expected, "capacity {capacity}: the stream differs");
            });
        }
    }

    #[test]
    fn a_tail_beyond_the_capacity_is_a_violation() {
        let (_producer, mut consumer, backing) = pair(4096, true);
        let ring = backing.ring();
        ring.tail().store(4097, Ordering::Release);
        let error = consumer
            .try_read(&mut [0; 10])
            .expect_err("must be refused");
        assert!(matches!(error, ShmError::Violation(_)), "{error}");
        assert!(error.to_string().contains("4097"), "{error}");
    }

    #[test]
    fn a_tail_moving_backwards_is_a_violation() {
        let (mut producer, mut consumer, _) = pair(4096, true);
        producer.write(&[1; 100], &mut Patient).expect("write");
        assert_eq!(consumer.try_read(&mut [0; 10]).expect("read"), 10);
        producer.ring.tail().store(50, Ordering::Release);
        // The consumer still has 90 bytes it knows of; the bad value shows on the next load.
        assert_eq!(consumer.try_read(&mut [0; 200]).expect("read"), 90);
        let error = consumer
            .try_read(&mut [0; 10])
            .expect_err("must be refused");
        assert!(matches!(error, ShmError::Violation(_)), "{error}");
    }

    #[test]
    fn a_head_beyond_the_tail_or_backwards_is_a_violation() {
        let (mut producer, consumer, _) = pair(4096, true);
        producer.write(&[1; 4096], &mut Patient).expect("fill");
        consumer.ring.head().store(5000, Ordering::Release);
        let error = producer
            .write(&[1], &mut Patient)
            .expect_err("head past tail");
        assert!(matches!(error, ShmError::Violation(_)), "{error}");

        let (mut producer, consumer, _) = pair(4096, true);
        producer.write(&[1; 4096], &mut Patient).expect("fill");
        consumer.ring.head().store(2000, Ordering::Release);
        assert_eq!(producer.write(&[1; 100], &mut Patient).expect("write"), 100);
        consumer.ring.head().store(1000, Ordering::Release);
        let error = producer
            .write(&[1; 3000], &mut Patient)
            .expect_err("head moved back");
        assert!(matches!(error, ShmError::Violation(_)), "{error}");
    }

    #[test]
    fn an_unchecked_side_stays_inside_its_ring() {
        // The client side does not validate (it trusts the engine), but a wild counter can
        // still only make it copy bytes of its own ring.
        let (_producer, mut consumer, _) = pair(4096, false);
        consumer.ring.tail().store(1 << 40, Ordering::Release);
        let mut buf = vec![0; 10_000];
        assert_eq!(consumer.try_read(&mut buf).expect("read"), 4096);

        let (mut producer, consumer, _) = pair(4096, false);
        consumer.ring.head().store(1 << 40, Ordering::Release);
        producer.load_head().expect("unchecked");
        assert!(producer.free() <= 4096);
    }

    /// A peer that bumps the wake-up counter in a loop without writing anything keeps waking
    /// the consumer; after a few fruitless waits it pauses instead of spinning.
    #[test]
    fn a_peer_that_only_wakes_does_not_make_the_consumer_spin() {
        let (_producer, consumer, backing) = pair(4096, true);
        let mut consumer = consumer.with_wait_timeout(Duration::from_millis(10));
        let ring = backing.ring();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::SeqCst) {
                    wake(ring.data_seq());
                }
            });
            /// Gives up after a number of waits.
            struct Counting(u32);
            impl Sleeper for Counting {
                fn before_sleep(&mut self) {}
                fn after_wake(&mut self, _timed_out: bool) -> Result<(), ShmError> {
                    self.0 += 1;
                    if self.0 == 200 {
                        return Err(ShmError::PeerGone);
                    }
                    Ok(())
                }
            }
            let mut sleeper = Counting(0);
            let started = std::time::Instant::now();
            let error = consumer
                .read(&mut [0; 10], &mut sleeper)
                .expect_err("no data");
            stop.store(true, Ordering::SeqCst);
            assert!(matches!(error, ShmError::PeerGone));
            // 200 waits, all but the first 64 after a pause of at least 1 ms: a lower bound,
            // which a slow machine only makes easier to meet.
            let pauses = (200 - FRUITLESS_WAITS) * FRUITLESS_PAUSE;
            assert!(started.elapsed() >= pauses, "{:?}", started.elapsed());
        });
    }

    /// A sleeper whose peer is gone: waits end with an error instead of lasting forever.
    struct Abandoned(usize);

    impl Sleeper for Abandoned {
        fn before_sleep(&mut self) {}
        fn after_wake(&mut self, _timed_out: bool) -> Result<(), ShmError> {
            self.0 += 1;
            Err(ShmError::PeerGone)
        }
    }

    #[test]
    fn waits_end_when_the_peer_is_gone() {
        let (producer, consumer, _) = pair(4096, true);
        // Nobody will wake them: each wait ends by its timeout.
        let short = Duration::from_millis(10);
        let (mut producer, mut consumer) = (
            producer.with_wait_timeout(short),
            consumer.with_wait_timeout(short),
        );
        let mut sleeper = Abandoned(0);
        let error = consumer
            .read(&mut [0; 10], &mut sleeper)
            .expect_err("empty");
        assert!(matches!(error, ShmError::PeerGone));
        producer.write_all(&[0; 4096], &mut Patient).expect("fill");
        let error = producer.write(&[0; 1], &mut sleeper).expect_err("full");
        assert!(matches!(error, ShmError::PeerGone));
        assert_eq!(sleeper.0, 2);
    }
}
