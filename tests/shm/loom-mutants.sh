#!/usr/bin/env bash
# Checks that the loom tests of the shm ring (tests/shm/loom.sh) can fail: breaks the ring's
# protocol in one place at a time, runs the loom tests on the broken ring, and expects them to
# fail. A break they do not catch makes this script fail, unless it is one listed below as a
# known survivor (with the reason it is harmless). The ring's source is restored after each
# break and at exit; the script refuses to run on a ring.rs with uncommitted changes.
#
#   tests/shm/loom-mutants.sh        every break, at loom's preemption bound 2 (a few minutes)
set -euo pipefail
cd "$(dirname "$0")/../.."

ring=crates/shm/src/ring.rs
if ! git diff --quiet -- "$ring"; then
    echo "$ring has uncommitted changes: commit or stash them first" >&2
    exit 1
fi
backup=$(mktemp)
cp "$ring" "$backup"
trap 'cp "$backup" "$ring"; rm -f "$backup"' EXIT

export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
log=$(mktemp)
failures=0

# mutant NAME EXPECT SED-SCRIPT: EXPECT is "killed" or "survives".
mutant() {
    local name=$1 expect=$2 script=$3 outcome
    cp "$backup" "$ring"
    sed -i -e "$script" "$ring"
    if cmp -s "$backup" "$ring"; then
        echo "$name: the break no longer applies to $ring" >&2
        failures=$((failures + 1))
        return
    fi
    if tests/shm/loom.sh -q >"$log" 2>&1; then
        outcome=survives
    elif grep -q "^test result: FAILED" "$log"; then
        outcome=killed
    else
        echo "$name: the broken ring did not build:" >&2
        tail -n 20 "$log" >&2
        failures=$((failures + 1))
        return
    fi
    printf '%-31s %-9s %s\n' "$name" "$outcome" \
        "$(grep -oE 'deadlock|Causality violation|assertion `left == right` failed|panicked' "$log" | sort | uniq -c | tr -s ' \n' ' ')"
    if [ "$outcome" != "$expect" ]; then
        echo "$name: expected '$expect', got '$outcome'" >&2
        failures=$((failures + 1))
    fi
}

in_fn() { # in_fn FUNCTION SED-COMMAND: applies the command inside one function of the ring
    printf '/fn %s(/,/^    }$/{%s}' "$1" "$2"
}
no_fence='s/fence(Ordering::SeqCst);/\/\/ (broken: no fence)/'

# The fences between a side's store of its counter (or of its sleeping flag) and its load of
# the other side's flag (or counter): without any one of them, a wake-up can be lost.
mutant "no fence in wake_consumer" killed "$(in_fn wake_consumer "$no_fence")"
mutant "no fence in wait_for_space" killed "$(in_fn wait_for_space "$no_fence")"
mutant "no fence in wake_producer" killed "$(in_fn wake_producer "$no_fence")"
mutant "no fence in wait_for_data" killed "$(in_fn wait_for_data "$no_fence")"
# The release and acquire that order the data bytes with the counters that publish them.
mutant "relaxed tail store" killed \
    's/self.ring.tail().store(self.tail, Ordering::Release)/self.ring.tail().store(self.tail, Ordering::Relaxed)/'
mutant "relaxed tail load" killed \
    's/let tail = self.ring.tail().load(Ordering::Acquire)/let tail = self.ring.tail().load(Ordering::Relaxed)/'
mutant "relaxed head store" killed \
    's/self.ring.head().store(self.head, Ordering::Release)/self.ring.head().store(self.head, Ordering::Relaxed)/'
mutant "relaxed head load" killed \
    's/let head = self.ring.head().load(Ordering::Acquire)/let head = self.ring.head().load(Ordering::Relaxed)/'
mutant "relaxed closed store" killed \
    's/self.ring.closed().store(1, Ordering::Release)/self.ring.closed().store(1, Ordering::Relaxed)/'
# The consumer's re-check of `closed` after raising its flag: a close that came before the
# flag would otherwise be slept through.
mutant "no closed re-check" killed \
    "$(in_fn wait_for_data 's/ || self.tail > self.head || closed {/ || self.tail > self.head {/')"
# The wake-up counter is read before the re-check, not after: a wake-up in between is lost.
mutant "sequence read after re-check" killed \
    "$(in_fn wait_for_data '/let seen = self.ring.data_seq()/d; s/^        if loaded.is_err() || self.tail > self.head/        let seen = self.ring.data_seq().load(Ordering::SeqCst);\n&/')"
# The flush-before-sleep rule across two rings (the sleeper flushes the other ring).
mutant "no before_sleep for data" killed "$(in_fn wait_for_data 's/sleeper.before_sleep();/\/\/ (broken)/')"
# Known survivors. Within one ring, the flush at the start of a wait is belt and braces: a
# side that finds the ring full (empty) has seen the other side move a whole capacity of
# bytes since it last slept, more than a batch, so the other side was woken anyway.
mutant "no own flush in wait_for_space" survives "$(in_fn wait_for_space 's/self.flush();/\/\/ (broken)/')"
mutant "no own flush in wait_for_data" survives "$(in_fn wait_for_data 's/self.flush();/\/\/ (broken)/')"

rm -f "$log"
if [ "$failures" -gt 0 ]; then
    echo "$failures break(s) did not behave as expected" >&2
    exit 1
fi
echo "every break behaved as expected"
