#!/bin/sh
# `ptscope cov` golden outputs and the ToPA round trip (issue #7).
# usage: run_cov_topa.sh PTSCOPE SOURCE_ROOT
#   1. cov --edges / --unique / --filter on fixtures/synth/plain equal the
#      files in fixtures/cov/ (made by this script with UPDATE=1);
#   2. `synth --topa SPEC` for rings, STOP chains, a single range, wrapped
#      and not: `topa linear` gives back the trace bytes (the last
#      buffer-size bytes when wrapped, the first ones after a STOP);
#      `topa flow`, `topa cov` and `cov --topa` equal `flow` and `cov` on
#      that linear trace; `topa windows` runs;
#   3. `topa linear -o` and `cov --bitmap` (plain, --topa, under `topa`)
#      refuse to write over one of their inputs.
set -eu
ptscope=$1
root=$2
fx=$root/fixtures
exp=$fx/cov
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cov_topa.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail=0

check() { # NAME FILE EXPECTED
	if [ "${UPDATE:-0}" = 1 ]; then
		cp "$2" "$3"
	elif ! cmp -s "$2" "$3"; then
		echo "FAIL $1: $2 differs from $3"
		diff "$3" "$2" | head -10
		fail=1
	else
		echo "ok   $1"
	fi
}

plain=$fx/synth/plain
"$ptscope" cov --config "$plain/config.cfg" --edges -q "$plain/trace.pt" \
	> "$tmp/edges"
check edges "$tmp/edges" "$exp/plain.edges.exp"
"$ptscope" cov --config "$plain/config.cfg" --unique -q "$plain/trace.pt" \
	> "$tmp/unique"
check unique "$tmp/unique" "$exp/plain.unique.exp"
"$ptscope" cov --config "$plain/config.cfg" --edges -q \
	--filter 0x400140-0x40022f "$plain/trace.pt" > "$tmp/filtered"
check filter "$tmp/filtered" "$exp/plain.filter.exp"
"$ptscope" cov --config "$plain/config.cfg" -q --bitmap "$tmp/bm" \
	--bitmap-size 4096 "$plain/trace.pt"
[ "$(wc -c < "$tmp/bm")" -eq 4096 ] || { echo "FAIL bitmap size"; fail=1; }
# Sizes with a K or M suffix, as the default is written in --help.
"$ptscope" cov --config "$plain/config.cfg" -q --bitmap "$tmp/bm4k" \
	--bitmap-size 4K "$plain/trace.pt"
cmp -s "$tmp/bm" "$tmp/bm4k" || { echo "FAIL bitmap size 4K"; fail=1; }
"$ptscope" cov --config "$plain/config.cfg" -q --bitmap "$tmp/bm1m" \
	--bitmap-size 1m "$plain/trace.pt"
[ "$(wc -c < "$tmp/bm1m")" -eq 1048576 ] ||
	{ echo "FAIL bitmap size 1m"; fail=1; }
# the largest, as --help writes it (a G suffix was "expected a number")
"$ptscope" cov --config "$plain/config.cfg" -q --bitmap-size 1G \
	"$plain/trace.pt" || { echo "FAIL bitmap size 1G refused"; fail=1; }
for bad in 3K 2048M 2G 32 K; do
	if "$ptscope" cov --config "$plain/config.cfg" -q --bitmap-size "$bad" \
		"$plain/trace.pt" 2> /dev/null; [ $? -ne 2 ]; then
		echo "FAIL bitmap size $bad accepted"; fail=1
	fi
done
# Unique counts add up to the edge list.
total=$(awk '{ n += $2 } END { print n }' "$tmp/unique")
[ "$total" -eq "$(wc -l < "$tmp/edges")" ] ||
	{ echo "FAIL unique counts $total"; fail=1; }

