#!/usr/bin/env bash
# bench/shm.sh: shared-memory streaming (-io shm) against sluice's own pipe transport.
#
# Usage: bench/shm.sh [options]
#
#   --size SIZE      corpus size (default 1GiB), generated with `sluice gen text --seed 42`
#   --work DIR       working directory (default bench/scratch)
#   --runs N         timed runs of each C job; the best is reported (default 3). The Python
#                    jobs run once each.
#   --ring-mib N     MiB moved per record size by the ring microbenchmark (default 2048)
#   -h, --help       print this help
#
# (a) The ring microbenchmark (crates/shm/examples/ringbench.rs): records/s and MB/s from one
#     process to another for 16, 64, 256 and 4096-byte records, one write per record, through
#     a 1 MiB ring and through a pipe with 256 KiB buffered writes.
# (b) `sluice streaming` word count with the C example mapper and reducer
#     (examples/shm/c/wc_map.c, wc_reduce.c) over pipes, then with -io shm.
# (c) The same with the Python examples (examples/shm/python/).
# The outputs over pipes and over shm are compared byte for byte; a difference fails the run.
# Measured with GNU time (wall seconds, peak RSS of the largest process).
# PYTHONUNBUFFERED is unset: the Python programs write to their pipes in blocks.
# Prints a Markdown report and writes it to WORK/shm-results.md.

set -euo pipefail
unset PYTHONUNBUFFERED

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
size=1GiB
work=$script_dir/scratch
runs=3
ring_mib=2048

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "shm.sh: error: $*" >&2; exit 1; }
log() { echo "shm.sh: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
        --size) size=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --ring-mib) ring_mib=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "shm.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

[ -x /usr/bin/time ] || die "GNU time is needed at /usr/bin/time (apt-get install time)"
cd "$repo_root"
log "building sluice, ringbench and the C examples"
cargo build --release -q -p sluice-cli
cargo build --release -q -p sluice-shm --example ringbench
make -s -C clients/c BUILD="$work/c-build" >/dev/null
sluice=$repo_root/target/release/sluice
cbin=$work/c-build

mkdir -p "$work"
corpus=$work/shm-corpus-$size
if [ ! -d "$corpus" ]; then
    log "generating a $size corpus"
    "$sluice" gen text --size "$size" --seed 42 --output "$corpus" >/dev/null
fi

report=$work/shm-results.md
{
    echo "## Shared-memory streaming, $(date -u +%Y-%m-%d), $(nproc) cores"
    echo
    echo "### (a) Ring microbenchmark, ${ring_mib} MiB per record size"
    echo
    "$repo_root/target/release/examples/ringbench" "$ring_mib"
    echo
} > "$report"

# time_job NAME OUT ARGS...: runs sluice streaming, prints "seconds rss_mib".
time_job() {
    local out=$1; shift
    rm -rf "$out"
    /usr/bin/time -f "%e %M" -o "$work/time.txt" "$sluice" streaming "$@" -output "$out" \
        >/dev/null 2>"$work/job.log" || { cat "$work/job.log" >&2; die "job failed: $*"; }
    awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$work/time.txt"
}

# compare LANG MAP REDUCE RUNS: pipes then shm, best of RUNS each, outputs compared.
compare() {
    local lang=$1 map=$2 reduce=$3 n=$4 transport best rss t r
    for transport in pipes shm; do
        best=""
        for _ in $(seq "$n"); do
            local extra=()
            [ "$transport" = shm ] && extra=(-io shm)
            read -r t r < <(time_job "$work/shm-out-$lang-$transport" "${extra[@]}" \
                -input "$corpus" -mapper "$map" -reducer "$reduce")
            if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then
                best=$t; rss=$r
            fi
        done
        eval "time_$transport=$best; rss_$transport=$rss"
        log "$lang over $transport: $best s, $rss MiB"
    done
    cmp -s <(cat "$work/shm-out-$lang-pipes"/part-*) <(cat "$work/shm-out-$lang-shm"/part-*) \
        || die "$lang: the outputs over pipes and over shm differ"
    local mb
    mb=$(du -sm "$corpus" | cut -f1)
    {
        echo "| $lang | pipes | ${time_pipes} s | $(awk -v m="$mb" -v t="$time_pipes" 'BEGIN{printf "%.0f", m/t}') | ${rss_pipes} MiB | |"
        echo "| $lang | shm | ${time_shm} s | $(awk -v m="$mb" -v t="$time_shm" 'BEGIN{printf "%.0f", m/t}') | ${rss_shm} MiB | $(awk -v a="$time_pipes" -v b="$time_shm" 'BEGIN{printf "%.2f×", a/b}') |"
    } >> "$report"
}

{
    echo "### (b), (c) \`sluice streaming\` word count on a $size corpus"
    echo
    echo "| client | transport | wall | MB/s | peak RSS | shm speed-up |"
    echo "|---|---|---:|---:|---:|---:|"
} >> "$report"
compare c "$cbin/wc_map" "$cbin/wc_reduce" "$runs"
compare python "python3 $repo_root/examples/shm/python/wc_map.py" \
    "python3 $repo_root/examples/shm/python/wc_reduce.py" 1
cat "$report"
