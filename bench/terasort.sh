#!/usr/bin/env bash
# bench/terasort.sh: the sort benchmark — sluice terasort against the disk's floor, GNU sort
# and Apache Hadoop's TeraSort (local mode), on the same TeraGen rows, in one run.
#
# Usage: bench/terasort.sh [options]
#
#   --rows N          rows for the large comparison (default 100m = 10 GB): sluice, the floor
#                     and GNU sort
#   --hadoop-rows N   rows for the comparison with Hadoop (default 10m = 1 GB); 0 skips it
#   --memory SIZE     sluice's budget and GNU sort's -S (default 1GiB)
#   --reducers N      part files of sluice and Hadoop (default 8)
#   --work DIR        working directory (default bench/scratch); needs about 4x the input free
#   --sluice PATH     the sluice binary (default: target/release/sluice, built if missing)
#   --skip-gnu-sort   leave GNU sort out
#   -h, --help        print this help
#
# Steps, each timed with GNU time (wall seconds, peak RSS); the page cache is dropped before
# each when the script may (as root), so that every step reads its input from the device:
#   floor     cat of the rows into one file, then sync (read + write through the page cache),
#             and dd with O_DIRECT on both sides (read + write of the device itself)
#   sluice    sluice run terasort --memory M --reducers R, then teravalidate: the checksum
#             must equal teragen's and the order must hold
#   gnu sort  LC_ALL=C sort -S M --parallel=CORES on the rows as 100-byte lines
#             (bench/terasort/to_lines.py; not timed)
#   hadoop    Hadoop 3.4.2 TeraSort (jars of `make hadoop`), local mode with as many map and
#             reduce tasks at once as cores, against sluice on the same smaller input
# Prints a Markdown report and writes it to WORK/terasort-results.md.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
rows=100m
hadoop_rows=10m
memory=1GiB
reducers=8
work=$script_dir/scratch
sluice=${SLUICE:-}
skip_gnu_sort=false

. "$script_dir/lib.sh"

while [ $# -gt 0 ]; do
    case $1 in
        --rows) rows=$2; shift 2 ;;
        --hadoop-rows) hadoop_rows=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --reducers) reducers=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --sluice) sluice=$2; shift 2 ;;
        --skip-gnu-sort) skip_gnu_sort=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "terasort.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

require_gnu_time
find_sluice
if [ "$hadoop_rows" != 0 ]; then
    (cd "$repo_root" && tests/hadoop/fetch.sh) >&2
fi
cores=$(nproc)
gnu_memory=$(echo "$memory" | sed -e 's/GiB$/G/' -e 's/MiB$/M/' -e 's/KiB$/K/')

mkdir -p "$work"
work=$(cd "$work" && pwd)
run=$work/terasort-run
rm -rf "$run"
mkdir -p "$run"


# teragen_to DIR ROWS: writes the rows, prints the checksum.
teragen_to() {
    "$sluice" run teragen --rows "$2" --output "$1" 2>&1 | sed -n 's/^  checksum \([0-9a-f]*\).*/\1/p'
}

# validate DIR CHECKSUM: teravalidate must accept DIR with that checksum.
validate() {
    rm -rf "$run/report"
    "$sluice" run teravalidate --input "$1" --output "$run/report" -q \
        || die "teravalidate rejects $1"
    grep -qx "checksum	$2" "$run/report/part-r-00000" \
        || die "checksum of $1 is not teragen's $2: $(cat "$run/report/part-r-00000")"
    rm -rf "$run/report"
}

if [ "$hadoop_rows" != 0 ]; then
    small=$run/small
    small_checksum=$(teragen_to "$small" "$hadoop_rows")
    small_bytes=$(du -cb "$small"/part-* | tail -n 1 | cut -f 1)
    # sluice first, and this comparison before the large one: on the measured VM, a process
    # started right after one that freed gigabytes (a JVM, GNU sort) runs slower (sluice:
    # 2.1 s alone, 2.6 s right after Hadoop).
    timed sluice-small "$sluice" run terasort --input "$small" --output "$run/sorted-small" \
        --memory "$memory" --reducers "$reducers" --spill-dir "$run"
    small_secs=$secs
    small_rss=$rss_mib
    validate "$run/sorted-small" "$small_checksum"
    rm -rf "$run/sorted-small"
    timed hadoop java -cp "$repo_root/tests/hadoop:$repo_root/target/hadoop/lib/*" \
        org.apache.hadoop.examples.ExampleDriver terasort \
        -D mapreduce.framework.name=local -D fs.defaultFS=file:/// \
        -D "hadoop.tmp.dir=$run/hadoop-tmp" -D "mapreduce.job.reduces=$reducers" \
        -D "mapreduce.local.map.tasks.maximum=$cores" \
        -D "mapreduce.local.reduce.tasks.maximum=$cores" \
        "$small" "$run/hadoop-sorted"
    hadoop_secs=$secs
    hadoop_rss=$rss_mib
    validate "$run/hadoop-sorted" "$small_checksum"
    rm -rf "$run/hadoop-sorted" "$run/hadoop-tmp" "$small"
