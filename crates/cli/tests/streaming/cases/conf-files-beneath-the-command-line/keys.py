#!/usr/bin/env python3
"""Prints the keys of the -conf files as the mapper's environment has them."""
import os
import sys

for _ in sys.stdin:
    pass
for name in ["locked_key", "locked_but_given_key", "open_key", "given_key", "first_only_key",
             "mapreduce_job_name", "mapred_job_name", "mapreduce_job_reduces"]:
    print(f"{name}\t{os.environ.get(name, '(unset)')}")
