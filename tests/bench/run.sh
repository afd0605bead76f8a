#!/bin/sh
# Builds ptscope as a release build and runs every benchmark.
# usage: tests/bench/run.sh [BUILD_DIR]    (default: $TMPDIR/ptscope-bench)
# Needs about 1 GiB of memory and 300 MB of space in $TMPDIR.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-${TMPDIR:-/tmp}/ptscope-bench}

if [ -f "$build/build.ninja" ]; then
	meson configure "$build" -Dbuildtype=release -Db_sanitize=none
else
	meson setup "$build" "$src" -Dbuildtype=release
fi
meson compile -C "$build"
meson test -C "$build" --benchmark --verbose
