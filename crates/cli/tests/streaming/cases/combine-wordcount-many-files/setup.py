#!/usr/bin/env python3
"""Writes input/: 300 small files of words (a few hundred bytes each, two empty), in a
directory, so that Hadoop lists them in its own order."""
import os

os.makedirs('input', exist_ok=True)
words = ['river', 'sluice', 'gate', 'mill', 'weir', 'lock', 'canal', 'dam', 'flow', 'bank']
for i in range(300):
    with open(f'input/part{i:03d}.txt', 'w') as f:
        if i % 150 == 7:
            continue
        for line in range(i % 9 + 1):
            f.write(' '.join(words[(i * 7 + line * 3 + k) % len(words)] for k in range(line % 5 + 1)))
            f.write('\n')
