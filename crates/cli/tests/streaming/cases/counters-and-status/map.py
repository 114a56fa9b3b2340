#!/usr/bin/env python3
"""Counts through stderr: reporter:counter:GROUP,NAME,AMOUNT and reporter:status:TEXT lines
are taken by the framework, not shown as stderr."""
import sys

for line in sys.stdin:
    words = line.split()
    sys.stderr.write(f"reporter:counter:Sluice Test,lines,1\n")
    sys.stderr.write(f"reporter:counter:Sluice Test,words,{len(words)}\n")
    if not words:
        sys.stderr.write("reporter:counter:Sluice Test,empty lines,1\n")
    sys.stderr.write("reporter:status:mapping\n")
    for w in words:
        print(f"{w}\t1")
sys.stderr.write("reporter:counter:Other,map tasks,1\n")
sys.stderr.write("reporter:counter:Other,bad line\n")
sys.stderr.write("plain stderr line from the mapper\n")
