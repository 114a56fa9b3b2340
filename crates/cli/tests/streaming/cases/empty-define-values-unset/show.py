#!/usr/bin/env python3
"""Passes its lines through and prints which of the emptied keys its environment has."""
import os
import sys

for line in sys.stdin:
    sys.stdout.write(line)
for name in ["foo_bar", "from_file", "twice_set", "mapreduce_output_textoutputformat_separator"]:
    print(f"{name}\t{os.environ.get(name, '(unset)')!r}")
