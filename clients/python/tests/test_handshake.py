"""The handshake under Hadoop Streaming (docs/shm-protocol.md, "Setting up under Hadoop
Streaming: the handshake"): the test plays sluice's plugin on a child's stdin and stdout.

The child offers (the hello line on stdout) only when its environment says the plugin feeds
it; answered with records or the end of stdin it stays on pipes and reads the first line again
as its first record; answered with an attach line it opens the region by its /proc path and
moves the data through the rings of test_shm's engine; an attach line it cannot follow makes it
exit with status 2.
"""

from __future__ import annotations

import io
import os
import select
import subprocess
import sys
import threading
import time

import pytest

# The engine written from the protocol document, and the client's own modules.
from test_shm import (  # noqa: E402  (test_shm puts the client on sys.path)
    BAD_HEADERS,
    CLIENT,
    CONFORM,
    ChildGone,
    Engine,
    Violation,
    child_env,
    records,
)

from sluice_shm import Channel, _handshake  # noqa: E402

HELLO = b"\x01sluice-shm hello 1\n"
ATTACH = b"\x01sluice-shm attach "
OURS = "org.sluice.hadoop.streaming.ShmInputWriter"
STOCK = "org.apache.hadoop.streaming.io.TextInputWriter"

# The job settings the handshake looks at, as Hadoop exports them.
SETTINGS = (
    "mapreduce_task_ismap",
    "stream_map_input_writer_class",
    "stream_reduce_input_writer_class",
    "stream_combine_streamprocessor",
)
MAPPER = {"mapreduce_task_ismap": "true", "stream_map_input_writer_class": OURS}
REDUCE = "stream_reduce_input_writer_class"

on_x86_64_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
    reason="the shared-memory client runs on x86-64 Linux only",
)

# An echo program over the client, reading in the way its argument names.
ECHO = """
import sys, sluice_shm
mode = sys.argv[1]
ch = sluice_shm.open()
if mode == "iter":
    for line in ch:
        ch.write(line)
elif mode == "readline":
    for line in iter(ch.readline, b""):
        ch.write(line)
elif mode == "read":
    for part in iter(lambda: ch.read(7), b""):
        ch.write(part)
elif mode == "readall":
    ch.write(ch.read())
elif mode == "mixed":
    ch.write(ch.read(3))
    ch.write(ch.readline())
    for line in ch:
        ch.write(line)
        break
    ch.write(ch.read())
ch.close()
"""
MODES = ["iter", "readline", "read", "readall", "mixed"]

# Whether the child's mmap keeps no descriptor of its own (Python 3.13 and later).
UNTRACKED = sys.version_info >= (3, 13)

WAIT = 10.0  # the longest any step may take before the test calls the child hung


def hadoop_env(settings: dict) -> dict:
    """The child's environment: the test's, without SLUICE_SHM_*, PYTHONUNBUFFERED or job
    settings of its own, plus `settings`."""
    env = child_env()
    for name in SETTINGS:
        env.pop(name, None)
    # sys.stdout buffered, as a program's under Hadoop is (a pipe): the hello must not depend
    # on an unbuffered stdout to come first.
    env.pop("PYTHONUNBUFFERED", None)
    env.update(settings)
    return env


