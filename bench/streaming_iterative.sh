#!/usr/bin/env bash
# bench/streaming_iterative.sh: PageRank and connected components on the same graph, side by side
# in one run: sluice's built-in jobs; the same algorithms as Hadoop Streaming scripts, run by
# Apache Hadoop (local mode) and by `sluice streaming`; and, with --spark, Spark in local mode.
#
# Usage: bench/streaming_iterative.sh [options]
#
#   --scale N        R-MAT scale of the graph: 2^N vertices, 16 edges each (default 18)
#   --iterations N   PageRank iterations (default 10); connected components run until no
#                    label changes
#   --threads N      threads of every system: sluice's --threads, Hadoop's local map and
#                    reduce task slots; reduce tasks of the streaming jobs (default: nproc)
#   --memory SIZE    sluice's memory budget (default 1GiB)
#   --work DIR       working directory for inputs and outputs (default bench/scratch)
#   --sluice PATH    the sluice binary (default: $SLUICE, else the workspace's release build,
#                    built if missing)
#   --skip-hadoop    do not run Hadoop
#   --spark          run Spark too (bench/spark_iterative.py, as bench/spark.sh does: a venv
#                    bench/.venv-spark with pyspark from PyPI the first time; driver memory
#                    --memory, local[THREADS])
#   -h, --help       print this help
#
# The streaming jobs (bench/streaming/graph.py, Python 3) are what a Hadoop Streaming user
# writes: a preparation job turning the edge list into `vertex<TAB>value<TAB>adjacency` state
# lines, then one job per iteration reading the previous one's output; the driver (this
# script) reads what it needs between iterations (the vertex count, the dangling rank, the
# number of changed labels) from the `reporter:counter:` totals each system prints in its
# console output, as wrappers of Hadoop do. Both systems get the same command lines:
#   -files graph.py -mapper 'python3 graph.py STEP-map' -reducer 'python3 graph.py STEP-reduce'
#   -numReduceTasks THREADS -cmdenv VERTICES=N -cmdenv DANGLING=D
# Hadoop 3.4.2 runs from the jars of `make hadoop` (target/hadoop/lib) with
# -D mapreduce.framework.name=local -D mapreduce.local.{map,reduce}.tasks.maximum=THREADS.
#
# Spark runs PageRank and label propagation with DataFrames (bench/spark_iterative.py); its
# time is the whole process's, JVM start included.
#
# Each step is timed (wall seconds, from the command's start to its exit); every system's
# result is compared with the built-in job's (ranks to a millionth, labels exactly), and a
# difference fails the run. Prints a Markdown table (total time, mean time of an iteration,
# iterations, ratio to the built-in job) and writes it to WORK/streaming-iterative.md.
#
# Exit status: 0 on success, 1 if a run fails or the results differ, 2 for usage errors.

set -euo pipefail
# Every system gets the same Python environment (see bench/streaming.sh).
unset PYTHONUNBUFFERED

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
. "$script_dir/lib.sh"

scale=18
iterations=10
threads=$(nproc)
memory=1GiB
work=$script_dir/scratch
sluice=${SLUICE:-}
skip_hadoop=false
with_spark=false

while [[ $# -gt 0 ]]; do
    case $1 in
        --scale) scale=${2:?}; shift 2 ;;
        --iterations) iterations=${2:?}; shift 2 ;;
        --threads) threads=${2:?}; shift 2 ;;
        --memory) memory=${2:?}; shift 2 ;;
        --work) work=${2:?}; shift 2 ;;
        --sluice) sluice=${2:?}; shift 2 ;;
        --skip-hadoop) skip_hadoop=true; shift ;;
        --spark) with_spark=true; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "streaming_iterative.sh: unknown option $1" >&2
           echo "Try 'bench/streaming_iterative.sh --help'." >&2; exit 2 ;;
    esac
done
[[ $scale =~ ^[0-9]+$ && $iterations =~ ^[1-9][0-9]*$ && $threads =~ ^[1-9][0-9]*$ ]] \
    || { echo "streaming_iterative.sh: --scale, --iterations and --threads take numbers" >&2; exit 2; }

find_sluice
command -v python3 > /dev/null || die "the streaming jobs need python3"
if ! $skip_hadoop; then
    (cd "$repo_root" && tests/hadoop/fetch.sh) >&2
fi
hadoop_lib=$repo_root/target/hadoop/lib
if $with_spark; then
    spark_venv
    spark_memory=$(spark_size "$memory")
fi

mkdir -p "$work"
work=$(cd "$work" && pwd)
graph=$work/rmat-$scale-16
if [[ ! -e $graph/_SUCCESS ]]; then
    rm -rf "$graph"
    log "generating the graph: scale $scale, edge factor 16..."
    "$sluice" gen graph --scale "$scale" --edge-factor 16 --seed 42 --output "$graph" --quiet
fi
run=$work/streaming-iterative
rm -rf "$run"
mkdir -p "$run/jobs"
cp "$script_dir/streaming/graph.py" "$run/jobs/"

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

