#!/bin/sh
# Inputs with no end in sight are refused after their first bytes, not read
# into memory to the end: `perf` read a non-seekable input whole before it
# looked at the magic (/dev/zero: until memory ran out), and --config read
# its file whole. Here the input is 64 MiB of zeros through a pipe: the
# writer must be cut off (SIGPIPE) and the message must say why.
#
#   run_endless_inputs.sh PTSCOPE TRACE
set -u
ptscope=$1 trace=$2
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# check MESSAGE ARGS...: `ptscope ARGS` reading the zeros on stdin.
check() {
	msg=$1
	shift
	{ head -c 67108864 /dev/zero; echo $? >"$tmp/writer"; } |
		"$ptscope" "$@" >/dev/null 2>"$tmp/err"
	status=$? writer=$(cat "$tmp/writer")
	if [ "$status" -ne 2 ] || [ "$writer" -eq 0 ] ||
		! grep -qF -- "$msg" "$tmp/err"; then
		echo "FAIL: ptscope $*: exit $status, writer $writer:"
		cat "$tmp/err"
		fail=1
	else
		echo "ok: ptscope $*: $(cat "$tmp/err")"
	fi
}

check 'no PERFILE2 magic' perf info -
check 'no PERFILE2 magic' windows --perf -
check 'more than 16 MiB' flow --config /dev/stdin "$trace"
check 'more than 16 MiB' windows --config /dev/stdin "$trace"
exit $fail
