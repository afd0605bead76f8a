#!/bin/sh
# `ptscope perf flow --format perf` on the hase-loopy capture must list the
# instructions `perf script --itrace=i0nse` listed when the capture was
# checked (perf-script-i0nse.txt, beside it): same comm, tid, cpu, time,
# address and symbol on every line, in order. Fields are compared, not white
# space (perf's file also has the flags column, and its symbol column is
# sym+off, `-F ...,sym,symoff`, where ptscope prints `-F ...,sym`, the name
# alone: the +0x.. offset is cut before comparing). The binary is
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
echo "$(wc -l <"$tmp/got") instructions, same addresses, times and symbols as perf"
