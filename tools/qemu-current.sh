#!/usr/bin/env bash
# qemu-current.sh [--path] — build a current QEMU (10.0, from Debian trixie's
# source package, pinned below) for x86_64-softmmu only, cached outside the
# clone so every later run and every worktree reuses it. `make qemu-current`.
#
#   tools/qemu-current.sh          fetch, verify, configure, build (idempotent)
#   tools/qemu-current.sh --path   print the binary's path (built or not)
#
# Cache: $VIREO_QEMU_CACHE if set, else $XDG_CACHE_HOME/vireo (~/.cache/vireo);
# the tree lives in qemu-10.0-<hash>/, the hash covering the pinned .dsc, the
# meson pin and the configure options, so changing any of them builds afresh
# next to the old one. The fetch and its trust chain are net/debsrc.sh's (the
# same as lwIP's and mbedTLS's): a private apt configuration that reads only
# the mirror from this machine's apt sources, the Release signature checked
# against the Debian archive keyring, the .dsc checked against the pin below
# and the tarballs against the .dsc.
#
# Meson: QEMU 10.0 needs meson >= 1.5; Debian 12 has 1.0.1 and Debian's +ds
# tarball drops QEMU's bundled wheels. trixie's meson package (pure Python,
# architecture "all") is fetched with the same private apt configuration from
# trixie's binary index (signed Release -> Packages hashes -> the .deb), its
# SHA256 pinned below, unpacked with dpkg-deb under the cache (never
# installed) and put on PYTHONPATH, where QEMU's configure finds it as the
# system's meson, as Debian's own build of this package does.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/.." && pwd)

QEMU_VERSION=1:10.0.13+ds-0+deb13u1
QEMU_DSC_SHA256=a426c892e5369058c3423816c8625bc8010bb5a58ece57261f62b64ee4d765ad
MESON_VERSION=1.7.0-1
MESON_DEB_SHA256=e92d04e60e784336883d537755d09b7dcb856809fa318a0931df3898e84ded95

# The fewest features that boot vireo: x86_64 system emulation with TCG,
# user networking (slirp) for the tests' hostfwd, no display, no tools, no
# docs. Firmware (SeaBIOS, option ROMs) comes from Debian 12's packages, which
# Debian's +ds tarball does not ship prebuilt; OVMF is passed by the tests.
CONFIGURE=(
	--target-list=x86_64-softmmu
	--without-default-features
	--enable-tcg
	--enable-slirp
	--enable-fdt=system
	--disable-docs
	--disable-werror
	--disable-tools
	--disable-install-blobs
	--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu
)

cache=${VIREO_QEMU_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vireo}
hash=$( { echo "$QEMU_VERSION $QEMU_DSC_SHA256 $MESON_VERSION $MESON_DEB_SHA256"
	printf '%s\n' "${CONFIGURE[@]}"; } | sha256sum | cut -c1-12)
dir=$cache/qemu-10.0-$hash
bin=$dir/obj/qemu-system-x86_64

if [[ ${1:-} == --path ]]; then
	echo "$bin"
	exit 0
fi

# say, die and debbin_fetch (meson, below) are net/debsrc.sh's; the source
# fetch runs in a subshell (fetch, below), because debsrc_run sets its
# variables globally.
DEB_SAY="QEMU10 "
DEB_TOOL=qemu-current
DEB_MIRROR=${LWIP_DEBIAN_MIRROR:-}
DEB_MIRROR_VAR=LWIP_DEBIAN_MIRROR
DEB_PIN_WHERE="the versions and SHA256 pins in tools/qemu-current.sh"
KEYRING=${LWIP_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
# shellcheck source=net/debsrc.sh
. "$top/net/debsrc.sh"

if [[ -x $bin && -f $dir/built && "$(cat "$dir/built")" == "$hash" ]]; then
	say "up to date: $bin"
	exit 0
fi

for p in libglib2.0-dev libpixman-1-dev libslirp-dev libfdt-dev zlib1g-dev flex bison \
	ninja-build python3-venv pkgconf; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		die "missing Debian package $p: run tools/deps.sh qemu-current"
done
mkdir -p "$dir"
# One build per cache directory at a time (two worktrees may ask at once):
# the second waits, then finds it built.
exec 9>"$dir/lock"
flock 9
if [[ -x $bin && -f $dir/built && "$(cat "$dir/built")" == "$hash" ]]; then
	say "up to date: $bin"
	exit 0
fi

# The fetch's apt state is $dir/apt (one fetch at a time: the lock above).
# A subshell, because debsrc_run sets its variables globally.
fetch() { # SOURCE VERSION SHA256 TREE CHECK...
	(
		DEB_SOURCE=$1 DEB_VERSION=$2 DEB_DSC_SHA256=$3 DEB_TREE=$4
		shift 4
		DEB_SUITE=trixie
		DEB_DIR=$DEB_SOURCE-src
		DEB_CHECK=("$@")
		DEB_PATCHDIR=
		DEB_LABEL=$DEB_SOURCE
		debsrc_run "$dir"
	)
}
fetch qemu "$QEMU_VERSION" "$QEMU_DSC_SHA256" qemu configure meson.build hw/virtio/virtio.c
src=$dir/qemu-src/qemu

# meson from trixie's binary index; the private apt state is $dir/apt-bin.
meson_deb=$dir/meson-deb/meson_${MESON_VERSION}_all.deb
if ! deb_sha_ok "$meson_deb" "$MESON_DEB_SHA256"; then
	debbin_fetch trixie meson "$MESON_VERSION" "$MESON_DEB_SHA256" "$meson_deb" "$dir/apt-bin"
	rm -rf "$dir/meson"
fi
if [[ ! -d $dir/meson/usr/lib/python3/dist-packages/mesonbuild ]]; then
	dpkg-deb -x "$meson_deb" "$dir/meson.tmp" && mv "$dir/meson.tmp" "$dir/meson"
fi
say "verified meson_${MESON_VERSION}_all.deb (SHA256 pinned)"
export PYTHONPATH=$dir/meson/usr/lib/python3/dist-packages${PYTHONPATH:+:$PYTHONPATH}
export PATH=$dir/meson/usr/bin:$PATH

if [[ ! -f $dir/obj/build.ninja || ! -f $dir/configured || "$(cat "$dir/configured")" != "$hash" ]]; then
	rm -rf "$dir/obj" "$dir/configured"
	mkdir -p "$dir/obj"
	say "configure ${CONFIGURE[*]}"
	(cd "$dir/obj" && nice -n 19 "$src/configure" "${CONFIGURE[@]}") >"$dir/configure.log" 2>&1 ||
		{ tail -n 40 "$dir/configure.log" | sed 's/^/    /' >&2; die "configure failed; log: $dir/configure.log"; }
	echo "$hash" >"$dir/configured"
fi

jobs=${QEMU_JOBS:-2}
say "build (nice -n 19, -j$jobs; log: $dir/build.log)"
start=$(date +%s)
if ! (cd "$dir/obj" && nice -n 19 ninja -j"$jobs" qemu-system-x86_64) >"$dir/build.log" 2>&1; then
	tail -n 40 "$dir/build.log" | sed 's/^/    /' >&2
	die "build failed; log: $dir/build.log"
fi
"$bin" --version | head -n1 | sed 's/^/  QEMU10  /'
echo "$hash" >"$dir/built"
say "built in $(($(date +%s) - start)) s: $bin"
