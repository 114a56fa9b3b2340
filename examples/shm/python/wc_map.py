#!/usr/bin/env python3
"""Word count, map side: writes `word<TAB>1` for every word of the input.

Words are split exactly as Hadoop's WordCount splits them (java.util.StringTokenizer with its
default delimiters): at runs of space, tab, newline, carriage return and form feed, and at
nothing else. The input is handled as bytes; the delimiters are ASCII, which no byte of a
multi-byte UTF-8 character can be, so cutting bytes cuts characters.

    python3 wc_map.py < input > pairs                      # plain pipes, or Hadoop Streaming
    sluice streaming ... -mapper 'python3 wc_map.py'       # shared memory when sluice offers it
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

# bytes.split() cuts at StringTokenizer's delimiters and also at vertical tab (\x0b), which is
# part of a word for Java. Lines holding one (rare) take this slower, exact path.
_DELIMITERS = re.compile(rb"[ \t\n\r\f]+")


def main() -> None:
    with sluice_shm.open() as ch:
        write = ch.write
        for line in ch:
            if b"\x0b" in line:
                words = [word for word in _DELIMITERS.split(line) if word]
            else:
                words = line.split()
            if words:
                write(b"\t1\n".join(words) + b"\t1\n")


if __name__ == "__main__":
    main()
