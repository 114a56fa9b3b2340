"""sluice_shm: the Python client of the sluice shared-memory streaming protocol, version 1
(docs/shm-protocol.md in the sluice repository).

A streaming mapper or reducer reads its input and writes its output through one channel::

    import sluice_shm

    with sluice_shm.open() as ch:
        for line in ch:
            ch.write(line.upper())

Under sluice with shared memory enabled (SLUICE_SHM_FD is set), the channel moves the bytes
through the rings of the shared region. Under Hadoop Streaming with sluice's plugin feeding the
program (its job settings, exported to the environment, say so), the channel first offers the
handshake: a hello line on stdout, answered on stdin either by a line naming the region, which
it then attaches to, or by the first record, in which case it stays on stdin and stdout and
that record is the first input the program reads. Anywhere else (a terminal, a plain pipe,
Hadoop Streaming without the plugin) it reads stdin and writes stdout. Either way the program
sees exactly the bytes a pipe would carry, so the same script works in all these places.

Shared memory is supported on 64-bit x86-64 Linux only (see the README for why); elsewhere a
program run with SLUICE_SHM_FD set exits with status 2, one under the plugin makes no offer,
and both work over stdio otherwise.

Modules: _channel (the API), _handshake (the offer under Hadoop Streaming), _rings (moving
bytes, sleeping and waking), _region (the layout and attaching), _futex (the system calls).
"""

from ._channel import Channel, open
from ._errors import ProtocolError

__all__ = ["Channel", "ProtocolError", "open"]
__version__ = "0.1.0"
