"""Writes input.txt: N deterministic lines of words, tabs, empty lines and non-ASCII bytes."""
import random

N = 60000
random.seed(18)
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
out = []
for i in range(N):
    k = random.randint(0, 4)
    if k == 0:
        out.append(" ".join(random.choice(words) for _ in range(3)))
    elif k == 1:
        out.append(random.choice(words) + "\t" + str(random.randint(0, 99999)))
    elif k == 2:
        out.append(random.choice(words) + "\t" + random.choice(words) + "\tx")
    elif k == 3:
        out.append("")
    else:
        out.append("caf\u00e9 " + random.choice(words) + "\t\u00fcber")
with open("input.txt", "w", encoding="utf-8") as f:
    f.write("\n".join(out) + "\n")
