#!/usr/bin/env python3
"""Writes input.txt: about 1 MB of lines with distinct keys in scrambled order, so that the
compressed part files span several of Hadoop's 256 KiB lz4/snappy blocks."""
with open('input.txt', 'w') as f:
    for i in range(40000):
        k = (i * 7919) % 40000
        f.write(f'key{k:05d}\t{"value " * (k % 7)}{k * 31 % 1000}\n')
