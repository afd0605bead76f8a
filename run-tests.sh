#!/usr/bin/env bash
# Runs the whole test suite, as CI does:
#   1. plain build with -Dwerror=true, every suite but 'slow';
#   2. the same under AddressSanitizer + UndefinedBehaviorSanitizer;
#   3. a time-boxed libFuzzer run of every fuzz target (clang).
# Ends with one line "N passed, N failed" (meson's own summary is not read).
#   PTS_FUZZ_SECONDS=N   seconds per fuzz target (default 30; 0 skips stage 3)
#   PTS_SLOW=1           also run the 'slow' suite in stage 1
#   PTS_OPEN=1           also run the 'open' suite in stage 1: tests of
#                        differences still open (they fail until settled)
set -u
cd "$(dirname "$0")"
bash ./setup.sh --deps-only || { echo "0 passed, 1 failed"; exit 1; }

passed=0 failed=0 skipped=0

count_log() { # adds a meson testlog.json to the totals
	read -r p f s < <(python3 - "$1" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line).get("result")
    if r in ("OK", "EXPECTEDFAIL"): p += 1
    elif r == "SKIP": s += 1
    else: f += 1
print(p, f, s)
PY
)
	passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

stage() { # stage NAME BUILDDIR MESON-TEST-ARGS -- MESON-SETUP-ARGS
	local name=$1 dir=$2 test_args=$3
	shift 3
	echo "=== $name"
	if [ -d "$dir" ]; then
		meson setup --reconfigure "$dir" "$@" >"$dir.setup.log" 2>&1
	else
		meson setup "$dir" "$@" >"$dir.setup.log" 2>&1
	fi || { cat "$dir.setup.log"; failed=$((failed + 1)); return; }
	if ! meson compile -C "$dir" >"$dir.compile.log" 2>&1; then
		grep -E "error|warning" "$dir.compile.log" | head -40
		failed=$((failed + 1))
		return
	fi
	rm -f "$dir/meson-logs/testlog.json"
	# shellcheck disable=SC2086
	meson test -C "$dir" --no-rebuild --print-errorlogs $test_args
	[ -f "$dir/meson-logs/testlog.json" ] && count_log "$dir/meson-logs/testlog.json"
}

plain_suites=""
[ "${PTS_SLOW:-0}" = 1 ] || plain_suites="--no-suite slow"
[ "${PTS_OPEN:-0}" = 1 ] || plain_suites="$plain_suites --no-suite open"
stage "plain build (-Dwerror=true)" build-test "$plain_suites" -Dwerror=true
stage "sanitizers (address, undefined)" build-test-asan \
	"--no-suite slow --no-suite open" \
	-Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false

# Install into a scratch root: every public header and the library land,
# and a program using only the installed headers compiles.
echo "=== install check"
dest=$(mktemp -d)
if meson install -C build-test --destdir "$dest" >build-test.install.log 2>&1 &&
	printf '#include <ptscope/packets.h>\n#include <ptscope/perfdata.h>\n#include <ptscope/topa.h>\n#include <ptscope/windows.h>\n#include <ptscope/model.h>\n#include <ptscope/decoder.h>\n#include <ptscope/coverage.h>\nint main(void) { return pts_strerror(0) == 0; }\n' |
	cc -std=c11 -Wall -Werror -I"$dest/usr/local/include" -x c - \
		-L"$dest/usr/local/lib/x86_64-linux-gnu" -lptscope -lcapstone -lelf -lxxhash -o "$dest/check"; then
	passed=$((passed + 1))
else
	failed=$((failed + 1))
	echo "install check failed (build-test.install.log)"
fi
rm -rf "$dest"

fuzz_seconds=${PTS_FUZZ_SECONDS:-30}
if [ "$fuzz_seconds" != 0 ] && [ -x tests/fuzz/run_fuzzers.sh ]; then
	echo "=== libFuzzer, ${fuzz_seconds}s per target"
	while read -r verdict target; do
		case $verdict in
		ok) passed=$((passed + 1)) ;;
		*) failed=$((failed + 1)); echo "fuzz target $target: $verdict" ;;
		esac
	done < <(bash tests/fuzz/run_fuzzers.sh "$fuzz_seconds" build-test-fuzz | grep -E '^(ok|crash|error) ')
fi

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
