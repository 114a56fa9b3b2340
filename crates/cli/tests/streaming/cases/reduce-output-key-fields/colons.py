#!/usr/bin/env python3
"""Emits colon-separated lines with 1, 2 and 3 fields per input record."""
import sys
for line in sys.stdin:
    k, v = line.rstrip('\n').split('\t', 1)
    print(f'{k}:{v}:x:y')
    print(f'{k}:{v}')
    print(f'{k}')
