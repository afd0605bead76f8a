#!/bin/sh
# `ptscope perf flow --quiet` against `perf script --itrace=i0ns > /dev/null`
# on perf.data files wrapping synthesized walks (`ptscope synth
# --perf-data`), in one run. ptscope decodes N instructions (default 100M);
# perf is far slower, so it decodes a smaller walk (PERF_N, default 2M) of
# the same kind and both are compared per instruction. Prints both times,
# both rates and the ratio. Not a test: it asserts nothing.
#
#   bench_perf.sh PTSCOPE ELF [N [PERF_N]]
set -u
ptscope=$1 elf=$2 n=${3:-100000000} perf_n=${4:-2000000}
if ! command -v perf >/dev/null 2>&1; then
	echo "perf (Linux perf) not found: nothing to compare with"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
opts="--seed 7 --user-only --tsc --mtc"
now() { date +%s.%N; }
echo "synthesizing $n and $perf_n instructions ..."
"$ptscope" synth --walk "$elf" --insns "$n" $opts -o "$tmp/big.pt" \
	--perf-data "$tmp/big.data" -q || exit 1
"$ptscope" synth --walk "$elf" --insns "$perf_n" $opts -o "$tmp/small.pt" \
	--perf-data "$tmp/small.data" -q || exit 1
rm -f "$tmp/big.pt" "$tmp/small.pt"
t0=$(now)
"$ptscope" perf flow --quiet "$tmp/big.data" 2>"$tmp/ours.err"
t1=$(now)
perf script -i "$tmp/small.data" --itrace=i0ns >/dev/null 2>"$tmp/perf.err"
t2=$(now)
cat "$tmp/ours.err"
awk -v a="$t0" -v b="$t1" -v c="$t2" -v n="$n" -v pn="$perf_n" \
	-v bytes="$(stat -c %s "$tmp/big.data")" 'BEGIN {
	ours = b - a; theirs = c - b;
	ro = n / ours; rp = pn / theirs;
	printf "perf.data:       %d bytes (%d instructions)\n", bytes, n;
	printf "ptscope perf flow --quiet: %.2f s for %d insns: %.1f M insn/s\n", ours, n, ro / 1e6;
	printf "perf script --itrace=i0ns: %.2f s for %d insns: %.2f M insn/s\n", theirs, pn, rp / 1e6;
	printf "ratio (per instruction): %.1fx perf\n", ro / rp;
}'
