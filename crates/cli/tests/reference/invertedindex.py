"""Reference inverted index: `word\\tpath,path,...` with the distinct paths (as discovered)
sorted by bytes, words sorted by bytes, hash-partitioned."""

import collections

import common


def main():
    args = common.parser(__doc__).parse_args()
    postings = collections.defaultdict(set)
    for path in common.discover(args.inputs):
        data = common.read(path, args.raw)
        seen = set()
        for chunk in common.chunks(data):
            seen.update(common.words(chunk))
        for word in seen:
            postings[word].add(path)
    parts = [[] for _ in range(args.reducers)]
    cache = {}
    for word in sorted(postings):
        parts[common.partition(word, args.reducers, cache)].append(
            word + b"\t" + b",".join(sorted(postings[word])))
    common.write_parts(args.out, parts)
    common.write_stats(args.stats, {"distinct": len(postings)})


if __name__ == "__main__":
    main()
