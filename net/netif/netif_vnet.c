/*
 * lwIP's netif on vireo's virtio-net driver: it owns the device (receive,
 * transmit and its backlog, link state) and exports the device's counters
 * (net/net.h). Addresses and the `vireo: ready` line are bring-up's
 * (net/netif/netup.c); the appliance is started by the composition root.
 *
 * Receive is zero-copy: each driver buffer of a frame becomes a PBUF_REF
 * custom pbuf whose struct lives in the buffer's upper-layer scratch bytes;
 * freeing the pbuf gives the buffer back to the driver (vnet_rx_release).
 * PBUF_REF, not PBUF_POOL/RAM: lwIP may then never grow a header into the
 * memory before the payload, which is the driver's.
 * What the stack keeps of received frames cannot drain the pool: above a
 * watermark of held buffers frames are copied into lwIP's heap instead, and
 * after each receive batch the global out-of-order caps are applied
 * (net/tcp/rxmem.h).
 *
 * Transmit maps a pbuf chain onto the driver's scatter-gather list and holds
 * a reference to the chain until the device is done (tx_done). While that
 * reference is held lwIP does not rewrite a TCP segment for retransmission
 * (tcp_output_segment_busy), so zero-copy is safe.
 *
 * When the transmit ring is full, frames wait in a bounded FIFO (in order,
 * each holding its pbuf reference) that drains as completions free slots:
 * dropping them instead would leave TCP to recover by retransmission
 * timeout, which at 32 connections x a 64 KiB window turned into p99
 * latencies over a second.
 *
 * Checksums: with VIRTIO_NET_F_CSUM the netif stops generating TCP
 * checksums and the driver offloads them; with GUEST_CSUM a frame the device
 * vouched for skips lwIP's TCP/UDP check (the netif's check flags are
 * switched for the one synchronous input call; fragments are always checked
 * since the verdict was about one frame, not the datagram).
 *
 * Receive segmentation offload (GUEST_TSO4/6): the driver hands up a TCP
 * segment of up to 64 KiB the device coalesced, validated (vnet_hdr.c), as
 * one chain of up to 17 buffers, and it goes to lwIP as one pbuf chain like
 * any frame: ip4/ip6 input trims the chain to the IP length, tcp_input takes
 * a segment longer than the MSS as it is (in-window data is queued, the rest
 * trimmed to the window), and its checksum is partial (NEEDS_CSUM, the
 * pseudo-header sum only) or vouched for (DATA_VALID), so the TCP check is
 * skipped as for any CSUM_OK frame; with neither flag lwIP checks the whole
 * segment's sum itself.
 *
 * Segmentation offload (HOST_TSO4/6): linkoutput hands every frame to
 * net/netif/tso_out.c, which merges consecutive full-MSS segments of one flow
 * from one burst into a frame the device cuts again and sends everything
 * through netif_vnet_send below, in order (the reasoning is in net/netif/tso_merge.h).
 *
 * Time: lwIP's timeouts run from one kernel timer re-armed at
 * sys_timeouts_sleeptime() after every entry into lwIP.
 */
#include "drivers/virtio/net/virtio_net.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/shell.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "kernel/time/timeline.h"
#include "lib/fmt.h"
#include "lib/metrics.h"
#include "lwip/etharp.h"
#include "lwip/ethip6.h"
#include "lwip/icmp6.h"
#include "lwip/inet_chksum.h"
#include "lwip/ip6.h"
#include "lwip/init.h"
#include "lwip/ip4_frag.h"
#include "lwip/mld6.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/stats.h"
#include "lwip/timeouts.h"
#include "net/port/lwip_port.h"
#include "net/net.h"
#include "net/tcp/rxmem.h"
#include "net/netif/tso_out.h"
#include "netif/ethernet.h"

_Static_assert(sizeof(struct pbuf_custom) <= VNET_RX_UPPER_SIZE, "pbuf_custom must fit the scratch");

static struct netif nif;
static struct vnet *vn;
static struct vnet_info info;
static struct timer lwip_timer;
static u64 lwip_deadline = ~0ULL;
static u16 check_flags;		/* the netif's checksum flags outside a CSUM_OK input */
static bool tso;		/* frames go through net/netif/tso_out.c */

