/* Bounded scan of AML for the \_S5 package (see aml_s5.h). Every byte read
 * is checked against the end of the buffer or of the package, whichever
 * comes first; nothing the table says about a length is believed until it
 * has been checked against what is really there. */
#include "drivers/acpi/aml_s5.h"
#include "lib/byteorder.h"
#include "lib/string.h"

#define AML_ZERO_OP	0x00
#define AML_ONE_OP	0x01
#define AML_NAME_OP	0x08
#define AML_BYTE_PREFIX	0x0a
#define AML_WORD_PREFIX	0x0b
#define AML_DWORD_PREFIX 0x0c
#define AML_QWORD_PREFIX 0x0e
#define AML_PACKAGE_OP	0x12
#define AML_ROOT_CHAR	'\\'
#define AML_STRING_PREFIX 0x0d
#define AML_EXT_OP	0x5b
#define AML_OPREGION_OP	0x80	/* after AML_EXT_OP */
#define AML_SPACE_SYSMEM 0x00
#define AML_HID_STRING_PREFIX	0x0d	/* StringPrefix: NUL-terminated ASCII follows */
#define AML_RES_EXT_IRQ	0x89

/* PkgLength (ACPI 6.5 §20.2.4): the lead byte's bits 7-6 count the bytes
 * that follow (0-3). With none, bits 5-0 are the length; otherwise bits 3-0
 * are its low nibble, bits 5-4 must be zero, and each following byte adds
 * eight higher bits. The length counts the PkgLength bytes themselves. */
static int aml_pkg_length(const u8 *p, u32 avail, u32 *len, u32 *nbytes)
{
	u32 n, v, i;

	if (avail < 1)
		return -EBADMSG;
	n = p[0] >> 6;
	if (n == 0) {
		*len = p[0] & 0x3f;
		*nbytes = 1;
		return 0;
	}
	if ((p[0] & 0x30) || avail < n + 1)
		return -EBADMSG;
	v = p[0] & 0x0f;
	for (i = 1; i <= n; i++)
		v |= (u32)p[i] << (4 + 8 * (i - 1));
	*len = v;
	*nbytes = n + 1;
	return 0;
}

/* One ComputationalData integer constant; *used bytes taken. */
static int aml_data_int(const u8 *p, u32 avail, u64 *v, u32 *used)
{
	u32 size, i;

	if (avail < 1)
		return -EBADMSG;
	switch (p[0]) {
	case AML_ZERO_OP:
		*v = 0;
		*used = 1;
		return 0;
	case AML_ONE_OP:
		*v = 1;
		*used = 1;
		return 0;
	case AML_BYTE_PREFIX:
		size = 1;
		break;
	case AML_WORD_PREFIX:
		size = 2;
		break;
	case AML_DWORD_PREFIX:
		size = 4;
		break;
	case AML_QWORD_PREFIX:
		size = 8;
		break;
	default:
		return -EBADMSG;	/* OnesOp, a name, an expression: not a plain constant */
	}
	if (avail < 1 + size)
		return -EBADMSG;
	*v = 0;
	for (i = 0; i < size; i++)
		*v |= (u64)p[1 + i] << (8 * i);
	*used = 1 + size;
	return 0;
}

/* The package that starts at aml[pos] (the PackageOp), inside aml[0..len). */
static int aml_s5_package(const u8 *aml, u32 len, u32 pos, struct aml_s5 *out)
{
	u32 plen, nb, end, at, used, count;
	u64 a, b = 0;

	if (pos >= len || aml[pos] != AML_PACKAGE_OP)
		return -EBADMSG;
	at = pos + 1;
	if (aml_pkg_length(aml + at, len - at, &plen, &nb))
		return -EBADMSG;
	/* plen covers the PkgLength bytes and at least NumElements. */
	if (plen < nb + 1 || plen > len - at)
		return -EBADMSG;
	end = at + plen;
	at += nb;
	count = aml[at++];
	if (count == 0)
		return -EBADMSG;
	if (aml_data_int(aml + at, end - at, &a, &used))
		return -EBADMSG;
	at += used;
	if (count == 1) {
		b = (a >> 8) & 0xff;	/* ACPI 1.0: both types in one integer */
		a &= 0xff;
	} else if (aml_data_int(aml + at, end - at, &b, &used)) {
		return -EBADMSG;
	}
	if (a > 7 || b > 7)
		return -EBADMSG;	/* SLP_TYP is a 3-bit field */
	out->slp_typa = (u8)a;
	out->slp_typb = (u8)b;
	return 0;
}

int aml_find_s5(const u8 *aml, u32 len, struct aml_s5 *out)
{
	bool seen = false;
	u32 i;

	if (!aml || !out)
		return -EINVAL;
	if (len > AML_S5_MAX_LEN)
		return -E2BIG;
	for (i = 1; i + 4 <= len; i++) {
		if (aml[i] != '_' || aml[i + 1] != 'S' || aml[i + 2] != '5' || aml[i + 3] != '_')
			continue;
		/* Name(_S5_, ...) or Name(\_S5_, ...): a declaration, not a use. */
		if (aml[i - 1] != AML_NAME_OP &&
		    !(aml[i - 1] == AML_ROOT_CHAR && i >= 2 && aml[i - 2] == AML_NAME_OP))
			continue;
		seen = true;
		if (aml_s5_package(aml, len, i + 4, out) == 0)
			return 0;
	}
	return seen ? -EBADMSG : -ENOENT;
}

