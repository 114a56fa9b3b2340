# bench/lib.sh: what the whole-job benchmark scripts share. Sourced, not run:
#
#   . "$script_dir/lib.sh"
#
# It defines usage (the script's leading comment), die and log (prefixed with the script's
# name), require_gnu_time, find_sluice (sets $sluice to the release binary, building it when
# missing, unless the script was given one), drop_caches, timed (runs a step under GNU time
# into $run), spark_venv and spark_size (for the scripts that run Spark), and the arithmetic
# helpers mbps and ratio.

bench_name=$(basename "$0")

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "$0"; }
die() { echo "$bench_name: error: $*" >&2; exit 1; }
log() { echo "$bench_name: $*" >&2; }

require_gnu_time() {
    [ -x /usr/bin/time ] || die "GNU time is needed at /usr/bin/time (apt-get install time)"
}

# find_sluice: $sluice (from --sluice or $SLUICE) or the workspace's release build.
find_sluice() {
    if [ -z "$sluice" ]; then
        sluice=${CARGO_TARGET_DIR:-$repo_root/target}/release/sluice
        [ -x "$sluice" ] || (cd "$repo_root" && cargo build --release -p sluice-cli)
    fi
}

# drop_caches: empties the page cache when the script may (as root); sets $cache_note.
drop_caches() {
    sync
    if [ -w /proc/sys/vm/drop_caches ]; then
        echo 3 > /proc/sys/vm/drop_caches
        cache_note="dropped before each step"
    else
        cache_note="not dropped (not root): steps may read cached input"
    fi
}

# timed NAME COMMAND...: drops the caches, runs the command under GNU time with its output in
# $run/NAME.log; sets $secs (wall seconds) and $rss_mib (peak RSS). A failure prints the log
# and stops the script.
timed() {
    local name=$1
    shift
    drop_caches
    log "$name: $*"
    /usr/bin/time -f "%e %M" -o "$run/$name.time" "$@" > "$run/$name.log" 2>&1 \
        || { cat "$run/$name.log" >&2; die "$name failed"; }
    read -r secs kib < <(tail -n 1 "$run/$name.time")
    rss_mib=$(awk -v k="$kib" 'BEGIN { printf "%.0f", k / 1024 }')
}

# mbps BYTES SECONDS: throughput in MB/s, rounded.
mbps() { awk -v b="$1" -v s="$2" 'BEGIN { printf "%.0f", b / s / 1e6 }'; }
# ratio A B: A / B to one decimal.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }

# spark_venv: makes bench/.venv-spark with pyspark and numpy (MLlib needs it) from PyPI the
# first time (the newest release); sets $venv and $spark_version. Spark needs Java 17 or later.
spark_venv() {
    command -v java >/dev/null 2>&1 || die "Spark needs Java 17 or later (apt-get install openjdk-17-jdk-headless)"
    venv=$script_dir/.venv-spark
    if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import pyspark, numpy' 2>/dev/null; then
        log "creating $venv with pyspark and numpy (about 450 MB)..."
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q pyspark numpy
    fi
    spark_version=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
}

# spark_size SIZE: a memory budget (512MiB, 2GiB) in Spark's units (512m, 2g).
spark_size() {
    python3 -c "
import re, sys
m = re.fullmatch(r'(\d+)\s*([KMGT]?)i?B?', sys.argv[1], re.I)
if not m: sys.exit('$bench_name: --memory: use a size such as 512MiB or 2GiB')
print(m.group(1) + (m.group(2) or 'b').lower())" "$1"
}