def spawn(settings: dict, mode: str = "iter", argv=None) -> subprocess.Popen:
    return subprocess.Popen(
        argv or [sys.executable, "-c", ECHO, mode],
        env=hadoop_env(settings),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_some(proc: subprocess.Popen, want: int, timeout: float = WAIT) -> bytes:
    """Up to `want` bytes of the child's stdout: fewer only at its end or after `timeout`.

    os.read on the descriptor, so that nothing beyond `want` is taken into a buffer that
    communicate() would not see."""
    fd = proc.stdout.fileno()
    got = b""
    deadline = time.monotonic() + timeout
    while len(got) < want:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            break
        piece = os.read(fd, want - len(got))
        if not piece:
            break
        got += piece
    return got


def expect_hello(proc: subprocess.Popen) -> None:
    """What the plugin waits for before it writes anything on the child's stdin: the child must
    offer without input."""
    first = read_some(proc, len(HELLO))
    if first != HELLO:
        proc.kill()
        _, stderr = proc.communicate()
        pytest.fail(f"expected the hello line, got {first!r}; stderr: {stderr.decode()}")


def finish(proc: subprocess.Popen, data: bytes = b"") -> tuple[int, bytes, str]:
    """Sends `data` on stdin, closes it, and returns the status, the rest of stdout and
    stderr."""
    try:
        stdout, stderr = proc.communicate(data, timeout=WAIT * 3)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the child hung")
    return proc.returncode, stdout, stderr.decode(errors="replace")


DATA = records(3000, 9000, seed=31) + b"\nlast line without newline"
# A first record that begins like the handshake's lines and then differs.
LOOKALIKE = HELLO + b"\x01sluice-shm attac\n" + b"\x01sluice-shm attach" + b"\n" + DATA


# ------------------------------------------------------------------------------------------
# Whether the child offers: each row of the environment rule.

RULE = [
    # (settings, offers)
    (MAPPER, True),
    ({**MAPPER, REDUCE: STOCK}, True),
    # A combiner in a map task is fed by the reduce side's writer.
    ({**MAPPER, "stream_combine_streamprocessor": "cat"}, False),
    ({**MAPPER, "stream_combine_streamprocessor": "cat", REDUCE: STOCK}, False),
    ({**MAPPER, "stream_combine_streamprocessor": "cat", REDUCE: OURS}, True),
    ({**MAPPER, "stream_combine_streamprocessor": ""}, True),
    ({"mapreduce_task_ismap": "true", "stream_map_input_writer_class": STOCK}, False),
    ({"mapreduce_task_ismap": "true", "stream_reduce_input_writer_class": OURS}, False),
    ({"mapreduce_task_ismap": "true", "stream_map_input_writer_class": OURS + " "}, False),
    ({"mapreduce_task_ismap": "false", "stream_reduce_input_writer_class": OURS}, True),
    ({"mapreduce_task_ismap": "false", "stream_map_input_writer_class": OURS}, False),
    (
        {
            "mapreduce_task_ismap": "false",
            "stream_map_input_writer_class": OURS,
            "stream_reduce_input_writer_class": STOCK,
        },
        False,
    ),
    # A reducer's own combiner setting does not matter.
    (
        {
            "mapreduce_task_ismap": "false",
            "stream_reduce_input_writer_class": OURS,
            "stream_combine_streamprocessor": "cat",
        },
        True,
    ),
    # Unset or anything else: both writers must be ours.
    ({"stream_map_input_writer_class": OURS, "stream_reduce_input_writer_class": OURS}, True),
    ({"stream_map_input_writer_class": OURS}, False),
    ({"stream_reduce_input_writer_class": OURS}, False),
    (
        {
            "mapreduce_task_ismap": "TRUE",
            "stream_map_input_writer_class": OURS,
            "stream_reduce_input_writer_class": OURS,
        },
        True,
    ),
    ({"mapreduce_task_ismap": "TRUE", "stream_map_input_writer_class": OURS}, False),
    ({"mapreduce_task_ismap": "", "stream_reduce_input_writer_class": OURS}, False),
    ({}, False),
]
_SHORT = dict(zip(SETTINGS, ("ismap", "map", "reduce", "combiner")))
_VALUES = {OURS: "ours", STOCK: "stock", OURS + " ": "ours+space", "": "empty"}
RULE_IDS = [
    ",".join(f"{_SHORT[k]}={_VALUES.get(v, v)}" for k, v in settings.items())
    + ("->offer" if offers else "->none")
    for settings, offers in RULE
]


@pytest.mark.parametrize("settings,offers", RULE, ids=RULE_IDS)
def test_rule_in_process(settings, offers):
    assert _handshake.offers(settings) is offers


@on_x86_64_linux
@pytest.mark.parametrize("settings,offers", RULE, ids=RULE_IDS)
def test_rule_in_a_child(settings, offers):
    """A child offers exactly where the rule says; either way its output is its input, after
    the hello when it offered."""
    proc = spawn(settings)
    if offers:
        expect_hello(proc)
    status, stdout, stderr = finish(proc, LOOKALIKE)
    assert status == 0, stderr
    assert stdout == LOOKALIKE, "no offer expected" if not offers else "output differs"
    assert stderr == ""


# ------------------------------------------------------------------------------------------
# Offered, answered with records or nothing: pipes, the first line read again.


@on_x86_64_linux
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "data",
    [DATA, LOOKALIKE, b"x", b"\n", b"\x01", ATTACH[:-1], b"\x01sluice-shm attach 1 /p"],
    ids=["records", "lookalike", "one byte", "newline", "x01", "prefix cut", "no newline"],
)
def test_answered_with_records(mode, data):
    """Every way of reading sees the first line, then the rest: stdout is the hello and the
    input, byte for byte."""
    proc = spawn(MAPPER, mode)
    expect_hello(proc)
    status, stdout, stderr = finish(proc, data)
    assert status == 0, stderr
    assert stdout == data
    assert stderr == ""


