/* drivers/virtio/net/virtio_net.c, unchanged, against a simulated hostile device
 * (tests/host/simdev/): probe and remove, receive with good and bad
 * headers, lengths and ring values, merged buffers, transmit and tx_done,
 * the control queue and NOTF_COAL, event-index coalescing and its timer,
 * link changes, DEVICE_NEEDS_RESET re-probes with buffers held above, a
 * randomised load that checks no used frame waits past the coalescing hold,
 * the wakeup rules under the frame reflector (every interleaving of the
 * event-index race, and overload: issue 37), and memory: every page and
 * heap block back at the end. */
/* lwIP's headers first: the port's cc.h defines BYTE_ORDER as lwIP wants. */
#include "lwip/pbuf.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio/net/virtio_net.h"
#include "kernel/mm/dma.h"
#include "debug/virtio_selftest.h"
#include "debug/vnet_echo.h"
#include "kernel/time/time.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/hostbus.h"
#include "tests/host/drivers/virtio/net/upper.h"
#include <arch.h>
#include "tests/host/drivers/virtio/net/vnet_host.h"
#include "tests/host/simdev/vnetdev.h"
#include "net/tcp/rxmem.h"

#define F(b)		VIRTIO_BIT(b)
#define MODERN		(F(VIRTIO_F_VERSION_1) | F(VIRTIO_NET_F_MAC) | F(VIRTIO_NET_F_STATUS))
#define EVIDX		F(VIRTIO_F_EVENT_IDX)
#define MRG		F(VIRTIO_NET_F_MRG_RXBUF)
#define CSUMS		(F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM))
#define CTRL		(F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_CTRL_RX))

static struct vnetdev dev;
static struct upper up;
static struct vnet *vn;
static u8 frame[70000];

/* ---- helpers ---- */

static void make_frame(u8 *f, u32 len, u8 seed)
{
	for (u32 i = 0; i < len; i++)
		f[i] = (u8)(seed + i * 7 + (i >> 8));
	if (len >= 14) {
		memcpy(f, "\x52\x54\x00\x12\x34\x56", 6);	/* to us */
		memcpy(f + 6, "\x02\x00\x00\x00\x00\x01", 6);
		f[12] = 0x08;
		f[13] = 0x00;
	}
}

static void run(void)
{
	assert_true(hk_run(100000) < 100000);	/* no livelock */
}

static void check_all(void)
{
	if (up_check(&up) != 0 || up.errors)
		fail_msg("upper: %s", up.error);
	if (vd_errors(&dev))
		fail_msg("device: %s", vd_error(&dev));
}

static void stats(struct vnet_stats *st)
{
	vnet_get_stats(vn, st);
}

static void bring_up(u64 features, u16 qsize)
{
	vd_init(&dev, features, qsize);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_non_null(vn);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	assert_true(dev.status & VIRTIO_S_DRIVER_OK);
	check_all();
}

/* The bus matches by device id: a device no driver claims is reset, logged
 * and left on the bus unbound; unplugging it takes it off. */
static void test_bus_no_driver(void **state)
{
	vd_init(&dev, MODERN, 64);
	dev.vd.device_id = VIRTIO_ID_BLOCK;
	dev.status = VIRTIO_S_ACKNOWLEDGE;
	assert_int_equal(hk_probe(&dev.vd), -ENODEV);
	assert_true(hk_log_contains("no driver"));
	assert_null(dev.vd.driver);
	assert_int_equal(dev.status, 0);
	assert_ptr_equal(virtio_devices(), &dev.vd);
	hk_unplug(&dev.vd);
	assert_null(virtio_devices());
}

static int teardown(void **state)
{
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	run();
	up_release_all(&up);
	check_all();
	assert_int_equal(up_tx_outstanding(&up), 0);
	vnet_host_forget_all();
	hk_loop_reset();
	hk_clock_autostep(0);
	hk_fail_kmem(0, 0);
	hk_fail_pages(0, 0);
	up_fini(&up);
	vd_fini(&dev);
	hk_free_kept();	/* what a device that never reset kept (the test is over) */
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	vn = NULL;
	return 0;
}

/* Delivers one good frame and the interrupt, runs the loop. */
static void rx_good(const struct vd_hdr *h, u32 len, u8 seed)
{
	make_frame(frame, len, seed);
	assert_true(vd_rx_frame(&dev, h, frame, len) > 0);
	vd_irq(&dev, VD_RX, true);
	run();
}

static void expect_last(u32 len, u8 seed)
{
	make_frame(frame, len, seed);
	assert_int_equal(up.last_len, len);
	assert_memory_equal(up.last, frame, len);
}

/* ---- probe and remove ---- */

static void test_probe_remove_unattached(void **state)
{
	struct vnet_stats st;

	vd_init(&dev, MODERN | EVIDX | MRG | CSUMS | CTRL, 256);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_non_null(vn);
	stats(&st);
	assert_int_equal(st.rx_posted, 256);
	assert_int_equal(st.rx_total, 256);
	assert_int_equal(vd_rx_posted(&dev), 256);
	/* PROMISC off, ALLMULTI on, the MAC table. */
	assert_int_equal(dev.ncmds, 3);
	assert_true(dev.cmds[0].answered_ok && dev.cmds[1].answered_ok && dev.cmds[2].answered_ok);
	hk_remove(&dev.vd);
	run();
	/* Not attached: everything is freed at remove. */
	assert_null(vnet_host_for(&dev.vd));
	vn = NULL;
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	assert_int_equal(vd_errors(&dev), 0);
}

static void test_probe_failures_free_everything(void **state)
{
	/* Every allocation the probe makes fails once in turn. */
	for (unsigned skip = 0; skip < 40; skip++) {
		int err;

		vd_init(&dev, MODERN | EVIDX | MRG | CTRL, 64);
		hk_fail_kmem(skip, 1);
		err = hk_probe(&dev.vd);
		hk_fail_kmem(0, 0);
		if (err == 0)
			hk_remove(&dev.vd);
		run();
		hk_loop_reset();
		assert_null(vnet_host_for(&dev.vd));
		assert_int_equal(hk_pages_live(), 0);
		assert_int_equal(hk_kmem_live(), 0);
		vd_fini(&dev);
	}
	for (unsigned skip = 0; skip < 8; skip++) {
		vd_init(&dev, MODERN | MRG, 64);
		hk_fail_pages(skip, 1000);
		if (hk_probe(&dev.vd) == 0)
			hk_remove(&dev.vd);
		hk_fail_pages(0, 0);
		run();
		hk_loop_reset();
		assert_int_equal(hk_pages_live(), 0);
		assert_int_equal(hk_kmem_live(), 0);
		vd_fini(&dev);
	}
	up_init(&up);
}

/* The transmit queue has size 0, so the probe fails after the receive queue
 * went live, while the device raises interrupts at every chance (queue_max
 * reads, the reset). Nothing may reach the freed driver state: the queues
 * are quiesced and the interrupts torn down first (ASan catches a
 * use-after-free; the loop must find no work on freed memory). */
static void test_probe_fails_after_queue_live(void **state)
{
	vd_init(&dev, MODERN | EVIDX | MRG | CTRL, 64);
	dev.qmax[VD_TX] = 0;
	dev.irq_storm = true;
	assert_int_equal(hk_probe(&dev.vd), -EIO);
	assert_true(dev.storm_irqs > 0);	/* one came while rx was live */
	assert_false(dev.irq_on);
	assert_true(dev.status & VIRTIO_S_FAILED);
	run();
	assert_null(vnet_host_for(&dev.vd));
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	assert_int_equal(vd_errors(&dev), 0);
	vd_fini(&dev);

	/* The same storm through a whole life: probe, traffic, remove. */
	bring_up(MODERN | EVIDX | MRG | CTRL, 64);
	dev.irq_storm = true;
	rx_good(NULL, 100, 1);
	expect_last(100, 1);
	hk_remove(&dev.vd);
	assert_false(dev.irq_on);
	run();
	check_all();
}

/* A reset that never reads back 0: the device is left FAILED and not
 * probed again, and what it may still write (rings, posted receive
 * buffers) is kept, not freed: the device writing into a posted buffer
 * afterwards must not touch freed memory (ASan). */
static void test_reset_never_completes(void **state)
{
	long pages_before;
	unsigned posted;

	bring_up(MODERN | EVIDX, 64);
	posted = vd_rx_posted(&dev);
	assert_int_equal(posted, 64);
	dev.reset_stuck = true;
	pages_before = hk_pages_live();
	vd_needs_reset(&dev);
	run();
	assert_true(dev.vd.dead);
	assert_null(dev.vd.driver);
	assert_true(dev.status & VIRTIO_S_FAILED);
	assert_true(hk_log_contains("reset did not complete"));
	assert_false(up.link);
	/* Every posted buffer (one page each) and both rings are kept. */
	assert_true(hk_kept_pages() >= (long)posted + 2);
	assert_int_equal(hk_pages_live(), pages_before);
	/* The device, unreset, still writes into a buffer it was given. */
	make_frame(frame, 200, 9);
	assert_true(vd_rx_frame(&dev, NULL, frame, 200) > 0);
	/* A second NEEDS_RESET is not met by another probe. */
	vd_needs_reset(&dev);
	run();
	assert_null(dev.vd.driver);
	assert_int_equal(hk_probe(&dev.vd), -EIO);
	make_frame(frame, 60, 1);
	assert_int_equal(up_send(&up, 0, frame, 60, 1, 0), -EIO);
}

/* MAC: multicast, zero, or unreadable (torn) -> a random locally
 * administered unicast MAC, logged. Torn 16-bit reads change nothing. */
static void test_config_mac_and_torn_reads(void **state)
{
	static const u8 mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	static const u8 zero[6] = { 0 };
	const u8 *bad[2] = { mcast, zero };
	struct vnet_info info;

	for (unsigned k = 0; k < 3; k++) {
		vd_init(&dev, MODERN | F(VIRTIO_NET_F_MTU), 64);
		if (k < 2)
			memcpy(dev.cfg, bad[k], 6);
		else
			dev.gen_unstable = true;
		assert_int_equal(hk_probe(&dev.vd), 0);
		vn = vnet_host_for(&dev.vd);
		vnet_get_info(vn, &info);
		assert_int_equal(info.mac[0] & 3, 2);	/* unicast, locally administered */
		assert_memory_not_equal(info.mac, zero, 6);
		assert_memory_not_equal(info.mac, "\x52\x54\x00\x12\x34\x56", 6);
		assert_true(hk_log_contains(k == 0 ? "device MAC multicast" :
					    k == 1 ? "device MAC all zero" : "device MAC unreadable"));
		if (k == 2) {
			assert_true(hk_log_contains("changed on each of"));
			assert_int_equal(info.mtu, 1500);
			assert_true(hk_log_contains("mtu unreadable"));
		}
		hk_remove(&dev.vd);
		vnet_host_forget_all();
		vd_fini(&dev);
	}

	/* A good MAC is the device's. */
	bring_up(MODERN, 64);
	vnet_get_info(vn, &info);
	assert_memory_equal(info.mac, "\x52\x54\x00\x12\x34\x56", 6);
	/* The link status changes while the generation never settles: the
	 * torn read is not used, the link stays as it was ... */
	assert_true(up.link);
	dev.gen_unstable = true;
	vd_set_link(&dev, false, false);
	run();
	assert_true(up.link);
	/* ... until a read is whole again. */
	dev.gen_unstable = false;
	vd_set_link(&dev, false, false);
	run();
	assert_false(up.link);
	check_all();
}

static void test_config_garbage(void **state)
{
	struct vnet_info info;

	/* mtu below 68: 1500 is used. */
	vd_init(&dev, MODERN | F(VIRTIO_NET_F_MTU), 64);
	vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 20);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	vnet_get_info(vn, &info);
	assert_int_equal(info.mtu, 1500);
	assert_true(hk_log_contains("below 68"));
	hk_remove(&dev.vd);
	vd_fini(&dev);

	/* A huge MTU without MRG_RXBUF: buffers sized for it, frames capped. */
	vd_init(&dev, MODERN | F(VIRTIO_NET_F_MTU), 16);
	vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 65535);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	vnet_get_info(vn, &info);
	assert_int_equal(info.mtu, 65535);
	rx_good(NULL, 65535, 3);
	expect_last(65535, 3);
	up_release_all(&up);
	check_all();
	hk_remove(&dev.vd);
	vd_fini(&dev);

	/* A config generation that never settles: the probe still ends. */
	vd_init(&dev, MODERN | F(VIRTIO_NET_F_MTU), 64);
	dev.gen_unstable = true;
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	run();
	check_all();
}

/* ---- receive: good frames ---- */

static void test_rx_good_frames(void **state)
{
	static const u32 lens[] = { 14, 60, 64, 1000, 1514 };
	struct vnet_stats st;
	u64 bytes = 0;

	bring_up(MODERN | EVIDX, 64);
	for (unsigned i = 0; i < ARRAY_SIZE(lens); i++) {
		rx_good(NULL, lens[i], (u8)i);
		expect_last(lens[i], (u8)i);
		assert_int_equal(up.last_segs, 1);
		assert_int_equal(up.last_flags, 0);
		bytes += lens[i];
		check_all();
	}
	stats(&st);
	assert_int_equal(st.q[0].frames, ARRAY_SIZE(lens));
	assert_int_equal(st.q[0].bytes, bytes);
	assert_int_equal(st.rx_held, ARRAY_SIZE(lens));
	/* Released out of order, later: all back on the ring. */
	up_release(&up, 2, true);
	up_release(&up, 1, false);
	run();
	check_all();
	up_release_all(&up);
	run();
	check_all();
	stats(&st);
	assert_int_equal(st.rx_posted, 64);
	assert_int_equal(vd_rx_posted(&dev), 64);
}

static void test_rx_hold_everything_then_release(void **state)
{
	struct vnet_stats st;
	unsigned n = 0;

	bring_up(MODERN | EVIDX, 32);
	/* The upper layer keeps every buffer: the ring runs dry, nothing breaks. */
	while (vd_rx_posted(&dev)) {
		make_frame(frame, 100, (u8)n);
		assert_int_equal(vd_rx_frame(&dev, NULL, frame, 100), 1);
		n++;
		if (n % 5 == 0) {
			vd_irq(&dev, VD_RX, true);
			run();
			check_all();
		}
	}
	vd_irq(&dev, VD_RX, true);
	run();
	check_all();
	stats(&st);
	assert_int_equal(up.frames, 32);
	assert_int_equal(st.rx_posted, 0);
	assert_int_equal(st.rx_held, 32);
	up_release(&up, 7, false);
	run();
	check_all();
	assert_int_equal(vd_rx_posted(&dev), 7);
	up_release_all(&up);
	run();
	check_all();
	assert_int_equal(vd_rx_posted(&dev), 32);
}