#define TX_BACKLOG_MAX 4096	/* frames: 64 connections x a full TCP_SND_BUF (46) fit */
static struct pbuf **backlog;	/* FIFO of frames waiting for ring space */
static unsigned bl_head, bl_len;
static bool bl_flushing;
struct netif_vnet_tx_stats netif_vnet_tx_stats;
static struct work rxmem_work;	/* the out-of-order caps, after a receive batch */

bool netif_vnet_stats(struct vnet_stats *st)
{
	if (!vn)
		return false;
	vnet_get_stats(vn, st);
	return true;
}

void netif_vnet_rx_pool(u32 *held, u32 *total)
{
	*held = 0;
	*total = 0;
	if (vn)
		vnet_rx_pool(vn, held, total);
}

int netif_vnet_emergency_tx(const void *frame, u32 len)
{
	if (!vn || !netif_is_link_up(&nif))
		return -EIO;
	return vnet_tx_emergency(vn, frame, len);
}

/* ---- /metrics ---- */

static const char *const coal_mode_names[] = { "off", "fixed", "adaptive" };

__cold static void netif_vnet_q_counter(struct metrics_buf *b, const char *name, const char *help,
		      const struct vnet_stats *st, size_t off)
{
	static const char *const q[2] = { "queue=\"rx\"", "queue=\"tx\"" };

	metrics_family(b, name, METRICS_COUNTER, help);
	for (int i = 0; i < 2; i++)
		metrics_sample(b, name, q[i], *(const u64 *)(const void *)((const u8 *)&st->q[i] + off));
}

