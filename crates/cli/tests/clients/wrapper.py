"""A job runner of the kind that drives Hadoop Streaming, pointed at sluice.

It does what such tools do with `hadoop jar hadoop-streaming.jar`: builds each step's command
line with `file://` URIs, runs it under a pseudo-terminal (stdout and stderr merged, as a
terminal shows them), splits the console into log4j records, takes the job id from
`Running job:`, the counters from the last `Counters: N` block, failed attempts from
`Task Id : ..., Status : FAILED`, the output directory from `Output directory:`, and success
from the exit status alone; then reads each step's output from where the console said it is and
gives it to the next step.

Usage: wrapper.py SLUICE WORKDIR. Writes WORKDIR/result.json.
"""

import json
import os
import pty
import re
import sys

LOG4J_RECORD = re.compile(
    r"^\s*(?P<timestamp>.*?)\s+(?P<level>[A-Z]+)\s+(?P<logger>\S+)"
    r"(\s+\((?P<thread>.*?)\))?( - |: )(?P<message>.*?)$"
)
COUNTERS = re.compile(r"^Counters: (?P<num>\d+)\s*$", re.MULTILINE)
COUNTER_GROUP = re.compile(r"^(?P<indent>\s+)(?P<group>.*)$")
COUNTER = re.compile(r"^(?P<indent>\s+)(?P<counter>.*)=(?P<amount>\d+)\s*$")
OUTPUT_DIRECTORY = re.compile(r"^Output( directory)?:\s+(?P<output_dir>\S+://\S+)\s*$")
RUNNING_JOB = re.compile(r"^Running job: (?P<job_id>job_\d+_\d{4})\s*$")
PROGRESS = re.compile(r"^\s*map\s+(?P<map>\d+)%\s+reduce\s+(?P<reduce>\d+)%\s*$")
TASK_FAILED = re.compile(
    r"^Task Id *: (?P<attempt_id>attempt_\d+_\d{4}_[mr]_\d+_\d+), Status *: FAILED$",
    re.MULTILINE,
)
NON_LOG4J = re.compile(r"^(packageJobJar: .*|Streaming Command Failed!)$")


def run_under_pty(argv, cwd):
    """Runs argv under a pseudo-terminal; returns (exit status, console text)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execv(argv[0], argv)
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode("utf-8", "replace")


def records(console):
    """Splits console text into log4j records; other lines continue the previous record."""
    result = []
    for line in console.splitlines():
        line = line.rstrip("\r\n")
        if NON_LOG4J.match(line):
            result.append({"level": "", "logger": "", "message": line})
            continue
        m = LOG4J_RECORD.match(line)
        if m:
            result.append(m.groupdict())
        elif result:
            result[-1]["message"] += "\n" + line
        else:
            result.append({"level": "", "logger": "", "message": line})
    return result


def parse_counters(message):
    counters, group, group_indent = {}, None, None
    for line in message.splitlines()[1:]:
        counter = COUNTER.match(line)
        if counter and group is not None and len(counter.group("indent")) > group_indent:
            counters[group][counter.group("counter")] = int(counter.group("amount"))
            continue
        header = COUNTER_GROUP.match(line)
        if header:
            group, group_indent = header.group("group"), len(header.group("indent"))
            counters.setdefault(group, {})
        else:
            raise ValueError("unexpected counter line: %r" % line)
    return counters


def interpret(console):
    step = {"failures": [], "progress": []}
    for record in records(console):
        message = record["message"]
        if COUNTERS.match(message):
            step["counters"] = parse_counters(message)
            continue
        m = OUTPUT_DIRECTORY.match(message)
        if m:
            step["output_dir"] = m.group("output_dir")
            continue
        m = RUNNING_JOB.match(message)
        if m:
            step["job_id"] = m.group("job_id")
            continue
        m = PROGRESS.match(message)
        if m:
            step["progress"].append([int(m.group("map")), int(m.group("reduce"))])
        m = TASK_FAILED.match(message)
        if m:
            lines = message.splitlines()
            step["failures"].append(
                {"attempt_id": m.group("attempt_id"), "error": "\n".join(lines[1:])}
            )
    return step


def read_output(uri):
    assert uri.startswith("file://"), uri
    path = uri[len("file://"):]
    assert os.path.isfile(os.path.join(path, "_SUCCESS")), "no _SUCCESS in " + path
    names = sorted(n for n in os.listdir(path) if n.startswith("part-"))
    return path, names


def main():
    sluice, work = sys.argv[1], os.path.abspath(sys.argv[2])
    uri = lambda name: "file://" + os.path.join(work, name)
    python = sys.executable

    def streaming(*args):
        return [sluice, "streaming"] + list(args)

    steps = {
        # 1: word count with counters, input and output as file:// URIs.
        "count": streaming(
            "-files", uri("count_map.py") + "," + uri("sum_reduce.py"),
            "-D", "mapreduce.job.reduces=2",
            "-input", uri("corpus"),
            "-output", uri("step1"),
            "-mapper", python + " count_map.py",
            "-reducer", python + " sum_reduce.py",
        ),
        # 2: a "raw" step over step 1's output, one map task per 2 lines.
        "swap": streaming(
            "-D", "mapreduce.input.lineinputformat.linespermap=2",
            "-files", uri("swap_map.py"),
            "-inputformat", "org.apache.hadoop.mapred.lib.NLineInputFormat",
            "-input", None,
            "-output", uri("step2"),
            "-mapper", python + " swap_map.py",
            "-numReduceTasks", "0",
        ),
        # 3: sort by count, descending, into one gzip part file.
        "rank": streaming(
            "-D", "mapreduce.job.output.key.comparator.class="
                  "org.apache.hadoop.mapred.lib.KeyFieldBasedComparator",
            "-D", "mapreduce.partition.keycomparator.options=-k1,1nr -k2,2",
            "-D", "stream.num.map.output.key.fields=2",
            "-D", "mapreduce.output.fileoutputformat.compress=true",
            "-D", "mapreduce.output.fileoutputformat.compress.codec="
                  "org.apache.hadoop.io.compress.GzipCodec",
            "-input", None,
            "-output", uri("step3"),
            "-mapper", "cat",
            "-reducer", "cat",
        ),
        # A step that fails: every attempt of its map task exits 3.
        "broken": streaming(
            "-D", "mapreduce.map.maxattempts=2",
            "-input", uri("corpus/a.txt"),
            "-output", uri("never"),
            "-mapper", python + " -c \"import sys; sys.stderr.write('wrapper-marker\\n'); sys.exit(3)\"",
            "-reducer", "NONE",
        ),
    }
    result = {}
    previous = None
    for name in ["count", "swap", "rank", "broken"]:
        argv = steps[name]
        if None in argv:
            argv[argv.index(None)] = previous
        code, console = run_under_pty(argv, work)
        step = interpret(console)
        step["exit"] = code
        step["escape_codes"] = "\x1b" in console
        step["console"] = console
        if code == 0:
            path, names = read_output(step["output_dir"])
            step["part_files"] = names
            previous = step["output_dir"]
        result[name] = step
    with open(os.path.join(work, "result.json"), "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
