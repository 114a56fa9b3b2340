#!/usr/bin/env bash
# bench/bzip2.sh: word count of one large .bz2 file, read by one task against split at its
# blocks, and Hadoop's wordcount example on the same file.
#
# Usage: bench/bzip2.sh [options]
#
#   --size SIZE      uncompressed corpus size, e.g. 256MiB (default 256MiB)
#   --runs N         timed runs of each sluice step; the best wall time is reported (default 3)
#   --work DIR       working directory (default bench/scratch)
#   --sluice PATH    the sluice binary (default: $SLUICE, else the workspace's release build,
#                    built when missing)
#   --skip-hadoop    do not run Hadoop
#   -h, --help       print this help
#
# What it does:
#   1. Generates the corpus once (`sluice gen text --size SIZE --files 1 --seed 42`) and
#      compresses it with `bzip2 -9` (900 kB blocks) into WORK/bzip2-SIZE/corpus.txt.bz2.
#   2. Runs, RUNS times each, interleaved, with a warm page cache:
#        a. one task:  sluice run wordcount -i FILE -o OUT --split-size 1TiB -q
#           (the split size makes the file one split: how every .bz2 file was read before
#           bzip2 files were split)
#        b. split:     sluice run wordcount -i FILE -o OUT -q
#           (32 MiB splits, each a map task decoding the blocks that start in it)
#   3. Runs Hadoop 3.4's `wordcount` example in local mode once on the same file, with as
#      many map tasks at a time as there are cores (mapreduce.local.map.tasks.maximum), its
#      jars from `make hadoop` (target/hadoop/lib).
#   4. Checks that every output holds the same word counts, and prints a Markdown table.
#
# Progress goes to stderr; the report to stdout.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
. "$script_dir/lib.sh"

size=256MiB
runs=3
work=$script_dir/scratch
sluice=${SLUICE:-}
skip_hadoop=false

while [ $# -gt 0 ]; do
    case $1 in
        --size) size=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --sluice) sluice=$2; shift 2 ;;
        --skip-hadoop) skip_hadoop=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "$bench_name: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || die "--runs wants a positive number, not '$runs'"
require_gnu_time
command -v bzip2 > /dev/null || die "bzip2 is needed (apt-get install bzip2)"
find_sluice
if ! $skip_hadoop; then
    command -v java > /dev/null || die "Hadoop needs java (17)"
    (cd "$repo_root" && tests/hadoop/fetch.sh) >&2
fi

mkdir -p "$work"
work=$(cd "$work" && pwd)
data=$work/bzip2-$size
file=$data/corpus.txt.bz2
run=$work/bzip2-runs
rm -rf "$run"
mkdir -p "$run"
if [ ! -f "$file" ]; then
    log "generating $size of text and compressing it with bzip2 -9"
    rm -rf "$data" "$data.tmp"
    mkdir -p "$data.tmp"
    "$sluice" gen text --size "$size" --files 1 --seed 42 -o "$data.tmp/gen" -q
    bzip2 -9 -c "$data.tmp/gen/part-00000.txt" > "$data.tmp/corpus.txt.bz2"
    rm -rf "$data.tmp/gen"
    mv "$data.tmp" "$data"
fi
bytes=$(stat -c %s "$file")
cat "$file" > /dev/null

declare -A best
for ((i = 1; i <= runs; i++)); do
    for step in one-task split; do
        extra=()
        [ "$step" = one-task ] && extra=(--split-size 1TiB)
        rm -rf "$run/out-$step"
        log "$step, run $i of $runs"
        /usr/bin/time -f "%e %M" -o "$run/$step.time" "$sluice" run wordcount -i "$file" \
            -o "$run/out-$step" "${extra[@]}" -q > "$run/$step.log" 2>&1 \
            || { cat "$run/$step.log" >&2; die "$step failed"; }
        read -r secs kib < <(tail -n 1 "$run/$step.time")
        if [ -z "${best[$step]:-}" ] || awk -v a="$secs" -v b="${best[$step]% *}" 'BEGIN { exit !(a < b) }'; then
            best[$step]="$secs $((kib / 1024))"
        fi
    done
done

counts() { cat "$1"/part-* | LC_ALL=C sort; }
counts "$run/out-one-task" > "$run/one-task.sorted"
counts "$run/out-split" | cmp -s - "$run/one-task.sorted" || die "the split run's counts differ"

if ! $skip_hadoop; then
    log "Hadoop wordcount (local mode, $(nproc) map tasks at a time)"
    /usr/bin/time -f "%e %M" -o "$run/hadoop.time" java -cp "$repo_root/tests/hadoop:$repo_root/target/hadoop/lib/*" \
        -Dlog4j.configuration="file:$repo_root/tests/hadoop/log4j.properties" \
        org.apache.hadoop.examples.ExampleDriver wordcount \
        -D mapreduce.framework.name=local -D fs.defaultFS=file:/// \
        -D hadoop.tmp.dir="$run/hadoop-tmp" \
        -D mapreduce.local.map.tasks.maximum="$(nproc)" \
        "$file" "$run/out-hadoop" > "$run/hadoop.log" 2>&1 \
        || { tail -20 "$run/hadoop.log" >&2; die "Hadoop failed"; }
    read -r secs kib < <(tail -n 1 "$run/hadoop.time")
    best[hadoop]="$secs $((kib / 1024))"
    # Hadoop's wordcount splits on whitespace as sluice's does: the same counts.
    counts "$run/out-hadoop" | cmp -s - "$run/one-task.sorted" || die "Hadoop's counts differ"
fi

read -r one_s one_m <<<"${best[one-task]}"
read -r split_s split_m <<<"${best[split]}"
echo "| step | wall s (best of $runs) | peak RSS MiB | compressed MB/s | speed vs one task |"
echo "|---|---:|---:|---:|---:|"
echo "| one task (\`--split-size 1TiB\`) | $one_s | $one_m | $(mbps "$bytes" "$one_s") | 1.0x |"
echo "| split at blocks (32 MiB splits) | $split_s | $split_m | $(mbps "$bytes" "$split_s") | $(ratio "$one_s" "$split_s")x |"
if [ -n "${best[hadoop]:-}" ]; then
    read -r h_s h_m <<<"${best[hadoop]}"
    echo "| Hadoop 3.4 wordcount, local mode (1 run) | $h_s | $h_m | $(mbps "$bytes" "$h_s") | $(ratio "$one_s" "$h_s")x |"
fi
echo
echo "Input: $size of \`sluice gen text\` (seed 42) compressed by \`bzip2 -9\`: $bytes bytes."
echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)."
