#!/bin/sh
# perf.data with zstd-compressed records (`perf record -z`): one synthesized
# walk written three ways by `ptscope synth --perf-data`: plain, with
# --perf-data-zstd (sideband in COMPRESSED records, as perf record -z does)
# and --perf-data-zstd=all (the AUXTRACE data inside too, in several
# COMPRESSED records with records cut between them). `ptscope perf info`,
# `dump` and `flow` must print the same for all three, except what is about
# the file itself: its name, size and record range (info's first two lines)
# and the buffers' file offsets (dump). Linux perf, when present and built
# with zstd, must decode the -z twin as it decodes the plain file. A
# COMPRESSED payload that zstd rejects, and one cut by the end of the file,
# give an error naming the record's offset, exit 1 and no crash. Built
# without libzstd, writing and reading such files must say so.
#
#   run_perf_zstd.sh PTSCOPE ELF
set -u
ptscope=$1 elf=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
synth() { # OUT [OPTION]
	"$ptscope" synth --walk "$elf" -o "$tmp/trace.pt" --perf-data "$1" \
		${2:+"$2"} -q --insns 100000 --seed 7 --user-only --tsc --mtc \
		2>"$tmp/err"
}
synth "$tmp/plain.data" || { echo "synth failed:"; cat "$tmp/err"; exit 1; }
if ! synth "$tmp/z.data" --perf-data-zstd; then
	if grep -q 'built without libzstd' "$tmp/err"; then
		# The reader must refuse a compressed file as clearly.
		seed=$(dirname "$0")/../fuzz/corpus/perfdata/zstd-sideband.data
		"$ptscope" perf info "$seed" >/dev/null 2>"$tmp/err" &&
			{ echo "a compressed file opened without libzstd"; exit 1; }
		grep -q 'uses zstd-compressed records; ptscope was built without libzstd' \
			"$tmp/err" || { echo "unclear error:"; cat "$tmp/err"; exit 1; }
		echo "built without libzstd: compressed files refused clearly"
		exit 0
	fi
	echo "synth --perf-data-zstd failed:"; cat "$tmp/err"; exit 1
fi
synth "$tmp/all.data" --perf-data-zstd=all ||
	{ echo "synth --perf-data-zstd=all failed:"; cat "$tmp/err"; exit 1; }

# What does not depend on how the file is laid out.
view() { # NAME
	"$ptscope" perf info "$tmp/$1.data" | sed 1,2d >"$tmp/$1.info" &&
	"$ptscope" perf dump "$tmp/$1.data" |
		sed 's/file offset 0x[0-9a-f]*, //' >"$tmp/$1.dump" &&
	"$ptscope" perf flow "$tmp/$1.data" >"$tmp/$1.flow"
}
for v in plain z all; do
	view $v 2>"$tmp/err" || { echo "perf on $v failed:"; cat "$tmp/err"; exit 1; }
done
for v in z all; do
	for what in info dump flow; do
		if ! cmp -s "$tmp/plain.$what" "$tmp/$v.$what"; then
			echo "perf $what: $v.data differs from the plain file:"
			diff -u "$tmp/plain.$what" "$tmp/$v.$what" | head -20
			exit 1
		fi
	done
done
n=$(wc -l <"$tmp/plain.flow")
[ "$n" -gt 1000 ] || { echo "only $n flow lines"; exit 1; }
echo "compressed twins: info, dump and flow ($n lines) as the plain file"

# Linux perf on the -z twin (it cannot read AUX data inside COMPRESSED
# records, which perf record never writes: only the sideband form).
if command -v perf >/dev/null 2>&1 &&
	perf version --build-options 2>/dev/null | grep -q 'zstd: \[ on'; then
	perf script --itrace=i0ns -i "$tmp/plain.data" >"$tmp/perf.plain" 2>/dev/null
	perf script --itrace=i0ns -i "$tmp/z.data" >"$tmp/perf.z" 2>/dev/null
	m=$(wc -l <"$tmp/perf.z")
	if [ "$m" -eq 0 ] || ! cmp -s "$tmp/perf.plain" "$tmp/perf.z"; then
		echo "perf script: the -z twin decodes differently ($m lines)"
		diff "$tmp/perf.plain" "$tmp/perf.z" | head -10
		exit 1
	fi
	echo "perf script --itrace=i0ns: $m instructions from the -z twin, as plain"
else
	echo "perf with zstd not found: perf's view not checked"
fi

# Damage: a payload zstd rejects, a COMPRESSED record cut by the end.
at=$(LC_ALL=C grep -obUaP '\x28\xb5\x2f\xfd' "$tmp/z.data" | head -1 | cut -d: -f1)
[ -n "$at" ] || { echo "no zstd frame in the -z twin"; exit 1; }
rec=$(printf '0x%x' $((at - 8)))
cp "$tmp/z.data" "$tmp/bad.data"
printf '\0\0\0\0' | dd of="$tmp/bad.data" bs=1 seek="$at" conv=notrunc 2>/dev/null
head -c $((at + 40)) "$tmp/z.data" >"$tmp/cut.data"
for v in bad cut; do
	for cmd in info dump flow; do
		"$ptscope" perf $cmd "$tmp/$v.data" >/dev/null 2>"$tmp/err"
		rc=$?
		if [ $rc -ne 1 ] ||
			! grep -q "offset $rec, record type 81 (COMPRESSED)" "$tmp/err"; then
			echo "perf $cmd on $v.data: exit $rc, expected 1 and an error at $rec:"
			cat "$tmp/err"; exit 1
		fi
	done
done
echo "corrupt and cut COMPRESSED records: errors at $rec"
