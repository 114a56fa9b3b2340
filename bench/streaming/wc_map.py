#!/usr/bin/env python3
"""Word count mapper as Hadoop Streaming users write it: one `word<TAB>1` line per word."""
import sys

for line in sys.stdin:
    for word in line.split():
        print(f"{word}\t1")
