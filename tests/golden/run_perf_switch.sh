#!/bin/sh
# Processes and queues in per-cpu perf.data files (make_perf_switch.c):
#
# 1. Per-process address spaces: procA (pid 100: nop; nop; syscall) and
#    procB (pid 200: 5x nop; syscall), both mapped at 0x400000 from
#    different files, take turns on CPU 0 (A, B, A; cpu-wide context
#    switches between). `ptscope perf flow --format perf` must walk each
#    stretch with its own process's code: 3, 6 and 3 instructions, each with
#    its process's comm and tid. A's last stretch starts at 0x500000, where
#    only procB maps code: one error (perf: code 5, "Failed to get
#    instruction"), not procB's code.
#    Made in a relative directory, the MMAPs name relative paths: the
#    same, opened from the current directory as perf does.
# 2. Time order: the same capture with a second CPU running procB between
#    CPU 0's stretches: by default the lines of both queues come in time
#    order (as perf script prints them); --order queue prints queue 0, then
#    queue 1; `dump --order time` interleaves the packets by time too.
# 3. The events that open a stretch ([enabled], [exec mode]) have the time
#    and thread of its first instruction (they had the previous stretch's,
#    or none: time order and --tid misplaced them); times never go back in
#    `flow -f jsonl`; `--tid 100` prints procA's lines only. `windows
#    --tid` on these per-cpu queues is refused (it printed every queue
#    whole). `dump --tid 100` starts with the PSB at offset 0 (it dropped
#    the packets before the first TSC) and has no '#' line of queue 1,
#    where procA never runs.
# When Linux perf is installed, `perf script --itrace=i0ns` must print what
# is expected here too.
#
#   run_perf_switch.sh PTSCOPE MAKE_PERF_SWITCH
set -u
ptscope=$1 make=$2
# absolute: one case runs in another directory
case $ptscope in /*) ;; *) ptscope=$PWD/$ptscope ;; esac
case $make in /*) ;; *) make=$PWD/$make ;; esac
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
have_perf=0
if command -v perf >/dev/null 2>&1 && perf version >/dev/null 2>&1; then
	have_perf=1
else
	echo "perf not installed: not compared with perf"
fi

# check NAME WANT DIR [ptscope perf flow options]
check() {
	name=$1 want=$2 dir=$3
	shift 3
	"$ptscope" perf flow --format perf "$@" "$dir/perf.data" \
		>"$tmp/$name.out" 2>"$tmp/$name.err"
	status=$?
	if [ "$status" -ne 1 ] ||
		! grep -q "^1 instruction trace errors" "$tmp/$name.err"; then
		echo "$name: expected exit status 1 and one error, got $status:"
		cat "$tmp/$name.err"
		fail=1
	fi
	awk '{print $1, $2, $3, $4, $5}' "$tmp/$name.out" >"$tmp/$name.got"
	if ! cmp -s "$want" "$tmp/$name.got"; then
		echo "$name: wrong instructions, processes or order:"
		diff -u "$want" "$tmp/$name.got"
		fail=1
	else
		echo "$name: $(wc -l <"$want") instructions as expected"
	fi
}

# perf_check NAME WANT DIR: perf script prints WANT too
perf_check() {
	[ "$have_perf" -eq 1 ] || return 0
	perf script -i "$3/perf.data" --itrace=i0ns \
		-F comm,tid,cpu,time,ip,sym >"$tmp/$1.perf" 2>"$tmp/$1.perr"
	awk '{print $1, $2, $3, $4, $5}' "$tmp/$1.perf" >"$tmp/$1.pgot"
	if ! cmp -s "$2" "$tmp/$1.pgot"; then
		echo "$1: perf script prints something else (expectation wrong?):"
		diff -u "$2" "$tmp/$1.pgot"
		cat "$tmp/$1.perr"
		fail=1
	else
		echo "$1: perf script agrees"
	fi
}

stretch() { # COMM TID CPU TIME COUNT
	i=0
	while [ "$i" -lt "$5" ]; do
		echo "$1 $2 [$3] $4: 40000$i"
		i=$((i + 1))
	done
}

mkdir -p "$tmp/one" "$tmp/two"
"$make" "$tmp/one" && "$make" "$tmp/two" interleave ||
	{ echo "make_perf_switch failed"; exit 1; }

{ stretch procA 100 000 1.000100 3; stretch procB 200 000 1.000300 6
  stretch procA 100 000 1.000500 3; } >"$tmp/one.want"
check processes "$tmp/one.want" "$tmp/one"
perf_check processes "$tmp/one.want" "$tmp/one"

# The same capture made with a relative directory: its MMAPs name the
# files relatively, and perf (and ptscope) open them from the current
# directory (ptscope took no relative name for a file: no code, exit 1).
mkdir -p "$tmp/rel"
(cd "$tmp/rel" && mkdir one && "$make" one >/dev/null) ||
	{ echo "make_perf_switch one (relative) failed"; exit 1; }
(cd "$tmp/rel" || exit 1
	check relative "$tmp/one.want" one
	perf_check relative "$tmp/one.want" one
	exit "$fail") || fail=1

{ stretch procA 100 000 1.000100 3; stretch procB 200 001 1.000150 6
  stretch procB 200 000 1.000300 6; stretch procB 200 001 1.000450 6
  stretch procA 100 000 1.000500 3; } >"$tmp/time.want"
check time_order "$tmp/time.want" "$tmp/two"
perf_check time_order "$tmp/time.want" "$tmp/two"

{ cat "$tmp/one.want"; stretch procB 200 001 1.000150 6
  stretch procB 200 001 1.000450 6; } >"$tmp/queue.want"
check queue_order "$tmp/queue.want" "$tmp/two" --order queue

# dump --order time: both queues' packets, times never going back
"$ptscope" perf dump --order time -f jsonl "$tmp/two/perf.data" \
	>"$tmp/dump.out" 2>"$tmp/dump.err" || { echo "dump failed"; fail=1; }
if ! sed -n 's/.*"queue":\([0-9]*\).*"time":\([0-9]*\),.*/\1 \2/p' \
	"$tmp/dump.out" | awk '$2 < last { bad = 1 } { last = $2; q[$1] = 1 }
		END { exit bad || !(0 in q) || !(1 in q) }'; then
	echo "dump --order time: times go back or a queue is missing:"
	head -40 "$tmp/dump.out"
	fail=1
