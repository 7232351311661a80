/* SMBIOS entry points and type 11 strings (DMTF DSP0134: 5.2 entry points,
 * 6.1 structures, 7.12 OEM strings), for the systemd credential convention
 * (boot/smbios.h). Every offset comes from firmware or the VMM and is
 * checked against the bytes given before it is used. */
#include "boot/smbios.h"
#include "lib/parse.h"
#include "lib/byteorder.h"
#include "lib/string.h"

#define SMBIOS_TYPE_OEM_STRINGS 11
#define SMBIOS_TYPE_END 127

static bool smbios_sum_zero(const u8 *p, size_t n)
{
	u8 sum = 0;

	while (n--)
		sum += *p++;
	return sum == 0;
}

int smbios_entry(const u8 *ep, size_t avail, u64 *addr, u32 *len)
{
	u32 n;

	if (avail >= 24 && !memcmp(ep, "_SM3_", 5)) {
		n = ep[6];
		if (n < 24 || n > avail || !smbios_sum_zero(ep, n))
			return -EINVAL;
		*len = get_le32(ep + 12);	/* the table's maximum size */
		*addr = get_le64(ep + 16);
	} else if (avail >= 31 && !memcmp(ep, "_SM_", 4)) {
		n = ep[5];
		if (n < 31 || n > avail || !smbios_sum_zero(ep, n) || memcmp(ep + 16, "_DMI_", 5) ||
		    !smbios_sum_zero(ep + 16, 15))
			return -EINVAL;
		*len = get_le16(ep + 22);
		*addr = get_le32(ep + 24);
	} else {
		return -EINVAL;
	}
	if (*len > SMBIOS_TABLE_MAX)
		*len = SMBIOS_TABLE_MAX;
	return *addr && *len ? 0 : -EINVAL;
}

int smbios_base64(const char *in, size_t n, u8 *out, size_t room)
{
	size_t o = 0, i, pad = 0;
	u32 acc = 0;
	int bits = 0;

	while (n && in[n - 1] == '=' && pad < 2) {
		n--;
		pad++;
	}
	if (n % 4 == 1 || (pad && (n + pad) % 4))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		int v = parse_b64digit(in[i], '+', '/');

		if (v < 0)
			return -EINVAL;
		acc = acc << 6 | (u32)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o == room)
				return -EOVERFLOW;
			out[o++] = (u8)(acc >> bits);
		}
	}
	if (acc & ((1u << bits) - 1))
		return -EINVAL;	/* bits left over that are not zero: not canonical */
	return (int)o;
}

static void smbios_copy(char *dst, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < len && i < n - 1; i++)
		dst[i] = s[i] >= 0x20 && s[i] <= 0x7e ? s[i] : '?';
	dst[i] = '\0';
}

static void smbios_refuse(struct boot_smbios *out, const char *why)
{
	if (!out->refused++)
		smbios_copy(out->refused_why, sizeof out->refused_why, why, strlen(why));
}

/* One type 11 string, s[n] (no NUL within). */
static void smbios_string(struct boot_smbios *out, const char *s, size_t n)
{
	static const char cred[] = SMBIOS_CRED, bin[] = SMBIOS_CRED_BINARY, name[] = SMBIOS_CRED_NAME "=";
	size_t at = strlen(out->cmdline), pre, i, len, sep, room;
	bool binary;
	char *dst;

	out->strings++;
	if (n > sizeof cred - 1 && !memcmp(s, cred, sizeof cred - 1)) {
		pre = sizeof cred - 1;
		binary = false;
	} else if (n > sizeof bin - 1 && !memcmp(s, bin, sizeof bin - 1)) {
		pre = sizeof bin - 1;
		binary = true;
	} else {
		return;	/* not a credential: counted, ignored */
	}
	s += pre;
	n -= pre;
	if (n < 6 || memcmp(s, "vireo.", 6))
		return;	/* someone else's credential */
	if (n < sizeof name - 1 || memcmp(s, name, sizeof name - 1)) {
		if (!out->other_vireo++) {
			for (len = 0; len < n && s[len] != '='; len++)
				;
			smbios_copy(out->other_name, sizeof out->other_name, s, len);
		}
		return;
	}
	s += sizeof name - 1;
	n -= sizeof name - 1;
	/* Appended, after a space, to what earlier strings gave: whole or not
	 * at all, with room for the NUL. */
	sep = at ? 1 : 0;
	if (at + sep >= sizeof out->cmdline - 1) {
		smbios_refuse(out, "longer than the command line's 1023 bytes");
		return;
	}
	room = sizeof out->cmdline - 1 - at - sep;
	dst = out->cmdline + at + sep;
	if (binary) {
		int got = smbios_base64(s, n, (u8 *)dst, room);

		if (got < 0) {
			out->cmdline[at] = '\0';
			smbios_refuse(out, got == -EOVERFLOW ? "longer than the command line's 1023 bytes"
							     : "not Base64");
			return;
		}
		len = (size_t)got;
	} else {
		if (n > room) {
			smbios_refuse(out, "longer than the command line's 1023 bytes");
			return;
		}
		memcpy(dst, s, n);
		len = n;
	}
	for (i = 0; i < len; i++) {
		if ((dst[i] < 0x20 && dst[i] != '\t') || dst[i] > 0x7e) {
			out->cmdline[at] = '\0';
			smbios_refuse(out, "not printable ASCII");
			return;
		}
	}
	if (sep)
		out->cmdline[at] = ' ';
	dst[len] = '\0';
	out->used++;
}

void smbios_collect(const u8 *table, size_t len, struct boot_smbios *out)
{
	size_t off = 0;

	out->state = BOOT_SMBIOS_OK;
	/* Each structure: a formatted part (its length at byte 1, at least
	 * the 4-byte header), then its strings, each NUL-terminated, then one
	 * more NUL (two NULs when it has none). Each structure moves the walk
	 * at least 6 bytes on, so it ends within len / 6 of them. */
	while (off + 4 <= len) {
		const u8 *st = table + off;
		size_t flen = st[1], p = off + flen, count, k = 0;

		if (flen < 4 || p + 2 > len) {
			out->state = BOOT_SMBIOS_DAMAGED;
			return;
		}
		count = st[0] == SMBIOS_TYPE_OEM_STRINGS && flen >= 5 ? st[4] : 0;
		if (!table[p] && !table[p + 1]) {
			p += 2;	/* no strings */
		} else {
			for (;;) {
				size_t n = 0;

				while (p + n < len && table[p + n])
					n++;
				if (p + n + 1 >= len) {	/* its NUL, and the byte after it */
					out->state = BOOT_SMBIOS_DAMAGED;
					return;
				}
				if (++k <= count)
					smbios_string(out, (const char *)table + p, n);
				p += n + 1;
				if (!table[p]) {
					p++;	/* the set's closing NUL */
					break;
				}
			}
		}
		if (st[0] == SMBIOS_TYPE_END)
			return;
		off = p;
	}
}
