#!/bin/sh
# Reads a little, complains on stderr, and fails.
head -n 1 >/dev/null
echo 'first stderr line' >&2
echo 'MAPPER-FAILED-7f3a: cannot parse record' >&2
exit 3
