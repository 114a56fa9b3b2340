#!/usr/bin/env bash
# bench/sort.sh: the Sort benchmark — sluice run sort against Apache Hadoop's `sort` example
# (local mode) on the same RandomWriter SequenceFiles, side by side, in one run.
#
# Usage: bench/sort.sh [options]
#
#   --size SIZE           bytes of keys and values to generate (default 1GiB)
#   --bytes-per-map SIZE  bytes per generated file (default 128MiB; Hadoop's default is 1GiB)
#   --reducers N          part files of both sorts (default 8)
#   --memory SIZE         sluice's budget (default 1GiB)
#   --work DIR            working directory (default bench/scratch); needs about 3x the input
#   --sluice PATH         the sluice binary (default: target/release/sluice, built if missing)
#   --skip-hadoop         leave Hadoop out
#   -h, --help            print this help
#
# Steps, each timed with GNU time (wall seconds, peak RSS); the page cache is dropped before
# each when the script may (as root):
#   gen      sluice gen randomwriter (not compared: Hadoop's RandomWriter has no seed)
#   sluice   sluice run sort --memory M --reducers R
#   hadoop   Hadoop 3.4.2 `sort` from the examples jar (jars of `make hadoop`), local mode with
#            as many map and reduce tasks at once as cores, -r R
# Both outputs must hold the same records part file by part file (bench/sort/compare.py).
# Prints a Markdown report and writes it to WORK/sort-results.md.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
size=1GiB
bytes_per_map=128MiB
reducers=8
memory=1GiB
work=$script_dir/scratch
sluice=${SLUICE:-}
skip_hadoop=false

. "$script_dir/lib.sh"

while [ $# -gt 0 ]; do
    case $1 in
        --size) size=$2; shift 2 ;;
        --bytes-per-map) bytes_per_map=$2; shift 2 ;;
        --reducers) reducers=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --sluice) sluice=$2; shift 2 ;;
        --skip-hadoop) skip_hadoop=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "sort.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

require_gnu_time
find_sluice
$skip_hadoop || (cd "$repo_root" && tests/hadoop/fetch.sh) >&2
cores=$(nproc)

mkdir -p "$work"
work=$(cd "$work" && pwd)
run=$work/sort-run
rm -rf "$run"
mkdir -p "$run"


input=$run/random
timed gen "$sluice" gen randomwriter --size "$size" --bytes-per-map "$bytes_per_map" \
    --output "$input"
gen_secs=$secs
bytes=$(du -cb "$input"/part-* | tail -n 1 | cut -f 1)

timed sluice "$sluice" run sort --input "$input" --output "$run/sluice-sorted" \
    --memory "$memory" --reducers "$reducers" --spill-dir "$run" --report "$run/sluice.json"
sluice_secs=$secs
sluice_rss=$rss_mib

if ! $skip_hadoop; then
    timed hadoop java -cp "$repo_root/tests/hadoop:$repo_root/target/hadoop/lib/*" \
        org.apache.hadoop.examples.ExampleDriver sort \
        -D mapreduce.framework.name=local -D fs.defaultFS=file:/// \
        -D "hadoop.tmp.dir=$run/hadoop-tmp" \
        -D "mapreduce.local.map.tasks.maximum=$cores" \
        -D "mapreduce.local.reduce.tasks.maximum=$cores" \
        -r "$reducers" "$input" "$run/hadoop-sorted"
    hadoop_secs=$secs
    hadoop_rss=$rss_mib
    log "comparing the outputs"
    records=$(python3 "$script_dir/sort/compare.py" "$run/sluice-sorted" "$run/hadoop-sorted") \
        || die "sluice's and Hadoop's sorted records differ"
fi

report=$work/sort-results.md
{
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -sr); page cache $cache_note."
    echo
    echo "Input: \`sluice gen randomwriter --size $size --bytes-per-map $bytes_per_map\` ($bytes bytes of SequenceFiles, written in $gen_secs s); --reducers $reducers, sluice --memory $memory."
    echo
    echo "| step | seconds | MB/s | peak RSS | sluice is |"
    echo "|---|---:|---:|---:|---|"
    echo "| sluice run sort | $sluice_secs | $(mbps "$bytes" "$sluice_secs") | $sluice_rss MiB | |"
    if ! $skip_hadoop; then
        echo "| Hadoop 3.4.2 sort, local mode | $hadoop_secs | $(mbps "$bytes" "$hadoop_secs") | $hadoop_rss MiB | $(ratio "$hadoop_secs" "$sluice_secs")x faster |"
        echo
        echo "Both outputs hold the same $records records, part file by part file."
    fi
} > "$report"
cat "$report"
rm -rf "$run/random" "$run/sluice-sorted" "$run/hadoop-sorted" "$run/hadoop-tmp"
