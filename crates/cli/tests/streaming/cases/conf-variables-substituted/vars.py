#!/usr/bin/env python3
"""Prints the job settings whose values hold ${...} variables, as the mapper's environment
has them. What differs between the two systems' runs is shown by name: the task id (checked
to be the task's own) and the scratch directory the harness gives each as hadoop.tmp.dir."""
import os
import sys

for _ in sys.stdin:
    pass
tmp = os.environ["hadoop_tmp_dir"]
for name in sorted(n for n in os.environ if n.startswith(("my_", "site_", "MY_"))):
    value = os.environ[name]
    if name == "my_task":
        value = "the task's id" if value == os.environ.get("mapreduce_task_id") else value
    print(f"{name}\t{value.replace(tmp, '<hadoop.tmp.dir>')}")