static void test_rx_merged(void **state)
{
	struct vnet_stats st;
	u32 cap;

	bring_up(MODERN | EVIDX | MRG | F(VIRTIO_NET_F_MTU), 64);
	/* MTU 1500 and page buffers: a 1514-byte frame fits in one. */
	rx_good(NULL, 1514, 1);
	expect_last(1514, 1);
	assert_int_equal(up.last_segs, 1);
	up_release_all(&up);
	hk_remove(&dev.vd);
	vd_fini(&dev);

	/* MTU 9000: frames span buffers. */
	vd_init(&dev, MODERN | EVIDX | MRG | F(VIRTIO_NET_F_MTU), 64);
	vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 9000);
	assert_int_equal(hk_probe(&dev.vd), 0);
	run();
	cap = vd_rx_buflen(&dev, 0);
	assert_true(cap > 1000 && cap <= 4096);
	for (u32 len = cap - 12 - 2; len <= cap - 12 + 2; len++) {
		rx_good(NULL, len, (u8)len);
		expect_last(len, (u8)len);
		assert_int_equal(up.last_segs, len <= cap - 12 ? 1 : 2);
		check_all();
	}
	rx_good(NULL, 9018, 9);
	expect_last(9018, 9);
	assert_int_equal(up.last_segs, (9018 + 12 + cap - 1) / cap);
	check_all();
	stats(&st);
	assert_int_equal(st.q[0].frames, 7);	/* same struct vnet: a re-probe */
	up_release(&up, 3, true);
	up_release(&up, 2, false);
	run();
	check_all();
}


/* ---- a device that attacks after completion (issue 30) ---- */

/* Receive pages the device was handed, whole pages (an IOMMU maps pages,
 * so the device reaches every byte of them, not just the posted span). */
#define ATK_PAGES 1024
static u8 *atk_page[ATK_PAGES];
static unsigned natk;
static unsigned pbufs_freed;

static void atk_note(u8 *va, u32 len)
{
	uintptr_t lo = (uintptr_t)va & ~(uintptr_t)(PAGE_SIZE - 1), p;

	for (p = lo; p < (uintptr_t)va + len; p += PAGE_SIZE) {
		unsigned i;

		for (i = 0; i < natk && atk_page[i] != (u8 *)p; i++)
			;
		if (i == natk && natk < ATK_PAGES)
			atk_page[natk++] = (u8 *)p;
	}
}

/* Every writable segment of every receive buffer the device holds now. */
static void atk_collect(void)
{
	struct fake_dev *q = &dev.q[VD_RX];

	vd_rx_posted(&dev);
	for (unsigned i = 0; i < q->npending; i++)
		for (unsigned k = 0; k < q->pending[i].nseg; k++)
			if (q->pending[i].seg[k].write)
				atk_note(q->pending[i].seg[k].va, q->pending[i].seg[k].len);
}

static void atk_rewrite(u8 val)
{
	for (unsigned i = 0; i < natk; i++)
		memset(atk_page[i], val, PAGE_SIZE);
}

static void atk_pbuf_free(struct pbuf *p)
{
	pbufs_freed++;
	vnet_rx_release((struct vnet_rxbuf *)(void *)p);
}

/* The receive path as net/netif/netif_vnet.c builds it (real lwIP pbufs in
 * each buffer's upper bytes, payload pointing into the device's page): the
 * device completes a frame, then rewrites every byte of every page it was
 * handed, twice, while the stack holds the frame. No pointer or length the
 * kernel uses afterwards may change (the buffers' control structs and the
 * pbufs inside them are compared byte for byte), pbuf_free() must reach the
 * real free function, and every buffer must come back to the driver. On
 * the old layout (struct vnet_rxbuf on the DMA page, ahead of buf[]) the
 * comparison fails: the device overwrote custom_free_function, next, owner
 * and the pbuf's payload and lengths. */
static void test_rx_device_rewrites_held_pages(void **state)
{
	struct vnet_rxbuf *segs[UP_HOLD_MAX], snap[8];
	struct pbuf *head = NULL;
	unsigned n, i, round;

	(void)state;
	bring_up(MODERN | EVIDX | MRG | F(VIRTIO_NET_F_MTU), 64);
	for (round = 0; round < 2; round++) {
		u32 len = round ? 1514 : 9018;	/* merged (3 buffers), then one */

		hk_remove(&dev.vd);
		vd_fini(&dev);
		vd_init(&dev, MODERN | EVIDX | MRG | F(VIRTIO_NET_F_MTU), 64);
		vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 9000);
		assert_int_equal(hk_probe(&dev.vd), 0);
		run();
		natk = 0;
		atk_collect();
		assert_true(natk >= 16);
		rx_good(NULL, len, (u8)(round + 3));
		expect_last(len, (u8)(round + 3));
		n = up.nheld;
		assert_true(n >= 1 && n <= 8);
		memcpy(segs, up.held, n * sizeof(segs[0]));
		for (i = 0; i < n; i++) {
			struct pbuf_custom *pc = (struct pbuf_custom *)(void *)segs[i]->upper;
			struct pbuf *p;

			pc->custom_free_function = atk_pbuf_free;
			p = pbuf_alloced_custom(PBUF_RAW, (u16)segs[i]->len, PBUF_REF, pc, segs[i]->data,
						(u16)segs[i]->len);
			assert_non_null(p);
			if (!head)
				head = p;
			else
				pbuf_cat(head, p);
		}
		assert_int_equal(head->tot_len, len);
		for (i = 0; i < n; i++)
			snap[i] = *segs[i];
		/* The device strikes: every byte of every page, twice. */
		atk_rewrite(0x41);
		atk_rewrite(0xff);
		for (i = 0; i < n; i++)
			if (memcmp(&snap[i], segs[i], sizeof(snap[i])))
				fail_msg("round %u: the device changed buffer %u's control data (free function %p, "
					 "was %p)", round, i,
					 (void *)((struct pbuf_custom *)(void *)segs[i]->upper)->custom_free_function,
					 (void *)atk_pbuf_free);
		assert_int_equal(head->tot_len, len);
		pbufs_freed = 0;
		up.nheld = 0;	/* the pbufs hold them now */
		assert_int_equal(pbuf_free(head), n);
		head = NULL;
		assert_int_equal(pbufs_freed, n);
		run();
		check_all();
	}
	/* Each page the device could write is a DMA-only page. */
	for (i = 0; i < natk; i++)
		assert_true(dma_page_only((u64)(uintptr_t)atk_page[i]));
}

/* The control queue's reply bytes (ack, result) are on a DMA-only page,
 * not inside struct vnet next to its timers and callbacks; so are the
 * command bytes the device reads, and the rings (issue 30). */
static void test_ctrl_reply_on_dma_page(void **state)
{
	struct fake_dev *q = &dev.q[VD_CTRL];
	unsigned i, k, writable = 0, readable = 0;

	(void)state;
	vd_init(&dev, MODERN | EVIDX | CTRL, 64);
	dev.ctrl_mode = VD_CTRL_SILENT;
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	assert_true(sd_posted(&dev.sd, VD_CTRL) >= 1);
	for (i = 0; i < q->npending; i++)
		for (k = 0; k < q->pending[i].nseg; k++) {
			/* What it reads too: the command's bytes are copied
			 * out of struct vnet (its timers and callbacks). */
			readable += !q->pending[i].seg[k].write;
			writable += q->pending[i].seg[k].write;
			assert_true(dma_page_only((u64)(uintptr_t)q->pending[i].seg[k].va));
		}
	assert_true(writable >= 1 && readable >= 2);
	for (i = VD_RX; i <= VD_CTRL; i++)
		assert_true(dma_page_only((u64)(uintptr_t)dev.q[i].used));
	dev.ctrl_mode = VD_CTRL_OK;
	vd_ctrl_serve(&dev);
	run();
	check_all();
}

/* ---- what a confined device can read (issue 30) ---- */

/* A page of "kernel" data with a frame in its middle: the secret around it
 * is what a zero-copy transmit shows a device that maps whole pages. */
struct tx_page {
	u8 secret[1024];
	u8 frame[2048];
	u8 secret2[1024];
} __attribute__((aligned(4096)));
static struct tx_page txpg;
#define SECRET 0x5e

/* Brings the device up under a domain of its own (the confining case:
 * virtio_core attaches one with ACCESS_PLATFORM). */
static void bring_up_confined(u64 features, u16 qsize)
{
	vd_init(&dev, features, qsize);
	dev.vd.dma = fake_dev_domain(&dev.q[VD_TX]);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_non_null(vn);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	check_all();
}

/* Every page the transmit device may read for its pending frames: whole
 * pages, as an IOMMU maps them. Returns how many bytes equal SECRET in
 * runs of 16 or more (the secret's pattern), and checks the pages are
 * DMA-only when confined. */
static unsigned tx_pages_scan(bool confined)
{
	struct fake_dev *q = &dev.q[VD_TX];
	unsigned hits = 0;

	sd_posted(&dev.sd, VD_TX);
	assert_true(q->npending >= 1);
	for (unsigned i = 0; i < q->npending; i++)
		for (unsigned k = 0; k < q->pending[i].nseg; k++) {
			const u8 *pg = (const u8 *)((uintptr_t)q->pending[i].seg[k].va & ~(uintptr_t)4095);
			unsigned run = 0;

			if (confined)
				assert_true(dma_page_only((u64)(uintptr_t)pg));
			for (unsigned b = 0; b < 4096; b++) {
				run = pg[b] == SECRET ? run + 1 : 0;
				hits += run == 16;
			}
		}
	return hits;
}

/* Under a confining domain every transmit segment outside the image's
 * read-only data is bounced: the device's pages are DMA-only and hold no
 * byte of what shared the frame's page; the frame arrives byte-exact,
 * with the checksum the driver filled in (the copy is made after it).
 * Without a domain the same send is zero-copy (the device reads the
 * frame's own page: the secret shows). Fails with the bounce disabled. */
static void test_tx_confined_bounces(void **state)
{
	struct vnet_stats st;
	const struct vd_txframe *f;

	(void)state;
	for (int confined = 0; confined < 2; confined++) {
		memset(&txpg, SECRET, sizeof(txpg));
		make_frame(txpg.frame, 1514, 7);
		if (confined)
			bring_up_confined(MODERN | EVIDX | CSUMS, 64);
		else
			bring_up(MODERN | EVIDX | CSUMS, 64);
		assert_int_equal(up_send(&up, 0, txpg.frame, 1514, 3, 0), 0);
		run();
		if (confined)
			assert_int_equal(tx_pages_scan(true), 0);
		else
			assert_true(tx_pages_scan(false) > 0);
		assert_int_equal(vd_tx_complete(&dev, ~0u, false), 1);
		vd_irq(&dev, VD_TX, true);
		run();
		assert_int_equal(up.tx_done, 1);
		f = vd_tx_last(&dev);
		assert_non_null(f);
		assert_int_equal(f->len, 1514);
		assert_memory_equal(f->data, txpg.frame, 1514);
		stats(&st);
		assert_int_equal(st.q[1].bounced, confined ? 1 : 0);
		assert_int_equal(st.q[1].bounce_bytes, confined ? 1514 : 0);
		check_all();
		teardown(NULL);
	}
	bring_up_confined(MODERN | EVIDX | CSUMS, 64);
}

/* The bounce pool's bound: 64 slots give max(64, 32) chunks of 2 KiB; a
 * 3000-byte frame takes two, so the 33rd waits (-ENOSPC, counted) though
 * the ring has room, and goes once a completion frees its chunks. A frame
 * longer than the pool is refused outright (-EINVAL), never parked. */
static void test_tx_bounce_pool_bound(void **state)
{
	static u8 big[3000], huge[64 * 2048 + 1];
	struct vnet_stats st;
	unsigned i;

	(void)state;
	bring_up_confined(MODERN | EVIDX, 64);
	make_frame(big, sizeof(big), 3);
	for (i = 0; i < 32; i++)
		assert_int_equal(up_send(&up, i, big, sizeof(big), 2, 0), 0);
	assert_int_equal(up_send(&up, 32, big, sizeof(big), 2, 0), -ENOSPC);
	stats(&st);
	assert_int_equal(st.q[1].bounce_full, 1);
	assert_true(vnet_host_tx_free(vn) > 0);
	run();
	assert_int_equal(vd_tx_complete(&dev, 1, false), 1);
	vd_irq(&dev, VD_TX, true);
	run();
	assert_int_equal(up_send(&up, 32, big, sizeof(big), 2, 0), 0);
	assert_int_equal(up_send(&up, 33, huge, sizeof(huge), 1, 0), -EINVAL);
	run();
	assert_int_equal(vd_tx_complete(&dev, ~0u, false), 32);
	vd_irq(&dev, VD_TX, true);
	run();
	for (i = 0; i < VD_TX_LOG && i < dev.ntx; i++)
		assert_memory_equal(dev.tx[i].data, big, sizeof(big));
	check_all();
}

/* ---- the attacking device, continued (issue 30) ---- */

/* Every other byte of every page in atk_page[]. */
static void atk_every_other(u8 val)
{
	for (unsigned i = 0; i < natk; i++)
		for (unsigned b = 0; b < PAGE_SIZE; b += 2)
			atk_page[i][b] = val;
}

static bool atk_reaches(const void *p, size_t len)
{
	for (unsigned i = 0; i < natk; i++)
		if ((const u8 *)p < atk_page[i] + PAGE_SIZE && (const u8 *)p + len > atk_page[i])
			return true;
	return false;
}

/* The pbuf chain net/netif/netif_vnet.c builds over a frame's segments. */
static struct pbuf *atk_chain(struct vnet_rxbuf **segs, unsigned n)
{
	struct pbuf *head = NULL;

