"""Reference grep: every non-overlapping leftmost match of a regex (or of one capture group)
in every line, counted; one file of `count\\tmatch` by count descending, then match bytes."""

import collections
import os
import re

import common


def main():
    p = common.parser(__doc__)
    p.add_argument("--pattern", required=True, type=os.fsencode)
    p.add_argument("--group", type=int, default=0)
    args = p.parse_args()
    regex = re.compile(args.pattern)
    counts = collections.Counter()
    for path in common.discover(args.inputs):
        for line in common.lines(common.read(path, args.raw)):
            for m in regex.finditer(line):
                g = m.group(args.group)
                if g is not None:  # a group that did not take part yields nothing
                    counts[g] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    common.write_parts(args.out, [[str(c).encode() + b"\t" + m for m, c in ranked]])
    common.write_stats(args.stats, {"distinct": len(counts)})


if __name__ == "__main__":
    main()
