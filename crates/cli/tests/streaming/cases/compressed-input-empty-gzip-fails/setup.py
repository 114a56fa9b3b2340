"""Writes the inputs: a text file and an empty `.gz` file (what a failed upload or `touch`
leaves), which is no gzip stream."""
import os

os.makedirs("input", exist_ok=True)
with open("input/plain.txt", "w") as f:
    f.write("".join(f"line{i}\tvalue {i}\n" for i in range(100)))
open("input/empty.gz", "wb").close()
