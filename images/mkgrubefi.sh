#!/usr/bin/env bash
# mkgrubefi.sh OUT — GRUB for x86_64 UEFI as one PE file, from Debian's
# grub-efi-amd64-bin: only the modules vireo's menu uses, built in (nothing is
# loaded from disk), and images/grub-early.cfg embedded to find the menu.
#
# GRUB starts with $root set to the device it was loaded from (the ESP of a
# disk, the El Torito image of the ISO) and prefix /EFI/vireo on it, so normal
# mode reads EFI/vireo/grub.cfg beside vireo.efi. grub-early.cfg keeps that
# device when it has the menu and otherwise searches every disk for it (GRUB
# chainloaded from another ESP). It runs under GRUB's rescue parser: one
# command a line, no comments, no if/fi.
# grub-mkimage output is reproducible (fixed PE timestamp, no memdisk; unlike
# grub-mkstandalone, whose memdisk tar carries the build time).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=images/lib.sh
. "$here/lib.sh"
out=$1
moddir=/usr/lib/grub/x86_64-efi
[[ -d $moddir ]] || { echo "mkgrubefi.sh: $moddir missing (apt-get install grub-efi-amd64-bin)" >&2; exit 1; }

# Disks and filesystems: GPT/MBR partitions, FAT ESPs, ISO 9660 for the CD.
# Menu: normal mode and its script language, search to find the ESP, serial
# for the console, chain to start vireo, reboot/halt for a menu of last resort.
modules=(part_gpt part_msdos fat iso9660
	normal configfile test echo search search_fs_file
	serial terminal terminfo
	chain sleep reboot halt)
grub-mkimage -d "$moddir" -O x86_64-efi -p /EFI/vireo -c "$here/grub-early.cfg" \
	-o "$out" "${modules[@]}"
report GRUB "$out" "${#modules[@]} modules built in"
