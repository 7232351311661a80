/* A small, bounded ISO 9660 reader for the per-instance seeds (boot/seed.c):
 * a NoCloud "cidata" or OpenStack "config-2" volume as genisoimage,
 * cloud-localds and xorriso make them by default. Pure: sectors come from
 * the caller's read function, so it is host-tested and fuzzed
 * (tests/host/boot/test_iso9660.c, tests/fuzz/boot/fuzz_iso9660.c).
 *
 * Names are read the way Linux's iso9660 driver reads them by default:
 * Rock Ridge NM entries when the root says Rock Ridge is there (its "."
 * record holds SUSP's SP entry), else the Joliet tree when a Joliet
 * supplementary descriptor exists, else the plain names lowercased with
 * ";1" and a trailing "." removed. Not read: continuation areas (CE), so a
 * Rock Ridge name longer than its record is not found; multi-extent and
 * interleaved files (refused).
 *
 * Bounds, whatever the bytes say: at most ISO_MAX_VDS descriptor sectors,
 * directories of at most ISO_MAX_DIR_BYTES, paths of at most ISO_MAX_DEPTH
 * components, files read whole only up to the caller's cap; every extent
 * must lie inside the volume's size. Each call reads at most
 * ISO_MAX_VDS + ISO_MAX_DEPTH * ISO_MAX_DIR_BYTES / ISO_SECTOR sectors
 * (iso_mount, iso_lookup) or cap / ISO_SECTOR + 1 (iso_read).
 */
#ifndef VIREO_ISO9660_H
#define VIREO_ISO9660_H

#include "lib/types.h"

#define ISO_SECTOR 2048
#define ISO_FIRST_VD 16			/* the first volume descriptor's sector */
#define ISO_MAX_VDS 16			/* descriptors looked at before the terminator */
#define ISO_MAX_DIR_BYTES (64u * 1024)	/* a directory larger than this is refused */
#define ISO_MAX_DEPTH 4			/* components of a path */
#define ISO_NAME_MAX 64			/* a longer name never matches */

enum iso_names { ISO_NAMES_PLAIN, ISO_NAMES_ROCK_RIDGE, ISO_NAMES_JOLIET };

struct iso_vol {
	/* Reads sector lba (ISO_SECTOR bytes) into buf: 0, or negative. */
	int (*read)(void *ctx, u32 lba, u8 *buf);
	void *ctx;
	u8 *buf;		/* ISO_SECTOR bytes of the caller's, for every read */
	/* Set by iso_mount(): */
	u32 blocks;		/* the volume's size in sectors */
	u32 root_lba, root_len;	/* the root directory of the tree used */
	u8 names;		/* enum iso_names */
	u8 skip;		/* Rock Ridge: SUSP bytes skipped in each record (SP's LEN_SKP) */
	char label[33];		/* the primary descriptor's volume identifier, trailing blanks cut */
};

struct iso_file {
	u32 lba, len;
	bool dir;
};

/* Reads the volume descriptors: 0 with v's fields set, -EINVAL when the
 * volume is not ISO 9660 (no "CD001" primary descriptor, a block size other
 * than ISO_SECTOR), -EBADMSG when its descriptors are damaged, or the read
 * function's error. */
int iso_mount(struct iso_vol *v);

/* Looks up path ("openstack/latest/user_data": components separated by '/',
 * no leading one) from the root: 0 with *f set, -ENOENT, -EBADMSG (a
 * damaged directory or an extent outside the volume), -EOVERFLOW (a
 * directory over ISO_MAX_DIR_BYTES, a path over ISO_MAX_DEPTH components),
 * -ENOTSUP (a multi-extent or interleaved file), or a read error. */
int iso_lookup(struct iso_vol *v, const char *path, struct iso_file *f);

/* Reads file f whole into dst: its length, or -EOVERFLOW when it is longer
 * than cap (nothing read), -EINVAL for a directory, or a read error. */
int iso_read(struct iso_vol *v, const struct iso_file *f, u8 *dst, u32 cap);

#endif
