#!/bin/sh
# Prints a long setting and a short one as the environment gives them.
cat >/dev/null
printf 'long=%s\nshort=%s\n' "$my_long_value" "$my_short"
