#!/usr/bin/env bash
# bench/plugin.sh: Hadoop's own example jobs in local mode, stock, with sluice's map-output
# collector, and with the collector and sluice's native reduce-side merge (the plugins), on the
# same inputs, side by side in one run.
#
# Usage: bench/plugin.sh [options]
#
#   --size SIZE      input of each job (default 1GiB): a `sluice gen text` corpus for
#                    wordcount, SIZE/100 TeraGen rows for terasort, `sluice gen randomwriter`
#                    SequenceFiles for sort
#   --jobs LIST      comma-separated, of wordcount, terasort, sort (default all three)
#   --threads N      map and reduce task slots of the local runner
#                    (mapreduce.local.{map,reduce}.tasks.maximum; default: nproc)
#   --reducers N     reduce tasks (default: --threads)
#   --work DIR       working directory for inputs and outputs (default bench/scratch)
#   --sluice PATH    the sluice binary that generates the inputs (default: $SLUICE, else the
#                    workspace's release build, built if missing)
#   -h, --help       print this help
#
# What it needs: Java 17, the Hadoop 3.4.2 jars (`make hadoop`: target/hadoop/lib) and the
# plugin (`make plugin`: target/plugin/sluice-plugin.jar; rebuild it after changing
# crates/jni). Each job runs once stock, once with
#   -D mapreduce.job.map.output.collector.class=org.sluice.hadoop.NativeMapOutputCollector,
#      org.apache.hadoop.mapred.MapTask$MapOutputBuffer
# and once with that and
#   -D mapreduce.job.reduce.shuffle.consumer.plugin.class=org.sluice.hadoop.NativeShuffle
# (`java -cp 'target/plugin/sluice-plugin.jar:target/hadoop/lib/*'
#  org.apache.hadoop.examples.ExampleDriver JOB -D mapreduce.framework.name=local ...`),
# with the page cache dropped before each run when the script may (as root).
#
# Measured: the whole job (GNU time: wall seconds of the JVM, start included; peak RSS), and
# from the local runner's log lines (their timestamps): the map phase, from the first map
# task's start to "map task executor complete.", and the reduce phase after it. A run with
# the plugins must show their counters (sluice NATIVE_COLLECTOR_TASKS, one per map task;
# NATIVE_MERGE_TASKS, one per reduce task; a silent fallback fails the run), and every run's
# output must be the stock run's: the same bytes for wordcount and terasort, the same records
# for sort (its SequenceFiles' sync markers are random). Also reported, from the job's
# counters: the records spilled (map and reduce side; Hadoop's reduce side spills every record
# its reducers read once, in its final merge) and the bytes the native merge wrote to disk
# (sluice NATIVE_MERGE_DISK_BYTES). The local runner's FILE: byte counters are not used: in
# local mode they add up the whole JVM's file system statistics once per task.
#
# Prints a Markdown table and writes it to WORK/plugin-results.md. Exit status: 0 on success,
# 1 if a run fails or the outputs differ, 2 for usage errors.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
. "$script_dir/lib.sh"

size=1GiB
jobs=wordcount,terasort,sort
threads=$(nproc)
reducers=
work=$script_dir/scratch
sluice=${SLUICE:-}

while [[ $# -gt 0 ]]; do
    case $1 in
        --size) size=${2:?}; shift 2 ;;
        --jobs) jobs=${2:?}; shift 2 ;;
        --threads) threads=${2:?}; shift 2 ;;
        --reducers) reducers=${2:?}; shift 2 ;;
        --work) work=${2:?}; shift 2 ;;
        --sluice) sluice=${2:?}; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "plugin.sh: unknown option $1" >&2; echo "Try 'bench/plugin.sh --help'." >&2; exit 2 ;;
    esac
done
reducers=${reducers:-$threads}
[[ $threads =~ ^[1-9][0-9]*$ && $reducers =~ ^[1-9][0-9]*$ ]] \
    || { echo "plugin.sh: --threads and --reducers take numbers" >&2; exit 2; }
for job in ${jobs//,/ }; do
    case $job in wordcount|terasort|sort) ;; *) echo "plugin.sh: unknown job $job" >&2; exit 2 ;; esac
done

require_gnu_time
find_sluice
(cd "$repo_root" && tests/hadoop/fetch.sh) >&2
jar=$repo_root/target/plugin/sluice-plugin.jar
[[ -f $jar ]] || die "the plugin is missing: run make plugin (it builds $jar)"
hadoop_lib=$repo_root/target/hadoop/lib

