#!/usr/bin/env bash
# bench/wordcount.sh: whole-job word count benchmark of sluice against two baselines.
#
# Usage: bench/wordcount.sh [options]
#
#   --size SIZE      corpus size, e.g. 1GiB, 256MiB (default 1GiB); same units as sluice
#   --memory SIZE    memory budget given to every system (default 1GiB): sluice --memory,
#                    sort -S, DuckDB memory_limit
#   --threads N      worker threads given to every system (default: nproc)
#   --work DIR       working directory for the corpus, outputs and spills (default bench/scratch)
#   --runs N         timed runs of each system; the best wall time is reported (default 3)
#   --sluice PATH    the sluice binary (default: $SLUICE, else
#                    ${CARGO_TARGET_DIR:-target}/release/sluice under the repository root,
#                    built with `cargo build --release -p sluice-cli` if missing)
#   --skip-duckdb    do not run the DuckDB baseline (and do not create the venv)
#   --skip-pipeline  do not run the coreutils pipeline baseline
#   -h, --help       print this help
#
# What it does:
#   1. Generates the corpus once, like `sluice gen text --size SIZE --output WORK/corpus-SIZE
#      --seed 42` (written under a temporary name and renamed, so an interrupted generation is
#      never reused), and reuses it on later runs.
#   2. Creates the Python venv bench/.venv with DuckDB (`pip install duckdb`) if missing.
#   3. Runs each system RUNS times, interleaved (sluice, pipeline, DuckDB, then again), after
#      reading the corpus once so that every run sees a warm page cache. Each run is measured
#      with GNU time (`/usr/bin/time -f '%e %M'`: wall seconds and peak RSS):
#        a. sluice run wordcount --input CORPUS --output OUT --memory MEM --threads T --quiet
#        b. cat CORPUS/* | tr -s ' \t\r\f' '\n' | LC_ALL=C sort -S MEM --parallel=T -T TMP
#             | LC_ALL=C uniq -c > OUT                  (under bash -o pipefail -c)
#        c. bench/wordcount_duckdb.py: DuckDB SQL (see that file) with the same threads and
#           memory_limit, writing word<TAB>count to a file.
#   4. Checks that all outputs agree (as `word<TAB>count` lines sorted with LC_ALL=C sort) and
#      fails if they do not.
#   5. Prints a Markdown report (table, commands, machine) and writes it to
#      WORK/wordcount-results.md.
#
# Progress goes to stderr; the report to stdout. Exit status: 0 on success, 1 if a run fails
# or the outputs differ, 2 for usage errors.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)

size=1GiB
memory=1GiB
threads=$(nproc)
work=$script_dir/scratch
runs=3
sluice=${SLUICE:-}
skip_duckdb=false
skip_pipeline=false

usage() {
    sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
}

die_usage() {
    echo "wordcount.sh: $*" >&2
    echo "Try 'bench/wordcount.sh --help'." >&2
    exit 2
}

die() {
    echo "wordcount.sh: error: $*" >&2
    exit 1
}

log() {
    echo "wordcount.sh: $*" >&2
}

# Bytes in a size such as 1GiB, 512M, 1.5GB or 4096, with sluice's rules: K M G T and KiB MiB
# GiB TiB are powers of 1024, KB MB GB TB powers of 1000, B or nothing bytes; case-insensitive.
parse_size() {
    local text=$1 number unit multiplier
    if [[ ! $text =~ ^([0-9]+(\.[0-9]*)?|\.[0-9]+)\ *([A-Za-z]*)$ ]]; then
        return 1
    fi
    number=${BASH_REMATCH[1]}
    unit=${BASH_REMATCH[3],,}
    case $unit in
        "" | b) multiplier=1 ;;
        k | kib) multiplier=1024 ;;
        m | mib) multiplier=1048576 ;;
        g | gib) multiplier=1073741824 ;;
        t | tib) multiplier=1099511627776 ;;
        kb) multiplier=1000 ;;
        mb) multiplier=1000000 ;;
        gb) multiplier=1000000000 ;;
        tb) multiplier=1000000000000 ;;
        *) return 1 ;;
    esac
    awk -v n="$number" -v m="$multiplier" 'BEGIN { printf "%.0f\n", n * m }'
}

