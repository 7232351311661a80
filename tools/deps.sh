#!/usr/bin/env bash
# deps.sh run|test|deploy|browsers|qemu-current — install the Debian packages a target needs, if missing.
# Only Debian packages through apt; nothing else is downloaded.
set -euo pipefail
what=${1:-test}
build=(make gcc binutils gnu-efi mtools dosfstools gdisk python3 procps media-types brotli)
run=(qemu-system-x86 ovmf dpkg-dev gpgv debian-archive-keyring)
test=(libcmocka-dev clang libclang-rt-14-dev python3-pytest grub-efi-amd64-bin xorriso qemu-utils sbsigntool openssl
	curl iputils-ping iproute2 wrk python3-scapy apache2-utils tcpdump ethtool chrony testssl.sh
	haproxy dnsmasq-base dnsutils knot-dnsutils dnsperf nsd python3-dnspython prometheus cloud-image-utils
	genisoimage nginx-light pebble)
# make test-deploy: libvirt as Debian 12 ships it (tests/deploy/)
deploy=(libvirt-daemon-system libvirt-clients virtinst)
# make test-browsers: the browsers (~300 MB with their libraries) and what the
# test site is made with: vpxenc (its WebM), woff2_compress and DejaVu (its
# font), PIL (reads Firefox's screenshot); tests/browsers/
browsers=(chromium firefox-esr vpx-tools woff2 fonts-dejavu-core python3-pil)
# make qemu-current: what QEMU 10.0's x86_64-softmmu build needs (meson
# comes from trixie, fetched by tools/qemu-current.sh: Debian 12's is too old)
qemu_current=(gcc make ninja-build pkgconf python3-venv flex bison libglib2.0-dev libpixman-1-dev
	libslirp-dev libfdt-dev zlib1g-dev dpkg-dev debian-archive-keyring)
case $what in
qemu-current) want=("${qemu_current[@]}") ;;
run) want=("${build[@]}" "${run[@]}") ;;
test) want=("${build[@]}" "${run[@]}" "${test[@]}") ;;
deploy) want=("${build[@]}" "${run[@]}" "${test[@]}" "${deploy[@]}") ;;
browsers) want=("${build[@]}" "${run[@]}" "${test[@]}" "${browsers[@]}") ;;
*) echo "deps.sh: unknown set '$what'" >&2; exit 2 ;;
esac
missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
((${#missing[@]} == 0)) && exit 0
echo "deps: installing ${missing[*]}"
sudo=""
((EUID == 0)) || sudo=sudo
$sudo apt-get update -qq
# Servers installed only for tests (nsd, haproxy) must not start on the host:
# a temporary policy-rc.d tells apt's maintainer scripts so (where no other
# policy is in place).
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\n# temporary, vireo tools/deps.sh\nexit 101\n' | $sudo tee $policy >/dev/null
	$sudo chmod 0755 $policy
	trap '$sudo rm -f $policy' EXIT
fi
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps: done"
