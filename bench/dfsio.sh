#!/usr/bin/env bash
# bench/dfsio.sh: HDFS write and read throughput, `sluice run dfsio` against Apache Hadoop's own
# TestDFSIO, on the same HDFS: Hadoop 3.4.3's in-JVM cluster (MiniDFSCluster, started by
# Hadoop's org.apache.hadoop.test.MiniDFSClusterManager) in a JVM of its own on this machine.
#
# Usage: bench/dfsio.sh [options]
#
#   --files N        files per test (default 4)
#   --size MIB       mebibytes per file (default 256): sluice --size MIBMiB, TestDFSIO -size MIBMB
#                    (TestDFSIO's MB is 2^20 bytes)
#   --rounds N       rounds (default 1); each writes then reads with both systems, the first
#                    system alternating from round to round (sluice first in odd rounds)
#   --threads N      files at once: sluice --threads, and the map tasks LocalJobRunner runs at
#                    once for TestDFSIO (mapreduce.local.map.tasks.maximum) (default nproc)
#   --datanodes N    DataNodes of the cluster (default 1); replication is 1 for both systems
#   --work DIR       working directory (default bench/scratch); holds the cluster's storage,
#                    about 2 x FILES x SIZE (both systems' files are kept for their reads)
#   --sluice PATH    the sluice binary (default: target/release/sluice, built if missing)
#   -h, --help       print this help
#
# Needs Java 17, Maven and GNU time. The jars (bench/dfsio/pom.xml: hadoop-minicluster and the
# tests jar of hadoop-mapreduce-client-jobclient, 3.4.3, with their dependencies, about 100 MB
# kept in ~/.m2) are fetched into target/dfsio/lib the first time.
#
# TestDFSIO runs as Hadoop runs it without a cluster of its own: a MapReduce job in local mode
# (LocalJobRunner, in the client's JVM), -D fs.defaultFS=hdfs://127.0.0.1:PORT; its control
# files and data go under /benchmarks/TestDFSIO, sluice's under /benchmarks/sluice-dfsio. Each
# system appends its result blocks to its own file (WORK/dfsio-run/{sluice,hadoop}-results.log),
# from which the table is made. For every run it also records the client process's wall time and
# CPU time (GNU time) and the CPU time the cluster's JVM (NameNode and DataNodes) used meanwhile
# (/proc/PID/stat). The DataNodes' block files stay in the page cache: reads are of memory, and
# writes go to the page cache. Prints a Markdown report and writes it to WORK/dfsio-results.md.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
files=4
size=256
rounds=1
threads=$(nproc)
datanodes=1
work=$script_dir/scratch
sluice=${SLUICE:-}

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "dfsio.sh: error: $*" >&2; exit 1; }
log() { echo "dfsio.sh: $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
        --files) files=$2; shift 2 ;;
        --size) size=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --datanodes) datanodes=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --sluice) sluice=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "dfsio.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

for n in "$files" "$size" "$rounds" "$threads" "$datanodes"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "expected a positive whole number, got '$n'"
done
[ -x /usr/bin/time ] || die "GNU time is needed at /usr/bin/time (apt-get install time)"
command -v java >/dev/null 2>&1 || die "Java 17 (java) is needed"
if [ -z "$sluice" ]; then
    sluice=${CARGO_TARGET_DIR:-$repo_root/target}/release/sluice
    [ -x "$sluice" ] || (cd "$repo_root" && cargo build --release -p sluice-cli)
fi

# The jars, fetched once (Maven keeps its downloads in ~/.m2).
lib=$repo_root/target/dfsio/lib
if ! [ -f "$lib/.complete" ]; then
    command -v mvn >/dev/null 2>&1 || die "Maven (mvn) is needed to fetch Hadoop's jars"
    log "downloading Hadoop 3.4.3's jars into $lib"
    rm -rf "$lib"
    mkdir -p "$lib"
    # Maven writes its own target/ next to the pom: kept out of the source tree.
    mvn -q -B -Dstyle.color=never -f "$script_dir/dfsio/pom.xml" \
        -Dproject.build.directory="$repo_root/target/dfsio/mvn" \
        dependency:copy-dependencies -DoutputDirectory="$lib" -DincludeScope=runtime \
        > "$repo_root/target/dfsio/fetch.log" 2>&1 \
        || { cat "$repo_root/target/dfsio/fetch.log" >&2; die "Maven could not fetch the jars"; }
    touch "$lib/.complete"
fi
log4j=file:$script_dir/dfsio/log4j.properties

mkdir -p "$work"
work=$(cd "$work" && pwd)
run=$work/dfsio-run
rm -rf "$run"
mkdir -p "$run"

# The cluster: its own JVM, storage under $run/dfs, every server on 127.0.0.1. Blocks of
# 128 MiB (HDFS's default), replication 1 (one copy per block, whatever the DataNodes).
log "starting MiniDFSCluster ($datanodes DataNode(s))"
java -Dlog4j.configuration="$log4j" -Ddfsio.root.logger=INFO,file \
    -Ddfsio.log.file="$run/minidfs.log" -cp "$lib/*" \
    org.apache.hadoop.test.MiniDFSClusterManager -datanodes "$datanodes" -format \
    -writeDetails "$run/cluster.json" \
    -D "hdfs.minidfs.basedir=$run/dfs" -D dfs.blocksize=134217728 -D dfs.replication=1 \
    -D dfs.datanode.address=127.0.0.1:0 -D dfs.datanode.http.address=127.0.0.1:0 \
    -D dfs.datanode.ipc.address=127.0.0.1:0 \
    > "$run/minidfs.out" 2>&1 &
