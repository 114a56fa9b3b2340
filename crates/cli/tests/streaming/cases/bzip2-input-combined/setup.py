#!/usr/bin/env python3
"""Writes input/lines.txt.bz2: about 700 kB of numbered lines of varied lengths (empty ones,
some longer than a bzip2 block, ended by \\n, \\r\\n or a lone \\r) compressed with 100 kB
blocks, and input/two-streams.bz2: two such streams one after the other, as pbzip2 and `cat`
make them."""
import bz2
import os
import random

rng = random.Random(17)


def text(lines):
    out = []
    for n in range(lines):
        kind = rng.random()
        if kind < 0.0006:
            body = 'long' + 'xyzw' * rng.randrange(30_000, 60_000)
        elif kind < 0.05:
            body = ''
        else:
            body = ' '.join(rng.choice(['map', 'reduce', 'split', 'block', 'bzip2', str(n)])
                            for _ in range(rng.randrange(1, 20)))
        end = rng.choices(['\n', '\r\n', '\r'], [90, 8, 2])[0]
        out.append(f'{n} {body}{end}')
    return ''.join(out).encode()


os.makedirs('input', exist_ok=True)
with open('input/lines.txt.bz2', 'wb') as f:
    f.write(bz2.compress(text(9000), compresslevel=1))
with open('input/two-streams.bz2', 'wb') as f:
    f.write(bz2.compress(text(3000), compresslevel=1))
    f.write(bz2.compress(text(2500), compresslevel=2))
