#!/usr/bin/env python3
"""Mapper for -reducer aggregate: the key prefix names the aggregator."""
import sys

for line in sys.stdin:
    words = line.split()
    if not words:
        continue
    print(f"LongValueSum:lines\t1")
    print(f"LongValueMax:longest line\t{len(line.rstrip())}")
    print(f"LongValueMin:shortest word\t{min(len(w) for w in words)}")
    for w in words:
        print(f"LongValueSum:word {w.lower()}\t1")
        print(f"UniqValueCount:distinct first letters\t{w[0].lower()}")
        print(f"ValueHistogram:word lengths\t{len(w)}")
    print(f"StringValueMax:max first word\t{words[0]}")
