"""The Channel: a streaming program's input and output, through the shared-memory rings under
sluice (or under Hadoop Streaming with sluice's plugin, after the handshake), or through stdin
and stdout anywhere else."""

from __future__ import annotations

import atexit
import itertools
import os
import sys
from collections.abc import Iterator
from io import BytesIO
from typing import TYPE_CHECKING, NoReturn

from . import _handshake

if TYPE_CHECKING:
    from ._region import Region

# Most bytes taken from the input at a time. Lines are cut from chunks this large, so the cost
# of a chunk (a ring copy or a read system call, a counter store) is shared by many lines.
_READ_CHUNK = 256 * 1024
# Output is gathered up to this size before it is copied into the ring or written to stdout.
_WRITE_BUFFER = 64 * 1024


def _closed_source(limit: int) -> bytes:
    raise ValueError("I/O operation on a closed sluice_shm channel")


def _closed_sink(data: bytearray) -> None:
    raise ValueError("I/O operation on a closed sluice_shm channel")


def _split_lines(data: bytes) -> list:
    """`data` cut after every b"\\n"; the last piece lacks it when `data` does not end with one.

    BytesIO.readlines cuts at b"\\n" only (bytes.splitlines would also cut at b"\\r") and is the
    fastest way to do it: the loop runs in C and it shares `data` instead of copying it.
    """
    return BytesIO(data).readlines()


