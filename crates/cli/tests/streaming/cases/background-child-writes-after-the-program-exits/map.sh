#!/bin/sh
# Copies its input, then leaves a process behind that writes to the same output a second
# after the mapper itself has exited.
cat
(sleep 2; printf 'late\tfrom the background\n') &
# Hadoop's task reads the program's output through the JVM, which drains and closes that
# pipe when the program exits unless the task's reader is waiting in a read just then. The
# pause lets the reader catch up with what cat wrote first, so Hadoop keeps the late line on
# every run; without it a busy machine sometimes lost it.
sleep 1
exit 0