	for (unsigned i = 0; i < n; i++) {
		struct pbuf_custom *pc = (struct pbuf_custom *)(void *)segs[i]->upper;
		struct pbuf *p;

		pc->custom_free_function = atk_pbuf_free;
		p = pbuf_alloced_custom(PBUF_RAW, (u16)segs[i]->len, PBUF_REF, pc, segs[i]->data, (u16)segs[i]->len);
		assert_non_null(p);
		if (!head)
			head = p;
		else
			pbuf_cat(head, p);
	}
	return head;
}

/* The strict receive path (dma.rx=auto under a domain) against a device
 * that races it: it rewrites every other byte of the frame's pages after
 * completing it, before the stack's input (race A), and every byte of
 * every page it holds, twice, after the copy-out and before the copy is
 * freed (race B). The copy is the real one (net/tcp/rxmem.c rxmem_copy,
 * as netif_vnet_rx calls it): it must live off the device's pages, keep
 * its bytes and lengths through race B, and the buffers' control data
 * must not change through either. Fails with rxmem_copy turned into a
 * pass-through (zero-copy): the held bytes change under race B. */
static void test_rx_device_races_the_copy(void **state)
{
	struct vnet_rxbuf *segs[8], snap[8];
	u8 canary[VNET_HOST_CANARY], canary2[VNET_HOST_CANARY];
	static u8 seen[9018], again[9018];
	struct pbuf *head, *copy, *q;
	unsigned n, i;

	(void)state;
	vd_init(&dev, MODERN | EVIDX | MRG | F(VIRTIO_NET_F_MTU), 64);
	vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 9000);
	dev.vd.dma = fake_dev_domain(&dev.q[VD_TX]);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	vnet_host_canary(vn, canary, sizeof canary);
	natk = 0;
	atk_collect();
	rx_good(NULL, 9018, 5);
	expect_last(9018, 5);
	assert_true(up.last_flags & VNET_RX_CONFINED);
	n = up.nheld;
	assert_true(n >= 3 && n <= 8);
	memcpy(segs, up.held, n * sizeof(segs[0]));
	head = atk_chain(segs, n);
	for (i = 0; i < n; i++)
		snap[i] = *segs[i];
	atk_every_other(0xa5);		/* race A */
	for (i = 0; i < n; i++)
		assert_memory_equal(&snap[i], segs[i], sizeof(snap[i]));
	assert_int_equal(head->tot_len, 9018);
	up.nheld = 0;			/* the pbufs hold them now */
	pbufs_freed = 0;
	copy = rxmem_copy(head);	/* frees the chain: the buffers go back */
	assert_non_null(copy);
	assert_int_equal(copy->tot_len, 9018);
	assert_int_equal(pbuf_copy_partial(copy, seen, sizeof seen, 0), sizeof seen);
	run();				/* reposted */
	atk_collect();
	atk_rewrite(0x41);		/* race B */
	atk_rewrite(0xff);
	assert_int_equal(copy->tot_len, 9018);
	assert_int_equal(pbuf_copy_partial(copy, again, sizeof again, 0), sizeof again);
	assert_memory_equal(seen, again, sizeof seen);
	for (q = copy; q; q = q->next)
		assert_false(atk_reaches(q, sizeof(*q)) || atk_reaches(q->payload, q->len));
	assert_int_equal(pbufs_freed, n);
	assert_int_equal(pbuf_free(copy), 1);
	vnet_host_canary(vn, canary2, sizeof canary2);
	assert_memory_equal(canary, canary2, sizeof canary);
	for (i = 0; i < natk; i++)
		assert_true(dma_page_only((u64)(uintptr_t)atk_page[i]));
	check_all();
}

/* A device that writes every other byte of every page it was handed:
 * the posted receive buffers, every queue's ring block (mapped whole) and
 * the control reply page, with a frame held above. The kernel's data stays
 * intact (the held buffer's control struct, the driver's queue pointers
 * and the upper layer's callbacks), the rings' garbage breaks the device
 * (link down, logged) instead of being followed, and everything comes back
 * at remove with the pool's control data as it was (ASan/UBSan: no stray
 * access on the way). */
static void test_rx_device_writes_every_page(void **state)
{
	u8 canary[VNET_HOST_CANARY], canary2[VNET_HOST_CANARY];
	struct vnet_rxbuf *held, snap;
	const char *why;
	unsigned i;

	(void)state;
	bring_up_confined(MODERN | EVIDX | MRG | CTRL, 64);
	vnet_host_canary(vn, canary, sizeof canary);
	rx_good(NULL, 1514, 9);
	expect_last(1514, 9);
	assert_int_equal(up.nheld, 1);
	held = up.held[0];
	snap = *held;
	natk = 0;
	atk_collect();
	vnet_host_dev_pages(vn, atk_note);
	assert_true(natk >= 64 / 1 / 2);
	for (i = 0; i < natk; i++)
		assert_true(dma_page_only((u64)(uintptr_t)atk_page[i]));
	atk_every_other(0x5a);
	for (i = VD_RX; i <= VD_CTRL; i++)
		vd_irq(&dev, i, true);
	run();
	assert_int_equal(up_send(&up, 0, frame, 60, 1, 0), dev.vd.broken ? -EIO : 0);
	run();
	assert_true(dev.vd.broken);
	assert_true(hk_log_contains("broken"));
	assert_false(up.link);
	assert_memory_equal(&snap, held, sizeof(snap));
	vnet_host_canary(vn, canary2, sizeof canary2);
	assert_memory_equal(canary, canary2, sizeof canary);
	up_release_all(&up);
	run();
	hk_remove(&dev.vd);
	run();
	why = vnet_host_pool_check(vn);
	if (why)
		fail_msg("receive pool after the attack: %s", why);
}

/* Writes past the length it was given. The driver posts whole pages (a
 * frame without MRG_RXBUF needs about 1.5 KiB of its page, but the rest
 * is posted too: an IOMMU would give the device the whole page anyway, so
 * nothing else ever lives after a buffer). The device fills its pages with
 * garbage; a frame written over it comes up exactly as long as the device
 * said, none of the bytes beyond it taken. Then it claims one byte more
 * than was posted: the ring breaks (virtq.c checks every used length
 * against what was posted), the device goes down, nothing goes up, and
 * the pool's control data is as it was. Fails with virtq.c's used-length
 * check removed (the header check behind it only drops the frame). */
static void test_rx_device_writes_past_its_length(void **state)
{
	u8 canary[VNET_HOST_CANARY], canary2[VNET_HOST_CANARY];
	const char *why;
	u32 cap;

	(void)state;
	bring_up_confined(MODERN | EVIDX, 64);
	vnet_host_canary(vn, canary, sizeof canary);
	natk = 0;
	atk_collect();
	cap = vd_rx_buflen(&dev, 0);
	assert_int_equal(cap, PAGE_SIZE);
	atk_rewrite(0xa5);
	rx_good(NULL, 100, 2);
	expect_last(100, 2);
	assert_int_equal(up.last_len, 100);
	up_release_all(&up);
	run();
	make_frame(frame, 1000, 1);
	memset(frame, 0, 12);		/* a zero header */
	assert_true(vd_rx_raw(&dev, 0, frame, cap, 0, FAKE_LIE_LEN) >= 0);
	vd_irq(&dev, VD_RX, true);
	run();
	assert_true(dev.vd.broken);
	assert_non_null(strstr(shim_klog_last(), "used len exceeds"));
	assert_true(hk_log_contains("receive queue broken"));
	assert_int_equal(up.frames, 1);
	vnet_host_canary(vn, canary2, sizeof canary2);
	assert_memory_equal(canary, canary2, sizeof canary);
	hk_remove(&dev.vd);
	run();
	why = vnet_host_pool_check(vn);
	if (why)
		fail_msg("receive pool after the attack: %s", why);
}

/* ---- receive segmentation offload (GUEST_TSO4/6) ---- */

#define TSO		(F(VIRTIO_NET_F_GUEST_TSO4) | F(VIRTIO_NET_F_GUEST_TSO6))

/* A TCP/IPv4 (or IPv6) frame of len bytes in frame[]: the IP length says
 * len - 14 (or less by short), TCP with a 20-byte header. */
static void make_tcp(u32 len, bool v6, u32 short_by, u8 seed)
{
	u32 ip = len - 14 - short_by;

	make_frame(frame, len, seed);
	if (v6) {
		frame[12] = 0x86;
		frame[13] = 0xdd;
		frame[14] = 0x60;
		frame[18] = (u8)((ip - 40) >> 8);
		frame[19] = (u8)(ip - 40);
		frame[20] = 6;
		frame[54 + 12] = 5 << 4;
	} else {
		frame[14] = 0x45;
		frame[16] = (u8)(ip >> 8);
		frame[17] = (u8)ip;
		frame[20] = 0x40;
		frame[21] = 0;
		frame[23] = 6;
		frame[34 + 12] = 5 << 4;
	}
}

static void expect_tcp(u32 len, bool v6, u8 seed)
{
	make_tcp(len, v6, 0, seed);
	assert_int_equal(up.last_len, len);
	assert_memory_equal(up.last, frame, len);
}

static void rx_tso_drop(struct vd_hdr h, u32 len, bool v6, u32 short_by, enum vnet_drop why)
{
	struct vnet_stats st0, st1;
	unsigned frames = up.frames;

	stats(&st0);
	make_tcp(len, v6, short_by, 3);
	assert_true(vd_rx_frame(&dev, &h, frame, len) > 0);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st1);
	if (st1.q[0].drops[why] != st0.q[0].drops[why] + 1)
		fail_msg("gso %#x size %u len %u: drop %s not counted", h.gso, h.gso_size, len,
			 vnet_hdr_drop_name(why));
	assert_int_equal(up.frames, frames);
	assert_int_equal(st1.q[0].gso_frames, st0.q[0].gso_frames);
	assert_false(dev.vd.broken);
	/* the packet's other buffers went with it: the next frame is good */
	rx_good(NULL, 60, 78);
	expect_last(60, 78);
	up_release_all(&up);
	run();
	check_all();
}

static void test_rx_tso(void **state)
{
	const struct vd_hdr h4 = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso = VIRTIO_NET_HDR_GSO_TCPV4,
				   .csum_start = 34, .csum_offset = 16, .hdr_len = 54, .gso_size = 1448,
				   .num_buffers = -1 };
	const struct vd_hdr h6 = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso = VIRTIO_NET_HDR_GSO_TCPV6,
				   .csum_start = 54, .csum_offset = 16, .hdr_len = 74, .gso_size = 1428,
				   .num_buffers = -1 };
	struct vd_hdr h;
	struct vnet_stats st;
	struct vnet_info info;
	u32 cap;

	bring_up(MODERN | EVIDX | MRG | CSUMS | TSO, 64);
	vnet_get_info(vn, &info);
	assert_true(info.rx_tso4 && info.rx_tso6);
	cap = vd_rx_buflen(&dev, 0);
	/* 64,000 bytes: one chain of 17 page buffers, handed up whole, the
	 * checksum partial (CSUM_OK) */
	make_tcp(64000, false, 0, 1);
	assert_int_equal(vd_rx_frame(&dev, &h4, frame, 64000), (int)((64000 + 12 + cap - 1) / cap));
	vd_irq(&dev, VD_RX, true);
	run();
	expect_tcp(64000, false, 1);
	assert_int_equal(up.last_segs, (64000 + 12 + cap - 1) / cap);
	assert_true(up.last_flags & VNET_RX_CSUM_OK);
	stats(&st);
	assert_int_equal(st.q[0].gso_frames, 1);
	assert_int_equal(st.q[0].gso_segments, (64000 - 54 + 1447) / 1448);
	up_release_all(&up);
	run();
	check_all();
	/* IPv6, the largest frame there is */
	make_tcp(VNET_FRAME_MAX, true, 0, 2);
	assert_true(vd_rx_frame(&dev, &h6, frame, VNET_FRAME_MAX) > 0);
	vd_irq(&dev, VD_RX, true);
	run();
	expect_tcp(VNET_FRAME_MAX, true, 2);
	stats(&st);
	assert_int_equal(st.q[0].gso_frames, 2);
	up_release_all(&up);
	run();
	check_all();

	/* Hostile values: dropped whole, counted, the queue keeps going. */
	h = h4;
	h.gso_size = 0;
	rx_tso_drop(h, 64000, false, 0, VNET_DROP_BAD_GSO_SIZE);
	h.gso_size = 9000;
	rx_tso_drop(h, 64000, false, 0, VNET_DROP_BAD_GSO_SIZE);
	h = h4;
	h.gso = VIRTIO_NET_HDR_GSO_TCPV4 | VIRTIO_NET_HDR_GSO_ECN;
	rx_tso_drop(h, 64000, false, 0, VNET_DROP_BAD_GSO);
	h.gso = VIRTIO_NET_HDR_GSO_UDP;
	rx_tso_drop(h, 64000, false, 0, VNET_DROP_BAD_GSO);
	rx_tso_drop(h4, 64000, true, 0, VNET_DROP_BAD_GSO_HEADERS);	/* IPv6 frame, TCPV4 type */
	h = h4;
	h.csum_start = 38;
	rx_tso_drop(h, 64000, false, 0, VNET_DROP_BAD_GSO_HEADERS);
	h = h4;
	h.hdr_len = 0xffff;
	rx_tso_drop(h, 64000, false, 0, VNET_DROP_BAD_GSO_HEADERS);
	/* an IP length past the frame is only known once every buffer is in */
	make_tcp(64000, false, 0, 3);
	frame[16] = 0xff;
	assert_true(vd_rx_frame(&dev, &h4, frame, 64000) > 0);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st);
	assert_int_equal(st.q[0].drops[VNET_DROP_BAD_GSO_HEADERS], 4);
	rx_tso_drop(h4, 65536, false, 0, VNET_DROP_FRAME_TOO_BIG);
	/* a frame that is not GSO may not grow past the MTU */
	rx_tso_drop((struct vd_hdr){ .num_buffers = -1 }, 1515 + 4, false, 0, VNET_DROP_FRAME_TOO_BIG);
	stats(&st);
	assert_int_equal(st.q[0].gso_frames, 2);
	check_all();
	teardown(state);

	/* Offered without MRG_RXBUF: not negotiated (no big buffers), a GSO
	 * frame is refused as one that was never allowed. */
	bring_up(MODERN | EVIDX | CSUMS | TSO, 64);
	vnet_get_info(vn, &info);
	assert_false(info.rx_tso4 || info.rx_tso6);
	assert_false(dev.vd.features & TSO);
	rx_tso_drop(h4, 1000, false, 0, VNET_DROP_BAD_GSO);
	teardown(state);

	/* Without GUEST_CSUM: not negotiated either (§5.1.3.1). */
	bring_up(MODERN | EVIDX | MRG | F(VIRTIO_NET_F_CSUM) | TSO, 64);
	assert_false(dev.vd.features & TSO);
}

