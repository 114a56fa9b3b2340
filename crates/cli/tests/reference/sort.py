"""Reference sort: lines ordered by key (bytes before the first tab, or the whole line),
stably (files in path-byte order, then position), each key in its hash partition."""

import common


def main():
    args = common.parser(__doc__).parse_args()
    all_lines = []
    for path in common.discover(args.inputs):
        all_lines.extend(common.lines(common.read(path, args.raw)))
    keys = [line.split(b"\t", 1)[0] for line in all_lines]
    order = sorted(range(len(all_lines)), key=keys.__getitem__)  # sorted() is stable
    parts = [[] for _ in range(args.reducers)]
    if args.reducers == 1:
        parts[0] = [all_lines[i] for i in order]
    else:
        cache = {}
        for i in order:
            parts[common.partition(keys[i], args.reducers, cache)].append(all_lines[i])
    common.write_parts(args.out, parts)
    common.write_stats(args.stats, {"lines": len(all_lines)})


if __name__ == "__main__":
    main()
