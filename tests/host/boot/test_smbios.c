/* boot/smbios.c: entry points and type 11 strings against tables built here
 * from DSP0134 (QEMU's -smbios type=11 makes one structure per value), then
 * broken one way at a time; and the Base64 decoder against RFC 4648's
 * test vectors. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "boot/smbios.h"

static u8 tab[4096];
static size_t tlen;

/* A structure: type, formatted part of flen bytes (header included), strings. */
static void put(u8 type, size_t flen, const char *const *strs, size_t n)
{
	u8 *s = tab + tlen;

	memset(s, 0, flen);
	s[0] = type;
	s[1] = (u8)flen;
	s[2] = (u8)tlen;	/* handle */
	if (type == 11 && flen >= 5)
		s[4] = (u8)n;
	tlen += flen;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(strs[i]);

		memcpy(tab + tlen, strs[i], l + 1);
		tlen += l + 1;
	}
	if (!n)
		tab[tlen++] = 0;
	tab[tlen++] = 0;
}

static void start(void)
{
	static const char *const bios[] = { "EFI Development Kit II / OVMF", "0.0.0", "02/06/2015" };

	memset(tab, 0, sizeof tab);
	tlen = 0;
	put(0, 0x18, bios, 3);
	put(1, 0x1b, NULL, 0);
}

static struct boot_smbios collect(void)
{
	struct boot_smbios out;

	memset(&out, 0, sizeof out);
	smbios_collect(tab, tlen, &out);
	return out;
}

static void test_credentials_taken_in_order(void **state)
{
	static const char *const a[] = {
		"io.systemd.credential:vireo.cmdline=http=8080 ip=10.0.0.5/24",
		"io.systemd.credential:other.thing=x",		/* someone else's */
		"just an OEM string",
	};
	static const char *const b[] = {
		"io.systemd.credential.binary:vireo.cmdline=Z3c9MTAuMC4wLjE=",	/* gw=10.0.0.1 */
		"io.systemd.credential:vireo.hostname=v1",	/* vireo's, not read */
		"io.systemd.credential:vireo.cmdline.x=y",
	};
	struct boot_smbios out;

	start();
	put(11, 5, a, 3);
	put(11, 5, b, 3);
	put(127, 4, NULL, 0);
	out = collect();
	assert_int_equal(out.state, BOOT_SMBIOS_OK);
	assert_int_equal(out.strings, 6);
	assert_int_equal(out.used, 2);
	assert_string_equal(out.cmdline, "http=8080 ip=10.0.0.5/24 gw=10.0.0.1");
	assert_int_equal(out.other_vireo, 2);
	assert_string_equal(out.other_name, "vireo.hostname");
	assert_int_equal(out.refused, 0);
}

static void test_refused_values_leave_the_rest(void **state)
{
	static const char *const a[] = {
		"io.systemd.credential:vireo.cmdline=http=8080",
		"io.systemd.credential.binary:vireo.cmdline=not*base64",
		"io.systemd.credential.binary:vireo.cmdline=AQI=",	/* bytes 1, 2 */
		"io.systemd.credential:vireo.cmdline=\x01" "x",
		"io.systemd.credential:vireo.cmdline=echo=tcp",
	};
	struct boot_smbios out;

	start();
	put(11, 5, a, 5);
	out = collect();
	assert_string_equal(out.cmdline, "http=8080 echo=tcp");
	assert_int_equal(out.used, 2);
	assert_int_equal(out.refused, 3);
	assert_string_equal(out.refused_why, "not Base64");
}

static void test_length_bound(void **state)
{
	static char big[1100], exact[1100];
	const char *a[3];
	struct boot_smbios out;
	size_t pre = strlen("io.systemd.credential:vireo.cmdline=");

	/* 1023 bytes of value fit exactly; nothing more fits after them */
	memcpy(exact, "io.systemd.credential:vireo.cmdline=", pre);
	memset(exact + pre, 'a', 1023);
	exact[pre + 1023] = '\0';
	a[0] = exact;
	a[1] = "io.systemd.credential:vireo.cmdline=";	/* empty: needs the space */
	start();
	put(11, 5, a, 2);
	out = collect();
	assert_int_equal(strlen(out.cmdline), 1023);
	assert_int_equal(out.used, 1);
	assert_int_equal(out.refused, 1);
	assert_string_equal(out.refused_why, "longer than the command line's 1023 bytes");
	/* one byte over: refused whole */
	memcpy(big, exact, sizeof exact);
	big[pre + 1023] = 'a';
	big[pre + 1024] = '\0';
	a[0] = big;
	start();
	put(11, 5, a, 1);
	out = collect();
	assert_string_equal(out.cmdline, "");
	assert_int_equal(out.refused, 1);
}

