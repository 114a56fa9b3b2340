#!/usr/bin/env python3
"""Prints one line per map task: the split it was given (as its environment says) and the
records it read, keys included, so that split boundaries, offsets and task numbers show."""
import os
import sys

data = sys.stdin.buffer.read()
env = os.environ.get
name = os.path.basename(env("mapreduce_map_input_file", "?"))
print(
    f"{name} start={env('mapreduce_map_input_start')} length={env('mapreduce_map_input_length')}"
    f" task={env('mapreduce_task_partition')} of={env('mapreduce_job_maps')}"
    f" n={env('mapreduce_input_lineinputformat_linespermap')}"
    f" old={env('mapred_line_input_format_linespermap')} records={data!r}"
)