fi

log "generating $rows rows"
input=$run/rows
checksum=$(teragen_to "$input" "$rows")
[ -n "$checksum" ] || die "teragen printed no checksum"
bytes=$(du -cb "$input"/part-* | tail -n 1 | cut -f 1)

timed floor-cat sh -c "cat '$input'/part-* > '$run/copy' && sync '$run/copy'"
cat_secs=$secs
rm -f "$run/copy"
mkdir -p "$run/copy"
timed floor-dd sh -c "for f in '$input'/part-*; do dd if=\"\$f\" of='$run/copy'/\"\$(basename \"\$f\")\" bs=4M iflag=direct oflag=direct status=none; done"
dd_secs=$secs
rm -rf "$run/copy"

timed sluice "$sluice" run terasort --input "$input" --output "$run/sorted" \
    --memory "$memory" --reducers "$reducers" --spill-dir "$run" --report "$run/sluice.json"
sluice_secs=$secs
sluice_rss=$rss_mib
validate "$run/sorted" "$checksum"
rm -rf "$run/sorted"

if ! $skip_gnu_sort; then
    log "converting the rows to lines for GNU sort"
    python3 "$script_dir/terasort/to_lines.py" "$run/lines" "$input"/part-*
    mkdir -p "$run/sort-tmp"
    timed gnu-sort env LC_ALL=C sort -S "$gnu_memory" --parallel="$cores" -T "$run/sort-tmp" \
        -o "$run/lines.sorted" "$run/lines"
    sort_secs=$secs
    sort_rss=$rss_mib
    LC_ALL=C sort -c "$run/lines.sorted" || die "GNU sort's output is not sorted"
    [ "$(wc -l < "$run/lines.sorted")" -eq $((bytes / 100)) ] || die "GNU sort lost lines"
    rm -rf "$run/lines" "$run/lines.sorted" "$run/sort-tmp"
fi
rm -rf "$input"


report=$work/terasort-results.md
{
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -sr); page cache $cache_note."
    echo
    echo "Input: $rows TeraGen rows ($bytes bytes); sluice --memory $memory --reducers $reducers."
    echo
    echo "| step | seconds | MB/s | peak RSS | sluice is |"
    echo "|---|---:|---:|---:|---|"
    echo "| sluice terasort | $sluice_secs | $(mbps "$bytes" "$sluice_secs") | $sluice_rss MiB | |"
    echo "| floor: cat + sync (read + write, page cache) | $cat_secs | $(mbps "$bytes" "$cat_secs") | | $(ratio "$cat_secs" "$sluice_secs")x the floor's speed |"
    echo "| floor: dd O_DIRECT (read + write, device) | $dd_secs | $(mbps "$bytes" "$dd_secs") | | $(ratio "$dd_secs" "$sluice_secs")x the floor's speed |"
    if ! $skip_gnu_sort; then
        echo "| LC_ALL=C sort -S $gnu_memory --parallel=$cores | $sort_secs | $(mbps "$bytes" "$sort_secs") | $sort_rss MiB | $(ratio "$sort_secs" "$sluice_secs")x faster |"
    fi
    if [ "$hadoop_rows" != 0 ]; then
        echo
        echo "Input: $hadoop_rows TeraGen rows ($small_bytes bytes)."
        echo
        echo "| step | seconds | MB/s | peak RSS | sluice is |"
        echo "|---|---:|---:|---:|---|"
        echo "| sluice terasort | $small_secs | $(mbps "$small_bytes" "$small_secs") | $small_rss MiB | |"
        echo "| Hadoop 3.4.2 TeraSort, local mode | $hadoop_secs | $(mbps "$small_bytes" "$hadoop_secs") | $hadoop_rss MiB | $(ratio "$hadoop_secs" "$small_secs")x faster |"
    fi
} > "$report"
cat "$report"
