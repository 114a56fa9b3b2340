#!/usr/bin/env python3
"""-io typedbytes mapper: reads (key, value) pairs of typed bytes (the key is the line offset,
a long; the value the line, a string) and emits (word: string, 1: int) pairs."""
import struct
import sys

inp, out = sys.stdin.buffer, sys.stdout.buffer


def read():
    code = inp.read(1)
    if not code:
        return None
    code = code[0]
    if code == 3:
        return struct.unpack(">i", inp.read(4))[0]
    if code == 4:
        return struct.unpack(">q", inp.read(8))[0]
    if code == 7:
        (n,) = struct.unpack(">i", inp.read(4))
        return inp.read(n).decode("utf-8")
    raise SystemExit(f"unexpected typed bytes code {code}")


def write_string(s):
    b = s.encode("utf-8")
    out.write(b"\x07" + struct.pack(">i", len(b)) + b)


while True:
    key = read()
    if key is None:
        break
    line = read()
    assert isinstance(key, int) and isinstance(line, str)
    for word in line.split():
        write_string(word)
        out.write(b"\x03" + struct.pack(">i", 1))
