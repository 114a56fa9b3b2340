#!/usr/bin/env python3
"""Shows exactly which bytes each input record gives the mapper: key = split-local record
number, value = the record's repr."""
import sys

for n, line in enumerate(sys.stdin.buffer):
    print(f"{n:03d}\t{line!r}")
