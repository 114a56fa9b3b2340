#!/usr/bin/env python3
"""Sums the counts of each word (its lines arrive together)."""
import sys

current, total = None, 0
for line in sys.stdin:
    word, count = line.rstrip('\n').split('\t')
    if word != current:
        if current is not None:
            print(f'{current}\t{total}')
        current, total = word, 0
    total += int(count)
if current is not None:
    print(f'{current}\t{total}')
