#!/usr/bin/env python3
"""The Markdown report of bench/cluster.sh, from the raw figures it keeps.

    summarize.py RESULTS_DIR

RESULTS_DIR holds setup.txt and one directory per run, JOB-SYSTEM-K, with meta.txt,
time.txt (GNU time: wall, user, sys, max RSS), procs-before.txt and procs-after.txt (per
process: label, pid, utime, stime, cutime, cstime, read_bytes, write_bytes,
cancelled_write_bytes), net.txt (samples of the bridge-side veths: time, then rx and tx bytes
per host) and report.json (sluice) or job.jhist (Hadoop's job history, JSON).
"""
import json
import os
import statistics
import sys

MB = 1e6


def read_kv(path):
    out = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                out[k] = v
    return out


def read_procs(path):
    procs = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) < 9:
                continue
            procs[p[0]] = [int(x) for x in p[2:9]]
    return procs


def net_figures(path, hosts):
    """Per host: bytes out and in over the run, and the busiest 1 s window each way (bytes/s)."""
    samples = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 1 + 2 * hosts:
                samples.append((float(p[0]), [int(x) for x in p[1:]]))
    figures = []
    for h in range(hosts):
        # On the bridge side, a host's rx is what the host sent, tx what it received.
        out_series = [(t, v[2 * h]) for t, v in samples]
        in_series = [(t, v[2 * h + 1]) for t, v in samples]
        figures.append(
            {
                "out": out_series[-1][1] - out_series[0][1],
                "in": in_series[-1][1] - in_series[0][1],
                "peak_out": peak_rate(out_series),
                "peak_in": peak_rate(in_series),
                "moving_out": moving_span(out_series),
                "moving_in": moving_span(in_series),
                "steady_out": steady_rate(out_series),
                "steady_in": steady_rate(in_series),
            }
        )
    return figures


def moving_span(series, floor=1_000_000):
    """Seconds from the start of the first sample interval in which the link carried more
    than `floor` bytes/s (1 MB/s: more than the job's control messages) to the end of the
    last one: the time during which the job's data was on this link."""
    busy = [
        (a[0], b[0])
        for a, b in zip(series, series[1:])
        if b[0] > a[0] and (b[1] - a[1]) / (b[0] - a[0]) > floor
    ]
    return busy[-1][1] - busy[0][0] if busy else 0.0


def steady_rate(series, floor=1_000_000, edge=0.25):
    """The link's mean rate (bytes/s) while data moved on it, leaving out the first and the
    last `edge` seconds of that time: while the first map outputs appear and the last ones
    drain, a link waits on the tasks, not on its rate. None if data moved for too short a
    time to leave anything in between."""
    busy = [
        (a[0], b[0])
        for a, b in zip(series, series[1:])
        if b[0] > a[0] and (b[1] - a[1]) / (b[0] - a[0]) > floor
    ]
    if not busy:
        return None
    start, end = busy[0][0] + edge, busy[-1][1] - edge
    inside = [(t, v) for t, v in series if start <= t <= end]
    if len(inside) < 2 or inside[-1][0] - inside[0][0] < edge:
        return None
    (t0, v0), (t1, v1) = inside[0], inside[-1]
    return (v1 - v0) / (t1 - t0)


def peak_rate(series, window=1.0):
    if len(series) < 2:
        return 0.0
    # A run shorter than the window is one window.
    window = min(window, series[-1][0] - series[0][0])
    best = 0.0
    j = 0
    for i in range(len(series)):
        while j < len(series) and series[j][0] - series[i][0] < window:
            j += 1
        if j >= len(series):
            break
        dt = series[j][0] - series[i][0]
        best = max(best, (series[j][1] - series[i][1]) / dt)
    return best


