#!/usr/bin/env python3
"""-io rawbytes reducer: keys and values arrive as length-prefixed bytes (no Writable framing,
they are BytesWritable). Emits each word with its offsets joined by commas."""
import struct
import sys

inp, out = sys.stdin.buffer, sys.stdout.buffer


def read_field():
    head = inp.read(4)
    if not head:
        return None
    (n,) = struct.unpack(">i", head)
    return inp.read(n)


def write_field(b):
    out.write(struct.pack(">i", len(b)) + b)


groups = {}
order = []
while True:
    key = read_field()
    if key is None:
        break
    value = read_field()
    if key not in groups:
        groups[key] = []
        order.append(key)
    groups[key].append(int(value))
for key in order:
    write_field(key)
    write_field(",".join(str(v) for v in sorted(groups[key])).encode())
