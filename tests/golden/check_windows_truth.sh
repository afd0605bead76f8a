#!/bin/sh
# Checks `ptscope windows` against the ground truth of each synthesized
# fixture (fixtures/synth/*/truth.txt, format in fixtures/FORMATS.md): the
# EENTER, ERESUME, EEXIT and AEX the truth shows must be the ones the
# report counts, with images (config.cfg), with the packets alone, and with
# images but no enclave map (the flow decoder must find them by itself).
#
#   check_windows_truth.sh PTSCOPE FIXTURES_SYNTH_DIR
set -u
ptscope=$1 dir=$2
fail=0

# "EENTER ERESUME EEXIT AEX" from a truth file: an `enclu` line that ends
# in "enclave KIND" enters (from the AEP: ERESUME), any other leaves (EEXIT).
truth_counts() {
	aep=$(sed -n 's/.*aep=0x\([0-9a-f]*\).*/\1/p' "$2" | head -1)
	awk -v aep="$aep" '
	$1 == "!" && $2 == "enclu" {
		if ($6 == "enclave") { if ($3 == aep) er++; else ee++ }
		else ex++
	}
	$1 == "!" && $2 == "aex" { ax++ }
	END { printf "%d %d %d %d\n", ee, er, ex, ax }' "$1"
}

report_counts() {
	"$ptscope" windows --verify -f jsonl "$@" | tail -n 1 |
		sed -n 's/.*"eenter":\([0-9]*\),"eresume":\([0-9]*\),"eexit":\([0-9]*\),"aex":\([0-9]*\).*/\1 \2 \3 \4/p'
}

for d in "$dir"/*/; do
	name=$(basename "$d")
	want=$(truth_counts "$d/truth.txt" "$d/config.cfg")
	for mode in images packets nomap; do
		case $mode in
		images) got=$(report_counts --config "$d/config.cfg" "$d/trace.pt") ;;
		packets) got=$(report_counts --config "$d/config.cfg" \
			--packets-only "$d/trace.pt") ;;
		nomap)
			# Production enclaves only: a debug one is traced, its
			# edges are told by the map alone.
			grep -q '^enclave .* debug' "$d/config.cfg" && continue
			ring=both
			grep -q '^ctl .* OS ' "$d/config.cfg" || ring=user
			set -- --elf "$d/../../bin/enclave_demo"
			[ -f "$d/trace.pt.kstub" ] && set -- "$@" \
				--raw "$d/trace.pt.kstub:0xffffffff81000000"
			got=$(report_counts --ring "$ring" "$@" "$d/trace.pt") ;;
		esac
		if [ "$got" != "$want" ]; then
			echo "$name ($mode): eenter eresume eexit aex: report" \
				"'$got', truth '$want'"
			fail=1
		else
			echo "$name ($mode): $got"
		fi
	done
done
exit $fail
