#!/usr/bin/env python3
"""Samples the byte counters of network devices until stopped (SIGTERM) or LIMIT seconds pass.

    netsample.py INTERVAL LIMIT DEV...

Prints one line per sample to stdout: the monotonic time in seconds, then for each device its
rx_bytes and tx_bytes (from /sys/class/net/DEV/statistics, so run it in the devices'
network namespace with `ip netns exec`, which mounts that namespace's /sys).
"""
import signal
import sys
import time

interval, limit, devs = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3:]
files = []
for dev in devs:
    for name in ("rx_bytes", "tx_bytes"):
        files.append(open(f"/sys/class/net/{dev}/statistics/{name}", "rb", buffering=0))

stop = False


def on_term(_sig, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_term)


def sample():
    values = []
    for f in files:
        f.seek(0)
        values.append(f.read().strip().decode())
    print(f"{time.monotonic():.3f} " + " ".join(values), flush=True)


end = time.monotonic() + limit
while not stop and time.monotonic() < end:
    sample()
    time.sleep(interval)
sample()
