#!/usr/bin/env bash
# bench/spark.sh: the iterative jobs, sluice against Spark in local mode, on the same inputs.
#
# Usage: bench/spark.sh [options]
#
#   --scale N        R-MAT scale of the graph: 2^N vertices, 16 edges each (default 18)
#   --points N       k-means points (default 1000000), in 8 dimensions around 16 centres
#   --iterations N   PageRank and k-means iterations (default 10)
#   --memory SIZE    sluice's memory budget and Spark's driver memory (default 1GiB)
#   --threads N      sluice's threads and Spark's local[N] (default: nproc)
#   --work DIR       working directory for inputs and outputs (default bench/scratch)
#   --sluice PATH    the sluice binary (default: $SLUICE, else the workspace's release build,
#                    built if missing)
#   -h, --help       print this help
#
# What it does:
#   1. Makes a virtual environment bench/.venv-spark with pyspark and numpy (MLlib needs it)
#      from PyPI (the newest
#      release; the report names it) the first time; Spark needs Java 17 or later.
#   2. Generates the inputs once (seed 42) and reuses them:
#        sluice gen graph --scale N --seed 42
#        sluice gen points --points P --dimensions 8 --clusters 16 --spread 10 --seed 42
#   3. Runs each job once with sluice and once with Spark (bench/spark_iterative.py: PageRank
#      and label propagation with DataFrames, k-means with MLlib from the same first 16
#      points), under GNU time: wall seconds of the whole process, Spark's JVM start
#      included (Spark's own time without its session's start-up is given too), and peak RSS
#      (sluice: GNU time's; Spark: the Python driver's plus the JVM's high-water marks).
#        sluice run pagerank --tolerance 0 --iterations I
#        sluice run connected-components
#        sluice run kmeans --clusters 16 --tolerance 0 --iterations I
#   4. Checks that both give the same result (ranks and centres to a millionth, labels
#      exactly) and prints a Markdown table.
#
# Progress goes to stderr; the table to stdout. Exit status: 0 on success, 1 if a run fails
# or the results differ, 2 for usage errors.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
. "$script_dir/lib.sh"

scale=18
points=1000000
iterations=10
memory=1GiB
threads=$(nproc)
work=$script_dir/scratch
sluice=${SLUICE:-}

while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) scale=${2:?}; shift 2 ;;
        --points) points=${2:?}; shift 2 ;;
        --iterations) iterations=${2:?}; shift 2 ;;
        --memory) memory=${2:?}; shift 2 ;;
        --threads) threads=${2:?}; shift 2 ;;
        --work) work=${2:?}; shift 2 ;;
        --sluice) sluice=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "spark.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

find_sluice
require_gnu_time
spark_venv
# Spark's driver memory: the same budget, in Spark's units.
spark_memory=$(spark_size "$memory")

mkdir -p "$work"
run=$work/spark-run
rm -rf "$run"
mkdir -p "$run"
graph=$work/rmat-$scale-16
cloud=$work/points-$points-8d
if [[ ! -e $graph/_SUCCESS ]]; then
    rm -rf "$graph"
    log "generating the graph: scale $scale, edge factor 16..."
    "$sluice" gen graph --scale "$scale" --edge-factor 16 --seed 42 --output "$graph" --quiet
fi
if [[ ! -e $cloud/_SUCCESS ]]; then
    rm -rf "$cloud"
    log "generating $points points..."
    "$sluice" gen points --points "$points" --dimensions 8 --clusters 16 --spread 10 \
        --seed 42 --output "$cloud" --quiet
fi

