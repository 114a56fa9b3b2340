"""The client over shared memory, against an engine written here in Python from
docs/shm-protocol.md: a sealed memfd region, the child started with the descriptor, and one
thread feeding the input ring while another drains the output ring.

The engine validates what the child writes as the real one does (counters never backwards,
never beyond what is possible), so the tests catch a client that breaks the protocol, not only
one that loses bytes. Children are tests/shm/conform.py, the examples, and small scripts.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CLIENT = HERE.parent
ROOT = CLIENT.parent.parent
CONFORM = ROOT / "tests" / "shm" / "conform.py"
EXAMPLES = ROOT / "examples" / "shm" / "python"

sys.path.insert(0, str(CLIENT))
from sluice_shm import _futex  # noqa: E402  (the engine needs the same system calls)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
    reason="the shared-memory client runs on x86-64 Linux only",
)

PAGE = 4096
CONTROL = 384
HEADER = struct.Struct("<8sIIQIIQQQQ")
ABORTED = 1


class Violation(Exception):
    """The child broke the protocol."""


class ChildGone(Exception):
    """The child exited while the engine still waited on it."""


def child_env(**extra: str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(CLIENT)
    env.pop("SLUICE_SHM_FD", None)
    env.pop("SLUICE_SHM_VERSION", None)
    env.update(extra)
    return env


class _Side:
    """One ring as the engine sees it. The layout is the engine's own copy, never read back
    from the region; `mine` is the counter the engine owns, `theirs` the last accepted value of
    the child's."""

    def __init__(self, mm: mmap.mmap, offset: int, capacity: int, alive) -> None:
        u64, u32 = ctypes.c_uint64.from_buffer, ctypes.c_uint32.from_buffer
        self.mm = mm
        self.capacity = capacity
        self.batch = capacity // 4
        self.data = offset + CONTROL
        self.tail = u64(mm, offset)
        self.closed = u32(mm, offset + 8)
        self.head = u64(mm, offset + 128)
        self.data_seq = u32(mm, offset + 256)
        self.consumer_sleeping = u32(mm, offset + 260)
        self.space_seq = u32(mm, offset + 264)
        self.producer_sleeping = u32(mm, offset + 268)
        self.alive = alive
        self.mine = self.theirs = self.announced = 0

    @staticmethod
    def _wake(seq) -> None:
        seq.value = (seq.value + 1) & 0xFFFFFFFF
        _futex.wake(ctypes.addressof(seq))


class EngineProducer(_Side):
    """The engine writing the input ring."""

    def write(self, data: bytes) -> None:
        view, done = memoryview(data), 0
        while done < len(view):
            room = self.capacity - (self.mine - self._head())
            if room == 0:
                self._wait_space()
                continue
            n = min(room, len(view) - done)
            start = self.mine % self.capacity
            first = min(n, self.capacity - start)
            self.mm[self.data + start : self.data + start + first] = view[done : done + first]
            self.mm[self.data : self.data + n - first] = view[done + first : done + n]
            self.mine += n
            self.tail.value = self.mine
            done += n
            if self.mine - self.announced >= self.batch:
                self.flush()

    def flush(self) -> None:
        if self.mine != self.announced:
            self.announced = self.mine
            _futex.full_barrier()
            if self.consumer_sleeping.value:
                self._wake(self.data_seq)

    def close(self) -> None:
        self.closed.value = 1
        self._wake(self.data_seq)

    def unread(self) -> int:
        return self.mine - self.head.value

    def _head(self) -> int:
        head = self.head.value
        if not self.theirs <= head <= self.mine:
            raise Violation(
                f"shm protocol violation: input head {head} (was {self.theirs}, tail {self.mine})"
            )
        self.theirs = head
        return head

    def _wait_space(self) -> None:
        self.producer_sleeping.value = 1
        _futex.full_barrier()
        seq = self.space_seq.value
        if self.mine - self._head() < self.capacity:
            self.producer_sleeping.value = 0
            return
        self.flush()
        timed_out = _futex.wait(ctypes.addressof(self.space_seq), seq)
        self.producer_sleeping.value = 0
        if timed_out and not self.alive():
            raise ChildGone("the child exited with input unread")