class Channel:
    """A streaming program's input and output. Get it with `sluice_shm.open()`.

    Reading: `read(n)`, `readline()`, and iteration over lines (`for line in channel`). Lines
    keep their b"\\n"; the last line of the input may lack it. The three may be mixed.

    Writing: `write(data)` buffers; `flush()` makes what was written visible to the reader now
    (rarely needed under sluice: with a ring in use, the channel also flushes whenever it is
    about to wait for input); `close()` flushes and ends the output.

    A channel is a context manager (closing on exit) and is not thread-safe.
    """

    def __init__(
        self, region: Region | None = None, batch: int | None = None, pending: bytes = b""
    ) -> None:
        """Uses the rings of an attached `region`, and stdin or stdout for a direction it has
        no ring for (or for both, without a region). `batch` overrides the wake-up batch of
        the rings (capacity / 4). `pending` is input already taken from stdin (by the
        handshake): it is read first, then the source."""
        self._region = region
        self._input = None
        self._output = None
        if region is not None:
            from ._rings import InputRing, OutputRing

            if region.input is not None:
                self._input = InputRing(region, region.input, batch)
                self._input.idle = self._idle
                self._input.before_sleep = self._announce
            if region.output is not None:
                self._output = OutputRing(region, region.output, batch)
                self._output.before_sleep = self._announce
        # Where bytes come from and go to; both become the _closed_* functions on close().
        self._source = self._input.read if self._input else self._read_stdin
        self._sink = self._output.push if self._output else self._write_stdout
        self._stdin = None if self._input else sys.stdin.buffer
        self._stdout = None if self._output else sys.stdout.buffer

        # Input not yet returned, in order: the lines left in `_lines` (an iterator over a list
        # shared by readline and iteration), then `_rbuf[_rpos:]`, then the source.
        self._lines: Iterator[bytes] = iter(())
        self._rbuf = pending
        self._rpos = 0

        self._wbuf = bytearray()
        self._wlimit = _WRITE_BUFFER
        self._closed = False

    # ---------------------------------------------------------------------------------------
    # Properties

    @property
    def is_shm(self) -> bool:
        """True if at least one direction goes through a shared-memory ring."""
        return self._input is not None or self._output is not None

    @property
    def closed(self) -> bool:
        """True once close() has been called."""
        return self._closed

    # ---------------------------------------------------------------------------------------
    # Reading

    def read(self, n: int = -1) -> bytes:
        """Returns up to `n` bytes, or all the rest of the input if `n` is negative.

        Returns as soon as some bytes are available, blocking only while there are none; b"" at
        the end of the input (or if `n` is 0).
        """
        pending = b"".join(self._lines)
        if pending:
            self._rbuf = pending + self._rbuf[self._rpos :]
            self._rpos = 0
        buf, pos = self._rbuf, self._rpos
        if n is None or n < 0:
            parts = [buf[pos:]]
            self._rbuf, self._rpos = b"", 0
            while True:
                chunk = self._source(_READ_CHUNK)
                if not chunk:
                    return b"".join(parts)
                parts.append(chunk)
        have = len(buf) - pos
        if have == 0:
            if n == 0:
                return b""
            chunk = self._source(max(n, _READ_CHUNK))
            if len(chunk) <= n:
                return chunk
            self._rbuf, self._rpos = chunk, n
            return chunk[:n]
        if n >= have:
            self._rbuf, self._rpos = b"", 0
            return buf[pos:] if pos else buf
        self._rpos = pos + n
        return buf[pos : pos + n]

    def readline(self) -> bytes:
        """Returns the next line with its b"\\n" (the last line may lack it); b"" at the end."""
        line = next(self._lines, None)
        if line is None:
            if not self._split():
                return b""
            line = next(self._lines)
        return line

    def __iter__(self) -> Iterator[bytes]:
        """Iterates over the lines of the input, as readline() returns them.

        The iterator chains the lists of lines `_split` cuts from each chunk; chain runs in C,
        so a line costs about what iterating over sys.stdin.buffer costs.
        """
        return itertools.chain.from_iterable(self._line_batches())

    def _line_batches(self) -> Iterator[Iterator[bytes]]:
        while True:
            lines = self._lines
            yield lines
            # readline() may have replaced `_lines` while the chain was consuming this batch:
            # then the new one comes next, not a new split.
            if self._lines is lines and not self._split():
                return

    def _split(self) -> bool:
        """Replaces the exhausted `_lines` with the next complete lines: those in `_rbuf`, or
        else those of the next chunk from the source, the start of the first one joined from
        earlier pieces if a line spans chunks. At the end of the input, the last line lacks its
        b"\\n". Returns False when there is nothing left.
        """
        data = self._rbuf[self._rpos :] if self._rpos else self._rbuf
        self._rbuf, self._rpos = b"", 0
        # A line whose end has not arrived yet, in pieces: lines can be huge, and joining the
        # pieces once is linear where growing one bytes object would be quadratic.
        partial: list[bytes] = []
        while True:
            if not data:
                data = self._source(_READ_CHUNK)
                if not data:
                    if not partial:
                        return False
                    self._lines = iter((b"".join(partial),))
                    return True
            lines = _split_lines(data)
            data = b""
            last = lines[-1]
            if not last.endswith(b"\n"):
                if len(lines) == 1:
                    partial.append(last)
                    continue
                lines.pop()
                self._rbuf = last
            if partial:
                partial.append(lines[0])
                lines[0] = b"".join(partial)
            self._lines = iter(lines)
            return True

    def _read_stdin(self, limit: int) -> bytes:
        if self._output is not None:
            # A read of stdin may block: the flush-before-sleep rule for the output ring.
            self._idle()
        return self._stdin.read1(limit)

    # ---------------------------------------------------------------------------------------
    # Writing

    def write(self, data) -> int:
        """Writes the bytes-like `data` (buffered); returns its length."""
        wbuf = self._wbuf
        wbuf += data
        if len(wbuf) >= self._wlimit:
            self._drain()
        return len(data)

    def flush(self) -> None:
        """Makes everything written so far visible to the reader now."""
        if self._closed:
            raise ValueError("I/O operation on a closed sluice_shm channel")
        if self._wbuf:
            self._drain()
        if self._output is not None:
            self._output.announce()
        else:
            if self._input is not None:
                self._input.announce()
            self._stdout.flush()

    def _drain(self) -> None:
        """Moves the write buffer to the sink: into the ring (waiting for space as needed) or to
        stdout."""
        self._sink(self._wbuf)
        del self._wbuf[:]

    def _write_stdout(self, data: bytearray) -> None:
        if self._input is not None:
            # A write to stdout may block: announce the space freed in the input ring first.
            self._input.announce()
        self._stdout.write(data)

    # ---------------------------------------------------------------------------------------
    # Waiting

    def _idle(self) -> None:
        """Before this side blocks on its input: pushes out what write() still buffers, then
        wakes the engine if it waits on us (the flush-before-sleep rule). Without the first
        step, output gathered here would wait on input the engine may hold back for it."""
        if self._wbuf:
            self._drain()
        if self._output is None:
            self._stdout.flush()
        self._announce()

    def _announce(self) -> None:
        """The flush-before-sleep rule: wakes the engine wherever this side owes it a wake-up."""
        if self._output is not None:
            self._output.announce()
        if self._input is not None:
            self._input.announce()

    # ---------------------------------------------------------------------------------------
    # Closing

    def close(self) -> None:
        """Flushes, then ends the output: the output ring is marked closed and the engine woken,
        and the child is marked DETACHED. stdin and stdout themselves stay open. Further reads
        and writes raise ValueError; closing again does nothing."""
        if self._closed:
            return
        flushed = False
        try:
            self.flush()
            flushed = True
        finally:
            self._closed = True
            self._source = _closed_source
            self._sink = _closed_sink
            self._wlimit = 0  # every write() now reaches _closed_sink
            for _ in self._lines:  # iteration in progress ends too
                pass
            self._rbuf, self._rpos = b"", 0
            self._wbuf = bytearray()
            # The output ring is closed only if all the output made it: an output ring left
            # open makes the engine fail the task even if we exit with status 0.
            if flushed and self._output is not None:
                self._output.close()
            if self._region is not None:
                self._region.detach()

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


