/* net/port/netmem.c: the floor up to 64 MiB (today's 64 connections and
 * 4 MiB heap), the share above it, the clamp, the fallback, and the heap's worst case
 * for the planned connections inside the planned heap and RAM share. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "net/port/netmem.h"
#include "net/port/segheap.h"

#define MIB (1ull << 20)

static void test_floor(void **state)
{
	struct netmem_plan p;
	u64 mib[] = { 0, 16, 41, 48, 63, 64 };

	(void)state;
	assert_int_equal(netmem.http_conns, 64);
	assert_int_equal(netmem.http_sends, 64);
	assert_int_equal(netmem.http_bufs, 64);
	assert_int_equal(netmem.heap_bytes, 4 * MIB);
	assert_int_equal(netmem.out_wnd, NETMEM_OUT_WND_FLOOR);
	assert_int_equal(netmem.copy_inflight, NETMEM_COPY_FLOOR);
	for (size_t i = 0; i < sizeof mib / sizeof mib[0]; i++) {
		netmem_plan(mib[i] * MIB, &p);
		assert_int_equal(p.http_conns, 64);
		assert_int_equal(p.http_bufs, 64);
		assert_int_equal(p.heap_bytes, 4 * MIB);
		assert_int_equal(p.usable, mib[i] * MIB);
		assert_int_equal(p.out_wnd, NETMEM_OUT_WND_FLOOR);
		assert_int_equal(p.copy_inflight, NETMEM_COPY_FLOOR);
		assert_int_equal(p.copy_lwip_bytes, 0);
	}
}

static void test_share(void **state)
{
	struct netmem_plan p;

	(void)state;
	/* -m 256: 249 MiB usable: 20,000 idle connections fit, with hundreds
	 * of requests and writers at once */
	netmem_plan(249 * MIB, &p);
	assert_true(p.http_conns >= 20000);
	assert_true(p.http_sends >= 256 && p.http_sends == p.http_bufs);
	assert_true(p.heap_bytes < 64 * MIB);
	/* just above the floor's share: nothing more until the share passes
	 * the wide windows' cost and the floor's 64 queues */
	netmem_plan(64 * MIB + 2 * (NETMEM_WIDE_BYTES + 64ull * NETMEM_CONN_LWIP_BYTES), &p);
	assert_int_equal(p.http_conns, 64);
	assert_int_equal(p.heap_bytes, 4 * MIB);
	netmem_plan(64 * MIB + 2 * (NETMEM_WIDE_BYTES + 64ull * NETMEM_CONN_LWIP_BYTES + NETMEM_IDLE_LWIP_BYTES +
				    NETMEM_CONN_STATE_BYTES), &p);
	assert_int_equal(p.http_conns, 65);
	assert_int_equal(p.http_sends, 64);
}

/* The wide windows (a proxied 64 KiB body in one flight each way): taken
 * once the share passes their cost, which comes off the share before the
 * connections; their arithmetic as netmem.h writes it down. */
