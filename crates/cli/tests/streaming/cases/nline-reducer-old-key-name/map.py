#!/usr/bin/env python3
"""Emits each record as `line<TAB>offset task-start=... of=...`: which task read which line."""
import os
import sys

env = os.environ.get
task = f"task-start={env('mapreduce_map_input_start')} of={env('mapreduce_job_maps')}"
task += f" n={env('mapreduce_input_lineinputformat_linespermap')}"
task += f" old={env('mapred_line_input_format_linespermap')}"
for record in sys.stdin:
    offset, line = record.rstrip("\n").split("\t", 1)
    print(f"{line}\t{offset} {task}")
