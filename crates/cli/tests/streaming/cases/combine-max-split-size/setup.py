#!/usr/bin/env python3
"""Writes files whose chunks start and end inside lines: 100 bytes (cut 40 + 30 + 30: a rest
between one and two maximums is halved), 10, 50 (25 + 25), empty, 39 and 41 bytes."""
import os

os.makedirs('input', exist_ok=True)


def lines(prefix, size):
    out = b''
    n = 0
    while len(out) < size:
        out += f'{prefix}{n} {"x" * (n % 5)}\n'.encode()
        n += 1
    return out[:size]


for name, size in [('a', 100), ('b', 10), ('c', 50), ('d', 0), ('e', 39), ('f', 41)]:
    with open(f'input/{name}.txt', 'wb') as f:
        f.write(lines(name, size))
