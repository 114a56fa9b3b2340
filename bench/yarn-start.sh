#!/usr/bin/env bash
# bench/yarn-start.sh: how long a small job takes on YARN, from the `sluice` command's start to
# its end, for two builds of sluice side by side (its binary and its sluice-yarn.jar), on one
# YARN cluster: Hadoop 3.4.3's in-JVM MiniYARNCluster with its MiniDFSCluster
# (tests/yarn/MiniYarn.java, 2 NodeManagers), in a JVM of its own on this machine. On a job
# this small the time is the application's start and end (staging, the master, the
# containers), which is what the builds may differ in.
#
# Usage: bench/yarn-start.sh --a SLUICE:JAR --b SLUICE:JAR [options]
#
#   --a SLUICE:JAR   the first build: its sluice binary and its sluice-yarn.jar
#   --b SLUICE:JAR   the second build (default: target/release/sluice:target/yarn/sluice-yarn.jar)
#   --rounds N       rounds (default 5); each runs the job once with each build, the first
#                    build alternating from round to round
#   --workers N      workers (containers) each job asks for (default 2)
#   --work DIR       working directory (default bench/scratch/yarn-start)
#   -h, --help       print this help
#
# Needs Java 17 and `make yarn` (the minicluster's jars in target/yarn/lib). The job: word
# count of 3 files of 3,000 lines on the cluster's HDFS into HDFS, `--cluster yarn:N --memory
# 128MiB --threads 2`, the coordinator on 127.0.0.1. Prints each run's wall time and the
# medians, and writes them to WORK/results.md.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
. "$script_dir/lib.sh"

a=""
b="$repo_root/target/release/sluice:$repo_root/target/yarn/sluice-yarn.jar"
rounds=5
workers=2
work=$script_dir/scratch/yarn-start

while [ $# -gt 0 ]; do
    case $1 in
        --a) a=$2; shift 2 ;;
        --b) b=$2; shift 2 ;;
        --rounds) rounds=$2; shift 2 ;;
        --workers) workers=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown option $1 (try --help)" ;;
    esac
done
[ -n "$a" ] || die "--a SLUICE:JAR is required"
for build in "$a" "$b"; do
    [ -x "${build%%:*}" ] || die "${build%%:*} is not an executable"
    [ -f "${build#*:}" ] || die "${build#*:} is not a file"
done
lib=$repo_root/target/yarn/lib
[ -f "$lib/.complete" ] || die "$lib is incomplete: run make yarn"

rm -rf "$work"
mkdir -p "$work/classes" "$work/tmp"
javac -nowarn -d "$work/classes" -cp "$lib/*" "$repo_root/tests/yarn/MiniYarn.java"

# The cluster, until this script ends (it halts when its stdin closes).
mkfifo "$work/stdin"
java -Djava.net.preferIPv4Stack=true -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xmx2g \
    --add-opens=java.base/java.lang=ALL-UNNAMED -Djava.io.tmpdir="$work/tmp" \
    -Dlog4j.configuration="file:$repo_root/tests/yarn/conf/log4j.properties" \
    -Dyarn.root.logger=INFO,file -Dyarn.log.file="$work/miniyarn.log" \
    -cp "$work/classes:$lib/*" MiniYarn --base "$work/cluster" --conf "$work/conf" --lib "$lib" \
    <"$work/stdin" >"$work/ready" 2>"$work/miniyarn.err" &
cluster=$!
exec 3>"$work/stdin"
trap 'exec 3>&-; wait "$cluster" 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
    grep -q READY "$work/ready" 2>/dev/null && break
    kill -0 "$cluster" 2>/dev/null || die "MiniYarn did not start: $(tail -5 "$work/miniyarn.err")"
    sleep 0.5
done
grep -q READY "$work/ready" || die "MiniYarn did not start within 120 s"
log "cluster up (configuration in $work/conf)"

export HADOOP_CONF_DIR=$work/conf
export SLUICE_YARN_CLASSPATH="$lib/*"
hadoop_fs() {
    java -cp "$work/conf:$lib/*" org.apache.hadoop.fs.FsShell "$@" >/dev/null 2>&1
}
mkdir -p "$work/in"
for f in 0 1 2; do
    python3 -c "
import sys
for i in range(3000):
    print(f'w{i % 13} w{(i * 7 + $f) % 31} x$f\tv{i}')" >"$work/in/f$f.txt"
done
hadoop_fs -mkdir -p /bench/in
hadoop_fs -put "$work/in"/f*.txt /bench/in

run_one() { # LABEL BUILD N
    local bin=${2%%:*} jar=${2#*:} start end
    start=$(date +%s.%N)
    SLUICE_YARN_JAR=$jar "$bin" run wordcount -q -i /bench/in -o "/bench/out-$1-$3" -r 2 \
        --cluster "yarn:$workers" --memory 128MiB --threads 2 \
        -Dsluice.coordinator.address=127.0.0.1 </dev/null >"$work/$1-$3.log" 2>&1 ||
        die "the job of build $1 failed: $(tail -5 "$work/$1-$3.log")"
    end=$(date +%s.%N)
    python3 -c "print(f'{$end - $start:.2f}')"
}

declare -a times_a times_b
for round in $(seq 1 "$rounds"); do
    if [ $((round % 2)) -eq 1 ]; then
        times_a+=("$(run_one a "$a" "$round")")
        times_b+=("$(run_one b "$b" "$round")")
    else
        times_b+=("$(run_one b "$b" "$round")")
        times_a+=("$(run_one a "$a" "$round")")
    fi
    log "round $round: a ${times_a[-1]} s, b ${times_b[-1]} s"
done

median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
{
    echo "| build | each run (s) | median (s) |"
    echo "|---|---|---:|"
    echo "| a: ${a} | ${times_a[*]} | $(median "${times_a[@]}") |"
    echo "| b: ${b} | ${times_b[*]} | $(median "${times_b[@]}") |"
} | tee "$work/results.md"