def machine_busy(path, tck):
    """CPU seconds the whole machine was busy and was idle over the measured interval
    (/proc/stat, read next to the processes' figures), or None."""
    try:
        with open(os.path.join(path, "stat-before.txt")) as f:
            b = f.read().split()
        with open(os.path.join(path, "stat-after.txt")) as f:
            a = f.read().split()
    except OSError:
        return None
    # time, "cpu", then user nice system idle iowait irq softirq steal guest guest_nice.
    d = [int(y) - int(x) for x, y in zip(b[2:], a[2:])]
    busy = (d[0] + d[1] + d[2] + d[5] + d[6]) / tck
    idle = (d[3] + d[4]) / tck
    return {"busy": busy, "idle": idle, "seconds": float(a[0]) - float(b[0])}


def counters(group_list):
    out = {}
    for g in group_list["groups"]:
        for c in g["counts"]:
            out[c["name"]] = out.get(c["name"], 0) + c["value"]
    return out


def read_jhist(path):
    events = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith('{"type"'):
                continue
            e = json.loads(line)
            if "event" not in e:  # the schema
                continue
            body = next(iter(e["event"].values()))
            events.append((e["type"], body))
    job = {"per_host": {}}
    for kind, body in events:
        if kind == "JOB_SUBMITTED":
            job["submit"] = body["submitTime"]
        elif kind == "JOB_INITED":
            job["launch"] = body["launchTime"]
        elif kind == "JOB_FINISHED":
            job["finish"] = body["finishTime"]
            job["map"] = counters(body["mapCounters"])
            job["reduce"] = counters(body["reduceCounters"])
            job["total"] = counters(body["totalCounters"])
        elif kind in ("MAP_ATTEMPT_FINISHED", "REDUCE_ATTEMPT_FINISHED"):
            host = body["hostname"]
            c = counters(body["counters"])
            side = "map" if kind.startswith("MAP") else "reduce"
            h = job["per_host"].setdefault(host, {"map": {}, "reduce": {}, "tasks": {"map": 0, "reduce": 0}})
            h["tasks"][side] += 1
            for k, v in c.items():
                h[side][k] = h[side].get(k, 0) + v
    return job