/* StringPrefix, 8 characters '0'..'Z', NUL: the shape of a _HID string. */
static bool aml_hid_like(const u8 *aml, u32 len, u32 i)
{
	u32 k;

	if (len - i < 10 || aml[i] != AML_HID_STRING_PREFIX || aml[i + 9] != 0)
		return false;
	for (k = 1; k <= 8; k++)
		if ((u8)(aml[i + k] - '0') > 'Z' - '0')
			return false;
	return true;
}

/* The Generic Event Device's _HID string at aml[i]. */
static bool aml_ged_hid_at(const u8 *aml, u32 len, u32 i)
{
	return aml_hid_like(aml, len, i) && !memcmp(aml + i + 1, "ACPI0013", 8);
}

/* The device whose _HID string starts at aml[i]. */
static int aml_ged_at(const u8 *aml, u32 len, u32 i, struct aml_ged *out)
{
	u32 j, end = len - i > AML_GED_SPAN ? i + AML_GED_SPAN : len, used;
	bool irq = false, reg = false;
	struct aml_ged g = { 0 };
	u64 off, rlen;

	for (j = i + 10; j < end && !(irq && reg) && !aml_ged_hid_at(aml, len, j); j++) {
		/* Extended Interrupt: 0x89, length (2 bytes) >= 6, flags,
		 * count >= 1, then 4-byte GSIs. */
		if (!irq && aml[j] == AML_RES_EXT_IRQ && end - j >= 9 && aml[j + 1] >= 6 && aml[j + 2] == 0 &&
		    aml[j + 4] >= 1) {
			g.gsi = (u32)aml[j + 5] | (u32)aml[j + 6] << 8 | (u32)aml[j + 7] << 16 | (u32)aml[j + 8] << 24;
			g.edge = aml[j + 3] & 0x02;
			g.active_low = aml[j + 3] & 0x04;
			irq = g.gsi >= 1 && g.gsi <= 255;
			j += 8;
		/* OperationRegion: ExtOpPrefix 0x80, NameSeg, RegionSpace,
		 * RegionOffset, RegionLen. */
		} else if (!reg && aml[j] == AML_EXT_OP && end - j >= 8 && aml[j + 1] == AML_OPREGION_OP &&
			   aml[j + 6] == AML_SPACE_SYSMEM) {
			u32 at = j + 7;

			if (aml_data_int(aml + at, end - at, &off, &used))
				continue;
			at += used;
			if (aml_data_int(aml + at, end - at, &rlen, &used))
				continue;
			if (rlen < 4 || rlen > 4096 || off >= (1ULL << 47) - rlen || (off & 3))
				continue;
			g.evt_addr = off;
			g.evt_len = (u32)rlen;
			reg = true;
			j = at + used - 1;
		}
	}
	if (!irq || !reg)
		return -EBADMSG;
	*out = g;
	return 0;
}

int aml_find_ged(const u8 *aml, u32 len, struct aml_ged *out)
{
	bool seen = false;
	u32 i;

	if (!aml || !out)
		return -EINVAL;
	if (len > AML_S5_MAX_LEN)
		return -E2BIG;
	for (i = 0; i < len; i++) {
		if (!aml_ged_hid_at(aml, len, i))
			continue;
		seen = true;
		if (aml_ged_at(aml, len, i, out) == 0)
			return 0;
	}
	return seen ? -EBADMSG : -ENOENT;
}

u32 aml_find_devices(const u8 *aml, u32 len, struct aml_dev *out, u32 max)
{
	struct aml_dev spare, *d;
	u32 i, j, end, n = 0;

	for (i = 0; i < len; i++) {
		if (!aml_hid_like(aml, len, i))
			continue;
		d = n < max ? &out[n] : &spare;	/* past max: scanned, not kept */
		n++;
		memset(d, 0, sizeof *d);
		memcpy(d->hid, aml + i + 1, 8);
		end = len - i > AML_DEV_SPAN ? i + AML_DEV_SPAN : len;
		for (j = i + 10; j < end && !(d->mem && d->irq) && !aml_hid_like(aml, len, j); j++) {
			/* Memory32Fixed: 0x86, length 9, info, base, length. */
			if (!d->mem && aml[j] == 0x86 && end - j >= 12 && aml[j + 1] == 9 && aml[j + 2] == 0) {
				d->base = get_le32(aml + j + 4);
				d->size = get_le32(aml + j + 8);
				d->mem = true;
				j += 11;
			/* Extended Interrupt: 0x89, length >= 6, flags, count >= 1, GSIs. */
			} else if (!d->irq && aml[j] == AML_RES_EXT_IRQ && end - j >= 9 && aml[j + 1] >= 6 &&
				   aml[j + 2] == 0 && aml[j + 4] >= 1) {
				d->gsi = get_le32(aml + j + 5);
				d->irq = true;
				j += 8;
			}
		}
	}
	return n;
}
