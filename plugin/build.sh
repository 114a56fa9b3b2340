#!/usr/bin/env bash
# Builds target/plugin/sluice-plugin.jar of the repository (`make plugin` runs it): the native
# library first (`cargo build --release -p sluice-jni`), copied to where the jar takes it as the
# resource native/linux-x86_64/libsluice_jni.so, then the Java classes with Maven. Maven's
# output goes to a log shown only on failure.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
out="$root/target/plugin"
mkdir -p "$out"
log="$out/build.log"

command -v mvn >/dev/null 2>&1 || { echo "build.sh: Maven (mvn) is required" >&2; exit 1; }
command -v java >/dev/null 2>&1 || { echo "build.sh: a Java 17 JDK is required" >&2; exit 1; }

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) platform=linux-x86_64 ;;
    *) echo "build.sh: the plugin's library is built for linux-x86_64 only, not $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac

cargo="${CARGO:-cargo}"
"$cargo" build --release -p sluice-jni --manifest-path "$root/Cargo.toml"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
mkdir -p "$out/resources/native/$platform"
lib="$out/resources/native/$platform/libsluice_jni.so"
cp "$target_dir/release/libsluice_jni.so" "$lib"
# The release profile keeps line tables for backtraces; the jar needs none of them.
if command -v strip >/dev/null 2>&1; then strip --strip-debug "$lib"; fi

if ! mvn -q -B -Dstyle.color=never -f "$here/pom.xml" package >"$log" 2>&1; then
    sed 's/\x1b\[[0-9;]*m//g' "$log" >&2
    echo "build.sh: Maven could not build sluice-plugin.jar (log above, and in $log)" >&2
    exit 1
fi
