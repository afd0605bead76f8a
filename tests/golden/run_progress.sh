#!/bin/sh
# The progress line of long runs (tools/progress.c) through the real CLI:
# a trace fed through a pipe that stalls after its first 100 bytes for
# longer than the meter's delay (1 s) makes `--progress` print a line
# ("ptscope dump: 206 B, 0.0 MB/s") on stderr, for `dump` (its own loop)
# and for `flow` (the shared trace input), and the summary still follows;
# without --progress, stderr not being a terminal, none appears.
# usage: run_progress.sh PTSCOPE TRACE CONFIG
set -eu
ptscope=$1
trace=$2
config=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptscope-progress.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
status=0

slow_feed() {
	head -c 100 "$trace"
	sleep 1.5
	tail -c +101 "$trace"
}

check() { # NAME WANT(yes|no) STDERR_FILE SUMMARY_PATTERN
	line="^ptscope $1: [0-9.]+ (B|KiB|MiB|GiB|TiB), [0-9.]+ MB/s"
	if [ "$2" = yes ] && ! grep -Eq "$line" "$3"; then
		echo "$1: no progress line with --progress:" >&2
		cat "$3" >&2
		status=1
	fi
	if [ "$2" = no ] && grep -Eq "$line" "$3"; then
		echo "$1: progress line without --progress:" >&2
		cat "$3" >&2
		status=1
	fi
	if ! grep -q "$4" "$3"; then
		echo "$1: summary '$4' missing:" >&2
		cat "$3" >&2
		status=1
	fi
}

slow_feed | "$ptscope" --progress dump --quiet - >/dev/null 2>"$tmp/dump"
check dump yes "$tmp/dump" "MB/s"
slow_feed | "$ptscope" --progress flow --quiet --config "$config" - \
	>/dev/null 2>"$tmp/flow"
check flow yes "$tmp/flow" "instructions"
slow_feed | "$ptscope" dump --quiet - >/dev/null 2>"$tmp/quiet"
check dump no "$tmp/quiet" "MB/s"
slow_feed | "$ptscope" --no-progress flow --quiet --config "$config" - \
	>/dev/null 2>"$tmp/off"
check flow no "$tmp/off" "instructions"

# A global option alone is a usage error, not a crash.
if "$ptscope" --progress >/dev/null 2>&1; then
	echo "ptscope --progress alone: exit 0" >&2
	status=1
fi
exit $status
