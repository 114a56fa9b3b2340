#!/usr/bin/env python3
"""Emits word<TAB>1 for every word of the values (the keys are byte offsets)."""
import sys

for line in sys.stdin:
    _, _, value = line.rstrip('\n').partition('\t')
    for word in value.split():
        print(f'{word}\t1')
