"""Writes the inputs: the same kind of lines compressed under suffixes in upper and mixed case
(the compressed bytes are not committed)."""
import bz2
import gzip
import os
import zlib

os.makedirs("input", exist_ok=True)


def lines(tag):
    return "".join(f"{tag}{i}\tvalue {i}\n" for i in range(200)).encode()


with open("input/upper.GZ", "wb") as f:
    f.write(gzip.compress(lines("gz"), mtime=0))
with open("input/mixed.Bz2", "wb") as f:
    f.write(bz2.compress(lines("bz")))
with open("input/upper.DEFLATE", "wb") as f:
    f.write(zlib.compress(lines("deflate")))
with open("input/plain.txt", "wb") as f:
    f.write(lines("plain"))