__cold static void netif_vnet_write_device(struct metrics_buf *b)
{
	struct vnet_stats st;
	char labels[64];

	if (!netif_vnet_stats(&st))
		return;
	netif_vnet_q_counter(b, "vireo_vnet_frames_total", "Frames received/sent by virtio-net", &st,
			     offsetof(struct vnet_qstats, frames));
	netif_vnet_q_counter(b, "vireo_vnet_bytes_total", "Frame bytes received/sent", &st, offsetof(struct vnet_qstats, bytes));
	netif_vnet_q_counter(b, "vireo_vnet_interrupts_total", "Queue interrupts taken", &st,
			     offsetof(struct vnet_qstats, interrupts));
	netif_vnet_q_counter(b, "vireo_vnet_polls_total", "Queue polls run from the event loop", &st,
			     offsetof(struct vnet_qstats, polls));
	netif_vnet_q_counter(b, "vireo_vnet_budget_exhausted_total", "Polls that used their whole budget", &st,
			     offsetof(struct vnet_qstats, budget_exhausted));
	netif_vnet_q_counter(b, "vireo_vnet_csum_offloaded_total", "Frames whose TCP/UDP checksum the device handled", &st,
			     offsetof(struct vnet_qstats, csum_offloaded));
	metrics_simple(b, "vireo_vnet_tx_ring_full_total", METRICS_COUNTER, "Transmits refused: ring full",
		       st.q[1].no_room);
	metrics_simple(b, "vireo_vnet_tx_bounced_frames_total", METRICS_COUNTER,
		       "Frames copied into DMA-only bounce pages (confining IOMMU)", st.q[1].bounced);
	metrics_simple(b, "vireo_vnet_tx_bounced_bytes_total", METRICS_COUNTER, "Bytes those copies took",
		       st.q[1].bounce_bytes);
	metrics_simple(b, "vireo_vnet_tx_bounce_full_total", METRICS_COUNTER,
		       "Transmits that waited for bounce space", st.q[1].bounce_full);
	metrics_simple(b, "vireo_netif_tx_backlogged_total", METRICS_COUNTER,
		       "Frames parked in the netif's transmit backlog (ring full)", netif_vnet_tx_stats.backlogged);
	metrics_simple(b, "vireo_netif_tx_backlog_peak", METRICS_GAUGE, "Most frames parked at once",
		       netif_vnet_tx_stats.backlog_peak);
	metrics_simple(b, "vireo_netif_tx_drained_with_backlog_total", METRICS_COUNTER,
		       "Completions that found the ring empty while frames were parked",
		       netif_vnet_tx_stats.drained_with_backlog);
	metrics_simple(b, "vireo_vnet_tso_frames_total", METRICS_COUNTER,
		       "Frames sent for the device to cut into segments (HOST_TSO4/6)", st.q[1].gso_frames);
	metrics_simple(b, "vireo_vnet_tso_segments_total", METRICS_COUNTER,
		       "Wire segments the device cut from them", st.q[1].gso_segments);
	metrics_simple(b, "vireo_vnet_rx_tso_frames_total", METRICS_COUNTER,
		       "TCP segments received coalesced by the device (GUEST_TSO4/6)", st.q[0].gso_frames);
	metrics_simple(b, "vireo_vnet_rx_tso_segments_total", METRICS_COUNTER,
		       "Wire segments those were coalesced from (by gso_size)", st.q[0].gso_segments);
	metrics_simple(b, "vireo_tso_merged_segments_total", METRICS_COUNTER,
		       "lwIP segments merged into offloaded frames", tso_out_stats.merged_segments);
	metrics_simple(b, "vireo_tso_unmerged_bursts_total", METRICS_COUNTER,
		       "Bursts sent segment by segment for want of a record or pbuf",
		       tso_out_stats.no_record + tso_out_stats.no_pbuf);
	metrics_family(b, "vireo_vnet_rx_drops_total", METRICS_COUNTER, "Received buffers dropped, by reason");
	for (int r = 1; r < VNET_DROP_COUNT; r++)
		metrics_sample1(b, "vireo_vnet_rx_drops_total", "reason", vnet_hdr_drop_name((enum vnet_drop)r),
				st.q[0].drops[r]);
	metrics_simple(b, "vireo_vnet_rx_buffers_posted", METRICS_GAUGE, "Receive buffers on the ring",
		       st.rx_posted);
	metrics_simple(b, "vireo_vnet_rx_buffers_held", METRICS_GAUGE, "Receive buffers held by the stack",
		       st.rx_held);
	metrics_simple(b, "vireo_vnet_rx_buffers", METRICS_GAUGE, "Receive buffers in all", st.rx_total);
	metrics_simple(b, "vireo_vnet_device_resets_total", METRICS_COUNTER, "DEVICE_NEEDS_RESET recoveries",
		       st.resets);
	metrics_simple(b, "vireo_vnet_link_resumes_total", METRICS_COUNTER,
		       "Link-up transitions: rings reclaimed, notified and polled", st.link_resumes);
	metrics_simple(b, "vireo_vnet_announces_total", METRICS_COUNTER,
		       "Announce requests from the device (GUEST_ANNOUNCE: after a live migration) answered",
		       st.announces);
	ksnprintf(labels, sizeof labels, "queue=\"rx\",mode=\"%s\",where=\"%s\"",
		  coal_mode_names[st.coal_mode < 3 ? st.coal_mode : 0], st.coal_device ? "device" : "driver");
	metrics_family(b, "vireo_vnet_coalesce_frames", METRICS_GAUGE, "Completions gathered per interrupt, in force");
	metrics_sample(b, "vireo_vnet_coalesce_frames", labels, st.coal_frames);
	metrics_family(b, "vireo_vnet_coalesce_hold_seconds", METRICS_GAUGE, "Longest hold of a completion, in force");
	metrics_sample_fixed(b, "vireo_vnet_coalesce_hold_seconds", labels, st.coal_usecs, 6);
	metrics_simple(b, "vireo_vnet_coalesce_changes_total", METRICS_COUNTER, "Adaptive coalescing changes",
		       st.coal.changes);
	metrics_simple(b, "vireo_vnet_coalesce_timer_wakeups_total", METRICS_COUNTER,
		       "Receive polls started by the coalescing timer", st.q[0].coal_timer_wakeups);
}

/* The device's and the netif's counters, and the receive pool rxmem's
 * watermark applies to (the pool's live state is the netif's). */
__cold static void netif_vnet_write_metrics(struct metrics_buf *b)
{
	u32 held, total;

	netif_vnet_write_device(b);
	netif_vnet_rx_pool(&held, &total);
	metrics_simple(b, "vireo_rxmem_held_watermark", METRICS_GAUGE,
		       "Receive buffers the stack may hold before frames are copied", rxmem_watermark(total));
	metrics_simple(b, "vireo_rxmem_held", METRICS_GAUGE, "Receive buffers the stack holds now", held);
}
METRICS_SOURCE(vnet, netif_vnet_write_metrics);

