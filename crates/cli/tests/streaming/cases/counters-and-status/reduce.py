#!/usr/bin/env python3
"""Counts distinct words as a counter and passes its input through."""
import sys

last = None
for line in sys.stdin:
    key = line.split("\t", 1)[0]
    if key != last:
        sys.stderr.write("reporter:counter:Sluice Test,distinct words,1\n")
        last = key
    sys.stdout.write(line)
sys.stderr.write("reporter:counter:Other,reduce tasks,1\n")
sys.stderr.write("reporter:status:done\n")
