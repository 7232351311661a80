#!/usr/bin/env bash
# mkimage.sh EFI OUT — a GPT raw disk whose only partition is an EFI system
# partition holding EFI/BOOT/BOOTX64.EFI. Made without root (mtools, sgdisk)
# and reproducibly: fixed GUIDs, volume id and timestamps (SOURCE_DATE_EPOCH).
set -euo pipefail
efi=$1 out=$2
: "${SOURCE_DATE_EPOCH:=0}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/vireo-img.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ESP: the payload plus room for FAT metadata, at least 2 MiB, whole MiB.
size=$(stat -c %s "$efi")
esp_mib=$(( (size + (1 << 20) - 1) / (1 << 20) + 1 ))
(( esp_mib < 2 )) && esp_mib=2
esp=$tmp/esp.img
mkfs.fat -C --invariant -n VIREO -i 56495245 "$esp" $((esp_mib * 1024)) >/dev/null
cp "$efi" "$tmp/BOOTX64.EFI"
touch -d "@$SOURCE_DATE_EPOCH" "$tmp/BOOTX64.EFI"
export MTOOLS_SKIP_CHECK=1 SOURCE_DATE_EPOCH
mmd -i "$esp" ::/EFI ::/EFI/BOOT
mcopy -m -i "$esp" "$tmp/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI

# Disk: 1 MiB for the protective MBR + GPT, the ESP, 1 MiB for the backup GPT.
disk=$tmp/disk.img
truncate -s $(( (esp_mib + 2) * 1024 * 1024 ))  "$disk"
sgdisk -o -U 76697265-6f00-4000-8000-000000000001 \
	-n 1:2048:$((2048 + esp_mib * 2048 - 1)) -t 1:EF00 -c 1:"EFI System" \
	-u 1:76697265-6f00-4000-8000-000000000002 "$disk" >/dev/null
dd if="$esp" of="$disk" bs=512 seek=2048 conv=notrunc status=none
mv "$disk" "$out"
echo "  IMAGE   $out ($(( (esp_mib + 2) )) MiB, ESP ${esp_mib} MiB)"
