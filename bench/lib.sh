# bench/lib.sh: what the whole-job benchmark scripts share. Sourced, not run:
#
#   . "$script_dir/lib.sh"
#
# It defines usage (the script's leading comment), die and log (prefixed with the script's
# name), require_gnu_time, find_sluice (sets $sluice to the release binary, building it when
# missing, unless the script was given one), drop_caches, timed (runs a step under GNU time
# into $run), and the arithmetic helpers mbps and ratio.

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
