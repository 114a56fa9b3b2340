#!/bin/sh
# Reads one line, closes its input with the rest unread, and succeeds.
read -r line
exec <&-
sleep 0.2
printf '%s\n' "$line"
