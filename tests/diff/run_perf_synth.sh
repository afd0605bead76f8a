#!/bin/sh
# Linux perf against `ptscope perf flow` on synthesized walks: each walk is
# written as a perf.data file by `ptscope synth --perf-data`, then
# `perf script --itrace=i0ns -F comm,tid,cpu,time,ip,sym` and
# `ptscope perf flow --format perf` must print the same instructions (comm,
# tid, cpu, address, in order). Times are compared too and the lines whose
# time differs are counted and shown, not failed: perf's sample time depends
# on where its decoder fetched the packet that walked an instruction, which
# ptscope approximates (exact on the hase-loopy capture, see
# tests/golden/run_perf_loopy.sh). Covers plain walks, timing (TSC/MTC), async events, no return
# compression and production-enclave gaps (perf has no enclave logic: it
# sees FUP + TIP.PGD and the TIP.PGE after, as any disable). Skips (77) with
# a message when perf is not installed.
#
#   run_perf_synth.sh PTSCOPE ELF
set -u
ptscope=$1 elf=$2
if ! command -v perf >/dev/null 2>&1 || ! perf version >/dev/null 2>&1; then
	echo "perf (Linux perf) not found: skipped"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
enclave=0x500000-0x501000:production,entry=0x500000,aep=0x400138
fail=0
run_case() {
	name=$1
	shift
	d="$tmp/$name"
	mkdir -p "$d"
	if ! "$ptscope" synth --walk "$elf" -o "$d/trace.pt" \
		--perf-data "$d/perf.data" -q "$@" 2>"$d/err"; then
		echo "$name: synth failed"; cat "$d/err"; fail=1; return
	fi
	perf script -i "$d/perf.data" --itrace=i0ns \
		-F comm,tid,cpu,time,ip,sym >"$d/perf.txt" 2>"$d/perf.err"
	"$ptscope" perf flow --format perf "$d/perf.data" >"$d/ours.txt" \
		2>"$d/ours.err"
	awk '{print $1, $2, $3, $5}' "$d/perf.txt" >"$d/want"
	awk '{print $1, $2, $3, $5}' "$d/ours.txt" >"$d/got"
	n=$(wc -l <"$d/want")
	if [ "$n" -eq 0 ]; then
		echo "$name: perf decoded nothing:"; head -5 "$d/perf.err"; fail=1
	elif ! cmp -s "$d/want" "$d/got"; then
		echo "$name: perf and ptscope differ ($n vs $(wc -l <"$d/got") lines):"
		diff "$d/want" "$d/got" | head -20
		fail=1
	else
		t=$(awk '{print $4}' "$d/perf.txt" | paste -d' ' - "$d/ours.txt" |
			awk '$1 != $5' | wc -l)
		echo "$name: $n instructions agree; times differ on $t lines"
	fi
}
run_case plain --insns 20000 --seed 1 --user-only --tsc --mtc
run_case timing --insns 20000 --seed 2 --user-only --tsc --mtc=0 --freq-rate 2000
run_case no_retcomp --insns 20000 --seed 4 --user-only --tsc --no-retcomp
run_case async --insns 20000 --seed 3 --user-only --tsc --mtc --async-rate 20000
run_case enclave_production --insns 20000 --seed 1 --user-only --tsc --mtc \
	--enclave "$enclave" --aex-rate 5000
exit $fail
