#!/bin/sh
# `ptscope flow` on a trace whose code is partly missing: a walk of
# fixtures/bin/enclave_demo with ring 0 traced (SYSCALL into the kernel
# stub) decoded without the stub. Without --resync-on-error the flow stops
# at the first error, which names the address with no code (exit 1); with
# it, decoding goes on at the next PSB: more errors, more instructions,
# still exit 1.
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
echo "stop: $n_stop instructions; resync: $n_go instructions, $errors errors"
