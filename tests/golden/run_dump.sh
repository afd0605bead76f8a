#!/bin/sh
# Runs one `ptscope dump` golden case and compares what it did with what
# it should have done.
#
#   run_dump.sh STATUS STDOUT STDERR STDIN -- COMMAND [ARGS...]
#
#   STATUS  the exit status wanted
#   STDOUT  a file holding the exact output wanted, "empty", or "any"
#   STDERR  a text that standard error must contain, or "any"
#   STDIN   a file to feed on standard input, or "none"
set -u
want_status=$1 want_out=$2 want_err=$3 stdin=$4
shift 4
[ "$1" = "--" ] && shift

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
[ "$stdin" = none ] && stdin=/dev/null
"$@" <"$stdin" >"$tmp/out" 2>"$tmp/err"
status=$?

fail=0
if [ "$status" -ne "$want_status" ]; then
	echo "exit status $status, want $want_status"
	fail=1
fi
case $want_out in
any) ;;
empty)
	if [ -s "$tmp/out" ]; then
		echo "standard output should be empty, is:"
		head -20 "$tmp/out"
		fail=1
	fi
	;;
*)
	if ! cmp -s "$want_out" "$tmp/out"; then
		echo "standard output differs from $want_out:"
		diff -u "$want_out" "$tmp/out" | head -60
		fail=1
	fi
	;;
esac
if [ "$want_err" != any ] && ! grep -qF -- "$want_err" "$tmp/err"; then
	echo "standard error lacks '$want_err'; it is:"
	head -20 "$tmp/err"
	fail=1
fi
exit $fail
