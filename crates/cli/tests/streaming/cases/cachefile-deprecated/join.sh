#!/bin/sh
# Looks each line up in the table shipped with -cacheFile.
while read -r key; do
  printf '%s\t%s\n' "$key" "$(grep "^$key	" table | cut -f2)"
done
