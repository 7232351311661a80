/* Per-instance seeds: a NoCloud "cidata" volume or an OpenStack "config-2"
 * config drive, as ISO 9660 (boot/iso9660.c over the firmware's disk I/O)
 * or FAT (the firmware's file system), read before the firmware hands over.
 * What the kernel does with them: kernel/config.c, docs/appliance.md. */
#ifndef VIREO_SEED_H
#define VIREO_SEED_H

#include <efi.h>

#include "kernel/boot_info.h"

/* Looks at up to BOOT_SEED_MAX_DEVICES whole block devices (ISO 9660) and
 * file systems (FAT; not boot_dev's, the ESP vireo came from) for a volume
 * labelled cidata or config-2 (any case); reads the first one's user and
 * meta data into bi->seed (each within its cap, into pages of its own),
 * notes whether it holds network or vendor data, and counts the others.
 * Reads: one sector per block device, then the seed's directories and two
 * files (iso9660.h's bounds). */
void seed_load(EFI_BOOT_SERVICES *bs, EFI_HANDLE boot_dev, struct boot_info *bi);

#endif
