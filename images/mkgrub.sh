#!/usr/bin/env bash
# mkgrub.sh [--cmdline TEXT] [--esp OUT_ESP] VIREO_EFI GRUB_EFI OUT — the
# vireo disk with GRUB in front: a GPT disk whose ESP holds
#   EFI/BOOT/BOOTX64.EFI   GRUB (images/mkgrubefi.sh), the default boot path
#   EFI/vireo/vireo.efi    the kernel
#   EFI/vireo/grub.cfg     the menu: chainload vireo with TEXT (default none)
# --esp also keeps the bare FAT image (build/vireo.iso boots from it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=images/lib.sh
. "$here/lib.sh"
cmdline="" esp_out=""
while (($#)); do
	case $1 in
	--cmdline) cmdline=$2; shift 2 ;;
	--esp) esp_out=$2; shift 2 ;;
	*) break ;;
	esac
done
(($# == 3)) || { echo "usage: mkgrub.sh [--cmdline TEXT] [--esp OUT_ESP] VIREO_EFI GRUB_EFI OUT" >&2; exit 2; }
vireo=$1 grub=$2 out=$3
mktmp

grub_cfg "$cmdline" >"$tmp/grub.cfg"
mib=$(esp_mib "$grub" "$vireo" "$tmp/grub.cfg")
make_esp "$tmp/esp.img" "$mib" \
	"$grub=/EFI/BOOT/BOOTX64.EFI" \
	"$vireo=/EFI/vireo/vireo.efi" \
	"$tmp/grub.cfg=/EFI/vireo/grub.cfg"
make_disk "$tmp/esp.img" "$tmp/disk.img"
if [[ -n $esp_out ]]; then
	cp "$tmp/esp.img" "$esp_out"
	report ESP "$esp_out" "FAT, for the ISO"
fi
mv "$tmp/disk.img" "$out"
report IMAGE "$out" "ESP ${mib} MiB, GRUB + vireo, cmdline '${cmdline}'"
