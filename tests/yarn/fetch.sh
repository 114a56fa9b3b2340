#!/usr/bin/env bash
# Puts Apache Hadoop 3.4.3's minicluster jars (MiniYARNCluster, MiniDFSCluster, the YARN and HDFS
# clients and their runtime dependencies) under target/yarn/lib of the repository, for the tests
# of sluice's YARN submitter (see README.md).
#
# Idempotent: when the jars are already in place it does nothing. Maven keeps its downloads in
# ~/.m2, so even after `cargo clean` (or `rm -rf target/yarn`) a second fetch is offline.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
lib="$root/target/yarn/lib"
stamp="$lib/.complete"

if [ -f "$stamp" ] && ls "$lib"/hadoop-minicluster-3.4.3.jar "$lib"/hadoop-yarn-server-tests-3.4.3-tests.jar \
    "$lib"/junit-4.13.2.jar "$lib"/hadoop-mapreduce-client-jobclient-3.4.3-tests.jar \
    "$lib"/hadoop-mapreduce-examples-3.4.2.jar "$lib"/hadoop-streaming-3.4.2.jar >/dev/null 2>&1; then
    exit 0
fi

command -v mvn >/dev/null 2>&1 || { echo "fetch.sh: Maven (mvn) is required" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "fetch.sh: Java 17 (java) is required" >&2; exit 1; }

echo "fetch.sh: downloading Hadoop 3.4.3 minicluster jars into $lib" >&2
rm -rf "$lib"
mkdir -p "$lib"
# Maven writes its own target/ next to the pom; keep it out of the source tree. Its output
# goes to a log shown only on failure (even in batch mode it prints terminal escape codes).
log="$root/target/yarn/fetch.log"
if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" \
    -Dproject.build.directory="$root/target/yarn/mvn-lib" \
    dependency:copy-dependencies \
    -DoutputDirectory="$lib" \
    -DincludeScope=runtime >"$log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
    echo "fetch.sh: Maven could not fetch the jars (log above, and in $log)" >&2
    exit 1
fi
touch "$stamp"
echo "fetch.sh: $(ls "$lib" | wc -l) jars in $lib" >&2
