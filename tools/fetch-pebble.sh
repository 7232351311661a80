#!/usr/bin/env bash
# fetch-pebble.sh [BUILD] [--path] — Debian forky's pebble (2.10, pinned
# below: RFC 9773 renewal information and certificate profiles, which
# Debian 12's 2.4 lacks) for tests/qemu/test_acme.py's ARI test, unpacked
# under BUILD/pebble-forky/ (never installed; BUILD defaults to "build").
# `--path` prints the binary's path (fetched or not). Idempotent: a
# verified .deb is kept and unpacked once.
#
# The fetch is lwIP's and mbedTLS's (net/debsrc.sh) for a binary package,
# as tools/qemu-current.sh fetches trixie's meson: a private apt
# configuration under BUILD/pebble-forky/apt reads only the mirror URI from
# this machine's apt sources (mirror_uri); apt checks forky's InRelease
# against the Debian archive keyring, the Packages index against it and the
# .deb against the index; this script checks the .deb against the SHA256
# pinned here. The binary is Go, linked only against libc (>= 2.34:
# Debian 12 has 2.36).
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
# shellcheck source=net/debsrc.sh
. "$here/../net/debsrc.sh"

deb=$top/dl/pebble_${PEBBLE_VERSION}_amd64.deb
stamp=$top/stamp
want="$PEBBLE_VERSION $PEBBLE_DEB_SHA256"
if [[ -x $bin && -f $stamp && "$(cat "$stamp")" == "$want" ]]; then
	exit 0
fi
deb_ok() { [[ -f $deb ]] && [[ "$(sha256sum "$deb" | cut -d' ' -f1)" == "$PEBBLE_DEB_SHA256" ]]; }
if ! deb_ok; then
	uri=${LWIP_DEBIAN_MIRROR:-$(mirror_uri)}
	[[ -n $uri ]] || die "no Debian archive entry for this release's main component in the apt sources; set LWIP_DEBIAN_MIRROR=<archive URI>"
	[[ -r $KEYRING ]] || die "$KEYRING missing; install the Debian package debian-archive-keyring"
	ab=$top/apt
	rm -rf "$top/dl"
	mkdir -p "$ab/lists/partial" "$ab/cache/archives/partial" "$ab/state" "$top/dl"
	: >"$ab/state/status"
	echo "deb [signed-by=$KEYRING] $uri forky main" >"$ab/sources.list"
	apt=(-o "Dir::Etc::sourcelist=$ab/sources.list" -o "Dir::Etc::sourceparts=-"
		-o "Dir::Etc::preferences=$ab/preferences" -o "Dir::Etc::preferencesparts=-"
		-o "Dir::Etc::trusted=$ab/trusted.gpg" -o "Dir::Etc::trustedparts=-"
		-o "Dir::State=$ab/state" -o "Dir::State::lists=$ab/lists"
		-o "Dir::State::status=$ab/state/status" -o "Dir::Cache=$ab/cache"
		-o "Acquire::Languages=none" -o "APT::Architecture=amd64" -o "APT::Architectures=amd64")
	say "apt-get download pebble=$PEBBLE_VERSION (forky main, binary index from $uri)"
	apt-get "${apt[@]}" -q=2 update --error-on=any >"$ab/update.log" 2>&1 ||
		{ sed 's/^/    /' "$ab/update.log" >&2; die "cannot fetch forky's binary index from $uri (offline?)"; }
	((EUID != 0)) || ! id -u _apt >/dev/null 2>&1 || chown _apt "$top/dl"
	(cd "$top/dl" && apt-get "${apt[@]}" -q=2 download "pebble=$PEBBLE_VERSION") >"$ab/download.log" 2>&1 || {
		sed 's/^/    /' "$ab/download.log" >&2
		now=$(apt-cache "${apt[@]}" show pebble 2>/dev/null | awk '/^Version:/ { print $2 }' | tr '\n' ' ')
		die "cannot download pebble $PEBBLE_VERSION from forky (it has: ${now:-nothing}); re-pin PEBBLE_VERSION and PEBBLE_DEB_SHA256 in tools/fetch-pebble.sh after reviewing"
	}
	((EUID != 0)) || chown -R "$(id -u):$(id -g)" "$top/dl"
	deb_ok || die "pebble_${PEBBLE_VERSION}_amd64.deb does not match the pinned SHA256; refusing to use it"
fi
rm -rf "${top:?}/usr" "$top/x.tmp"
dpkg-deb -x "$deb" "$top/x.tmp"
mv "$top/x.tmp/usr" "$top/usr"
rm -rf "$top/x.tmp"
[[ -x $bin ]] || die "the .deb has no usr/bin/pebble"
echo "$want" >"$stamp"
say "verified pebble_${PEBBLE_VERSION}_amd64.deb (SHA256 pinned), unpacked: $bin"