cluster=$!
trap 'kill "$cluster" 2>/dev/null || true; wait "$cluster" 2>/dev/null || true; rm -rf "$run/dfs"' EXIT
for _ in $(seq 120); do
    [ -s "$run/cluster.json" ] && break
    kill -0 "$cluster" 2>/dev/null || { tail -n 30 "$run/minidfs.out" >&2; die "the cluster exited"; }
    sleep 1
done
port=$(sed -n 's/.*"namenode_port" *: *\([0-9]*\).*/\1/p' "$run/cluster.json")
[ -n "$port" ] || die "the cluster did not come up within 120 s (see $run/minidfs.log)"
nn=hdfs://127.0.0.1:$port
log "cluster up: $nn"

ticks=$(getconf CLK_TCK)
# CPU seconds the cluster's JVM has used so far (user + system, all its threads).
cluster_cpu() { awk -v t="$ticks" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$cluster/stat"; }
# last_value FILE LABEL: the value of LABEL in the last result block of FILE.
last_value() { grep "^ *$2: " "$1" | tail -n 1 | sed 's/^[^:]*: //'; }

rows=$run/rows.md
: > "$rows"
# measure SYSTEM TEST ROUND COMMAND...: runs one test, adds its row to the table.
measure() {
    local system=$1 test=$2 round=$3
    shift 3
    local name=$system-$test-$round results=$run/$system-results.log before after blocks
    log "round $round: $system $test"
    blocks=$(grep -c "^----- TestDFSIO ----- : " "$results" 2>/dev/null || true)
    before=$(cluster_cpu)
    /usr/bin/time -f "%e %U %S %M" -o "$run/$name.time" "$@" > "$run/$name.log" 2>&1 \
        || { tail -n 40 "$run/$name.log" >&2; die "$system $test failed (log: $run/$name.log)"; }
    after=$(cluster_cpu)
    local wall user sys kib
    read -r wall user sys kib < <(tail -n 1 "$run/$name.time")
    [ "$(grep -c "^----- TestDFSIO ----- : " "$results")" = $((${blocks:-0} + 1)) ] \
        && [ "$(grep "^----- TestDFSIO ----- : " "$results" | tail -n 1)" = "----- TestDFSIO ----- : $test" ] \
        || die "$system wrote no $test result to $results"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$round" "$system" "$test" \
        "$(last_value "$results" "Throughput mb/sec")" \
        "$(last_value "$results" "Average IO rate mb/sec")" \
        "$(last_value "$results" "IO rate std deviation")" \
        "$(last_value "$results" "Test exec time sec")" \
        "$wall" \
        "$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')" \
        "$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.2f", a - b }')" >> "$rows"
}

sluice_test() {
    measure sluice "$1" "$2" "$sluice" run dfsio "--$1" --files "$files" --size "${size}MiB" \
        --threads "$threads" --output "$nn/benchmarks/sluice-dfsio" \
        --result-file "$run/sluice-results.log" -q
}
hadoop_test() {
    measure hadoop "$1" "$2" java -Dlog4j.configuration="$log4j" -cp "$lib/*" \
        org.apache.hadoop.fs.TestDFSIO -D mapreduce.framework.name=local \
        -D "fs.defaultFS=$nn" -D dfs.replication=1 -D dfs.blocksize=134217728 \
        -D "mapreduce.local.map.tasks.maximum=$threads" -D "hadoop.tmp.dir=$run/hadoop-tmp" \
        "-$1" -nrFiles "$files" -size "${size}MB" -resFile "$run/hadoop-results.log"
}

load_before=$(cut -d ' ' -f 1-3 /proc/loadavg)
for round in $(seq "$rounds"); do
    if [ $((round % 2)) = 1 ]; then order="sluice hadoop"; else order="hadoop sluice"; fi
    for test in write read; do
        for system in $order; do
            "${system}_test" "$test" "$round"
        done
    done
done

load_after=$(cut -d ' ' -f 1-3 /proc/loadavg)
java_version=$(java -version 2>&1 | head -n 1)
report=$work/dfsio-results.md
{
    echo "Machine: $(nproc) cores ($(grep -m 1 'model name' /proc/cpuinfo | sed 's/.*: //')), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo) RAM, $(uname -sr); $java_version."
    echo
    echo "Cluster: Hadoop 3.4.3 MiniDFSCluster, $datanodes DataNode(s), 128 MiB blocks, replication 1, in one JVM on this machine."
    echo "Test: $files files of $size MiB, $threads at once; $rounds round(s). Load average (1, 5, 15 min) before: $load_before; after: $load_after."
    echo
    echo "| round | system | test | throughput mb/sec | average IO rate mb/sec | IO rate std dev | test exec time s | process wall s | client CPU s | cluster JVM CPU s |"
    echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
    cat "$rows"
    echo
    echo "sluice: $sluice run dfsio --write|--read --files $files --size ${size}MiB --threads $threads --output hdfs://127.0.0.1:PORT/benchmarks/sluice-dfsio"
    echo "hadoop: java -cp 'target/dfsio/lib/*' org.apache.hadoop.fs.TestDFSIO -D mapreduce.framework.name=local -D fs.defaultFS=hdfs://127.0.0.1:PORT -D dfs.replication=1 -D dfs.blocksize=134217728 -D mapreduce.local.map.tasks.maximum=$threads -write|-read -nrFiles $files -size ${size}MB"
} | tee "$report"
log "report in $report"
