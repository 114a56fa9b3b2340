"""Moving bytes through the rings, and sleeping and waking (docs/shm-protocol.md, "Moving
bytes", "Sleeping and waking", "End of stream", "A dead or hostile peer").

The child consumes the input ring (`InputRing`) and produces into the output ring
(`OutputRing`). Each keeps a private copy of the counter it owns (`mine`), the last value it
accepted of the peer's counter (`theirs`), and the value `mine` had when it last checked whether
the peer sleeps (`announced`). Counters are Python ints; they never wrap (2^64 bytes).

Bytes move in large slices: one `mmap` slice copy per contiguous piece, then one counter store
per piece. Everything per record happens in the caller's buffers, not here.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, NoReturn

from . import _futex
from ._errors import ProtocolError
from ._region import ENGINE_ABORTED, Region, Ring

_U32 = 0xFFFF_FFFF


def fatal(message: str) -> NoReturn:
    """Reports `message` on stderr and exits with status 1, as the protocol prescribes for a dead
    or aborting engine.

    os._exit rather than sys.exit: nobody is left to read the output, and unwinding would run
    `finally` blocks and the atexit handler, which would only try to write to the rings again.
    """
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
        os.write(2, f"sluice_shm: {message}\n".encode())
    finally:
        os._exit(1)


def check_engine(region: Region, timed_out: bool) -> None:
    """After every wait: exits if the engine aborted the task or, after a timeout, is gone."""
    if region.engine_state.value == ENGINE_ABORTED:
        fatal("the engine aborted the task")
    if timed_out:
        # kill(pid, 0) only checks that the process exists; EPERM means it does, under another
        # user. getppid() is no test: a shell script may stand between the engine and us.
        try:
            os.kill(region.engine_pid, 0)
        except ProcessLookupError:
            fatal(f"the engine (pid {region.engine_pid}) has exited")
        except PermissionError:
            pass


def _bump_and_wake(seq, seq_addr: int) -> None:
    # Only this side writes the word, so a load and a store are as good as an atomic add.
    seq.value = (seq.value + 1) & _U32
    _futex.wake(seq_addr)


class _RingSide:
    """What both sides keep of their ring: `mine` starts at the counter this side owns.

    `before_sleep` is called right before the futex wait: the flush-before-sleep rule, for both
    rings.
    """

    def __init__(self, region: Region, ring: Ring, batch: int | None, mine: int) -> None:
        self.region = region
        self.ring = ring
        self.mm = region.mm
        self.capacity = ring.capacity
        self.batch = batch or ring.capacity // 4
        self.mine = mine
        self.theirs = mine
        self.announced = mine
        self.broken = False
        self.before_sleep: Callable[[], None] = lambda: None


class InputRing(_RingSide):
    """The consumer side of the input ring.

    `idle` is called when the ring is empty, before the sleep handshake: the channel pushes the
    output it still buffers (this may wait for output space).
    """

    def __init__(self, region: Region, ring: Ring, batch: int | None) -> None:
        super().__init__(region, ring, batch, ring.head.value)
        self.idle: Callable[[], None] = lambda: None

    def read(self, limit: int) -> bytes:
        """Takes up to `limit` (> 0) bytes, waiting while the ring is empty; b"" at the end."""
        if self.broken:
            raise ProtocolError("the region is unusable after a protocol violation")
        ring = self.ring
        while True:
            # `closed` before `tail` ("End of stream"): a closed of 1 comes with the last tail,
            # so an empty ring then is really the end. Both loads are acquires (plain x86 MOVs).
            closed = ring.closed.value
            avail = self._accept_tail(ring.tail.value)
            if avail:
                break
            if closed:
                return b""
            self._wait()
        start = self.mine & (self.capacity - 1)
        n = min(avail, self.capacity - start, limit)
        start += self.ring.data
        data = self.mm[start : start + n]
        self.mine += n
        # A release store: the copy above is complete before the engine may overwrite the bytes.
        ring.head.value = self.mine
        if self.mine - self.announced >= self.batch:
            self.announce()
        return data

    def announce(self) -> None:
        """The consumer's wake rule: wakes the engine if it sleeps for space and bytes were freed
        since the last check.

        `announced` moves on at every check, not only at wake-ups: an engine seen awake will
        re-check `head` after setting producer_sleeping, so the space freed before the check
        needs no wake-up of its own. This keeps the barrier to once per batch while the engine
        is busy.
        """
        if self.mine == self.announced:
            return
        self.announced = self.mine
        # Dekker's handshake with the engine's "store producer_sleeping = 1; load head": the
        # barrier orders our store of `head` before the load of producer_sleeping, so either we
        # see it asleep or it sees the new head.
        _futex.full_barrier()
        if self.ring.producer_sleeping.value:
            _bump_and_wake(self.ring.space_seq, self.ring.space_seq_addr)

    def _accept_tail(self, tail: int) -> int:
        """Checks a loaded `tail` (never backwards, never more than capacity ahead of head) and
        returns how many bytes are available."""
        if not self.theirs <= tail <= self.mine + self.capacity:
            self.broken = True
            raise ProtocolError(
                f"shm protocol violation: input ring tail {tail} (head {self.mine}, last tail "
                f"{self.theirs}, capacity {self.capacity})"
            )
        self.theirs = tail
        return tail - self.mine

    def _wait(self) -> None:
        """The consumer, finding the ring empty ("Sleeping and waking")."""
        self.idle()
        ring = self.ring
        # Announce the intent to sleep, then the barrier, then the last look at tail and closed:
        # either the engine sees the flag and wakes us, or we see its tail here. `seq` is loaded
        # before the re-check, so a wake-up between the re-check and FUTEX_WAIT changes the word
        # and the wait returns at once.
        ring.consumer_sleeping.value = 1
        _futex.full_barrier()
        seq = ring.data_seq.value
        if ring.tail.value != self.mine or ring.closed.value:
            ring.consumer_sleeping.value = 0
            return
        self.before_sleep()
        timed_out = _futex.wait(ring.data_seq_addr, seq)
        ring.consumer_sleeping.value = 0
        check_engine(self.region, timed_out)


class OutputRing(_RingSide):
    """The producer side of the output ring."""

    def __init__(self, region: Region, ring: Ring, batch: int | None) -> None:
        super().__init__(region, ring, batch, ring.tail.value)

    def push(self, data: bytes | bytearray) -> None:
        """Copies all of `data` into the ring, waiting for space as needed, and publishes it."""
        if self.broken:
            raise ProtocolError("the region is unusable after a protocol violation")
        ring = self.ring
        mm = self.mm
        capacity = self.capacity
        base = ring.data
        with memoryview(data) as view:
            done = 0
            left = len(view)
            while left:
                room = capacity - (self.mine - self.theirs)
                # The cached head is reloaded only when it leaves too little room, so the line
                # the engine writes is read once per ring's worth, not once per push.
                if room < left:
                    self._accept_head(ring.head.value)
                    room = capacity - (self.mine - self.theirs)
                    if room == 0:
                        self._wait()
                        continue
                n = min(room, left)
                start = self.mine & (capacity - 1)
                first = min(n, capacity - start)
                mm[base + start : base + start + first] = view[done : done + first]
                if n > first:
                    mm[base : base + n - first] = view[done + first : done + n]
                self.mine += n
                # A release store: the bytes are in the ring before a tail covering them is seen.
                ring.tail.value = self.mine
                done += n
                left -= n
                if self.mine - self.announced >= self.batch:
                    self.announce()

    def announce(self) -> None:
        """The producer's wake rule: wakes the engine if it sleeps for data and bytes were
        published since the last check. Called per batch, and to flush, close or before
        sleeping; `announced` moves on at every check, as in InputRing.announce."""
        if self.mine == self.announced:
            return
        self.announced = self.mine
        _futex.full_barrier()
        if self.ring.consumer_sleeping.value:
            _bump_and_wake(self.ring.data_seq, self.ring.data_seq_addr)

    def close(self) -> None:
        """Marks the end of the output and wakes the engine unconditionally."""
        # A release store after the last tail: the engine loads `closed` first, then `tail`.
        self.ring.closed.value = 1
        _bump_and_wake(self.ring.data_seq, self.ring.data_seq_addr)

    def _accept_head(self, head: int) -> None:
        """Checks a loaded `head`: between its last value and our tail."""
        if not self.theirs <= head <= self.mine:
            self.broken = True
            raise ProtocolError(
                f"shm protocol violation: output ring head {head} (last head {self.theirs}, "
                f"tail {self.mine})"
            )
        self.theirs = head

    def _wait(self) -> None:
        """The producer, finding the ring full: the consumer's handshake with the roles swapped."""
        ring = self.ring
        ring.producer_sleeping.value = 1
        _futex.full_barrier()
        seq = ring.space_seq.value
        self._accept_head(ring.head.value)
        if self.mine - self.theirs < self.capacity:
            ring.producer_sleeping.value = 0
            return
        self.before_sleep()
        timed_out = _futex.wait(ring.space_seq_addr, seq)
        ring.producer_sleeping.value = 0
        check_engine(self.region, timed_out)