/* ---- receive: bad values drop the frame, count the reason, keep going ---- */

struct bad_case {
	const char *name;
	u64 features;
	struct vd_hdr h;
	u32 len;		/* frame bytes after the header */
	int used_delta;		/* added to header + len for the used length */
	enum vnet_drop why;
};

static void rx_expect_drop(const struct bad_case *c)
{
	struct vnet_stats st0, st1;
	u8 pkt[2048];
	u32 hl = vd_hdr_len(&dev), used = hl + c->len + (u32)c->used_delta;
	unsigned frames = up.frames;

	stats(&st0);
	make_frame(pkt + hl, c->len, 5);
	vd_put_hdr(&dev, pkt, &c->h, 1);
	assert_true(vd_rx_raw(&dev, 0, pkt, hl + c->len, used, FAKE_LIE_NONE) >= 0);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st1);
	if (st1.q[0].drops[c->why] != st0.q[0].drops[c->why] + 1)
		fail_msg("%s: drop %s not counted", c->name, vnet_hdr_drop_name(c->why));
	assert_int_equal(up.frames, frames);
	assert_false(dev.vd.broken);
	check_all();
	if (c->h.num_buffers > 1 && c->why != VNET_DROP_BAD_NUM_BUFFERS) {
		/* The packet claimed more buffers (believably): the next ones
		 * are taken as its rest and discarded unparsed. */
		for (int k = 1; k < c->h.num_buffers; k++)
			rx_good(NULL, 60, 76);
		assert_int_equal(up.frames, frames);
		check_all();
	}
	/* The queue still works. */
	rx_good(NULL, 60, 77);
	expect_last(60, 77);
	up_release_all(&up);
	run();
	check_all();
}

static void test_rx_bad_headers(void **state)
{
	static const struct bad_case cases[] = {
		{ "short", MRG, { .num_buffers = -1 }, 13, 0, VNET_DROP_TOO_SHORT },
		{ "header only", MRG, { .num_buffers = -1 }, 0, 0, VNET_DROP_TOO_SHORT },
		{ "less than a header", MRG, { .num_buffers = -1 }, 0, -3, VNET_DROP_TOO_SHORT },
		{ "num_buffers 0", MRG, { .num_buffers = 0 }, 60, 0, VNET_DROP_BAD_NUM_BUFFERS },
		{ "num_buffers huge", MRG, { .num_buffers = 0xffff }, 60, 0, VNET_DROP_BAD_NUM_BUFFERS },
		{ "num_buffers 2 short", MRG, { .num_buffers = 2 }, 60, 0, VNET_DROP_BAD_MERGE_LEN },
		{ "csum flag w/o GUEST_CSUM", MRG, { .flags = 1, .num_buffers = -1 }, 60, 0,
		  VNET_DROP_BAD_FLAGS },
		{ "data_valid w/o GUEST_CSUM", 0, { .flags = 2, .num_buffers = -1 }, 60, 0,
		  VNET_DROP_BAD_FLAGS },
		{ "rsc_info", CSUMS, { .flags = 4, .num_buffers = -1 }, 60, 0, VNET_DROP_BAD_FLAGS },
		{ "gso tcpv4", CSUMS, { .gso = 1, .num_buffers = -1 }, 60, 0, VNET_DROP_BAD_GSO },
		{ "gso ecn", 0, { .gso = 0x80, .num_buffers = -1 }, 60, 0, VNET_DROP_BAD_GSO },
		{ "csum past frame", CSUMS, { .flags = 1, .csum_start = 50, .csum_offset = 9,
		  .num_buffers = -1 }, 60, 0, VNET_DROP_BAD_CSUM_OFFSETS },
		{ "csum offset huge", CSUMS | MRG, { .flags = 1, .csum_start = 0xffff,
		  .csum_offset = 0xffff, .num_buffers = -1 }, 60, 0, VNET_DROP_BAD_CSUM_OFFSETS },
	};

	for (unsigned i = 0; i < ARRAY_SIZE(cases); i++) {
		bring_up(MODERN | EVIDX | cases[i].features, 64);
		rx_expect_drop(&cases[i]);
		teardown(state);
	}
	/* Legacy header (10 bytes): too short and bad flags. */
	for (unsigned i = 0; i < 2; i++) {
		static const struct bad_case legacy[] = {
			{ "legacy short", 0, { .num_buffers = -1 }, 10, 0, VNET_DROP_TOO_SHORT },
			{ "legacy flags", 0, { .flags = 2, .num_buffers = -1 }, 60, 0,
			  VNET_DROP_BAD_FLAGS },
		};

		bring_up(F(VIRTIO_NET_F_MAC), 64);
		assert_int_equal(vd_hdr_len(&dev), 10);
		rx_expect_drop(&legacy[i]);
		if (i == 0)
			teardown(state);
	}
}

static void test_rx_merged_bad(void **state)
{
	struct vnet_stats st;
	struct vd_hdr h = { .num_buffers = -1 };
	u32 cap, hl = 12;
	u8 *pkt;

	vd_init(&dev, MODERN | EVIDX | MRG | F(VIRTIO_NET_F_MTU), 64);
	vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 9000);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	cap = vd_rx_buflen(&dev, 0);
	pkt = calloc(1, 4 * cap);

	/* Buffer 2 of 3 not filled to its length. The packet is dropped with
	 * all three buffers: the third (a copy of the header here) is
	 * discarded unparsed, not read as a packet of its own. */
	vd_put_hdr(&dev, pkt, &h, 3);
	vd_rx_raw(&dev, 0, pkt, cap, cap, FAKE_LIE_NONE);
	vd_rx_raw(&dev, 0, pkt, 100, 100, FAKE_LIE_NONE);
	vd_rx_raw(&dev, 0, pkt, 100, 100, FAKE_LIE_NONE);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st);
	assert_int_equal(st.q[0].drops[VNET_DROP_BAD_MERGE_LEN], 1);
	assert_int_equal(up.frames, 0);
	check_all();

	/* Last buffer empty. */
	vd_put_hdr(&dev, pkt, &h, 2);
	vd_rx_raw(&dev, 0, pkt, cap, cap, FAKE_LIE_NONE);
	vd_rx_raw(&dev, 0, pkt, 0, 0, FAKE_LIE_NONE);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st);
	assert_int_equal(st.q[0].drops[VNET_DROP_BAD_MERGE_LEN], 2);
	check_all();

	/* Over max_frame (mtu 9000 + 18) across 3 full buffers. */
	up.frames = 0;
	vd_put_hdr(&dev, pkt, &h, 3);
	vd_rx_raw(&dev, 0, pkt, cap, cap, FAKE_LIE_NONE);
	vd_rx_raw(&dev, 0, pkt + cap, cap, cap, FAKE_LIE_NONE);
	vd_rx_raw(&dev, 0, pkt + cap, cap, cap, FAKE_LIE_NONE);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st);
	assert_int_equal(st.q[0].drops[VNET_DROP_FRAME_TOO_BIG], 1);
	check_all();

	/* Checksum offsets checked against the whole merged frame. */
	up.frames = 0;
	teardown(state);
	vd_init(&dev, MODERN | EVIDX | MRG | CSUMS | F(VIRTIO_NET_F_MTU), 64);
	vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 9000);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h.csum_start = (u16)(cap + 100);
	h.csum_offset = 6;
	rx_good(&h, cap + 200, 1);	/* offsets in buffer 2: fine */
	expect_last(cap + 200, 1);
	assert_int_equal(up.last_segs, 2);
	assert_int_equal(up.last_flags, VNET_RX_CSUM_OK);
	h.csum_start = (u16)(cap + 200 - 7);
	make_frame(frame, cap + 200, 2);
	assert_int_equal(vd_rx_frame(&dev, &h, frame, cap + 200), 2);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st);
	assert_int_equal(st.q[0].drops[VNET_DROP_BAD_CSUM_OFFSETS], 1);
	assert_int_equal(up.frames, 1);
	check_all();

	/* num_buffers 3, only 2 buffers published: the device is broken. */
	h.flags = 0;
	h.num_buffers = 3;
	make_frame(frame, 2 * cap - hl, 3);
	assert_int_equal(vd_rx_frame(&dev, &h, frame, 2 * cap - hl), 2);
	vd_irq(&dev, VD_RX, true);
	run();
	assert_true(dev.vd.broken);
	assert_string_equal(hk_broken_why(), "merged frame missing buffers");
	assert_int_equal(up.frames, 1);
	check_all();
	free(pkt);
}

/* ---- receive: ring lies break the queue ---- */

static void rx_lie(enum fake_lie lie)
{
	struct vnet_stats st;
	u8 pkt[128] = { 0 };

	bring_up(MODERN | EVIDX | MRG, 64);
	rx_good(NULL, 60, 1);		/* one good completion first */
	make_frame(pkt + 12, 60, 2);
	vd_put_hdr(&dev, pkt, NULL, 1);
	assert_true(vd_rx_raw(&dev, 0, pkt, 72, 72, lie) >= 0);
	vd_irq(&dev, VD_RX, true);
	run();
	assert_true(dev.vd.broken);
	assert_int_equal(up.frames, 1);
	check_all();
	/* Nothing more is taken from a broken device; transmit refuses. */
	assert_int_equal(up_send(&up, 0, pkt, 60, 1, 0), -EIO);
	vd_irq(&dev, VD_RX, true);
	run();
	stats(&st);
	assert_int_equal(st.q[0].frames, 1);
	check_all();
}

static void test_rx_ring_lies(void **state)
{
	static const enum fake_lie lies[] = {
		FAKE_LIE_LEN, FAKE_LIE_ID_RANGE, FAKE_LIE_IDX_JUMP, FAKE_LIE_IDX_AHEAD,
		FAKE_LIE_IDX_BACK,
	};

	for (unsigned i = 0; i < ARRAY_SIZE(lies); i++) {
		rx_lie(lies[i]);
		teardown(state);
	}
	/* A used id that is not in flight, and one used twice. */
	bring_up(MODERN | EVIDX, 512);	/* 256 buffers posted: ids 256.. are free */
	fake_dev_raw_used(&dev.q[VD_RX], 300, 80, 1);
	vd_irq(&dev, VD_RX, true);
	run();
	assert_true(dev.vd.broken);
	check_all();
	teardown(state);

	bring_up(MODERN | EVIDX, 64);
	{
		u8 pkt[80] = { 0 };
		int id;

		make_frame(pkt + 12, 68, 1);
		id = vd_rx_raw(&dev, 0, pkt, 80, 80, FAKE_LIE_NONE);
		assert_true(id >= 0);
		fake_dev_raw_used(&dev.q[VD_RX], (u32)id, 80, 1);
	}
	vd_irq(&dev, VD_RX, true);
	run();
	assert_true(dev.vd.broken);
	assert_int_equal(up.frames, 1);
	check_all();
}

/* ---- transmit ---- */

static void test_tx_tokens(void **state)
{
	struct vnet_stats st;
	unsigned sent = 0;

	bring_up(MODERN | EVIDX | F(VIRTIO_F_INDIRECT_DESC), 64);
	static u8 bufs[40][1600];	/* zero-copy: valid until tx_done */

	for (unsigned i = 0; i < 40; i++) {
		u32 len = 60 + i * 37;

		make_frame(bufs[i], len, (u8)i);
		assert_int_equal(up_send(&up, i, bufs[i], len, 1 + i % 15, 0), 0);
		sent++;
	}
	run();	/* the kick */
	assert_int_equal(dev.kicks[VD_TX], 1);
	/* Completed out of order, in two rounds. */
	assert_int_equal(vd_tx_complete(&dev, 10, true), 10);
	assert_true(vd_irq(&dev, VD_TX, false) || 1);
	vd_irq(&dev, VD_TX, true);
	run();
	assert_int_equal(up.tx_done, 10);
	assert_int_equal(vd_tx_complete(&dev, ~0u, false), 30);
	vd_irq(&dev, VD_TX, true);
	run();
	assert_int_equal(up.tx_done, 40);
	check_all();
	/* Byte-exact, with a zero header. */
	make_frame(frame, 60 + 29 * 37, 29);
	for (unsigned i = 0; i < VD_TX_LOG && i < dev.ntx; i++) {
		const struct vd_txframe *f = &dev.tx[i];

		if (f->len == 60 + 29 * 37) {
			assert_memory_equal(f->data, frame, f->len);
			for (unsigned k = 0; k < 12; k++)
				assert_int_equal(f->hdr[k], 0);
		}
	}
	assert_int_equal(dev.tx_bad, 0);
	stats(&st);
	assert_int_equal(st.q[1].frames, sent);
}

static void test_tx_ring_full_and_remove_outstanding(void **state)
{
	struct vnet_stats st;
	unsigned i;

	/* 16 descriptors, no indirect: header + 2 pieces = 3 each, 5 fit. */
	bring_up(MODERN | EVIDX, 16);
	make_frame(frame, 100, 1);
	for (i = 0; i < 20; i++)
		if (up_send(&up, i, frame, 100, 2, 0) != 0)
			break;
	assert_int_equal(i, 5);
	assert_int_equal(up_send(&up, 19, frame, 100, 2, 0), -ENOSPC);
	stats(&st);
	assert_int_equal(st.q[1].no_room, 2);
	run();
	/* Two are done (used, not yet reclaimed), three still with the device. */
	assert_int_equal(vd_tx_complete(&dev, 2, true), 2);
	assert_int_equal(up.tx_done, 0);
	hk_remove(&dev.vd);
	assert_int_equal(up.tx_done, 5);
	assert_false(up.link);
	assert_int_equal(up_send(&up, 30, frame, 100, 1, 0), -EIO);
	run();
	check_all();
}

/* A chain the ring can never take is not "ring full": the send fails fast,
 * the device is broken and the link goes down (so the upper layer drops its
 * backlog instead of parking frames forever), nothing is counted as no_room. */