def load_run(path, setup):
    hosts = int(setup["hosts"])
    tck = int(setup["clk_tck"])
    meta = read_kv(os.path.join(path, "meta.txt"))
    with open(os.path.join(path, "time.txt")) as f:
        wall, user, sys_, rss = f.read().split("\n")[-2].split()
    run = {
        "system": meta["system"],
        "job": meta["job"],
        "wall": float(wall),
        "client_cpu": float(user) + float(sys_),
        "client_rss_mib": int(rss) / 1024,
        "net": net_figures(os.path.join(path, "net.txt"), hosts),
    }
    before = read_procs(os.path.join(path, "procs-before.txt"))
    after = read_procs(os.path.join(path, "procs-after.txt"))
    procs = {}
    for label in after:
        b, a = before[label], after[label]
        d = [y - x for x, y in zip(b, a)]
        procs[label] = {
            "cpu": sum(d[0:4]) / tck,
            "read": d[4],
            "write": d[5],
            "cancelled": d[6],
        }
    run["procs"] = procs
    run["hosts"] = []
    if run["system"] == "local":
        with open(os.path.join(path, "report.json")) as f:
            report = json.load(f)
        run["phases"] = {p["phase"]: p["seconds"] for p in report["phases"]}
        run["shuffle_bytes"] = 0
        run["shuffle_seconds"] = 0
        run["master_cpu"] = 0.0
        run["output"] = report["counters"]["output_bytes"]
        run["spilled"] = report["counters"]["spilled_bytes"]
    elif run["system"] == "sluice":
        with open(os.path.join(path, "report.json")) as f:
            report = json.load(f)
        run["phases"] = {p["phase"]: p["seconds"] for p in report["phases"]}
        by_host = {w["host"]: w for w in report["workers"]}
        for i in range(1, hosts + 1):
            w = by_host.get(f"slc-h{i}")
            p = procs[f"h{i}"]
            s = w["shuffle"] if w else {}
            c = w["counters"] if w else {}
            run["hosts"].append(
                {
                    "cpu": p["cpu"],
                    "read": s.get("disk_read_bytes", 0),
                    "write": s.get("disk_write_bytes", 0),
                    "proc_read": p["read"],
                    "proc_write": p["write"],
                    "cancelled": p["cancelled"],
                    "output": c.get("output_bytes", 0),
                    # Map output spilled, and copies of pushed map output kept for pulls
                    # that moved to disk to make room.
                    "map_spilled": c.get("spilled_bytes", 0) + s.get("kept_to_disk_bytes", 0),
                    "reduce_to_disk": s.get("received_to_disk_bytes", 0),
                    "pushed": s.get("pushed_bytes", 0),
                    "received": s.get("received_bytes", 0),
                    "pulled": s.get("pulled_bytes", 0),
                    "pushing_s": s.get("pushing_micros", 0) / 1e6,
                    "receiving_s": s.get("receiving_micros", 0) / 1e6,
                    "tasks": f'{w["map_tasks"]}/{w["reduce_tasks"]}' if w else "-",
                }
            )
        run["shuffle_bytes"] = sum(h["pushed"] + h["pulled"] for h in run["hosts"])
        run["shuffle_seconds"] = run["phases"].get("map", 0) + run["phases"].get("reduce", 0)
        run["master_cpu"] = 0.0
        run["output"] = report["counters"]["output_bytes"]
    else:
        job = read_jhist(os.path.join(path, "job.jhist"))
        run["job_seconds"] = (job["finish"] - job["submit"]) / 1000
        for i in range(1, hosts + 1):
            p = procs[f"nmh{i}"]
            h = job["per_host"].get(f"slc-h{i}", {"map": {}, "reduce": {}, "tasks": {"map": 0, "reduce": 0}})
            out = h["reduce"].get("BYTES_WRITTEN", 0)
            run["hosts"].append(
                {
                    "cpu": p["cpu"],
                    "read": p["read"],
                    "write": p["write"],
                    "proc_read": p["read"],
                    "proc_write": p["write"],
                    "cancelled": p["cancelled"],
                    "output": out,
                    "map_spilled": h["map"].get("FILE_BYTES_WRITTEN", 0),
                    "reduce_to_disk": h["reduce"].get("FILE_BYTES_WRITTEN", 0) - out,
                    "shuffled": h["reduce"].get("REDUCE_SHUFFLE_BYTES", 0),
                    "tasks": f'{h["tasks"]["map"]}/{h["tasks"]["reduce"]}',
                }
            )
        run["shuffle_bytes"] = job["reduce"].get("REDUCE_SHUFFLE_BYTES", 0)
        run["shuffle_seconds"] = (job["finish"] - job["launch"]) / 1000
        run["master_cpu"] = procs["rm"]["cpu"]
        run["output"] = job["reduce"].get("BYTES_WRITTEN", 0)
        run["task_cpu"] = job["total"].get("CPU_MILLISECONDS", 0) / 1000
    run["machine_busy"] = machine_busy(path, tck)
    run["cpu_total"] = sum(h["cpu"] for h in run["hosts"]) + run["client_cpu"] + run["master_cpu"]
    run["link_bytes"] = sum(n["out"] for n in run["net"])
    run["busiest_link_bytes"] = max(max(n["out"], n["in"]) for n in run["net"])
    if run["system"] == "local":
        run["busiest_link_bytes"] = 0
    run["peak_link"] = max(max(n["peak_out"], n["peak_in"]) for n in run["net"])
    return run


def mb(x):
    return f"{x / MB:,.0f}"


def mbit(bytes_per_s):
    return bytes_per_s * 8 / 1e6


def moving_share(net, link_mbit):
    """The links' mean rate while data moved on them, as a share of the link rate: lowest and
    highest over the hosts' links, each direction (links that carried under 1 MB left out)."""
    shares = []
    for n in net:
        for way in ("out", "in"):
            span = n[f"moving_{way}"]
            if n[way] >= 1_000_000 and span > 0:
                shares.append(100 * mbit(n[way] / span) / link_mbit)
    if not shares:
        return "-"
    return f"{min(shares):.0f}–{max(shares):.0f}%"


