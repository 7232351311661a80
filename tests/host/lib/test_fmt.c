/* lib/fmt.c against the host C library's vsnprintf, including every
 * truncation size, plus the few places where vireo chooses differently. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "lib/fmt.h"

static unsigned ncompared;
static bool sparse_sizes;	/* the big matrix checks a few sizes, not all */

/* Hides a value from gcc's format checker, which would flag what we test. */
static const char *opaque(const char *s)
{
	__asm__("" : "+r"(s));
	return s;
}

/* Formats with both implementations and compares the return value and the
 * bytes for a large buffer and for every size 0..len+2, checking that
 * nothing past size is written. */
static void check_one(const char *fmt, ...)
{
	char want[512], got[520];
	va_list ap, aq;
	int wn, gn;

	va_start(ap, fmt);
	va_copy(aq, ap);
	wn = vsnprintf(want, sizeof want, fmt, aq);
	va_end(aq);
	assert_true(wn >= 0 && wn < (int)sizeof want);

	for (size_t size = 0; size <= (size_t)wn + 2; size++) {
		if (sparse_sizes && size > 2 && size + 2 < (size_t)wn && size != (size_t)wn / 2)
			continue;
		memset(got, 0x5a, sizeof got);
		va_copy(aq, ap);
		gn = kvsnprintf(size ? got : NULL, size, fmt, aq);
		va_end(aq);
		if (gn != wn)
			fail_msg("fmt \"%s\" size %zu: returned %d, libc %d", fmt, size, gn, wn);
		if (size) {
			size_t keep = (size_t)wn < size - 1 ? (size_t)wn : size - 1;

			if (memcmp(got, want, keep) != 0 || got[keep] != '\0')
				fail_msg("fmt \"%s\" size %zu: got \"%.*s\", libc \"%s\"",
					 fmt, size, (int)keep, got, want);
		}
		for (size_t i = size; i < sizeof got; i++)
			if ((unsigned char)got[i] != 0x5a)
				fail_msg("fmt \"%s\" size %zu: wrote byte %zu", fmt, size, i);
	}
	va_end(ap);
	ncompared++;
}

static void test_literals_and_percent(void **state)
{
	check_one("");
	check_one("hello, world");
	check_one("100%% sure");
	check_one("%%%%");
	check_one("a%cb", 'x');
	check_one("[%5c][%-5c]", 'y', 'z');
}

static void test_signed_edges(void **state)
{
	check_one("%d %d %d", 0, -1, 1);
	check_one("%d %d", INT32_MIN, INT32_MAX);
	check_one("%lld %lld", (long long)INT64_MIN, (long long)INT64_MAX);
	check_one("%ld %li", (long)INT64_MIN, (long)INT64_MAX);
	check_one("%jd %zd %td", (intmax_t)INT64_MIN, (size_t)12345, (ptrdiff_t)-77);
	check_one("%hhd %hhd %hhd", 127, 128, -129);
	check_one("%hd %hd %hd", 32767, 32768, -32769);
	check_one("%+d % d %+d % d", 5, 5, -5, -5);
	check_one("%+ d % +d", 5, 5);	/* '+' wins over ' ' */
	check_one("%030lld|%-30lld|%+30lld", (long long)INT64_MIN, (long long)INT64_MIN,
		  (long long)INT64_MAX);
}

static void test_unsigned_edges(void **state)
{
	check_one("%u %u", 0u, UINT32_MAX);
	check_one("%llu %llx %llX %llo", (unsigned long long)UINT64_MAX, (unsigned long long)UINT64_MAX,
		  (unsigned long long)UINT64_MAX, (unsigned long long)UINT64_MAX);
	check_one("%hhu %hhx %hu %hx", 511u, 511u, 0x1ffffu, 0x1ffffu);
	check_one("%zu %zx %ju %tx", (size_t)SIZE_MAX, (size_t)0xdeadbeef, (uintmax_t)42, (ptrdiff_t)255);
	check_one("%#x %#X %#o %#o %#x", 0xabcu, 0xabcu, 8u, 0u, 0u);
	check_one("%#.0o %.0o %.0x %#.0x %.0u %.0d", 0u, 0u, 0u, 0u, 0u, 0);
	check_one("%#.5o %#5o %#-8x| %#010x %#.6x %#12.6x", 8u, 8u, 255u, 255u, 255u, 255u);
}

