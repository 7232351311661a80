/* net/clients/mdhttp.c: the metadata client's request and its response reader,
 * against well-formed, hostile and dripped responses. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "net/clients/mdhttp.h"

static char buf[MDHTTP_BUF];

/* Feeds s in pieces of step bytes; returns the result after eof if still
 * MORE and eof is asked for. */
static int feed(struct mdhttp *h, const char *s, size_t len, size_t step, bool eof)
{
	int r = MDHTTP_MORE;

	mdhttp_init(h, buf, sizeof buf);
	for (size_t o = 0; o < len; o += step) {
		r = mdhttp_feed(h, s + o, len - o < step ? len - o : step);
		if (r != MDHTTP_MORE)
			break;
	}
	return r == MDHTTP_MORE && eof ? mdhttp_eof(h) : r;
}

static int feeds(struct mdhttp *h, const char *s, bool eof)
{
	return feed(h, s, strlen(s), strlen(s) ? strlen(s) : 1, eof);
}

static void body_is(struct mdhttp *h, const char *want)
{
	const char *b;
	size_t n;

	mdhttp_body(h, &b, &n);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(b, want, n);
}

static void test_ok_with_length(void **state)
{
	static const char r[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length:  10 \r\n\r\n"
				"http=8080\nEXTRA-IGNORED";
	struct mdhttp h;

	/* whole, and dripped a byte at a time: the same answer */
	for (size_t step = 1; step <= sizeof r; step += (step < 8 ? 1 : 29)) {
		assert_int_equal(feed(&h, r, sizeof r - 1, step, false), MDHTTP_DONE);
		assert_int_equal(h.status, 200);
		body_is(&h, "http=8080\n");
	}
	/* feeding after DONE changes nothing */
	assert_int_equal(mdhttp_feed(&h, "xyz", 3), MDHTTP_DONE);
	body_is(&h, "http=8080\n");
	assert_int_equal(mdhttp_eof(&h), MDHTTP_DONE);
}

static void test_ok_until_close(void **state)
{
	struct mdhttp h;

	assert_int_equal(feeds(&h, "HTTP/1.0 404 Not Found\r\n\r\nnope", false), MDHTTP_MORE);
	assert_int_equal(mdhttp_eof(&h), MDHTTP_DONE);
	assert_int_equal(h.status, 404);
	body_is(&h, "nope");
	assert_int_equal(feeds(&h, "HTTP/1.1 204\r\nContent-Length: 0\r\n\r\n", false), MDHTTP_DONE);
	body_is(&h, "");
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\n\r\n", true), MDHTTP_DONE);
	body_is(&h, "");
}

static void test_truncated(void **state)
{
	struct mdhttp h;

	assert_int_equal(feeds(&h, "", true), MDHTTP_E_TRUNCATED);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n", true), MDHTTP_E_TRUNCATED);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", true), MDHTTP_E_TRUNCATED);
	assert_string_equal(mdhttp_strerror(MDHTTP_E_TRUNCATED), "connection closed before the response ended");
}

static void test_bad_status(void **state)
{
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 20 OK\r\n\r\n", "HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1 abc OK\r\n\r\n", "http/1.1 200 OK\r\n\r\n", "HTTP/1.1 100 Continue\r\n\r\n",
		"HTTP/1.1 700 Huh\r\n\r\n", "HTTP/1.1 200 O\x01K\r\n\r\n", "\r\n\r\n", "HTTP/1.1 200 OK\n\r\n\r\n",
		"GARBAGE GARBAGE\r\n\r\n", "HTTP/1.1\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n",
	};
	struct mdhttp h;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = feeds(&h, bad[i], true);

		if (r != MDHTTP_E_STATUS)
			fail_msg("case %zu: %d", i, r);
	}
}

static void test_bad_headers(void **state)
{
	struct mdhttp h;

	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", true), MDHTTP_E_HEADER);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\n folded: x\r\n\r\n", true), MDHTTP_E_HEADER);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n", true), MDHTTP_E_HEADER);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nA: b\nc\r\n\r\n", true), MDHTTP_E_HEADER);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\n: empty\r\n\r\n", true), MDHTTP_E_HEADER);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nA: \x7f\r\n\r\n", true), MDHTTP_E_HEADER);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", true), MDHTTP_E_LENGTH);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", true), MDHTTP_E_LENGTH);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n", true), MDHTTP_E_LENGTH);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", true),
			 MDHTTP_E_LENGTH);
	/* the same length twice is one length */
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nab", true),
			 MDHTTP_DONE);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
			       true), MDHTTP_E_ENCODING);
	/* a length past the bound, and one that would overflow a size_t */
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: 16385\r\n\r\n", true), MDHTTP_E_BODY_BIG);
	assert_int_equal(feeds(&h, "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999999\r\n\r\n", true),
			 MDHTTP_E_BODY_BIG);
}

