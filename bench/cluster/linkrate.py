#!/usr/bin/env python3
"""TCP throughput between two of bench/cluster.sh's hosts, with plain sockets.

    linkrate.py server ADDR PORT [TIMEOUT]   accept one connection, read it to the end, print
                                             "BYTES SECONDS" (from the first byte to the end)
    linkrate.py client ADDR PORT SECONDS     connect and send zeros for SECONDS

The server gives up (exit 1) after TIMEOUT seconds (default 60) without a finished connection.
"""
import socket
import sys
import time


def server(addr, port, timeout):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((addr, port))
        s.listen(1)
        s.settimeout(timeout)
        conn, _ = s.accept()
        conn.settimeout(timeout)
        with conn:
            total, start = 0, None
            buf = bytearray(1 << 20)
            while True:
                n = conn.recv_into(buf)
                if n == 0:
                    break
                if start is None:
                    start = time.monotonic()
                total += n
    print(total, time.monotonic() - start if start else 0.0)


def client(addr, port, seconds):
    buf = bytes(1 << 20)
    deadline = None
    for _ in range(100):  # the server may not listen yet: up to 10 s of retries
        try:
            conn = socket.create_connection((addr, port), timeout=10)
            break
        except OSError:
            time.sleep(0.1)
    else:
        sys.exit(f"linkrate.py: cannot connect to {addr}:{port}")
    with conn:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            conn.sendall(buf)


if __name__ == "__main__":
    mode, addr, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "server":
        server(addr, port, float(sys.argv[4]) if len(sys.argv) > 4 else 60.0)
    elif mode == "client":
        client(addr, port, float(sys.argv[4]))
    else:
        sys.exit(__doc__)
