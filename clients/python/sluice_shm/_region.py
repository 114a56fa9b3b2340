"""The shared region as the child sees it (docs/shm-protocol.md, "Memory layout"), and attaching
to it ("Setting up", step 3).

The shared words are ctypes integers laid over the mapping with `from_buffer`. Reading or
assigning `.value` is one aligned 8- or 4-byte load or store: CPython's ctypes copies a
fixed-size integer with memcpy, which compilers emit as a single MOV (checked in the
disassembly of _ctypes' Q_get/Q_set). On x86-64 (TSO) such a load has acquire and such a store
release semantics, which is what the protocol asks for every counter and flag. The one ordering
TSO does not give, a store followed by a load of another word, is obtained with
`_futex.full_barrier` where the sleep handshake needs it. That is why `attach` refuses to run
anywhere but 64-bit x86-64 Linux.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
import platform
import stat
import struct
import sys
from collections.abc import MutableMapping

from . import _futex

ENV_FD = "SLUICE_SHM_FD"
ENV_VERSION = "SLUICE_SHM_VERSION"

MAGIC = b"SLUICESH"
VERSION = 1
HEADER_LEN = 4096
MIN_CAPACITY = 4096

# The header's fields up to engine_state, at offset 0: magic, version, header_len, region_len,
# rings, engine_pid, input offset and capacity, output offset and capacity.
_HEADER = struct.Struct("<8sIIQIIQQQQ")
_H_CHILD_STATE = 64
_H_ENGINE_STATE = 68
# The seals the engine puts on its memory file (Linux's values, named by fcntl on Linux).
_F_GET_SEALS = getattr(fcntl, "F_GET_SEALS", 1034)
_SEALS_NEEDED = (
    getattr(fcntl, "F_SEAL_SHRINK", 0x2)
    | getattr(fcntl, "F_SEAL_GROW", 0x4)
    | getattr(fcntl, "F_SEAL_SEAL", 0x1)
)

RING_INPUT = 1
RING_OUTPUT = 2

CHILD_NOT_ATTACHED = 0
CHILD_ATTACHED = 1
CHILD_DETACHED = 2
ENGINE_ABORTED = 1

# A ring's control block: three 128-byte lines, then the data.
_R_TAIL = 0
_R_CLOSED = 8
_R_HEAD = 128
_R_DATA_SEQ = 256
_R_CONSUMER_SLEEPING = 260
_R_SPACE_SEQ = 264
_R_PRODUCER_SLEEPING = 268
R_DATA = 384

# Before Python 3.13, mmap keeps a duplicate of the descriptor for as long as the mapping
# lives (close-on-exec, so no child inherits it); from 3.13, trackfd=False asks it not to, and
# only the mapping remains. The mapping's size() and resize(), which need it, are never used.
_UNTRACKED = {"trackfd": False} if sys.version_info >= (3, 13) else {}

_u64 = ctypes.c_uint64.from_buffer
_u32 = ctypes.c_uint32.from_buffer


class AttachError(Exception):
    """The region named by SLUICE_SHM_FD or by the handshake's attach line cannot be used, or
    the handshake itself failed; the message says why."""


class Ring:
    """One ring's shared words, and where its data lies in the mapping."""

    __slots__ = (
        "tail",
        "closed",
        "head",
        "data_seq",
        "consumer_sleeping",
        "space_seq",
        "producer_sleeping",
        "data_seq_addr",
        "space_seq_addr",
        "data",
        "capacity",
    )

    def __init__(self, mm: mmap.mmap, offset: int, capacity: int) -> None:
        self.tail = _u64(mm, offset + _R_TAIL)
        self.closed = _u32(mm, offset + _R_CLOSED)
        self.head = _u64(mm, offset + _R_HEAD)
        self.data_seq = _u32(mm, offset + _R_DATA_SEQ)
        self.consumer_sleeping = _u32(mm, offset + _R_CONSUMER_SLEEPING)
        self.space_seq = _u32(mm, offset + _R_SPACE_SEQ)
        self.producer_sleeping = _u32(mm, offset + _R_PRODUCER_SLEEPING)
        self.data_seq_addr = ctypes.addressof(self.data_seq)
        self.space_seq_addr = ctypes.addressof(self.space_seq)
        #: Index of the first data byte in the mapping.
        self.data = offset + R_DATA
        self.capacity = capacity