static void test_tx_add_error_fails_fast(void **state)
{
	struct vnet_stats st;
	unsigned broken = hk_broken_count();

	/* 4 descriptors, no indirect: header + 4 pieces = 5 never fit. */
	bring_up(MODERN | EVIDX, 4);
	make_frame(frame, 100, 1);
	assert_true(up.link);
	assert_int_equal(up_send(&up, 0, frame, 100, 4, 0), -EIO);
	assert_int_equal(hk_broken_count(), broken + 1);
	assert_true(dev.vd.broken);
	assert_false(up.link);
	assert_int_equal(up.link_downs, 1);
	assert_true(hk_log_contains("transmit add failed"));
	/* And stays failed: no retry loop on -ENOSPC. */
	assert_int_equal(up_send(&up, 1, frame, 100, 1, 0), -EIO);
	stats(&st);
	assert_int_equal(st.q[1].no_room, 0);
	run();
	check_all();
}

/* A device that breaks the transmit ring (a used id out of range) takes the
 * link down from the completion path; later sends fail with -EIO, and every
 * token still in flight comes back exactly once at remove. */
static void test_tx_queue_broken_takes_link_down(void **state)
{
	struct vnet_stats st;

	bring_up(MODERN | EVIDX, 64);
	make_frame(frame, 100, 1);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(up_send(&up, i, frame, 100, 1, 0), 0);
	run();	/* the kick */
	dev.q[VD_TX].lie = FAKE_LIE_ID_RANGE;
	assert_int_equal(vd_tx_complete(&dev, 1, false), 1);
	vd_irq(&dev, VD_TX, true);
	run();
	assert_true(dev.vd.broken);
	assert_false(up.link);
	assert_int_equal(up.link_downs, 1);
	assert_int_equal(up_send(&up, 5, frame, 100, 1, 0), -EIO);
	stats(&st);
	assert_int_equal(st.q[1].no_room, 0);
	hk_remove(&dev.vd);
	assert_int_equal(up.tx_done, 3);
	run();
	check_all();
}

static void test_tx_csum_offload(void **state)
{
	static const u8 tcp4[54] = {
		0x52, 0x54, 0, 0x12, 0x34, 0x56, 2, 0, 0, 0, 0, 1, 0x08, 0x00,
		0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0, 10, 0, 2, 15, 10, 0, 2, 2,
		0x1f, 0x90, 0xc0, 0x00, 0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x10, 0xff, 0xff, 0, 0, 0, 0,
	};
	const struct vd_txframe *f;

	bring_up(MODERN | EVIDX | CSUMS, 64);
	memcpy(frame, tcp4, sizeof tcp4);
	assert_int_equal(up_send(&up, 0, frame, sizeof tcp4, 1, VNET_TX_CSUM), 0);
	run();
	assert_int_equal(vd_tx_complete(&dev, 1, false), 1);
	f = vd_tx_last(&dev);
	assert_int_equal(f->hdr[0], VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(f->hdr[6] | f->hdr[7] << 8, 34);	/* TCP header */
	assert_int_equal(f->hdr[8] | f->hdr[9] << 8, 16);	/* its checksum field */
	assert_int_equal(dev.tx_bad, 0);
	/* What the device completes is the right checksum: it verifies. */
	{
		u8 tmp[sizeof tcp4];
		u32 sum;

		memcpy(tmp, f->data, sizeof tcp4);
		assert_int_equal(vnet_hdr_csum_complete(tmp, sizeof tcp4, 34, 16), 0);
		/* pseudo header + segment sums to 0xffff */
		sum = vnet_hdr_csum_add(0, tmp + 26, 8);
		sum += 6 + 20;
		sum = vnet_hdr_csum_add(sum, tmp + 34, 20);
		assert_int_equal(vnet_hdr_csum_fold(sum), 0);
	}
	vd_irq(&dev, VD_TX, true);
	run();
	assert_int_equal(up.tx_done, 1);
}

/* ---- link ---- */

static void test_link_flaps(void **state)
{
	struct vnet_info info;

	bring_up(MODERN | EVIDX | CTRL | F(VIRTIO_NET_F_GUEST_ANNOUNCE), 64);
	assert_true(up.link);
	assert_int_equal(up.link_ups, 1);
	for (unsigned i = 0; i < 10; i++) {
		vd_set_link(&dev, false, false);
		run();
		assert_false(up.link);
		make_frame(frame, 60, 1);
		assert_int_equal(up_send(&up, 0, frame, 60, 1, 0), -EIO);
		vd_set_link(&dev, false, false);	/* no change: no call */
		run();
		vd_set_link(&dev, true, i == 3);
		run();
		assert_true(up.link);
	}
	assert_int_equal(up.link_ups, 11);
	assert_int_equal(up.link_downs, 10);
	assert_int_equal(dev.announce_acks, 1);
	assert_int_equal(up.announces, 1);
	vnet_get_info(vn, &info);
	assert_true(info.link_up);
	check_all();
}

/* ---- VIRTIO_F_ORDER_PLATFORM: which barrier set each queue uses ---- */

/* Sends and completes a frame, takes a received one: the queues publish,
 * kick (with the suppression check) and read used entries. Returns the
 * barriers executed meanwhile. */
static struct shim_barrier_counts barriers_of_traffic(void)
{
	struct shim_barrier_counts before = shim_barriers, d;

	make_frame(frame, 60, 5);
	assert_int_equal(up_send(&up, 0, frame, 60, 1, 0), 0);
	run();
	assert_int_equal(vd_tx_complete(&dev, 1, false), 1);
	vd_irq(&dev, VD_TX, true);
	run();
	assert_int_equal(up.tx_done, 1);
	vd_rx_posted(&dev);
	assert_true(vd_rx_frame(&dev, NULL, frame, 60) > 0);
	vd_irq(&dev, VD_RX, true);
	run();
	assert_int_equal(up.frames, 1);
	up_release_all(&up);
	run();
	d.mb = shim_barriers.mb - before.mb;
	d.rmb = shim_barriers.rmb - before.rmb;
	d.wmb = shim_barriers.wmb - before.wmb;
	d.dma_mb = shim_barriers.dma_mb - before.dma_mb;
	d.dma_rmb = shim_barriers.dma_rmb - before.dma_rmb;
	d.dma_wmb = shim_barriers.dma_wmb - before.dma_wmb;
	return d;
}

static void test_order_platform_barriers(void **state)
{
	struct shim_barrier_counts d;

	/* Offered and negotiated: the platform's device barriers only. */
	bring_up(MODERN | EVIDX | F(VIRTIO_F_ORDER_PLATFORM), 64);
	assert_false(dev.vq[VD_RX]->vq.weak_barriers);
	assert_false(dev.vq[VD_TX]->vq.weak_barriers);
	d = barriers_of_traffic();
	assert_true(d.wmb > 0 && d.rmb > 0 && d.mb > 0);
	assert_int_equal(d.dma_wmb + d.dma_rmb + d.dma_mb, 0);
	check_all();
}

static void test_no_order_platform_barriers(void **state)
{
	struct shim_barrier_counts d;

	/* Not offered (QEMU's devices): the lighter SMP barriers only. */
	bring_up(MODERN | EVIDX, 64);
	assert_true(dev.vq[VD_RX]->vq.weak_barriers);
	assert_true(dev.vq[VD_TX]->vq.weak_barriers);
	d = barriers_of_traffic();
	assert_true(d.dma_wmb > 0 && d.dma_rmb > 0 && d.dma_mb > 0);
	assert_int_equal(d.wmb + d.rmb + d.mb, 0);
	check_all();
}

/* GUEST_ANNOUNCE (spec 5.1.6.5.4): on a config interrupt with
 * VIRTIO_NET_S_ANNOUNCE the upper layer's announce() runs first (it sends
 * its gratuitous frames on the transmit queue), then the driver sends
 * VIRTIO_NET_CTRL_ANNOUNCE_ACK; once per request, and never when the
 * feature was not negotiated (the bit then means nothing). */
static unsigned acks_at_announce, ntx_at_announce;

static void announce_sends(struct upper *u)
{
	acks_at_announce = dev.announce_acks;
	ntx_at_announce = dev.ntx;
	make_frame(frame, 60, 7);
	assert_int_equal(up_send(u, 0, frame, 60, 1, 0), 0);
	make_frame(frame, 86, 8);
	assert_int_equal(up_send(u, 1, frame, 86, 1, 0), 0);
}

static void test_announce_then_ack(void **state)
{
	struct vnet_stats st;
	unsigned ncmds;

	bring_up(MODERN | EVIDX | CTRL | F(VIRTIO_NET_F_GUEST_ANNOUNCE), 64);
	dev.tx_auto = true;
	up.on_announce = announce_sends;
	ncmds = dev.ncmds;
	vd_set_link(&dev, true, true);
	run();
	assert_int_equal(up.announces, 1);
	assert_int_equal(acks_at_announce, 0);		/* frames first, ack after */
	assert_int_equal(dev.ntx, ntx_at_announce + 2);
	assert_int_equal(dev.announce_acks, 1);
	assert_int_equal(dev.ncmds, ncmds + 1);
	assert_int_equal(dev.cmds[(dev.ncmds - 1) % VD_CMD_LOG].cls, VIRTIO_NET_CTRL_ANNOUNCE);
	assert_int_equal(up.link_ups, 1);		/* no link change */
	/* A plain config interrupt (the bit cleared by the ack) announces nothing. */
	vd_set_link(&dev, true, false);
	run();
	assert_int_equal(up.announces, 1);
	/* The next request (another migration) is answered again. */
	vd_set_link(&dev, true, true);
	run();
	assert_int_equal(up.announces, 2);
	assert_int_equal(dev.announce_acks, 2);
	stats(&st);
	assert_int_equal(st.announces, 2);
	check_all();
}

static void test_announce_needs_feature(void **state)
{
	struct vnet_stats st;

	/* Offered but masked out is the same as not offered: CTRL_VQ alone. */
	bring_up(MODERN | EVIDX | CTRL, 64);
	vd_set_link(&dev, true, true);
	run();
	assert_int_equal(up.announces, 0);
	assert_int_equal(dev.announce_acks, 0);
	stats(&st);
	assert_int_equal(st.announces, 0);
	check_all();
}

/* Link up must not wait for an event the down time swallowed: a receive
 * completion and a transmit completion whose interrupts never came are
 * taken at link up, and the receive queue is notified so a device that ran
 * out of buffers looks at the ring again. */
static void test_link_up_recovers_lost_events(void **state)
{
	struct vnet_stats st;
	unsigned frames, rx_kicks;

	bring_up(MODERN | EVIDX, 64);
	make_frame(frame, 60, 3);
	assert_int_equal(up_send(&up, 0, frame, 60, 1, 0), 0);
	run();
	assert_int_equal(vd_tx_complete(&dev, 1, false), 1);	/* its interrupt is lost */
	frames = up.frames;
	make_frame(frame, 80, 4);
	assert_true(vd_rx_frame(&dev, NULL, frame, 80) > 0);	/* so is this one's */
	vd_set_link(&dev, false, false);
	run();
	assert_false(up.link);
	assert_int_equal(up.frames, frames);
	assert_int_equal(up_tx_outstanding(&up), 1);
	rx_kicks = dev.kicks[VD_RX];
	vd_set_link(&dev, true, false);
	run();
	assert_true(up.link);
	assert_int_equal(up.frames, frames + 1);
	expect_last(80, 4);
	assert_int_equal(up_tx_outstanding(&up), 0);
	assert_true(dev.kicks[VD_RX] > rx_kicks);
	stats(&st);
	assert_int_equal(st.link_resumes, 2);	/* the probe's, this one */
	/* and the queue is armed again: the next frame interrupts */
	up_release_all(&up);
	run();
	make_frame(frame, 60, 5);
	vd_rx_frame(&dev, NULL, frame, 60);
	assert_true(vd_irq(&dev, VD_RX, false));
	run();
	assert_int_equal(up.frames, frames + 2);
	check_all();
}

/* ---- DEVICE_NEEDS_RESET: remove and probe again under a held upper ---- */

static void test_reset_with_buffers_held(void **state)
{
	struct vnet_stats st;

	bring_up(MODERN | EVIDX | MRG | CTRL, 64);
	for (unsigned i = 0; i < 10; i++)
		rx_good(NULL, 100 + i, (u8)i);
	make_frame(frame, 200, 9);
	for (unsigned i = 0; i < 5; i++)
		assert_int_equal(up_send(&up, i, frame, 200, 1, 0), 0);
	run();
	assert_int_equal(vd_tx_complete(&dev, 2, false), 2);	/* used, not yet reclaimed */
	assert_int_equal(up.nheld, 10);

	vd_needs_reset(&dev);
	run();
	/* drivers/virtio/virtio.c's config work did it: removed, reset, probed again. */
	assert_true(hk_log_contains("device needs reset; resetting and probing again"));
	assert_int_equal(dev.vd.resets, 1);
	assert_ptr_equal(dev.vd.driver, hostbus_driver());
	stats(&st);
	assert_int_equal(st.resets, 1);
	assert_int_equal(up.link_downs, 1);
	assert_int_equal(up.link_ups, 2);
	assert_true(up.link);
	/* Every transmit token came back exactly once, none twice. */
	assert_int_equal(up.tx_done, 5);
	assert_int_equal(st.rx_held, 10);
	check_all();
	/* Frames flow on the new rings while the old buffers are still held. */
	rx_good(NULL, 300, 3);
	expect_last(300, 3);
	up_release(&up, 4, false);
	run();
	check_all();
	up_release_all(&up);
	run();
	check_all();
	stats(&st);
	assert_int_equal(st.rx_posted, 64);
}

static void test_reset_changes_buffer_size(void **state)
{
	struct vnet_stats st;
	u32 total_before;

	/* Without MRG_RXBUF and MTU 9000: 3-page buffers. The re-probed device
	 * offers MRG_RXBUF: 1-page buffers; the held big ones are freed on
	 * release. */
	vd_init(&dev, MODERN | EVIDX | F(VIRTIO_NET_F_MTU), 32);
	vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), 9000);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	for (unsigned i = 0; i < 6; i++)
		rx_good(NULL, 8000, (u8)i);
	stats(&st);
	total_before = st.rx_total;
	assert_int_equal(total_before, 32);
	dev.offered |= MRG;
	vd_needs_reset(&dev);
	run();
	check_all();
	stats(&st);
	assert_int_equal(st.rx_held, 6);
	assert_int_equal(st.rx_posted, 32 - 6);
	rx_good(NULL, 8000, 7);
	expect_last(8000, 7);
	assert_int_equal(up.last_segs, (8012 + vd_rx_buflen(&dev, 0) - 1) / vd_rx_buflen(&dev, 0));
	up_release_all(&up);
	run();
	check_all();
	/* The big buffers were freed on release and replaced by buffers of
	 * the new size: the pool keeps its size. */
	stats(&st);
	assert_int_equal(st.rx_total, 32);
	assert_int_equal(st.rx_posted, 32);
}

