"""Writes four inputs, three of the same size: map tasks are numbered largest split first,
ties in the order of the -input arguments (not path order), so part files follow it."""
import os

os.makedirs("input", exist_ok=True)
for name, lines in [("d", 2), ("b", 2), ("a", 3), ("c", 2)]:
    with open(f"input/{name}.txt", "w") as f:
        f.write("".join(f"{name}{i}\n" for i in range(lines)))
