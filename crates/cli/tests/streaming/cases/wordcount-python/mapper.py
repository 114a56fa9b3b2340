#!/usr/bin/env python3
"""Word count mapper: one `word<TAB>1` line per whitespace-separated word."""
import sys

for line in sys.stdin:
    for word in line.split():
        print(f"{word}\t1")
