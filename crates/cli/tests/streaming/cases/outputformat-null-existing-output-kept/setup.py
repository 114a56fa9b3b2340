# The job's output directory is the case copy's sibling `output`: fill it as an earlier job
# would have left it.
import os

os.makedirs("../output/sub", exist_ok=True)
with open("../output/part-00000", "w") as f:
    f.write("earlier\t1\n")
with open("../output/sub/kept.txt", "w") as f:
    f.write("kept\n")
