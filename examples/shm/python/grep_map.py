#!/usr/bin/env python3
"""Grep, map side: writes `match<TAB>1` for every match of a regular expression in every line.

    python3 grep_map.py REGEX < input > pairs              # plain pipes, or Hadoop Streaming
    sluice streaming ... -mapper 'python3 grep_map.py REGEX'

REGEX is a Python `re` pattern applied to bytes, to each line without its newline; every match
re.finditer finds counts, empty ones included.
"""

import os
import re
import sys

try:
    import sluice_shm
except ImportError:  # run from a checkout: use the client in clients/python
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(os.path.join(here, "..", "..", "..", "clients", "python"))
    import sluice_shm


def main() -> None:
    if len(sys.argv) != 2:
        print("usage: grep_map.py REGEX", file=sys.stderr)
        sys.exit(2)
    try:
        # fsencode gives back the argument's original bytes, even those not valid UTF-8.
        finditer = re.compile(os.fsencode(sys.argv[1])).finditer
    except re.error as e:
        print(f"grep_map: bad regular expression: {e}", file=sys.stderr)
        sys.exit(2)
    with sluice_shm.open() as ch:
        write = ch.write
        for line in ch:
            # endpos leaves the newline out of the search without copying the line: the
            # pattern sees the string as if it ended there ($ and lookaheads included).
            end = len(line) - 1 if line.endswith(b"\n") else len(line)
            matches = [m[0] for m in finditer(line, 0, end)]
            if matches:
                write(b"\t1\n".join(matches) + b"\t1\n")


if __name__ == "__main__":
    main()
