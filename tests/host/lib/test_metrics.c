/* lib/metrics.c: the Prometheus text writer (whole lines or nothing, escaped
 * label values, fixed-point samples) and the registry, the metrics_sources
 * linker set: in this test it holds the two sources below and nothing else. */
#define _GNU_SOURCE	/* memmem */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "lib/metrics.h"

static void w_test(struct metrics_buf *b)
{
	metrics_family(b, "t_total", METRICS_COUNTER, "Test.");
	metrics_sample1(b, "t_total", "k", "a\"b\\c\nd", 7);
	metrics_sample(b, "t_total", "x=\"1\",y=\"2\"", 18446744073709551615ull);
}

static unsigned other_calls;

static void w_other(struct metrics_buf *b)
{
	other_calls++;
	metrics_family(b, "u_seconds_total", METRICS_COUNTER, "Other.");
	metrics_sample_fixed(b, "u_seconds_total", NULL, 1234567, 6);
}

METRICS_SOURCE(test, w_test);
METRICS_SOURCE(other, w_other);

static const char want[] = "# HELP t_total Test.\n# TYPE t_total counter\n"
			   "t_total{k=\"a\\\"b\\\\c\\nd\"} 7\n"
			   "t_total{x=\"1\",y=\"2\"} 18446744073709551615\n";
static const char want_other[] = "# HELP u_seconds_total Other.\n# TYPE u_seconds_total counter\n"
				 "u_seconds_total 1.234567\n";

static void test_writer_lines(void **state)
{
	struct metrics_buf b;
	char buf[256];
	size_t cut;

	metrics_buf_init(&b, NULL, 0);
	w_test(&b);
	assert_int_equal(b.len, sizeof want - 1);
	metrics_buf_init(&b, buf, sizeof buf);
	w_test(&b);
	assert_false(b.overflow);
	assert_int_equal(b.len, sizeof want - 1);
	assert_memory_equal(buf, want, b.len);

	/* Every size: output is a prefix ending at a line boundary. */
	for (cut = 0; cut < sizeof want - 1; cut++) {
		metrics_buf_init(&b, buf, cut);
		w_test(&b);
		assert_true(b.overflow);
		assert_true(b.len <= cut);
		assert_memory_equal(buf, want, b.len);
		assert_true(b.len == 0 || buf[b.len - 1] == '\n');
	}
}

/* v / 10^d with d digits after the point, zero-padded; d capped at 9. */
static void test_fixed(void **state)
{
	static const struct {
		u64 v;
		unsigned d;
		const char *out;
	} cases[] = {
		{ 0, 6, "f 0.000000\n" },
		{ 1, 6, "f 0.000001\n" },
		{ 999999, 6, "f 0.999999\n" },
		{ 1000000, 6, "f 1.000000\n" },
		{ 1234567, 6, "f 1.234567\n" },
		{ 18446744073709551615ull, 6, "f 18446744073709.551615\n" },
		{ 42, 0, "f 42\n" },
		{ 5, 1, "f 0.5\n" },
		{ 1234567890123ull, 12, "f 1234.567890123\n" },	/* 12 digits asked, 9 given */
	};
	char buf[64];
	struct metrics_buf b;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		metrics_buf_init(&b, buf, sizeof buf);
		metrics_sample_fixed(&b, "f", NULL, cases[i].v, cases[i].d);
		assert_false(b.overflow);
		assert_int_equal(b.len, strlen(cases[i].out));
		assert_memory_equal(buf, cases[i].out, b.len);
	}
	metrics_buf_init(&b, buf, sizeof buf);
	metrics_sample_fixed(&b, "f", "q=\"rx\"", 250, 6);
	assert_int_equal(b.len, strlen("f{q=\"rx\"} 0.000250\n"));
	assert_memory_equal(buf, "f{q=\"rx\"} 0.000250\n", b.len);
}

/* The registry writes every source of the set once. */
static void test_registry(void **state)
{
	struct metrics_buf b;
	char buf[512];

	other_calls = 0;
	metrics_buf_init(&b, NULL, 0);
	metrics_write_all(&b);
	assert_int_equal(b.len, sizeof want - 1 + sizeof want_other - 1);
	assert_int_equal(other_calls, 1);
	metrics_buf_init(&b, buf, sizeof buf);
	metrics_write_all(&b);
	assert_false(b.overflow);
	assert_int_equal(other_calls, 2);
	assert_non_null(memmem(buf, b.len, want, sizeof want - 1));
	assert_non_null(memmem(buf, b.len, want_other, sizeof want_other - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer_lines),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_registry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
