#!/usr/bin/env bash
# tests/bench/peer/build.sh PEER... — every Linux peer of vireo's benchmarks,
# built in one place, one way. The base is the shared harness's busybox peer
# (BENCH_HARNESS/peer-linux/build.sh --no-uefi: Debian's kernel, busybox,
# the virtio-net modules, an initramfs), built once into BENCH_OUT; each PEER
# adds its Debian package's server on top: the binaries with every library
# ldd lists and the dynamic loader, its configuration, and a start script,
# packed as a second initramfs archive appended to the base's (the kernel
# unpacks both; the second's files win, /init included).
#
# A peer is one fragment, tests/bench/peer/PEER.sh (today: nsd, knot, redis, caddy,
# etcd, nginx-proxy, haproxy), that sets PEER_PKGS (Debian packages), PEER_BINS (files to copy with
# their libraries), optionally PEER_MODULES (kernel modules beyond the base's
# virtio-net set, e.g. virtio_blk and ext4 for a data disk: taken with their
# dependencies from the base's kernel, loaded by /init before /peer/start)
# and defines peer_install ROOT (configuration, directories, and
# ROOT/peer/start: what /init runs, and ROOT/peer/check: exits 0 once the
# server answers). Add a peer by adding a fragment.
#
# Outputs, per PEER: $BENCH_OUT/peer-PEER/vmlinuz, initrd.img, manifest.txt
# (BENCH_OUT defaults to build/bench). Boot with qemu -kernel vmlinuz -initrd
# initrd.img (a third archive with data may be appended: dns_bench.py adds
# its zone as /peer/data/) -append "console=ttyS0 bench.ip=A.B.C.D/N
# bench.gw=G": the console says "READY peer=PEER ..." once it serves.
# Needs root for apt-get (packages it installs: the base's, and each peer's;
# servers are kept from starting on the host by a policy-rc.d while apt runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
harness=${BENCH_HARNESS:-$root/../shared/bench}
harness=$(cd "$harness" && pwd) || { echo "peer: harness not found (BENCH_HARNESS)" >&2; exit 1; }
export BENCH_OUT=${BENCH_OUT:-$root/build/bench}
(($# > 0)) || { sed -n '2,26p' "$0"; exit 2; }
for p in "$@"; do
	[[ -r $here/$p.sh ]] || { echo "peer: no fragment $here/$p.sh (peers: $(cd "$here" && ls *.sh | grep -v build.sh | sed 's/\.sh$//' | tr '\n' ' '))" >&2; exit 2; }
done
log() { echo "[peer $(date +%H:%M:%S)] $*" >&2; }

have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
apt_install() {
	local missing=() p tmp_policy=0 policy=/usr/sbin/policy-rc.d
	for p in "$@"; do have "$p" || missing+=("$p"); done
	((${#missing[@]})) || return 0
	log "apt-get install ${missing[*]}"
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\n# temporary, tests/bench/peer/build.sh\nexit 101\n' >"$policy"
		chmod 0755 "$policy"
		tmp_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
		apt-get update -qq >/dev/null 2>&1
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	}
	((tmp_policy)) && rm -f "$policy"
	return 0
}

# ---- the base: the harness's busybox peer, without its UKI/ESP
mkdir -p "$BENCH_OUT"
base=$BENCH_OUT/peer-linux
if [[ ! -r $base/initrd.img || ! -r $base/vmlinuz ]]; then
	log "building the base (the harness's peer-linux: Debian's kernel and busybox; a few minutes)"
	"$harness/peer-linux/build.sh" --no-uefi >"$BENCH_OUT/peer-linux-build.log" 2>&1 ||
		{ tail -30 "$BENCH_OUT/peer-linux-build.log" >&2; exit 1; }
fi
apt_install cpio

# Copies file f and every library ldd lists for it (at the same paths) and
# its dynamic loader into root r.
copy_with_libs() {
	local r=$1 f=$2 lib
	mkdir -p "$r$(dirname "$f")"
	cp -L "$f" "$r$f"
	ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u |
		while read -r lib; do
			mkdir -p "$r$(dirname "$lib")"
			[[ -e $r$lib ]] || cp -L "$lib" "$r$lib"
		done
}

# Copies kernel module m and what it depends on (modules.dep of the base's
# kernel, dependencies first) into root r, unpacked, appending each name to
# r/etc/peer-modules.order; modules the base already loads or the kernel has
# built in are skipped.
declare -A MOD_SEEN=()
copy_module() {
	local r=$1 m=$2 kver moddir line path d name
	kver=$(cat "$base/kernel-version.txt")
	moddir=/lib/modules/$kver
	line=$(grep -E "/${m}\.ko(\.xz|\.zst|\.gz)?:" "$moddir/modules.dep" | head -1 || true)
	if [[ -z $line ]]; then
		grep -qE "/${m}\.ko" "$moddir/modules.builtin" && return 0
		echo "peer: module $m not in $moddir" >&2; return 1
	fi
	path=${line%%:*}
	[[ -n ${MOD_SEEN[$path]:-} ]] && return 0
	MOD_SEEN[$path]=1
	for d in ${line#*:}; do copy_module "$r" "$(basename "$d" | sed -E 's/\.ko(\.xz|\.zst|\.gz)?$//')"; done
	name=$(basename "$path")
	name=${name%.xz} name=${name%.zst} name=${name%.gz}
	grep -qx "$name" "$r/etc/base-modules.order" && return 0
	mkdir -p "$r/lib/modules"
	case $path in
	*.ko.xz) xz -dc "$moddir/$path" >"$r/lib/modules/$name" ;;
	*.ko.zst) zstd -qdc "$moddir/$path" >"$r/lib/modules/$name" ;;
	*.ko.gz) gzip -dc "$moddir/$path" >"$r/lib/modules/$name" ;;
	*) cp "$moddir/$path" "$r/lib/modules/$name" ;;
	esac
	echo "$name" >>"$r/etc/peer-modules.order"
}

for peer in "$@"; do
	out=$BENCH_OUT/peer-$peer
	rootfs=$out/rootfs
	log "building peer-$peer"
	rm -rf "$out"
	mkdir -p "$rootfs"/{peer/data,etc,run,tmp,var/lib}
	(
		PEER_PKGS=() PEER_BINS=() PEER_MODULES=()
		# shellcheck source=/dev/null
		. "$here/$peer.sh"
		apt_install "${PEER_PKGS[@]}"
		if ((${#PEER_MODULES[@]})); then
			gzip -dc "$base/initrd.img" | cpio -i --quiet --to-stdout etc/modules.order >"$rootfs/etc/base-modules.order" 2>/dev/null || true
			: >"$rootfs/etc/peer-modules.order"
			for m in "${PEER_MODULES[@]}"; do copy_module "$rootfs" "$m"; done
			rm -f "$rootfs/etc/base-modules.order"
		fi
		for b in "${PEER_BINS[@]}"; do
			[[ -x $b ]] || { echo "peer-$peer: $b missing after installing ${PEER_PKGS[*]}" >&2; exit 1; }
			copy_with_libs "$rootfs" "$b"
		done
		install -m 0755 "$here/init" "$rootfs/init"
		peer_install "$rootfs"
		[[ -x $rootfs/peer/start && -x $rootfs/peer/check ]] ||
			{ echo "peer-$peer: its fragment wrote no peer/start or peer/check" >&2; exit 1; }
		{
			echo "peer: $peer"
			for p in "${PEER_PKGS[@]}"; do dpkg-query -W -f='package: ${Package} ${Version}\n' "$p"; done
			echo "kernel: $(cat "$base/kernel-version.txt")"
			[[ -s $rootfs/etc/peer-modules.order ]] && echo "modules: $(tr '\n' ' ' <"$rootfs/etc/peer-modules.order")"
			echo "overlay files: $(cd "$rootfs" && find . -type f | wc -l), $(du -sb "$rootfs" | cut -f1) bytes"
		} >"$out/manifest.txt"
	)
	printf 'passwd: files\ngroup: files\nhosts: files\n' >"$rootfs/etc/nsswitch.conf"
	printf 'root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$rootfs/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$rootfs/etc/group"
	printf '127.0.0.1 localhost\n' >"$rootfs/etc/hosts"
	# The base's archive, then this peer's: /init and everything it adds.
	(cd "$rootfs" && find . -print0 | sort -z | cpio --null -o -H newc --owner=0:0 --quiet) | gzip -9 >"$out/overlay.img"
	cat "$base/initrd.img" "$out/overlay.img" >"$out/initrd.img"
	cp "$base/vmlinuz" "$out/vmlinuz"
	rm -rf "$rootfs" "$out/overlay.img"
	log "peer-$peer: $(stat -c %s "$out/initrd.img") bytes of initramfs; $(grep '^package' "$out/manifest.txt" | tr '\n' ' ')"
done
