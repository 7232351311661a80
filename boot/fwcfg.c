/* QEMU fw_cfg over I/O ports 0x510 (selector) / 0x511 (data), spec in QEMU's
 * docs/specs/fw_cfg.txt. Plain port I/O: no firmware call involved. */
#include "boot/fwcfg.h"
#include "lib/byteorder.h"
#include "kernel/arch/io.h"

#define FWCFG_PORT_SEL 0x510
#define FWCFG_PORT_DATA 0x511
#define FWCFG_SIGNATURE 0x0000
#define FWCFG_FILE_DIR 0x0019

static void fwcfg_select(u16 key)
{
	outw(FWCFG_PORT_SEL, key);
}

static void fwcfg_bytes(void *dst, u32 len)
{
	u8 *p = dst;

	while (len--)
		*p++ = inb(FWCFG_PORT_DATA);
}

static bool fwcfg_name_eq(const char *a, const char *b, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			return true;
	}
	return true;
}

int fwcfg_read_file(const char *name, char *buf, size_t size)
{
	u8 sig[4], hdr[4], ent[64];
	u32 count, i, fsize, take;
	u16 sel;

	fwcfg_select(FWCFG_SIGNATURE);
	fwcfg_bytes(sig, 4);
	if (sig[0] != 'Q' || sig[1] != 'E' || sig[2] != 'M' || sig[3] != 'U')
		return -ENOENT;

	fwcfg_select(FWCFG_FILE_DIR);
	fwcfg_bytes(hdr, 4);
	count = get_be32(hdr);
	if (count > 4096)	/* QEMU has a few dozen; anything more is nonsense */
		return -ENOENT;
	for (i = 0; i < count; i++) {
		fwcfg_bytes(ent, sizeof ent);	/* be32 size, be16 select, be16 rsvd, char name[56] */
		ent[63] = '\0';
		if (!fwcfg_name_eq((const char *)ent + 8, name, 56))
			continue;
		fsize = get_be32(ent);
		sel = get_be16(ent + 4);
		take = size ? (u32)MIN((u64)fsize, (u64)size - 1) : 0;
		fwcfg_select(sel);
		fwcfg_bytes(buf, take);
		if (size)
			buf[take] = '\0';
		return fsize > 0x7fffffff ? 0x7fffffff : (int)fsize;
	}
	return -ENOENT;
}
