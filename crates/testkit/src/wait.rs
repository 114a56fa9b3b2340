//! Waiting for something another process does (a worker removing its directory, a watcher
//! its journal) without a fixed sleep: poll until it is true or a limit passes.

use std::time::{Duration, Instant};

/// Polls `done` every 50 ms for up to `limit`; whether it came true. It is asked once more
/// after the limit, so a slow machine that passes the limit while sleeping still sees the
/// last state.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    done()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_as_soon_as_the_condition_holds() {
        let mut asked = 0;
        assert!(wait_until(Duration::from_secs(60), || {
            asked += 1;
            asked == 3
        }));
        assert_eq!(asked, 3);
    }

    #[test]
    fn gives_up_after_the_limit_asking_once_more() {
        let start = Instant::now();
        let mut asked = 0;
        assert!(!wait_until(Duration::from_millis(120), || {
            asked += 1;
            false
        }));
        assert!(start.elapsed() >= Duration::from_millis(120));
        assert!(asked >= 2, "asked {asked} times");
    }
}