@on_x86_64_linux
@pytest.mark.parametrize("mode", MODES)
def test_answered_with_the_end_of_stdin(mode):
    proc = spawn(MAPPER, mode)
    expect_hello(proc)
    status, stdout, stderr = finish(proc)
    assert status == 0, stderr
    assert stdout == b""
    assert stderr == ""


@on_x86_64_linux
def test_first_line_in_pieces():
    """The engine's records may arrive in pieces; the first one is still read whole, and the
    pieces that came during the handshake are not read twice."""
    proc = spawn(MAPPER, "iter")
    expect_hello(proc)
    for piece in (b"\x01", b"sluice-shm", b" att", b"ach-not\n", b"second\n"):
        proc.stdin.write(piece)
        proc.stdin.flush()
        time.sleep(0.05)
    status, stdout, stderr = finish(proc, b"third")
    assert status == 0, stderr
    assert stdout == b"\x01sluice-shm attach-not\nsecond\nthird"


HUGE = b"x" * (3 << 20) + b"\nsecond\n" + b"y" * 100 + b"\n"


@on_x86_64_linux
@pytest.mark.parametrize("offered", [False, True], ids=["no offer", "offered"])
@pytest.mark.parametrize("mode", MODES)
def test_huge_first_line(offered, mode):
    """A 3 MB first line comes out whole and quickly, with or without a handshake."""
    proc = spawn(MAPPER if offered else {}, mode)
    started = time.monotonic()
    if offered:
        expect_hello(proc)
    status, stdout, stderr = finish(proc, HUGE)
    elapsed = time.monotonic() - started
    assert status == 0, stderr
    assert len(stdout) == len(HUGE)
    assert stdout == HUGE
    assert elapsed < 5, f"{elapsed:.1f} s for 3 MB"


@on_x86_64_linux
def test_hello_comes_before_buffered_output():
    """Output printed before open() and still in sys.stdout's buffer follows the hello."""
    child = "import sluice_shm\nprint('early')\nsluice_shm.open()\n"
    proc = spawn(MAPPER, argv=[sys.executable, "-c", child])
    expect_hello(proc)
    status, stdout, stderr = finish(proc, b"input\n")
    assert status == 0, stderr
    assert stdout == b"early\n"


@on_x86_64_linux
def test_sluice_shm_fd_wins_over_the_handshake(monkeypatch):
    """With SLUICE_SHM_FD set (sluice's own engine) nothing is offered on stdout, whatever the
    job settings say."""
    for name, value in {**MAPPER, "stream_reduce_input_writer_class": OURS}.items():
        monkeypatch.setenv(name, value)
    engine = Engine(capacity=4096, input_ring=True, output_ring=False)
    try:
        result = engine.run([sys.executable, "-c", ECHO, "iter"], DATA)
    finally:
        engine.close()
    assert result.error is None and result.status == 0, (result.error, result.stderr)
    assert result.output == DATA
    assert result.child_state == 2


@on_x86_64_linux
def test_no_offer_where_attaching_cannot_work():
    """On a platform without shared memory an accepted offer could only fail the task."""
    child = (
        "import platform, sluice_shm\n"
        "platform.machine = lambda: 'aarch64'\n"
        "ch = sluice_shm.open()\n"
        "ch.write(ch.read())\n"
    )
    proc = spawn(MAPPER, argv=[sys.executable, "-c", child])
    status, stdout, stderr = finish(proc, DATA)
    assert status == 0, stderr
    assert stdout == DATA


# ------------------------------------------------------------------------------------------
# Offered, answered with an attach line: the rings.


