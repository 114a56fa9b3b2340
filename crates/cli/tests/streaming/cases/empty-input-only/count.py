#!/usr/bin/env python3
import sys
print(f'records\t{sum(1 for _ in sys.stdin)}')
