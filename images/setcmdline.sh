#!/usr/bin/env bash
# setcmdline.sh [--timeout SECONDS] IMAGE "CMDLINE" — change the kernel command
# line stored in a built vireo image, without rebuilding it and without root.
#
# The command line lives in GRUB's menu, EFI/vireo/grub.cfg on the image's
# EFI system partition: the first entry's `chainloader /EFI/vireo/vireo.efi
# CMDLINE`, which GRUB hands to vireo as its EFI LoadOptions. The file is
# edited in place with mtools. An empty CMDLINE leaves the entry without
# options (vireo's defaults, or fw_cfg's under QEMU). --timeout also sets how
# long GRUB shows its menu (default in built images: 0).
#
# Works on: build/vireo-grub.img and other GRUB raw disks, build/vireo.iso (its
# El Torito image is the GPT's EFI partition, edited in place, so both the
# CD and the disk boot see it), the fixed VHD, and — by converting through a
# temporary raw disk with images/mkcloud.sh — the qcow2, the VMDK and the GCE
# tarball. Signed images keep their signatures: grub.cfg is not signed.
#
# build/vireo.img has no GRUB: the firmware starts vireo directly and passes
# no options, and vireo (by design) reads nothing else from the disk. Its
# command line can only come from QEMU's fw_cfg (images/qemu.sh --cmdline) or
# an EFI boot entry's optional data (efibootmgr --unicode on the target,
# images/bootentry.py for QEMU). This tool says so rather than pretend.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The edited file (and a rebuilt tarball) is dated now unless told otherwise.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
# shellcheck source=images/lib.sh
. "$here/lib.sh"
timeout=""
while (($#)); do
	case $1 in
	--timeout) timeout=$2; shift 2 ;;
	-h | --help) sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	*) break ;;
	esac
done
(($# == 2)) || { echo "usage: setcmdline.sh [--timeout SECONDS] IMAGE \"CMDLINE\"" >&2; exit 2; }
image=$1 cmdline=$2
[[ -f $image ]] || { echo "setcmdline.sh: $image: no such file" >&2; exit 1; }
[[ -z $timeout || $timeout =~ ^[0-9]+$ ]] || { echo "setcmdline.sh: --timeout wants whole seconds" >&2; exit 2; }
check_cmdline "$cmdline"
word=""
[[ -n $cmdline ]] && word=" $(grub_quote "$cmdline")"
mktmp

# esp_at DISK: byte offset of the first EFI system partition (type EF00).
esp_at() {
	local n
	n=$(sgdisk -p "$1" 2>/dev/null | awk '$6 == "EF00" { print $1; exit }')
	[[ -n $n ]] || return 1
	echo $(($(sgdisk -i "$n" "$1" | sed -n 's/^First sector: \([0-9]*\) .*/\1/p') * 512))
}

# edit_raw DISK: rewrite grub.cfg inside a raw disk (or a fixed VHD, whose
# data is a raw disk followed by a footer).
edit_raw() {
	local disk=$1 off cfg=$tmp/grub.cfg
	if ! off=$(esp_at "$disk"); then
		echo "setcmdline.sh: $image has no EFI system partition in a GPT" >&2
		exit 1
	fi
	if ! mtype -i "$disk@@$off" ::/EFI/vireo/grub.cfg >"$cfg" 2>/dev/null; then
		cat >&2 <<EOF
setcmdline.sh: $image boots vireo directly (no GRUB, no EFI/vireo/grub.cfg),
so there is nowhere on it to keep a command line: the firmware starts
EFI/BOOT/BOOTX64.EFI without options, and vireo reads none from the disk.
Use the GRUB image instead (build/vireo-grub.img, or the ISO/cloud files made
from it), or pass the command line from outside:
  QEMU fw_cfg:     images/qemu.sh --image $image --cmdline "$cmdline"
  EFI boot entry:  efibootmgr --create --disk DEV --part 1 \\
                     --loader '\\EFI\\BOOT\\BOOTX64.EFI' --unicode '$cmdline'
                   on the target; for QEMU, the same entry in a copy of OVMF's
                   variables: images/bootentry.py /usr/share/OVMF/OVMF_VARS_4M.fd \\
                     vars.fd $image '$cmdline' && images/qemu.sh --image $image --vars vars.fd
EOF
		exit 3
	fi
	if ! grep -q '# vireo-cmdline$' "$cfg"; then
		echo "setcmdline.sh: $image: grub.cfg has no line marked '# vireo-cmdline' (edited by hand?)" >&2
		exit 1
	fi
	# The marked line is rebuilt, keeping its indent. The new text reaches awk
	# through the environment, as data (-v and sub() would interpret \ and &).
	WORD=$word awk '/# vireo-cmdline$/ {
			match($0, /^[ \t]*/)
			print substr($0, 1, RLENGTH) "chainloader /EFI/vireo/vireo.efi" ENVIRON["WORD"] " # vireo-cmdline"
			next
		}
		{ print }' "$cfg" >"$cfg.new"
	if [[ -n $timeout ]]; then
		sed -i "s/^set timeout=.*/set timeout=$timeout/" "$cfg.new"
	fi
	touch -d "@$SOURCE_DATE_EPOCH" "$cfg.new"
	mcopy -o -m -i "$disk@@$off" "$cfg.new" ::/EFI/vireo/grub.cfg
	echo "  CMDLINE $image: chainloader /EFI/vireo/vireo.efi${word}${timeout:+ (timeout $timeout)}"
}

magic=$(head -c 4 "$image" | od -An -tx1 | tr -d ' \n')
case $magic in
514649fb) # qcow2
	qemu-img convert -f qcow2 -O raw "$image" "$tmp/disk.raw"
	edit_raw "$tmp/disk.raw"
	"$here/mkcloud.sh" qcow2 "$tmp/disk.raw" "$image" >/dev/null
	;;
4b444d56) # VMDK
	qemu-img convert -f vmdk -O raw "$image" "$tmp/disk.raw"
	edit_raw "$tmp/disk.raw"
	"$here/mkcloud.sh" aws "$tmp/disk.raw" "$image" >/dev/null
	;;
1f8b*) # the GCE tarball
	tar -xzf "$image" -C "$tmp" disk.raw
	edit_raw "$tmp/disk.raw"
	"$here/mkcloud.sh" gce "$tmp/disk.raw" "$image" >/dev/null
	;;
636f6e65) # "conectix" at the start: a dynamic VHD (mkcloud.sh makes fixed ones)
	echo "setcmdline.sh: $image is a dynamic VHD; convert it to raw, edit that, convert back" >&2
	exit 1
	;;
*) # raw disk, hybrid ISO, or fixed VHD (a raw disk with a footer after it)
	edit_raw "$image"
	;;
esac