static void test_count_and_damage(void **state)
{
	static const char *const a[] = { "io.systemd.credential:vireo.cmdline=a=1",
					 "io.systemd.credential:vireo.cmdline=b=2" };
	struct boot_smbios out;
	size_t at;

	/* Count says 1: the second string is not an OEM string. */
	start();
	at = tlen;
	put(11, 5, a, 2);
	tab[at + 4] = 1;
	out = collect();
	assert_string_equal(out.cmdline, "a=1");
	assert_int_equal(out.strings, 1);
	/* A formatted length under 4 */
	start();
	tab[1] = 3;
	out = collect();
	assert_int_equal(out.state, BOOT_SMBIOS_DAMAGED);
	assert_int_equal(out.strings, 0);
	/* A formatted length past the table */
	start();
	at = tlen;
	put(11, 5, a, 1);
	tab[at + 1] = 200;
	out = collect();
	assert_int_equal(out.state, BOOT_SMBIOS_DAMAGED);
	/* The last string unterminated: cut where the table ends */
	start();
	put(11, 5, a, 1);
	out = collect();
	assert_int_equal(out.state, BOOT_SMBIOS_OK);
	tlen -= 2;	/* its NUL and the set's */
	out = collect();
	assert_int_equal(out.state, BOOT_SMBIOS_DAMAGED);
	assert_int_equal(out.used, 0);
	/* Everything after type 127 is not read */
	start();
	put(127, 4, NULL, 0);
	put(11, 5, a, 1);
	out = collect();
	assert_int_equal(out.strings, 0);
	/* Every cut of a good table ends cleanly (ASan watches the reads). */
	start();
	put(11, 5, a, 2);
	put(127, 4, NULL, 0);
	for (size_t cut = 0; cut <= tlen; cut++) {
		size_t keep = tlen;

		tlen = cut;
		out = collect();
		tlen = keep;
		assert_true(out.used <= 2);
	}
}

static void put_ep3(u8 *ep, u32 len, u64 addr)
{
	u8 sum = 0;

	memset(ep, 0, 24);
	memcpy(ep, "_SM3_", 5);
	ep[6] = 24;
	ep[7] = 3;
	memcpy(ep + 12, &len, 4);
	memcpy(ep + 16, &addr, 8);
	for (int i = 0; i < 24; i++)
		sum += ep[i];
	ep[5] = (u8)-sum;
}

static void test_entry_points(void **state)
{
	u8 ep[64];
	u64 addr;
	u32 len;
	u8 sum;

	put_ep3(ep, 300, 0x7f000000);
	assert_int_equal(smbios_entry(ep, 24, &addr, &len), 0);
	assert_int_equal(addr, 0x7f000000);
	assert_int_equal(len, 300);
	assert_int_equal(smbios_entry(ep, 23, &addr, &len), -EINVAL);	/* not all there */
	ep[9] ^= 1;
	assert_int_equal(smbios_entry(ep, 24, &addr, &len), -EINVAL);	/* checksum */
	put_ep3(ep, 0x7fffffff, 0x1000);
	assert_int_equal(smbios_entry(ep, 24, &addr, &len), 0);
	assert_int_equal(len, SMBIOS_TABLE_MAX);
	put_ep3(ep, 100, 0);
	assert_int_equal(smbios_entry(ep, 24, &addr, &len), -EINVAL);
	/* 2.1: "_SM_", then "_DMI_" with its own checksum */
	memset(ep, 0, sizeof ep);
	memcpy(ep, "_SM_", 4);
	ep[5] = 31;
	memcpy(ep + 16, "_DMI_", 5);
	ep[22] = 0x40, ep[23] = 0x01;	/* 320 bytes */
	ep[24] = 0x00, ep[25] = 0x00, ep[26] = 0x0f, ep[27] = 0x00;	/* at 0xf0000 */
	sum = 0;
	for (int i = 16; i < 31; i++)
		sum += ep[i];
	ep[21] = (u8)-sum;
	sum = 0;
	for (int i = 0; i < 31; i++)
		sum += ep[i];
	ep[4] = (u8)-sum;
	assert_int_equal(smbios_entry(ep, 31, &addr, &len), 0);
	assert_int_equal(addr, 0xf0000);
	assert_int_equal(len, 320);
	ep[17] = 'X';
	assert_int_equal(smbios_entry(ep, 31, &addr, &len), -EINVAL);
	assert_int_equal(smbios_entry((const u8 *)"junk junk junk junk junk junk junk", 31, &addr, &len), -EINVAL);
}

static void b64(const char *in, const char *want)
{
	u8 out[64];
	int n = smbios_base64(in, strlen(in), out, sizeof out);

	assert_int_equal(n, (int)strlen(want));
	assert_memory_equal(out, want, strlen(want));
}

static void test_base64(void **state)
{
	u8 out[4];

	/* RFC 4648 section 10 */
	b64("", "");
	b64("Zg==", "f");
	b64("Zm8=", "fo");
	b64("Zm9v", "foo");
	b64("Zm9vYg==", "foob");
	b64("Zm9vYmE=", "fooba");
	b64("Zm9vYmFy", "foobar");
	b64("Zm9vYg", "foob");	/* padding optional */
	assert_int_equal(smbios_base64("Zm9vY", 5, out, sizeof out), -EINVAL);	/* a lone sixth of a byte */
	assert_int_equal(smbios_base64("Zh==", 4, out, sizeof out), -EINVAL);	/* bits left over */
	assert_int_equal(smbios_base64("Zm 9", 4, out, sizeof out), -EINVAL);
	assert_int_equal(smbios_base64("Zg=", 3, out, sizeof out), -EINVAL);	/* half the padding */
	assert_int_equal(smbios_base64("Zm9vYmFy", 8, out, 4), -EOVERFLOW);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_credentials_taken_in_order),
		cmocka_unit_test(test_refused_values_leave_the_rest),
		cmocka_unit_test(test_length_bound),
		cmocka_unit_test(test_count_and_damage),
		cmocka_unit_test(test_entry_points),
		cmocka_unit_test(test_base64),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
