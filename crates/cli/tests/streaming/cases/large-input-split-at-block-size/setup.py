#!/usr/bin/env python3
"""Writes input/big.txt, 40 MB (two local-FS blocks of 32 MB), and a small file."""
import os
os.makedirs('input', exist_ok=True)
with open('input/big.txt', 'w') as f:
    n = 0
    size = 0
    while size < 40 * 1024 * 1024:
        line = f'{n} ' + 'abcdefghij' * (n % 17) + '\n'
        f.write(line)
        size += len(line)
        n += 1
with open('input/small.txt', 'w') as f:
    f.write('small\n')
