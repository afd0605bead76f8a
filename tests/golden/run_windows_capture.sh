#!/bin/sh
# Runs `ptscope windows` on a real capture and compares its output with the
# golden file (checked by hand once). Skips (77) when the captures are not
# beside the project.
#
#   run_windows_capture.sh STATUS EXPECTED CAPTURE -- PTSCOPE [ARGS...]
#
#   CAPTURE is relative to $PTS_CAPTURES; it is appended to the arguments.
set -u
want_status=$1 want_out=$2 capture=$3
shift 3
[ "$1" = "--" ] && shift
path="${PTS_CAPTURES:-}/$capture"
if [ ! -r "$path" ]; then
	echo "capture $capture not found (PTS_CAPTURES=${PTS_CAPTURES:-unset}): skipped"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
"$@" "$path" >"$tmp/out" 2>"$tmp/err"
status=$?
fail=0
if [ "$status" -ne "$want_status" ]; then
	echo "exit status $status, want $want_status"
	head -5 "$tmp/err"
	fail=1
fi
if ! cmp -s "$want_out" "$tmp/out"; then
	echo "output differs from $want_out:"
	diff -u "$want_out" "$tmp/out" | head -60
	fail=1
fi
exit $fail
