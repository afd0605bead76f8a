#!/bin/sh
# perf.data whose AUX data perf would not decode as Intel PT is refused
# (exit 2, the reason named) by `perf dump`, `perf flow`, `perf windows`
# and `windows --perf`, however PT-like its bytes: AUXTRACE_INFO of
# another type (2 is ARM's CoreSight ETM), and an Intel PT AUXTRACE_INFO
# whose PMU type no event has, and a filter string length past the record.
# All are made from fixtures/perf/synth.data by one byte each. Before, all
# four commands decoded the bytes and exited 0.
# Also: a damaged header exits 1.
#
#   run_perf_not_pt.sh PTSCOPE SYNTH_DATA
set -u
ptscope=$1 data=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
status=0
# the AUXTRACE_INFO record: header type 70, then its u32 type 1 at +8
at=$(od -An -v -tu1 -w1 "$data" | awk '{ b[NR - 1] = $1 }
	END { for (i = 0; i + 12 <= NR; i++)
		if (b[i] == 70 && !b[i + 1] && !b[i + 2] && !b[i + 3] &&
		    b[i + 8] == 1 && !b[i + 9] && !b[i + 10] && !b[i + 11]) {
			print i; exit } }')
if [ -z "$at" ]; then
	echo "no AUXTRACE_INFO record in $data"; exit 1
fi
# patch FILE OFFSET BYTE
patch() {
	cp "$data" "$1"
	printf "\\$3" | dd of="$1" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
patch "$tmp/etm.data" $((at + 8)) 002
patch "$tmp/pmu.data" $((at + 16)) 007 # priv[0]: the PMU type, 8 in it
# priv[16], the filter string length: 1, with no room for a string (perf:
# "bad filter string length"; it was called "too short", or "no record")
patch "$tmp/flt.data" $((at + 16 + 16 * 8)) 001
for c in "etm|AUXTRACE type 2 is not Intel PT" \
	"pmu|no event has the PT PMU type 7" \
	"flt|AUXTRACE_INFO's filter string length 1 runs past the record"; do
	f="$tmp/${c%%|*}.data" why=${c#*|}
	for args in "perf dump" "perf flow" "perf windows" "windows --perf"
	do
		# shellcheck disable=SC2086
		"$ptscope" $args "$f" >"$tmp/out" 2>"$tmp/err"
		rc=$?
		if [ $rc != 2 ] || [ -s "$tmp/out" ] ||
			! grep -q "holds no Intel PT trace ($why)" "$tmp/err"
		then
			n=$(wc -l <"$tmp/out")
			echo "$args ${c%%|*}.data: exit $rc, $n lines," \
				"said: $(head -1 "$tmp/err")"
			status=1
		fi
	done
done
# A header damaged (attr_size 0, at offset 0x10) is a damaged file, exit 1
# as --help says, not an I/O error (it said "cannot read", exit 2).
patch "$tmp/hdr.data" 16 000
"$ptscope" perf info "$tmp/hdr.data" >/dev/null 2>"$tmp/err"
rc=$?
if [ $rc != 1 ] || ! grep -q "hdr.data is damaged, nothing before it" \
	"$tmp/err"; then
	echo "perf info hdr.data: exit $rc, said: $(head -1 "$tmp/err")"
	status=1
fi
# the file itself is still decoded
"$ptscope" perf dump "$data" >/dev/null 2>&1 ||
	{ echo "perf dump $data failed"; status=1; }
[ $status = 0 ] && echo "not Intel PT: refused"
exit $status