/* `net`: the device's link and traffic as the netif sees them. */
static void netif_vnet_cmd(const char *args)
{
	struct vnet_stats st;

	(void)args;
	if (!netif_vnet_stats(&st)) {
		kprintf("net: no virtio-net device\n");
		return;
	}
	kprintf("net: virtio%u link %s; rx %lu frames %lu B, tx %lu frames %lu B, tx ring full %lu; "
		"backlog %u of %u; rx buffers held %u of %u\n",
		info.index, netif_is_link_up(&nif) ? "up" : "down", st.q[0].frames, st.q[0].bytes, st.q[1].frames,
		st.q[1].bytes, st.q[1].no_room, bl_len, TX_BACKLOG_MAX, st.rx_held, st.rx_total);
}
SHELL_CMD(net, .name = "net", .fn = netif_vnet_cmd, .help = "the netif: link, frames and bytes, backlog");

/* ---- timers ---- */

static void netif_vnet_lwip_timer_fn(struct timer *t, void *arg);

/* After any entry into lwIP: wake up for its next timeout. */
static void netif_vnet_timers_rearm(void)
{
	u32 ms = sys_timeouts_sleeptime();
	u64 dl;

	if (ms == SYS_TIMEOUTS_SLEEPTIME_INFINITE) {
		if (lwip_deadline != ~0ULL)
			timer_stop(&lwip_timer);
		lwip_deadline = ~0ULL;
		return;
	}
	dl = time_ns() + (u64)ms * NSEC_PER_MSEC;
	/* Re-arm only when it moves earlier or has fired; later wakeups
	 * would only be early by a little and re-run this. */
	if (lwip_deadline == ~0ULL || dl < lwip_deadline) {
		lwip_deadline = dl;
		timer_start(&lwip_timer, dl);
	}
}

static void netif_vnet_lwip_timer_fn(struct timer *t, void *arg)
{
	(void)t;
	(void)arg;
	lwip_deadline = ~0ULL;
	sys_check_timeouts();
	netif_vnet_timers_rearm();
}

/* ---- receive ---- */

static void netif_vnet_rx_pbuf_free(struct pbuf *p)
{
	/* The pbuf_custom is the first member of the scratch, which is the
	 * first member of the buffer. */
	vnet_rx_release((struct vnet_rxbuf *)(void *)p);
}

static void netif_vnet_rxmem_work_fn(void *arg)
{
	(void)arg;
	rxmem_enforce();
}

/* dma.rx: whether a received frame is copied out of the device's pages
 * before the stack parses it. A device can still write those pages while
 * lwIP reads them (zero-copy: the pbufs point into them), so each header
 * would be fetched from memory it controls; a copy removes that, at the
 * price of one memcpy per frame. */
enum { RX_AUTO, RX_COPY, RX_ZEROCOPY };
static int rx_copy_mode = RX_AUTO;
static const char *const rx_copy_choices[] = { "auto", "copy", "zerocopy", NULL };
CMDLINE_PARAM(dma_rx, .key = "dma.rx", .type = CMDLINE_ENUM, .dst = &rx_copy_mode, .choices = rx_copy_choices,
	      .def = "auto",
	      .help = "copy received frames out of the device's pages before the stack reads them; "
		      "auto: when an IOMMU confines the device");

static void netif_vnet_rx(void *ctx, struct vnet_rxbuf *f, u32 len, unsigned flags)
{
	struct pbuf *head = NULL;
	u32 held, total;
	bool skip_check;

	(void)ctx;
	(void)len;
	while (f) {
		struct vnet_rxbuf *next = f->next;
		struct pbuf_custom *pc = (struct pbuf_custom *)(void *)f->upper;
		struct pbuf *p;

		pc->custom_free_function = netif_vnet_rx_pbuf_free;
		p = pbuf_alloced_custom(PBUF_RAW, (u16)f->len, PBUF_REF, pc, f->data, (u16)f->len);
		if (!head)
			head = p;
		else
			pbuf_cat(head, p);
		f = next;
	}
	/* Strict (dma.rx): copied out of the device's pages before anything
	 * reads it, the buffers reposted at once. Else past the watermark the
	 * frame is copied and its buffers reposted; NULL: no heap for the
	 * copy, dropped and counted. */
	if (rx_copy_mode == RX_COPY || (rx_copy_mode == RX_AUTO && (flags & VNET_RX_CONFINED))) {
		head = rxmem_copy(head);
	} else {
		vnet_rx_pool(vn, &held, &total);
		head = rxmem_admit(head, held, total);
	}
	work_queue(&rxmem_work);
	if (!head)
		return;
	skip_check = (flags & VNET_RX_CSUM_OK) && !vnet_hdr_is_ipv4_fragment(head->payload, head->len);
	if (skip_check)
		NETIF_SET_CHECKSUM_CTRL(&nif, check_flags & ~(NETIF_CHECKSUM_CHECK_TCP | NETIF_CHECKSUM_CHECK_UDP));
	if (nif.input(head, &nif) != ERR_OK)
		pbuf_free(head);
	if (skip_check)
		NETIF_SET_CHECKSUM_CTRL(&nif, check_flags);
	netif_vnet_timers_rearm();
}

