#!/usr/bin/env bash
# Builds target/yarn/sluice-yarn.jar of the repository from this directory (`make yarn` runs it).
# Maven's working files go to target/yarn/mvn; its output goes to a log shown only on failure
# (even in batch mode it prints terminal escape codes). About 5 s; the first build also
# downloads Maven's plugins and Hadoop's client jars into ~/.m2.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
mkdir -p "$root/target/yarn"
log="$root/target/yarn/build.log"

command -v mvn >/dev/null 2>&1 || { echo "build.sh: Maven (mvn) is required" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "build.sh: a Java 17 JDK is required" >&2; exit 1; }

if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" package >"$log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
    echo "build.sh: Maven could not build sluice-yarn.jar (log above, and in $log)" >&2
    exit 1
fi
