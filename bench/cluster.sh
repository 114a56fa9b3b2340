#!/usr/bin/env bash
# bench/cluster.sh: sluice's cluster mode on several hosts made of network namespaces on this
# one machine, against Hadoop MapReduce on YARN on the same hosts: TeraSort and word count.
#
# Usage: bench/cluster.sh [options]            (as root: it creates network namespaces)
#
#   --hosts N          hosts (default 3): network namespaces slc-h1..slc-hN
#   --rows N           TeraGen rows for TeraSort (default 10m = 1 GB; k/m/b suffixes)
#   --text-size SIZE   generated text for word count (default 1GiB)
#   --runs K           runs of each job on each system; the tables give medians (default 3)
#   --jobs LIST        terasort,wordcount (default both)
#   --memory SIZE      memory budget of each sluice worker (default 1GiB)
#   --threads T        tasks at once per host: sluice worker --threads, and the number of
#                      YARN containers a NodeManager offers (default 2)
#   --reducers R       reduce tasks of every job, both systems (default hosts x threads)
#   --rate RATE        each host link's rate, as tc's tbf takes it (default 1gbit)
#   --subnet A.B.C     the private /24 the hosts live in (default 10.77.0; hosts are .11, .12,
#                      ...); nothing outside the namespaces is given an address in it
#   --hadoop-task-mb M YARN container size of Hadoop's tasks and application master
#                      (default 1024; the JVM heap is 75% of it)
#   --job-timeout S    a job that runs longer is killed and the script fails (default 1800)
#   --work DIR         inputs (kept for the next run), results (default bench/scratch)
#   --sluice PATH      the sluice binary (default target/release/sluice, built if missing)
#   --skip-hadoop      sluice alone
#   --skip-local       leave out the reference runs of sluice as one process (no cluster)
#   --no-drop-caches   keep the page cache between runs (default: dropped before every run)
#   -h, --help         print this help
#
# What it sets up. A namespace slc-br holds a bridge; each host slc-hI is a network namespace
# joined to it by a veth pair (eth0 in the host, vhI on the bridge), at address SUBNET.(10+I),
# its link shaped in both directions with `tc qdisc add dev ... root tbf rate RATE burst 128kb
# latency 50ms` (egress of eth0 and of vhI). Every process of a host runs in its namespace and
# in a UTS namespace of its own whose host name is slc-hI; /etc/netns/NS/hosts (bind-mounted
# over /etc/hosts by `ip netns exec`) names every host. The machine's own interfaces, routes
# and /etc/hosts are not touched. The hosts share the file system, so inputs and outputs are
# file:// paths every host sees; only the shuffle (and control traffic) crosses the links.
#
# What it runs:
#   link      a single TCP stream between two hosts for 3 s, then every host sending to the
#             next at once (bench/cluster/linkrate.py): the rates the jobs are compared with
#   sluice    `sluice worker --listen SUBNET.(10+I):7070 --memory M --threads T` per host;
#             jobs from a coordinator in slc-h1: `sluice run terasort|wordcount --cluster
#             workers=... --secret-file F --reducers R --report r.json`
#   local     for reference, the same job as one sluice process in slc-h1 (`--memory M
#             --threads CORES`, no --cluster): what distributing it costs on this machine
#   hadoop    Hadoop 3.4.2 (jars fetched by Maven from bench/cluster/pom.xml into
#             target/bench-cluster/lib): a ResourceManager in slc-h1 and a NodeManager with the
#             MapReduce shuffle service in every host, storage file:///; TeraSort and WordCount
#             of hadoop-mapreduce-examples submitted from slc-h1 (mapreduce.framework.name=yarn),
#             128 MiB splits (an HDFS block), io.sort.mb 256, no speculative attempts
# Every TeraSort output is checked with `sluice run teravalidate` (order, and TeraGen's
# checksum); the word counts of both systems must be identical part file by part file.
#
# What it measures, per run: the job's wall time (the coordinator's or job client's process);
# bytes in and out of every host link (the veths' counters, sampled every 0.05 s, which costs
# the sampler about 1% of a core: totals, and the busiest second of each link, and each link's
# mean rate while data moved on it: from its first to its last sample above 1 MB/s; coarser
# samples would count up to a whole sample on each side as moving, a tenth of a 2 s shuffle at
# 0.2 s), and the same without the first and last 0.25 s of that time (while the first map
# outputs appear and the last drain, a link waits on the tasks), against the measured link
# rate; CPU seconds
# (user+sys) of
# each host's worker process (sluice) or NodeManager with its containers (Hadoop), from
# /proc/PID/stat before and after, and of the coordinator or client; bytes read from and
# written to the disk by each host's worker or NodeManager and its containers (/proc/PID/io;
# sluice's --report gives its workers' own figures, and the bytes pushed, received, received
# to disk, and pulled). Hadoop's counters come from the job history file (JSON).
# Prints a Markdown report and writes it to WORK/cluster-results.md; the raw figures of every
# run go to WORK/cluster-results/.
#
# What it needs: root; ip (iproute2) and tc with the tbf qdisc, unshare (util-linux), python3,
# GNU time at /usr/bin/time; for Hadoop, Java 17 and Maven (about 120 MB of jars the first
# time, kept in ~/.m2). Disk: the inputs plus about three times the TeraGen rows in --work.
#
# How long: on 2 cores with the defaults about 15 minutes: inputs under a minute the first
# time, sluice's 12 jobs (cluster and one process) under a minute with their checks, YARN's
# start about 20 s, Hadoop's TeraSort about 1 minute a run and its word count about 3.
#
# Cleanup: on exit (also on error or Ctrl-C) the script stops every process it started and
# every process left in its namespaces, deletes the namespaces (and with them the veths, the
# bridge and the qdiscs), the /etc/netns entries it made, and its temporary directory
# WORK/cluster-run. It refuses to start if any of those names already exists.