need_value() {
    [[ $# -ge 2 && -n $2 ]] || die_usage "option $1 needs a value"
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --size) need_value "$@"; size=$2; shift 2 ;;
        --memory) need_value "$@"; memory=$2; shift 2 ;;
        --threads) need_value "$@"; threads=$2; shift 2 ;;
        --work) need_value "$@"; work=$2; shift 2 ;;
        --runs) need_value "$@"; runs=$2; shift 2 ;;
        --sluice) need_value "$@"; sluice=$2; shift 2 ;;
        --size=* | --memory=* | --threads=* | --work=* | --runs=* | --sluice=*)
            option=${1%%=*}
            set -- "$option" "${1#*=}" "${@:2}"
            ;;
        --skip-duckdb) skip_duckdb=true; shift ;;
        --skip-pipeline) skip_pipeline=true; shift ;;
        -h | --help) usage; exit 0 ;;
        *) die_usage "unknown argument '$1'" ;;
    esac
done

size_bytes=$(parse_size "$size") || die_usage "--size '$size' is not a size (e.g. 1GiB, 256MiB)"
memory_bytes=$(parse_size "$memory") || die_usage "--memory '$memory' is not a size (e.g. 1GiB)"
[[ $size_bytes -gt 0 ]] || die_usage "--size must be more than 0"
[[ $memory_bytes -gt 0 ]] || die_usage "--memory must be more than 0"
[[ $size != */* ]] || die_usage "--size must not contain '/'"
[[ $threads =~ ^[1-9][0-9]*$ ]] || die_usage "--threads must be a positive integer"
[[ $runs =~ ^[1-9][0-9]*$ ]] || die_usage "--runs must be a positive integer"
[[ -x /usr/bin/time ]] || die "GNU time is needed at /usr/bin/time (apt-get install time)"

# ---------------------------------------------------------------------------------------------
# The sluice binary.

if [[ -z $sluice ]]; then
    target_dir=${CARGO_TARGET_DIR:-target}
    [[ $target_dir == /* ]] || target_dir=$repo_root/$target_dir
    sluice=$target_dir/release/sluice
    if [[ ! -x $sluice ]]; then
        log "building $sluice (cargo build --release -p sluice-cli)"
        (cd "$repo_root" && cargo build --release -p sluice-cli >&2)
    fi
fi
[[ -x $sluice ]] || die "sluice binary $sluice not found or not executable"
sluice=$(cd "$(dirname "$sluice")" && pwd)/$(basename "$sluice")

mkdir -p "$work"
work=$(cd "$work" && pwd)

# ---------------------------------------------------------------------------------------------
# The corpus.

corpus=$work/corpus-$size
if [[ -d $corpus ]]; then
    log "reusing corpus $corpus"
else
    partial=$work/.corpus-$size.partial
    rm -rf "$partial"
    log "generating corpus: sluice gen text --size $size --output $corpus --seed 42"
    "$sluice" gen text --size "$size" --output "$partial" --seed 42
    mv "$partial" "$corpus"
fi
input_bytes=$(find "$corpus" -type f -printf '%s\n' | awk '{ s += $1 } END { printf "%.0f\n", s }')
input_files=$(find "$corpus" -type f | wc -l)
[[ $input_bytes -gt 0 ]] || die "corpus $corpus is empty"

# ---------------------------------------------------------------------------------------------
# The DuckDB virtual environment.

venv=$script_dir/.venv
duckdb_script=$script_dir/wordcount_duckdb.py
duckdb_version=
if ! $skip_duckdb; then
    if ! "$venv/bin/python" -c 'import duckdb' 2>/dev/null; then
        log "creating the Python venv $venv with duckdb"
        python3 -m venv "$venv"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check duckdb >&2
    fi
    duckdb_version=$("$venv/bin/python" -c 'import duckdb; print(duckdb.__version__)')
    log "DuckDB $duckdb_version ($venv)"
fi

# ---------------------------------------------------------------------------------------------
# The commands.

sluice_out=$work/out-sluice
pipeline_out=$work/out-pipeline.txt
duckdb_out=$work/out-duckdb.tsv
sort_tmp=$work/tmp-sort
duckdb_tmp=$work/tmp-duckdb

sluice_cmd=("$sluice" run wordcount --input "$corpus" --output "$sluice_out"
    --memory "$memory" --threads "$threads" --quiet)

printf -v pipeline_script \
    "cat %q/* | tr -s ' \\\\t\\\\r\\\\f' '\\\\n' | LC_ALL=C sort -S %sb --parallel=%s -T %q | LC_ALL=C uniq -c > %q" \
    "$corpus" "$memory_bytes" "$threads" "$sort_tmp" "$pipeline_out"
pipeline_cmd=(bash -o pipefail -c "$pipeline_script")

duckdb_cmd=("$venv/bin/python" "$duckdb_script" --input "$corpus" --output "$duckdb_out"
    --threads "$threads" --memory "$memory_bytes" --temp-dir "$duckdb_tmp")

systems=(sluice)
$skip_pipeline || systems+=(pipeline)
$skip_duckdb || systems+=(duckdb)

# Removes a system's previous output and temporary files, so that every run starts clean.
clean() {
    case $1 in
        sluice) rm -rf "$sluice_out" ;;
        pipeline) rm -rf "$pipeline_out" "$sort_tmp"; mkdir -p "$sort_tmp" ;;
        duckdb) rm -rf "$duckdb_out" "$duckdb_tmp"; mkdir -p "$duckdb_tmp" ;;
    esac
}

# Runs one system once under GNU time; sets `seconds` and `rss_kib`.
measure() {
    local system=$1 timing status=0 command
    case $system in
        sluice) command=("${sluice_cmd[@]}") ;;
        pipeline) command=("${pipeline_cmd[@]}") ;;
        duckdb) command=("${duckdb_cmd[@]}") ;;
    esac
    timing=$(mktemp)
    clean "$system"
    /usr/bin/time -f '%e %M' -o "$timing" "${command[@]}" || status=$?
    if [[ $status -ne 0 ]]; then
        cat "$timing" >&2
        rm -f "$timing"
        die "$system failed (exit status $status): ${command[*]}"
    fi
    read -r seconds rss_kib < <(tail -n 1 "$timing")
    rm -f "$timing"
}

# ---------------------------------------------------------------------------------------------
# The runs.

log "input: $corpus ($input_bytes bytes in $input_files file(s)); memory $memory, $threads thread(s), best of $runs"
log "warming the page cache"
cat "$corpus"/* > /dev/null

declare -A best_seconds=() peak_rss_kib=() all_seconds=()
for ((run = 1; run <= runs; run++)); do
    for system in "${systems[@]}"; do
        measure "$system"
        log "run $run/$runs: $system: $seconds s, peak RSS $(awk -v k="$rss_kib" 'BEGIN { printf "%.0f", k / 1024 }') MiB"
        all_seconds[$system]+="${all_seconds[$system]:+, }$seconds"
        if [[ -z ${best_seconds[$system]:-} ]] ||
            awk -v a="$seconds" -v b="${best_seconds[$system]}" 'BEGIN { exit !(a < b) }'; then
            best_seconds[$system]=$seconds
        fi
        if [[ $rss_kib -gt ${peak_rss_kib[$system]:-0} ]]; then
            peak_rss_kib[$system]=$rss_kib
        fi
    done
done
rm -rf "$sort_tmp" "$duckdb_tmp"

# ---------------------------------------------------------------------------------------------
# Agreement: every output as `word<TAB>count` lines in LC_ALL=C order.

log "checking that the outputs agree"
normalised() {
    echo "$work/normalised-$1.tsv"
}
cat "$sluice_out"/part-r-* | LC_ALL=C sort > "$(normalised sluice)"
if ! $skip_pipeline; then
    # uniq -c writes the count right-aligned, a space, then the word; the empty word (from a
    # separator at the very start of the input) is dropped, as the other systems never count it.
    LC_ALL=C sed -E -n 's/^ *([0-9]+) (.+)$/\2\t\1/p' "$pipeline_out" |
        LC_ALL=C sort > "$(normalised pipeline)"
fi
if ! $skip_duckdb; then
    LC_ALL=C sort "$duckdb_out" > "$(normalised duckdb)"
fi
for system in "${systems[@]:1}"; do
    if ! cmp -s "$(normalised sluice)" "$(normalised "$system")"; then
        echo "wordcount.sh: error: the outputs of sluice and $system differ; first differences:" >&2
        diff "$(normalised sluice)" "$(normalised "$system")" | head -n 20 >&2 || true
        die "outputs differ (normalised files in $work)"
    fi
done
read -r distinct_words total_words < <(awk -F '\t' '{ n++; s += $2 } END { printf "%d %.0f\n", n, s }' "$(normalised sluice)")
log "all ${#systems[@]} outputs agree: $distinct_words distinct words, $total_words words"

# ---------------------------------------------------------------------------------------------
# The report.

label() {
    case $1 in
        sluice) echo "sluice" ;;
        pipeline) echo "coreutils pipeline (tr, sort, uniq -c)" ;;
        duckdb) echo "DuckDB $duckdb_version (SQL, Python)" ;;
    esac
}

quote_command() {
    local out="" word
    for word in "$@"; do
        printf -v word '%q' "$word"
        out+="${out:+ }$word"
    done
    echo "$out"
}

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
total_memory_gib=$(awk '/^MemTotal:/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)
git_commit=$(git -C "$repo_root" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n $(git -C "$repo_root" --no-optional-locks status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    git_commit+=", with uncommitted changes"
fi
sluice_version=$("$sluice" --version)
sort_version=$(sort --version | head -n 1)
python_version=$(if ! $skip_duckdb; then "$venv/bin/python" --version; fi)
sluice_seconds=${best_seconds[sluice]}

report() {
    echo "## Word count, $size corpus"
    echo
    echo "Date: $(date -u '+%Y-%m-%d %H:%M UTC'). Input: \`sluice gen text --size $size --seed 42\`," \
        "$input_bytes bytes in $input_files file(s), $distinct_words distinct words, $total_words words." \
        "Every system gets $threads thread(s) and a memory budget of $memory ($memory_bytes bytes)."
    echo
    echo "| System | Best wall time (s) | MB/s | Peak RSS (MiB) | Time vs sluice |"
    echo "| --- | ---: | ---: | ---: | ---: |"
    local system seconds rate ratio rss
    for system in "${systems[@]}"; do
        seconds=${best_seconds[$system]}
        rss=$(awk -v k="${peak_rss_kib[$system]}" 'BEGIN { printf "%.0f", k / 1024 }')
        rate=$(awk -v b="$input_bytes" -v s="$seconds" 'BEGIN { if (s > 0) printf "%.1f", b / s / 1e6; else printf "n/a" }')
        ratio=$(awk -v o="$seconds" -v s="$sluice_seconds" 'BEGIN { if (s > 0) printf "%.2f×", o / s; else printf "n/a" }')
        echo "| $(label "$system") | $seconds | $rate | $rss | $ratio |"
    done
    echo
    echo "- Best of $runs run(s), the systems interleaved, with a warm page cache. All wall" \
        "times (s):"
    for system in "${systems[@]}"; do
        echo "  $(label "$system"): ${all_seconds[$system]}."
    done
    echo "- Wall time and peak RSS are from GNU time (\`/usr/bin/time -f '%e %M'\`); MB/s is" \
        "input bytes / best wall time / 10^6; peak RSS is the largest over the runs."
    if ! $skip_pipeline; then
        echo "- For the pipeline, GNU time reports the peak RSS of its largest single process" \
            "(in practice \`sort\`), not the sum over its processes."
    fi
    if ! $skip_duckdb; then
        echo "- For DuckDB, time and RSS include starting Python and importing duckdb (about" \
            "0.1 s)."
    fi
    echo "- The outputs of all systems were checked to be identical as \`word<TAB>count\`" \
        "lines in byte order."
    echo
    echo "Commands:"
    echo
    echo '```sh'
    echo "# sluice"
    quote_command "${sluice_cmd[@]}"
    if ! $skip_pipeline; then
        echo "# coreutils pipeline, run as: bash -o pipefail -c '...'; sort gets the same memory"
        echo "# budget (-S) and threads (--parallel) as sluice, and spills to the same disk (-T)"
        echo "$pipeline_script"
    fi
    if ! $skip_duckdb; then
        echo "# DuckDB"
        quote_command "${duckdb_cmd[@]}"
    fi
    echo '```'
    if ! $skip_duckdb; then
        echo
        echo "DuckDB SQL (bench/wordcount_duckdb.py):"
        echo
        echo '```sql'
        "$venv/bin/python" "$duckdb_script" --print-sql --input "$corpus" --output "$duckdb_out" \
            --threads "$threads" --memory "$memory_bytes" --temp-dir "$duckdb_tmp"
        echo '```'
    fi
    echo
    echo "Machine: ${cpu_model:-unknown CPU}, $(nproc) CPUs (nproc), $total_memory_gib GiB memory," \
        "Linux $(uname -r)."
    echo "Versions: $sluice_version ($sluice; repository at commit $git_commit); $sort_version${python_version:+; $python_version}."
}

report | tee "$work/wordcount-results.md"
log "report written to $work/wordcount-results.md"
