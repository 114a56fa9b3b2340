#!/usr/bin/env python3
"""Shows exactly what the mapper is given."""
import sys
for line in sys.stdin.buffer:
    print(repr(line))