static void test_strings(void **state)
{
	const char unterminated[3] = { 'a', 'b', 'c' };

	check_one("[%s][%10s][%-10s][%.2s][%10.2s][%-10.2s][%.0s]", "hey", "hey", "hey", "hey", "hey",
		  "hey", "hey");
	check_one("[%.3s]", unterminated);	/* precision bounds the read */
	check_one("[%*s][%-*s][%.*s][%*.*s]", 6, "ab", 6, "ab", 1, "ab", -6, 1, "ab");
	check_one("[%.*s]", -1, "negative precision means none");
}

static void test_star_width_and_precision(void **state)
{
	check_one("[%*d][%*d][%-*d]", 8, 42, -8, 42, 8, 42);
	check_one("[%.*d][%.*d][%*.*d]", 5, 42, -5, 42, 10, 4, -42);
	check_one("[%0*d][%0*.*d]", 8, -42, 8, 3, -42);
	check_one("[%*x][%-*.*llx]", 20, 0xbeefu, 20, 18, (unsigned long long)1);
}

static void test_pointer(void **state)
{
	int x;
	char buf[64], want[64];

	/* glibc prints non-NULL pointers as %#lx does. */
	check_one("%p", (void *)&x);
	check_one("[%24p][%-24p]", (void *)&x, (void *)&x);
	check_one("%p", (void *)(uintptr_t)0xffffffffffffffffull);

	/* NULL: vireo keeps the 0x form where glibc prints "(nil)". */
	assert_int_equal(ksnprintf(buf, sizeof buf, "%p", (void *)0), 3);
	assert_string_equal(buf, "0x0");
	snprintf(want, sizeof want, "%#lx", (unsigned long)(uintptr_t)&x);
	ksnprintf(buf, sizeof buf, "%p", (void *)&x);
	assert_string_equal(buf, want);
}

static void test_null_string_and_unknown(void **state)
{
	char buf[64];
	const char *nul = opaque(NULL);
	char fmt[16];

	assert_int_equal(ksnprintf(buf, sizeof buf, "%s", nul), 6);
	assert_string_equal(buf, "(null)");
	assert_int_equal(ksnprintf(buf, sizeof buf, "[%8s]", nul), 10);
	assert_string_equal(buf, "[  (null)]");
	assert_int_equal(ksnprintf(buf, sizeof buf, "[%.3s]", nul), 5);
	assert_string_equal(buf, "[(nu]");

	/* Unknown conversions come out as written; they consume no argument.
	 * The formats are built at run time to keep -Wformat quiet. */
	strcpy(fmt, "a%yb%d");
	assert_int_equal(ksnprintf(buf, sizeof buf, fmt, 7), 5);
	assert_string_equal(buf, "a%yb7");
	strcpy(fmt, "%-08k|");
	assert_int_equal(ksnprintf(buf, sizeof buf, fmt), 6);
	assert_string_equal(buf, "%-08k|");
	strcpy(fmt, "%n");	/* no writing through pointers */
	assert_int_equal(ksnprintf(buf, sizeof buf, fmt), 2);
	assert_string_equal(buf, "%n");
	strcpy(fmt, "tail%");
	assert_int_equal(ksnprintf(buf, sizeof buf, fmt), 5);
	assert_string_equal(buf, "tail%");
	strcpy(fmt, "tail%-5l");
	assert_int_equal(ksnprintf(buf, sizeof buf, fmt), 8);
	assert_string_equal(buf, "tail%-5l");
}

