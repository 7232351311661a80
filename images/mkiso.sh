#!/usr/bin/env bash
# mkiso.sh ESP OUT — a hybrid ISO 9660 image that boots under UEFI both as a
# CD/DVD and as a disk (USB stick, virtual disk), made with xorriso.
#
# The EFI system partition built for build/vireo-grub.img (GRUB + vireo +
# grub.cfg, FAT) is appended after the ISO 9660 file system and described
# twice: as El Torito's EFI boot image (what firmware reads from a CD) and as
# partition 2 of a GPT (what firmware reads from a disk). Both are the same
# bytes, so images/setcmdline.sh edits one grub.cfg for both ways of booting.
# The ISO 9660 tree itself only holds a README.
#
# Reproducible: xorriso takes every volume and file time, the volume UUID and
# the GPT GUIDs from SOURCE_DATE_EPOCH; -r records owner root and plain modes
# whatever the builder's user and umask; -no-pad drops the 300 KiB tail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=images/lib.sh
. "$here/lib.sh"
esp=$1 out=$2
mktmp

mkdir "$tmp/root"
cat >"$tmp/root/README.TXT" <<'EOF'
vireo: a tiny x86_64 kernel that boots as a UEFI application.

This ISO boots under UEFI only. The boot files are not in this file system:
they are in the EFI boot image (FAT), which is also partition 2 when the ISO
is written to a disk:
  EFI/BOOT/BOOTX64.EFI   GRUB
  EFI/vireo/vireo.efi    the kernel
  EFI/vireo/grub.cfg     GRUB's menu and the kernel command line
Serial console: COM1, 115200 8N1.
EOF
touch -d "@$SOURCE_DATE_EPOCH" "$tmp/root/README.TXT" "$tmp/root"

if ! xorriso -as mkisofs -o "$tmp/out.iso" \
	-V VIREO -r -J -no-pad \
	-append_partition 2 0xef "$esp" -appended_part_as_gpt \
	-e --interval:appended_partition_2:all:: -no-emul-boot \
	"$tmp/root" >"$tmp/log" 2>&1; then
	cat "$tmp/log" >&2
	exit 1
fi
mv "$tmp/out.iso" "$out"
report ISO "$out" "hybrid: El Torito EFI + GPT, ESP $(human "$(stat -c %s "$esp")")"
