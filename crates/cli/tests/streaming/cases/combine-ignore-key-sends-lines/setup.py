#!/usr/bin/env python3
"""Writes the inputs: small text files, one with CRLF lines and one without a last newline."""
import os

os.makedirs('input', exist_ok=True)
with open('input/a.txt', 'wb') as f:
    f.write(b'alpha one\nalpha\ttwo\r\n')
with open('input/b.txt', 'wb') as f:
    f.write(b'beta one\n\nbeta three')
with open('input/c.txt', 'wb') as f:
    f.write(b'gamma\n')
