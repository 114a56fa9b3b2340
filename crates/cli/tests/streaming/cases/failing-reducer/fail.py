#!/usr/bin/env python3
import sys
for n, line in enumerate(sys.stdin):
    print(line, end='')
    if n == 2:
        sys.stderr.write('REDUCER-FAILED-91c2: giving up at record 3\n')
        sys.exit(1)
