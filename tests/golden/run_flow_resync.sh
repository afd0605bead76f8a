#!/bin/sh
# `ptscope flow` on a trace whose code is partly missing: a walk of
# fixtures/bin/enclave_demo with ring 0 traced (SYSCALL into the kernel
# stub) decoded without the stub. Without --resync-on-error the flow stops
# at the first error, which names the address with no code (exit 1); with
# it, decoding goes on at the next PSB: more errors, more instructions,
# still exit 1. Every byte passed over to get to a PSB is reported, as
# `ptscope dump` does: after each error, from it up to the next PSB; bytes
# before the first PSB; a file with no PSB at all (those are not errors).
# usage: run_flow_resync.sh PTSCOPE FIXTURES_DIR
set -eu
ptscope=$1
demo=$2/bin/enclave_demo
tmp=$(mktemp -d "${TMPDIR:-/tmp}/ptscope-flow-resync.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
"$ptscope" synth --walk "$demo" --insns 5000 --psb-period 128 \
	-o "$tmp/t.pt" -q
fail() { echo "$*" >&2; exit 1; }

status=0
"$ptscope" flow --elf "$demo" --no-inst "$tmp/t.pt" >"$tmp/stop" || status=$?
[ "$status" -eq 1 ] || fail "stop: exit $status, want 1"
errors=$(grep -c 'error' "$tmp/stop" || true)
[ "$errors" -eq 1 ] || fail "stop: $errors errors, want 1"
tail -1 "$tmp/stop" | grep -q 'ffffffff81000000: error: no code mapped' ||
	fail "stop: last line '$(tail -1 "$tmp/stop")'"

status=0
"$ptscope" flow --elf "$demo" --no-inst --resync-on-error "$tmp/t.pt" \
	>"$tmp/go" || status=$?
[ "$status" -eq 1 ] || fail "resync: exit $status, want 1"
errors=$(grep -c 'error' "$tmp/go" || true)
[ "$errors" -gt 1 ] || fail "resync: $errors errors, want more than 1"
n_stop=$(grep -c '^0' "$tmp/stop" || true)
n_go=$(grep -c '^0' "$tmp/go" || true)
[ "$n_go" -gt "$n_stop" ] || fail "resync: $n_go instructions, not more than $n_stop"
# Up to the first error both print the same.
head -n "$(wc -l <"$tmp/stop")" "$tmp/go" | cmp -s - "$tmp/stop" ||
	fail "resync: differs from the stopping run before the first error"

# --quiet counts what the same run prints, stopping or not (it counted
# what the decoder had run ahead to).
for mode in stop go; do
	opt=
	[ $mode = go ] && opt=--resync-on-error
	"$ptscope" flow --elf "$demo" --no-inst $opt -q "$tmp/t.pt" \
		2>"$tmp/q" || true
	want=$(grep -vc '^\[' "$tmp/$mode")
	grep -qx "instructions: $want" "$tmp/q" ||
		fail "$mode: --quiet says $(head -1 "$tmp/q"), printed $want"
	want=$(grep -c 'error' "$tmp/$mode")
	grep -qx "errors: $want" "$tmp/q" || fail "$mode: --quiet errors"
done

# After each error, a skip line from the error's offset to a PSB.
"$ptscope" dump "$tmp/t.pt" | awk '$2 == "psb" { print $1 }' >"$tmp/psbs"
printf '%016x\n' "$(wc -c <"$tmp/t.pt")" >>"$tmp/psbs" # or to the end
skips=0
while IFS= read -r line; do
	case $line in
	*': error: '*) want_from=${line#[}; want_from=${want_from%%,*}
		next=skip ;;
	*': skipped '*) [ "${next:-}" = skip ] ||
			fail "resync: skip line not after an error: $line"
		range=${line#[}; range=${range%%:*}
		from=${range%-*}; to=${range#*-}
		[ "$from" = "$want_from" ] ||
			fail "resync: skip from $from, error at $want_from"
		n=$(( 0x$to - 0x$from ))
		[ "$line" = "[$from-$to: skipped $n bytes to resync]" ] ||
			fail "resync: '$line'"
		grep -qx "$(printf '%016x' $(( 0x$to )))" "$tmp/psbs" ||
			fail "resync: skip to $to, not a PSB nor the end"
		skips=$((skips + 1)); skipped=$((${skipped:-0} + n)); next= ;;
	*) [ "${next:-}" != skip ] || fail "resync: no skip after the error"
	esac
done <"$tmp/go"
[ "$skips" -eq "$errors" ] || fail "resync: $skips skips for $errors errors"

# Bytes before the first PSB: a skip line first, the flow as without them,
# exit 0; jsonl, --quiet and cov say so too.
head -c 100 /dev/zero | tr '\0' '\125' >"$tmp/lead.pt"
cat "$tmp/t.pt" >>"$tmp/lead.pt"
k="--elf $demo --no-inst"
"$ptscope" flow $k "$tmp/t.pt" >"$tmp/plain" || true
grep -v error "$tmp/plain" >"$tmp/plain.flow"
status=0
"$ptscope" flow $k "$tmp/lead.pt" >"$tmp/lead" || status=$?
[ "$status" -eq 1 ] || fail "lead: exit $status, want 1 (the error)"
[ "$(head -1 "$tmp/lead")" = "[0-64: skipped 100 bytes to resync]" ] ||
	fail "lead: first line '$(head -1 "$tmp/lead")'"
tail -n +2 "$tmp/lead" | grep -v error | cmp -s - "$tmp/plain.flow" ||
	fail "lead: the flow differs from the trace's without the bytes"
"$ptscope" flow --elf "$demo" -f jsonl "$tmp/lead.pt" | head -1 |
	grep -qx '{"offset":0,"skipped":100,"end":100}' || fail "lead: jsonl"
"$ptscope" flow $k -q --resync-on-error "$tmp/lead.pt" 2>&1 |
	grep -qx "skipped: $((skipped + 100)) bytes" || fail "lead: --quiet"
"$ptscope" cov --elf "$demo" "$tmp/lead.pt" 2>&1 |
	grep -q " $errors errors, $((skipped + 100)) bytes skipped" ||
	fail "lead: cov"

# No PSB at all: all of it skipped, no error.
head -c 100 "$tmp/lead.pt" >"$tmp/none.pt"
out=$("$ptscope" flow $k "$tmp/none.pt") ||
	fail "none: exit $?, want 0"
[ "$out" = "[0-64: skipped 100 bytes to resync]" ] || fail "none: '$out'"
# windows with these images: the missing stub is the images' fault (the
# hint says so); a packet that does not decode is the trace's (no hint)
"$ptscope" windows --elf "$demo" "$tmp/t.pt" 2>"$tmp/wi" >/dev/null || true
grep -q 'no code mapped at address (images wrong or missing?)' "$tmp/wi" ||
	fail "windows: '$(cat "$tmp/wi")'"
cp "$tmp/t.pt" "$tmp/bad.pt"
printf '\331' | dd of="$tmp/bad.pt" bs=1 seek=100 conv=notrunc 2>/dev/null
"$ptscope" windows --elf "$demo" "$tmp/bad.pt" 2>"$tmp/wb" >/dev/null || true
grep -q 'the first at offset 0x64 ip 0x0: unknown opcode$' "$tmp/wb" ||
	fail "windows bad opcode: '$(cat "$tmp/wb")'"
echo "stop: $n_stop instructions; resync: $n_go instructions," \
	"$errors errors, $skips skips"
