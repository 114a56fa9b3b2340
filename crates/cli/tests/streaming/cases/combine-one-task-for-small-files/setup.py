#!/usr/bin/env python3
"""Writes the inputs: text files with LF, CRLF and lone CR lines, an empty file, a gzip file
(fixed header time, so the same bytes every time) and a last line without a newline."""
import gzip
import os

os.makedirs('input', exist_ok=True)
with open('input/a.txt', 'wb') as f:
    f.write(b'alpha one\nalpha two\r\nalpha three\rlast\n')
open('input/b.txt', 'wb').close()
with open('input/c.gz', 'wb') as f:
    f.write(gzip.compress(b'gz one\ngz two\n', mtime=0))
with open('input/d.txt', 'wb') as f:
    f.write(b'\ndelta after an empty line\nno newline at the end')
