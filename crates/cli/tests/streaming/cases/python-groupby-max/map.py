#!/usr/bin/env python3
"""Year -> temperature; rows that do not parse are counted, not emitted."""
import sys
for line in sys.stdin:
    year, temp, _ = (line.rstrip('\n').split(',') + ['', ''])[:3]
    try:
        print(f'{year}\t{int(temp)}')
    except ValueError:
        sys.stderr.write('reporter:counter:Weather,malformed,1\n')
