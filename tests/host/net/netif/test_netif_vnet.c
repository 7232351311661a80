/* net/netif/netif_vnet.c's transmit backlog against a scripted vnet_tx: frames
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
#include "net/net.h"
#include "lwip/init.h"
#include "lwip/pbuf.h"
#include "lwip/netif.h"
#include "lwip/ip_addr.h"
#include "net/netif/tso_out.h"
#include "tests/host/net/netif/netif_vnet_host.h"
#include "tests/host/shim/inet_csum.h"
#include "lib/byteorder.h"

/* ---- what netif_vnet.c calls besides lwIP and the kernel shim ---- */

static struct { int dummy; } fake_dev;
static enum { TX_OK, TX_FULL, TX_FAIL } tx_mode;
#define MAXSENT 1024
static void *sent[MAXSENT];
static unsigned sent_flags[MAXSENT], sent_n[MAXSENT];
static u8 sent_hdr[MAXSENT][64];	/* the first bytes of each frame's first piece */
static unsigned nsent, calls;
#define FULL_MAX 32
#define FULL_LEN 256
static u8 sent_full[FULL_MAX][FULL_LEN];	/* the whole of the first frames */
static u32 sent_len[FULL_MAX];

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

/* As drivers/virtio/net/virtio_net.c: a failing add takes the link down (the upper
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
	assert_true(nsent < MAXSENT);
	sent_flags[nsent] = flags;
	sent_n[nsent] = n;
	memcpy(sent_hdr[nsent], sg[0].addr, sg[0].len < 64 ? sg[0].len : 64);
	if (nsent < FULL_MAX) {
		u32 at = 0;

		for (unsigned i = 0; i < n; i++) {
			u32 k = sg[i].len < FULL_LEN - at ? sg[i].len : FULL_LEN - at;

			memcpy(sent_full[nsent] + at, sg[i].addr, k);
			at += k;
		}
		sent_len[nsent] = at;
	}
	sent[nsent++] = token;
	return 0;
}

static unsigned emerg_calls;

/* The panic path's driver call: counted, the frame untouched. */
int vnet_tx_emergency(struct vnet *vn, const void *frame, u32 len)
{
	emerg_calls++;
	return len ? 0 : -EINVAL;
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
	memset(&netif_vnet_tx_stats, 0, sizeof(netif_vnet_tx_stats));
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

/* The backlog's counters: a completion that leaves frames in the driver
 * refills the ring without draining it; one that finds the driver empty
 * while frames wait is counted (the ring ran dry before refilling). */
static void test_backlog_counters(void **state)
{
	assert_int_equal(nvh_linkoutput(frames[0]), ERR_OK);
	assert_int_equal(nvh_linkoutput(frames[1]), ERR_OK);
	assert_int_equal(netif_vnet_tx_stats.in_driver, 2);
	tx_mode = TX_FULL;
	for (unsigned i = 2; i < NFRAMES; i++)
		assert_int_equal(nvh_linkoutput(frames[i]), ERR_OK);
	assert_int_equal(netif_vnet_tx_stats.backlogged, NFRAMES - 2);
	assert_int_equal(netif_vnet_tx_stats.backlog_peak, NFRAMES - 2);
	/* One of two done, the ring still busy: refilled, not drained. */
	tx_mode = TX_OK;
	nvh_tx_done(sent[0]);
	assert_int_equal(netif_vnet_tx_stats.drained_with_backlog, 0);
	assert_int_equal(nvh_backlog_len(), 0);
	assert_int_equal(netif_vnet_tx_stats.in_driver, NFRAMES - 1);
	/* All but the last in flight done; one more frame parked behind a
	 * full ring; the last completion finds the driver empty with it
	 * waiting: counted once, and the frame goes out. */
	for (unsigned i = 1; i < NFRAMES - 1; i++)
		nvh_tx_done(sent[i]);
	assert_int_equal(netif_vnet_tx_stats.in_driver, 1);
	tx_mode = TX_FULL;
	assert_int_equal(nvh_linkoutput(frames[0]), ERR_OK);
	assert_int_equal(netif_vnet_tx_stats.backlogged, NFRAMES - 1);
	tx_mode = TX_OK;
	nvh_tx_done(sent[NFRAMES - 1]);
	assert_int_equal(netif_vnet_tx_stats.drained_with_backlog, 1);
	assert_int_equal(nvh_backlog_len(), 0);
	assert_ptr_equal(sent[NFRAMES], frames[0]);
	nvh_tx_done(sent[NFRAMES]);
	assert_int_equal(netif_vnet_tx_stats.in_driver, 0);
}

/* ---- GUEST_ANNOUNCE: what goes out when the device asks ---- */

static const u8 ann_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

/* The Internet checksum of an ICMPv6 message with its pseudo-header
 * (RFC 8200 8.1), computed here independently of lwIP: 0 when correct. */
static u16 icmp6_sum(const u8 *ip6)
{
	u32 len = (u32)ip6[4] << 8 | ip6[5];
	u32 sum = csum_add(len + 58, ip6 + 8, 32);	/* source and destination */

	return csum_fold(csum_add(sum, ip6 + 40, len));
}

static void check_na(unsigned i, const u8 addr[16])
{
	static const u8 allnodes_mac[6] = { 0x33, 0x33, 0, 0, 0, 1 };
	static const u8 allnodes[16] = { 0xff, 0x02, [15] = 1 };
	const u8 *f = sent_full[i], *ip = f + 14, *m = ip + 40;

	assert_int_equal(sent_len[i], 14 + 40 + 32);
	assert_memory_equal(f, allnodes_mac, 6);
	assert_memory_equal(f + 6, ann_mac, 6);
	assert_int_equal(get_be16(f + 12), 0x86dd);
	assert_int_equal(get_be16(ip + 4), 32);		/* payload length */
	assert_int_equal(ip[6], 58);			/* ICMPv6 */
	assert_int_equal(ip[7], 255);			/* hop limit (RFC 4861 7.1.2) */
	assert_memory_equal(ip + 8, addr, 16);
	assert_memory_equal(ip + 24, allnodes, 16);
	assert_int_equal(m[0], 136);			/* neighbour advertisement */
	assert_int_equal(m[1], 0);
	assert_int_equal(m[4], 0x20);			/* Override; not Router, not Solicited */
	assert_memory_equal(m + 8, addr, 16);		/* target */
	assert_int_equal(m[24], 2);			/* target link-layer address */
	assert_int_equal(m[25], 1);
	assert_memory_equal(m + 26, ann_mac, 6);
	assert_int_equal(icmp6_sum(ip), 0);
}

static void test_announce(void **state)
{
	static const u8 ll[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12, 0x34, 0x56 };
	static const u8 global[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 2 };
	static const u8 tentative[16] = { 0x20, 0x01, 0x0d, 0xb8, [15] = 3 };
	static const u8 bcast[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	ip4_addr_t ip, mask, gw;
	ip6_addr_t a6;
	struct netif *n;
	unsigned before;
	const u8 *f;

	n = nvh_netif_add(ann_mac);
	assert_non_null(n);
	IP4_ADDR(&ip, 10, 77, 0, 2);
	IP4_ADDR(&mask, 255, 255, 255, 0);
	IP4_ADDR(&gw, 10, 77, 0, 1);
	netif_set_addr(n, &ip, &mask, &gw);
	memcpy(a6.addr, ll, 16);
	ip6_addr_clear_zone(&a6);
	netif_ip6_addr_set(n, 0, &a6);
	netif_ip6_addr_set_state(n, 0, IP6_ADDR_PREFERRED);
	memcpy(a6.addr, global, 16);
	netif_ip6_addr_set(n, 1, &a6);
	netif_ip6_addr_set_state(n, 1, IP6_ADDR_PREFERRED);
	memcpy(a6.addr, tentative, 16);
	netif_ip6_addr_set(n, 2, &a6);
	netif_ip6_addr_set_state(n, 2, IP6_ADDR_TENTATIVE);

	/* Down: nothing to say, nothing sent. */
	before = nsent;
	nvh_announce();
	assert_int_equal(nsent, before);

	netif_set_up(n);
	netif_set_link_up(n);		/* lwIP's own reports: not ours to check */
	before = nsent;
	nvh_announce();
	/* A gratuitous ARP, then one NA per valid address; the tentative one
	 * is DAD's to speak for. */
	assert_int_equal(nsent, before + 3);
	assert_true(nsent <= FULL_MAX);
	f = sent_full[before];
	assert_true(sent_len[before] >= 42);
	assert_memory_equal(f, bcast, 6);
	assert_memory_equal(f + 6, ann_mac, 6);
	assert_int_equal(get_be16(f + 12), 0x0806);
	assert_int_equal(get_be16(f + 14), 1);		/* Ethernet */
	assert_int_equal(get_be16(f + 16), 0x0800);
	assert_int_equal(f[18], 6);
	assert_int_equal(f[19], 4);
	assert_int_equal(get_be16(f + 20), 1);		/* request (RFC 5227 3) */
	assert_memory_equal(f + 22, ann_mac, 6);	/* sender: us */
	assert_memory_equal(f + 28, &ip.addr, 4);
	assert_memory_equal(f + 38, &ip.addr, 4);	/* target: our own address */
	check_na(before + 1, ll);
	check_na(before + 2, global);

	/* Without an IPv4 address (DHCP not done) only the NAs go. */
	netif_set_ipaddr(n, IP4_ADDR_ANY4);
	before = nsent;
	nvh_announce();
	assert_int_equal(nsent, before + 2);
	check_na(before, ll);
	check_na(before + 1, global);

	for (unsigned i = 0; i < nsent; i++)
		nvh_tx_done(sent[i]);
	netif_set_down(n);
	nvh_netif_remove();
}

/* The driver fails the add of the first parked frame and takes the link
 * down while doing so: that frame and all the others are freed once. */
/* A panic's frame reaches the driver only while the link is up. */
static void test_emergency_needs_the_link(void **state)
{
	static const u8 frame[60];

	emerg_calls = 0;
	nvh_link(false);
	assert_int_equal(netif_vnet_emergency_tx(frame, sizeof frame), -EIO);
	nvh_link(true);
	assert_int_equal(netif_vnet_emergency_tx(frame, sizeof frame), 0);
	assert_int_equal(emerg_calls, 1);
	nvh_link(false);
	assert_int_equal(netif_vnet_emergency_tx(frame, sizeof frame), -EIO);
	assert_int_equal(emerg_calls, 1);
}

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

/* ---- segmentation offload: net/netif/tso_out.c through the netif ---- */

#define MSS 1460
#define NSEGS 5

static u8 site[NSEGS * MSS];	/* a site body: segments point into it (zero-copy) */
static struct pbuf *segs[NSEGS];

/* As lwIP builds a zero-copy segment: a RAM pbuf with the Ethernet, IPv4
 * and TCP headers, then a ROM pbuf over the body. */
static struct pbuf *segment(u16 sport, u32 seq, u32 len, u8 flags)
{
	struct pbuf *h = pbuf_alloc(PBUF_RAW, 54, PBUF_RAM), *b;
	u8 *p = h->payload;

	memset(p, 0, 54);
	put_be16(p + 12, 0x0800);
	p[14] = 0x45;
	put_be16(p + 16, 40 + len);
	p[22] = 64;
	p[23] = 6;
	memcpy(p + 26, "\x0a\x4d\x00\x02\x0a\x4d\x00\x01", 8);
	put_be16(p + 34, 80);
	put_be16(p + 36, sport);
	put_be16(p + 38, seq >> 16);
	put_be16(p + 40, seq & 0xffff);
	p[46] = 0x50;
	p[47] = flags;
	if (len) {
		b = pbuf_alloc(PBUF_RAW, (u16)len, PBUF_ROM);
		b->payload = site + (seq - 1000) % sizeof(site);
		pbuf_cat(h, b);
	}
	return h;
}

static int setup_tso(void **state)
{
	lwip_init();
	nvh_setup_tso((struct vnet *)&fake_dev);
	nsent = calls = 0;
	tx_mode = TX_OK;
	for (unsigned i = 0; i < NSEGS; i++)
		segs[i] = segment(40000, 1000 + i * MSS, i + 1 == NSEGS ? 500 : MSS,
				  0x10 | (i + 1 == NSEGS ? 0x08 : 0));
	return 0;
}

static int teardown_tso(void **state)
{
	for (unsigned i = 0; i < NSEGS; i++) {
		assert_int_equal(segs[i]->ref, 1);	/* only the test's own */
		pbuf_free(segs[i]);
	}
	nvh_teardown();
	return 0;
}

/* One burst of one flow: one frame for the device to cut, its header a
 * copy with the merged length, the body one piece; the segments are held
 * until the device is done with it, then released once. */
static void test_tso_merged_frame(void **state)
{
	for (unsigned i = 0; i < NSEGS; i++)
		assert_int_equal(nvh_linkoutput(segs[i]), ERR_OK);
	assert_int_equal(nsent, 0);	/* nothing before the burst ends */
	nvh_flush();
	assert_int_equal(nsent, 1);
	assert_int_equal(VNET_TX_GSO_SIZE(sent_flags[0]), MSS);
	assert_true(sent_flags[0] & VNET_TX_CSUM);
	assert_int_equal(sent_n[0], 2);	/* header copy, the body */
	assert_int_equal(sent_hdr[0][16] << 8 | sent_hdr[0][17], 40 + 4 * MSS + 500);
	assert_int_equal(sent_hdr[0][47], 0x18);	/* PSH from the last */
	assert_int_equal(((u8 *)segs[0]->payload)[47], 0x10);	/* lwIP's own header untouched */
	for (unsigned i = 0; i < NSEGS; i++)
		assert_int_equal(segs[i]->ref, 2);
	nvh_tx_done(sent[0]);
}

/* A retransmission is a burst of one: sent as it came, no offload. */
static void test_tso_single_segment_alone(void **state)
{
	assert_int_equal(nvh_linkoutput(segs[2]), ERR_OK);
	nvh_flush();
	assert_int_equal(nsent, 1);
	assert_ptr_equal(sent[0], segs[2]);
	assert_int_equal(VNET_TX_GSO_SIZE(sent_flags[0]), 0);
	nvh_tx_done(sent[0]);
}

/* Frames that cannot merge go out in the order they came: a frame of
 * another kind ends the merge before it, another flow too. */
static void test_tso_order_kept(void **state)
{
	struct pbuf *arp = pbuf_alloc(PBUF_RAW, 42, PBUF_RAM);
	struct pbuf *other = segment(40001, 1000 + 2 * MSS, MSS, 0x10);

	memset(arp->payload, 0, 42);
	put_be16((u8 *)arp->payload + 12, 0x0806);
	assert_int_equal(nvh_linkoutput(segs[0]), ERR_OK);
	assert_int_equal(nvh_linkoutput(segs[1]), ERR_OK);
	assert_int_equal(nvh_linkoutput(arp), ERR_OK);		/* flushes the merge, then goes */
	assert_int_equal(nvh_linkoutput(segs[2]), ERR_OK);
	assert_int_equal(nvh_linkoutput(other), ERR_OK);	/* another flow */
	assert_int_equal(nvh_linkoutput(segs[3]), ERR_OK);	/* not contiguous with segs[2]'s batch */
	nvh_flush();
	assert_int_equal(nsent, 5);
	assert_int_equal(VNET_TX_GSO_SIZE(sent_flags[0]), MSS);	/* segs 0 and 1 */
	assert_ptr_equal(sent[1], arp);
	assert_ptr_equal(sent[2], segs[2]);
	assert_ptr_equal(sent[3], other);
	assert_ptr_equal(sent[4], segs[3]);
	for (unsigned i = 0; i < nsent; i++)
		nvh_tx_done(sent[i]);
	assert_int_equal(arp->ref, 1);
	assert_int_equal(other->ref, 1);
	pbuf_free(arp);
	pbuf_free(other);
}

/* The driver refuses the merged frame and takes the link down inside the
 * flush: every segment is released exactly once (ASan and the reference
 * counts), and a frame while the link is down is refused. */
static void test_tso_link_down_in_flush(void **state)
{
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(nvh_linkoutput(segs[i]), ERR_OK);
	tx_mode = TX_FAIL;
	nvh_flush();
	assert_int_equal(calls, 1);
	assert_int_equal(nsent, 0);
	assert_int_equal(nvh_linkoutput(segs[3]), ERR_OK);	/* queued for the burst */
	nvh_flush();						/* refused: freed */
	assert_int_equal(nsent, 0);
}

/* A full ring parks the merged frame in the backlog like any other. */
static void test_tso_backlog(void **state)
{
	struct pbuf *first = segment(40002, 1000, 100, 0x18);

	assert_int_equal(nvh_linkoutput(first), ERR_OK);
	nvh_flush();
	assert_int_equal(nsent, 1);
	tx_mode = TX_FULL;
	for (unsigned i = 0; i < NSEGS; i++)
		assert_int_equal(nvh_linkoutput(segs[i]), ERR_OK);
	nvh_flush();
	assert_int_equal(nvh_backlog_len(), 1);
	tx_mode = TX_OK;
	nvh_tx_done(sent[0]);
	assert_int_equal(nsent, 2);
	assert_int_equal(VNET_TX_GSO_SIZE(sent_flags[1]), MSS);
	nvh_tx_done(sent[1]);
	assert_int_equal(first->ref, 1);
	pbuf_free(first);
}

/* Every record in flight (TSO_RECORDS_MAX, net/netif/tso_out.c): the next burst
 * goes out segment by segment, counted; completions give records back. */
static void test_tso_record_bound(void **state)
{
	static struct pbuf *p[2 * 257];
	unsigned i;

	for (i = 0; i < 2 * 257; i++)
		p[i] = segment((u16)(1000 + i / 2), 1000 + (i % 2) * MSS, MSS, 0x10);
	for (i = 0; i < 257; i++) {
		assert_int_equal(nvh_linkoutput(p[2 * i]), ERR_OK);
		assert_int_equal(nvh_linkoutput(p[2 * i + 1]), ERR_OK);
		nvh_flush();
	}
	assert_int_equal(tso_out_stats.no_record, 1);
	assert_int_equal(nsent, 256 + 2);
	for (i = 0; i < 256; i++)
		assert_int_equal(VNET_TX_GSO_SIZE(sent_flags[i]), MSS);
	assert_ptr_equal(sent[256], p[512]);
	assert_ptr_equal(sent[257], p[513]);
	for (i = 0; i < nsent; i++)
		nvh_tx_done(sent[i]);
	/* records are back: the next burst merges again */
	nsent = 0;
	assert_int_equal(nvh_linkoutput(p[0]), ERR_OK);
	assert_int_equal(nvh_linkoutput(p[1]), ERR_OK);
	nvh_flush();
	assert_int_equal(nsent, 1);
	assert_int_equal(VNET_TX_GSO_SIZE(sent_flags[0]), MSS);
	nvh_tx_done(sent[0]);
	for (i = 0; i < 2 * 257; i++) {
		assert_int_equal(p[i]->ref, 1);
		pbuf_free(p[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_backlog_drains_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_emergency_needs_the_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_error_releases_backlog, setup, teardown),
		cmocka_unit_test_setup_teardown(test_backlog_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso_merged_frame, setup_tso, teardown_tso),
		cmocka_unit_test_setup_teardown(test_announce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tso_single_segment_alone, setup_tso, teardown_tso),
		cmocka_unit_test_setup_teardown(test_tso_order_kept, setup_tso, teardown_tso),
		cmocka_unit_test_setup_teardown(test_tso_link_down_in_flush, setup_tso, teardown_tso),
		cmocka_unit_test_setup_teardown(test_tso_backlog, setup_tso, teardown_tso),
		cmocka_unit_test_setup_teardown(test_tso_record_bound, setup_tso, teardown_tso),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
