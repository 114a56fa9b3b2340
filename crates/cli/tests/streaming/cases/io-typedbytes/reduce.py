#!/usr/bin/env python3
"""-io typedbytes reducer: sums the ints of each word; emits (word: string, total: long) and
(word + "/half": string, total / 2: double)."""
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
    if code == 7:
        (n,) = struct.unpack(">i", inp.read(4))
        return inp.read(n).decode("utf-8")
    raise SystemExit(f"unexpected typed bytes code {code}")


def write_string(s):
    b = s.encode("utf-8")
    out.write(b"\x07" + struct.pack(">i", len(b)) + b)


def flush(word, total):
    write_string(word)
    out.write(b"\x04" + struct.pack(">q", total))
    write_string(word + "/half")
    out.write(b"\x06" + struct.pack(">d", total / 2))


current, total = None, 0
while True:
    word = read()
    if word is None:
        break
    count = read()
    if word != current and current is not None:
        flush(current, total)
        total = 0
    current = word
    total += count
if current is not None:
    flush(current, total)