def region_fds(pid: int) -> list:
    """The flags of each descriptor process `pid` holds on a sluice-shm memfd."""
    flags = []
    for name in os.listdir(f"/proc/{pid}/fd"):
        try:
            if not os.readlink(f"/proc/{pid}/fd/{name}").startswith("/memfd:sluice-shm"):
                continue
            with open(f"/proc/{pid}/fdinfo/{name}") as info:
                fields = dict(line.split(":", 1) for line in info if ":" in line)
        except OSError:
            continue
        flags.append(int(fields["flags"].strip(), 8))
    return flags


def attach_line(fd: int, version: bytes = b"1") -> bytes:
    return ATTACH + version + b" " + f"/proc/{os.getpid()}/fd/{fd}".encode() + b"\n"


@on_x86_64_linux
@pytest.mark.parametrize("output_ring", [True, False], ids=["both rings", "output on stdout"])
@pytest.mark.parametrize("mode", MODES)
def test_attach_moves_the_data_through_the_rings(mode, output_ring):
    engine = Engine(capacity=4096, input_ring=True, output_ring=output_ring)
    # The path names a descriptor of ours that the child did not inherit (close_fds); it is
    # closed once the child has attached, as the plugin does.
    path_fd = os.dup(engine.fd)
    proc = spawn(MAPPER, mode)
    try:
        expect_hello(proc)
        assert engine.child_state() == 0
        proc.stdin.write(attach_line(path_fd))
        proc.stdin.flush()
        deadline = time.monotonic() + WAIT
        while engine.child_state() == 0 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        assert engine.child_state() == 1, proc.stderr.read1(4096) if proc.poll() else "no attach"
        os.close(path_fd)
        path_fd = None
        # The child closed the descriptor it opened. Before 3.13 the mmap object keeps a
        # duplicate of its own, close-on-exec.
        held = region_fds(proc.pid)
        assert len(held) == (0 if UNTRACKED else 1), held
        assert all(f & os.O_CLOEXEC for f in held), held

        output, errors = [], []
        producer = engine.producer(proc)

        def feed():
            try:
                for start in range(0, len(DATA), 5000):
                    producer.write(DATA[start : start + 5000])
                producer.close()
            except (Violation, ChildGone) as e:
                errors.append(str(e))
            proc.stdin.close()  # the end of the task

        def drain():
            try:
                if output_ring:
                    consumer = engine.consumer(proc)
                    for piece in iter(consumer.read, b""):
                        output.append(piece)
                else:
                    for piece in iter(lambda: proc.stdout.read1(1 << 16), b""):
                        output.append(piece)
            except (Violation, ChildGone) as e:
                errors.append(str(e))

        threads = [threading.Thread(target=feed), threading.Thread(target=drain)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(WAIT * 2)
        assert not any(t.is_alive() for t in threads), "hung"
        status = proc.wait(WAIT)
        stray = proc.stdout.read()
        stderr = proc.stderr.read().decode()
        assert errors == []
        assert status == 0, stderr
        assert b"".join(output) == DATA
        assert stray == b"", "bytes on stdout besides the hello and the data"
        assert producer.unread() == 0
        assert engine.child_state() == 2, "the child did not end DETACHED"
    finally:
        if proc.poll() is None:
            engine.abort()
            proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
        if path_fd is not None:
            os.close(path_fd)
        engine.close()


def refused(engine: Engine, line: bytes) -> str:
    """Offers, answers with `line`, and returns the child's stderr after checking that it
    exited with status 2 without attaching or writing anything more."""
    state = engine.child_state()
    proc = spawn(MAPPER, "iter")
    expect_hello(proc)
    # One write: the child reads what follows the line in the same piece.
    os.write(proc.stdin.fileno(), line)
    status, stdout, stderr = finish(proc)
    assert status == 2, stderr
    assert stdout == b""
    assert engine.child_state() == state
    assert stderr.startswith("sluice_shm: cannot attach to the shared-memory region: ")
    return stderr


@pytest.fixture
def engine():
    made = Engine(capacity=4096)
    yield made
    made.close()


@on_x86_64_linux
@pytest.mark.parametrize(
    "line,message",
    [
        (ATTACH + b"1 /nonexistent/region\n", "cannot open the region /nonexistent/region"),
        (ATTACH + b"1 /dev/null\n", "/dev/null is not a shared-memory region"),
        (ATTACH + b"1 /proc/self/fd/99\n", "cannot open the region /proc/self/fd/99"),
        (ATTACH + b"2 /dev/null\n", "protocol version 2"),
        (ATTACH + b"1\n", "malformed attach line"),
        (ATTACH + b"1 \n", "names no region"),
        (ATTACH + b"1 /dev/null\0x\n", "holds a NUL byte"),
    ],
    ids=["missing", "not a region", "closed descriptor", "version", "malformed", "no path", "NUL"],
)
def test_attach_line_it_cannot_follow(engine, line, message):
    assert message in refused(engine, line)


@on_x86_64_linux
def test_bytes_after_the_attach_line(engine):
    stderr = refused(engine, attach_line(engine.fd) + b"a record\n")
    assert "9 bytes followed the attach line" in stderr


@on_x86_64_linux
def test_region_that_could_still_shrink():
    """A memory file not sealed against resizing could shrink under the mapping (SIGBUS)."""
    engine = Engine(capacity=4096, sealed=False)
    try:
        stderr = refused(engine, attach_line(engine.fd))
        assert "is not sealed against resizing" in stderr
    finally:
        engine.close()


@on_x86_64_linux
@pytest.mark.parametrize(
    "field,offset,fmt,values,message", BAD_HEADERS, ids=[b[0] for b in BAD_HEADERS]
)
def test_bad_region_by_path(engine, field, offset, fmt, values, message):
    """The region named by the attach line gets the checks SLUICE_SHM_FD's gets."""
    engine.header(offset, fmt, *values)
    stderr = refused(engine, attach_line(engine.fd))
    assert message in stderr


@on_x86_64_linux
def test_conform_child_offers():
    """tests/shm/conform.py, the cross-client conformance child, offers as any program does."""
    proc = spawn(MAPPER, argv=[sys.executable, CONFORM, "copy"])
    expect_hello(proc)
    status, stdout, stderr = finish(proc, DATA)
    assert (status, stdout) == (0, DATA), stderr


# ------------------------------------------------------------------------------------------
# Reading the first line, in-process.


class Pieces:
    """Stands for sys.stdin.buffer: read1 hands out `data` in pieces of `size` and counts the
    calls."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.calls = memoryview(data), size, 0

    def read1(self, limit: int) -> bytes:
        self.calls += 1
        n = min(limit, self.size)
        piece, self.data = bytes(self.data[:n]), self.data[n:]
        return piece


@pytest.mark.parametrize("size", [1, 2, 5, 64, 1 << 16])
def test_first_line_split_exactly(size):
    """An attach line is cut at its b"\\n"; anything else is left to the input, whole: what
    was taken, then what stdin still holds."""
    line = ATTACH + b"1 /proc/1/fd/3\n"
    assert _handshake._first_line(Pieces(line, size)) == (line, b"")
    assert _handshake._first_line(Pieces(line + b"more", 1 << 20)) == (line, b"more")
    for data in (LOOKALIKE, b"", b"\x01", ATTACH, ATTACH + b"1 /no/newline", HUGE):
        stdin = Pieces(data, size)
        attach, taken = _handshake._first_line(stdin)
        assert attach is None
        assert taken + bytes(stdin.data) == data


def test_long_first_record_costs_one_read():
    """Deciding that a first line is a record does not read it to its end."""
    stdin = Pieces(HUGE, 1 << 16)
    assert _handshake._first_line(stdin) == (None, HUGE[: 1 << 16])
    assert stdin.calls == 1


@pytest.mark.parametrize("size", [1, 3, 4096, 1 << 20])
def test_pending_input_comes_first(monkeypatch, size):
    """Bytes the handshake took are the start of the input for every way of reading."""
    # Short enough for pieces of one byte; the long line spans the bytes taken and the rest.
    data = LOOKALIKE[:3000] + b"\n" + b"x" * 70_000 + b"\nend"
    for take in (1, 30, 40_000):
        for how in ("lines", "readline", "read", "readall"):
            stdin = Pieces(data[take:], size)
            monkeypatch.setattr(sys, "stdin", type("Stdin", (), {"buffer": stdin})())
            monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(io.BytesIO()))
            ch = Channel(None, None, data[:take])
            if how == "lines":
                got = b"".join(ch)
            elif how == "readline":
                got = b"".join(iter(ch.readline, b""))
            elif how == "read":
                got = b"".join(iter(lambda: ch.read(1000), b""))
            else:
                got = ch.read()
            assert got == data, (take, how)


def test_client_path():
    """The tests exercise this checkout's client."""
    assert _handshake.__file__.startswith(str(CLIENT))
