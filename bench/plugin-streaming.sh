#!/usr/bin/env bash
# bench/plugin-streaming.sh: a Python word count under Hadoop Streaming (local mode), its
# records through pipes (stock `-io text`) and through shared memory (sluice's resolver and
# `-io shm`), the same programs and input, side by side in one run.
#
# Usage: bench/plugin-streaming.sh [--size SIZE] [--rounds N] [--work DIR] [--sluice PATH]
#
#   --size SIZE    the `sluice gen text` corpus (default 256MiB)
#   --rounds N     runs of each, alternating (default 3)
#   --work DIR     inputs and outputs (default bench/scratch)
#   --sluice PATH  the sluice binary that generates the input (default: $SLUICE, else the
#                  workspace's release build, built if missing)
#
# What it needs: Java 17, `make hadoop` (target/hadoop/lib) and `make plugin`
# (target/plugin/sluice-plugin.jar). The programs are examples/shm/python/wc_map.py and
# wc_reduce.py, which link the Python client: over pipes they read stdin and write stdout,
# over shared memory they use the rings. One reduce task; the local runner's map and reduce
# slots are nproc. Measured: the whole job's wall time (the JVM's start included). Every shm
# run must log that each task's program attached, and its output must be the pipes run's.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
size=256MiB rounds=3 work="$root/bench/scratch" sluice=${SLUICE:-}
while [ $# -gt 0 ]; do
    case "$1" in
        --size) size=${2:?}; shift 2 ;;
        --rounds) rounds=${2:?}; shift 2 ;;
        --work) work=${2:?}; shift 2 ;;
        --sluice) sluice=${2:?}; shift 2 ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "plugin-streaming.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
lib="$root/target/hadoop/lib" jar="$root/target/plugin/sluice-plugin.jar"
[ -f "$lib/.complete" ] || { echo "plugin-streaming.sh: run \`make hadoop\` first" >&2; exit 1; }
[ -f "$jar" ] || { echo "plugin-streaming.sh: run \`make plugin\` first" >&2; exit 1; }
if [ -z "$sluice" ]; then
    cargo build --release -q -p sluice-cli --manifest-path "$root/Cargo.toml"
    sluice="$root/target/release/sluice"
fi
mkdir -p "$work"
in="$work/streaming-text-$size"
if [ ! -d "$in" ]; then
    rm -rf "$in.tmp"
    "$sluice" gen text --size "$size" --seed 42 --quiet --output "$in.tmp"
    mv "$in.tmp" "$in"
fi
log4j="$work/streaming-log4j.properties"
cat > "$log4j" <<'PROPS'
log4j.rootLogger=WARN,console
log4j.logger.org.sluice=INFO
log4j.logger.org.apache.hadoop.util.NativeCodeLoader=ERROR
log4j.logger.org.apache.hadoop.metrics2=ERROR
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%p %c{1}: %m%n
PROPS
threads=$(nproc)
run() { # run NAME [generic options...]
    local name=$1; shift
    local out="$work/streaming-out-$name"
    rm -rf "$out" "$work/streaming-tmp"
    local start end
    start=$(date +%s.%N)
    java -Dlog4j.configuration="file:$log4j" -cp "$jar:$lib/*" \
        org.apache.hadoop.streaming.HadoopStreaming \
        -D mapreduce.framework.name=local -D fs.defaultFS=file:/// \
        -D hadoop.tmp.dir="$work/streaming-tmp" \
        -D mapreduce.local.map.tasks.maximum="$threads" \
        -D mapreduce.local.reduce.tasks.maximum="$threads" "$@" \
        -input "$in" -output "$out" -numReduceTasks 1 \
        -mapper "python3 $root/examples/shm/python/wc_map.py" \
        -reducer "python3 $root/examples/shm/python/wc_reduce.py" \
        > "$work/streaming-$name.log" 2>&1 \
        || { echo "plugin-streaming.sh: the $name run failed:" >&2; tail -30 "$work/streaming-$name.log" >&2; exit 1; }
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
maps=$(ls "$in" | wc -l)
echo "input: $(du -sh "$in" | cut -f1) of text; rounds: $rounds; local runner slots: $threads"
printf '%-6s %10s %10s %8s\n' round pipes shm ratio
for r in $(seq 1 "$rounds"); do
    pipes=$(run pipes)
    shm=$(run shm -D stream.io.identifier.resolver.class=org.sluice.hadoop.streaming.ShmIdentifierResolver -io shm)
    attached=$(grep -c "attached over shared memory" "$work/streaming-shm.log" || true)
    tasks=$(grep -c "attached over shared memory\|stays on pipes\|records go through pipes" "$work/streaming-shm.log" || true)
    if [ "$attached" -lt 2 ] || [ "$attached" -ne "$tasks" ]; then
        echo "plugin-streaming.sh: only $attached of $tasks programs attached over shared memory" >&2; exit 1
    fi
    cmp -s "$work/streaming-out-pipes/part-00000" "$work/streaming-out-shm/part-00000" \
        || { echo "plugin-streaming.sh: the outputs differ" >&2; exit 1; }
    printf '%-6s %9.1fs %9.1fs %7.2fx\n' "$r" "$pipes" "$shm" "$(echo "$pipes / $shm" | bc -l)"
done
