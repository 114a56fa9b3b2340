//! End-to-end tests of the `sluice` binary.
//!
//! Every job's output is compared byte for byte with an independent Python reference
//! (`tests/reference/*.py`, written from the job specifications, never from the engine's
//! output). Run with `--nocapture` to see measured numbers (peak RSS of the budget tests) and
//! skipped cases.
// Helpers may unwrap, as `#[test]` functions may (see clippy.toml): a panic is a test failure
// with a backtrace.
#![allow(clippy::unwrap_used)]

#[path = "e2e/budget.rs"]
mod budget;
#[path = "e2e/compressed.rs"]
mod compressed;
#[path = "e2e/corpus.rs"]
mod corpus;
#[path = "e2e/counters.rs"]
mod counters;
#[path = "e2e/discovery.rs"]
mod discovery;
#[path = "e2e/failures.rs"]
mod failures;
#[path = "e2e/jar.rs"]
mod jar;
#[path = "e2e/jobs.rs"]
mod jobs;
#[path = "e2e/messy.rs"]
mod messy;
#[path = "e2e/places.rs"]
mod places;
#[path = "e2e/spill_dirs.rs"]
mod spill_dirs;
#[path = "e2e/split.rs"]
mod split;
#[path = "e2e/tera.rs"]
mod tera;
#[path = "e2e/terasort.rs"]
mod terasort;
#[path = "e2e/util.rs"]
mod util;
