#!/usr/bin/env python3
"""-io rawbytes mapper: each input record is a 4-byte big-endian length and the bytes, for
the key (a LongWritable: 8 bytes, the line's offset) and the value (a Text serialized as a
Writable: a vint length, then the bytes). Emits word -> offset as raw bytes."""
import struct
import sys

inp, out = sys.stdin.buffer, sys.stdout.buffer


def read_field():
    head = inp.read(4)
    if not head:
        return None
    (n,) = struct.unpack(">i", head)
    return inp.read(n)


def vint(data):
    first = struct.unpack(">b", data[:1])[0]
    if first >= -112:
        return first, data[1:]
    negative = first < -120
    size = (-119 - first) if negative else (-111 - first)
    value = int.from_bytes(data[1:size], "big")
    return (~value if negative else value), data[size:]


def write_field(b):
    out.write(struct.pack(">i", len(b)) + b)


while True:
    key = read_field()
    if key is None:
        break
    value = read_field()
    (offset,) = struct.unpack(">q", key)
    length, text = vint(value)
    assert length == len(text), (length, text)
    for word in text.split():
        write_field(word)
        write_field(str(offset).encode())
