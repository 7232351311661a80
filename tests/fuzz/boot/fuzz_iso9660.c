/* libFuzzer target for boot/iso9660.c: the input is a volume from sector 16
 * on (input byte k is byte 16 * 2048 + k of the volume; sectors 0-15 and
 * anything past the input read as zeros), so a seed is the descriptors,
 * directories and files, without the empty system area. Mounts it, looks
 * up the paths the seed loader asks for (boot/seed.c) and a deep one, and
 * reads what is found into a buffer of the loader's cap.
 * Checks: no crash or over-read (ASan/UBSan); the read count stays within
 * the bounds iso9660.h states; a read never returns more than the cap. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/iso9660.h"

#define CAP 16384

static const uint8_t *in;
static size_t in_len;
static unsigned reads;

static int fuzz_read(void *ctx, u32 lba, u8 *buf)
{
	size_t off;

	(void)ctx;
	reads++;
	memset(buf, 0, ISO_SECTOR);
	if (lba < ISO_FIRST_VD)
		return 0;
	off = (size_t)(lba - ISO_FIRST_VD) * ISO_SECTOR;
	if (lba == 0xfffffff0u)
		return -EIO;	/* one sector that fails, for the error paths */
	if (off < in_len)
		memcpy(buf, in + off, in_len - off < ISO_SECTOR ? in_len - off : ISO_SECTOR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const paths[] = {
		"user-data", "meta-data", "network-config", "vendor-data",
		"openstack/latest/user_data", "openstack/latest/meta_data.json",
		"openstack/latest/network_data.json", "a/b/c/d", "a/b/c/d/e",
	};
	static u8 scratch[ISO_SECTOR];
	static u8 out[CAP];
	struct iso_vol v = { .read = fuzz_read, .buf = scratch };

	in = data;
	in_len = size;
	reads = 0;
	if (iso_mount(&v) != 0)
		return 0;
	if (reads > ISO_MAX_VDS + 1)
		abort();
	if (strlen(v.label) > 32)
		abort();
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		struct iso_file f;
		int n;

		reads = 0;
		if (iso_lookup(&v, paths[i], &f) != 0)
			continue;
		if (reads > ISO_MAX_DEPTH * (ISO_MAX_DIR_BYTES / ISO_SECTOR))
			abort();
		reads = 0;
		n = iso_read(&v, &f, out, CAP);
		if (n > CAP || reads > CAP / ISO_SECTOR + 1)
			abort();
	}
	return 0;
}
