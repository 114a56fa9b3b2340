#!/usr/bin/env python3
"""PageRank and connected components as Hadoop Streaming users write them: one mapper and one
reducer per step, the state between iterations in the job's own output, the driver told what it
needs (the dangling rank, whether a label changed) through `reporter:counter:` lines on stderr,
which both Hadoop and sluice print with the job's counters. For bench/streaming_iterative.sh.

    graph.py pagerank-prepare-map | graph.py pagerank-prepare-reduce
    graph.py pagerank-map         | graph.py pagerank-reduce
    graph.py components-prepare-map | graph.py components-prepare-reduce
    graph.py components-map       | graph.py components-reduce

The rules are those of sluice's built-in jobs (`sluice run pagerank --help`): every input line
`src<TAB>dst` is one directed edge (repeated lines count again), the vertices are every id named,
ranks start at 1/N, damping 0.85, the rank of vertices without out-edges spread over all vertices;
components take the edges both ways, each vertex starting with its own id as label and taking the
smallest label offered.

State lines: `vertex<TAB>value<TAB>neighbour,neighbour,...`; a PageRank state's value is empty
before the first iteration (1/N). The settings come from the environment (`-cmdenv`):
VERTICES (N) for PageRank's iterations, DANGLING (the previous ranks' dangling total, a float
written with repr) for its reducer.

Counters: `graph,vertices` and `graph,dangling_vertices` from PageRank's preparation,
`graph,dangling_e15` (the dangling rank times 10^15, rounded: counters are integers) from each
PageRank iteration, `graph,changed` (labels changed) from each components iteration.
"""

import os
import sys

DAMPING = 0.85
# What a mapper's structure record starts with, so the reducer tells it from a rank or a label.
STRUCTURE = "|"


def records(stream):
    """(key, value) pairs of `key<TAB>value` lines."""
    for line in stream:
        key, _, value = line.rstrip("\n").partition("\t")
        yield key, value


def groups(stream):
    """(key, [values]) for each run of equal keys (a reducer's input is sorted by key)."""
    current, values = None, []
    for key, value in records(stream):
        if key != current:
            if current is not None:
                yield current, values
            current, values = key, []
        values.append(value)
    if current is not None:
        yield current, values


def counter(name, amount):
    sys.stderr.write(f"reporter:counter:graph,{name},{amount}\n")


def pagerank_prepare_map(inp, out):
    # Every vertex named must reach the reducer, also those only ever a destination.
    for src, dst in records(inp):
        out.write(f"{src}\t{dst}\n{dst}\t\n")


def pagerank_prepare_reduce(inp, out):
    vertices = dangling = 0
    for vertex, values in groups(inp):
        targets = [v for v in values if v]
        vertices += 1
        dangling += not targets
        out.write(f"{vertex}\t\t{','.join(targets)}\n")
    counter("vertices", vertices)
    counter("dangling_vertices", dangling)


def pagerank_map(inp, out):
    initial = 1.0 / int(os.environ["VERTICES"])
    for vertex, value in records(inp):
        rank, _, adjacency = value.partition("\t")
        rank = float(rank) if rank else initial
        out.write(f"{vertex}\t{STRUCTURE}{adjacency}\n")
        if adjacency:
            targets = adjacency.split(",")
            share = repr(rank / len(targets))
            for target in targets:
                out.write(f"{target}\t{share}\n")


def pagerank_reduce(inp, out):
    n = int(os.environ["VERTICES"])
    dangling = float(os.environ["DANGLING"])
    base = (1 - DAMPING) / n
    spread = dangling / n
    dangling_next = 0.0
    for vertex, values in groups(inp):
        incoming = 0.0
        adjacency = ""
        for value in values:
            if value.startswith(STRUCTURE):
                adjacency = value[1:]
            else:
                incoming += float(value)
        rank = base + DAMPING * (incoming + spread)
        if not adjacency:
            dangling_next += rank
        out.write(f"{vertex}\t{rank!r}\t{adjacency}\n")
    counter("dangling_e15", round(dangling_next * 1e15))


def components_prepare_map(inp, out):
    for src, dst in records(inp):
        out.write(f"{src}\t{dst}\n{dst}\t{src}\n")


def components_prepare_reduce(inp, out):
    for vertex, neighbours in groups(inp):
        out.write(f"{vertex}\t{vertex}\t{','.join(neighbours)}\n")


def components_map(inp, out):
    for vertex, value in records(inp):
        label, _, adjacency = value.partition("\t")
        out.write(f"{vertex}\t{STRUCTURE}{label}\t{adjacency}\n")
        for neighbour in adjacency.split(","):
            out.write(f"{neighbour}\t{label}\n")


def components_reduce(inp, out):
    changed = 0
    for vertex, values in groups(inp):
        old, adjacency, offered = None, "", []
        for value in values:
            if value.startswith(STRUCTURE):
                old, _, adjacency = value[1:].partition("\t")
            else:
                offered.append(int(value))
        # Ids compare as numbers, not as the text the shuffle sorts by.
        label = min([int(old)] + offered)
        changed += label != int(old)
        out.write(f"{vertex}\t{label}\t{adjacency}\n")
    counter("changed", changed)


STEPS = {
    "pagerank-prepare-map": pagerank_prepare_map,
    "pagerank-prepare-reduce": pagerank_prepare_reduce,
    "pagerank-map": pagerank_map,
    "pagerank-reduce": pagerank_reduce,
    "components-prepare-map": components_prepare_map,
    "components-prepare-reduce": components_prepare_reduce,
    "components-map": components_map,
    "components-reduce": components_reduce,
}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STEPS:
        sys.exit(f"usage: graph.py {{{'|'.join(STEPS)}}}")
    STEPS[sys.argv[1]](sys.stdin, sys.stdout)
