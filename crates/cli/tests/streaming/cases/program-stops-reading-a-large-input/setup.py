"""Writes an input of about 1 MiB: it fits sluice's pipe and buffer (no write to the program
fails), but far more than the last 256 KiB of it is left unread."""
import os

os.makedirs("input", exist_ok=True)
with open("input/lines.txt", "w") as f:
    for i in range(20000):
        f.write(f"line {i:05d} " + "x" * 38 + "\n")
