"""Writes an input of about 100 KiB: more than the pipe holds, less than the buffers of both
systems, so that it all reaches the program in the last write."""
import os

os.makedirs("input", exist_ok=True)
with open("input/lines.txt", "w") as f:
    for i in range(2000):
        f.write(f"line {i:05d} " + "x" * 38 + "\n")
