#!/usr/bin/env bash
# Set-up in one command on a fresh Debian machine: installs what is missing,
# builds ptscope into ./build, and runs the main job on a bundled fixture.
#   ./setup.sh              everything
#   ./setup.sh --deps-only  only install the missing Debian packages
set -eu
cd "$(dirname "$0")"

packages="gcc meson ninja-build pkg-config python3 libipt-dev libcapstone-dev
libxxhash-dev libelf-dev libzstd-dev clang libclang-rt-14-dev"

missing=""
for p in $packages; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "setup: installing$missing"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi
[ "${1:-}" = "--deps-only" ] && exit 0

if [ -d build ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
meson compile -C build >/dev/null
echo "setup: built build/tools/ptscope"

# The main job: the enable windows of a bundled fixture, a synthesized trace of
# a program calling into a production SGX enclave (EEXIT and AEX exits), with
# the gaps explained and verified (fixtures/synth/enclave-production/recipe.sh).
echo "setup: ptscope windows --verify --config fixtures/main.cfg fixtures/main.pt"
./build/tools/ptscope windows --verify --config fixtures/main.cfg fixtures/main.pt