static void test_reset_probe_fails(void **state)
{
	struct vnet_stats st;

	bring_up(MODERN | EVIDX | CTRL, 64);
	for (unsigned i = 0; i < 4; i++)
		rx_good(NULL, 100, (u8)i);
	/* The re-probe finds no transmit queue: it fails, the device is
	 * unbound; the upper layer still holds buffers and asks for stats. */
	dev.qmax[VD_TX] = 0;
	vd_needs_reset(&dev);
	run();
	assert_null(dev.vd.driver);
	assert_false(up.link);
	stats(&st);
	assert_int_equal(st.rx_held, 4);
	assert_int_equal(st.rx_posted, 0);
	make_frame(frame, 60, 1);
	assert_int_equal(up_send(&up, 0, frame, 60, 1, 0), -EIO);
	up_release_all(&up);
	run();
	check_all();
	/* Allocation failures on the re-probe, too. */
	teardown(state);
	for (unsigned skip = 0; skip < 12; skip++) {
		bring_up(MODERN | EVIDX | CTRL, 64);
		rx_good(NULL, 100, 1);
		hk_fail_kmem(skip, 1);
		vd_needs_reset(&dev);
		run();
		hk_fail_kmem(0, 0);
		stats(&st);
		assert_int_equal(st.rx_held, 1);
		up_release_all(&up);
		run();
		check_all();
		teardown(state);
	}
	up_init(&up);
}

/* ---- control queue and NOTF_COAL ---- */

/* Steady traffic on a busy CPU, which the adaptive policy coalesces: a
 * frame every 10 us; the device interrupts when the driver asked for it
 * (event index, or device-side at NOTF_COAL's max_packets), timers run when
 * due. */
static void steady(unsigned frames, bool device_side)
{
	unsigned pending = 0;

	hk_cpu_busy(true);
	for (unsigned k = 0; k < frames; k++) {
		if (vd_rx_posted(&dev)) {
			make_frame(frame, 60, (u8)k);
			vd_rx_frame(&dev, NULL, frame, 60);
			pending++;
		}
		hk_clock_advance(10 * 1000);
		if (!device_side || pending >= MAX(dev.coal_packets, 1u))
			if (vd_irq(&dev, VD_RX, false))
				pending = 0;
		run();
		up_release_all(&up);
		run();
	}
	vd_irq(&dev, VD_RX, true);	/* take a partial batch: the count starts afresh */
	run();
	up_release_all(&up);
	run();
	hk_cpu_busy(false);
}

static void test_notf_coal_programmed(void **state)
{
	static const u64 variants[] = { F(VIRTIO_NET_F_NOTF_COAL), F(VIRTIO_NET_F_VQ_NOTF_COAL) };

	for (unsigned i = 0; i < 2; i++) {
		struct vnet_stats st;
		unsigned sets, changes;

		bring_up(MODERN | EVIDX | CTRL | variants[i], 256);
		stats(&st);
		assert_true(st.coal_device);
		assert_int_equal(dev.coal_sets, 1);	/* at probe: 1 frame, 0 usecs */
		assert_int_equal(dev.coal_packets, 1);
		assert_int_equal(dev.coal_usecs, 0);
		assert_int_equal(dev.coal_by_vq, i == 1);
		steady(400, true);
		stats(&st);
		assert_true(st.coal_frames > 1);
		assert_int_equal(dev.coal_packets, st.coal_frames);
		assert_int_equal(dev.coal_usecs, st.coal_usecs);
		/* Sent only when the values changed. */
		sets = dev.coal_sets;
		changes = st.coal.changes;
		assert_true(sets <= changes + 1);
		assert_true(sets >= 2);
		/* Idle: back to 1 frame, and the device is told so once. */
		assert_true(hk_run_timers_until(10 * NSEC_PER_MSEC));
		run();
		stats(&st);
		assert_int_equal(st.coal_frames, 1);
		assert_int_equal(dev.coal_packets, 1);
		assert_int_equal(dev.coal_usecs, 0);
		assert_int_equal(dev.coal_sets, sets + 1);
		hk_run_timers_until(100 * NSEC_PER_MSEC);
		assert_int_equal(dev.coal_sets, sets + 1);
		check_all();
		teardown(state);
	}
	up_init(&up);
}

/* Runs the loop's timers until ns of fake time have passed. */
static void run_for(u64 ns)
{
	u64 end = hk_now() + ns;

	while (hk_now() < end)
		hk_run_timers_until(end - hk_now());
}

static void test_ctrl_refused_or_silent(void **state)
{
	struct vnet_stats st;

	/* The device refuses NOTF_COAL: coalescing falls back to the driver. */
	vd_init(&dev, MODERN | EVIDX | CTRL | F(VIRTIO_NET_F_NOTF_COAL), 64);
	dev.ctrl_mode = VD_CTRL_ERR;
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	stats(&st);
	assert_false(st.coal_device);
	rx_good(NULL, 60, 1);
	expect_last(60, 1);
	teardown(state);

	/* Garbage acks and no ack at all. */
	for (int mode = VD_CTRL_SILENT; mode <= VD_CTRL_GARBAGE; mode++) {
		vd_init(&dev, MODERN | EVIDX | CTRL | F(VIRTIO_NET_F_NOTF_COAL), 64);
		dev.ctrl_mode = (enum vd_ctrl_mode)mode;
		up_init(&up);
		u64 t0 = hk_now();

		/* 10 us per clock read: the probe queues its three commands
		 * and waits for none of them. */
		hk_clock_autostep(10 * NSEC_PER_USEC);
		assert_int_equal(hk_probe(&dev.vd), 0);
		hk_clock_autostep(0);
		assert_true(hk_now() - t0 < 500 * NSEC_PER_USEC);
		vn = vnet_host_for(&dev.vd);
		assert_int_equal(up_attach(&up, vn), 0);
		run();
		if (mode == VD_CTRL_SILENT) {
			/* NOTF_COAL waits behind the unanswered command,
			 * for at most 1 s; then both fail. */
			stats(&st);
			assert_true(st.coal_device);
			run_for(999 * NSEC_PER_MSEC);
			assert_false(hk_log_contains("not answered"));
			run_for(2 * NSEC_PER_MSEC);
			assert_true(hk_log_contains("promisc off not answered in 1000 ms"));
		}
		stats(&st);
		assert_false(st.coal_device);
		rx_good(NULL, 60, 1);
		expect_last(60, 1);
		check_all();
		teardown(state);
	}
	up_init(&up);
}

static void test_ctrl_slow_answer(void **state)
{
	struct vnet_stats st;
	unsigned n;

	/* A device whose I/O thread answers 5 ms after each notify (a loaded
	 * host): probe does not wait, every command is answered and taken,
	 * in order, none is called refused. */
	vd_init(&dev, MODERN | EVIDX | CTRL | F(VIRTIO_NET_F_NOTF_COAL), 64);
	dev.ctrl_mode = VD_CTRL_SILENT;
	up_init(&up);
	hk_log_reset();
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	for (n = 0; n < 10; n++) {
		run_for(5 * NSEC_PER_MSEC);
		dev.ctrl_mode = VD_CTRL_OK;
		vd_ctrl_serve(&dev);
		dev.ctrl_mode = VD_CTRL_SILENT;
	}
	run_for(5 * NSEC_PER_MSEC);
	assert_true(dev.ncmds >= 3);
	assert_int_equal(dev.cmds[0].cls, VIRTIO_NET_CTRL_RX);
	assert_int_equal(dev.cmds[0].cmd, VIRTIO_NET_CTRL_RX_PROMISC);
	assert_int_equal(dev.cmds[1].cls, VIRTIO_NET_CTRL_RX);
	assert_int_equal(dev.cmds[1].cmd, VIRTIO_NET_CTRL_RX_ALLMULTI);
	assert_int_equal(dev.cmds[2].cls, VIRTIO_NET_CTRL_MAC);
	for (n = 0; n < dev.ncmds; n++)
		assert_true(dev.cmds[n].answered_ok);
	assert_false(hk_log_contains("refused"));
	assert_false(hk_log_contains("not answered"));
	stats(&st);
	assert_true(st.coal_device);
	assert_int_equal(vd_errors(&dev), 0);
	check_all();
}

static void test_ctrl_late_answer(void **state)
{
	unsigned n;

	/* The device says nothing until the driver gave up on a command, then
	 * answers: it must find the command it was given, not a later one
	 * written over it. */
	vd_init(&dev, MODERN | EVIDX | CTRL | F(VIRTIO_NET_F_GUEST_ANNOUNCE) |
		F(VIRTIO_NET_F_NOTF_COAL), 64);
	dev.ctrl_mode = VD_CTRL_SILENT;
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_int_equal(up_attach(&up, vn), 0);
	run();
	run_for(1100 * NSEC_PER_MSEC);	/* the driver gives up on it */
	assert_true(hk_log_contains("not answered in 1000 ms"));
	dev.ctrl_mode = VD_CTRL_OK;
	vd_ctrl_serve(&dev);
	assert_int_equal(vd_errors(&dev), 0);
	assert_int_equal(dev.cmds[0].cls, VIRTIO_NET_CTRL_RX);
	assert_int_equal(dev.cmds[0].cmd, VIRTIO_NET_CTRL_RX_PROMISC);
	assert_int_equal(dev.cmds[0].len, 1);
	/* The queue is usable again. */
	n = dev.ncmds;
	vd_set_link(&dev, true, true);
	run();
	assert_int_equal(dev.ncmds, n + 1);
	assert_int_equal(dev.announce_acks, 1);
	check_all();
}

/* ---- driver-side coalescing: the event index follows coal_frames() ---- */

static u16 used_event(void)
{
	return dev.q[VD_RX].avail->ring[dev.q[VD_RX].num];
}

static void test_event_idx_coalescing(void **state)
{
	const struct virtio_vq *rxq;
	struct vnet_stats st;
	unsigned before;

	bring_up(MODERN | EVIDX, 256);
	rxq = vnet_host_rxq(vn);
	stats(&st);
	assert_int_equal(st.coal_frames, 1);
	assert_int_equal(used_event(), rxq->vq.split.last_used);
	steady(400, false);
	stats(&st);
	assert_true(st.coal_frames > 1);
	assert_false(st.coal_device);
	/* Interrupt after coal_frames more: used_event = last_used + N - 1. */
	assert_int_equal(used_event(), (u16)(rxq->vq.split.last_used + st.coal_frames - 1));
	/* N - 1 frames: the device does not interrupt; the timer polls them
	 * within coal_usecs. */
	before = up.frames;
	for (unsigned k = 0; k + 1 < st.coal_frames; k++) {
		make_frame(frame, 60, (u8)k);
		vd_rx_frame(&dev, NULL, frame, 60);
	}
	assert_false(vd_irq(&dev, VD_RX, false));
	assert_int_equal(hk_next_deadline(), hk_now() + st.coal_usecs * NSEC_PER_USEC);
	assert_true(hk_run_timers_until((u64)st.coal_usecs * NSEC_PER_USEC));
	assert_int_equal(up.frames, before + st.coal_frames - 1);
	stats(&st);
	assert_true(st.q[0].coal_timer_wakeups >= 1);
	up_release_all(&up);
	run();
	/* N frames: the device interrupts. */
	stats(&st);
	if (st.coal_frames > 1) {
		for (unsigned k = 0; k < st.coal_frames; k++) {
			make_frame(frame, 60, (u8)k);
			vd_rx_frame(&dev, NULL, frame, 60);
		}
		assert_true(vd_irq(&dev, VD_RX, false));
		run();
		up_release_all(&up);
		run();
	}
	/* Idle: frames drop to 1, every completion interrupts. */
	hk_run_timers_until(10 * NSEC_PER_MSEC);
	hk_clock_advance(10 * NSEC_PER_MSEC);
	rx_good(NULL, 60, 1);
	up_release_all(&up);
	run();
	stats(&st);
	assert_int_equal(st.coal_frames, 1);
	assert_int_equal(used_event(), rxq->vq.split.last_used);
	make_frame(frame, 60, 1);
	vd_rx_frame(&dev, NULL, frame, 60);
	assert_true(vd_irq(&dev, VD_RX, false));
	run();
	check_all();
}

/* ---- the wakeup invariant: a used frame is seen within the hold bound ---- */

static u64 sim_rng;

static u32 sim_rand(u32 n)
{
	sim_rng = sim_rng * 6364136223846793005ull + 1442695040888963407ull;
	return (u32)((sim_rng >> 33) % n);
}

#define SIM_FIFO	4096
/* The longest a used frame may wait for the driver to look at it: the
 * policy's hold (COAL_USECS_MAX), plus one clock step of the simulation
 * (the device interrupt and the timer are both delivered on a step). */
#define SIM_STEP_NS	(50 * NSEC_PER_USEC)
#define SIM_BOUND_NS	((u64)COAL_USECS_MAX * NSEC_PER_USEC + SIM_STEP_NS)

/* Random load against the real driver: bursts and lulls, the CPU busy or
 * idle (so the adaptive policy moves through its profiles and back), the
 * upper layer holding buffers for a while, transmit traffic completing late,
 * interrupts delivered when the device decided on one. After every step,
 * every frame the device made used more than SIM_BOUND_NS ago must have
 * reached the upper layer. */
