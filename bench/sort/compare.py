#!/usr/bin/env python3
"""Checks that two directories of sorted SequenceFiles hold the same records, part file by
part file: the same keys in the same order and, within a run of equal keys, the same records
(Hadoop leaves the order of equal keys to its sort). Reads uncompressed SequenceFiles only.

Usage: compare.py DIR_A DIR_B; prints the number of records and exits 1 on a difference."""
import os
import struct
import sys


def vint(b, i):
    first = struct.unpack_from("b", b, i)[0]
    if first >= -112:
        return first, i + 1
    negative = first < -120
    n = (-119 - first) if negative else (-111 - first)
    v = 0
    for k in range(1, n):
        v = (v << 8) | b[i + k]
    return (~v if negative else v), i + n


def text(b, i):
    n, i = vint(b, i)
    return b[i:i + n], i + n


def records(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[:4] != b"SEQ\x06":
        sys.exit(f"{path}: not a version 6 SequenceFile")
    i = 4
    key_class, i = text(b, i)
    value_class, i = text(b, i)
    if b[i] or b[i + 1]:
        sys.exit(f"{path}: compressed")
    i += 2
    (pairs,) = struct.unpack_from(">i", b, i)
    i += 4
    for _ in range(2 * pairs):
        _, i = text(b, i)
    i += 16
    out = []
    while i < len(b):
        (length,) = struct.unpack_from(">i", b, i)
        i += 4
        if length == -1:
            i += 16
            continue
        (key_length,) = struct.unpack_from(">i", b, i)
        i += 4
        out.append((b[i:i + key_length], b[i + key_length:i + length]))
        i += length
    return (key_class, value_class), out


def canonical(recs):
    out, start = [], 0
    while start < len(recs):
        end = start
        while end < len(recs) and recs[end][0] == recs[start][0]:
            end += 1
        out.extend(sorted(recs[start:end]))
        start = end
    return out


def parts(d):
    return sorted(n for n in os.listdir(d) if n.startswith("part-"))


def main():
    a, b = sys.argv[1], sys.argv[2]
    if parts(a) != parts(b):
        sys.exit(f"part files differ: {parts(a)} vs {parts(b)}")
    total = 0
    for name in parts(a):
        ca, ra = records(os.path.join(a, name))
        cb, rb = records(os.path.join(b, name))
        if ca != cb:
            sys.exit(f"{name}: classes {ca} vs {cb}")
        if [r[0] for r in ra] != [r[0] for r in rb] or canonical(ra) != canonical(rb):
            sys.exit(f"{name}: records differ")
        total += len(ra)
    print(total)


if __name__ == "__main__":
    main()