/* ---- transmit ---- */

/* Hands one frame (holding its own reference) to the driver: 0, -ENOSPC
 * (keep it and retry) or another error (it was freed). */
static int netif_vnet_tx_one(struct pbuf *send)
{
	struct virtq_sg sg[VNET_TX_MAX_SG];
	unsigned cnt = 0;
	struct pbuf *q;
	int err;

	for (q = send; q && cnt < VNET_TX_MAX_SG; q = q->next)
		if (q->len)
			sg[cnt++] = (struct virtq_sg){ q->payload, q->len };
	err = vnet_tx(vn, sg, cnt, (info.tx_csum ? VNET_TX_CSUM : 0) | VNET_TX_GSO(tso_out_gso_size(send)), send);
	if (err == 0) {
		LINK_STATS_INC(link.xmit);
		netif_vnet_tx_stats.in_driver++;
	} else if (err != -ENOSPC) {
		pbuf_free(send);
		LINK_STATS_INC(link.drop);
	}
	return err;
}

static void netif_vnet_backlog_flush(void)
{
	if (bl_flushing)
		return;		/* a completion reclaimed inside vnet_tx() */
	bl_flushing = true;
	while (bl_len) {
		struct pbuf *p = backlog[bl_head];

		/* Off the backlog before the driver sees it: a transmit error
		 * takes the link down from inside vnet_tx(), and the link-down
		 * path frees whatever the backlog still holds. */
		bl_head = (bl_head + 1) % TX_BACKLOG_MAX;
		bl_len--;
		if (netif_vnet_tx_one(p) == -ENOSPC) {
			/* Back at the head; the ring was full, so the link is
			 * still up and the backlog has room for it. */
			bl_head = (bl_head + TX_BACKLOG_MAX - 1) % TX_BACKLOG_MAX;
			backlog[bl_head] = p;
			bl_len++;
			break;
		}
	}
	bl_flushing = false;
}

static void netif_vnet_backlog_drop(void)
{
	while (bl_len) {
		pbuf_free(backlog[bl_head]);
		LINK_STATS_INC(link.drop);
		bl_head = (bl_head + 1) % TX_BACKLOG_MAX;
		bl_len--;
	}
}

static void netif_vnet_tx_done(void *ctx, void *token)
{
	(void)ctx;
	pbuf_free(token);
	if (netif_vnet_tx_stats.in_driver)
		netif_vnet_tx_stats.in_driver--;
	if (bl_len) {
		if (!netif_vnet_tx_stats.in_driver)
			netif_vnet_tx_stats.drained_with_backlog++;
		netif_vnet_backlog_flush();
	}
}

/* Sends (or parks) one frame; takes a reference of its own. */
static err_t netif_vnet_send(struct pbuf *p)
{
	struct pbuf *q, *send = p;
	unsigned cnt = 0;

	for (q = p; q; q = q->next) {
		if (q->len == 0)
			continue;
		if (cnt == VNET_TX_MAX_SG)
			break;
		cnt++;
	}
	if (q) {	/* too many pieces: one copy */
		send = pbuf_clone(PBUF_RAW, PBUF_RAM, p);
		if (!send) {
			LINK_STATS_INC(link.memerr);
			return ERR_MEM;
		}
	} else {
		pbuf_ref(p);
	}
	if (!bl_len) {
		int err = netif_vnet_tx_one(send);

		if (err == 0)
			return ERR_OK;
		if (err != -ENOSPC)
			return ERR_IF;
	}
	if (bl_len == TX_BACKLOG_MAX || !backlog) {
		pbuf_free(send);
		LINK_STATS_INC(link.memerr);
		return ERR_MEM;
	}
	backlog[(bl_head + bl_len) % TX_BACKLOG_MAX] = send;
	bl_len++;
	netif_vnet_tx_stats.backlogged++;
	if (bl_len > netif_vnet_tx_stats.backlog_peak)
		netif_vnet_tx_stats.backlog_peak = bl_len;
	return ERR_OK;
}