else
	echo "dump --order time: $(wc -l <"$tmp/dump.out") packets in time order"
fi

# jsonl fields "queue tid time kind" per line (kind: insn or the event)
fields() {
	head='^{"queue":\([0-9]*\),"cpu":[-0-9]*,"tid":\([-0-9]*\),'
	time='.*"time":\([0-9a-z]*\),'
	sed -n "s/$head$time.*\"size\".*/\\1 \\2 \\3 insn/p
s/$head$time.*\"event\":\"\([a-z-]*\)\".*/\\1 \\2 \\3 \\4/p" "$1"
}
"$ptscope" perf flow -f jsonl "$tmp/two/perf.data" >"$tmp/flow.jsonl" \
	2>/dev/null
fields "$tmp/flow.jsonl" >"$tmp/flow.f"
# every enabled: the queue's next instruction has its tid and time
if ! awk '$4 == "enabled" { want[$1] = $2 " " $3; n++ }
	$4 == "insn" && ($1 in want) {
		if (want[$1] != $2 " " $3) bad = 1; delete want[$1] }
	$3 !~ /^[0-9]+$/ || $3 < last { bad = 1 } { last = $3 }
	END { exit bad || n < 5 }' "$tmp/flow.f"; then
	echo "flow -f jsonl: an enable not at its stretch's time and thread," \
		"or times going back:"
	cat "$tmp/flow.f"
	fail=1
else
	echo "flow -f jsonl: enables at their stretches' times and threads"
fi
"$ptscope" perf flow -f jsonl --tid 100 "$tmp/two/perf.data" \
	>"$tmp/tid.jsonl" 2>/dev/null
if grep -qv '^{"queue":0,"cpu":0,"tid":100,' "$tmp/tid.jsonl" ||
	[ "$(grep -c '"event":"enabled"' "$tmp/tid.jsonl")" -ne 3 ]; then
	echo "flow --tid 100: lines of another thread:"
	cat "$tmp/tid.jsonl"
	fail=1
else
	echo "flow --tid 100: procA's lines only"
fi
status=0
"$ptscope" perf windows --tid 100 "$tmp/two/perf.data" >"$tmp/w.out" \
	2>"$tmp/w.err" || status=$?
if [ "$status" -ne 2 ] || [ -s "$tmp/w.out" ] ||
	! grep -q "^ptscope perf windows: --tid: queue 0 is CPU 0's" \
		"$tmp/w.err"; then
	echo "windows --tid on per-cpu queues: exit $status, not refused:"
	cat "$tmp/w.err"
	fail=1
else
	echo "windows --tid on per-cpu queues: refused"
fi
"$ptscope" perf dump --tid 100 "$tmp/two/perf.data" >"$tmp/d.out" 2>&1
if [ "$(grep -v '^#' "$tmp/d.out" | head -1)" != \
	"0000000000000000  psb" ] || grep -q '^# queue 1' "$tmp/d.out"; then
	echo "dump --tid 100: no PSB first, or queue 1's header:"
	cat "$tmp/d.out"
	fail=1
else
	echo "dump --tid 100: from the PSB, queue 0 only"
fi
exit $fail