set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_root=$(cd "$script_dir/.." && pwd)
hosts=3
rows=10m
text_size=1GiB
runs=3
jobs=terasort,wordcount
memory=1GiB
threads=2
reducers=
rate=1gbit
subnet=10.77.0
task_mb=1024
job_timeout=1800
work=$script_dir/scratch
sluice=${SLUICE:-}
skip_hadoop=false
run_local=true
drop_caches=true

usage() { sed -n '2,/^$/{s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; }
die() { echo "cluster.sh: error: $*" >&2; exit 1; }
log() { echo "cluster.sh: $(date +%H:%M:%S) $*" >&2; }

while [ $# -gt 0 ]; do
    case $1 in
        --hosts) hosts=$2; shift 2 ;;
        --rows) rows=$2; shift 2 ;;
        --text-size) text_size=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        --memory) memory=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --reducers) reducers=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --subnet) subnet=$2; shift 2 ;;
        --hadoop-task-mb) task_mb=$2; shift 2 ;;
        --job-timeout) job_timeout=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --sluice) sluice=$2; shift 2 ;;
        --skip-hadoop) skip_hadoop=true; shift ;;
        --skip-local) run_local=false; shift ;;
        --no-drop-caches) drop_caches=false; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "cluster.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    esac
done

[[ $hosts =~ ^[0-9]+$ ]] && [ "$hosts" -ge 2 ] && [ "$hosts" -le 200 ] \
    || die "--hosts must be between 2 and 200"
[[ $threads =~ ^[0-9]+$ ]] && [ "$threads" -ge 1 ] || die "--threads must be a positive number"
[[ $runs =~ ^[0-9]+$ ]] && [ "$runs" -ge 1 ] || die "--runs must be a positive number"
[[ $subnet =~ ^(10\.[0-9]+|172\.(1[6-9]|2[0-9]|3[01])|192\.168)\.[0-9]+$ ]] \
    || die "--subnet takes the first three octets of a private /24 (10.x.y, 172.16-31.y, 192.168.y)"
reducers=${reducers:-$((hosts * threads))}
run_terasort=false
run_wordcount=false
IFS=, read -ra job_list <<< "$jobs"
for j in "${job_list[@]}"; do
    case $j in
        terasort) run_terasort=true ;;
        wordcount) run_wordcount=true ;;
        *) die "--jobs: unknown job $j (terasort, wordcount)" ;;
    esac
done

[ "$(id -u)" = 0 ] || die "run as root: the hosts are network namespaces"
for tool in ip tc unshare python3 timeout; do
    command -v "$tool" > /dev/null || die "$tool is needed"
done
[ -x /usr/bin/time ] || die "GNU time is needed at /usr/bin/time (apt-get install time)"
if ! $skip_hadoop; then
    command -v java > /dev/null || die "Java 17 is needed for Hadoop (or give --skip-hadoop)"
    command -v mvn > /dev/null || die "Maven is needed to fetch Hadoop's jars (or --skip-hadoop)"
fi
if [ -z "$sluice" ]; then
    sluice=${CARGO_TARGET_DIR:-$repo_root/target}/release/sluice
    [ -x "$sluice" ] || (cd "$repo_root" && cargo build --release -p sluice-cli)
fi
sluice=$(cd "$(dirname "$sluice")" && pwd)/$(basename "$sluice")
[ -x "$sluice" ] || die "no sluice binary at $sluice"