mkdir -p "$work"
work=$(cd "$work" && pwd)
bytes=$(python3 -c "
import re, sys
m = re.fullmatch(r'(\d+)\s*(?:([KMGT])(i?)B?)?', sys.argv[1], re.I)
if not m: sys.exit('plugin.sh: --size: use a size such as 256MiB or 1GiB')
power = 'KMGT'.index(m.group(2).upper()) + 1 if m.group(2) else 0
print(int(m.group(1)) * (1024 if m.group(3) else 1000) ** power)" "$size")
run=$work/plugin-run
rm -rf "$run"
mkdir -p "$run/conf"
# The local runner's task lines, the job client's, and the collector's, with timestamps.
cat > "$run/conf/log4j.properties" <<'EOF'
log4j.rootLogger=WARN,console
log4j.logger.org.apache.hadoop.mapreduce.Job=INFO
log4j.logger.org.apache.hadoop.mapred.LocalJobRunner=INFO
log4j.logger.org.sluice=INFO
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n
EOF

# input NAME COMMAND...: generates an input once (kept while its _SUCCESS is there).
input() {
    local dir=$work/$1
    shift
    if [[ ! -e $dir/_SUCCESS ]]; then
        rm -rf "$dir"
        log "generating $dir"
        "$@" --output "$dir" >&2
    fi
    echo "$dir"
}

# hadoop_job NAME VARIANT ARGS...: one example job (VARIANT: stock, collector or merge),
# timed, its log in $run/NAME.log.
hadoop_job() {
    local name=$1 variant=$2
    shift 2
    local defines=(-D mapreduce.framework.name=local -D fs.defaultFS=file:///
        -D "mapreduce.local.map.tasks.maximum=$threads"
        -D "mapreduce.local.reduce.tasks.maximum=$threads"
        -D "hadoop.tmp.dir=$run/hadoop-tmp")
    if [[ $variant != stock ]]; then
        defines+=(-D 'mapreduce.job.map.output.collector.class=org.sluice.hadoop.NativeMapOutputCollector,org.apache.hadoop.mapred.MapTask$MapOutputBuffer')
    fi
    if [[ $variant == merge ]]; then
        defines+=(-D 'mapreduce.job.reduce.shuffle.consumer.plugin.class=org.sluice.hadoop.NativeShuffle')
    fi
    local program=$1
    shift
    drop_caches
    log "$name"
    /usr/bin/time -f '%e %M' -o "$run/$name.time" \
        java -cp "$run/conf:$jar:$hadoop_lib/*" org.apache.hadoop.examples.ExampleDriver \
        "$program" "${defines[@]}" "$@" > "$run/$name.log" 2>&1 \
        || { tail -n 40 "$run/$name.log" >&2; die "$name failed"; }
    rm -rf "$run/hadoop-tmp"
    if [[ $variant != stock ]] && ! grep -q "NATIVE_COLLECTOR_TASKS" "$run/$name.log"; then
        die "$name: the collector was not used (no NATIVE_COLLECTOR_TASKS counter in $run/$name.log)"
    fi
    if [[ $variant == merge ]] && ! grep -q "NATIVE_MERGE_TASKS" "$run/$name.log"; then
        die "$name: the native merge was not used (no NATIVE_MERGE_TASKS counter in $run/$name.log)"
    fi
}

# counters NAME: "spilled_records merge_disk_mb" of a finished run's counters.
counters() {
    python3 - "$run/$1.log" <<'PY'
import sys
found = {}
for line in open(sys.argv[1], errors="replace"):
    name, _, value = line.strip().partition("=")
    if value.isdigit():
        found[name] = int(value)
print(found.get("Spilled Records", 0), f"{found.get('NATIVE_MERGE_DISK_BYTES', 0) / 1e6:.0f}")
PY
}

# phases NAME: "wall_s rss_mib map_s reduce_s" of a finished run.
phases() {
    local wall kib
    read -r wall kib < "$run/$1.time"
    python3 - "$run/$1.log" "$wall" "$kib" <<'PY'
import datetime, sys
log, wall, kib = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
def at(line):
    return datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f")
first_map = maps_done = reduces_done = None
for line in open(log, errors="replace"):
    if "Starting task: attempt_" in line and "_m_" in line and first_map is None:
        first_map = at(line)
    elif "map task executor complete." in line:
        maps_done = at(line)
    elif "reduce task executor complete." in line:
        reduces_done = at(line)
if not (first_map and maps_done and reduces_done):
    sys.exit(f"{log}: the local runner's task lines are missing")
print(f"{wall:.1f} {kib // 1024} {(maps_done - first_map).total_seconds():.1f} "
      f"{(reduces_done - maps_done).total_seconds():.1f}")
PY
}

# seq_records DIR: a digest of the records of DIR's uncompressed SequenceFile part files, in
# order, without their sync markers.
seq_records() {
    python3 - "$1" <<'PY'
import glob, hashlib, struct, sys
digest = hashlib.sha256()
for path in sorted(glob.glob(sys.argv[1] + "/part-*")):
    b = open(path, "rb").read()
    assert b[:4] == b"SEQ\x06", path
    i = 4
    def vint():
        global i
        first = struct.unpack_from("b", b, i)[0]; i += 1
        if first >= -112:
            return first
        n = -119 - first if first < -120 else -111 - first
        v = int.from_bytes(b[i:i + n - 1], "big"); i += n - 1
        return ~v if first < -120 else v
    for _ in range(2):
        n = vint(); i += n
    assert b[i:i + 2] == b"\0\0", f"{path} is compressed"
    i += 2
    count = struct.unpack_from(">i", b, i)[0]; i += 4
    for _ in range(count):
        n = vint(); i += n
        n = vint(); i += n
    i += 16
    while i < len(b):
        length = struct.unpack_from(">i", b, i)[0]; i += 4
        if length == -1:
            i += 16
            continue
        digest.update(b[i:i + 4 + length]); i += 4 + length
print(digest.hexdigest())
PY
}

# same NAME VARIANT KIND: the stock and VARIANT outputs of job NAME are the same (KIND: bytes,
# records).
same() {
    local stock=$run/$1-stock-out plugin=$run/$1-$2-out
    shift
    if [[ $2 == bytes ]]; then
        diff -rq -x '.*' -x '_*' "$stock" "$plugin" > /dev/null \
            || die "$1: the outputs with and without the plugin differ"
    else
        [[ $(seq_records "$stock") == $(seq_records "$plugin") ]] \
            || die "$1: the records with and without the plugin differ"
    fi
}

declare -A result
for job in ${jobs//,/ }; do
    case $job in
        wordcount)
            in=$(input "text-$size" "$sluice" gen text --size "$size" --seed 42 --quiet)
            args=(wordcount -D "mapreduce.job.reduces=$reducers" "$in") ;;
        terasort)
            in=$(input "teragen-$size" "$sluice" run teragen --rows "$((bytes / 100))" --quiet)
            args=(terasort -D "mapreduce.job.reduces=$reducers" "$in") ;;
        sort)
            in=$(input "randomwriter-$size" "$sluice" gen randomwriter --size "$size" \
                --bytes-per-map 128MiB --quiet)
            args=(sort -r "$reducers" "$in") ;;
    esac
    for variant in stock collector merge; do
        hadoop_job "$job-$variant" "$variant" "${args[0]}" "${args[@]:1}" "$run/$job-$variant-out"
        result[$job-$variant]="$(phases "$job-$variant") $(counters "$job-$variant")"
    done
    for variant in collector merge; do
        if [[ $job == sort ]]; then same "$job" "$variant" records; else same "$job" "$variant" bytes; fi
    done
    rm -rf "$run/$job-stock-out" "$run/$job-collector-out" "$run/$job-merge-out"
