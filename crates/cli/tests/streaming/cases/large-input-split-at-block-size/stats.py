#!/usr/bin/env python3
"""Per split: record count, first and last record numbers, bytes."""
import sys
n = 0
first = last = None
size = 0
for line in sys.stdin.buffer:
    fields = line.split(b' ', 1)
    if first is None:
        first = fields[0]
    last = fields[0]
    n += 1
    size += len(line)
print(f'records={n}\tfirst={first!r} last={last!r} bytes={size}')
