//! The ring's synchronisation primitives: its atomics and its futex, behind one facade so that
//! the model checker can stand in for both.
//!
//! In a normal build everything here is `std`'s atomics and the Linux futex, re-exported or
//! wrapped in an `#[inline]` function: the ring compiles to exactly the same code as if it
//! used them directly. Built with `--cfg loom` (see `tests/shm/loom.sh`), the atomics are
//! loom's, which explores every interleaving of the two sides and every value a load may
//! legally return, and the futex is `model::FutexWord`, a model of futex semantics built
//! from loom's own mutex and condition variable.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

#[cfg(loom)]
pub(crate) use model::{wait, wake_all, FutexWord};
#[cfg(not(loom))]
pub(crate) use os::{wait, wake_all, FutexWord};

/// The real futex (a normal build).
#[cfg(not(loom))]
mod os {
    use std::sync::atomic::AtomicU32;
    use std::time::Duration;

    use linux_futex::{AsFutex, Futex, Shared};

    /// A 32-bit word other threads or processes can sleep on: in a normal build, a plain
    /// atomic in shared memory (the futex is the kernel's, keyed by the word's address).
    pub(crate) type FutexWord = AtomicU32;

    fn futex(word: &AtomicU32) -> &Futex<Shared> {
        word.as_futex()
    }

    /// Wakes every thread, in any process, that sleeps on `word`.
    #[inline]
    pub(crate) fn wake_all(word: &FutexWord) {
        futex(word).wake(i32::MAX);
    }

    /// Sleeps on `word` if it still holds `expected` (checked atomically with respect to
    /// [`wake_all`]), for at most `timeout`. Returns whether the sleep timed out. It may also
    /// end early for no reason (a signal, a stale wake-up): callers re-check their condition.
    #[inline]
    pub(crate) fn wait(word: &FutexWord, expected: u32, timeout: Duration) -> bool {
        matches!(
            futex(word).wait_for(expected, timeout),
            Err(linux_futex::TimedWaitError::TimedOut)
        )
    }
}

/// The futex as loom sees it (a `--cfg loom` build).
#[cfg(loom)]
mod model {
    use std::ops::Deref;
    use std::time::Duration;

    use loom::sync::atomic::AtomicU32;
    use loom::sync::{Condvar, Mutex};

    /// A word with its own futex: the value, and the mutex and condition variable that stand
    /// for the kernel's futex hash bucket and wait queue.
    ///
    /// [`wait`] compares the value and goes to sleep while holding the mutex, and
    /// [`wake_all`] notifies while holding it, so a change of the value followed by a
    /// `wake_all` either is seen by the comparison or wakes the sleeper: the one guarantee the
    /// kernel gives, and the one the ring's protocol relies on.
    #[derive(Debug)]
    pub(crate) struct FutexWord {
        value: AtomicU32,
        bucket: Mutex<()>,
        queue: Condvar,
    }

    impl FutexWord {
        /// A word holding `value`, with nobody sleeping on it.
        pub(crate) fn new(value: u32) -> FutexWord {
            FutexWord {
                value: AtomicU32::new(value),
                bucket: Mutex::new(()),
                queue: Condvar::new(),
            }
        }
    }

    impl Deref for FutexWord {
        type Target = AtomicU32;

        fn deref(&self) -> &AtomicU32 {
            &self.value
        }
    }

    /// As the real `wake_all`: wakes every thread sleeping on `word`.
    pub(crate) fn wake_all(word: &FutexWord) {
        // A poisoned mutex means another model thread panicked: loom reports that failure.
        let _bucket = word.bucket.lock().unwrap_or_else(|e| e.into_inner());
        word.queue.notify_all();
    }

    /// As the real `wait`, except that it never times out: in the model a sleep lasts until a
    /// [`wake_all`], so a lost wake-up leaves the sleeper blocked for ever, which loom reports
    /// as a deadlock (the real ring's bounded waits would only hide it as a slow-down).
    /// Returns `false` (not timed out).
    pub(crate) fn wait(word: &FutexWord, expected: u32, _timeout: Duration) -> bool {
        let bucket = word.bucket.lock().unwrap_or_else(|e| e.into_inner());
        if word.value.load(loom::sync::atomic::Ordering::SeqCst) == expected {
            // Loom's condition variable wakes only on a notify, never spuriously.
            let _bucket = word.queue.wait(bucket).unwrap_or_else(|e| e.into_inner());
        }
        false
    }
}
