#!/usr/bin/env python3
"""Maximum temperature per year with itertools.groupby over the sorted input."""
import itertools
import sys
rows = (line.rstrip('\n').split('\t') for line in sys.stdin)
for year, group in itertools.groupby(rows, key=lambda r: r[0]):
    temps = [int(r[1]) for r in group]
    print(f'{year}\t{max(temps)}\t{min(temps)}\t{len(temps)}')