def steady_share(net, link_mbit):
    """[`steady_rate`] of the hosts' links as a share of the link rate: lowest and highest over
    the links, each direction (links that carried under 1 MB, or too briefly, left out)."""
    shares = []
    for n in net:
        for way in ("out", "in"):
            rate = n[f"steady_{way}"]
            if n[way] >= 1_000_000 and rate is not None:
                shares.append(100 * mbit(rate) / link_mbit)
    if not shares:
        return "-"
    return f"{min(shares):.0f}–{max(shares):.0f}%"


def pushing_share(hosts, link_mbit):
    """sluice's pushes' rate while at least one was under way, as a share of the link rate:
    each worker's pushed bytes over its pushing time, and received bytes over its receiving
    time (record bytes, as the measured link rate counts a stream's payload); lowest and
    highest over the workers, each direction. What the shuffle got out of a link whenever it
    had something to send, where the links' rate while data moved also counts moments when
    no map output was ready."""
    shares = []
    for h in hosts:
        for moved, took in (("pushed", "pushing_s"), ("received", "receiving_s")):
            if h.get(moved, 0) >= 1_000_000 and h.get(took, 0) > 0:
                shares.append(100 * mbit(h[moved] / h[took]) / link_mbit)
    if not shares:
        return None
    return f"{min(shares):.0f}–{max(shares):.0f}%"