class EngineConsumer(_Side):
    """The engine reading the output ring."""

    def read(self, limit: int = 1 << 20) -> bytes:
        while True:
            closed = self.closed.value
            avail = self._tail() - self.mine
            if avail:
                break
            if closed:
                return b""
            self._wait_data()
        start = self.mine % self.capacity
        n = min(avail, self.capacity - start, limit)
        data = self.mm[self.data + start : self.data + start + n]
        self.mine += n
        self.head.value = self.mine
        if self.mine - self.announced >= self.batch:
            self.flush()
        return data

    def flush(self) -> None:
        if self.mine != self.announced:
            self.announced = self.mine
            _futex.full_barrier()
            if self.producer_sleeping.value:
                self._wake(self.space_seq)

    def _tail(self) -> int:
        tail = self.tail.value
        if not self.theirs <= tail <= self.mine + self.capacity:
            raise Violation(
                f"shm protocol violation: output tail {tail} (was {self.theirs}, head {self.mine}, "
                f"capacity {self.capacity})"
            )
        self.theirs = tail
        return tail

    def _wait_data(self) -> None:
        self.consumer_sleeping.value = 1
        _futex.full_barrier()
        seq = self.data_seq.value
        if self._tail() != self.mine or self.closed.value:
            self.consumer_sleeping.value = 0
            return
        self.flush()
        timed_out = _futex.wait(ctypes.addressof(self.data_seq), seq)
        self.consumer_sleeping.value = 0
        # After the child's exit, bytes it published just before still count: look once more.
        if timed_out and not self.alive() and self._tail() == self.mine and not self.closed.value:
            raise ChildGone("the child exited without closing its output")


@dataclass
class Result:
    status: int
    output: bytes
    stderr: str
    error: str | None  # a violation, a child gone without closing, or a hang
    unread: int
    child_state: int