class Region:
    """An attached region: the mapping, the engine's process id, the state words and the rings
    in use (None for a direction that goes through stdin or stdout).

    The mapping stays until the process exits. Unmapping it would leave the ctypes views above
    dangling (mmap refuses to close while they exist), and a child that has closed its channel
    is about to exit anyway.
    """

    __slots__ = ("mm", "engine_pid", "child_state", "engine_state", "input", "output")

    def __init__(self, mm: mmap.mmap, engine_pid: int, input: Ring | None, output: Ring | None):
        self.mm = mm
        self.engine_pid = engine_pid
        self.child_state = _u32(mm, _H_CHILD_STATE)
        self.engine_state = _u32(mm, _H_ENGINE_STATE)
        self.input = input
        self.output = output

    def detach(self) -> None:
        """Marks the child DETACHED: it has closed its rings and is about to exit."""
        self.child_state.value = CHILD_DETACHED
        _futex.wake(ctypes.addressof(self.child_state))


def unsupported_platform() -> str | None:
    """Why this Python cannot use shared memory, or None if it can (64-bit x86-64 Linux)."""
    machine = platform.machine()
    if machine != "x86_64" or struct.calcsize("P") != 8 or not sys.platform.startswith("linux"):
        return (
            f"this Python client supports shared memory only on 64-bit x86-64 Linux, not "
            f"{sys.platform} {machine} with {8 * struct.calcsize('P')}-bit Python: it relies on "
            f"x86-64's ordering of plain loads and stores (run the job without the shm settings)"
        )
    return None


def _check_platform() -> None:
    reason = unsupported_platform()
    if reason is not None:
        raise AttachError(reason)


def _check_ring(name: str, offset: int, capacity: int, region_len: int) -> None:
    if capacity < MIN_CAPACITY or capacity & (capacity - 1):
        raise AttachError(
            f"the {name} ring's capacity {capacity} is not a power of two of at least "
            f"{MIN_CAPACITY}"
        )
    # 128 keeps every shared word naturally aligned and each control line on its own 128
    # bytes; the engine puts rings on page boundaries, which satisfies it.
    if offset < HEADER_LEN or offset % 128 or offset + R_DATA + capacity > region_len:
        raise AttachError(
            f"the {name} ring (offset {offset}, capacity {capacity}) does not lie inside the "
            f"region of {region_len} bytes"
        )


def attach(environ: MutableMapping[str, str]) -> Region:
    """Attaches to the region whose descriptor `environ` names (SLUICE_SHM_FD, "Setting up")
    and marks the child ATTACHED.

    Also closes the descriptor and removes SLUICE_SHM_FD and SLUICE_SHM_VERSION from
    `environ` (os.environ), as the C client does, so that programs this one starts neither
    attach to the same region nor inherit a stale descriptor.

    Raises AttachError, saying why, if the region cannot be used.
    """
    fd_text = environ[ENV_FD]
    _check_platform()
    if not (fd_text.isascii() and fd_text.isdigit()) or int(fd_text) < 3:
        # 0, 1 and 2 are the standard streams, which a direction without a ring still uses.
        raise AttachError(f"{ENV_FD}={fd_text} is not a descriptor number")
    fd = int(fd_text)
    version = environ.get(ENV_VERSION)
    if version is not None and version != str(VERSION):
        raise AttachError(
            f"the engine speaks protocol version {version}; this client speaks version {VERSION}"
        )
    region = _attach_fd(fd, f"{ENV_FD}={fd}")
    environ.pop(ENV_FD, None)
    environ.pop(ENV_VERSION, None)
    return region


def attach_path(path: bytes) -> Region:
    """Attaches to the region at `path`, the /proc/<engine pid>/fd/<n> the engine's attach
    line names (the handshake under Hadoop Streaming), and marks the child ATTACHED.

    The descriptor opened here is closed once the region is mapped: the engine closes its own
    after our attach, and from then on only the two mappings remain.

    Raises AttachError, saying why, if the region cannot be opened or used.
    """
    _check_platform()
    name = os.fsdecode(path)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        raise AttachError(f"cannot open the region {name}: {e.strerror}") from None
    return _attach_fd(fd, name)


