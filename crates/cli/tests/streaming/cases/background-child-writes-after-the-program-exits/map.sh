#!/bin/sh
# Copies its input, then leaves a process behind that writes to the same output a moment
# after the mapper itself has exited.
cat
(sleep 1; printf 'late\tfrom the background\n') &
exit 0
