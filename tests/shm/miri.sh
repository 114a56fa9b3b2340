#!/usr/bin/env bash
# sluice-shm's unit tests under Miri, which checks every memory access of the ring's unsafe code
# (bounds, alignment, data races between the two sides' threads) in the executions it runs
# (docs/ROBUSTNESS.md, "The shm ring under a model checker and Miri"). The ring runs on a heap
# block there, as Miri cannot map a memory file; the tests that need a real region or a child
# process are ignored, with the reason.
#
#   tests/shm/miri.sh            every unit test of sluice-shm (about 5 minutes on 2 cores)
#   tests/shm/miri.sh ring::     only the ring's
#
# Needs the nightly toolchain with Miri, which this script adds with rustup if it is missing
# (a download: not part of `make test`).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! cargo +nightly miri --version >/dev/null 2>&1; then
    rustup component add --toolchain nightly miri rust-src
fi
# (cargo miri keeps its build apart by itself, under the target directory's miri/.)
exec cargo +nightly miri test -p sluice-shm --lib -- "$@"
