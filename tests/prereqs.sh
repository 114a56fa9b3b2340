#!/usr/bin/env bash
# Checks what `make test` needs before it starts, and says what to install for anything
# missing (Debian/Ubuntu package names; any other source of the same tools does as well).
set -uo pipefail

missing=()
need() { # need COMMAND WHAT INSTALL
    command -v "$1" >/dev/null 2>&1 || missing+=("$2: $3")
}

need cargo "Rust (stable) with cargo" "https://rustup.rs, then 'rustup component add rustfmt clippy'"
if command -v cargo >/dev/null 2>&1; then
    cargo fmt --version >/dev/null 2>&1 || missing+=("rustfmt: rustup component add rustfmt")
    cargo clippy --version >/dev/null 2>&1 || missing+=("clippy: rustup component add clippy")
fi
need python3 "Python 3 (the tests' references)" "apt-get install python3"
if command -v python3 >/dev/null 2>&1; then
    python3 -m pytest --version >/dev/null 2>&1 \
        || missing+=("pytest (the Python shm client's tests): python3 -m pip install pytest")
    python3 -c 'import moto.server' >/dev/null 2>&1 \
        || missing+=("moto (the S3 server of the storage tests): python3 -m pip install 'moto[server]'")
    python3 -c 'import mrjob' >/dev/null 2>&1 \
        || missing+=("mrjob (a client the tests drive sluice with): python3 -m pip install mrjob==0.7.4")
fi
need cc "a C compiler (the C shm client)" "apt-get install gcc make"
need java "Java 17 or later (Apache Hadoop, the reference the tests compare with)" \
    "apt-get install openjdk-17-jdk-headless"
if command -v java >/dev/null 2>&1; then
    version=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
    if [ -n "$version" ] && [ "$version" -lt 17 ]; then
        missing+=("Java 17 or later (found Java $version): apt-get install openjdk-17-jdk-headless")
    fi
fi
need chromium "Chromium (renders sluice bench's HTML report in a test)" "apt-get install chromium"
need mvn "Maven (fetches Hadoop's jars once, about 170 MB)" "apt-get install maven"
need zstd "zstd (an independent decoder in the codec tests)" "apt-get install zstd"
if [ "$(id -u)" = 0 ]; then
    # As root, the permission tests run sluice as nobody, and the full-disk tests mount a tmpfs.
    need setpriv "setpriv (the permission tests, as root)" "apt-get install util-linux"
    need mount "mount (the full-disk tests, as root)" "apt-get install mount"
fi
[ -x /usr/bin/time ] || missing+=("GNU time (peak memory in the budget tests): apt-get install time")

if [ ${#missing[@]} -gt 0 ]; then
    echo "make test needs:" >&2
    for m in "${missing[@]}"; do
        echo "  - $m" >&2
    done
    exit 1
fi