def main():
    root = sys.argv[1]
    setup = read_kv(os.path.join(root, "setup.txt"))
    hosts = int(setup["hosts"])
    link_mbit = float(setup["single_mbit"])
    runs = {}
    for name in sorted(os.listdir(root)):
        path = os.path.join(root, name)
        if os.path.isdir(path) and os.path.exists(os.path.join(path, "procs-after.txt")):
            r = load_run(path, setup)
            r["name"] = name
            runs.setdefault((r["job"], r["system"]), []).append(r)
    for key in runs:
        runs[key].sort(key=lambda r: int(r["name"].rsplit("-", 1)[1]))

    def median_run(rs):
        ordered = sorted(rs, key=lambda r: r["wall"])
        return ordered[(len(ordered) - 1) // 2]

    p = print
    cores = setup["cores"]
    p(f"Machine: {setup['cpu']}, **{cores} cores** shared by all {hosts} hosts, "
      f"{setup['mem_gib']} GiB RAM, {setup['kernel']}; {setup['date']}; load average before the "
      f"report {setup['loadavg']}. {setup['sluice_version']}. "
      + (f"Hadoop 3.4.2 on {setup['java']}." if "java" in setup else "Hadoop not run."))
    p()
    p(f"Hosts: {hosts} network namespaces on one bridge, each link shaped to {setup['rate']} "
      f"(tbf, both directions). Measured: one TCP stream {setup['single_mbit']} Mbit/s; every host "
      f"sending to the next at once: {setup['ring_mbit']} Mbit/s.")
    inputs = []
    if "tera_rows" in setup:
        inputs.append(f"TeraSort: {setup['tera_rows']} TeraGen rows ({int(setup['tera_bytes']):,} bytes, "
                      f"{setup['tera_files']} files)")
    if "text_size" in setup:
        inputs.append(f"word count: `sluice gen text --size {setup['text_size']} --seed 42` "
                      f"({int(setup['text_bytes']):,} bytes, {setup['text_files']} files)")
    p()
    p("Inputs: " + "; ".join(inputs) + ". "
      f"sluice workers: --memory {setup['memory']} --threads {setup['threads']}; YARN: "
      f"{setup['threads']} containers of {setup['task_mb']} MB per NodeManager. "
      f"{setup['reducers']} reducers for both. Page cache "
      + ("dropped before every run." if setup["drop_caches"] == "true" else "kept between runs."))
    p()
    jobs = sorted({j for j, _ in runs})
    n = setup["runs"]
    p(f"**Job time** (wall time of the coordinator / job client process, median of {n}; "
      f"{cores} cores for everything):")
    p()
    p("| job | sluice (s) | Hadoop on YARN (s) | Hadoop / sluice | Hadoop's job alone (s) | sluice as one process (s) | all runs, sluice | all runs, Hadoop | all runs, one process |")
    p("|---|---:|---:|---:|---:|---:|---|---|---|")
    for job in jobs:
        s = runs.get((job, "sluice"), [])
        h = runs.get((job, "hadoop"), [])
        lo = runs.get((job, "local"), [])
        sm = statistics.median(r["wall"] for r in s) if s else None
        hm = statistics.median(r["wall"] for r in h) if h else None
        ratio = f"{hm / sm:.1f}x" if sm and hm else "-"
        fmt = lambda x: "-" if x is None else f"{x:.2f}"
        all_s = " / ".join(f"{r['wall']:.2f}" for r in s)
        all_h = " / ".join(f"{r['wall']:.2f}" for r in h)
        hj = statistics.median(r["job_seconds"] for r in h) if h else None
        lm = statistics.median(r["wall"] for r in lo) if lo else None
        all_l = " / ".join(f"{r['wall']:.2f}" for r in lo)
        p(f"| {job} | {fmt(sm)} | {fmt(hm)} | {ratio} | {fmt(hj)} | {fmt(lm)} | {all_s} | {all_h} | {all_l} |")
    p()
    p("Hadoop's job alone: from its submission to its end in the job history (without the client "
      "JVM's start, and for TeraSort without the client's sampling of the input). sluice as one "
      "process: the same job without --cluster, one worker's budget, every core of the machine.")
    p()
    p(f"**Shuffle and links** (the median run of each; link figures from the veths' counters, "
      f"wire bytes with headers; the measured link rate is {link_mbit:.0f} Mbit/s; MB = 10^6 bytes):")
    p()
    p("| job | system | shuffled (MB) | over the links (MB) | shuffled / (map+reduce time) | "
      "busiest link, mean over the job | busiest second on a link | of the link rate | "
      "each link while data moved on it | sluice's pushes while under way |")
    p("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for job in jobs:
        for system in ("sluice", "hadoop"):
            rs = runs.get((job, system))
            if not rs:
                continue
            r = median_run(rs)
            mean_busiest = mbit(r["busiest_link_bytes"] / r["wall"])
            peak = mbit(r["peak_link"])
            what = ("pushed+pulled" if system == "sluice" else "reduce shuffle bytes")
            p(f"| {job} | {system} | {mb(r['shuffle_bytes'])} ({what}) | {mb(r['link_bytes'])} | "
              f"{r['shuffle_bytes'] / MB / r['shuffle_seconds']:.0f} MB/s over {r['shuffle_seconds']:.2f} s | "
              f"{mean_busiest:.0f} Mbit/s | {peak:.0f} Mbit/s | {100 * peak / link_mbit:.0f}% | "
              f"{moving_share(r['net'], link_mbit)} | "
              f"{(pushing_share(r['hosts'], link_mbit) if system == 'sluice' else None) or '-'} |")
    p()
    p("**Local disk per host** (the median run; bytes the host's worker, or NodeManager and its "
      "containers, read from and wrote to the device, /proc/PID/io; MB = 10^6 bytes). "
      "Output: part files written by the host. Map-side: sluice's spilled bytes and kept_to_disk_bytes (pushed map output kept for pulls, moved to disk), Hadoop's map "
      "tasks' FILE_BYTES_WRITTEN (spills and the final map output). Reduce-side: sluice's "
      "received_to_disk_bytes, Hadoop's reduce tasks' FILE_BYTES_WRITTEN minus their output.")
    p()
    p("| job | system | host | map/reduce tasks | disk read (MB) | disk written (MB) | of which cancelled | output (MB) | map-side intermediate (MB) | reduce-side intermediate (MB) |")
    p("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for job in jobs:
        for system in ("sluice", "hadoop"):
            rs = runs.get((job, system))
            if not rs:
                continue
            r = median_run(rs)
            for i, h in enumerate(r["hosts"], 1):
                p(f"| {job} | {system} | slc-h{i} | {h['tasks']} | {mb(h['read'])} | {mb(h['write'])} | "
                  f"{mb(h['cancelled'])} | {mb(h['output'])} | {mb(h['map_spilled'])} | {mb(h['reduce_to_disk'])} |")
    p()
    p(f"**CPU seconds** (user+sys; median run; per host: the sluice worker, or the NodeManager "
      f"with its reaped containers; {cores} cores in all, so at most {cores} CPU-seconds per second):")
    p()
    head = " | ".join(f"slc-h{i}" for i in range(1, hosts + 1))
    p(f"| job | system | {head} | coordinator / client | ResourceManager | total | total / wall | other processes |")
    p("|---|---|" + "---:|" * hosts + "---:|---:|---:|---:|---:|")
    for job in jobs:
        for system in ("sluice", "hadoop"):
            rs = runs.get((job, system))
            if not rs:
                continue
            r = median_run(rs)
            cells = " | ".join(f"{h['cpu']:.1f}" for h in r["hosts"])
            rm = f"{r['master_cpu']:.1f}" if system == "hadoop" else "-"
            m = r["machine_busy"]
            busy = "-" if m is None else f"{max(0.0, m['busy'] - r['cpu_total']):.1f}"
            p(f"| {job} | {system} | {cells} | {r['client_cpu']:.1f} | {rm} | {r['cpu_total']:.1f} | "
              f"{r['cpu_total'] / r['wall']:.2f} | {busy} |")
    p()
    p("Other processes: CPU seconds the machine spent during the run (/proc/stat) beyond the "
      "total: other work on the machine, and the kernel's network processing where it is not "
      "charged to a process.")
    p()
    # Cross-checks and details, one line per run.
    p("Every run (wall s; CPU s in all; link MB; for sluice the phases and the report's disk "
      "figures against /proc's; for Hadoop the job's own time from the history file and its "
      "tasks' CPU_MILLISECONDS):")
    p()
    for key in sorted(runs):
        for r in runs[key]:
            extra = ""
            if r["system"] == "local":
                ph = r["phases"]
                extra = (f"one process; map {ph.get('map', 0):.2f} s, reduce {ph.get('reduce', 0):.2f} s, "
                         f"commit {ph.get('commit', 0):.2f} s; spilled {mb(r['spilled'])} MB")
            elif r["system"] == "sluice":
                ph = r["phases"]
                rep_w = sum(h["write"] for h in r["hosts"])
                proc_w = sum(h["proc_write"] for h in r["hosts"])
                rep_r = sum(h["read"] for h in r["hosts"])
                proc_r = sum(h["proc_read"] for h in r["hosts"])
                extra = (f"map {ph.get('map', 0):.2f} s, reduce {ph.get('reduce', 0):.2f} s, "
                         f"commit {ph.get('commit', 0):.2f} s; disk written {mb(rep_w)} MB "
                         f"(report) / {mb(proc_w)} MB (/proc), read {mb(rep_r)} / {mb(proc_r)} MB")
            else:
                extra = (f"job {r['job_seconds']:.1f} s from submission to finish; task CPU "
                         f"{r['task_cpu']:.1f} s")
            m = r["machine_busy"]
            busy = "" if m is None else (
                f" (machine: {m['busy']:.1f} CPU-s busy, {m['idle']:.1f} idle, "
                f"over {m['seconds']:.1f} s)")
            pushing = pushing_share(r["hosts"], link_mbit) if r["system"] == "sluice" else None
            moving = "" if r["system"] == "local" else (
                f" (each link while data moved on it: {moving_share(r['net'], link_mbit)} "
                f"of the rate; without its first and last 0.25 s: "
                f"{steady_share(r['net'], link_mbit)}"
                + ("" if pushing is None else f"; pushes while under way: {pushing}")
                + ")")
            p(f"- {r['name']}: {r['wall']:.2f} s, CPU {r['cpu_total']:.1f} s{busy}, links "
              f"{mb(r['link_bytes'])} MB{moving}; {extra}")
    cmp_file = os.path.join(root, "wordcount-compare.txt")
    if os.path.exists(cmp_file):
        p()
        p("Word count: sluice's and Hadoop's part files are identical (first run of each). "
          "Every TeraSort output passed teravalidate with TeraGen's checksum.")


if __name__ == "__main__":
    main()
