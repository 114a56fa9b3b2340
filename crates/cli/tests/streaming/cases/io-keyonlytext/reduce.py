#!/usr/bin/env python3
"""Echoes what it gets (only keys, with -io keyonlytext), uppercased, to show the framing."""
import sys

for line in sys.stdin:
    print(line.rstrip("\n").upper())
