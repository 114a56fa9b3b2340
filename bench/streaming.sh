#!/usr/bin/env bash
# bench/streaming.sh: Hadoop Streaming jobs through Apache Hadoop (local mode) and sluice.
#
# Usage: bench/streaming.sh [options]
#
#   --size SIZE      corpus size (default 256MiB), generated with `sluice gen text --seed 42`
#   --work DIR       working directory (default bench/scratch)
#   --runs N         timed runs of each sluice job; the best is reported (default 3). Hadoop
#                    runs each job once (it takes minutes).
#   --sluice PATH    the sluice binary (default: target/release/sluice, built if missing)
#   --skip-hadoop    time only sluice and the floor
#   -h, --help       print this help
#
# Jobs, each given to both systems with the same arguments:
#   python   -files wc_map.py,wc_reduce.py -mapper 'python3 wc_map.py'
#            -reducer 'python3 wc_reduce.py' (bench/streaming/)
#   cat      -mapper /bin/cat -reducer /bin/cat
# Hadoop 3.4.2 runs from the jars of `make hadoop` (target/hadoop/lib), with
# -D mapreduce.framework.name=local -D fs.defaultFS=file:///. sluice runs with its defaults
# (1 GiB budget, one task per core). The floor of the Python job is the scripts' own time:
# `python3 wc_map.py < corpus | LC_ALL=C sort | python3 wc_reduce.py`, with the time of the
# sort subtracted (timed separately on the map output). Outputs of the two systems are compared
# (sorted lines); a difference fails the run.
#
# PYTHONUNBUFFERED is unset for every run (see below).
# Measured with GNU time (wall seconds, peak RSS of the process tree's largest process).
# Prints a Markdown report and writes it to WORK/streaming-results.md.

set -euo pipefail

# Python programs write to their pipes in blocks unless told otherwise; a PYTHONUNBUFFERED
# inherited from the caller's environment would make every print() a system call and measure
# that instead. Every system gets the same environment.
unset PYTHONUNBUFFERED

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
size=256MiB
work=$script_dir/scratch
runs=3
sluice=${SLUICE:-}
skip_hadoop=false

. "$script_dir/lib.sh"

while [ $# -gt 0 ]; do
    case $1 in
        --size) size=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --sluice) sluice=$2; shift 2 ;;
        --skip-hadoop) skip_hadoop=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "streaming.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

require_gnu_time
find_sluice
if ! $skip_hadoop; then
    (cd "$repo_root" && tests/hadoop/fetch.sh) >&2
fi
hadoop_lib=$repo_root/target/hadoop/lib

mkdir -p "$work"
work=$(cd "$work" && pwd)
corpus=$work/corpus-$size
if [ ! -d "$corpus" ]; then
    log "generating $size corpus"
    rm -rf "$corpus.tmp"
    "$sluice" gen text --size "$size" --output "$corpus.tmp" --seed 42 --quiet
    mv "$corpus.tmp" "$corpus"
fi
cat "$corpus"/* > /dev/null

jobdir=$work/streaming-jobs
rm -rf "$jobdir"
mkdir -p "$jobdir"
cp "$script_dir/streaming/wc_map.py" "$script_dir/streaming/wc_reduce.py" "$jobdir/"

python_args=(-files "$jobdir/wc_map.py,$jobdir/wc_reduce.py" -input "$corpus"
    -mapper "python3 wc_map.py" -reducer "python3 wc_reduce.py")
cat_args=(-input "$corpus" -mapper /bin/cat -reducer /bin/cat)

# Runs "$@" under GNU time in directory $1 (shifted off); prints "seconds rss_kib".
timed_in() {
    local dir=$1
    shift
    (cd "$dir" && /usr/bin/time -f '%e %M' -o "$jobdir/time" "$@" >"$jobdir/stdout" 2>"$jobdir/stderr") \
        || { tail -20 "$jobdir/stderr" >&2; die "command failed: $*"; }
    cat "$jobdir/time"
}

best=""
run_sluice() {
    local name=$1
    shift
    local best_s="" best_rss=""
    for i in $(seq 1 "$runs"); do
        rm -rf "$jobdir/out-sluice-$name"
        read -r s rss < <(timed_in "$jobdir" "$sluice" streaming "$@" -output "$jobdir/out-sluice-$name")
        log "sluice $name run $i: $s s, $rss KiB"
        if [ -z "$best_s" ] || awk "BEGIN{exit !($s < $best_s)}"; then best_s=$s; best_rss=$rss; fi
    done
    best="$best_s $best_rss"
}

run_hadoop() {
    local name=$1
    shift
    rm -rf "$jobdir/out-hadoop-$name" "$jobdir/hadoop-tmp"
    mkdir -p "$jobdir/hadoop-cwd-$name"
    cp "$jobdir/wc_map.py" "$jobdir/wc_reduce.py" "$jobdir/hadoop-cwd-$name/"
    read -r s rss < <(timed_in "$jobdir/hadoop-cwd-$name" java -cp "$repo_root/tests/hadoop:$hadoop_lib/*" \
        org.apache.hadoop.streaming.HadoopStreaming \
        -D mapreduce.framework.name=local -D fs.defaultFS=file:/// \
        -D hadoop.tmp.dir="$jobdir/hadoop-tmp" "$@" -output "$jobdir/out-hadoop-$name")
    log "hadoop $name: $s s, $rss KiB"
    best="$s $rss"
}

same_output() {
    diff <(cat "$jobdir/out-sluice-$1"/part-* | LC_ALL=C sort) \
         <(cat "$jobdir/out-hadoop-$1"/part-* | LC_ALL=C sort) > /dev/null \
        || die "sluice and Hadoop disagree on the $1 job"
}

declare -A result
for job in python cat; do
    if [ "$job" = python ]; then args=("${python_args[@]}"); else args=("${cat_args[@]}"); fi
    run_sluice "$job" "${args[@]}"; result[sluice-$job]=$best
    if ! $skip_hadoop; then
        run_hadoop "$job" "${args[@]}"; result[hadoop-$job]=$best
        same_output "$job"
    fi
done

log "timing the floor: the Python scripts alone"
read -r map_s _ < <(timed_in "$jobdir" bash -c "python3 wc_map.py < <(cat '$corpus'/*) > map.out")
read -r sort_s _ < <(timed_in "$jobdir" bash -c "LC_ALL=C sort -S 1G map.out > map.sorted")
read -r red_s _ < <(timed_in "$jobdir" bash -c "python3 wc_reduce.py < map.sorted > reduce.out")
rm -f "$jobdir/map.out" "$jobdir/map.sorted"
floor=$(awk "BEGIN{printf \"%.2f\", $map_s + $red_s}")

report=$work/streaming-results.md
{
    echo "### Streaming jobs, $size corpus ($(date -u +%Y-%m-%d))"
    echo
    echo "| job | system | wall s | peak RSS MiB | vs sluice |"
    echo "|---|---|---:|---:|---:|"
    for job in python cat; do
        read -r s rss <<<"${result[sluice-$job]}"
        echo "| $job | sluice | $s | $((rss / 1024)) | 1.0 |"
        if ! $skip_hadoop; then
            read -r hs hrss <<<"${result[hadoop-$job]}"
            echo "| $job | Hadoop 3.4.2 local | $hs | $((hrss / 1024)) | $(ratio "$hs" "$s") |"
        fi
    done
    echo
    echo "Floor of the Python job (the scripts alone, one process each, sort excluded):" \
        "map $map_s s + reduce $red_s s = $floor s."
    echo
    echo "Machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo)," \
        "$(python3 --version), $(java -version 2>&1 | head -1)."
} | tee "$report"
