#!/bin/sh
# `ptscope perf flow --format perf` on the hase-loopy capture must list the
# instructions `perf script --itrace=i0nse` listed when the capture was
# checked (perf-script-i0nse.txt, beside it): same comm, tid, cpu, time,
# address and symbol on every line, in order. Fields are compared, not white
# space (perf's file also has the flags column, and its symbol column is
# sym+off, `-F ...,sym,symoff`, where ptscope prints `-F ...,sym`, the name
# alone: the +0x.. offset is cut before comparing); with perf installed
# the times are also compared in nanoseconds. The binary is
# laid out under a temporary --symfs as it was recorded. Skips (77) without
# the captures.
#
#   run_perf_loopy.sh PTSCOPE
set -u
ptscope=$1
dir="${PTS_CAPTURES:-}/hase-loopy"
if [ ! -r "$dir/loopy-20180404T162955.perf" ] || [ ! -r "$dir/loopy" ]; then
	echo "hase-loopy capture not found (PTS_CAPTURES=${PTS_CAPTURES:-unset}): skipped"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
bin="$tmp/symfs/home/joerg/git/angr/hase/tests/bin/loopy"
mkdir -p "$bin" && cp "$dir/loopy" "$bin/loopy" || exit 1
if ! "$ptscope" perf flow --format perf --symfs "$tmp/symfs" \
	"$dir/loopy-20180404T162955.perf" >"$tmp/out" 2>"$tmp/err"; then
	echo "ptscope perf flow failed:"
	cat "$tmp/err"
	exit 1
fi
# perf: comm tid [cpu] time: [flags...] ip sym+off (dso)
awk '{ sym = $(NF-1); sub(/\+0x[0-9a-f]+$/, "", sym)
       print $1, $2, $3, $4, $(NF-2), sym }' "$dir/perf-script-i0nse.txt" \
	>"$tmp/want"
# ptscope: comm tid [cpu] time: ip sym
awk '{print $1, $2, $3, $4, $5, $6}' "$tmp/out" >"$tmp/got"
if ! cmp -s "$tmp/want" "$tmp/got"; then
	echo "ptscope perf flow differs from perf-script-i0nse.txt:"
	diff -u "$tmp/want" "$tmp/got" | head -40
	exit 1
fi
# The file has microseconds; with perf installed, the nanoseconds too
# (perf script --ns against the times of `--format jsonl`).
if command -v perf >/dev/null 2>&1 && perf version >/dev/null 2>&1; then
	perf script -i "$dir/loopy-20180404T162955.perf" --symfs "$tmp/symfs" \
		--itrace=i0ns --ns -F time,ip 2>/dev/null |
		awk '{ t = $1; sub(/:$/, "", t); split(t, p, ".")
		       printf "%d%09d %s\n", p[1], p[2], $2 }' >"$tmp/want.ns"
	"$ptscope" perf flow --format jsonl --symfs "$tmp/symfs" \
		"$dir/loopy-20180404T162955.perf" 2>/dev/null |
		sed -n 's/.*"time":\([0-9]*\),.*"ip":"0x\([0-9a-f]*\)","size".*/\1 \2/p' \
		>"$tmp/got.ns"
	if ! cmp -s "$tmp/want.ns" "$tmp/got.ns"; then
		echo "nanosecond times differ from perf script --ns (perf, ptscope):"
		paste -d' ' "$tmp/want.ns" "$tmp/got.ns" | awk '$1 != $3 || $2 != $4' |
			head -10
		exit 1
	fi
	echo "times equal to perf script --ns to the nanosecond"
fi
echo "$(wc -l <"$tmp/got") instructions, same addresses, times and symbols as perf"