static err_t netif_vnet_linkoutput(struct netif *n, struct pbuf *p)
{
	(void)n;
	return tso ? tso_out(p) : netif_vnet_send(p);
}

/* ---- link ---- */

/* ICMPv6 neighbour advertisement (RFC 4861 4.4) with a target link-layer
 * address option: 24 bytes of message, 8 of option. */
#define NA_LEN		24
#define NA_OPT_LEN	8
#define NA_FLAG_OVERRIDE 0x20

/* An unsolicited neighbour advertisement for each usable IPv6 address, to
 * all nodes (RFC 4861 7.2.6), after the link comes back: neighbours whose
 * cache entry went stale or failed while we were away learn at once that
 * the address is here again. lwIP sends the gratuitous ARP for IPv4 from
 * netif_set_link_up (LWIP_ACD is 0, see netif_issue_reports) but has no
 * such advertisement. Override set, Solicited and Router clear. */
static unsigned netif_vnet_announce_ip6(struct netif *n)
{
	ip6_addr_t allnodes;
	unsigned sent = 0;

	ip6_addr_set_allnodes_linklocal(&allnodes);
	ip6_addr_assign_zone(&allnodes, IP6_MULTICAST, n);
	for (int i = 0; i < LWIP_IPV6_NUM_ADDRESSES; i++) {
		const ip6_addr_t *a = netif_ip6_addr(n, i);
		struct pbuf *p;
		u16 sum;
		u8 *m;

		if (!ip6_addr_isvalid(netif_ip6_addr_state(n, i)))
			continue;	/* invalid or still tentative: DAD speaks for it */
		p = pbuf_alloc(PBUF_IP, NA_LEN + NA_OPT_LEN, PBUF_RAM);
		if (!p) {
			LINK_STATS_INC(link.memerr);
			continue;
		}
		m = p->payload;
		memset(m, 0, NA_LEN + NA_OPT_LEN);
		m[0] = ICMP6_TYPE_NA;
		m[4] = NA_FLAG_OVERRIDE;
		memcpy(m + 8, a->addr, 16);	/* target: the address, network order */
		m[NA_LEN] = 2;			/* option: target link-layer address */
		m[NA_LEN + 1] = 1;		/* length in units of 8 bytes */
		memcpy(m + NA_LEN + 2, n->hwaddr, ETH_HWADDR_LEN);
		/* The netif never offloads ICMPv6 checksums: always computed. */
		sum = ip6_chksum_pseudo(p, IP6_NEXTH_ICMP6, p->tot_len, a, &allnodes);
		memcpy(m + 2, &sum, 2);
		if (ip6_output_if(p, a, &allnodes, 255, 0, IP6_NEXTH_ICMP6, n) == ERR_OK)
			sent++;
		pbuf_free(p);
		ND6_STATS_INC(nd6.xmit);
	}
	return sent;
}

/* The device asks us to announce ourselves (virtio-net GUEST_ANNOUNCE; QEMU
 * does after a live migration and on QMP announce-self): the switch in
 * front of the new host has not seen our MAC yet, and neighbours may hold
 * stale entries. A gratuitous ARP (RFC 5227 3: an ARP request with our
 * address as both sender and target, to broadcast) moves the bridge's
 * forwarding entry and refreshes IPv4 caches; an unsolicited neighbour
 * advertisement per valid IPv6 address (link-local and global alike) does
 * the same for IPv6. With no IPv4 address yet (DHCP pending) there is
 * nothing to claim: the NA for the link-local address still goes. */