static void test_bounds(void **state)
{
	static char big[MDHTTP_BUF + 100];
	struct mdhttp h;
	size_t n;

	/* a head without an end */
	memset(big, 'A', sizeof big);
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	assert_int_equal(feed(&h, big, sizeof big, 1000, true), MDHTTP_E_HEAD_BIG);
	assert_int_equal(feed(&h, big, MDHTTP_HEAD_MAX, MDHTTP_HEAD_MAX, false), MDHTTP_MORE);
	assert_int_equal(mdhttp_feed(&h, "\r", 1), MDHTTP_E_HEAD_BIG);
	/* a head of exactly 4096 bytes is read */
	n = MDHTTP_HEAD_MAX - 4;
	memcpy(big + n, "\r\n\r\n", 4);
	assert_int_equal(feed(&h, big, MDHTTP_HEAD_MAX, 7, true), MDHTTP_DONE);
	/* a body up to the close: 16384 bytes are read, one more is refused */
	n = strlen("HTTP/1.1 200 OK\r\n\r\n");
	memcpy(big, "HTTP/1.1 200 OK\r\n\r\n", n);
	memset(big + n, 'b', sizeof big - n);
	assert_int_equal(feed(&h, big, n + MDHTTP_BODY_MAX, 333, true), MDHTTP_DONE);
	assert_int_equal(feed(&h, big, n + MDHTTP_BODY_MAX + 1, 333, true), MDHTTP_E_BODY_BIG);
	assert_int_equal(feed(&h, big, n + MDHTTP_BODY_MAX + 1, 1, true), MDHTTP_E_BODY_BIG);
	/* a buffer smaller than the bounds bounds it */
	mdhttp_init(&h, buf, 64);
	assert_int_equal(mdhttp_feed(&h, big, 100), MDHTTP_E_BODY_BIG);
	mdhttp_init(&h, buf, 8);
	assert_int_equal(mdhttp_feed(&h, big, 100), MDHTTP_E_HEAD_BIG);
}

static void test_request(void **state)
{
	char out[256];
	size_t n = mdhttp_request(out, sizeof out, "GET", "/computeMetadata/v1/instance/attributes/vireo-config",
				  "169.254.169.254", "Metadata-Flavor: Google", NULL);
	static const char want[] = "GET /computeMetadata/v1/instance/attributes/vireo-config HTTP/1.1\r\n"
				   "Host: 169.254.169.254\r\nUser-Agent: vireo\r\nConnection: close\r\n"
				   "Metadata-Flavor: Google\r\n\r\n";

	assert_int_equal(n, strlen(want));
	assert_memory_equal(out, want, n);
	n = mdhttp_request(out, sizeof out, "PUT", "/latest/api/token", "h", "A: 1", "B: 2");
	assert_true(n > 0 && !memcmp(out + n - 14, "A: 1\r\nB: 2\r\n\r\n", 14));
	/* every size short of the whole is refused, never overrun */
	for (size_t sz = 0; sz < strlen(want); sz++) {
		memset(out, 0x55, sizeof out);
		assert_int_equal(mdhttp_request(out, sz, "GET", "/computeMetadata/v1/instance/attributes/vireo-config",
						"169.254.169.254", "Metadata-Flavor: Google", NULL), 0);
		assert_int_equal((unsigned char)out[sz], 0x55);
	}
	/* a CR or LF in a piece would split the request: refused */
	assert_int_equal(mdhttp_request(out, sizeof out, "GET", "/a\r\nX: y", "h", NULL, NULL), 0);
	assert_int_equal(mdhttp_request(out, sizeof out, "GET", "/", "h", "T: a\nb", NULL), 0);
}

static void test_token(void **state)
{
	char tok[MDHTTP_TOKEN_MAX + 1];

	memset(tok, 'A', sizeof tok);
	assert_true(mdhttp_token_ok("AQAEAKkS9x==", 12));
	assert_true(mdhttp_token_ok(tok, MDHTTP_TOKEN_MAX));
	assert_false(mdhttp_token_ok(tok, MDHTTP_TOKEN_MAX + 1));
	assert_false(mdhttp_token_ok("", 0));
	assert_false(mdhttp_token_ok("ab\r\nX: y", 8));
	assert_false(mdhttp_token_ok(" ab", 3));
	assert_false(mdhttp_token_ok("a\x80", 2));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok_with_length),
		cmocka_unit_test(test_ok_until_close),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_bad_status),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_request),
		cmocka_unit_test(test_token),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
