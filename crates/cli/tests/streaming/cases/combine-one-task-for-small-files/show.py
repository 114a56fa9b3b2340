#!/usr/bin/env python3
"""Prints one line per map task: the range its environment names, how many tasks there are, and
every record it read with its key, so that which files a task read, in what order, and their
offsets show."""
import os
import sys

env = os.environ.get
name = os.path.basename(env("mapreduce_map_input_file", "?"))
print(
    f"{name} start={env('mapreduce_map_input_start')} length={env('mapreduce_map_input_length')}"
    f" task={env('mapreduce_task_partition')} of={env('mapreduce_job_maps')}"
    f" records={sys.stdin.buffer.read()!r}"
)