def _attach_fd(fd: int, name: str) -> Region:
    """Maps the region open on `fd`, checks its header ("Setting up", step 3) and marks the
    child ATTACHED. Closes `fd` whether or not it succeeds; `name` says in errors which
    descriptor or path it was.
    """
    try:
        try:
            st = os.fstat(fd)
        except OSError as e:
            raise AttachError(f"{name}: {e.strerror}") from None
        if not stat.S_ISREG(st.st_mode) or st.st_size < HEADER_LEN:
            raise AttachError(f"{name} is not a shared-memory region ({st.st_size} bytes)")
        region_len = st.st_size
        # The engine seals its memory file against resizing before it starts us: a file that
        # could still shrink under the mapping would make a later access fault (SIGBUS).
        try:
            seals = fcntl.fcntl(fd, _F_GET_SEALS)
        except OSError as e:
            raise AttachError(f"{name}: cannot read its seals: {e.strerror}") from None
        if seals & _SEALS_NEEDED != _SEALS_NEEDED:
            raise AttachError(f"{name} is not sealed against resizing (seals {seals:#x})")
        try:
            # MAP_POPULATE (Python 3.10 and later): map every page now rather than fault each
            # in.
            flags = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
            mm = mmap.mmap(fd, region_len, flags, mmap.PROT_READ | mmap.PROT_WRITE, **_UNTRACKED)
        except OSError as e:
            raise AttachError(f"mapping the region: {e.strerror}") from None
    finally:
        # Once mapped, the descriptor serves nothing (on failure neither: the program exits),
        # and it would keep the region open by a path.
        try:
            os.close(fd)
        except OSError:
            pass  # fstat has already said what is wrong with it

    # The engine wrote the header before starting us, so plain reads see it. The fields are
    # read once: what is checked is what is used.
    (
        magic,
        header_version,
        header_len,
        header_region_len,
        rings,
        engine_pid,
        in_offset,
        in_capacity,
        out_offset,
        out_capacity,
    ) = _HEADER.unpack_from(mm, 0)
    if magic != MAGIC:
        raise AttachError(f"the region does not start with the magic {MAGIC.decode()}")
    if header_version != VERSION:
        raise AttachError(
            f"the engine speaks protocol version {header_version}; this client speaks "
            f"version {VERSION}"
        )
    if header_len != HEADER_LEN:
        raise AttachError(f"header_len is {header_len}, not {HEADER_LEN}")
    if header_region_len != region_len:
        raise AttachError(f"region_len is {header_region_len} but the region is {region_len} bytes")
    if rings & ~(RING_INPUT | RING_OUTPUT):
        raise AttachError(f"unknown ring bits {rings:#x}")
    if engine_pid == 0 or engine_pid > 0x7FFF_FFFF:
        raise AttachError(f"engine_pid {engine_pid} is not a process id")
    if rings & RING_INPUT:
        _check_ring("input", in_offset, in_capacity, region_len)
    if rings & RING_OUTPUT:
        _check_ring("output", out_offset, out_capacity, region_len)
    if (
        rings == RING_INPUT | RING_OUTPUT
        and in_offset + R_DATA + in_capacity > out_offset
        and out_offset + R_DATA + out_capacity > in_offset
    ):
        raise AttachError("the input and output rings overlap")

    region = Region(
        mm,
        engine_pid,
        Ring(mm, in_offset, in_capacity) if rings & RING_INPUT else None,
        Ring(mm, out_offset, out_capacity) if rings & RING_OUTPUT else None,
    )
    # Only one process may attach: every process a job's shell script starts inherits
    # SLUICE_SHM_FD, and a second reader or writer would interleave with us. Python has no
    # compare-and-swap, so this is a load then a store; it catches a second attach that comes
    # later, not two racing to the same microsecond.
    state = region.child_state.value
    if state != CHILD_NOT_ATTACHED:
        raise AttachError(
            f"another process has already attached to the region (child_state {state})"
        )
    # A plain store is a release on x86-64: our reads of the header come before it.
    region.child_state.value = CHILD_ATTACHED
    _futex.wake(ctypes.addressof(region.child_state))
    return region
