/* net/tls/tlsmem.c: the floor up to 64 MiB (today's 64 HTTPS connections
 * and TLS heap, exactly), the eighth above it, the clamp, the fallback, and
 * inside the planned heap: buf_slots connections with their record
 * buffers (TLS_CONN_BYTES each) and every other one idle (TLS_IDLE_BYTES). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "net/tls/tls.h"
#include "net/tls/tlsmem.h"

#define MIB (1ull << 20)

/* The most the server's connections hold at once: the slots' holders at
 * their worst, every other one idle (tls.h, net/tls/patches/0005). */
#define CONNS(p) ((u64)(p).buf_slots * TLS_CONN_BYTES + (u64)((p).https_conns - (p).buf_slots) * TLS_IDLE_BYTES)
_Static_assert(TLS_BUF_SLOTS == TLSMEM_CONNS_FLOOR, "the floor's connections are the slots' reserve");

/* What the server's part must hold besides the connections (tls.h). */
#define FIXED ((u64)TLS_FIXED_BYTES + (TLS_SERVED_SLOTS - 1) * TLS_SERVED_BYTES_MAX + \
	       TLS_ALPN01_SLOTS * TLS_ALPN01_BYTES_MAX)

static void test_floor(void **state)
{
	struct tlsmem_plan p;
	u64 mib[] = { 0, 16, 41, 48, 57, 63, 64 };

	(void)state;
	assert_int_equal(tlsmem.https_conns, 64);
	assert_int_equal(tlsmem.heap_bytes, TLS_HEAP_BYTES);
	for (size_t i = 0; i < sizeof mib / sizeof mib[0]; i++) {
		tlsmem_plan(mib[i] * MIB, &p);
		assert_int_equal(p.https_conns, 64);
		assert_int_equal(p.buf_slots, 64);
		assert_int_equal(p.server_bytes, 2 * MIB);
		/* what test_tls.py reads on /metrics at -m 48..64 */
		assert_int_equal(p.heap_bytes, 2 * MIB + 4 * 40960 + 384 * 1024);
		assert_int_equal(p.usable, mib[i] * MIB);
	}
}

static void test_share(void **state)
{
	struct tlsmem_plan p;

	(void)state;
	/* -m 256: 249 MiB usable */
	tlsmem_plan(249 * MIB, &p);
	/* each above the floor at its idle cost in the TLS heap and lwIP's
	 * heap, and an eighth of one more record-buffer holder (an idle one
	 * holds no buffer set: those come from the HTTP pool) */
	assert_int_equal(TLSMEM_CONN_COST, 4096 + 29170 + (30720 - 4096) / 8);
	assert_int_equal(p.https_conns, 64 + (249 - 64) * MIB / 8 / (4096 + 29170 + 3328));
	assert_int_equal(p.https_conns, 726);
	assert_int_equal(p.buf_slots, 64 + (726 - 64) / 8);
	assert_int_equal(p.buf_slots, 146);
	assert_int_equal(p.server_bytes, ALIGN_UP(2 * MIB + (726 - 64) * 4096 + 82ull * 26624, 4096));
	assert_int_equal(p.lwip_bytes, (u64)(726 - 64) * 29170);
	/* one more connection exactly when an eighth has one more's cost */
	tlsmem_plan(64 * MIB + 8 * TLSMEM_CONN_COST - 1, &p);
	assert_int_equal(p.https_conns, 64);
	assert_int_equal(p.lwip_bytes, 0);
	tlsmem_plan(64 * MIB + 8 * TLSMEM_CONN_COST, &p);
	assert_int_equal(p.https_conns, 65);
	assert_int_equal(p.buf_slots, 64);
	assert_int_equal(p.server_bytes, 2 * MIB + 4096);
	assert_int_equal(p.lwip_bytes, 29170);
	/* the eighth connection above the floor brings a slot */
	tlsmem_plan(64 * MIB + 64 * TLSMEM_CONN_COST, &p);
	assert_int_equal(p.https_conns, 72);
	assert_int_equal(p.buf_slots, 65);
}

static void test_bound(void **state)
{
	struct tlsmem_plan p;

	(void)state;
	for (u64 mib = 64; mib <= 65536; mib = mib * 5 / 4 + 1) {
		tlsmem_plan(mib * MIB, &p);
		assert_true(p.buf_slots >= 64 && p.buf_slots <= p.https_conns);
		/* every connection's worst case and the fixed part fit the server's part */
		assert_true(CONNS(p) + FIXED <= p.server_bytes);
		assert_int_equal(p.server_bytes % TLSMEM_PAGE, 0);
		assert_int_equal(p.heap_bytes % TLSMEM_PAGE, 0);
		assert_int_equal(p.heap_bytes - p.server_bytes, TLS_HEAP_BYTES - TLS_SERVER_HEAP_BYTES);
		/* within the eighth above the base (plus the floor), both heaps
		 * (buffer sets: the HTTP pool's, netmem.h) */
		assert_true(p.server_bytes - 2 * MIB + p.lwip_bytes <=
			    (mib * MIB - 64 * MIB) / 8 + TLSMEM_PAGE);
	}
	tlsmem_plan(1ull << 50, &p);
	assert_int_equal(p.https_conns, TLSMEM_CONNS_MAX);
	assert_true(CONNS(p) + FIXED <= p.server_bytes);
}

static void test_smaller(void **state)
{
	struct tlsmem_plan p;
	u64 usable = 249 * MIB;
	u32 last;

	(void)state;
	assert_int_equal(tlsmem_smaller(0), 0);
	assert_int_equal(tlsmem_smaller(48 * MIB), 0);
	assert_int_equal(tlsmem_smaller(64 * MIB), 0);
	assert_int_equal(tlsmem_smaller(64 * MIB + 400), 64 * MIB + 300);
	tlsmem_plan(usable, &p);
	last = p.https_conns;
	while ((usable = tlsmem_smaller(usable)) != 0) {
		tlsmem_plan(usable, &p);
		assert_true(p.https_conns <= last);
		last = p.https_conns;
	}
	assert_int_equal(last, 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_smaller),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