static void wakeup_sim(u64 features, u16 qsize, u64 seed, unsigned steps)
{
	static u64 used_at[SIM_FIFO];
	unsigned head = 0, len = 0, seen = 0, sent = 0;
	struct vnet_stats st;
	u32 changes;

	sim_rng = seed;
	bring_up(features, qsize);
	for (unsigned step = 0; step < steps; step++) {
		unsigned burst = 0, r = sim_rand(100);

		if (step % 2000 == 0)
			hk_cpu_busy(sim_rand(3) != 0);
		if (r < 40)
			burst = 1 + sim_rand(r < 10 ? 40 : 4);	/* a busy spell or a trickle */
		for (unsigned k = 0; k < burst && len < SIM_FIFO; k++) {
			u32 flen = 60 + sim_rand(1400);

			make_frame(frame, flen, (u8)k);
			if (!vd_rx_posted(&dev) || vd_rx_frame(&dev, NULL, frame, flen) < 0)
				break;
			used_at[(head + len++) % SIM_FIFO] = hk_now();
		}
		/* transmit: an answer now and then, completed when the device
		 * gets round to it */
		if (sim_rand(4) == 0 && up_tx_outstanding(&up) < 32) {
			make_frame(frame, 60, 9);
			if (up_send(&up, sent % UP_TOKENS, frame, 60, 1, 0) == 0)
				sent++;
		}
		if (sim_rand(3) == 0)
			vd_tx_complete(&dev, 1 + sim_rand(8), false);
		vd_irq(&dev, VD_TX, false);
		vd_irq(&dev, VD_RX, false);
		run();
		/* the upper layer lets go of what it holds, sometimes late */
		if (up.nheld > 200 || sim_rand(4) == 0)
			up_release(&up, up.nheld > 200 ? up.nheld : sim_rand(up.nheld + 1), sim_rand(2));
		run();
		hk_run_timers_until(sim_rand(r < 90 ? (u32)SIM_STEP_NS : 3000u * NSEC_PER_USEC));
		vd_irq(&dev, VD_RX, false);
		run();
		while (seen < up.frames) {	/* frames arrive in order */
			assert_true(len > 0);
			head = (head + 1) % SIM_FIFO;
			len--;
			seen++;
		}
		if (len && hk_now() - used_at[head] > SIM_BOUND_NS) {
			stats(&st);
			fail_msg("step %u: a frame used %llu us ago is unseen (%u waiting); coal frames %u usecs %u, "
				 "timer %s, used_event %u last_used %u",
				 step, (unsigned long long)((hk_now() - used_at[head]) / NSEC_PER_USEC), len,
				 st.coal_frames, st.coal_usecs,
				 hk_next_deadline() == UINT64_MAX ? "off" : "armed", used_event(),
				 vnet_host_rxq(vn)->vq.split.last_used);
		}
	}
	stats(&st);
	changes = st.coal.changes;
	print_message("wakeup sim: %u steps, %llu frames, %u profile changes, %llu timer wakeups\n", steps,
		      (unsigned long long)st.q[0].frames, changes,
		      (unsigned long long)st.q[0].coal_timer_wakeups);
	assert_true(changes > 10);	/* the policy did move */
	hk_cpu_busy(false);
	vd_tx_complete(&dev, 1000, false);
	vd_irq(&dev, VD_TX, true);
	run();
	check_all();
}

static void test_wakeup_invariant_split(void **state)
{
	wakeup_sim(MODERN | EVIDX, 256, 1, 40000);
}

static void test_wakeup_invariant_split_mrg(void **state)
{
	wakeup_sim(MODERN | EVIDX | MRG, 256, 2, 40000);
}

/* ---- other ring layouts and the echo upper layer ---- */

static void test_packed_legacy_indirect(void **state)
{
	static const u64 variants[] = {
		MODERN | F(VIRTIO_F_RING_PACKED) | EVIDX | MRG | CSUMS,
		MODERN | F(VIRTIO_F_RING_PACKED) | F(VIRTIO_F_INDIRECT_DESC),
		MODERN | F(VIRTIO_F_IN_ORDER) | EVIDX,
		F(VIRTIO_NET_F_MAC) | MRG | EVIDX,
		F(VIRTIO_NET_F_MAC),
	};

	for (unsigned i = 0; i < ARRAY_SIZE(variants); i++) {
		bring_up(variants[i], 64);
		for (unsigned k = 0; k < 150; k++) {
			rx_good(NULL, 60 + k, (u8)k);
			expect_last(60 + k, (u8)k);
			make_frame(frame, 60 + k, (u8)k);
			assert_int_equal(up_send(&up, k % 20, frame, 60 + k, 1 + k % 4, 0), 0);
			run();
			vd_tx_complete(&dev, ~0u, (k & 1) != 0);
			vd_irq(&dev, VD_TX, true);
			run();
			if (k % 3 == 0) {
				up_release_all(&up);
				run();
			}
			check_all();
		}
		assert_int_equal(up.tx_done, 150);
		teardown(state);
	}
	up_init(&up);
}

static void test_echo(void **state)
{
	const struct vd_txframe *f;

	vnet_set_echo(true);
	vd_init(&dev, MODERN | EVIDX | CSUMS, 64);
	up_init(&up);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	dev.tx_auto = true;
	for (unsigned i = 0; i < 100; i++) {
		make_frame(frame, 60 + i, (u8)i);
		assert_true(vd_rx_frame(&dev, NULL, frame, 60 + i) > 0);
		vd_irq(&dev, VD_RX, true);
		run();
		f = vd_tx_last(&dev);
		assert_non_null(f);
		assert_int_equal(f->len, 60 + i);
		assert_memory_equal(f->data, frame + 6, 6);
		assert_memory_equal(f->data + 12, frame + 12, 60 + i - 12);
		vd_irq(&dev, VD_TX, true);
		run();
	}
	assert_int_equal(vd_errors(&dev), 0);
	assert_true(hk_log_contains("net: echo attached"));
	vd_needs_reset(&dev);
	run();
	hk_remove(&dev.vd);
	run();
	vnet_set_echo(false);
}

/* The shell's `fault net-needs-reset` through the debug seam: the next
 * receive buffer posted is malformed, the (checking) device sees it, and
 * its NEEDS_RESET is recovered by the bus. No such device: -EIO. */
static void test_fault_seam_corrupts_next_rx(void **state)
{
	bring_up(MODERN | EVIDX, 64);
	assert_int_equal(virtio_fault_corrupt_next(VIRTIO_ID_RNG, 0), -EIO);
	assert_int_equal(virtio_fault_corrupt_next(VIRTIO_ID_NET, 0), (int)dev.vd.index);
	assert_int_equal(vd_errors(&dev), 0);	/* armed, nothing posted yet */
	/* Frames in and released until the driver posts a buffer again: that
	 * one is malformed (the refill comes in batches). */
	for (unsigned k = 0; k < 300 && dev.vd.vqs[VD_RX]->vq.debug_corrupt; k++) {
		rx_good(NULL, 100, (u8)k);
		up_release_all(&up);
		run();
	}
	assert_false(dev.vd.vqs[VD_RX]->vq.debug_corrupt);
	vd_rx_posted(&dev);
	assert_true(dev.q[VD_RX].errors >= 1);
	assert_true(strstr(dev.q[VD_RX].error, "out of range") != NULL);
	dev.q[VD_RX].errors = 0;		/* seen; now the device asks for a reset */
	vd_needs_reset(&dev);
	run();
	assert_int_equal(dev.vd.resets, 1);
	assert_ptr_equal(dev.vd.driver, hostbus_driver());
	rx_good(NULL, 100, 2);			/* fresh rings, clean buffers */
	assert_int_equal(vd_errors(&dev), 0);
}

/* ---- the wakeup rules under the frame reflector (issue 37) ----
 *
 * The driver with the real frame reflector (debug/vnet_echo.c, vnet.echo)
 * as the upper layer. The reflector sends each frame back from its own
 * receive buffer and lets the buffer go when the transmit completes, so a
 * transmit completion the driver never hears of keeps a receive buffer off
 * the ring; with every buffer held no frame can arrive to make the driver
 * look again, and it is wedged for good.
 *
 * After every step, with the loop idle, the rules (docs/architecture.md,
 * "The wakeup rules"):
 *   transmit: a frame in flight => a transmit interrupt the device decided
 *     on and has not delivered yet, or one armed for the frames outstanding
 *     (the device raises it by the time it completed them all:
 *     vd_wakeup_due), or work queued;
 *   receive: no buffer free and not posted; a used buffer the driver has
 *     not taken => an interrupt pending, work queued or a timer armed (the
 *     coalescing hold).
 * And at the end, once the offered load stops and the device completes
 * everything it holds, raising only the interrupts it decides on: every
 * transmit reclaimed, every receive buffer posted, and probe frames sent
 * one at a time each come back.
 *
 * The device is driven two ways:
 * - every interleaving of up to two device actions (complete one transmit,
 *   complete every transmit, deliver the transmit interrupt it decided on)
 *   with a short script of receive bursts and partial completions, at every
 *   step boundary, at every full barrier the driver executes and just
 *   before and after it re-enables a callback (shim_mb_hook, hostbus.c):
 *   between the driver's store of the event index and its re-read of the
 *   used index, the race the virtio specification's driver requirements
 *   describe, and after it, where an interrupt decided for an earlier
 *   threshold arrives once the driver re-armed for a later one;
 * - a random overload: bursts of frames up to and past the ring, transmit
 *   completions in bursts, late, or at a barrier, interrupts delivered late
 *   or at a barrier, over thousands of steps; once more against a device
 *   that loses the interrupts it decides on (the late re-check recovers).
 * Both over split and packed rings, with and without the event index. */

#define INDIRECT	F(VIRTIO_F_INDIRECT_DESC)
#define PACKED		F(VIRTIO_F_RING_PACKED)
#define QEMU_LIKE	(MODERN | EVIDX | MRG | INDIRECT)

static const u64 echo_configs[] = {
	QEMU_LIKE,
	MODERN | MRG | INDIRECT,		/* no event index: flags */
	MODERN | PACKED | EVIDX | MRG,		/* packed, descriptor events */
	MODERN | PACKED | MRG | INDIRECT,	/* packed, enable/disable */
	MODERN | EVIDX | F(VIRTIO_F_IN_ORDER),
};

static unsigned probes_sent;

static void echo_frame(u8 *f, u32 len, u8 seed)
{
	for (u32 i = 0; i < len; i++)
		f[i] = (u8)(seed + i * 7 + (i >> 8));
	memcpy(f, "\x52\x54\x00\x12\x34\x56", 6);	/* to the guest */
	memcpy(f + 6, "\x02\x00\x00\x00\x00\x01", 6);	/* from a peer */
	f[12] = 0x88;
	f[13] = 0xb5;
}

static struct virtq *echo_txq(void)
{
	return &dev.vd.vqs[VD_TX]->vq;
}

static struct virtq *echo_rxq(void)
{
	return &dev.vd.vqs[VD_RX]->vq;
}

static void echo_up(u64 features, u16 qsize)
{
	vnet_set_echo(true);
	vd_init(&dev, features, qsize);
	assert_int_equal(hk_probe(&dev.vd), 0);
	vn = vnet_host_for(&dev.vd);
	assert_non_null(vn);
	run();
	assert_true(dev.status & VIRTIO_S_DRIVER_OK);
	assert_true(hk_log_contains("net: echo attached"));
	probes_sent = 0;
}

static void echo_down(void)
{
	shim_mb_hook = NULL;
	hk_cpu_busy(false);
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	run();
	vnet_set_echo(false);
	assert_int_equal(vnet_host_forget_all(), 0);
	hk_loop_reset();
	vd_fini(&dev);
	hk_free_kept();
	assert_int_equal(hk_pages_live(), 0);
	assert_int_equal(hk_kmem_live(), 0);
	vn = NULL;
}

static int echo_teardown(void **state)
{
	if (vn)
		echo_down();
	return 0;
}

/* A device that, acting inside the driver's code (random_hook: at a full
 * barrier, or just before or after the driver re-enables a callback),
 * sends none of the interrupts that action decided on (lossy_irqs): what
 * QEMU 7.2 under TCG with one vCPU amounts to, where the driver's store of
 * the event and its re-read of the index can pass each other, and the
 * device reads the old event (drivers/virtio/net/virtio_net.c, vnet_recheck()). Then
 * a timer armed (the driver's late re-check) also counts as a wakeup
 * coming. */
static bool lossy_irqs;

/* The rules, with the loop idle (after run()). what: the step, for the
 * message. */
static void check_rules(const char *what)
{
	struct vnet_stats st;
	u32 free_n = vnet_host_free_count(vn);
	bool work = hk_work_pending() != 0 || (lossy_irqs && hk_next_deadline() != UINT64_MAX);

	if (vd_errors(&dev))
		fail_msg("%s: device: %s", what, vd_error(&dev));
	if (echo_txq()->inflight && !work && !vd_wakeup_due(&dev, VD_TX)) {
		vnet_get_stats(vn, &st);
		fail_msg("%s: %u frames in flight on the transmit queue (%s), no interrupt pending or armed for "
			 "them and no work queued; receive buffers: %u posted, %u held of %u", what, echo_txq()->inflight,
			 virtq_more_used(echo_txq()) ? "the device completed some" : "none completed yet",
			 st.rx_posted, st.rx_held, st.rx_total);
	}
	if (free_n && !work)
		fail_msg("%s: %u receive buffers free, not posted, no refill queued", what, free_n);
	if (virtq_more_used(echo_rxq()) && !work && hk_next_deadline() == UINT64_MAX &&
	    dev.q[VD_RX].interrupts == dev.irqs_seen[VD_RX])
		fail_msg("%s: received frames waiting, no interrupt pending, no timer, no work", what);
}

/* The load has stopped: the device completes every transmit it holds and
 * raises only the interrupts it decides on; timers run (the coalescing
 * hold, at most COAL_USECS_MAX; the late re-check). Then everything must
 * be back, and probe frames sent one at a time come back. */
static void drain_and_probe(const char *what)
{
	struct vnet_stats st;
	const struct vd_txframe *f;

	for (unsigned r = 0; r < 8; r++) {
		vd_tx_complete(&dev, ~0u, false);
		vd_irq(&dev, VD_TX, false);
		vd_irq(&dev, VD_RX, false);
		run();
		hk_run_timers_until(r < 4 ? 2 * NSEC_PER_MSEC : 12 * NSEC_PER_MSEC);
	}
	vnet_get_stats(vn, &st);
	if (echo_txq()->inflight || st.rx_held || st.rx_posted != st.rx_total)
		fail_msg("%s: load over, device idle: %u frames still in flight on the transmit queue, receive buffers "
			 "%u posted, %u held of %u (wedged)", what, echo_txq()->inflight, st.rx_posted, st.rx_held,
			 st.rx_total);
	for (unsigned p = 0; p < 4; p++) {
		u32 len = 60 + 37 * p;
		u8 seed = (u8)(0xa0 + probes_sent++);
		unsigned before = dev.ntx;

		echo_frame(frame, len, seed);
		if (vd_rx_frame(&dev, NULL, frame, len) < 0)
			fail_msg("%s: probe %u: no receive buffer posted", what, p);
		for (unsigned r = 0; r < 4 && dev.ntx == before; r++) {
			vd_irq(&dev, VD_RX, false);
			run();
			hk_run_timers_until(12 * NSEC_PER_MSEC);
			vd_tx_complete(&dev, ~0u, false);
		}
		if (dev.ntx != before + 1)
			fail_msg("%s: probe %u did not come back (%u frames sent)", what, p, dev.ntx - before);
		f = vd_tx_last(&dev);
		assert_int_equal(f->len, len);
		assert_memory_equal(f->data, frame + 6, 6);
		assert_memory_equal(f->data + 12, frame + 12, len - 12);
		vd_irq(&dev, VD_TX, false);
		run();
	}
	check_rules(what);
}

