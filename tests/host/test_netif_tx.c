/* net/netif_vnet.c's transmit backlog against a scripted vnet_tx: frames
 * park while the ring is full and go out in order as completions come; a
 * transmit error that takes the link down from inside vnet_tx() (as the
 * driver does for any add error but "ring full") releases every parked
 * frame exactly once, the one being sent included (lwIP's reference counts
 * and ASan catch a double free or a leak). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "kernel/loop.h"
#include "lwip/init.h"
#include "lwip/pbuf.h"
#include "tests/host/netif_vnet_host.h"

/* ---- what netif_vnet.c calls besides lwIP and the kernel shim ---- */

static struct { int dummy; } fake_dev;
static enum { TX_OK, TX_FULL, TX_FAIL } tx_mode;
static void *sent[64];
static unsigned nsent, calls;

struct vnet *vnet_get(void)
{
	return (struct vnet *)&fake_dev;
}

int vnet_attach(struct vnet *vn, const struct vnet_upper *up)
{
	return 0;
}

void vnet_get_info(struct vnet *vn, struct vnet_info *info)
{
	memset(info, 0, sizeof(*info));
	info->mtu = 1500;
}

void vnet_rx_release(struct vnet_rxbuf *b)
{
}

/* netif_vnet_stats() passes it through; not exercised here. */
void vnet_get_stats(struct vnet *vn, struct vnet_stats *st)
{
	memset(st, 0, sizeof(*st));
}

/* The receive side is not driven here: an empty pool, and loop work that
 * never runs (hostk's work queue runs only when a test calls hk_run; rxmem's
 * out-of-order cap is queued from receive batches). */
void vnet_rx_pool(struct vnet *vn, u32 *held, u32 *total)
{
	*held = 0;
	*total = 0;
}

/* As drivers/virtio_net.c: a failing add takes the link down (the upper
 * layer's link callback runs inside this call) and returns -EIO. */
int vnet_tx(struct vnet *vn, const struct virtq_sg *sg, unsigned n, unsigned flags, void *token)
{
	calls++;
	if (tx_mode == TX_FULL)
		return -ENOSPC;
	if (tx_mode == TX_FAIL) {
		nvh_link(false);
		return -EIO;
	}
	assert_true(nsent < 64);
	sent[nsent++] = token;
	return 0;
}

void timeline_mark(const char *name)
{
}

void timeline_print(void)
{
}

/* ---- tests ---- */

#define NFRAMES 6

static struct pbuf *frames[NFRAMES];

static int setup(void **state)
{
	lwip_init();
	nvh_setup((struct vnet *)&fake_dev);
	nsent = calls = 0;
	tx_mode = TX_OK;
	for (unsigned i = 0; i < NFRAMES; i++) {
		frames[i] = pbuf_alloc(PBUF_RAW, 60, PBUF_RAM);
		assert_non_null(frames[i]);
		memset(frames[i]->payload, (int)i, 60);
	}
	return 0;
}

static int teardown(void **state)
{
	/* Only the test's own reference is left on every frame. */
	for (unsigned i = 0; i < NFRAMES; i++) {
		assert_int_equal(frames[i]->ref, 1);
		pbuf_free(frames[i]);
	}
	nvh_teardown();
	return 0;
}

static void test_backlog_drains_in_order(void **state)
{
	assert_int_equal(nvh_linkoutput(frames[0]), ERR_OK);
	assert_int_equal(nsent, 1);
	tx_mode = TX_FULL;
	for (unsigned i = 1; i < NFRAMES; i++)
		assert_int_equal(nvh_linkoutput(frames[i]), ERR_OK);
	assert_int_equal(nvh_backlog_len(), NFRAMES - 1);
	tx_mode = TX_OK;
	nvh_tx_done(sent[0]);
	assert_int_equal(nvh_backlog_len(), 0);
	assert_int_equal(nsent, NFRAMES);
	for (unsigned i = 0; i < NFRAMES; i++)
		assert_ptr_equal(sent[i], frames[i]);
	for (unsigned i = 1; i < NFRAMES; i++)
		nvh_tx_done(sent[i]);
}

/* The driver fails the add of the first parked frame and takes the link
 * down while doing so: that frame and all the others are freed once. */
static void test_tx_error_releases_backlog(void **state)
{
	assert_int_equal(nvh_linkoutput(frames[0]), ERR_OK);
	tx_mode = TX_FULL;
	for (unsigned i = 1; i < NFRAMES; i++)
		assert_int_equal(nvh_linkoutput(frames[i]), ERR_OK);
	for (unsigned i = 1; i < NFRAMES; i++)
		assert_int_equal(frames[i]->ref, 2);	/* ours and the backlog's */
	tx_mode = TX_FAIL;
	calls = 0;
	nvh_tx_done(sent[0]);
	assert_int_equal(calls, 1);	/* fails fast: one try, then link down */
	assert_int_equal(nvh_backlog_len(), 0);
	/* A frame while the link is down is refused, not parked. */
	assert_int_equal(nvh_linkoutput(frames[1]), ERR_IF);
	assert_int_equal(nvh_backlog_len(), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_backlog_drains_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_error_releases_backlog, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
