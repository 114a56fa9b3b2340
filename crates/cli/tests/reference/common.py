"""Shared pieces of the independent reference implementations used by the e2e tests.

Everything here is written from the specification of sluice's jobs (Hadoop semantics), not
from the engine's code: input discovery, decompression, Hadoop LineReader line splitting, the
StringTokenizer word split, Text.hashCode partitioning, and writing part files.
All data is handled as bytes; paths are bytes too, spelled exactly as given.
"""

import argparse
import bz2
import glob
import gzip
import json
import os
import re
import sys

# Bytes that separate words (java.util.StringTokenizer defaults): space, \t, \n, \r, \f.
WORD_RE = re.compile(rb"[^ \t\n\r\x0c]+")


def fail(message):
    sys.stderr.write("reference: " + message + "\n")
    sys.exit(3)


def is_hidden(name):
    """Hadoop's hidden-file filter: names starting with '_' or '.'."""
    return name[:1] in (b"_", b".")


def walk(directory, out):
    """Every visible file below `directory`, recursively, hidden names skipped at any depth."""
    for entry in os.scandir(directory):
        name = entry.name
        if is_hidden(name):
            continue
        path = os.path.join(directory, name)
        if os.path.isdir(path):
            walk(path, out)
        elif os.path.exists(path):
            out.append(path)


def discover(args):
    """Input arguments (bytes) -> file paths (bytes): in the order of the arguments, each
    argument's files sorted and distinct; a file two arguments name comes for each (Hadoop
    reads it twice)."""
    result = []
    for arg in args:
        files = []
        if any(c in arg for c in b"*?["):
            matches = sorted(glob.glob(arg))
            found = False
            for path in matches:
                if is_hidden(os.path.basename(path)):
                    continue
                found = True
                if os.path.isdir(path):
                    walk(path, files)
                else:
                    files.append(path)
            if not found:
                fail("glob matched nothing: %r" % arg)
        elif os.path.isdir(arg):
            walk(arg, files)
        elif os.path.exists(arg):
            files.append(arg)  # a file named explicitly is read even if hidden
        else:
            fail("missing input %r" % arg)
        result.extend(sorted(set(files)))
    return result


def read(path, raw=False):
    """The uncompressed bytes of a file (`raw`: never decompress, whatever the name)."""
    with open(path, "rb") as f:
        data = f.read()
    if raw:
        return data
    name = os.path.basename(path)
    if name.endswith(b".gz"):
        return gzip.decompress(data) if data else b""  # all members
    if name.endswith(b".bz2"):
        return bz2.decompress(data) if data else b""  # all streams
    if name.endswith((b".zst", b".zstd", b".lz4")):
        fail("no decompressor for %r in the standard library; pass --raw twins" % path)
    return data


def lines(data):
    """Hadoop LineReader: \\n, \\r\\n and a lone \\r end a line; the last line may lack one."""
    out = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
    if out[-1] == b"":
        out.pop()  # the terminator of the last line (or an empty file)
    return out


def count_lines(data):
    """Number of lines of `lines(data)`, without building them."""
    n = data.count(b"\n") + data.count(b"\r") - data.count(b"\r\n")
    if data and data[-1:] not in (b"\n", b"\r"):
        n += 1
    return n


def chunks(data, size=8 << 20):
    """Slices of `data` cut just after a \\n (words never span a \\n), to bound memory."""
    start, n = 0, len(data)
    while start < n:
        end = min(start + size, n)
        if end < n:
            nl = data.find(b"\n", end)
            end = n if nl < 0 else nl + 1
        yield data[start:end]
        start = end


def words(data):
    """All words of `data`, in order. bytes.split() splits on exactly the delimiters plus
    \\x0b (vertical tab), so it is used only when no \\x0b is present."""
    if b"\x0b" not in data:
        return data.split()
    return WORD_RE.findall(data)


def hadoop_hash(key):
    """Hadoop Text.hashCode (WritableComparator.hashBytes): h = 31*h + signed byte, from 1."""
    h = 1
    for b in key:
        if b >= 128:
            b -= 256
        h = (31 * h + b) & 0xFFFFFFFF
    return h


def partition(key, n, cache=None):
    """HashPartitioner: (hash & Integer.MAX_VALUE) % n."""
    if cache is not None:
        p = cache.get(key)
        if p is None:
            p = cache[key] = (hadoop_hash(key) & 0x7FFFFFFF) % n
        return p
    return (hadoop_hash(key) & 0x7FFFFFFF) % n


def write_parts(out_dir, parts):
    """Writes `parts` (a list of lists of output lines without terminators) as part-r-NNNNN."""
    os.makedirs(out_dir, exist_ok=True)
    for i, part in enumerate(parts):
        with open(os.path.join(out_dir, "part-r-%05d" % i), "wb") as f:
            if part:
                f.write(b"\n".join(part))
                f.write(b"\n")


def write_stats(path, stats):
    if path:
        with open(path, "w") as f:
            json.dump(stats, f)


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--out", required=True, help="directory to write the expected part files into")
    p.add_argument("--reducers", type=int, default=1)
    p.add_argument("--stats", help="write counts (lines, words, distinct words) as JSON here")
    p.add_argument("--raw", action="store_true", help="never decompress (plain twins of compressed files)")
    p.add_argument("inputs", nargs="+", type=os.fsencode)
    return p
