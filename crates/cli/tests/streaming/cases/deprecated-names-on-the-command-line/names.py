#!/usr/bin/env python3
"""Prints which names of a key the program's environment has: the keys the command line sets
(most under their Hadoop 1 names, two under their current ones), the default file system the
harness sets, and the keys the job and the task set themselves. A value is shown when it is
one the command line gave, else `set`; `-` for a name the environment lacks."""
import os
import sys

role = sys.argv[1]
for line in sys.stdin:
    if role == "reduce":
        sys.stdout.write(line)
GIVEN = {"0", "0.7", "0.8", "1", "150", "1536", "2048", "2147483647", "3", "5", "50", "7", ":", "HIGH", "default", "false", "old-names", "org.apache.hadoop.io.compress.DefaultCodec"}
# (old name, current name), as Hadoop 3.4's JobConf pairs them.
PAIRS = [
    ("mapred.line.input.format.linespermap", "mapreduce.input.lineinputformat.linespermap"),
    ("mapred.linerecordreader.maxlength", "mapreduce.input.linerecordreader.line.maxlength"),
    ("mapred.max.map.failures.percent", "mapreduce.map.failures.maxpercent"),
    ("mapred.max.reduce.failures.percent", "mapreduce.reduce.failures.maxpercent"),
    ("mapred.skip.map.max.skip.records", "mapreduce.map.skip.maxrecords"),
    ("mapred.skip.reduce.max.skip.groups", "mapreduce.reduce.skip.maxgroups"),
    ("mapred.skip.attempts.to.start.skipping", "mapreduce.task.skip.start.attempts"),
    ("mapred.skip.map.auto.incr.proc.count", "mapreduce.map.skip.proc-count.auto-incr"),
    ("mapred.skip.reduce.auto.incr.proc.count", "mapreduce.reduce.skip.proc-count.auto-incr"),
    ("mapred.job.queue.name", "mapreduce.job.queuename"),
    ("mapred.job.priority", "mapreduce.job.priority"),
    ("mapred.job.map.memory.mb", "mapreduce.map.memory.mb"),
    ("mapred.job.reduce.memory.mb", "mapreduce.reduce.memory.mb"),
    ("mapred.map.output.compression.codec", "mapreduce.map.output.compress.codec"),
    ("mapred.map.tasks.speculative.execution", "mapreduce.map.speculative"),
    ("mapred.reduce.tasks.speculative.execution", "mapreduce.reduce.speculative"),
    ("mapred.reduce.slowstart.completed.maps", "mapreduce.job.reduce.slowstart.completedmaps"),
    ("io.sort.mb", "mapreduce.task.io.sort.mb"),
    ("io.sort.factor", "mapreduce.task.io.sort.factor"),
    ("io.sort.spill.percent", "mapreduce.map.sort.spill.percent"),
    ("mapred.reduce.parallel.copies", "mapreduce.reduce.shuffle.parallelcopies"),
    ("mapred.job.reuse.jvm.num.tasks", "mapreduce.job.jvm.numtasks"),
    ("mapred.data.field.separator", "mapreduce.fieldsel.data.field.separator"),
    ("mapred.job.name", "mapreduce.job.name"),
    ("mapred.reduce.tasks", "mapreduce.job.reduces"),
    ("mapreduce.job.counters.limit", "mapreduce.job.counters.max"),
    ("mapred.min.split.size", "mapreduce.input.fileinputformat.split.minsize"),
    ("fs.default.name", "fs.defaultFS"),
    ("map.input.file", "mapreduce.map.input.file"),
    ("map.input.length", "mapreduce.map.input.length"),
    ("map.input.start", "mapreduce.map.input.start"),
    ("mapred.job.id", "mapreduce.job.id"),
    ("mapred.task.id", "mapreduce.task.attempt.id"),
    ("mapred.task.is.map", "mapreduce.task.ismap"),
    ("mapred.task.partition", "mapreduce.task.partition"),
    ("mapred.tip.id", "mapreduce.task.id"),
    ("mapred.map.tasks", "mapreduce.job.maps"),
    ("mapred.input.dir", "mapreduce.input.fileinputformat.inputdir"),
    ("mapred.output.dir", "mapreduce.output.fileoutputformat.outputdir"),
]


def var(key):
    return "".join(c if c.isalnum() else "_" for c in key)


for old, new in PAIRS:
    shown = []
    for key in (old, new):
        value = os.environ.get(var(key))
        if value is None:
            shown.append(f"{key}=-")
        else:
            shown.append(f"{key}={value if value in GIVEN else 'set'}")
    # One key per line: the order of values within a key is Hadoop's to choose.
    print(f"{role} {old}\t{' '.join(shown)}")
