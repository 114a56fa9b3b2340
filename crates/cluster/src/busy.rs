//! How long a worker had at least one push (or one received push) in progress.
//!
//! A link's mean rate over the whole time data moved on it also counts the moments when no
//! task output was ready to send: the map tasks' pace, not the shuffle's. Bytes pushed
//! divided by the time at least one push was under way is the rate the shuffle got out of
//! the link whenever it had something to send (docs/BENCHMARKS.md).

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Adds up the time during which at least one activity was in progress: overlapping
/// activities count once.
#[derive(Debug, Default)]
pub(crate) struct BusyClock {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Activities in progress.
    active: usize,
    /// When the current busy stretch began (`active > 0`).
    since: Option<Instant>,
    /// Busy stretches that ended.
    total: Duration,
}

impl State {
    fn enter(&mut self, now: Instant) {
        if self.active == 0 {
            self.since = Some(now);
        }
        self.active = self.active.saturating_add(1);
    }

    fn leave(&mut self, now: Instant) {
        self.active = self.active.saturating_sub(1);
        if self.active == 0 {
            if let Some(since) = self.since.take() {
                self.total = self
                    .total
                    .saturating_add(now.saturating_duration_since(since));
            }
        }
    }

    fn total(&self, now: Instant) -> Duration {
        let open = self
            .since
            .map_or(Duration::ZERO, |s| now.saturating_duration_since(s));
        self.total.saturating_add(open)
    }
}

/// One activity in progress on a [`BusyClock`]; it ends when this drops.
pub(crate) struct Busy<'a> {
    clock: &'a BusyClock,
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.clock.lock().leave(Instant::now());
    }
}

impl BusyClock {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every step leaves the state consistent: a panic elsewhere leaves it usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts an activity, which lasts until the returned value drops.
    pub(crate) fn enter(&self) -> Busy<'_> {
        self.lock().enter(Instant::now());
        Busy { clock: self }
    }

    /// The time so far during which at least one activity was in progress, the current
    /// stretch included.
    pub(crate) fn total(&self) -> Duration {
        self.lock().total(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn overlapping_activities_count_once_and_gaps_not_at_all() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut state = State::default();
        // A from 0 to 30, B from 10 to 50 (overlapping), nothing from 50 to 100, C 100-120.
        state.enter(at(0));
        state.enter(at(10));
        state.leave(at(30));
        assert_eq!(
            state.total(at(40)),
            Duration::from_millis(40),
            "B still running"
        );
        state.leave(at(50));
        assert_eq!(
            state.total(at(90)),
            Duration::from_millis(50),
            "a gap adds nothing"
        );
        state.enter(at(100));
        state.leave(at(120));
        assert_eq!(state.total(at(200)), Duration::from_millis(70));
        assert_eq!(state.active, 0);
    }

    #[test]
    fn an_activity_ending_at_once_adds_nothing() {
        let t0 = Instant::now();
        let mut state = State::default();
        state.enter(t0);
        state.leave(t0);
        assert_eq!(state.total(t0 + Duration::from_secs(1)), Duration::ZERO);
    }

    /// Threads starting and ending activities at once: the clock never counts more than the
    /// time that passed, nor less than any one activity or the activities' sum spread over
    /// the threads, and ends idle.
    #[test]
    fn activities_on_many_threads_add_up_within_the_time_that_passed() {
        const THREADS: u32 = 8;
        let clock = Arc::new(BusyClock::default());
        let start = Instant::now();
        // Each activity's time as its thread saw it between entering and leaving: inside
        // the clock's own stretch for it.
        let seen: Vec<(Duration, Duration)> = (0..THREADS)
            .map(|i| {
                let clock = Arc::clone(&clock);
                std::thread::spawn(move || {
                    let (mut longest, mut sum) = (Duration::ZERO, Duration::ZERO);
                    for k in 0..200u32 {
                        let busy = clock.enter();
                        let began = Instant::now();
                        if (i + k) % 16 == 0 {
                            std::thread::sleep(Duration::from_micros(200));
                        }
                        let took = began.elapsed();
                        drop(busy);
                        longest = longest.max(took);
                        sum += took;
                    }
                    (longest, sum)
                })
            })
            .map(|t| t.join().unwrap())
            .collect();
        let elapsed = start.elapsed();
        let total = clock.total();
        assert!(total <= elapsed, "{total:?} counted in {elapsed:?}");
        let longest = seen.iter().map(|s| s.0).max().unwrap();
        let sum: Duration = seen.iter().map(|s| s.1).sum();
        assert!(total >= longest, "{total:?}, longest {longest:?}");
        assert!(total >= sum / THREADS, "{total:?}, sum {sum:?}");
        assert_eq!(clock.lock().active, 0);
        assert_eq!(clock.total(), total, "idle: the total stays");
    }
}
