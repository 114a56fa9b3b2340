"""The system calls the protocol needs and the standard library lacks: waiting on and waking a
futex, and a full memory barrier. They go through ctypes.

Only x86-64 Linux gets here (`_region.attach` refuses to attach anywhere else): the system
call number is x86-64's, and `full_barrier` relies on what the kernel's futex code does.
"""

from __future__ import annotations

import ctypes
import errno
import os

_SYS_FUTEX = 202  # x86-64, asm/unistd_64.h
_FUTEX_WAIT = 0
_FUTEX_WAKE = 1
_FUTEX_PRIVATE_FLAG = 128
_INT_MAX = 0x7FFF_FFFF

#: Longest single wait, in nanoseconds. The protocol bounds every wait (100 ms to 1 s) so that
#: a dead engine is noticed; 200 ms is what the C client uses too.
WAIT_NS = 200_000_000


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


_libc = ctypes.CDLL(None, use_errno=True)
_syscall = _libc.syscall
_syscall.restype = ctypes.c_long
# futex(uaddr, op, val, timeout, uaddr2, val3). Declaring the types lets ctypes pass Python
# ints (addresses, u32 values) without wrapping each call's arguments by hand.
_syscall.argtypes = (
    ctypes.c_long,
    ctypes.c_void_p,
    ctypes.c_int,
    ctypes.c_uint32,
    ctypes.c_void_p,
    ctypes.c_void_p,
    ctypes.c_uint32,
)

# A relative timeout (FUTEX_WAIT measures it from the call), built once.
_timeout = _Timespec(0, WAIT_NS)
_timeout_addr = ctypes.addressof(_timeout)

# A word of this process's own memory that nobody ever waits on: the target of full_barrier.
_scratch = ctypes.c_uint32(0)
_scratch_addr = ctypes.addressof(_scratch)


def _error(what: str) -> OSError:
    err = ctypes.get_errno()
    return OSError(err, f"futex {what}: {os.strerror(err)}")


def wait(addr: int, seen: int) -> bool:
    """Sleeps while the shared 32-bit word at `addr` holds `seen`, for at most WAIT_NS.

    Returns True if the wait timed out, False if it ended otherwise: woken, interrupted by a
    signal, or the word no longer held `seen`. Each of those sends the caller back to look at
    the ring again, so they need not be told apart.
    """
    if _syscall(_SYS_FUTEX, addr, _FUTEX_WAIT, seen, _timeout_addr, None, 0) == 0:
        return False
    err = ctypes.get_errno()
    if err == errno.ETIMEDOUT:
        return True
    if err in (errno.EAGAIN, errno.EINTR):
        return False
    raise _error("wait")


def wake(addr: int) -> None:
    """Wakes every process sleeping on the shared 32-bit word at `addr`.

    FUTEX_WAKE, not FUTEX_WAKE_PRIVATE: the sleeper is another process.
    """
    if _syscall(_SYS_FUTEX, addr, _FUTEX_WAKE, _INT_MAX, None, None, 0) < 0:
        raise _error("wake")


def full_barrier() -> None:
    """Orders every earlier store of this process before every later load (a seq_cst fence).

    Python cannot emit MFENCE or a locked instruction, and x86-64 lets a load pass an earlier
    store to another address (the store buffer). A system call that executes a full barrier
    does it instead: FUTEX_WAKE always executes smp_mb() (barrier "B" of kernel/futex's
    ordering comment, in futex_hb_waiters_pending) before it looks for waiters, whatever the
    word. The word here is private to this process and has no waiters, so the call wakes
    nobody. This is the kernel's behaviour rather than its documented ABI; the bounded wait
    (WAIT_NS) is the safety net if it ever changed: a lost wake-up would cost one timeout, not
    a hang.
    """
    _syscall(_SYS_FUTEX, _scratch_addr, _FUTEX_WAKE | _FUTEX_PRIVATE_FLAG, 1, None, None, 0)
