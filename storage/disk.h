/* Which disk holds the store, and opening it (storage/disk.c). The data
 * disk is the virtio-blk disk whose serial store= names (QEMU:
 * -drive ...,serial=vireo-data): vireo never writes a disk it was not
 * given, and formats only a disk whose superblock area is blank. */
#ifndef VIREO_STORAGE_DISK_H
#define VIREO_STORAGE_DISK_H

#include "storage/store.h"

/* Finds the data disk (waiting up to DISK_WAIT_MS for the disks' serials)
 * and opens the store on it; done(s, err, arg) from the loop once: s and 0
 * (ready or read-only: s->state), or NULL and -ENODEV (no such disk, or
 * store=off), or s and the open's error (logged); never from inside this
 * call. Returns 0, or -EALREADY on a second call. */
#define DISK_WAIT_MS 3000u
int disk_store_open(void (*done)(struct store *s, int err, void *arg), void *arg);

#endif
