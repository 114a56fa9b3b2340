#!/usr/bin/env bash
# bench/iterative.sh: whole-job benchmark of the iterative jobs on generated data.
#
# Usage: bench/iterative.sh [options]
#
#   --scale N        R-MAT scale of the graph: 2^N vertices (default 20)
#   --edge-factor N  edges per vertex (default 16, Graph500's)
#   --points N       k-means points (default 2000000), in 8 dimensions around 16 centres
#   --iterations N   PageRank and k-means iteration limit (default 10)
#   --memory SIZE    memory budget (default 1GiB)
#   --threads N      worker threads (default: nproc)
#   --work DIR       working directory for inputs and outputs (default bench/scratch)
#   --sluice PATH    the sluice binary (default: $SLUICE, else
#                    ${CARGO_TARGET_DIR:-target}/release/sluice under the repository root,
#                    built with `cargo build --release -p sluice-cli` if missing)
#   -h, --help       print this help
#
# What it does:
#   1. Generates the inputs once and reuses them on later runs:
#        sluice gen graph --scale N --edge-factor E --seed 42 --output WORK/rmat-N-E
#        sluice gen points --points P --dimensions 8 --clusters 16 --spread 10 --seed 42
#          --output WORK/points-P
#   2. Runs, each once, with GNU time (`/usr/bin/time -f '%e %M'`: wall seconds, peak RSS):
#        sluice run pagerank --tolerance 0 --iterations I   (a fixed number of iterations)
#        sluice run connected-components                    (until no label changes)
#        sluice run kmeans --clusters 16 --tolerance 0 --iterations I
#      with --report, from which it takes the iteration counts.
#   3. Prints a Markdown table (job, iterations, wall time of the whole run including the
#      first job that reads the input and the last that writes the output, mean time of an
#      iteration's job, peak RSS).
#
# Progress goes to stderr; the report to stdout. Exit status: 0 on success, 1 if a run
# fails, 2 for usage errors.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)

scale=20
edge_factor=16
points=2000000
iterations=10
memory=1GiB
threads=$(nproc)
work=$script_dir/scratch
sluice=${SLUICE:-}

usage() {
    sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

die_usage() {
    echo "iterative.sh: $*" >&2
    echo "Try 'bench/iterative.sh --help'." >&2
    exit 2
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) scale=${2:?}; shift 2 ;;
        --edge-factor) edge_factor=${2:?}; shift 2 ;;
        --points) points=${2:?}; shift 2 ;;
        --iterations) iterations=${2:?}; shift 2 ;;
        --memory) memory=${2:?}; shift 2 ;;
        --threads) threads=${2:?}; shift 2 ;;
        --work) work=${2:?}; shift 2 ;;
        --sluice) sluice=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "unknown option $1" ;;
    esac
done

if [[ -z $sluice ]]; then
    sluice=${CARGO_TARGET_DIR:-$repo_root/target}/release/sluice
    if [[ ! -x $sluice ]]; then
        echo "building sluice..." >&2
        (cd "$repo_root" && cargo build --release -p sluice-cli >&2)
    fi
fi
[[ -x $sluice ]] || die_usage "no sluice binary at $sluice"
[[ -x /usr/bin/time ]] || { echo "iterative.sh: GNU time (/usr/bin/time) is needed" >&2; exit 1; }

mkdir -p "$work"
graph=$work/rmat-$scale-$edge_factor
cloud=$work/points-$points
if [[ ! -e $graph/_SUCCESS ]]; then
    rm -rf "$graph"
    echo "generating the graph: scale $scale, edge factor $edge_factor..." >&2
    "$sluice" gen graph --scale "$scale" --edge-factor "$edge_factor" --seed 42 \
        --output "$graph" >&2
fi
if [[ ! -e $cloud/_SUCCESS ]]; then
    rm -rf "$cloud"
    echo "generating $points points..." >&2
    "$sluice" gen points --points "$points" --dimensions 8 --clusters 16 --spread 10 \
        --seed 42 --output "$cloud" >&2
fi

rows=()
run() {
    local name=$1; shift
    local out=$work/$name-out report=$work/$name-report.json timing=$work/$name-time
    rm -rf "$out" "$report"
    echo "running $name..." >&2
    /usr/bin/time -f '%e %M' -o "$timing" "$sluice" run "$name" "$@" --output "$out" \
        --memory "$memory" --threads "$threads" --report "$report" >&2
    local wall rss its
    read -r wall rss < "$timing"
    local summary
    summary=$(python3 - "$report" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
steps = [s["seconds"] for s in r["steps"]]
mean = "%.2f s" % (sum(steps) / len(steps)) if steps else "-"
state = "converged" if r["converged"] else "limit"
print(f'{r["iterations"]} ({state}) | {mean}')
PY
)
    rows+=("| $name | ${summary% | *} | $wall s | ${summary#* | } | $((rss / 1024)) MiB |")
}

run pagerank --input "$graph" --tolerance 0 --iterations "$iterations"
run connected-components --input "$graph"
run kmeans --input "$cloud" --clusters 16 --tolerance 0 --iterations "$iterations"

echo "| job | iterations | wall | per iteration | peak RSS |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
echo
echo "Graph: R-MAT scale $scale, edge factor $edge_factor ($(du -sh "$graph" | cut -f1)); points: $points in 8 dimensions ($(du -sh "$cloud" | cut -f1)); --memory $memory --threads $threads; $(nproc) cores."
