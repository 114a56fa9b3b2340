#!/usr/bin/env python3
"""The conformance child for the Python client (clients/python): a streaming program that
exercises the client the ways an engine's tests need, over shared memory or, without
SLUICE_SHM_FD, stdin and stdout. It behaves like tests/shm/conform.c.

    conform.py copy | lines | slow-reader | slow-writer | die | garbage

copy         copies input to output with reads of 1, 7, 4096, 65536, 300000 bytes in turn
lines        copies input to output line by line (readline)
slow-reader  copy, sleeping 2 ms after each 64 KiB read
slow-writer  copy, flushing and sleeping 2 ms after each 64 KiB written
die          reads up to 100000 bytes, writes the first 1000, flushes, exits with status 7
             without closing
garbage      reads up to 4096 bytes, then corrupts the region (the output ring's tail beyond
             anything possible, the header's magic and ring offsets) and sleeps 10 s: the
             engine must see a protocol violation and end it

Exits 0 after a normal end, 1 after a client error, 2 on bad usage.
"""

import ctypes
import mmap
import os
import struct
import sys
import time

# The client in this checkout, unless PYTHONPATH or an installed package provides one first.
sys.path.append(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python")
)
import sluice_shm  # noqa: E402
from sluice_shm import _futex  # noqa: E402  (garbage wakes the engine as the client would)

SIZES = (1, 7, 4096, 65536, 300000)
PAUSE_EVERY = 64 * 1024
PAUSE = 0.002


def copy(ch, pace=None):
    turn = 0
    read_since = written_since = 0
    while True:
        data = ch.read(SIZES[turn])
        turn = (turn + 1) % len(SIZES)
        if not data:
            break
        read_since += len(data)
        if pace == "slow-reader" and read_since >= PAUSE_EVERY:
            time.sleep(PAUSE)
            read_since = 0
        ch.write(data)
        written_since += len(data)
        if pace == "slow-writer" and written_since >= PAUSE_EVERY:
            ch.flush()
            time.sleep(PAUSE)
            written_since = 0


def lines(ch):
    while True:
        line = ch.readline()
        if not line:
            break
        ch.write(line)


def read_up_to(ch, want):
    """Reads until `want` bytes or the end of the input."""
    parts, got = [], 0
    while got < want:
        data = ch.read(want - got)
        if not data:
            break
        parts.append(data)
        got += len(data)
    return b"".join(parts)


def die(ch):
    data = read_up_to(ch, 100000)
    ch.write(data[:1000])
    ch.flush()
    os._exit(7)  # no close, no atexit: the engine must cope with a half-finished child


def garbage():
    """A hostile child. It maps the region itself before sluice_shm.open() (which closes the
    descriptor), reading the layout from the header like any client would."""
    region = None
    fd_text = os.environ.get("SLUICE_SHM_FD")
    if fd_text is not None:
        fd = int(fd_text)
        region = mmap.mmap(fd, os.fstat(fd).st_size)
    ch = sluice_shm.open()
    read_up_to(ch, 4096)
    if region is not None:
        (rings,) = struct.unpack_from("<I", region, 24)
        if rings & 2:
            # The client checked the layout at attach: these offsets are inside the region.
            offset, capacity = struct.unpack_from("<QQ", region, 48)
            tail = ctypes.c_uint64.from_buffer(region, offset)
            head = ctypes.c_uint64.from_buffer(region, offset + 128)
            data_seq = ctypes.c_uint32.from_buffer(region, offset + 256)
            tail.value = head.value + 3 * capacity
            data_seq.value = (data_seq.value + 1) & 0xFFFFFFFF
            _futex.wake(ctypes.addressof(data_seq))
        region[0:8] = b"\xff" * 8  # magic
        region[32:64] = b"\xff" * 32  # both rings' offset and capacity
    time.sleep(10)
    os._exit(0)  # without closing: the output ring is garbage now


def main():
    scenario = sys.argv[1] if len(sys.argv) == 2 else ""
    if scenario == "garbage":
        garbage()
    elif scenario in ("copy", "slow-reader", "slow-writer", "lines", "die"):
        ch = sluice_shm.open()
        try:
            if scenario == "lines":
                lines(ch)
            elif scenario == "die":
                die(ch)
            else:
                copy(ch, scenario)
            ch.close()
        except sluice_shm.ProtocolError as e:
            print(f"conform {scenario}: {e}", file=sys.stderr)
            sys.exit(1)
    else:
        print("usage: conform.py copy|lines|slow-reader|slow-writer|die|garbage", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
