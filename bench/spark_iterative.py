"""PageRank, connected components and k-means in Spark (PySpark, local mode), with the rules of
sluice's built-in jobs, for bench/spark.sh.

    spark_iterative.py pagerank  EDGES OUT --iterations N --threads T --memory 1g
    spark_iterative.py components EDGES OUT --threads T --memory 1g
    spark_iterative.py kmeans POINTS OUT --clusters K --iterations N --threads T --memory 1g

PageRank: DataFrames; every line `src<TAB>dst` one directed edge, vertices every id named,
ranks from 1/N, damping 0.85, the rank of vertices without out-edges spread over all
vertices; exactly N iterations. Components: DataFrames; label propagation from each vertex's
own id over the edges taken both ways, until no label changes. k-means: Spark MLlib's
KMeans (the RDD API, the one that takes initial centres) from the first K points of the files
in path order, epsilon 0, N iterations.

Writes `vertex<TAB>value` (or `centre<TAB>x1,x2,...`) lines to OUT, and prints one JSON line:
{"job", "seconds" (from the input read to the result collected, the session's start
excluded), "iteration_seconds": [...], "iterations", "peak_rss_bytes" (the driver's and the
JVM's high-water marks)}.
"""

import argparse
import json
import os
import sys
import time

from pyspark.sql import SparkSession, functions as F


def session(args):
    return (
        SparkSession.builder.master(f"local[{args.threads}]")
        .appName(f"sluice-bench-{args.job}")
        .config("spark.driver.memory", args.memory)
        .config("spark.sql.shuffle.partitions", str(args.threads * 2))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", args.scratch)
        .getOrCreate()
    )


def edges(spark, path):
    lines = spark.read.text(path)
    parts = F.split(F.col("value"), "\t")
    return lines.select(
        parts.getItem(0).cast("long").alias("src"), parts.getItem(1).cast("long").alias("dst")
    )


def pagerank(spark, args):
    damping = 0.85
    e = edges(spark, args.input).cache()
    vertices = e.select(F.col("src").alias("id")).union(e.select(F.col("dst").alias("id")))
    vertices = vertices.distinct().cache()
    n = vertices.count()
    degree = e.groupBy("src").agg(F.count(F.lit(1)).alias("degree")).cache()
    links = e.join(degree, "src").cache()
    ranks = vertices.select("id", F.lit(1.0 / n).alias("rank")).localCheckpoint()
    times = []
    for _ in range(args.iterations):
        started = time.monotonic()
        dangling = (
            ranks.join(degree, ranks.id == degree.src, "left_anti")
            .agg(F.sum("rank"))
            .collect()[0][0]
            or 0.0
        )
        incoming = (
            links.join(ranks, links.src == ranks.id)
            .groupBy("dst")
            .agg(F.sum(F.col("rank") / F.col("degree")).alias("incoming"))
        )
        base = (1 - damping) / n + damping * dangling / n
        ranks = (
            vertices.join(incoming, vertices.id == incoming.dst, "left")
            .select("id", (F.lit(base) + damping * F.coalesce(F.col("incoming"), F.lit(0.0))).alias("rank"))
            .localCheckpoint()
        )
        times.append(time.monotonic() - started)
    return ranks.orderBy("id").collect(), times


def components(spark, args):
    e = edges(spark, args.input)
    both = e.union(e.select(F.col("dst").alias("src"), F.col("src").alias("dst"))).cache()
    labels = both.select(F.col("src").alias("id")).distinct().select("id", F.col("id").alias("label"))
    labels = labels.localCheckpoint()
    times = []
    while True:
        started = time.monotonic()
        offered = both.join(labels, both.src == labels.id).select(
            F.col("dst").alias("id"), F.col("label")
        )
        updated = (
            labels.union(offered).groupBy("id").agg(F.min("label").alias("label")).localCheckpoint()
        )
        changed = (
            updated.alias("n")
            .join(labels.alias("o"), "id")
            .where(F.col("n.label") != F.col("o.label"))
            .count()
        )
        labels = updated
        times.append(time.monotonic() - started)
        if changed == 0 or len(times) >= args.iterations:
            break
    return labels.orderBy("id").collect(), times


def kmeans(spark, args):
    from pyspark.mllib.clustering import KMeans, KMeansModel

    files = sorted(
        os.path.join(args.input, f)
        for f in os.listdir(args.input)
        if not f.startswith(("_", "."))
    )
    initial = []
    for name in files:
        with open(name) as f:
            for line in f:
                if len(initial) < args.clusters:
                    initial.append([float(x) for x in line.replace(",", " ").split()])
        if len(initial) >= args.clusters:
            break
    started = time.monotonic()
    points = (
        spark.sparkContext.textFile(",".join(files))
        .map(lambda line: [float(x) for x in line.replace(",", " ").split()])
        .cache()
    )
    model = KMeans.train(
        points,
        args.clusters,
        maxIterations=args.iterations,
        initialModel=KMeansModel(initial),
        epsilon=0.0,
    )
    seconds = time.monotonic() - started
    # MLlib reports no per-iteration time: the mean is the whole fit over the iterations.
    return [(i, list(c)) for i, c in enumerate(model.clusterCenters)], [seconds / args.iterations] * args.iterations


def high_water(pid):
    """VmHWM of a process, in bytes (0 if unknown)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def peak_rss(spark):
    """Peak resident memory of this Python driver and of Spark's JVM, which py4j started as a
    child process (GNU time would not see it: the JVM is not waited for)."""
    gateway = spark.sparkContext._gateway
    jvm = getattr(getattr(gateway, "proc", None), "pid", None)
    return high_water(os.getpid()) + (high_water(jvm) if jvm else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("job", choices=["pagerank", "components", "kmeans"])
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--clusters", type=int, default=8)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--memory", default="1g")
    parser.add_argument("--scratch", default="/tmp")
    args = parser.parse_args()
    spark = session(args)
    spark.sparkContext.setLogLevel("ERROR")
    started = time.monotonic()
    if args.job == "pagerank":
        rows, times = pagerank(spark, args)
        lines = (f"{r['id']}\t{r['rank']!r}" for r in rows)
    elif args.job == "components":
        rows, times = components(spark, args)
        lines = (f"{r['id']}\t{r['label']}" for r in rows)
    else:
        rows, times = kmeans(spark, args)
        lines = (f"{i}\t{','.join(repr(float(x)) for x in c)}" for i, c in rows)
    with open(args.output, "w") as out:
        for line in lines:
            out.write(line + "\n")
    seconds = time.monotonic() - started
    print(
        json.dumps(
            {
                "job": args.job,
                "seconds": seconds,
                "iterations": len(times),
                "iteration_seconds": times,
                "peak_rss_bytes": peak_rss(spark),
            }
        )
    )
    spark.stop()


if __name__ == "__main__":
    sys.exit(main())
