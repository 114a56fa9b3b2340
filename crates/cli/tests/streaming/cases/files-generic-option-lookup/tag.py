#!/usr/bin/env python3
"""Map-side join: tags each word with its category from lookup.tsv in the working directory."""
import sys

categories = {}
with open("lookup.tsv") as f:
    for line in f:
        word, category = line.rstrip("\n").split("\t")
        categories[word] = category
for line in sys.stdin:
    for word in line.split():
        print(f"{categories.get(word.lower().strip('.;'), 'other')}:{word}\t1")