/* ---- the transmit wakeup rule: device actions at step boundaries and full barriers ---- */

enum act { ACT_DONE1, ACT_DONE_ALL, ACT_TX_IRQ, ACT_N };
static const char *const act_names[ACT_N] = { "complete one", "complete all", "transmit interrupt" };

struct plan {
	unsigned n;
	unsigned at[2];		/* point index, non-decreasing */
	enum act act[2];
};

static struct {
	bool on;		/* counting points */
	bool in_hook;
	unsigned points;	/* so far in this run */
	const struct plan *plan;
	unsigned next;		/* next planned action */
} sched;

static void act(enum act a)
{
	switch (a) {
	case ACT_DONE1:
		vd_tx_complete(&dev, 1, false);
		break;
	case ACT_DONE_ALL:
		vd_tx_complete(&dev, ~0u, false);
		break;
	case ACT_TX_IRQ:
		vd_irq(&dev, VD_TX, false);	/* only one the device decided on */
		break;
	default:
		break;
	}
}

/* One point: step boundary or barrier. The planned actions due here run. */
static void point(void)
{
	if (!sched.on || sched.in_hook)
		return;
	sched.in_hook = true;
	while (sched.plan && sched.next < sched.plan->n && sched.plan->at[sched.next] == sched.points)
		act(sched.plan->act[sched.next++]);
	sched.points++;
	sched.in_hook = false;
}

static unsigned offered, refused;	/* frames offered to the device, refused for lack of buffers */

static void rx_burst(unsigned n, u8 seed)
{
	for (unsigned k = 0; k < n; k++) {
		offered++;
		echo_frame(frame, 60 + k, (u8)(seed + k));
		if (vd_rx_frame(&dev, NULL, frame, 60 + k) < 0) {
			refused += n - k;
			offered += n - k - 1;
			break;
		}
	}
}

/* The script: receive bursts the reflector answers, transmits completing
 * partly and late, the transmit interrupt delivered only when the device
 * decided on one, two steps after. 8 entries: 8 frames in flight hold every
 * receive buffer. Returns the points the run had. */
static unsigned script(u64 features, const struct plan *plan, const char *label)
{
	char what[160];
	static const struct {
		unsigned rx;		/* frames received (interrupt forced) */
		unsigned done;		/* transmits completed first */
		bool tx_irq;		/* deliver a decided transmit interrupt */
	} steps[] = {
		{ 3, 0, false }, { 0, 1, false }, { 3, 0, false }, { 0, 0, true },
		{ 0, 2, true }, { 2, 0, false }, { 0, 0, true }, { 1, 1, false },
	};
	unsigned points;

	echo_up(features, 8);
	sched.plan = plan;
	sched.next = 0;
	sched.points = 0;
	sched.on = true;
	shim_mb_hook = point;
	for (unsigned s = 0; s < ARRAY_SIZE(steps); s++) {
		point();
		if (steps[s].done)
			vd_tx_complete(&dev, steps[s].done, false);
		if (steps[s].rx) {
			rx_burst(steps[s].rx, (u8)(s * 16));
			vd_irq(&dev, VD_RX, true);
		}
		if (steps[s].tx_irq)
			vd_irq(&dev, VD_TX, false);
		run();
		snprintf(what, sizeof what, "%s, after step %u", label, s + 1);
		check_rules(what);
	}
	point();
	sched.on = false;
	shim_mb_hook = NULL;
	points = sched.points;
	snprintf(what, sizeof what, "%s, end", label);
	drain_and_probe(what);
	echo_down();
	return points;
}

static void plan_label(char *buf, size_t n, u64 features, const struct plan *p)
{
	int k = snprintf(buf, n, "features %#llx", (unsigned long long)features);

	if (!p || !p->n)
		snprintf(buf + k, n - (size_t)k, ", no device action");
	for (unsigned i = 0; p && i < p->n && (size_t)k < n; i++)
		k += snprintf(buf + k, n - (size_t)k, ", %s at point %u", act_names[p->act[i]], p->at[i]);
}

/* Every plan of up to `depth` actions; returns the runs. */
static unsigned explore(u64 features, unsigned depth)
{
	char label[200];
	struct plan p = { 0 };
	unsigned runs = 1, n0, n1;

	plan_label(label, sizeof label, features, &p);
	n0 = script(features, &p, label);
	for (unsigned a1 = 0; a1 < n0; a1++) {
		for (unsigned k1 = 0; k1 < ACT_N; k1++) {
			p = (struct plan){ 1, { a1, 0 }, { k1, 0 } };
			plan_label(label, sizeof label, features, &p);
			n1 = script(features, &p, label);
			runs++;
			if (depth < 2)
				continue;
			/* The run with a second action is the same up to it:
			 * point a2 exists if a2 < n1. */
			for (unsigned a2 = a1; a2 < n1; a2++) {
				for (unsigned k2 = 0; k2 < ACT_N; k2++) {
					p = (struct plan){ 2, { a1, a2 }, { k1, k2 } };
					plan_label(label, sizeof label, features, &p);
					script(features, &p, label);
					runs++;
				}
			}
		}
	}
	print_message("features %#llx: %u points without actions, %u interleavings\n",
		      (unsigned long long)features, n0, runs);
	return runs;
}

static void test_tx_wakeup_interleavings(void **state)
{
	explore(QEMU_LIKE, 2);
}

static void test_tx_wakeup_interleavings_other_rings(void **state)
{
	for (unsigned c = 1; c < ARRAY_SIZE(echo_configs); c++)
		explore(echo_configs[c], 1);
}

/* ---- the transmit wakeup rule: random overload ---- */

static u64 rng;

static u32 rnd(u32 n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (u32)((rng >> 33) % n);
}

/* Device actions of the random run inside the driver's code: one, at the
 * k-th point (full barrier, or before or after a callback is re-enabled)
 * of a step. */
static struct {
	int countdown;		/* < 0: none planned */
	unsigned what;
} rb;

static void random_hook(void)
{
	if (rb.countdown < 0 || rb.countdown-- > 0 || sched.in_hook)
		return;
	sched.in_hook = true;
	switch (rb.what) {
	case 0:
		vd_tx_complete(&dev, 1 + rnd(16), false);
		break;
	case 1:
		vd_tx_complete(&dev, ~0u, false);
		break;
	case 2:
		vd_irq(&dev, VD_TX, false);
		break;
	case 3:
		vd_irq(&dev, VD_RX, false);
		break;
	default:
		rx_burst(1 + rnd(4), 0x77);
		break;
	}
	if (lossy_irqs) {	/* what it decided on never comes */
		dev.irqs_seen[VD_TX] = dev.q[VD_TX].interrupts;
		dev.irqs_seen[VD_RX] = dev.q[VD_RX].interrupts;
	}
	sched.in_hook = false;
}

static void overload(u64 features, u64 seed, unsigned steps)
{
	char what[160];
	struct vnet_stats st;

	rng = seed;
	offered = refused = 0;
	echo_up(features, 64);
	rb.countdown = -1;
	shim_mb_hook = random_hook;
	for (unsigned step = 0; step < steps; step++) {
		unsigned r = rnd(100), burst = 0;

		if (step % 500 == 0)
			hk_cpu_busy(rnd(3) != 0);
		/* offered load: mostly far more than the ring holds */
		if (r < 50)
			burst = 1 + rnd(r < 25 ? 100 : 8);
		rx_burst(burst, (u8)step);
		if (rnd(4))
			vd_irq(&dev, VD_RX, false);
		/* the device's transmit side: bursts, late, or all at once */
		r = rnd(100);
		if (r < 30)
			vd_tx_complete(&dev, 1 + rnd(24), false);
		else if (r < 35)
			vd_tx_complete(&dev, ~0u, false);
		/* sometimes the device acts inside the driver's next run */
		rb.countdown = rnd(3) ? -1 : (int)rnd(12);
		rb.what = rnd(5);
		if (rnd(2))
			vd_irq(&dev, VD_TX, false);	/* else later: the device's interrupt is late */
		run();
		hk_run_timers_until(rnd(4) ? 20 * NSEC_PER_USEC : 500 * NSEC_PER_USEC);
		rb.countdown = -1;
		snprintf(what, sizeof what, "features %#llx seed %llu, step %u", (unsigned long long)features,
			 (unsigned long long)seed, step);
		check_rules(what);
	}
	shim_mb_hook = NULL;
	vnet_get_stats(vn, &st);
	print_message("overload %#llx: %u steps, %u frames offered, %u refused by the device (no buffer posted), "
		      "%llu in, %llu out, %llu transmit refusals (ring full)\n",
		      (unsigned long long)features, steps, offered, refused, (unsigned long long)st.q[0].frames,
		      (unsigned long long)st.q[1].frames, (unsigned long long)st.q[1].no_room);
	assert_true(refused > offered / 10);	/* the load did exceed what the driver could take */
	snprintf(what, sizeof what, "features %#llx seed %llu, after the load", (unsigned long long)features,
		 (unsigned long long)seed);
	drain_and_probe(what);
	echo_down();
}

static void test_tx_wakeup_overload(void **state)
{
	for (unsigned c = 0; c < ARRAY_SIZE(echo_configs); c++)
		overload(echo_configs[c], 37 + c, 3000);
}

/* The same overload against a device that now and then loses the
 * interrupts it decided on (lossy_irqs): the late re-check recovers. */
static void test_tx_wakeup_overload_lost_interrupts(void **state)
{
	lossy_irqs = true;
	overload(QEMU_LIKE, 91, 3000);
	overload(MODERN | MRG | INDIRECT, 92, 3000);
	lossy_irqs = false;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bus_no_driver, teardown),
		cmocka_unit_test_teardown(test_probe_remove_unattached, teardown),
		cmocka_unit_test_teardown(test_probe_failures_free_everything, teardown),
		cmocka_unit_test_teardown(test_probe_fails_after_queue_live, teardown),
		cmocka_unit_test_teardown(test_reset_never_completes, teardown),
		cmocka_unit_test_teardown(test_config_mac_and_torn_reads, teardown),
		cmocka_unit_test_teardown(test_config_garbage, teardown),
		cmocka_unit_test_teardown(test_rx_good_frames, teardown),
		cmocka_unit_test_teardown(test_rx_hold_everything_then_release, teardown),
		cmocka_unit_test_teardown(test_rx_merged, teardown),
		cmocka_unit_test_teardown(test_rx_tso, teardown),
		cmocka_unit_test_teardown(test_rx_bad_headers, teardown),
		cmocka_unit_test_teardown(test_rx_merged_bad, teardown),
		cmocka_unit_test_teardown(test_rx_ring_lies, teardown),
		cmocka_unit_test_teardown(test_tx_tokens, teardown),
		cmocka_unit_test_teardown(test_tx_ring_full_and_remove_outstanding, teardown),
		cmocka_unit_test_teardown(test_tx_add_error_fails_fast, teardown),
		cmocka_unit_test_teardown(test_tx_queue_broken_takes_link_down, teardown),
		cmocka_unit_test_teardown(test_tx_csum_offload, teardown),
		cmocka_unit_test_teardown(test_link_flaps, teardown),
		cmocka_unit_test_teardown(test_announce_then_ack, teardown),
		cmocka_unit_test_teardown(test_order_platform_barriers, teardown),
		cmocka_unit_test_teardown(test_no_order_platform_barriers, teardown),
		cmocka_unit_test_teardown(test_announce_needs_feature, teardown),
		cmocka_unit_test_teardown(test_link_up_recovers_lost_events, teardown),
		cmocka_unit_test_teardown(test_reset_with_buffers_held, teardown),
		cmocka_unit_test_teardown(test_reset_changes_buffer_size, teardown),
		cmocka_unit_test_teardown(test_reset_probe_fails, teardown),
		cmocka_unit_test_teardown(test_notf_coal_programmed, teardown),
		cmocka_unit_test_teardown(test_ctrl_refused_or_silent, teardown),
		cmocka_unit_test_teardown(test_ctrl_slow_answer, teardown),
		cmocka_unit_test_teardown(test_ctrl_late_answer, teardown),
		cmocka_unit_test_teardown(test_event_idx_coalescing, teardown),
		cmocka_unit_test_teardown(test_wakeup_invariant_split, teardown),
		cmocka_unit_test_teardown(test_wakeup_invariant_split_mrg, teardown),
		cmocka_unit_test_teardown(test_packed_legacy_indirect, teardown),
		cmocka_unit_test_teardown(test_echo, teardown),
		cmocka_unit_test_teardown(test_fault_seam_corrupts_next_rx, teardown),
		cmocka_unit_test_teardown(test_tx_wakeup_interleavings, echo_teardown),
		cmocka_unit_test_teardown(test_tx_wakeup_interleavings_other_rings, echo_teardown),
		cmocka_unit_test_teardown(test_tx_wakeup_overload, echo_teardown),
		cmocka_unit_test_teardown(test_tx_wakeup_overload_lost_interrupts, echo_teardown),
		cmocka_unit_test_teardown(test_rx_device_rewrites_held_pages, teardown),
		cmocka_unit_test_teardown(test_ctrl_reply_on_dma_page, teardown),
		cmocka_unit_test_teardown(test_tx_confined_bounces, teardown),
		cmocka_unit_test_teardown(test_tx_bounce_pool_bound, teardown),
		cmocka_unit_test_teardown(test_rx_device_races_the_copy, teardown),
		cmocka_unit_test_teardown(test_rx_device_writes_every_page, teardown),
		cmocka_unit_test_teardown(test_rx_device_writes_past_its_length, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