# streaming SYSTEM LOG ARGS...: one streaming job, its console output (stdout and stderr)
# into LOG; the working directory holds graph.py, as -files puts it beside the tasks.
streaming() {
    local system=$1 log=$2
    shift 2
    local common=(-files "$run/jobs/graph.py" -numReduceTasks "$threads")
    if [[ $system == hadoop ]]; then
        (cd "$run/jobs" && java -cp "$repo_root/tests/hadoop:$hadoop_lib/*" \
            org.apache.hadoop.streaming.HadoopStreaming \
            -D mapreduce.framework.name=local -D fs.defaultFS=file:/// \
            -D mapreduce.local.map.tasks.maximum="$threads" \
            -D mapreduce.local.reduce.tasks.maximum="$threads" \
            -D hadoop.tmp.dir="$run/hadoop-tmp" "${common[@]}" "$@") > "$log" 2>&1
    else
        (cd "$run/jobs" && "$sluice" streaming -D sluice.memory="$memory" \
            -D sluice.threads="$threads" "${common[@]}" "$@") > "$log" 2>&1
    fi || { tail -n 30 "$log" >&2; die "$system: the job of $log failed"; }
}

# counter LOG NAME: the value of the graph group's counter NAME in a job's console output
# (`\t\tNAME=VALUE` under `\tgraph`); 0 when the job did not report it.
counter() {
    awk -v name="$2" '
        /^\t[^\t]/ { group = substr($0, 2); sub(/[ \t]+$/, "", group) }
        group == "graph" && index($0, "\t\t" name "=") == 1 { split($0, kv, "="); value = kv[2] }
        END { print (value == "" ? 0 : value) }' "$1"
}

# steps JSON per system: "total_seconds iterations mean_iteration_seconds"
declare -A result

# pagerank_streaming SYSTEM: prepare, then $iterations iterations; output in $run/SYSTEM-pagerank.
pagerank_streaming() {
    local system=$1 dir=$run/$1-pagerank
    mkdir -p "$dir"
    local started iteration_total=0 t
    started=$(now)
    streaming "$system" "$dir/prepare.log" -input "$graph" -output "$dir/state-0" \
        -mapper "python3 graph.py pagerank-prepare-map" \
        -reducer "python3 graph.py pagerank-prepare-reduce"
    local n dangling_vertices dangling
    n=$(counter "$dir/prepare.log" vertices)
    dangling_vertices=$(counter "$dir/prepare.log" dangling_vertices)
    [[ $n -gt 0 ]] || die "$system: PageRank's preparation reported no vertices (see $dir/prepare.log)"
    dangling=$(python3 -c "import sys; print(repr(int(sys.argv[1]) / int(sys.argv[2])))" "$dangling_vertices" "$n")
    for i in $(seq 1 "$iterations"); do
        t=$(now)
        streaming "$system" "$dir/iteration-$i.log" -input "$dir/state-$((i - 1))" \
            -output "$dir/state-$i" -cmdenv "VERTICES=$n" -cmdenv "DANGLING=$dangling" \
            -mapper "python3 graph.py pagerank-map" -reducer "python3 graph.py pagerank-reduce"
        iteration_total=$(awk -v a="$iteration_total" -v b="$(elapsed "$t")" 'BEGIN { print a + b }')
        dangling=$(python3 -c "import sys; print(repr(int(sys.argv[1]) / 1e15))" \
            "$(counter "$dir/iteration-$i.log" dangling_e15)")
        rm -rf "$dir/state-$((i - 1))"
        log "$system pagerank: iteration $i done"
    done
    result[$system-pagerank]="$(elapsed "$started") $iterations $(awk -v a="$iteration_total" -v n="$iterations" 'BEGIN { printf "%.2f", a / n }')"
    ln -s "state-$iterations" "$dir/result"
}

# components_streaming SYSTEM: prepare, then iterations until a job changes no label.
components_streaming() {
    local system=$1 dir=$run/$1-components
    mkdir -p "$dir"
    local started iteration_total=0 t i=0 changed=1
    started=$(now)
    streaming "$system" "$dir/prepare.log" -input "$graph" -output "$dir/state-0" \
        -mapper "python3 graph.py components-prepare-map" \
        -reducer "python3 graph.py components-prepare-reduce"
    while [[ $changed -gt 0 ]]; do
        i=$((i + 1))
        [[ $i -le 1000 ]] || die "$system: components did not converge in 1000 iterations"
        t=$(now)
        streaming "$system" "$dir/iteration-$i.log" -input "$dir/state-$((i - 1))" \
            -output "$dir/state-$i" \
            -mapper "python3 graph.py components-map" -reducer "python3 graph.py components-reduce"
        iteration_total=$(awk -v a="$iteration_total" -v b="$(elapsed "$t")" 'BEGIN { print a + b }')
        changed=$(counter "$dir/iteration-$i.log" changed)
        rm -rf "$dir/state-$((i - 1))"
        log "$system components: iteration $i changed $changed labels"
    done
    result[$system-components]="$(elapsed "$started") $i $(awk -v a="$iteration_total" -v n="$i" 'BEGIN { printf "%.2f", a / n }')"
    ln -s "state-$i" "$dir/result"
}