_channel: Channel | None = None


def _cannot_attach(error: Exception) -> NoReturn:
    """What the protocol asks of a client that cannot attach: the reason on stderr, status 2."""
    print(f"sluice_shm: cannot attach to the shared-memory region: {error}", file=sys.stderr)
    sys.exit(2)


def open(batch: int | None = None) -> Channel:
    """Returns the program's channel, creating it on the first call.

    Under sluice with shared memory (SLUICE_SHM_FD is set) the channel attaches to the region;
    if it cannot, it says why on stderr and exits with status 2, as the protocol requires (the
    engine is not using stdin and stdout, so falling back to them would only hide the problem).

    Without SLUICE_SHM_FD, under Hadoop Streaming fed by sluice's plugin (the environment says
    so: see _handshake.offers), it offers the handshake: the hello line on stdout, then the
    first line of stdin either names the region, which it attaches to (exiting with status 2
    if it cannot, as above), or is the first record, which it then reads again as input, over
    stdin and stdout. Anywhere else, or on a platform without shared memory (where an offer
    accepted could only fail), it uses stdin and stdout at once, so the same program runs in
    a shell pipeline or under Hadoop without sluice.

    `batch` sets how many bytes a ring side moves before it wakes a sleeping engine (default:
    a quarter of the ring); it applies when the channel is created.

    A channel still open when the interpreter exits is closed then (atexit), so a program that
    forgets close() still delivers its output.
    """
    global _channel
    if _channel is not None:
        return _channel
    if batch is not None and batch <= 0:
        raise ValueError(f"batch must be positive, not {batch}")
    region = None
    pending = b""
    if "SLUICE_SHM_FD" in os.environ:
        from ._region import AttachError, attach

        try:
            region = attach(os.environ)
        except AttachError as e:
            _cannot_attach(e)
    elif _handshake.offers(os.environ):
        from ._region import AttachError, unsupported_platform

        # Offering where attaching must fail would fail a task that pipes can run: no offer,
        # and the engine falls back to pipes after its wait.
        if unsupported_platform() is None:
            try:
                region, pending = _handshake.offer(sys.stdin.buffer)
            except AttachError as e:
                _cannot_attach(e)
    _channel = Channel(region, batch, pending)
    atexit.register(_channel.close)
    return _channel