static void netif_vnet_announce(void *ctx)
{
	unsigned na;
	bool arp = false;

	(void)ctx;
	if (!netif_is_up(&nif) || !netif_is_link_up(&nif)) {
		kprintf("net: announce skipped: link down\n");
		return;
	}
	if (!ip4_addr_isany_val(*netif_ip4_addr(&nif)))
		arp = etharp_gratuitous(&nif) == ERR_OK;
	na = netif_vnet_announce_ip6(&nif);
	kprintf("net: announced: %s, %u neighbour advertisement%s\n", arp ? "gratuitous ARP" : "no ARP", na,
		na == 1 ? "" : "s");
}

static void netif_vnet_link(void *ctx, bool up)
{
	(void)ctx;
	static bool first_up = true;

	/* netif_set_link_up/down run the netif's link callback: bring-up
	 * (net/netif/netup.c) sees the change there. */
	if (up) {
		if (first_up)
			timeline_mark("link");
		netif_set_link_up(&nif);
		if (!first_up)
			netif_vnet_announce_ip6(&nif);
		first_up = false;
	} else {
		netif_set_link_down(&nif);
		if (tso)
			tso_out_flush();	/* refused by the driver: freed */
		netif_vnet_backlog_drop();
	}
	netif_vnet_timers_rearm();
}

static err_t netif_vnet_netif_init(struct netif *n)
{
	n->name[0] = 'e';
	n->name[1] = 'n';
	n->hwaddr_len = ETH_HWADDR_LEN;
	memcpy(n->hwaddr, info.mac, ETH_HWADDR_LEN);
	n->mtu = info.mtu;
	n->mtu6 = info.mtu;
	n->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET | NETIF_FLAG_IGMP |
		   NETIF_FLAG_MLD6;
	n->output = etharp_output;
	n->output_ip6 = ethip6_output;
	n->linkoutput = netif_vnet_linkoutput;
	check_flags = NETIF_CHECKSUM_ENABLE_ALL;
	if (info.tx_csum)
		check_flags &= (u16)~NETIF_CHECKSUM_GEN_TCP;
	NETIF_SET_CHECKSUM_CTRL(n, check_flags);
	netif_set_hostname(n, "vireo");
	return ERR_OK;
}

struct netif *netif_vnet_add(void)
{
	ip4_addr_t zero;

	vn = vnet_get();
	if (!vn) {
		kprintf("net: no virtio-net device; the appliance is not started\n");
		return NULL;
	}
	if (vireo_lwip_init())
		return NULL;
	timer_init(&lwip_timer, netif_vnet_lwip_timer_fn, NULL);
	rxmem_init();
	work_init(&rxmem_work, netif_vnet_rxmem_work_fn, NULL);
	backlog = kmalloc(TX_BACKLOG_MAX * sizeof(*backlog));
	vnet_get_info(vn, &info);
	tso = info.tx_csum && (info.tx_tso4 || info.tx_tso6);
	if (tso)
		tso_out_init(netif_vnet_send, info.tx_tso4, info.tx_tso6, VNET_TX_MAX_SG - 1);
	ip4_addr_set_zero(&zero);
	if (!netif_add(&nif, &zero, &zero, &zero, NULL, netif_vnet_netif_init, netif_input)) {
		kprintf("net: netif_add failed\n");
		return NULL;
	}
	netif_set_default(&nif);
	kprintf("net: lwIP %s on virtio%u, mtu %u, checksums: tx %s, rx %s; segmentation offload: %s; "
		"receive offload: %s\n",
		LWIP_VERSION_STRING, info.index, info.mtu, info.tx_csum ? "offloaded" : "software",
		info.rx_csum ? "offloaded" : "software",
		!tso ? "off" : info.tx_tso4 && info.tx_tso6 ? "tso4 tso6" : info.tx_tso4 ? "tso4" : "tso6",
		info.rx_tso4 && info.rx_tso6 ? "tso4 tso6" : info.rx_tso4 ? "tso4" : info.rx_tso6 ? "tso6" : "off");
	return &nif;
}

void netif_vnet_attach(void)
{
	static const struct vnet_upper up = { NULL, netif_vnet_rx, netif_vnet_tx_done, netif_vnet_link,
						netif_vnet_announce };

	if (!vn)
		return;
	vnet_attach(vn, &up);	/* link state arrives now */
	netif_vnet_timers_rearm();
}
