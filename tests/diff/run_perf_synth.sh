#!/bin/sh
# Linux perf against `ptscope perf flow` on synthesized walks: each walk is
# written as a perf.data file by `ptscope synth --perf-data`, then
#  - `perf script --itrace=i0ns -F comm,tid,cpu,time,ip,sym` and
#    `ptscope perf flow --format perf` must print the same text, byte for
#    byte (perf prints times in microseconds);
#  - the nanosecond times must agree too: `perf script --ns -F time,ip`
#    against the "time" of each instruction in `--format jsonl`.
# Any difference fails. The times follow perf 6.1's sample-time rule
# (tools/perf_clockwalk.h): per-instruction states, sample time refreshed
# only in sync or inside a used TNT, lazy packet fetch, PSB+ FUP walks,
# TIP.PGE estimates. Covers plain walks, timing (TSC, TMA, MTC with several
# periods and TSC:CTC ratios, CBR changes, no MTC), async events, overflows,
# no return compression, long TNT, short PSB periods, debug and production
# enclaves (perf has no enclave logic: it sees FUP + TIP.PGD and the TIP.PGE
# after, as any disable), and a walk without TSC, which perf decodes
# timeless: no time field (-F without time; ptscope's jsonl time is null
# throughout), walks into code no MMAP maps (the kernel's, an enclave's
# page whose file is not there): both fail there,
# ptscope goes on at the next PSB while perf fails at each IP up to it; the
# times after must still agree (they stayed where the error left them).
# The same cases again with CYC (cycle-accurate mode): perf's CYC timing,
# ticks per cycle measured between MTCs, the CBR's ratio, CBR changes.
# Skips (77) with a message when perf is not installed.
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
production=0x500000-0x501000:production,entry=0x500000,aep=0x400138
debug=0x500000-0x501000:debug,entry=0x500000
fail=0
timeless=0 # the case has no timestamps: perf prints no time field
unmap=0 # the second MMAP (the enclave's page) names a file not there
# "NS IP" per instruction from perf's "SECS.NANOSECS: IP" lines.
perf_ns() {
	awk '{ t = $1; sub(/:$/, "", t); split(t, p, ".")
	       printf "%d%09d %s\n", p[1], p[2], $2 }'
}
# "NS IP" per instruction from ptscope's jsonl.
ours_ns() {
	sed -n 's/.*"time":\([0-9]*\),.*"ip":"0x\([0-9a-f]*\)","size".*/\1 \2/p'
}
run_case() {
	name=$1
	shift
	d="$tmp/$name"
	mkdir -p "$d"
	if ! "$ptscope" synth --walk "$elf" -o "$d/trace.pt" \
		--perf-data "$d/perf.data" -q "$@" 2>"$d/err"; then
		echo "$name: synth failed"; cat "$d/err"; fail=1; return
	fi
	if [ "$unmap" = 1 ]; then
		# the name's last letter changed: perf and ptscope must both
		# find no code there, though the first MMAP's ELF has it
		base=$(basename "$elf")
		at=$(grep -boa "$base" "$d/perf.data" | sed -n 2p | cut -d: -f1)
		printf 0 | dd of="$d/perf.data" bs=1 conv=notrunc \
			seek=$((at + ${#base} - 1)) 2>/dev/null
	fi
	fields=comm,tid,cpu,time,ip,sym
	[ "$timeless" = 1 ] && fields=comm,tid,cpu,ip,sym
	perf script -i "$d/perf.data" --itrace=i0ns \
		-F "$fields" >"$d/perf.txt" 2>"$d/perf.err"
	"$ptscope" perf flow --format perf "$d/perf.data" >"$d/ours.txt" \
		2>"$d/ours.err"
	n=$(wc -l <"$d/perf.txt")
	if [ "$n" -eq 0 ]; then
		echo "$name: perf decoded nothing:"; head -5 "$d/perf.err"; fail=1
		return
	fi
	if ! cmp -s "$d/perf.txt" "$d/ours.txt"; then
		echo "$name: perf and ptscope differ ($n vs $(wc -l <"$d/ours.txt") lines):"
		diff "$d/perf.txt" "$d/ours.txt" | head -20
		fail=1
		return
	fi
	if [ "$timeless" = 1 ]; then
		timed=$("$ptscope" perf flow --format jsonl "$d/perf.data" \
			2>/dev/null | grep -c '"time":[0-9]')
		if [ "$timed" -ne 0 ]; then
			echo "$name: $timed jsonl lines have a time"; fail=1
			return
		fi
		echo "$name: $n instructions agree, without time"
		return
	fi
	perf script -i "$d/perf.data" --itrace=i0ns --ns -F time,ip \
		2>/dev/null | perf_ns >"$d/perf.ns"
	"$ptscope" perf flow --format jsonl "$d/perf.data" 2>/dev/null |
		ours_ns >"$d/ours.ns"
	if ! cmp -s "$d/perf.ns" "$d/ours.ns"; then
		t=$(paste -d' ' "$d/perf.ns" "$d/ours.ns" |
			awk '$1 != $3 || $2 != $4' | wc -l)
		echo "$name: nanosecond times differ on $t of $n instructions (perf, ptscope):"
		paste -d' ' "$d/perf.ns" "$d/ours.ns" |
			awk '$1 != $3 || $2 != $4' | head -10
		fail=1
		return
	fi
	echo "$name: $n instructions agree, times to the nanosecond"
}
run_case plain --insns 20000 --seed 1 --user-only --tsc --mtc
run_case timing --insns 20000 --seed 2 --user-only --tsc --mtc=0 --freq-rate 2000
run_case mtc9 --insns 20000 --seed 5 --user-only --tsc --mtc=9
run_case mtc12_ratio --insns 20000 --seed 6 --user-only --tsc --mtc=12 \
	--tsc-ratio 3:250
run_case ratio --insns 20000 --seed 7 --user-only --tsc --mtc --tsc-ratio 3:200
run_case freq_mtc --insns 20000 --seed 13 --user-only --tsc --mtc \
	--freq-rate 3000 --cbr 30
run_case tsc_only --insns 20000 --seed 14 --user-only --tsc
run_case no_retcomp --insns 20000 --seed 4 --user-only --tsc --no-retcomp
run_case long_tnt --insns 20000 --seed 8 --user-only --tsc --mtc --long-tnt
run_case psb_256 --insns 20000 --seed 9 --user-only --tsc --mtc --psb-period 256
run_case async --insns 20000 --seed 3 --user-only --tsc --mtc --async-rate 20000
run_case overflow --insns 20000 --seed 10 --user-only --tsc --mtc --ovf-rate 500
run_case enclave_production --insns 20000 --seed 1 --user-only --tsc --mtc \
	--enclave "$production" --aex-rate 5000
run_case enclave_debug --insns 20000 --seed 15 --user-only --tsc --mtc \
	--enclave "$debug" --aex-rate 5000 --async-rate 5000
# enclave_unmapped: an MMAP of an ELF maps only its range (the whole
# file's segments were mapped: code perf fails on was decoded)
unmap=1
run_case enclave_unmapped --insns 20000 --seed 1 --user-only --tsc --mtc
unmap=0
# kernel_unmapped: no kernel map in the capture
run_case kernel_unmapped --insns 20000 --seed 1 --tsc --mtc
run_case kernel_unmapped_async --insns 20000 --seed 4 --tsc --mtc \
	--async-rate 5000
# cycle-accurate: every CYC-eligible packet after a CYC
run_case cyc_plain --insns 20000 --seed 1 --user-only --tsc --mtc --cyc
run_case cyc_ratio --insns 20000 --seed 7 --user-only --tsc --mtc --cyc \
	--tsc-ratio 3:200
run_case cyc_mtc12 --insns 20000 --seed 6 --user-only --tsc --mtc=12 --cyc \
	--tsc-ratio 3:250
run_case cyc_no_mtc --insns 20000 --seed 2 --user-only --tsc --mtc=0 --cyc \
	--freq-rate 2000
run_case cyc_freq --insns 20000 --seed 13 --user-only --tsc --mtc --cyc \
	--freq-rate 3000 --cbr 30
run_case cyc_async_ovf --insns 20000 --seed 10 --user-only --tsc --mtc --cyc \
	--async-rate 5000 --ovf-rate 500
run_case cyc_enclave --insns 20000 --seed 1 --user-only --tsc --mtc --cyc \
	--enclave "$production" --aex-rate 5000
run_case cyc_kernel_unmapped --insns 20000 --seed 1 --tsc --mtc --cyc
# errors in a row (the kernel's IPs in PSB+ FUPs and TIPs): perf reads on
# only up to each error's packet, not to where the flow goes on, which
# the next run tells (times ran ahead: 95 and 313 instructions differed)
run_case kernel_unmapped_errors --insns 20000 --seed 72 --tsc --mtc \
	--async-rate 4000
run_case cyc_kernel_unmapped_errors --insns 20000 --seed 63 --tsc --mtc \
	--cyc --async-rate 4000
timeless=1
run_case timeless --insns 20000 --seed 16 --user-only --async-rate 5000
exit $fail