rows=()
# compare JOB SLUICE_OUTPUT_DIR SPARK_FILE: the same vertices or centres, values equal.
compare() {
    python3 - "$@" <<'PY'
import glob, sys
job, ours, theirs = sys.argv[1:]
def read(paths):
    out = {}
    for p in paths:
        for line in open(p):
            k, v = line.rstrip("\n").split("\t")
            out[int(k)] = [float(x) for x in v.split(",")]
    return out
a = read(sorted(glob.glob(ours + "/part-*")))
b = read([theirs])
if a.keys() != b.keys():
    sys.exit(f"{job}: {len(a)} keys from sluice, {len(b)} from Spark")
for k in a:
    for x, y in zip(a[k], b[k]):
        close = x == y if job == "connected-components" else abs(x - y) <= 1e-6 * max(abs(y), 1e-300)
        if not close:
            sys.exit(f"{job}: {k}: sluice {a[k]}, Spark {b[k]}")
print("same")
PY
}

# one JOB INPUT SPARK_JOB SLUICE_ARGS...: runs both, compares, adds a row.
one() {
    local job=$1 input=$2 spark_job=$3
    shift 3
    local out=$run/$job-sluice report=$run/$job-sluice.json
    log "$job: sluice"
    /usr/bin/time -f '%e %M' -o "$run/$job-sluice.time" "$sluice" run "$job" "$@" \
        --input "$input" --output "$out" --memory "$memory" --threads "$threads" \
        --report "$report" --quiet
    local s_wall s_kib
    read -r s_wall s_kib < "$run/$job-sluice.time"
    local s_iters s_per
    read -r s_iters s_per < <(python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
steps = [s['seconds'] for s in r['steps']]
print(len(steps), '%.2f' % (sum(steps) / len(steps)))" "$report")

    log "$job: Spark $spark_version"
    local spark_args=(--threads "$threads" --memory "$spark_memory" --scratch "$run")
    [[ $spark_job == kmeans ]] && spark_args+=(--clusters 16)
    [[ $spark_job == components ]] && spark_args+=(--iterations 1000) || spark_args+=(--iterations "$iterations")
    PYSPARK_PYTHON=$venv/bin/python /usr/bin/time -f '%e %M' -o "$run/$job-spark.time" \
        "$venv/bin/python" \
        "$script_dir/spark_iterative.py" "$spark_job" "$input" "$run/$job-spark.txt" \
        "${spark_args[@]}" > "$run/$job-spark.json" 2> "$run/$job-spark.log" \
        || { tail -n 30 "$run/$job-spark.log" >&2; die "$job: Spark failed"; }
    local k_wall k_kib
    read -r k_wall k_kib < "$run/$job-spark.time"
    local k_inside k_iters k_per k_peak
    read -r k_inside k_iters k_per k_peak < <(python3 -c "
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
t = r['iteration_seconds']
print('%.1f' % r['seconds'], len(t), '%.2f' % (sum(t) / len(t)), r['peak_rss_bytes'] // 2**20)" "$run/$job-spark.json")

    local same
    same=$(compare "$job" "$out" "$run/$job-spark.txt") || die "$job: the results differ (above)"
    rows+=("| $job | $s_iters / $k_iters | $s_wall s | $k_wall s ($k_inside s) | $(ratio "$k_wall" "$s_wall")× | $s_per s | $k_per s | $((s_kib / 1024)) / $k_peak MiB | $same |")
}

one pagerank "$graph" pagerank --tolerance 0 --iterations "$iterations"
one connected-components "$graph" components
one kmeans "$cloud" kmeans --clusters 16 --tolerance 0 --iterations "$iterations"

echo "| job | iterations (sluice / Spark) | sluice wall | Spark wall (without session start) | Spark / sluice | per iteration, sluice | per iteration, Spark | peak RSS (sluice / Spark) | results |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Graph: R-MAT scale $scale, edge factor 16 ($(du -sh "$graph" | cut -f1)); points: $points in 8 dimensions ($(du -sh "$cloud" | cut -f1)); sluice --memory $memory --threads $threads; Spark $spark_version local[$threads], driver memory $spark_memory; $(nproc) cores, $(java -version 2>&1 | head -n 1)."
