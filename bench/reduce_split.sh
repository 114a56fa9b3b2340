#!/usr/bin/env bash
# bench/reduce_split.sh: a skewed partition's reduce split into key ranges, against the same
# job with splitting off.
#
# Usage: bench/reduce_split.sh [options]
#
#   --work DIR       working directory for the inputs and outputs (default bench/scratch)
#   --runs N         timed runs of each command, interleaved (default 5); the median is reported
#   --threads N      worker threads (default: nproc)
#   --sluice PATH    the sluice binary (default: $SLUICE, else
#                    ${CARGO_TARGET_DIR:-target}/release/sluice under the repository root,
#                    built with `cargo build --release -p sluice-cli` if missing)
#   -h, --help       print this help
#
# What it does:
#   1. Generates two skewed inputs once (crates/cli/tests/reference/skewed.py, seed 1), nine
#      in ten records hashing to partition 0 of 4:
#        sort:      `key<TAB>value` lines, 8 files of 1,500,000 lines (309 MB), 1,100,000
#                   distinct keys;
#        wordcount: lines of words, 8 files of 300,000 lines (116 MB), 2,200,000 distinct
#                   words.
#   2. Runs each job with --reducers 4, once with splitting (the default, --reduce-split
#      64MiB) and once with --reduce-split off, in turn, RUNS times each, measured with GNU
#      time (`/usr/bin/time -f %e`), and reads each run's reduce phase from its --report.
#   3. Checks that the two outputs are identical, and prints a Markdown table of the medians.
#
# Progress goes to stderr; the report to stdout. Exit status: 0 on success, 1 if a run fails
# or the outputs differ, 2 for usage errors.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)

work=$script_dir/scratch
runs=5
threads=$(nproc)
sluice=${SLUICE:-}

usage() {
    sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

die_usage() {
    echo "reduce_split.sh: $*" >&2
    echo "Try 'bench/reduce_split.sh --help'." >&2
    exit 2
}

die() {
    echo "reduce_split.sh: error: $*" >&2
    exit 1
}

log() {
    echo "reduce_split.sh: $*" >&2
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --work) work=${2:?}; shift 2 ;;
        --runs) runs=${2:?}; shift 2 ;;
        --threads) threads=${2:?}; shift 2 ;;
        --sluice) sluice=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "unknown option $1" ;;
    esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || die_usage "--runs must be a positive number"
[[ $threads =~ ^[1-9][0-9]*$ ]] || die_usage "--threads must be a positive number"
[[ -x /usr/bin/time ]] || die "GNU time (/usr/bin/time) is needed"

if [[ -z $sluice ]]; then
    sluice=${CARGO_TARGET_DIR:-$repo_root/target}/release/sluice
    if [[ ! -x $sluice ]]; then
        log "building sluice (release)"
        (cd "$repo_root" && cargo build --release -p sluice-cli >&2)
    fi
fi
[[ -x $sluice ]] || die "no sluice binary at $sluice"

mkdir -p "$work"
generator=$repo_root/crates/cli/tests/reference/skewed.py

# generate NAME KIND LINES VOCABULARY
generate() {
    local dir=$work/skewed-$1
    if [[ ! -d $dir ]]; then
        log "generating $dir"
        python3 "$generator" --out "$dir.tmp" --kind "$2" --reducers 4 --files 8 \
            --lines "$3" --vocabulary "$4" --seed 1
        mv "$dir.tmp" "$dir"
    fi
}

generate sort pairs 1500000 1000000
generate wordcount words 300000 2000000

median() {
    sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# run JOB MODE -> appends "wall reduce" to $work/JOB-MODE.times
run() {
    local job=$1 mode=$2 out=$work/out-$1-$2 report=$work/report-$1-$2.json
    rm -rf "$out"
    /usr/bin/time -f %e -o "$work/time.txt" "$sluice" run "$job" --input "$work/skewed-$job" \
        --output "$out" --reducers 4 --threads "$threads" --reduce-split "$mode" \
        --report "$report" --quiet || die "$job with --reduce-split $mode failed"
    local reduce
    reduce=$(python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
print(sum(p["seconds"] for p in r["phases"] if p["phase"] == "reduce"), r["counters"]["reduce_ranges"])' "$report")
    echo "$(tail -n 1 "$work/time.txt") $reduce" >> "$work/$job-$mode.times"
}

echo "| job | reduce split | wall (s) | reduce phase (s) | key ranges | wall vs split off |"
echo "| --- | --- | ---: | ---: | ---: | ---: |"
for job in sort wordcount; do
    rm -f "$work/$job-64MiB.times" "$work/$job-off.times"
    log "$job: $runs runs of each"
    for _ in $(seq "$runs"); do
        run "$job" 64MiB
        run "$job" off
    done
    for part in "$work/out-$job-64MiB"/part-*; do
        cmp -s "$part" "$work/out-$job-off/$(basename "$part")" ||
            die "$job: $(basename "$part") differs between the split and the whole run"
    done
    off_wall=$(cut -d' ' -f1 "$work/$job-off.times" | median)
    for mode in 64MiB off; do
        wall=$(cut -d' ' -f1 "$work/$job-$mode.times" | median)
        reduce=$(cut -d' ' -f2 "$work/$job-$mode.times" | median)
        ranges=$(cut -d' ' -f3 "$work/$job-$mode.times" | median)
        ratio=$(awk -v a="$wall" -v b="$off_wall" 'BEGIN { printf "%.2f", a / b }')
        printf '| %s | %s | %.2f | %.2f | %s | %s |\n' "$job" "$mode" "$wall" "$reduce" "$ranges" "$ratio"
    done
done
echo
echo "Medians of $runs runs each, in turn; $threads threads; $(nproc) cores; $("$sluice" --version 2>/dev/null || echo "sluice (version unknown)")."
