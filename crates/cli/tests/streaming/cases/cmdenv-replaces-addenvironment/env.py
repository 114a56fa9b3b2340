#!/usr/bin/env python3
"""Prints, after reading its input, the variables that -cmdenv and stream.addenvironment could
set, and stream_addenvironment itself, '<unset>' for those that are not set."""
import os
import sys

for _ in sys.stdin.buffer:
    pass
for name in ["FROMD", "A", "B", "stream_addenvironment"]:
    print(f"{name}={os.environ.get(name, '<unset>')}")
