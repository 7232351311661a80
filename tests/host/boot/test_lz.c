/* boot/lz.c, the compressed image's decoder, and tools/zpack.c's encoder:
 * streams written by hand from the format (boot/lz.h) decode to what they
 * say; every malformed one is refused without a read or write outside the
 * two buffers (ASan); the encoder's output decodes to its input for data
 * like an image's (code-like repeats, runs of zeros, random bytes). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "boot/lz.h"

u8 *zpack_compress(const u8 *in, size_t n, size_t *len);

/* Decodes into a heap buffer of exactly cap bytes, so ASan sees a write
 * one past it. */
static int dec(const u8 *src, size_t n, u8 *want, size_t cap)
{
	u8 *dst = malloc(cap ? cap : 1), *in = malloc(n ? n : 1);
	int r;

	memcpy(in, src, n);	/* likewise a read past the input */
	r = lz_decode(dst, cap, in, n);
	if (r == 0 && want)
		assert_memory_equal(dst, want, cap);
	free(dst);
	free(in);
	return r;
}

static void test_literals_only(void **state)
{
	const u8 s[] = { 0x30, 'a', 'b', 'c' };

	assert_int_equal(dec(s, sizeof s, (u8 *)"abc", 3), 0);
	assert_int_equal(dec((const u8 *)"\0", 1, NULL, 0), 0);
	assert_int_equal(dec((const u8 *)"", 0, NULL, 0), -1);	/* no end token */
}

static void test_overlapping_match_repeats(void **state)
{
	/* "ab", then 8 bytes from 2 back (overlapping), then "z". */
	const u8 s[] = { 0x24, 'a', 'b', 2, 0, 0x10, 'z' };

	assert_int_equal(dec(s, sizeof s, (u8 *)"ababababab" "z", 11), 0);
}

static void test_long_lengths_continue(void **state)
{
	/* 15 + 255 + 10 = 280 literals, then a match of 4 + 15 + 255 + 1 = 275
	 * from 1 back (a run), then a literals-only end. */
	u8 s[1 + 2 + 280 + 2 + 2 + 1], want[280 + 275];
	size_t k = 0;

	s[k++] = 0xff;
	s[k++] = 255;
	s[k++] = 10;
	for (int i = 0; i < 280; i++)
		s[k++] = want[i] = (u8)(i * 7);
	s[k++] = 1;
	s[k++] = 0;
	s[k++] = 255;
	s[k++] = 1;
	s[k++] = 0x00;
	memset(want + 280, want[279], 275);
	assert_int_equal(k, sizeof s);
	assert_int_equal(dec(s, sizeof s, want, sizeof want), 0);
}

static void test_malformed_refused(void **state)
{
	const u8 dist0[] = { 0x10, 'a', 0, 0 };			/* distance 0 */
	const u8 before[] = { 0x10, 'a', 2, 0 };		/* before the start */
	const u8 cut_lit[] = { 0x30, 'a', 'b' };		/* 3 literals, 2 there */
	const u8 cut_dist[] = { 0x10, 'a', 1 };			/* half a distance */
	const u8 cut_more[] = { 0xf0 };				/* continuation missing */
	const u8 cut_mlen[] = { 0x1f, 'a', 1, 0 };		/* match continuation missing */
	const u8 long_match[] = { 0x1f, 'a', 1, 0, 255, 255, 255, 255, 255, 255, 255, 255, 0 };
	const u8 end_match[] = { 0x11, 'a' };			/* ends where a match should be */
	const u8 no_end[] = { 0x10, 'a', 1, 0 };		/* ends after a match: no end token */

	assert_int_equal(dec(dist0, sizeof dist0, NULL, 8), -1);
	assert_int_equal(dec(before, sizeof before, NULL, 8), -1);
	assert_int_equal(dec(cut_lit, sizeof cut_lit, NULL, 8), -1);
	assert_int_equal(dec(cut_dist, sizeof cut_dist, NULL, 8), -1);
	assert_int_equal(dec(cut_more, sizeof cut_more, NULL, 300), -1);
	assert_int_equal(dec(cut_mlen, sizeof cut_mlen, NULL, 300), -1);
	/* Longer than the output: refused before a byte is written past it
	 * (the length's continuation is bounded by the output too). */
	assert_int_equal(dec(long_match, sizeof long_match, NULL, 1000), -1);
	assert_int_equal(dec(end_match, sizeof end_match, NULL, 1), -1);
	assert_int_equal(dec(no_end, sizeof no_end, NULL, 5), -1);
	/* Right stream, wrong size either way. */
	assert_int_equal(dec((const u8 *)"\x30" "abc", 4, NULL, 2), -1);
	assert_int_equal(dec((const u8 *)"\x30" "abc", 4, NULL, 4), -1);
}

/* Every prefix of a good stream, and every one-byte change of it, is
 * refused or decodes within bounds: never a crash (ASan, UBSan). */
static void test_damaged_streams_stay_in_bounds(void **state)
{
	u8 in[4096], *z, *bad;
	size_t zn;

	for (size_t i = 0; i < sizeof in; i++)
		in[i] = (u8)(i % 61 < 30 ? i % 7 : i * 13);
	z = zpack_compress(in, sizeof in, &zn);
	assert_int_equal(dec(z, zn, in, sizeof in), 0);
	for (size_t n = 0; n < zn; n++)
		assert_int_equal(dec(z, n, NULL, sizeof in), -1);
	bad = malloc(zn);
	for (size_t at = 0; at < zn; at++) {
		memcpy(bad, z, zn);
		bad[at] ^= 0x5a;
		(void)dec(bad, zn, NULL, sizeof in);
	}
	free(bad);
	free(z);
}

static void roundtrip(const u8 *in, size_t n, size_t max_out)
{
	size_t zn;
	u8 *z = zpack_compress(in, n, &zn);

	assert_int_equal(dec(z, zn, (u8 *)in, n), 0);
	assert_true(zn <= max_out);
	free(z);
}

static void test_encoder_roundtrips(void **state)
{
	size_t n = 300000;
	u8 *buf = malloc(n);
	u32 x = 12345;

	/* Random: incompressible, the stream at most n + n/255 + a few. */
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (u8)(x >> 24);
	}
	roundtrip(buf, n, n + n / 255 + 16);
	/* Zeros: a run, far under 1% of the input. */
	memset(buf, 0, n);
	roundtrip(buf, n, n / 100);
	/* Code-like: a few hundred byte patterns repeated at distances near
	 * and past the 64 KiB window, with random edits. */
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		buf[i] = (x >> 28) == 0 ? (u8)(x >> 16) : (u8)((i % 509) * 3 + (i / 70000));
	}
	roundtrip(buf, n, n / 2);
	/* Short inputs, under a match's length. */
	for (size_t k = 0; k < 6; k++)
		roundtrip((const u8 *)"abcab", k, k + 2);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literals_only),
		cmocka_unit_test(test_overlapping_match_repeats),
		cmocka_unit_test(test_long_lengths_continue),
		cmocka_unit_test(test_malformed_refused),
		cmocka_unit_test(test_damaged_streams_stay_in_bounds),
		cmocka_unit_test(test_encoder_roundtrips),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
