#!/usr/bin/env python3
"""Prints, after reading its input, the environment variables a streaming program gets from
-cmdenv and from the job configuration (dots and other non-alphanumerics become '_'). Only
values that are deterministic in local mode; input file names are reduced to their base name."""
import os
import sys

role = sys.argv[1]
lines = 0
for line in sys.stdin.buffer:
    lines += 1
    if role == "reduce":
        sys.stdout.buffer.write(line)
names = [
    "FOO", "SPACED", "EQUALS", "HADOOP_ROOT_LOGGER", "my_custom_key", "my_custom_key_2",
    "mapreduce_job_reduces", "mapreduce_job_maps", "mapreduce_task_ismap",
    "mapreduce_task_partition", "mapred_task_is_map", "mapred_task_partition",
    "mapreduce_map_input_start", "mapreduce_map_input_length",
    "stream_map_output_field_separator", "stream_non_zero_exit_is_failure",
]
part = os.environ.get("mapreduce_task_partition", "?")
for name in names:
    value = os.environ.get(name)
    shown = "(unset)" if value is None else repr(value)
    print(f"{role}-{part}.{name}\t{shown}")
for name in ("mapreduce_map_input_file", "map_input_file"):
    if name in os.environ:
        print(f"{role}-{part}.{name}\t.../{os.path.basename(os.environ[name])}")
print(f"{role}-{part}.lines\t{lines}")