# The ToPA round trip: SPEC INSNS how (all|tail|head).
demo=$fx/bin/enclave_demo
i=0
while read -r spec insns how; do
	i=$((i + 1))
	t=$tmp/t$i.pt
	"$ptscope" synth --walk "$demo" --insns "$insns" --seed "$i" \
		--no-retcomp --user-only --tsc --mtc -o "$t" \
		--config-out "$tmp/t$i.cfg" --topa "$spec" -q
	"$ptscope" topa --desc "$t.desc" linear -o "$tmp/lin$i"
	cap=$(wc -c < "$tmp/lin$i")
	case $how in
	all) cmp -s "$t" "$tmp/lin$i" ;;
	tail) tail -c "$cap" "$t" | cmp -s - "$tmp/lin$i" &&
		[ "$cap" -lt "$(wc -c < "$t")" ] ;;
	head) head -c "$cap" "$t" | cmp -s - "$tmp/lin$i" &&
		[ "$cap" -lt "$(wc -c < "$t")" ] ;;
	lead) true ;; # lead-in kept, ring wrapped: flows must agree
	esac || { echo "FAIL topa $spec: linear bytes ($how)"; fail=1; continue; }
	cfg=$tmp/t$i.cfg
	"$ptscope" flow --config "$cfg" --resync-on-error "$tmp/lin$i" \
		> "$tmp/f1" 2>&1 || true
	"$ptscope" topa --desc "$t.desc" flow --config "$cfg" \
		--resync-on-error > "$tmp/f2" 2>&1 || true
	# A last packet cut by the buffer's end is an error in a file but
	# truncation in a ToPA buffer (issue #7): the same line otherwise.
	why="end of buffer"
	case $spec in *:stop*) why="ToPA STOP" ;; esac
	err='\[\([0-9a-f]*\), [0-9a-f]*: error: stream ends inside a packet\]'
	cut="[\\1-$(printf %x "$cap"): truncated: trace ends inside a packet"
	sed "s/^$err\$/$cut ($why)]/" "$tmp/f1" > "$tmp/f1.cut"
	cmp -s "$tmp/f1.cut" "$tmp/f2" ||
		{ echo "FAIL topa $spec: topa flow"; fail=1; }
	if [ "$how" = head ]; then
		# This seed's STOP cuts a packet: flow and cov take it as
		# truncation (exit 0), flow on the linear file as an error.
		grep -q 'error: stream ends inside a packet' "$tmp/f1" &&
			grep -q "truncated: .*(ToPA STOP)" "$tmp/f2" ||
			{ echo "FAIL topa $spec: no cut packet"; fail=1; }
		if ! "$ptscope" topa --desc "$t.desc" flow --config "$cfg" \
			> /dev/null ||
			"$ptscope" flow --config "$cfg" "$tmp/lin$i" \
				> /dev/null; then
			echo "FAIL topa $spec: exit status of flow"; fail=1
		fi
		"$ptscope" topa --desc "$t.desc" flow --config "$cfg" -q \
			2> "$tmp/fq" &&
			grep -q '^errors: 0$' "$tmp/fq" &&
			grep -q '^truncated: the last packet (ToPA STOP)$' \
				"$tmp/fq" ||
			{ echo "FAIL topa $spec: flow --quiet"; fail=1; }
		"$ptscope" cov --config "$cfg" --topa "$t.desc" 2> "$tmp/cq" &&
			grep -q ' 0 errors.*last packet truncated (ToPA STOP)' \
				"$tmp/cq" ||
			{ echo "FAIL topa $spec: cov summary"; fail=1; }
		# windows shows the cut as a truncated gap; its flow
		# decoder (images from --config) has no error to report
		"$ptscope" topa --desc "$t.desc" windows --config "$cfg" \
			> "$tmp/wc" 2> "$tmp/wce" &&
			grep -q '^gap .* truncated ' "$tmp/wc" &&
			! grep -q 'flow decoder' "$tmp/wce" ||
			{ echo "FAIL topa $spec: windows cut"; fail=1; }
	fi
	grep -q '^0000' "$tmp/f2" ||
		{ echo "FAIL topa $spec: no instructions"; fail=1; }
	"$ptscope" cov --config "$cfg" --edges -q "$tmp/lin$i" > "$tmp/c1" ||
		true
	"$ptscope" topa --desc "$t.desc" cov --config "$cfg" --edges -q \
		> "$tmp/c2" || true
	"$ptscope" cov --config "$cfg" --edges -q --topa "$t.desc" \
		> "$tmp/c3" || true
	cmp -s "$tmp/c1" "$tmp/c2" && cmp -s "$tmp/c1" "$tmp/c3" &&
		[ -s "$tmp/c1" ] ||
		{ echo "FAIL topa $spec: topa cov"; fail=1; }
	"$ptscope" topa --desc "$t.desc" windows --config "$cfg" \
		> "$tmp/w" 2>&1 || true
	[ -s "$tmp/w" ] || { echo "FAIL topa $spec: topa windows"; fail=1; }
	# a wrapped ring starts where its oldest bytes were overwritten:
	# what precedes the first PSB is a truncated gap, no decode error
	if [ "$how" = tail ] &&
		! sed -n 2p "$tmp/w" | grep -q '^gap  *0 .* truncated  *skip '
	then
		echo "FAIL topa $spec: wrapped start not truncated"; fail=1
	fi
	[ $fail = 1 ] || echo "ok   topa $spec ($how, $cap bytes)"
done <<EOF
64K,128K/256K 20000 all
4K,8K/16K,4K 60000 tail
4K,8K:int/16K,4K:stop 60000 head
single:16K 60000 tail
8K/4K,4K/8K@1 60000 lead
EOF

# `topa linear -o` onto one of its inputs (a region, a table, the
# description, a region under another name) is refused before anything is
# written (exit 2): truncating a mapped region destroyed it.
t=$tmp/t1.pt
ln "$t.r0.bin" "$tmp/alias.bin"
for victim in "$t.r0.bin" "$t.t1.bin" "$t.desc" "$tmp/alias.bin"; do
	cp "$victim" "$tmp/before"
	status=0
	"$ptscope" topa --desc "$t.desc" linear -o "$victim" 2> "$tmp/err" ||
		status=$?
	[ "$status" -eq 2 ] &&
		grep -q "ptscope topa: -o $victim is one of the input files" \
			"$tmp/err" && cmp -s "$victim" "$tmp/before" ||
		{ echo "FAIL linear onto $victim: exit $status"; fail=1; }
