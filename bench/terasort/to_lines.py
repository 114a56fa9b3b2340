#!/usr/bin/env python3
"""Turns TeraGen rows into text lines that GNU sort can sort, for the terasort benchmark.

Usage: to_lines.py OUTPUT INPUT...

Each 100-byte row becomes one 100-byte line: its last byte (0xFF in every TeraGen row) becomes
the newline, and newline bytes inside the 10-byte key (the only place a row can hold one)
become 0x0B. Sorting the lines with LC_ALL=C sort then does the work of sorting the rows (whole
lines compared as bytes, as sluice compares whole rows); only keys that held a newline byte
order slightly differently. Everything runs in C-speed slice operations, not per row.
"""

import sys

ROW = 100
KEY = 10
CHUNK_ROWS = 100_000
NEWLINE_TO_VT = bytes.maketrans(b"\n", b"\x0b")


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], "wb") as out:
        for path in sys.argv[2:]:
            with open(path, "rb") as f:
                while True:
                    chunk = bytearray(f.read(ROW * CHUNK_ROWS))
                    if not chunk:
                        break
                    if len(chunk) % ROW:
                        print(f"{path}: not whole 100-byte rows", file=sys.stderr)
                        return 1
                    for i in range(KEY):
                        chunk[i::ROW] = bytes(chunk[i::ROW]).translate(NEWLINE_TO_VT)
                    chunk[ROW - 1 :: ROW] = b"\n" * (len(chunk) // ROW)
                    out.write(chunk)
    return 0


if __name__ == "__main__":
    sys.exit(main())
