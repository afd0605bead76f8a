#!/bin/sh
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each one for
# SECONDS, starting from its checked-in corpus (tests/fuzz/corpus/NAME/).
# New inputs go to BUILD_DIR/fuzz-corpus/NAME, crashers to
# BUILD_DIR/fuzz-artifacts/NAME/; turn a crasher into a regression file by
# copying it into the checked-in corpus under a name that says what broke.
#
# usage: tests/fuzz/run_fuzzers.sh SECONDS [BUILD_DIR]
#        (default BUILD_DIR: $TMPDIR/ptscope-fuzz)
# Prints one verdict line per target on standard output, "ok NAME",
# "crash NAME" or "error NAME" (not built); libFuzzer and build output go to
# standard error. Exit status: 0 when every target ran without a crash,
# 1 otherwise, 2 on a usage error.
set -u
seconds=${1:-}
case $seconds in
'' | *[!0-9]*)
	echo "usage: $0 SECONDS [BUILD_DIR]" >&2
	exit 2
	;;
esac
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-${TMPDIR:-/tmp}/ptscope-fuzz}

names=
for seeds in "$src"/tests/fuzz/corpus/*/; do
	names="$names $(basename "$seeds")"
done

built=1
if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzzing=true \
		-Db_sanitize=address,undefined -Db_lundef=false >&2 || built=0
fi
if [ "$built" = 1 ]; then
	# Only the fuzz targets: a broken unrelated target must not stop
	# fuzzing.
	targets=
	for name in $names; do
		targets="$targets tests/fuzz/fuzz_$name"
	done
	# shellcheck disable=SC2086 # one word per target
	meson compile -C "$build" $targets >&2 || built=0
fi

# Make every sanitizer report fatal, so that libFuzzer keeps the input.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

status=0
for name in $names; do
	target=$build/tests/fuzz/fuzz_$name
	if [ "$built" = 0 ] || [ ! -x "$target" ]; then
		echo "error $name"
		status=1
		continue
	fi
	work=$build/fuzz-corpus/$name
	artifacts=$build/fuzz-artifacts/$name/
	mkdir -p "$work" "$artifacts"
	echo "fuzz_$name: $seconds s" >&2
	if "$target" -max_total_time="$seconds" -timeout=10 \
		-artifact_prefix="$artifacts" -print_final_stats=1 \
		"$work" "$src/tests/fuzz/corpus/$name" >&2; then
		echo "ok $name"
	else
		echo "fuzz_$name crashed; the input is in $artifacts" >&2
		echo "crash $name"
		status=1
	fi
done
exit $status