# native JOB ARGS...: the built-in job, with its report's iteration times.
native() {
    local job=$1
    shift
    local dir=$run/native-$job started
    started=$(now)
    "$sluice" run "$job" "$@" --input "$graph" --output "$dir" --memory "$memory" \
        --threads "$threads" --reducers "$threads" --report "$run/native-$job.json" --quiet \
        || die "sluice run $job failed"
    local total
    total=$(elapsed "$started")
    result[native-$job]="$total $(python3 -c "
import json, sys
steps = [s['seconds'] for s in json.load(open(sys.argv[1]))['steps']]
print(len(steps), '%.2f' % (sum(steps) / len(steps)))" "$run/native-$job.json")"
    ln -s "native-$job" "$run/native-$job-result"
}

# spark JOB SPARK_JOB ARGS...: bench/spark_iterative.py's job; its result in $run/spark-JOB.
spark() {
    local job=$1 spark_job=$2
    shift 2
    local started
    started=$(now)
    PYSPARK_PYTHON=$venv/bin/python "$venv/bin/python" "$script_dir/spark_iterative.py" \
        "$spark_job" "$graph" "$run/spark-$job.txt" --threads "$threads" \
        --memory "$spark_memory" --scratch "$run" "$@" \
        > "$run/spark-$job.json" 2> "$run/spark-$job.log" \
        || { tail -n 30 "$run/spark-$job.log" >&2; die "$job: Spark failed"; }
    local total
    total=$(elapsed "$started")
    result[spark-$job]="$total $(python3 -c "
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
t = r['iteration_seconds']
print(len(t), '%.2f' % (sum(t) / len(t)))" "$run/spark-$job.json")"
}

# same JOB RESULT: a result (a directory of part files, or one file) of
# `vertex<TAB>value[<TAB>adjacency]` lines against the built-in job's.
same() {
    python3 - "$1" "$run/native-$1" "$2" <<'PY' || die "$1: the results differ (above)"
import glob, sys
job, ours, theirs = sys.argv[1:]
def read(d):
    out = {}
    for p in sorted(glob.glob(d + "/part-*")) or [d]:
        for line in open(p):
            fields = line.rstrip("\n").split("\t")
            out[int(fields[0])] = float(fields[1])
    return out
a, b = read(ours), read(theirs)
if a.keys() != b.keys():
    sys.exit(f"{job}: {len(a)} vertices from the built-in job, {len(b)} from {theirs}")
for k, x in a.items():
    y = b[k]
    if not (x == y if job == "connected-components" else abs(x - y) <= 1e-6 * abs(x)):
        sys.exit(f"{job}: vertex {k}: built-in {x!r}, {theirs}: {y!r}")
PY
}

systems=(sluice)
$skip_hadoop || systems+=(hadoop)

log "pagerank: the built-in job"
native pagerank --tolerance 0 --iterations "$iterations"
log "connected-components: the built-in job"
native connected-components
if $with_spark; then
    log "pagerank: Spark $spark_version"
    spark pagerank pagerank --iterations "$iterations"
    same pagerank "$run/spark-pagerank.txt"
    log "connected-components: Spark $spark_version"
    spark connected-components components --iterations 1000
    same connected-components "$run/spark-connected-components.txt"
fi
for system in "${systems[@]}"; do
    log "pagerank: $system streaming"
    pagerank_streaming "$system"
    same pagerank "$run/$system-pagerank/result"
    log "connected-components: $system streaming"
    components_streaming "$system"
    same connected-components "$run/$system-components/result"
done

report=$work/streaming-iterative.md
{
    echo "| job | system | iterations | total s | per iteration s | vs built-in (total) | result |"
    echo "|---|---|---:|---:|---:|---:|---|"
    for job in pagerank connected-components; do
        short=${job%%-*}
        [[ $job == connected-components ]] && short=components
        read -r nt ni np <<<"${result[native-$job]}"
        echo "| $job | sluice run $job | $ni | $nt | $np | 1.0 | reference |"
        for system in "${systems[@]}"; do
            read -r st si sp <<<"${result[$system-$short]}"
            name="sluice streaming"
            [[ $system == hadoop ]] && name="Hadoop 3.4.2 streaming, local"
            echo "| $job | $name | $si | $st | $sp | $(ratio "$st" "$nt") | same |"
        done
        if $with_spark; then
            read -r kt ki kp <<<"${result[spark-$job]}"
            echo "| $job | Spark $spark_version local, DataFrames | $ki | $kt | $kp | $(ratio "$kt" "$nt") | same |"
        fi
    done
    echo
    echo "Graph: R-MAT scale $scale, edge factor 16 ($(du -sh "$graph" | cut -f1)), seed 42;" \
        "$threads threads and reduce tasks; sluice --memory $memory; $(nproc) cores," \
        "$(python3 --version), $(java -version 2>&1 | head -n 1)." \
        "Totals include each job's start (Spark's JVM and session too), the preparation job" \
        "and writing the result."
} | tee "$report"
