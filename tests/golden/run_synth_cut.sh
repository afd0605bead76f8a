#!/bin/sh
# `ptscope synth --run PROG --insns N` with N below PROG's length: the run
# stops with the child still alive. Its mappings are read from the stopped
# child, so the configuration is written and `flow --config` decodes the N
# instructions (the run used to exit 2 with no message and no config).
# usage: run_synth_cut.sh PTSCOPE PROG (a program of more than 2000
# instructions: /bin/true with ld.so runs ~110k)
set -u
ptscope=$1 prog=$2
[ -x "$prog" ] || { echo "skip: no $prog"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT

if ! "$ptscope" synth --run "$prog" --insns 2000 -q -o "$dir/t.pt" \
	--config-out "$dir/t.cfg"; then
	echo "synth --run --insns 2000 failed"
	exit 1
fi
out=$("$ptscope" flow --config "$dir/t.cfg" --quiet "$dir/t.pt" 2>&1)
for want in 'instructions: 2000' 'errors: 0'; do
	if ! printf '%s\n' "$out" | grep -qx "$want"; then
		printf 'flow --quiet: no line "%s" in:\n%s\n' "$want" "$out"
		exit 1
	fi
done
echo "ok: a run cut at 2000 instructions decodes with its config"

# --insns 100000 (the walk's default, given): the run stops there too (it
# was taken as not given and the run went on to exit, ~110k)
out=$("$ptscope" synth --run "$prog" --insns 100000 -o "$dir/u.pt" 2>&1) ||
	{ echo "synth --insns 100000 failed: $out"; exit 1; }
case $out in
"ptscope synth: 100000 instructions ("*) ;;
*) printf 'synth --insns 100000 ran:\n%s\n' "$out"; exit 1 ;;
esac
echo "ok: a run cut at 100000 instructions"
