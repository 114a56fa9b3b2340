#!/usr/bin/env python3
"""Word count, reduce side: reads `word<TAB>count` lines sorted by word and writes
`word<TAB>sum` once per run of equal words.

The word is everything before the first tab, compared as bytes; the count is the rest of the
line without its newline: a decimal integer, optionally signed (sums do not overflow). A line
without a tab or with another count is an error: a message on stderr, exit status 1.

    sort pairs | python3 wc_reduce.py                      # plain pipes, or Hadoop Streaming
    sluice streaming ... -reducer 'python3 wc_reduce.py'   # shared memory when sluice offers it
"""

import os
import sys

try:
    import sluice_shm
except ImportError:  # run from a checkout: use the client in clients/python
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.append(os.path.join(here, "..", "..", "..", "clients", "python"))
    import sluice_shm


def parse_count(text: bytes) -> int:
    """The count `text` holds; ValueError unless it is [+-]?[0-9]+ (int() alone would also
    accept surrounding whitespace and underscores between digits)."""
    digits = text[1:] if text[:1] in (b"+", b"-") else text
    if not digits.isdigit():  # bytes.isdigit: ASCII digits only, and False for b""
        raise ValueError
    return int(text)


def main() -> None:
    with sluice_shm.open() as ch:
        write = ch.write
        word, total = None, 0
        for number, line in enumerate(ch, 1):
            key, tab, value = line.partition(b"\t")
            try:
                if not tab:
                    raise ValueError
                count = parse_count(value[:-1] if value.endswith(b"\n") else value)
            except ValueError:
                sys.exit(f"wc_reduce: line {number} is not `word<TAB>integer`: {line[:100]!r}")
            if key == word:
                total += count
            else:
                if word is not None:
                    write(b"%s\t%d\n" % (word, total))
                word, total = key, count
        if word is not None:
            write(b"%s\t%d\n" % (word, total))


if __name__ == "__main__":
    main()