class Engine:
    """A region with the rings asked for, and runs of one child over it."""

    def __init__(
        self,
        capacity: int = 4096,
        input_ring: bool = True,
        output_ring: bool = True,
        sealed: bool = True,
    ):
        span = -(-(CONTROL + capacity) // PAGE) * PAGE
        in_offset = PAGE if input_ring else 0
        out_offset = PAGE + (span if input_ring else 0) if output_ring else 0
        size = PAGE + span * (input_ring + output_ring)
        self.fd = os.memfd_create("sluice-shm", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.ftruncate(self.fd, size)
        if sealed:
            fcntl.fcntl(
                self.fd,
                fcntl.F_ADD_SEALS,
                fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL,
            )
        self.mm = mmap.mmap(self.fd, size)
        self.capacity = capacity
        self.layout = (in_offset if input_ring else None, out_offset if output_ring else None)
        HEADER.pack_into(
            self.mm,
            0,
            b"SLUICESH",
            1,
            PAGE,
            size,
            input_ring | output_ring << 1,
            os.getpid(),
            in_offset,
            capacity if input_ring else 0,
            out_offset,
            capacity if output_ring else 0,
        )

    def close(self) -> None:
        os.close(self.fd)

    def header(self, offset: int, fmt: str, *values) -> None:
        """Overwrites header fields (to make a bad region)."""
        struct.pack_into(fmt, self.mm, offset, *values)

    def child_state(self) -> int:
        return struct.unpack_from("<I", self.mm, 64)[0]

    def abort(self) -> None:
        """What the engine does when it gives up: ABORTED, then every futex woken."""
        struct.pack_into("<I", self.mm, 68, ABORTED)
        for offset in self.layout:
            if offset is not None:
                for word in (256, 264):
                    _futex.wake(
                        ctypes.addressof(ctypes.c_uint32.from_buffer(self.mm, offset + word))
                    )

    def spawn(self, argv, preexec_fn=None) -> subprocess.Popen:
        env = child_env(SLUICE_SHM_FD=str(self.fd), SLUICE_SHM_VERSION="1")
        in_offset, out_offset = self.layout
        return subprocess.Popen(
            [str(a) for a in argv],
            pass_fds=(self.fd,),
            preexec_fn=preexec_fn,
            env=env,
            stdin=subprocess.PIPE if in_offset is None else subprocess.DEVNULL,
            stdout=subprocess.PIPE if out_offset is None else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def producer(self, proc) -> EngineProducer:
        return EngineProducer(self.mm, self.layout[0], self.capacity, lambda: proc.poll() is None)

    def consumer(self, proc) -> EngineConsumer:
        return EngineConsumer(self.mm, self.layout[1], self.capacity, lambda: proc.poll() is None)

    def run(
        self,
        argv,
        data: bytes,
        *,
        seed: int = 1,
        max_piece: int = 10000,
        feed_pause: float = 0.0,
        drain_pause: float = 0.0,
        timeout: float = 20.0,
    ) -> Result:
        """Runs a child over `data`, fed in pieces of random sizes (pausing `feed_pause` after
        each when asked), its output drained (pausing `drain_pause` after each read)."""
        proc = self.spawn(argv)
        errors: list = []
        output: list = []
        stderr: list = []
        broken_pipe: list = []
        rng = random.Random(seed)
        in_offset, out_offset = self.layout

        sink = self.producer(proc) if in_offset is not None else None

        def feed():
            try:
                for begin, end in _pieces(len(data), rng, max_piece):
                    piece = data[begin:end]
                    if sink is not None:
                        sink.write(piece)
                    else:
                        proc.stdin.write(piece)
                    if feed_pause:
                        if sink is not None:
                            sink.flush()  # the engine at the end of what it has to give
                        else:
                            proc.stdin.flush()
                        time.sleep(feed_pause)
                if sink is not None:
                    sink.close()
                else:
                    proc.stdin.close()
            except ChildGone:
                pass  # `unread` below tells
            except BrokenPipeError:
                broken_pipe.append(True)  # over a pipe the amount unread is unknown
            except Violation as e:
                errors.append(str(e))
                proc.kill()

        def drain():
            try:
                source = self.consumer(proc) if out_offset is not None else None
                while True:
                    piece = source.read() if source is not None else proc.stdout.read1(1 << 16)
                    if not piece:
                        return
                    output.append(piece)
                    if drain_pause:
                        time.sleep(drain_pause)
            except (Violation, ChildGone) as e:
                errors.append(str(e))
                proc.kill()

        threads = [
            threading.Thread(target=feed),
            threading.Thread(target=drain),
            threading.Thread(target=lambda: stderr.append(proc.stderr.read())),
        ]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        try:
            status = proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            status = None
        if status is None or any(t.is_alive() for t in threads):
            errors.append("hung")
            self.abort()
            proc.kill()
            status = proc.wait()
            for thread in threads:
                thread.join(5)
        return Result(
            status,
            b"".join(output),
            b"".join(stderr).decode(errors="replace"),
            errors[0] if errors else None,
            sink.unread() if sink is not None else -len(broken_pipe),
            self.child_state(),
        )


def _pieces(total: int, rng: random.Random, max_piece: int):
    start = 0
    while start < total:
        end = min(total, start + rng.randint(1, max_piece))
        yield start, end
        start = end


def records(count: int, max_len: int, seed: int) -> bytes:
    """Lines of random lengths from 0 to max_len, most short; some hold \\r; no final newline
    on the last."""
    rng = random.Random(seed)
    lines = []
    for _ in range(count):
        r = rng.random()
        n = rng.randint(0, max_len) if r < 0.02 else rng.randint(0, 80)
        line = bytes(rng.choice(b"abcdefgh \t\r\x0b\x0c") for _ in range(min(n, 200)))
        lines.append((line * (n // max(1, len(line)) + 1))[:n])
    return b"\n".join(lines)


@pytest.fixture
def engine_factory():
    engines = []

    def make(**kwargs) -> Engine:
        engines.append(Engine(**kwargs))
        return engines[-1]

    yield make
    for engine in engines:
        engine.close()


def ok(result: Result, expected: bytes | None = None) -> None:
    assert result.error is None, (result.error, result.stderr)
    assert result.status == 0, result.stderr
    assert result.unread == 0
    assert result.child_state == 2, "the child did not end DETACHED"
    if expected is not None:
        assert len(result.output) == len(expected)
        assert result.output == expected


# ------------------------------------------------------------------------------------------
# Copies through a 4 KiB ring: records from empty to twice the ring, wrapping constantly.


@pytest.mark.parametrize("scenario", ["copy", "lines"])
def test_conform_copies_exactly(engine_factory, scenario):
    data = records(3000, 9000, seed=1)
    result = engine_factory(capacity=4096).run([sys.executable, CONFORM, scenario], data)
    ok(result, data)


def test_iteration_and_mixed_reads(engine_factory):
    """Iteration, readline and read(n) share one buffer: mixing them loses nothing."""
    child = (
        "import sluice_shm, itertools\n"
        "ch = sluice_shm.open()\n"
        "it = iter(ch)\n"
        "for i in itertools.count():\n"
        "    if i % 3 == 0:\n"
        "        part = next(it, b'')\n"
        "    elif i % 3 == 1:\n"
        "        part = ch.readline()\n"
        "    else:\n"
        "        part = ch.read(i % 5000)\n"
        "    if not part and i % 3 != 2:\n"
        "        break\n"
        "    ch.write(part)\n"
        "ch.write(ch.read())\n"
        "ch.close()\n"
    )
    data = records(3000, 9000, seed=2)
    ok(engine_factory(capacity=4096).run([sys.executable, "-c", child], data), data)


def test_large_ring_and_huge_lines(engine_factory):
    data = records(2000, 500, seed=3) + b"\n" + b"x" * (3 << 20) + b"\n" + b"y" * 70000
    result = engine_factory(capacity=1 << 20).run(
        [sys.executable, CONFORM, "lines"], data, max_piece=1 << 21
    )
    ok(result, data)


@pytest.mark.parametrize(
    "scenario,feed_pause,drain_pause",
    [
        ("slow-reader", 0.0, 0.0),  # the child lags: the engine sleeps for space
        ("slow-writer", 0.0, 0.0),  # the child's output trickles: the engine sleeps for data
        ("copy", 0.002, 0.0),  # the engine produces slowly: the child sleeps for data
        ("copy", 0.0, 0.002),  # the engine consumes slowly: the child sleeps for space
    ],
)
def test_slow_sides(engine_factory, scenario, feed_pause, drain_pause):
    data = records(1500, 9000, seed=4)
    result = engine_factory(capacity=4096).run(
        [sys.executable, CONFORM, scenario],
        data,
        max_piece=20000,
        feed_pause=feed_pause,
        drain_pause=drain_pause,
    )
    ok(result, data)


@pytest.mark.parametrize("input_ring,output_ring", [(True, False), (False, True)])
@pytest.mark.parametrize("scenario", ["copy", "lines"])
def test_one_ring_and_stdio(engine_factory, input_ring, output_ring, scenario):
    data = records(2000, 9000, seed=5)
    engine = engine_factory(capacity=4096, input_ring=input_ring, output_ring=output_ring)
    ok(engine.run([sys.executable, CONFORM, scenario], data), data)


def test_empty_input(engine_factory):
    ok(engine_factory().run([sys.executable, CONFORM, "lines"], b""), b"")


def test_request_response_without_flush(engine_factory):
    """The engine sends one line and waits for the answer before the next. The child never
    flushes: the flush-before-sleep rule must deliver each answer when the child waits for
    input, or every round would cost a 200 ms timeout."""
    engine = engine_factory(capacity=4096)
    proc = engine.spawn(
        [
            sys.executable,
            "-c",
            "import sluice_shm\nch = sluice_shm.open()\nfor l in ch: ch.write(l)\n",
        ]
    )
    try:
        producer, consumer = engine.producer(proc), engine.consumer(proc)
        rounds = 100
        started = time.monotonic()
        for i in range(rounds):
            line = b"request %d\n" % i
            producer.write(line)
            producer.flush()
            got = b""
            while len(got) < len(line):
                got += consumer.read()
            assert got == line
        elapsed = time.monotonic() - started
        producer.close()
        assert consumer.read() == b""
        assert proc.wait(10) == 0
        assert elapsed < 0.02 * rounds, f"{rounds} rounds took {elapsed:.2f} s: wake-ups are missed"
    finally:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------------------------------------
# Ends that are not normal.


def test_child_dies_without_closing(engine_factory):
    data = records(5000, 200, seed=6)
    result = engine_factory(capacity=4096).run(
        [sys.executable, CONFORM, "die"], data, max_piece=4096
    )
    assert result.status == 7
    assert result.output == data[:1000]
    assert result.error == "the child exited without closing its output"
    assert result.unread > 0


def test_garbage_is_a_violation(engine_factory):
    data = records(5000, 200, seed=7)
    started = time.monotonic()
    result = engine_factory(capacity=4096).run([sys.executable, CONFORM, "garbage"], data)
    assert result.error is not None and "shm protocol violation" in result.error, result
    assert time.monotonic() - started < 5


def test_forgotten_close_still_delivers(engine_factory):
    """The atexit handler flushes and closes the output ring of a program that never closes."""
    data = records(500, 9000, seed=8)
    child = "import sluice_shm\nch = sluice_shm.open()\nch.write(ch.read())\n"
    ok(engine_factory(capacity=4096).run([sys.executable, "-c", child], data), data)


def test_engine_abort_ends_the_child(engine_factory):
    engine = engine_factory()
    proc = engine.spawn([sys.executable, CONFORM, "copy"])
    try:
        time.sleep(0.5)  # the child attaches and waits for input
        engine.abort()
        assert proc.wait(5) == 1
        assert "the engine aborted the task" in proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait()


def test_engine_gone_ends_the_child(engine_factory):
    """A child waiting on an engine that has exited notices at its next wait timeout."""
    stand_in = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    engine = engine_factory()
    engine.header(28, "<I", stand_in.pid)  # engine_pid: a process the test can end
    proc = engine.spawn([sys.executable, CONFORM, "copy"])
    try:
        time.sleep(0.5)
        stand_in.kill()
        stand_in.wait()
        assert proc.wait(5) == 1
        assert f"the engine (pid {stand_in.pid}) has exited" in proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait()


# ------------------------------------------------------------------------------------------
# Attaching.


def test_attach_marks_state_and_clears_environment(engine_factory):
    engine = engine_factory()
    child = (
        "import os, sys, sluice_shm\n"
        "ch = sluice_shm.open()\n"
        "assert ch.is_shm and sluice_shm.open() is ch\n"
        "print(sorted(k for k in os.environ if k.startswith('SLUICE_SHM')), file=sys.stderr)\n"
        "ch.close()\n"
    )
    result = engine.run([sys.executable, "-c", child], b"")
    ok(result, b"")
    assert result.stderr.strip() == "[]"


BAD_HEADERS = [
    ("magic", 0, "<8s", (b"SLUICESX",), "magic"),
    ("version", 8, "<I", (2,), "protocol version 2"),
    ("header_len", 12, "<I", (8192,), "header_len"),
    ("region_len", 16, "<Q", (1 << 30,), "region_len"),
    ("unknown ring bit", 24, "<I", (7,), "unknown ring bits"),
    ("engine_pid", 28, "<I", (0,), "engine_pid"),
    ("capacity not a power of two", 40, "<Q", (6000,), "not a power of two"),
    ("capacity below 4096", 40, "<Q", (2048,), "not a power of two"),
    ("ring past the end", 32, "<Q", (PAGE * 4,), "does not lie inside"),
    ("ring in the header", 48, "<Q", (0,), "does not lie inside"),
    ("misaligned ring", 32, "<Q", (PAGE + 8,), "does not lie inside"),
    ("overlapping rings", 48, "<Q", (PAGE + 1024,), "overlap"),
    ("attached already", 64, "<I", (1,), "already attached"),
]


@pytest.mark.parametrize(
    "field,offset,fmt,values,message", BAD_HEADERS, ids=[b[0] for b in BAD_HEADERS]
)
def test_bad_region_exits_2(engine_factory, field, offset, fmt, values, message):
    engine = engine_factory()
    engine.header(offset, fmt, *values)
    proc = engine.spawn([sys.executable, CONFORM, "copy"])
    _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert message in stderr.decode()


@pytest.mark.parametrize(
    "fd,version,message",
    [
        ("x", "1", "not a descriptor"),
        ("1", "1", "not a descriptor"),
        ("99", "1", "SLUICE_SHM_FD=99"),
        (None, "2", "version 2"),
    ],
)
def test_bad_environment_exits_2(engine_factory, fd, version, message):
    engine = engine_factory()
    env = child_env(SLUICE_SHM_FD=fd or str(engine.fd), SLUICE_SHM_VERSION=version)
    proc = subprocess.run(
        [sys.executable, CONFORM, "copy"],
        env=env,
        pass_fds=(engine.fd,),
        input=b"must not be read",
        capture_output=True,
        timeout=10,
    )
    assert proc.returncode == 2
    assert proc.stdout == b""
    assert message in proc.stderr.decode()


def test_other_architectures_refuse_to_attach(engine_factory):
    """Where plain loads and stores are not acquires and releases, shared memory is refused."""
    engine = engine_factory()
    child = "import platform, sluice_shm\nplatform.machine = lambda: 'aarch64'\nsluice_shm.open()\n"
    proc = engine.spawn([sys.executable, "-c", child])
    _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 2
    assert "x86-64" in stderr.decode()
    assert engine.child_state() == 0


# ------------------------------------------------------------------------------------------
# The examples: the same bytes over shared memory as over pipes.

TRICKY = (
    records(3000, 9000, seed=9)
    + b"\nword\rword\r\nvertical\x0btab form\x0cfeed\n\n\n  leading and trailing  \n"
    + b"long " * 20000
    + b"\nno final newline"
)


def over_pipes(argv, data: bytes) -> bytes:
    proc = subprocess.run(
        [str(a) for a in argv], input=data, capture_output=True, env=child_env(), timeout=60
    )
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout


@pytest.mark.parametrize(
    "argv",
    [
        [EXAMPLES / "wc_map.py"],
        [EXAMPLES / "grep_map.py", r"w[a-z]*d|\bf\w+|$"],
    ],
    ids=["wc_map", "grep_map"],
)
def test_mappers_same_over_shm_and_pipes(engine_factory, argv):
    expected = over_pipes([sys.executable, *argv], TRICKY)
    assert expected
    result = engine_factory(capacity=4096).run([sys.executable, *argv], TRICKY)
    ok(result, expected)


def test_reducer_same_over_shm_and_pipes(engine_factory):
    pairs = over_pipes([sys.executable, EXAMPLES / "wc_map.py"], TRICKY)
    data = b"".join(sorted(pairs.splitlines(True)))
    expected = over_pipes([sys.executable, EXAMPLES / "wc_reduce.py"], data)
    counts = {}
    for line in pairs.splitlines():
        word = line.rsplit(b"\t", 1)[0]
        counts[word] = counts.get(word, 0) + 1
    assert expected == b"".join(b"%s\t%d\n" % (w, counts[w]) for w in sorted(counts))
    ok(
        engine_factory(capacity=4096).run([sys.executable, EXAMPLES / "wc_reduce.py"], data),
        expected,
    )


def test_wc_map_tokenizes_like_string_tokenizer():
    out = over_pipes(
        [sys.executable, EXAMPLES / "wc_map.py"], b"a\x0bb  c\td\re\x0cf\x1cg\xc3\xa9\nlast"
    )
    assert out == b"a\x0bb\t1\nc\t1\nd\t1\ne\t1\nf\x1cg\xc3\xa9\t1\nlast\t1\n"


def test_signals_interrupt_a_waiting_child(engine_factory):
    """SIGINT while the child sleeps in FUTEX_WAIT reaches Python as KeyboardInterrupt."""
    engine = engine_factory()
    # A child inherits an ignored SIGINT (any command started with `&` from a script, a CI
    # runner's included), and Python then leaves it ignored: give it the default disposition,
    # for which Python installs its KeyboardInterrupt handler.
    proc = engine.spawn(
        [sys.executable, CONFORM, "copy"],
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(5) != 0
        assert "KeyboardInterrupt" in proc.stderr.read().decode()
    finally:
        proc.kill()
        proc.wait()
