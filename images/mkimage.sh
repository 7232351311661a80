#!/usr/bin/env bash
# mkimage.sh EFI OUT [CFG] — a GPT raw disk whose only partition is an EFI system
# partition holding EFI/BOOT/BOOTX64.EFI (vireo itself, no boot loader) and,
# given CFG, that file as EFI/vireo/vireo.cfg (make CFG=). Made
# without root and reproducibly (images/lib.sh). The firmware's default boot
# path runs vireo; its command line can then only come from fw_cfg (QEMU) —
# build/vireo-grub.img is the image whose command line lives on the disk.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=images/lib.sh
. "$here/lib.sh"
efi=$1 out=$2 cfg=${3:-}
mktmp

mib=$(esp_mib "$efi")
make_esp "$tmp/esp.img" "$mib" "$efi=/EFI/BOOT/BOOTX64.EFI" ${cfg:+"$cfg=/EFI/vireo/vireo.cfg"}
make_disk "$tmp/esp.img" "$tmp/disk.img"
mv "$tmp/disk.img" "$out"
report IMAGE "$out" "ESP ${mib} MiB"
