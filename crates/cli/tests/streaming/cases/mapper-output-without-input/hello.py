#!/usr/bin/env python3
"""Prints a line naming its split whatever it is given, and how many bytes it read."""
import os
import sys

env = os.environ.get
data = sys.stdin.buffer.read()
name = os.path.basename(env("mapreduce_map_input_file", "?"))
print(f"{name} start={env('mapreduce_map_input_start')} read={len(data)}")
