"""Test data, not a reference: a skewed corpus whose records mostly go to one partition.

Writes FILES files into OUT. `--kind words`: lines of words, nine in ten drawn from words that
Hadoop's HashPartitioner sends to partition 0 of REDUCERS; `--kind pairs`: `key\\tvalue` lines
of a sort job's input, keys skewed the same way, many keys repeated (their values record where
they came from, so that the order of equal keys shows). Deterministic for a seed.
"""

import argparse
import os
import random

import common


def vocabulary(rng, count, reducers, partition, hot):
    """`count` distinct words; those in `partition` when `hot`, else in the others."""
    words = []
    seen = set()
    while len(words) < count:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9)))
        word = word.encode()
        if word in seen:
            continue
        in_partition = reducers == 1 or common.partition(word, reducers) == partition
        if in_partition == hot:
            seen.add(word)
            words.append(word)
    return words


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", required=True)
    parser.add_argument("--kind", choices=["words", "pairs"], required=True)
    parser.add_argument("--reducers", type=int, default=1)
    parser.add_argument("--files", type=int, default=3)
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--vocabulary", type=int, default=4000,
                        help="distinct words of the large partition (a tenth as many elsewhere)")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    hot = vocabulary(rng, args.vocabulary, args.reducers, 0, True)
    cold = (vocabulary(rng, max(1, args.vocabulary // 10), args.reducers, 0, False)
            if args.reducers > 1 else hot)
    os.makedirs(args.out, exist_ok=True)
    for f in range(args.files):
        lines = []
        for i in range(args.lines):
            pick = lambda: rng.choice(hot) if rng.random() < 0.9 else rng.choice(cold)
            if args.kind == "words":
                lines.append(b" ".join(pick() for _ in range(rng.randint(1, 12))))
            else:
                lines.append(pick() + b"\t" + b"file %d line %d" % (f, i))
        with open(os.path.join(args.out, "part-%02d.txt" % f), "wb") as out:
            out.write(b"".join(line + b"\n" for line in lines))


if __name__ == "__main__":
    main()
