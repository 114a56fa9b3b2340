#!/usr/bin/env python3
"""Prints the commands of the job as the programs see them in their environment
(stream_map_streamprocessor, ...), after reading its input, in name order (a combiner must keep keys sorted)."""
import os
import sys

role = sys.argv[1]
for line in sys.stdin:
    if role == "reduce":
        sys.stdout.write(line)
for name in ("stream_combine_streamprocessor", "stream_map_streamprocessor",
             "stream_reduce_streamprocessor"):
    print(f"{role}.{name}\t{os.environ.get(name, '(unset)')!r}")