# Every name this script creates; none may exist before it starts.
br_ns=slc-br
host_ns=()
for i in $(seq 1 "$hosts"); do host_ns+=("slc-h$i"); done
all_ns=("$br_ns" "${host_ns[@]}")
existing=$(ip netns list | awk '{print $1}')
for ns in "${all_ns[@]}"; do
    if grep -qx "$ns" <<< "$existing"; then
        die "a network namespace $ns exists already: remove it (ip netns del $ns) if it is a leftover of this script"
    fi
    [ ! -e "/etc/netns/$ns" ] || die "/etc/netns/$ns exists already"
done
addr() { echo "$subnet.$((10 + $1))"; }

mkdir -p "$work"
work=$(cd "$work" && pwd)
run=$work/cluster-run
[ ! -e "$run" ] || die "$run exists (a run in progress, or the leftover of a killed one: remove it)"
inputs=$work/cluster-inputs
results=$work/cluster-results
lib=${CARGO_TARGET_DIR:-$repo_root/target}/bench-cluster/lib

# --- cleanup -------------------------------------------------------------------------------

created_ns=()
created_etc=()
created_etc_netns=false
started_pids=()
rm_pid=
sampler_pid=
fg_pid=

cleanup() {
    local status=$?
    set +e
    # A second signal must not cut the cleanup short.
    trap - EXIT
    trap '' INT TERM
    if [ -n "$sampler_pid" ]; then kill "$sampler_pid" 2> /dev/null; fi
    local pid alive
    if [ -n "$fg_pid" ]; then started_pids+=("$fg_pid"); fi
    # The ResourceManager last: NodeManagers tell it they are leaving. Each group gets 10 s to
    # stop, then is killed.
    local group
    for group in others rm; do
        local pids_now=()
        for pid in "${started_pids[@]}"; do
            if [ "$pid" = "$rm_pid" ] && [ "$group" = others ]; then continue; fi
            if [ "$pid" != "$rm_pid" ] && [ "$group" = rm ]; then continue; fi
            pids_now+=("$pid")
        done
        [ ${#pids_now[@]} -gt 0 ] || continue
        for pid in "${pids_now[@]}"; do kill -TERM "$pid" 2> /dev/null; done
        for _ in $(seq 1 100); do
            alive=false
            for pid in "${pids_now[@]}"; do
                if kill -0 "$pid" 2> /dev/null; then alive=true; fi
            done
            $alive || break
            sleep 0.1
        done
        for pid in "${pids_now[@]}"; do kill -KILL "$pid" 2> /dev/null; done
    done
    # Whatever still runs in our namespaces (containers of YARN) was started by this script.
    local ns pids
    for ns in "${created_ns[@]}"; do
        pids=$(ip netns pids "$ns" 2> /dev/null)
        if [ -n "$pids" ]; then kill -KILL $pids 2> /dev/null; fi
    done
    for ns in "${created_ns[@]}"; do ip netns del "$ns" 2> /dev/null; done
    for ns in "${created_etc[@]}"; do rm -rf "/etc/netns/$ns"; done
    if $created_etc_netns; then rmdir /etc/netns 2> /dev/null; fi
    if [ "$status" != 0 ] && [ -d "$run/runs" ]; then
        # What a failed run leaves to look at: its figures and logs, the daemons' logs.
        rm -rf "$results"
        cp -r "$run/runs" "$results"
        mkdir -p "$results/logs"
        cp "$run"/*.log "$results/logs/" 2> /dev/null
        if [ -d "$run/hadoop" ]; then
            find "$run/hadoop" -path '*/logs/*' -type f \( -name syslog -o -name stderr \) \
                -exec sh -c 'to=$1; shift; for f; do d=$to/$(basename "$(dirname "$f")"); mkdir -p "$d"; cp "$f" "$d/"; done' sh "$results/logs" {} + 2> /dev/null
        fi
    fi
    rm -rf "$run"
    if [ "$status" != 0 ]; then log "failed (exit $status); everything it created is removed"; fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$run"

# interruptible LOG COMMAND...: runs COMMAND in the background, its output into LOG (or to the
# script's stderr if LOG is -), and waits for it, so that a signal to the script is acted on at
# once (bash runs traps only between foreground commands); the cleanup stops COMMAND.
interruptible() {
    local to=$1
    shift
    if [ "$to" = - ]; then
        "$@" >&2 &
    else
        "$@" > "$to" 2>&1 &
    fi
    fg_pid=$!
    local rc=0
    wait "$fg_pid" || rc=$?
    fg_pid=
    return "$rc"
}

# in_host I COMMAND... &: runs COMMAND in host I's network namespace, with host name slc-hI.
# Only in the background: the subshell becomes COMMAND (ip, unshare and sh exec in turn), so
# that $! is COMMAND's process id.
in_host() {
    local i=$1
    shift
    exec ip netns exec "slc-h$i" unshare --uts -- \
        sh -c 'hostname "$0" && exec "$@"' "slc-h$i" "$@"
}

# --- inputs --------------------------------------------------------------------------------

mkdir -p "$inputs"
tera_in=$inputs/teragen-$rows
text_in=$inputs/text-$text_size
if $run_terasort && [ ! -f "$tera_in/_SUCCESS" ]; then
    log "generating $rows TeraGen rows into $tera_in"
    rm -rf "$tera_in" "$tera_in.checksum"
    interruptible "$run/teragen.log" "$sluice" run teragen --rows "$rows" --output "$tera_in" \
        || { cat "$run/teragen.log" >&2; die "teragen failed"; }
    sed -n 's/^  checksum \([0-9a-f]*\).*/\1/p' "$run/teragen.log" > "$tera_in.checksum"
    [ -s "$tera_in.checksum" ] || die "teragen printed no checksum"
fi
if $run_wordcount && [ ! -f "$text_in/_SUCCESS" ]; then
    log "generating $text_size of text into $text_in"
    rm -rf "$text_in"
    interruptible - "$sluice" gen text --size "$text_size" --seed 42 --output "$text_in" --quiet
fi
dir_bytes() { du -cb "$1"/part-* | tail -n 1 | cut -f 1; }
dir_files() { find "$1" -maxdepth 1 -name 'part-*' | wc -l; }

# --- Hadoop's jars ---------------------------------------------------------------------------

if ! $skip_hadoop && [ ! -f "$lib/.complete" ]; then
    log "fetching Hadoop 3.4.2's YARN and MapReduce jars into $lib"
    rm -rf "$lib"
    mkdir -p "$lib"
    mvn_log=$(dirname "$lib")/fetch.log
    if ! interruptible "$mvn_log" mvn -q -B -Dstyle.color=never -f "$script_dir/cluster/pom.xml" \
        -Dproject.build.directory="$(dirname "$lib")/mvn" dependency:copy-dependencies \
        -DoutputDirectory="$lib" -DincludeScope=runtime; then
        sed 's/\x1b\[[0-9;]*m//g' "$mvn_log" >&2
        die "Maven could not fetch Hadoop's jars (log above)"
    fi
    touch "$lib/.complete"
fi

# --- network ---------------------------------------------------------------------------------

log "creating $hosts hosts on a bridge, links shaped to $rate"
if [ ! -d /etc/netns ]; then
    mkdir /etc/netns
    created_etc_netns=true
fi
hosts_file=$run/hosts
{
    echo "127.0.0.1 localhost"
    for i in $(seq 1 "$hosts"); do echo "$(addr "$i") slc-h$i"; done
} > "$hosts_file"
ip netns add "$br_ns"
created_ns+=("$br_ns")
mkdir "/etc/netns/$br_ns"
created_etc+=("$br_ns")
cp "$hosts_file" "/etc/netns/$br_ns/hosts"
ip -n "$br_ns" link set lo up
ip -n "$br_ns" link add name br0 type bridge
ip -n "$br_ns" link set br0 up
tbf=(tbf rate "$rate" burst 128kb latency 50ms)
for i in $(seq 1 "$hosts"); do
    ns=slc-h$i
    ip netns add "$ns"
    created_ns+=("$ns")
    mkdir "/etc/netns/$ns"
    created_etc+=("$ns")
    cp "$hosts_file" "/etc/netns/$ns/hosts"
    ip -n "$ns" link set lo up
    ip link add name "vh$i" netns "$br_ns" type veth peer name eth0 netns "$ns"
    ip -n "$br_ns" link set "vh$i" master br0
    ip -n "$br_ns" link set "vh$i" up
    ip -n "$ns" addr add "$(addr "$i")/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip netns exec "$ns" tc qdisc add dev eth0 root "${tbf[@]}"
    ip netns exec "$br_ns" tc qdisc add dev "vh$i" root "${tbf[@]}"
done
bridge_devs=()
for i in $(seq 1 "$hosts"); do bridge_devs+=("vh$i"); done

# link_rate SECONDS FROM->TO...: one TCP stream per pair at once; prints Mbit/s per pair.
link_rate() {
    local secs=$1
    shift
    local pair from to port=7999 server_pids=() k=0
    for pair in "$@"; do
        to=${pair#*>}
        in_host "$to" python3 "$script_dir/cluster/linkrate.py" server "$(addr "$to")" \
            "$port" 60 > "$run/linkrate-$k.out" &
        server_pids+=($!)
        k=$((k + 1))
    done
    k=0
    local client_pids=()
    for pair in "$@"; do
        from=${pair%>*}
        to=${pair#*>}
        in_host "$from" python3 "$script_dir/cluster/linkrate.py" client "$(addr "$to")" \
            "$port" "$secs" &
        client_pids+=($!)
    done
    wait "${client_pids[@]}" || die "a link rate client failed"
    wait "${server_pids[@]}" || die "a link rate server failed"
    k=0
    for pair in "$@"; do
        awk '{ printf "%.0f\n", $1 * 8 / $2 / 1e6 }' "$run/linkrate-$k.out"
        k=$((k + 1))
    done
}
log "measuring the links"
single_mbit=$(link_rate 3 "2>1")
ring=()
for i in $(seq 1 "$hosts"); do ring+=("$i>$((i % hosts + 1))"); done
ring_mbit=$(link_rate 3 "${ring[@]}" | paste -sd ' ')
log "one stream: $single_mbit Mbit/s; all hosts sending at once: $ring_mbit Mbit/s"

# --- measurements ----------------------------------------------------------------------------

clk_tck=$(getconf CLK_TCK)

# proc_figures LABEL PID...: one line per process: label, pid, utime, stime, cutime, cstime
# (clock ticks), read_bytes, write_bytes, cancelled_write_bytes.
proc_figures() {
    local label=$1 pid
    shift
    for pid in "$@"; do
        local stat io
        stat=$(sed 's/^.*) //' "/proc/$pid/stat")
        io=$(awk '/^read_bytes/ {r=$2} /^write_bytes/ {w=$2} /^cancelled_write_bytes/ {c=$2} END {print r, w, c}' "/proc/$pid/io")
        # After the ") ": field 1 is the state; utime..cstime are fields 12-15.
        echo "$label $pid $(awk '{print $12, $13, $14, $15}' <<< "$stat") $io"
    done
}

drop_page_cache() {
    $drop_caches || return 0
    sync
    echo 3 > /proc/sys/vm/drop_caches
    # What starts a job is not what the comparison is about: read the programs back.
    cat "$sluice" > /dev/null
    if [ -d "$lib" ]; then cat "$lib"/*.jar > /dev/null; fi
}

# measured DIR SYSTEM JOB PIDS-FILE COMMAND...: runs COMMAND (bounded by --job-timeout) in
# slc-h1 with every figure recorded into DIR.
measured() {
    local dir=$1 system=$2 job=$3 pids_file=$4
    shift 4
    mkdir -p "$dir"
    drop_page_cache
    proc_figures_all "$pids_file" > "$dir/procs-before.txt"
    echo "$(date +%s.%N) $(head -n 1 /proc/stat)" > "$dir/stat-before.txt"
    ip netns exec "$br_ns" python3 "$script_dir/cluster/netsample.py" 0.05 "$job_timeout" \
        "${bridge_devs[@]}" > "$dir/net.txt" &
    sampler_pid=$!
    sleep 0.3
    local rc=0
    interruptible "$dir/client.log" timeout --kill-after=30 "$job_timeout" \
        /usr/bin/time -f '%e %U %S %M' -o "$dir/time.txt" \
        ip netns exec slc-h1 unshare --uts -- sh -c 'hostname "$0" && exec "$@"' slc-h1 "$@" \
        || rc=$?
    if [ "$system" = hadoop ]; then wait_containers_gone "$pids_file"; fi
    proc_figures_all "$pids_file" > "$dir/procs-after.txt"
    echo "$(date +%s.%N) $(head -n 1 /proc/stat)" > "$dir/stat-after.txt"
    sleep 0.3
    kill -TERM "$sampler_pid"
    wait "$sampler_pid" || true
    sampler_pid=
    {
        echo "system=$system"
        echo "job=$job"
        echo "status=$rc"
    } > "$dir/meta.txt"
    if [ "$rc" != 0 ]; then
        tail -n 40 "$dir/client.log" >&2
        die "$system $job failed (exit $rc); its log and the daemons' are kept in $results"
    fi
}

# proc_figures_all PIDS-FILE: the figures of every "label pid" line of the file.
proc_figures_all() {
    local label pid
    while read -r label pid; do proc_figures "$label" "$pid"; done < "$1"
}

# Hadoop's containers are children of their NodeManager: once they have exited (and been
# reaped) their CPU time and I/O are in the NodeManager's cutime/cstime and io figures.
wait_containers_gone() {
    local label pid busy
    for _ in $(seq 1 600); do
        busy=false
        while read -r label pid; do
            [[ $label == nm* ]] || continue
            if [ -n "$(ps -o pid= --ppid "$pid")" ]; then busy=true; fi
        done < "$1"
        $busy || return 0
        sleep 0.1
    done
    log "warning: containers still running 60 s after the job ended; CPU and disk figures miss them"
}

validate_terasort() {
    local out=$1 dir=$2
    interruptible - "$sluice" run teravalidate --input "$out" --output "$dir/teravalidate" -q \
        || die "teravalidate rejects $out"
    grep -qx "checksum	$(cat "$tera_in.checksum")" "$dir/teravalidate/part-r-00000" \
        || die "the checksum of $out is not TeraGen's: $(cat "$dir/teravalidate/part-r-00000")"
    echo "validated=yes" >> "$dir/meta.txt"
    rm -rf "$dir/teravalidate"
}

# --- sluice ----------------------------------------------------------------------------------

"$sluice" secret "$run/secret"
workers=
: > "$run/sluice-pids"
for i in $(seq 1 "$hosts"); do
    mkdir -p "$run/scratch-h$i"
    in_host "$i" "$sluice" worker --listen "$(addr "$i"):7070" --secret-file "$run/secret" \
        --scratch "$run/scratch-h$i" --memory "$memory" --threads "$threads" \
        > "$run/h$i-worker.log" 2>&1 &
    started_pids+=($!)
    disown $!
    echo "h$i $!" >> "$run/sluice-pids"
    workers=${workers:+$workers,}$(addr "$i"):7070
done
for i in $(seq 1 "$hosts"); do
    for _ in $(seq 1 300); do
        grep -q "listening on" "$run/h$i-worker.log" && break
        sleep 0.1
    done
    grep -q "listening on" "$run/h$i-worker.log" \
        || { cat "$run/h$i-worker.log" >&2; die "the worker of slc-h$i did not start"; }
done
log "sluice workers: $workers"

mkdir -p "$run/runs"
sluice_run() {
    local job=$1 k=$2 dir=$run/runs/$1-sluice-$2 out=$run/out-sluice-$1-$2
    log "sluice $job, run $k"
    local input
    case $job in
        terasort) input=$tera_in ;;
        wordcount) input=$text_in ;;
    esac
    measured "$dir" sluice "$job" "$run/sluice-pids" \
        "$sluice" run "$job" --input "file://$input" --output "file://$out" \
        --reducers "$reducers" --cluster "workers=$workers" --secret-file "$run/secret" \
        --report "$dir/report.json"
    case $job in
        terasort) validate_terasort "$out" "$dir"; rm -rf "$out" ;;
        wordcount)
            if [ "$k" = 1 ]; then mv "$out" "$run/wordcount-sluice"; else rm -rf "$out"; fi ;;
    esac
}
# The same job in one sluice process (no cluster) in slc-h1, with one worker's budget and
# every core: what the distribution costs on this machine.
local_run() {
    local job=$1 k=$2 dir=$run/runs/$1-local-$2 out=$run/out-local-$1-$2
    log "sluice $job on one process, run $k"
    local input
    case $job in
        terasort) input=$tera_in ;;
        wordcount) input=$text_in ;;
    esac
    : > "$run/no-pids"
    measured "$dir" local "$job" "$run/no-pids" \
        "$sluice" run "$job" --input "file://$input" --output "file://$out" \
        --reducers "$reducers" --memory "$memory" --threads "$(nproc)" --report "$dir/report.json"
    case $job in
        terasort) validate_terasort "$out" "$dir" ;;
    esac
    rm -rf "$out"
}
for k in $(seq 1 "$runs"); do
    if $run_terasort; then sluice_run terasort "$k"; fi
    if $run_wordcount; then sluice_run wordcount "$k"; fi
    if $run_local && $run_terasort; then local_run terasort "$k"; fi
    if $run_local && $run_wordcount; then local_run wordcount "$k"; fi
done

# --- Hadoop ----------------------------------------------------------------------------------

if ! $skip_hadoop; then
    java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
    export JAVA_HOME=${JAVA_HOME:-$java_home}
    opens="--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED"
    opens+=" --add-opens=java.base/java.util.concurrent=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED"
    opens+=" --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED"
    opens+=" --add-opens=java.base/sun.nio.ch=ALL-UNNAMED"
    heap_mb=$((task_mb * 3 / 4))
    hadoop=$run/hadoop
    conf=$hadoop/conf
    mkdir -p "$conf/common" "$hadoop/staging" "$hadoop/tmp"
    prop() { printf '  <property><name>%s</name><value>%s</value></property>\n' "$1" "$2"; }
    site() { echo '<?xml version="1.0"?>'; echo '<configuration>'; cat; echo '</configuration>'; }
    { prop fs.defaultFS file:///; prop hadoop.tmp.dir "$hadoop/tmp"; } | site > "$conf/common/core-site.xml"
    yarn_common() {
        prop yarn.resourcemanager.hostname slc-h1
        prop yarn.application.classpath "$conf/common,$lib/*"
        prop yarn.nodemanager.aux-services mapreduce_shuffle
        prop yarn.nodemanager.aux-services.mapreduce_shuffle.class org.apache.hadoop.mapred.ShuffleHandler
        prop yarn.nodemanager.resource.memory-mb $((threads * task_mb))
        prop yarn.nodemanager.resource.cpu-vcores "$threads"
        prop yarn.scheduler.minimum-allocation-mb 256
        prop yarn.scheduler.maximum-allocation-mb $((threads * task_mb))
        # The virtual memory check kills JVMs for address space they never touch.
        prop yarn.nodemanager.vmem-check-enabled false
        # Hosts share one disk: the inputs must not make it look full to the NodeManagers.
        prop yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage 99.5
        prop yarn.nodemanager.env-whitelist JAVA_HOME,HADOOP_COMMON_HOME,HADOOP_HDFS_HOME,HADOOP_CONF_DIR,CLASSPATH_PREPEND_DISTCACHE,HADOOP_YARN_HOME,HADOOP_HOME,PATH,LANG,TZ,HADOOP_MAPRED_HOME
    }
    yarn_common | site > "$conf/common/yarn-site.xml"
    {
        prop mapreduce.framework.name yarn
        prop mapreduce.application.classpath "$conf/common,$lib/*"
        prop yarn.app.mapreduce.am.staging-dir "$hadoop/staging"
        prop yarn.app.mapreduce.am.resource.mb "$task_mb"
        prop yarn.app.mapreduce.am.command-opts "-Xmx${heap_mb}m $opens"
        prop mapreduce.map.memory.mb "$task_mb"
        prop mapreduce.reduce.memory.mb "$task_mb"
        prop mapreduce.map.java.opts "-Xmx${heap_mb}m $opens"
        prop mapreduce.reduce.java.opts "-Xmx${heap_mb}m $opens"
        prop mapreduce.task.io.sort.mb 256
        # The local file system reports 32 MiB blocks; HDFS would cut 128 MiB splits.
        prop mapreduce.input.fileinputformat.split.minsize 134217728
        prop mapreduce.map.speculative false
        prop mapreduce.reduce.speculative false
        prop mapreduce.jobhistory.jhist.format json
    } | site > "$conf/common/mapred-site.xml"
    {
        prop yarn.scheduler.capacity.root.queues default
        prop yarn.scheduler.capacity.root.default.capacity 100
        prop yarn.scheduler.capacity.root.default.maximum-capacity 100
        prop yarn.scheduler.capacity.maximum-am-resource-percent 0.5
    } | site > "$conf/common/capacity-scheduler.xml"
    cp "$repo_root/tests/hadoop/log4j.properties" "$conf/common/"
    cat > "$conf/daemon-log4j.properties" <<'EOF'
log4j.rootLogger=INFO,console
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.target=System.err
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%d{ISO8601} %p %c{1}: %m%n
EOF
    for i in $(seq 1 "$hosts"); do
        d=$conf/h$i
        mkdir -p "$d" "$hadoop/nm$i/local" "$hadoop/nm$i/logs"
        cp "$conf/common/core-site.xml" "$conf/common/mapred-site.xml" \
            "$conf/common/capacity-scheduler.xml" "$d/"
        cp "$conf/daemon-log4j.properties" "$d/log4j.properties"
        {
            yarn_common
            prop yarn.nodemanager.hostname "slc-h$i"
            prop yarn.nodemanager.local-dirs "$hadoop/nm$i/local"
            prop yarn.nodemanager.log-dirs "$hadoop/nm$i/logs"
        } | site > "$d/yarn-site.xml"
    done

    log "starting YARN: a ResourceManager in slc-h1, a NodeManager in every host"
    : > "$run/hadoop-pids"
    # shellcheck disable=SC2086
    in_host 1 java -Xmx512m $opens -cp "$conf/h1:$lib/*" \
        org.apache.hadoop.yarn.server.resourcemanager.ResourceManager > "$run/rm.log" 2>&1 &
    started_pids+=($!)
    disown $!
    rm_pid=$!
    echo "rm $!" >> "$run/hadoop-pids"
    for i in $(seq 1 "$hosts"); do
        # shellcheck disable=SC2086
        in_host "$i" java -Xmx512m $opens -cp "$conf/h$i:$lib/*" \
            org.apache.hadoop.yarn.server.nodemanager.NodeManager > "$run/nm$i.log" 2>&1 &
        started_pids+=($!)
        disown $!
        echo "nmh$i $!" >> "$run/hadoop-pids"
    done
    for _ in $(seq 1 1200); do
        n=$(grep -c "registered with capability" "$run/rm.log" || true)
        [ "$n" -ge "$hosts" ] && grep -q "Transitioned to active state" "$run/rm.log" && break
        sleep 0.1
    done
    n=$(grep -c "registered with capability" "$run/rm.log" || true)
    if [ "$n" -lt "$hosts" ]; then
        tail -n 30 "$run/rm.log" >&2
        die "only $n of $hosts NodeManagers registered within 120 s"
    fi
    log "YARN is up: $n NodeManagers"

    hadoop_run() {
        local job=$1 k=$2 dir=$run/runs/$1-hadoop-$2 out=$run/out-hadoop-$1-$2
        log "Hadoop $job, run $k"
        local input class
        case $job in
            terasort) input=$tera_in; class=terasort ;;
            wordcount) input=$text_in; class=wordcount ;;
        esac
        # TeraSort's tasks open the partition file it ships as "_partition.lst", a path relative
        # to the job's working directory, which is the client's current directory unless set:
        # on a file:/// cluster that is not where the file is. The output directory, where the
        # client wrote it and every host sees it, is.
        measured "$dir" hadoop "$job" "$run/hadoop-pids" \
            java -cp "$conf/common:$lib/*" org.apache.hadoop.examples.ExampleDriver "$class" \
            -D "mapreduce.job.reduces=$reducers" -D "mapreduce.job.working.dir=file://$out" \
            "file://$input" "file://$out"
        local id jhist=
        id=$(grep -o 'Running job: job_[0-9_]*' "$dir/client.log" | head -n 1 | cut -d' ' -f3)
        [ -n "$id" ] || die "no job id in $dir/client.log"
        for _ in $(seq 1 300); do
            jhist=$(find "$hadoop/staging" -name "$id*.jhist" | head -n 1)
            [ -n "$jhist" ] && break
            sleep 0.1
        done
        [ -n "$jhist" ] || die "no history file for $id"
        cp "$jhist" "$dir/job.jhist"
        case $job in
            terasort) validate_terasort "$out" "$dir"; rm -rf "$out" ;;
            wordcount)
                if [ "$k" = 1 ]; then mv "$out" "$run/wordcount-hadoop"; else rm -rf "$out"; fi ;;
        esac
    }
    for k in $(seq 1 "$runs"); do
        if $run_terasort; then hadoop_run terasort "$k"; fi
        if $run_wordcount; then hadoop_run wordcount "$k"; fi
    done
    if $run_wordcount; then
        for f in "$run/wordcount-sluice"/part-r-*; do
            cmp -s "$f" "$run/wordcount-hadoop/$(basename "$f")" \
                || die "word count: $(basename "$f") differs between sluice and Hadoop"
        done
        [ "$(dir_files "$run/wordcount-sluice")" = "$(dir_files "$run/wordcount-hadoop")" ] \
            || die "word count: sluice and Hadoop wrote different numbers of part files"
        log "word count: sluice's and Hadoop's part files are identical"
        echo "identical" > "$run/runs/wordcount-compare.txt"
    fi
fi

# --- report ----------------------------------------------------------------------------------

{
    echo "hosts=$hosts"
    echo "rate=$rate"
    echo "single_mbit=$single_mbit"
    echo "ring_mbit=$ring_mbit"
    echo "memory=$memory"
    echo "threads=$threads"
    echo "reducers=$reducers"
    echo "runs=$runs"
    echo "task_mb=$task_mb"
    echo "clk_tck=$clk_tck"
    echo "drop_caches=$drop_caches"
    echo "cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
    echo "cores=$(nproc)"
    echo "mem_gib=$(awk '/MemTotal/ { printf "%.1f", $2 / 1048576 }' /proc/meminfo)"
    echo "kernel=$(uname -sr)"
    echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "date=$(date -u +%Y-%m-%d)"
    echo "sluice_version=$("$sluice" --version)"
    if ! $skip_hadoop; then echo "java=$(java -version 2>&1 | head -n 1)"; fi
    if $run_terasort; then
        echo "tera_rows=$rows"
        echo "tera_bytes=$(dir_bytes "$tera_in")"
        echo "tera_files=$(dir_files "$tera_in")"
    fi
    if $run_wordcount; then
        echo "text_size=$text_size"
        echo "text_bytes=$(dir_bytes "$text_in")"
        echo "text_files=$(dir_files "$text_in")"
    fi
} > "$run/runs/setup.txt"
rm -rf "$results"
cp -r "$run/runs" "$results"
python3 "$script_dir/cluster/summarize.py" "$results" | tee "$work/cluster-results.md"
log "report in $work/cluster-results.md, raw figures in $results"
