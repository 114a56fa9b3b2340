#!/usr/bin/env python3
"""Writes input/: an empty file, and a file of one 40 MB line that two splits share (local
blocks are 32 MB: the second split starts inside the line and gets no record)."""
import os

os.makedirs('input', exist_ok=True)
open('input/empty.txt', 'w').close()
with open('input/one-line.txt', 'w') as f:
    f.write('x' * (40 << 20) + '\n')