done
[ $fail = 1 ] || echo "ok   linear onto its inputs refused"

# `cov --bitmap` onto an input (the trace, the --config, the code it maps,
# a ToPA region or description, by --topa or under `topa`) is refused as
# well: it wrote the bitmap there and exited 0.
# Copies only: a binary with the bug must not destroy the fixtures.
cp "$plain/trace.pt" "$plain/trace.pt.kstub" "$fx/bin/enclave_demo" "$tmp/"
sed "s|image elf 0x0 ../../bin/|image elf 0x0 |" "$plain/config.cfg" \
	> "$tmp/config.cfg"
ln "$tmp/trace.pt" "$tmp/trace-alias.pt"
cov_onto() { # VICTIM ARGS...: cov ARGS --bitmap VICTIM is refused
	victim=$1
	shift
	cp "$victim" "$tmp/before"
	status=0
	"$ptscope" "$@" --bitmap "$victim" 2> "$tmp/err" || status=$?
	[ "$status" -eq 2 ] &&
		grep -q "cov: --bitmap $victim is one of the input files" \
			"$tmp/err" && cmp -s "$victim" "$tmp/before" ||
		{ echo "FAIL cov --bitmap onto $victim: exit $status"; fail=1; }
}
for victim in "$tmp/trace.pt" "$tmp/config.cfg" "$tmp/enclave_demo" \
	"$tmp/trace-alias.pt"; do
	cov_onto "$victim" cov --config "$tmp/config.cfg" -q "$tmp/trace.pt"
done
cov_onto "$tmp/enclave_demo" cov --elf "$tmp/enclave_demo" -q \
	"$tmp/trace.pt"
# the trace read from standard input, a file redirected in (it was
# overwritten by the bitmap)
cov_onto "$tmp/trace.pt" cov --config "$tmp/config.cfg" -q - <"$tmp/trace.pt"

# A trace cut inside its last packet: an error said on stderr, with -q too
# (cov -q printed nothing and exited 1).
head -c 198 "$tmp/trace.pt" >"$tmp/cut.pt"
status=0
"$ptscope" cov --config "$tmp/config.cfg" -q "$tmp/cut.pt" 2>"$tmp/err" ||
	status=$?
[ "$status" -eq 1 ] && grep -q \
	"cov: the data ends inside the packet at offset 0xc4" "$tmp/err" ||
	{ echo "FAIL cov -q of a cut trace: exit $status"; fail=1; }
for victim in "$t.r0.bin" "$t.desc"; do
	cov_onto "$victim" cov --topa "$t.desc" -q
	cov_onto "$victim" topa --desc "$t.desc" cov -q
done
"$ptscope" cov --config "$tmp/config.cfg" -q --bitmap "$tmp/bitmap" \
	"$tmp/trace.pt" ||
	{ echo "FAIL cov --bitmap to a new file"; fail=1; }
[ $fail = 1 ] || echo "ok   cov --bitmap onto its inputs refused"

# An unwrapped buffer starts where tracing did, at a packet: two PADs
# before the first PSB are packets, not a decode-error gap (`windows` gives
# what `windows --no-sync` gives on the same bytes as a file).
{ printf '\0\0'; cat "$plain/trace.pt"; } > "$tmp/pads.pt"
cp "$tmp/pads.pt" "$tmp/pads.bin"
dd if=/dev/zero bs=1 count=$((4096 - $(wc -c < "$tmp/pads.pt"))) \
	>> "$tmp/pads.bin" 2>/dev/null
printf 'mode single\noutput_base 0x100000\nwrapped no\n%s\n%s\n' \
	"output_mask_ptrs 0x$(printf %x $(wc -c < "$tmp/pads.pt"))00000fff" \
	"region 0x100000 pads.bin" > "$tmp/pads.desc"
"$ptscope" topa --desc "$tmp/pads.desc" windows --config "$plain/config.cfg" \
	> "$tmp/pads.topa" 2>&1 || true
"$ptscope" windows --no-sync --config "$plain/config.cfg" "$tmp/pads.pt" \
	> "$tmp/pads.file" 2>&1 || true
if grep -q decode-error "$tmp/pads.topa" ||
	! cmp -s "$tmp/pads.topa" "$tmp/pads.file"; then
	echo "FAIL topa windows, PADs first:"; diff "$tmp/pads.file" \
		"$tmp/pads.topa" | head -5; fail=1
else
	echo "ok   topa windows: PADs before the first PSB"
fi

# A message naming a long path holds all of it (it was cut at 320 bytes).
long=$tmp/$(printf 'd%.0s' $(seq 1 150))/$(printf 'f%.0s' $(seq 1 150)).bin
status=0
"$ptscope" topa --desc "$t.desc" --region "0x100000000=$long" info \
	2> "$tmp/err" || status=$?
[ "$status" -eq 2 ] && grep -qF "$long: No such file or directory" "$tmp/err" ||
	{ echo "FAIL long path: exit $status, $(cat "$tmp/err")"; fail=1; }
exit $fail
