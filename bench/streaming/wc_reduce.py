#!/usr/bin/env python3
"""Word count reducer as Hadoop Streaming users write it: sums runs of equal keys."""
import sys

current, total = None, 0
for line in sys.stdin:
    word, _, count = line.rstrip("\n").partition("\t")
    if word != current:
        if current is not None:
            print(f"{current}\t{total}")
        current, total = word, 0
    total += int(count)
if current is not None:
    print(f"{current}\t{total}")
