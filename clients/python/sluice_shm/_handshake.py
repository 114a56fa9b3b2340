"""The handshake that sets the rings up under Hadoop Streaming (docs/shm-protocol.md, "Setting
up under Hadoop Streaming: the handshake").

Hadoop starts the child before sluice's plugin runs, so the engine cannot hand it a descriptor.
Instead the child offers with the hello line on its stdout, and the first line of its stdin
answers: either an attach line naming the region by a /proc/<engine pid>/fd/<n> path, or the
first record, in which case the child stays on pipes and that record is read again as input.

Nothing here touches shared memory until an attach line arrives, so deciding whether to offer
costs a few dictionary lookups.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._region import Region

#: The line the child writes to its stdout to offer shared memory (`1` is the version).
HELLO = b"\x01sluice-shm hello 1\n"
#: How the engine's attach line begins; the rest is `<version> <path>\n`.
ATTACH_PREFIX = b"\x01sluice-shm attach "
#: The plugin's input writer: only a child it feeds may offer.
WRITER_CLASS = "org.sluice.hadoop.streaming.ShmInputWriter"

# Most bytes taken from stdin at a time while looking for the first line; what is taken beyond
# that line is handed to the channel as the start of the input, never lost.
_READ_CHUNK = 256 * 1024


def offers(environ: Mapping[str, str]) -> bool:
    """Whether a child with environment `environ` should offer: the plugin's writer feeds it.

    Hadoop exports every job setting to the child, dots turned to underscores. A combiner runs
    inside a map task with the reduce side's writer, and its environment cannot be told from
    the mapper's; so in a map task with a combiner both writers must be the plugin's.
    """

    def ours(name: str) -> bool:
        return environ.get(name) == WRITER_CLASS

    is_map = environ.get("mapreduce_task_ismap")
    if is_map == "true":
        combiner = environ.get("stream_combine_streamprocessor")
        return ours("stream_map_input_writer_class") and (
            not combiner or ours("stream_reduce_input_writer_class")
        )
    if is_map == "false":
        return ours("stream_reduce_input_writer_class")
    return ours("stream_map_input_writer_class") and ours("stream_reduce_input_writer_class")


def offer(stdin) -> tuple[Region | None, bytes]:
    """Offers the handshake and follows the answer.

    Writes the hello line to descriptor 1, then reads the first line of `stdin` (a binary
    stream with read1, normally sys.stdin.buffer). Returns the attached region and b"" if that
    line is an attach line; otherwise None and every byte taken from stdin, which the caller
    must treat as the start of the input.

    Raises AttachError (from _region), saying why, if the hello cannot be written, stdin cannot
    be read, or the attach line cannot be followed: the protocol then wants the reason on
    stderr and exit status 2.
    """
    from ._region import AttachError

    # Straight to the descriptor, past sys.stdout's buffer: output the program printed before
    # opening the channel and that still sits there then follows the hello. Ahead of it, it
    # would make the engine see no offer, and the late hello would land in the job's output.
    try:
        hello = memoryview(HELLO)
        while hello:
            hello = hello[os.write(1, hello) :]
    except OSError as e:
        raise AttachError(f"writing the handshake to stdout: {e.strerror}") from None
    try:
        line, rest = _first_line(stdin)
    except OSError as e:
        raise AttachError(f"reading the handshake from stdin: {e.strerror}") from None
    if line is None:
        return None, rest
    if rest:
        # The engine writes nothing after the attach line (its input goes through the ring):
        # bytes here mean the two sides disagree about what stdin carries.
        raise AttachError(
            f"shm protocol violation: {len(rest)} bytes followed the attach line on stdin"
        )
    return _follow(line), b""


def _first_line(stdin) -> tuple[bytes | None, bytes]:
    """Reads stdin until it can tell whether the input starts with an attach line.

    Returns (the attach line, the bytes read after it), or (None, every byte read) if the input
    starts otherwise or ends first. Reading stops as soon as the first bytes differ from
    ATTACH_PREFIX, so a long first record costs one read, not a scan to its end; bytes are
    taken in chunks and kept, never one at a time.
    """
    data = b""
    # While the bytes read so far could still begin the prefix: fewer than 21 bytes, so
    # growing them is cheap. A pipe may deliver the prefix in pieces.
    while True:
        chunk = stdin.read1(_READ_CHUNK)
        if not chunk:
            return None, data
        data += chunk
        if not ATTACH_PREFIX.startswith(data[: len(ATTACH_PREFIX)]):
            return None, data
        if len(data) >= len(ATTACH_PREFIX):
            break
    # An attach line: read to its b"\n". The pieces are joined once, which stays linear
    # whatever the line's length.
    pieces = [data]
    while b"\n" not in pieces[-1]:
        chunk = stdin.read1(_READ_CHUNK)
        if not chunk:
            # The engine ends its attach line with b"\n"; a last line without one is input
            # that merely looks like it, as the Rust client also reads it.
            return None, b"".join(pieces)
        pieces.append(chunk)
    data = b"".join(pieces)
    end = data.index(b"\n") + 1
    return data[:end], data[end:]


def _follow(line: bytes) -> Region:
    """Attaches to the region the attach line `line` (with its b"\\n") names."""
    from ._region import VERSION, AttachError, attach_path

    # `<version> <path>`: the path is everything after the first space, spaces included.
    body = line[len(ATTACH_PREFIX) : -1]
    # os.open would raise ValueError, not OSError, for a NUL in the path.
    if b"\0" in body:
        raise AttachError("malformed attach line: it holds a NUL byte")
    version, sep, path = body.partition(b" ")
    if not sep:
        raise AttachError(f"malformed attach line {line!r}")
    if version != str(VERSION).encode():
        raise AttachError(
            f"the engine speaks protocol version {version.decode(errors='replace')}; this "
            f"client speaks version {VERSION}"
        )
    if not path:
        raise AttachError("the attach line names no region")
    return attach_path(path)
