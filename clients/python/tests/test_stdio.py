"""The client without shared memory (no SLUICE_SHM_FD): stdin and stdout, and the reading and
line-splitting logic every transport shares, checked against io.BytesIO as the model."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CLIENT = HERE.parent
CONFORM = CLIENT.parent.parent / "tests" / "shm" / "conform.py"

sys.path.insert(0, str(CLIENT))
from sluice_shm import Channel  # noqa: E402


class ChoppyStdin:
    """Stands for sys.stdin: its buffer's read1 hands out the data in pieces of the sizes given
    (cycled), as a pipe does."""

    def __init__(self, data: bytes, sizes) -> None:
        self.buffer = self
        self._data = memoryview(data)
        self._sizes = list(sizes)
        self._turn = 0

    def read1(self, limit: int) -> bytes:
        size = min(limit, self._sizes[self._turn % len(self._sizes)])
        self._turn += 1
        piece, self._data = bytes(self._data[:size]), self._data[size:]
        return piece


@pytest.fixture
def stdio(monkeypatch):
    """Returns a function that makes a stdio Channel over `data` read in pieces of `sizes`."""
    monkeypatch.delenv("SLUICE_SHM_FD", raising=False)
    out = io.BytesIO()

    def make(data: bytes, sizes=(1 << 20,)) -> Channel:
        monkeypatch.setattr(sys, "stdin", ChoppyStdin(data, sizes))
        monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out))  # .buffer is `out`
        return Channel()

    make.output = out
    return make


def child_env() -> dict:
    env = dict(os.environ, PYTHONPATH=str(CLIENT))
    env.pop("SLUICE_SHM_FD", None)
    return env


CASES = [
    b"",
    b"\n",
    b"\n\n\n",
    b"a",
    b"a\n",
    b"a\nb",
    b"a\r\nb\rc\n\r",
    b"\x00\x0b\x0c\x1c\x85\n\xff\xfe",
    b"x" * 100_000 + b"\n" + b"y" * 3000,
    b"".join(b"%d\n" % i for i in range(5000)),
]
SIZES = [(1,), (2,), (3, 1, 7), (4096,), (1 << 20,)]


@pytest.mark.parametrize("sizes", SIZES, ids=[str(s) for s in SIZES])
@pytest.mark.parametrize("data", CASES, ids=[repr(c[:12]) for c in CASES])
def test_lines_like_bytesio(stdio, data, sizes):
    expected = io.BytesIO(data).readlines()
    assert list(stdio(data, sizes)) == expected
    ch = stdio(data, sizes)
    got = []
    while True:
        line = ch.readline()
        if not line:
            break
        got.append(line)
    assert got == expected
    assert ch.readline() == b"" and ch.read() == b"" and ch.read(5) == b""


@pytest.mark.parametrize("seed", range(20))
def test_mixed_reads_like_bytesio(stdio, seed):
    """read(n), readline() and iteration interleaved at random: every call returns exactly the
    next bytes of the input; read(n) returns between 1 and n of them until the end."""
    rng = random.Random(seed)
    data = b"".join(
        b"z" * rng.choice((0, 1, 5, 80, 5000, 70000)) + rng.choice((b"\n", b"\r\n", b"\r"))
        for _ in range(300)
    )
    data += b"tail without newline" if seed % 2 else b""
    model = io.BytesIO(data)
    ch = stdio(data, [rng.randint(1, 9000) for _ in range(50)])
    lines = iter(ch)
    while model.tell() < len(data):
        op = rng.randrange(4)
        if op == 0:
            n = rng.choice((0, 1, 7, 4096, 300000))
            got = ch.read(n)
            assert len(got) <= n and (len(got) > 0 or n == 0)
            assert got == model.read(len(got))
        elif op == 1:
            assert ch.readline() == model.readline()
        elif op == 2:
            assert next(lines) == model.readline()
        else:
            assert ch.read() == model.read()
    assert ch.read() == b"" and ch.readline() == b"" and next(lines, None) is None


def test_read_all_after_a_line(stdio):
    ch = stdio(b"first\nsecond\nthird", (4,))
    assert next(iter(ch)) == b"first\n"
    assert ch.read(-1) == b"second\nthird"


def test_writes_are_buffered_and_flushed(stdio):
    ch = stdio(b"")
    ch.write(b"abc")
    ch.write(bytearray(b"def"))
    ch.write(memoryview(b"ghi"))
    assert stdio.output.getvalue() == b""
    ch.flush()
    assert stdio.output.getvalue() == b"abcdefghi"
    big = bytes(range(256)) * 1000  # more than the buffer: goes out at once
    ch.write(big)
    assert stdio.output.getvalue() == b"abcdefghi" + big
    ch.write(b"end")
    ch.close()
    assert stdio.output.getvalue() == b"abcdefghi" + big + b"end"


def test_closed_channel(stdio):
    ch = stdio(b"a\nb\nc\n")
    with ch:
        lines = iter(ch)
        assert next(lines) == b"a\n"
        assert not ch.is_shm and not ch.closed
    assert ch.closed
    ch.close()  # again: nothing
    for use in (ch.read, ch.readline, lambda: next(lines), lambda: ch.write(b"x"), ch.flush):
        with pytest.raises(ValueError):
            use()


@pytest.mark.parametrize("scenario", ["copy", "lines", "slow-reader", "slow-writer"])
def test_conform_over_pipes(scenario):
    rng = random.Random(3)
    pattern = b"ab\r\t cd" * 10000
    data = b"\n".join(pattern[i : i + rng.choice((0, 9, 300, 70000))] for i in range(400))
    proc = subprocess.run(
        [sys.executable, CONFORM, scenario],
        input=data,
        capture_output=True,
        env=child_env(),
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == data


def test_conform_die_over_pipes():
    proc = subprocess.run(
        [sys.executable, CONFORM, "die"],
        input=b"x" * 5000,
        capture_output=True,
        env=child_env(),
        timeout=30,
    )
    assert proc.returncode == 7
    assert proc.stdout == b"x" * 1000


def test_open_is_one_channel_closed_at_exit():
    """open() returns the same channel every time, and a channel the program never closes is
    flushed when the interpreter exits."""
    child = (
        "import sluice_shm\n"
        "ch = sluice_shm.open()\n"
        "assert sluice_shm.open() is ch and not ch.is_shm\n"
        "for line in ch:\n"
        "    ch.write(line.upper())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", child],
        input=b"one\ntwo",
        capture_output=True,
        env=child_env(),
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout == b"ONE\nTWO"
