#!/usr/bin/env python3
"""Shows exactly what the mapper is given: the line's repr becomes the value."""
import sys
for n, line in enumerate(sys.stdin.buffer):
    print(f'{n}\t{line!r}')
