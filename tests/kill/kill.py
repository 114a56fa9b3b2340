#!/usr/bin/env python3
"""Kills sluice jobs with SIGKILL at random moments and checks what they leave.

For each job (word count, TeraSort, a streaming job with a mapper and a reducer program), the
harness runs the job once to the end for its reference output and duration, then `--trials`
times: starts it, waits a random time within that duration (or a little beyond), and kills it with SIGKILL (what the
out-of-memory killer and `kill -9` do; no handler runs). After each kill:

  * the output directory is absent, or complete: `_SUCCESS` and the reference's part files,
    byte for byte (a kill after the rename into place and before `_SUCCESS` would leave the
    files without `_SUCCESS`; that, and anything else, is a failure);
  * no program the streaming job started is still running (they die with sluice);
  * the next run of the job, on the same output and spill directory, succeeds and leaves no
    staging (`.NAME.sluice-tmp-*`) or spill (`.sluice-spill-*`) directory behind: what the
    killed run left is removed.

Usage: tests/kill/kill.py [--sluice target/release/sluice] [--trials 50] [--seed 1]
Prints one line per trial and a summary per job; exits 1 on the first violation.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time


def run(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def parts(directory):
    """The visible files of an output directory and their bytes."""
    out = {}
    for name in sorted(os.listdir(directory)):
        if not name.startswith((".", "_")):
            with open(os.path.join(directory, name), "rb") as f:
                out[name] = f.read()
    return out


def debris(directory):
    return [
        n for n in os.listdir(directory) if ".sluice-tmp-" in n or n.startswith(".sluice-spill-")
    ]


def programs_alive(marker):
    """Processes whose command line mentions `marker` (the streaming job's scratch dir)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(pid))
        except OSError:
            pass
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sluice", default="target/release/sluice")
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    sluice = os.path.abspath(options.sluice)
    rng = random.Random(options.seed)
    scratch = tempfile.mkdtemp(prefix="sluice-kill-")
    try:
        return trials(sluice, scratch, rng, options.trials)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def trials(sluice, scratch, rng, count):
    text = os.path.join(scratch, "text")
    rows = os.path.join(scratch, "rows")
    spill = os.path.join(scratch, "spill")
    outputs = os.path.join(scratch, "outputs")
    for d in (spill, outputs):
        os.mkdir(d)
    run([sluice, "gen", "text", "--size", "192MiB", "--files", "4", "--output", text, "-q"], check=True)
    run([sluice, "run", "teragen", "--rows", "2000000", "--output", rows, "--quiet"], check=True)
    mapper = os.path.join(scratch, "mapper.sh")
    with open(mapper, "w") as f:
        f.write("#!/bin/sh\nexec tr -s ' ' '\\n'\n")
    os.chmod(mapper, 0o755)
    common = ["--spill-dir", spill]
    jobs = {
        "wordcount": lambda out: [sluice, "run", "wordcount", "--quiet", "--memory", "64MiB",
                                  "--reducers", "3", "-i", text, "-o", out] + common,
        "terasort": lambda out: [sluice, "run", "terasort", "--quiet", "--memory", "64MiB",
                                 "--reducers", "2", "-i", rows, "-o", out] + common,
        "streaming": lambda out: [sluice, "streaming", "-D", "sluice.memory=64MiB",
                                  "-D", f"sluice.spill.dir={spill}",
                                  "-input", text, "-output", out, "-mapper", mapper,
                                  "-reducer", "uniq -c", "-numReduceTasks", "2"],
    }
    failures = 0
    for name, command in jobs.items():
        reference = os.path.join(outputs, f"{name}-reference")
        start = time.monotonic()
        done = run(command(reference))
        duration = time.monotonic() - start
        if done.returncode != 0:
            print(f"{name}: the reference run failed: {done.stderr.decode(errors='replace')}")
            return 1
        expected = parts(reference)
        outcomes = {"absent": 0, "complete": 0}
        out = os.path.join(outputs, name)
        for trial in range(count):
            # A little beyond the reference's duration too, so that some kills find the job
            # committing or done.
            delay = rng.uniform(0, duration * 1.15)
            child = subprocess.Popen(command(out), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
            time.sleep(delay)
            child.send_signal(signal.SIGKILL)
            child.wait()
            problem = None
            if os.path.exists(out):
                if not os.path.exists(os.path.join(out, "_SUCCESS")):
                    problem = "output without _SUCCESS"
                elif parts(out) != expected:
                    problem = "output differs from the reference"
                else:
                    outcomes["complete"] += 1
            else:
                outcomes["absent"] += 1
            if problem is None and name == "streaming":
                deadline = time.monotonic() + 5
                while programs_alive(mapper) and time.monotonic() < deadline:
                    time.sleep(0.05)
                if programs_alive(mapper):
                    problem = f"programs still running: {programs_alive(mapper)}"
            if problem is None:
                shutil.rmtree(out, ignore_errors=True)
                rerun = run(command(out))
                if rerun.returncode != 0:
                    problem = f"the next run failed: {rerun.stderr.decode(errors='replace')}"
                elif parts(out) != expected:
                    problem = "the next run's output differs from the reference"
                elif debris(outputs) or debris(spill):
                    problem = f"left behind: {debris(outputs) + debris(spill)}"
                shutil.rmtree(out, ignore_errors=True)
            print(f"{name} trial {trial + 1}: killed after {delay:.2f} s of {duration:.2f}: "
                  f"{problem or 'ok'}", flush=True)
            if problem:
                failures += 1
                return 1
        print(f"{name}: {count} kills, output absent {outcomes['absent']}, complete "
              f"{outcomes['complete']}, partial 0; every next run clean", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