static void test_char_nul(void **state)
{
	char buf[8];

	memset(buf, 'q', sizeof buf);
	assert_int_equal(ksnprintf(buf, sizeof buf, "a%cb", 0), 3);
	assert_memory_equal(buf, "a\0b", 4);
}

static void test_huge_width_counts_without_writing(void **state)
{
	char buf[8];

	memset(buf, 'q', sizeof buf);
	assert_int_equal(ksnprintf(buf, 4, "%100000000d", 7), 100000000);
	assert_memory_equal(buf, "   \0qqqq", 8);
	assert_int_equal(ksnprintf(NULL, 0, opaque("%*d%*d"), 0x7fffffff, 1, 0x7fffffff, 2), -1);
}

/* A product of flags, widths, precisions, lengths and values, all compared
 * with libc. Combinations the C standard leaves undefined ('#' with d/u,
 * '0' with c/s) are skipped. */
static void test_generated_matrix(void **state)
{
	static const char *flagsets[] = { "", "-", "0", "+", " ", "#", "-0", "+0", " 0", "#0", "-#",
					  "+-", "0#+ -" };
	static const char *widths[] = { "", "1", "5", "21", "*" };
	static const char *precs[] = { "", ".", ".0", ".1", ".4", ".25", ".*" };
	static const char *lens[] = { "hh", "h", "", "l", "ll", "z", "j", "t" };
	static const char convs[] = "diuxXo";
	static const long long vals[] = { 0, 1, -1, 7, 42, -42, 127, 128, -128, 255, 256, 32767, -32768,
					  65535, 2147483647LL, -2147483647LL - 1, 4294967295LL,
					  4294967296LL, INT64_MAX, INT64_MIN, 0x123456789abcdefLL };
	char fmt[32];

	sparse_sizes = true;
	for (size_t c = 0; convs[c]; c++)
		for (size_t f = 0; f < sizeof flagsets / sizeof flagsets[0]; f++) {
			bool is_signed = convs[c] == 'd' || convs[c] == 'i';

			if (strchr(flagsets[f], '#') && (is_signed || convs[c] == 'u'))
				continue;
			for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++)
				for (size_t p = 0; p < sizeof precs / sizeof precs[0]; p++)
					for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
						for (size_t v = 0; v < sizeof vals / sizeof vals[0]; v++) {
							long long x = vals[v];
							const char *ln = lens[l];

							snprintf(fmt, sizeof fmt, "<%%%s%s%s%s%c>", flagsets[f],
								 widths[w], precs[p], ln, convs[c]);
							/* Pass the argument with the type the length names. */
							if (!strcmp(ln, "ll") || !strcmp(ln, "j"))
								check_one(fmt, 11, 3, x);
							else if (!strcmp(ln, "l") || !strcmp(ln, "z") ||
								 !strcmp(ln, "t"))
								check_one(fmt, 11, 3, (long)x);
							else
								check_one(fmt, 11, 3, (int)x);
						}
		}
	sparse_sizes = false;
}

/* Truncated '*' arguments must not shift the rest: widths before values. */
static void test_star_consumes_in_order(void **state)
{
	check_one("%*.*s|%d|%*c", 7, 2, "abcdef", 99, -3, 'z');
}

static void test_counted(void **state)
{
	assert_true(ncompared > 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_literals_and_percent),
		cmocka_unit_test(test_signed_edges),
		cmocka_unit_test(test_unsigned_edges),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_star_width_and_precision),
		cmocka_unit_test(test_pointer),
		cmocka_unit_test(test_null_string_and_unknown),
		cmocka_unit_test(test_char_nul),
		cmocka_unit_test(test_huge_width_counts_without_writing),
		cmocka_unit_test(test_generated_matrix),
		cmocka_unit_test(test_star_consumes_in_order),
		cmocka_unit_test(test_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
