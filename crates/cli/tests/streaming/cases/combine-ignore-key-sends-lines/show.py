#!/usr/bin/env python3
"""Prints one line per map task: how many tasks there are and every byte it read, so that a key
sent before a line would show."""
import os
import sys

print(f"of={os.environ.get('mapreduce_job_maps')} records={sys.stdin.buffer.read()!r}")
