#!/usr/bin/env python3
"""Passes its lines through (split by the job at their first space) and prints the values of
the -conf file's keys as its environment has them, blanks shown."""
import os
import sys

for line in sys.stdin:
    sys.stdout.write(line)
for name in ["padded_key", "newline_key", "stream_map_output_field_separator",
             "mapreduce_job_reduces"]:
    print(f"{name}={os.environ.get(name, '(unset)')!r}")
