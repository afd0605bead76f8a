#!/bin/sh
# `ptscope perf windows` with the code the MMAP records name: a synthesized
# walk with production-enclave gaps (enclave_demo), wrapped in a perf.data by
# `ptscope synth --perf-data`, must get the flow decoder's evidence (the
# ENCLU at each enclave entry, the SYSCALL at CPL gaps: basis [evidence]) and
# the same windows, causes and enclave calls as `ptscope windows` on the raw
# trace with its configuration's images. The end of the last record and the
# byte totals may differ: the perf.data buffer carries perf's padding to 8
# bytes.
#
#   run_perf_windows_images.sh PTSCOPE ENCLAVE_DEMO_ELF
set -u
ptscope=$1 elf=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
if ! "$ptscope" synth --walk "$elf" -o "$tmp/trace.pt" --perf-data \
	"$tmp/perf.data" --config-out "$tmp/cfg" -q --insns 3000 --seed 1 \
	--user-only --tsc --mtc --aex-rate 500 \
	--enclave 0x500000-0x501000:production,entry=0x500000,aep=0x400138 \
	2>"$tmp/err"; then
	echo "synth failed:"; cat "$tmp/err"; exit 1
fi
"$ptscope" perf windows "$tmp/perf.data" >"$tmp/perf.out" 2>"$tmp/perf.err" ||
	{ echo "perf windows failed:"; cat "$tmp/perf.err"; exit 1; }
"$ptscope" windows --config "$tmp/cfg" "$tmp/trace.pt" >"$tmp/raw.out" \
	2>"$tmp/raw.err" || { echo "windows failed:"; cat "$tmp/raw.err"; exit 1; }
# kind, start, cause, from -> to, basis, details; the enclave calls line
fields() {
	awk '$1 == "gap" || $1 == "window" {
		$3 = $4 = ""; print; next } /^enclave calls/ { print }' "$1"
}
fields "$tmp/perf.out" >"$tmp/perf.f"
fields "$tmp/raw.out" >"$tmp/raw.f"
n=$(grep -c 'enclave .*\[evidence\]' "$tmp/perf.f")
if [ "$n" -eq 0 ]; then
	echo "perf windows: no enclave gap settled by the code:"
	cat "$tmp/perf.out"; cat "$tmp/perf.err"; exit 1
fi
if ! cmp -s "$tmp/raw.f" "$tmp/perf.f"; then
	echo "perf windows and windows --config differ:"
	diff -u "$tmp/raw.f" "$tmp/perf.f" | head -40
	exit 1
fi
echo "perf windows: $(wc -l <"$tmp/perf.f") records as windows --config," \
	"$n enclave gaps with evidence"
