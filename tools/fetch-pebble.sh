#!/usr/bin/env bash
# fetch-pebble.sh [BUILD] [--path] — Debian forky's pebble (2.10, pinned
# below: RFC 9773 renewal information and certificate profiles, which
# Debian 12's 2.4 lacks) for tests/qemu/test_acme.py's ARI test, unpacked
# under BUILD/pebble-forky/ (never installed; BUILD defaults to "build").
# `--path` prints the binary's path (fetched or not). Idempotent: a
# verified .deb is kept and unpacked once.
#
# The fetch is net/debsrc.sh's debbin_fetch (lwIP's and mbedTLS's fetch
# for a binary package; tools/qemu-current.sh fetches trixie's meson with
# it): a private apt configuration under BUILD/pebble-forky/apt reads only
# the mirror URI from this machine's apt sources (mirror_uri); apt checks
# forky's InRelease against the Debian archive keyring, the Packages index
# against it and the .deb against the index; debbin_fetch checks the .deb
# against the SHA256 pinned here. The binary is Go, linked only against
# libc (>= 2.34: Debian 12 has 2.36).
set -euo pipefail

PEBBLE_VERSION=2.10.0+ds1-2
PEBBLE_DEB_SHA256=b9a3a3920143f1a6fc568dfa88247be22cafa96c845fe62938c08982a15df315
KEYRING=${LWIP_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-build}
[[ $build == --path ]] && build=build
mkdir -p "$build"
top=$(cd "$build" && pwd)/pebble-forky
bin=$top/usr/bin/pebble
if [[ ${*: -1} == --path ]]; then
	echo "$bin"
	exit 0
fi

DEB_SAY="PEBBLE "
DEB_TOOL=fetch-pebble
DEB_MIRROR=${LWIP_DEBIAN_MIRROR:-}
DEB_MIRROR_VAR=LWIP_DEBIAN_MIRROR
DEB_PIN_WHERE="PEBBLE_VERSION and PEBBLE_DEB_SHA256 in tools/fetch-pebble.sh"
# shellcheck source=net/debsrc.sh
. "$here/../net/debsrc.sh"

deb=$top/dl/pebble_${PEBBLE_VERSION}_amd64.deb
stamp=$top/stamp
want="$PEBBLE_VERSION $PEBBLE_DEB_SHA256"
if [[ -x $bin && -f $stamp && "$(cat "$stamp")" == "$want" ]]; then
	exit 0
fi
if ! deb_sha_ok "$deb" "$PEBBLE_DEB_SHA256"; then
	debbin_fetch forky pebble "$PEBBLE_VERSION" "$PEBBLE_DEB_SHA256" "$deb" "$top/apt"
fi
rm -rf "${top:?}/usr" "$top/x.tmp"
dpkg-deb -x "$deb" "$top/x.tmp"
mv "$top/x.tmp/usr" "$top/usr"
rm -rf "$top/x.tmp"
[[ -x $bin ]] || die "the .deb has no usr/bin/pebble"
echo "$want" >"$stamp"
say "verified pebble_${PEBBLE_VERSION}_amd64.deb (SHA256 pinned), unpacked: $bin"
