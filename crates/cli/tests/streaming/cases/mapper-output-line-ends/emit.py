#!/usr/bin/env python3
"""Emits records ended by \\r\\n, lone \\r, and none at all: the framework reads
the program's stdout as lines the way it reads text input."""
import sys
sys.stdin.read()
sys.stdout.buffer.write(b'crlf\tv1\r\nlone\tcr\rtwo\r\rafter empty\nno newline')