static void test_wide(void **state)
{
	const u64 floor_q = 64ull * NETMEM_CONN_LWIP_BYTES;
	struct netmem_plan p;

	(void)state;
	assert_int_equal(NETMEM_COPY_LWIP_BYTES, 92898);
	assert_int_equal(NETMEM_WIDE_BYTES, 279778);
	assert_int_equal(NETMEM_OUT_WND_WIDE, 48 * 1460);
	/* 1.26 x the extra copied bytes, for both grants, rounded up */
	assert_true(NETMEM_COPY_LWIP_BYTES * 100 >= 2ull * 126 * (NETMEM_COPY_WIDE - NETMEM_COPY_FLOOR));
	/* a share of NETMEM_WIDE_BYTES: not yet */
	netmem_plan(64 * MIB + 2 * NETMEM_WIDE_BYTES, &p);
	assert_int_equal(p.out_wnd, NETMEM_OUT_WND_FLOOR);
	assert_int_equal(p.copy_inflight, NETMEM_COPY_FLOOR);
	assert_int_equal(p.copy_lwip_bytes, 0);
	assert_int_equal(p.http_conns, 64);
	/* a little more: the windows, and nothing else until the share also
	 * passes the floor's queues */
	netmem_plan(64 * MIB + 2 * NETMEM_WIDE_BYTES + 2, &p);
	assert_int_equal(p.out_wnd, NETMEM_OUT_WND_WIDE);
	assert_int_equal(p.copy_inflight, NETMEM_COPY_WIDE);
	assert_int_equal(p.copy_lwip_bytes, NETMEM_COPY_LWIP_BYTES);
	assert_int_equal(p.http_conns, 64);
	assert_int_equal(p.heap_bytes, 4 * MIB);
	netmem_plan(64 * MIB + 2 * (NETMEM_WIDE_BYTES + floor_q + NETMEM_IDLE_LWIP_BYTES + NETMEM_CONN_STATE_BYTES), &p);
	assert_int_equal(p.http_conns, 65);
	/* -m 256: wide, and the connections from what is left */
	netmem_plan(249 * MIB, &p);
	assert_int_equal(p.out_wnd, NETMEM_OUT_WND_WIDE);
	assert_int_equal(p.copy_inflight, NETMEM_COPY_WIDE);
	assert_true(p.http_conns >= 20000);
}

/* Whatever the RAM: the heap is whole pages and holds the floor, every
 * send slot's worst case and every idle connection's PCB; what the plan
 * adds in both heaps stays within the share of the RAM above the base;
 * the budgets never pass the table. */
static void test_bounds(void **state)
{
	struct netmem_plan p;

	(void)state;
	for (u64 mib = 64; mib <= (1ull << 20); mib = mib * 5 / 4 + 1) {
		u64 extra, active, need;

		netmem_plan(mib * MIB, &p);
		extra = p.http_conns - 64;
		active = p.http_bufs - 64;
		assert_true(p.http_conns >= 64 && p.http_conns <= NETMEM_CONNS_MAX);
		assert_true(p.http_sends >= 64 && p.http_sends <= p.http_conns);
		assert_int_equal(p.http_bufs, p.http_sends);
		assert_int_equal(p.heap_bytes % SEGHEAP_PAGE, 0);
		if (!extra) {
			assert_int_equal(p.heap_bytes, 4 * MIB);
			continue;
		}
		need = 4 * MIB + (u64)p.http_sends * NETMEM_CONN_LWIP_BYTES + extra * NETMEM_IDLE_LWIP_BYTES;
		assert_true(p.heap_bytes >= need && p.heap_bytes < need + SEGHEAP_PAGE);
		assert_true((u64)p.http_sends * NETMEM_CONN_LWIP_BYTES + active * NETMEM_BUFS_BYTES +
			    extra * (NETMEM_IDLE_LWIP_BYTES + NETMEM_CONN_STATE_BYTES) +
			    (p.copy_lwip_bytes ? NETMEM_WIDE_BYTES : 0) <= (mib * MIB - 64 * MIB) / 2);
	}
	netmem_plan(1ull << 50, &p);
	assert_int_equal(p.http_conns, NETMEM_CONNS_MAX);
}

/* The fallback when the heap cannot be had: a quarter less RAM above the
 * base each time, down to the floor, then 0; every step plans fewer. */
static void test_smaller(void **state)
{
	struct netmem_plan p;
	u64 usable = 249 * MIB, steps = 0;
	u32 last;

	(void)state;
	assert_int_equal(netmem_smaller(0), 0);
	assert_int_equal(netmem_smaller(48 * MIB), 0);
	assert_int_equal(netmem_smaller(64 * MIB), 0);
	assert_int_equal(netmem_smaller(64 * MIB + 400), 64 * MIB + 300);
	netmem_plan(usable, &p);
	last = p.http_conns;
	while ((usable = netmem_smaller(usable)) != 0) {
		netmem_plan(usable, &p);
		assert_true(p.http_conns <= last);
		last = p.http_conns;
		steps++;
	}
	assert_int_equal(last, 64);
	assert_true(steps < 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_floor),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_wide),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_smaller),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