done

report=$work/plugin-results.md
{
    echo "| job | Hadoop | job s | map phase s | reduce phase s | peak RSS MiB | spilled records | native merge disk MB | job speed-up | map speed-up | reduce speed-up |"
    echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    for job in ${jobs//,/ }; do
        read -r sw sr sm sd ss _ <<<"${result[$job-stock]}"
        echo "| $job | stock | $sw | $sm | $sd | $sr | $ss | | | | |"
        for variant in collector merge; do
            read -r pw pr pm pd ps pdisk <<<"${result[$job-$variant]}"
            label="with sluice's collector"
            disk=
            if [[ $variant == merge ]]; then
                label="with sluice's collector and merge"
                disk=$pdisk
            fi
            echo "| $job | $label | $pw | $pm | $pd | $pr | $ps | $disk | $(ratio "$sw" "$pw")× | $(ratio "$sm" "$pm")× | $(ratio "$sd" "$pd")× |"
        done
    done
    echo
    echo "Inputs: $size each; Hadoop 3.4.2 local mode, $threads map and reduce slots, $reducers" \
        "reduce tasks, default io.sort.mb; outputs the same with and without the plugins;" \
        "page cache $cache_note; $(nproc) cores, $(java -version 2>&1 | head -n 1)."
} | tee "$report"
