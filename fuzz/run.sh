#!/usr/bin/env bash
# Builds every fuzz target and runs each in turn for SECONDS_PER_TARGET seconds (default 60),
# one process at a time; prints a table of target, executions and result, and exits non-zero if
# any target crashed (its input is kept under fuzz/artifacts/TARGET/).
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Each target starts
# from the seeds in fuzz/seeds/TARGET (kept in the repository) and the corpus it grew on earlier
# runs in fuzz/corpus/TARGET (not kept).
set -euo pipefail

cd "$(dirname "$0")"
seconds=${1:-60}
shift || true
if ! [[ $seconds =~ ^[0-9]+$ ]] || [ "$seconds" -eq 0 ]; then
    echo "usage: fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]" >&2
    exit 2
fi
if [ $# -gt 0 ]; then
    targets=("$@")
    for target in "${targets[@]}"; do
        cargo +nightly fuzz build "$target"
    done
else
    mapfile -t targets < <(cargo +nightly fuzz list)
    cargo +nightly fuzz build
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
failed=0
rows=()
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "seeds/$target" "artifacts/$target"
    log="$logs/$target.log"
    echo "== $target: ${seconds}s" >&2
    status=0
    started=$SECONDS
    # -timeout: one input running this long is reported as a crash (a hang).
    cargo +nightly fuzz run "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="artifacts/$target/" >"$log" 2>&1 || status=$?
    elapsed=$((SECONDS - started))
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
    if [ "$status" -eq 0 ]; then
        result=ok
    else
        failed=1
        artifact=$(grep -o "artifacts/$target/[^ ]*" "$log" | tail -1 || true)
        result="CRASH ${artifact:-(see log)}"
        tail -n 40 "$log" >&2
    fi
    rows+=("$(printf '%-16s %12s %8s  %s' "$target" "${execs:-?}" "$elapsed" "$result")")
done

printf '%-16s %12s %8s  %s\n' target execs seconds result
printf '%s\n' "${rows[@]}"
exit "$failed"
