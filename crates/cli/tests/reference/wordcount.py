"""Reference word count: `word\\tcount` per distinct word, by word bytes, hash-partitioned."""

import collections

import common


def main():
    args = common.parser(__doc__).parse_args()
    counts = collections.Counter()
    n_lines = n_words = 0
    for path in common.discover(args.inputs):
        data = common.read(path, args.raw)
        n_lines += common.count_lines(data)
        for chunk in common.chunks(data):
            ws = common.words(chunk)
            n_words += len(ws)
            counts.update(ws)
    parts = [[] for _ in range(args.reducers)]
    cache = {}
    for word in sorted(counts):
        parts[common.partition(word, args.reducers, cache)].append(
            word + b"\t" + str(counts[word]).encode())
    common.write_parts(args.out, parts)
    common.write_stats(args.stats, {"lines": n_lines, "words": n_words, "distinct": len(counts)})


if __name__ == "__main__":
    main()
