#!/usr/bin/env bash
# The shm ring's wake-up protocol under the loom model checker: the ring's own code, built with
# `--cfg loom`, run by the tests of crates/shm/src/ring/loom_tests.rs (docs/ROBUSTNESS.md,
# "The shm ring under a model checker and Miri").
#
#   tests/shm/loom.sh                          the tests, with loom's preemption bound at 3
#   LOOM_MAX_PREEMPTIONS=4 tests/shm/loom.sh   a deeper search (each step costs about 10x)
#
# Extra arguments go to the test harness (a test name, --nocapture, ...). The `--cfg loom`
# build has its own target directory, so that it does not throw away the normal build.
set -euo pipefail
cd "$(dirname "$0")/../.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/loom"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-3}"
exec "${CARGO:-cargo}" test -p sluice-shm --release --lib -- "$@"
