/* libFuzzer target: the input is a hostile virtio-net device driving the
 * real drivers/virtio/net/virtio_net.c (built as in test_virtio_net, over the simulated
 * device in tests/host/simdev/). Two bytes choose the features (receive TSO
 * with checksums), queue size,
 * MTU, echo mode and the control queue's manners; then each op byte picks a
 * device or upper-layer action: good frames, raw used entries with
 * device-written headers, lengths, ids and num_buffers, ring lies,
 * interrupts (spurious ones too), transmit completions in any order, link
 * changes, config garbage, DEVICE_NEEDS_RESET re-probes (with allocation
 * failures, interrupt storms, or a reset that never completes), time passing, and the upper layer holding, releasing and
 * sending. After every op: the upper layer's checks (frame shape and bounds,
 * tx_done once per token, link changes), buffer conservation, and the
 * device's ring-rule checks on the driver. At the end: remove, every token
 * back, every page and heap block freed. Any violation aborts. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio/net/virtio_net.h"
#include "debug/vnet_echo.h"
#include "kernel/time/time.h"
#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/hostbus.h"
#include "tests/host/drivers/virtio/net/upper.h"
#include "tests/host/drivers/virtio/net/vnet_host.h"
#include "tests/host/simdev/vnetdev.h"

#define CHECK(c)                                                                        \
	do {                                                                            \
		if (!(c)) {                                                             \
			fprintf(stderr, "fuzz_virtio_net: invariant failed: %s (line %d)\n", \
				#c, __LINE__);                                          \
			abort();                                                        \
		}                                                                       \
	} while (0)

#define F(b)		VIRTIO_BIT(b)
#define TX_FRAME_MAX	2048u

struct in {
	const u8 *p;
	size_t n;
};

static u8 get8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static u16 get16(struct in *in)
{
	return (u16)(get8(in) | get8(in) << 8);
}

static u32 get32(struct in *in)
{
	return (u32)get16(in) | (u32)get16(in) << 16;
}

/* Lengths near the edges that matter, sometimes anything. */
static u32 pick_len(struct in *in, u32 cap)
{
	u32 r = get16(in);

	switch (r >> 14) {
	case 0:
		return r & 0x3f;			/* around the header */
	case 1:
		return cap - 8 + (r & 0xf);		/* around the buffer's end */
	case 2:
		return r & 0x1fff;
	default:
		return get32(in);
	}
}

static struct vnetdev dev;
static struct upper up;
static struct vnet *vn;
static bool echo_mode;
/* A raw used entry or a lie went past the simulated device's bookkeeping:
 * its later complaints about the receive ring are about itself, not the
 * driver, until the ring is set up again. */
static bool rx_desync;
static u8 txbuf[UP_TOKENS][TX_FRAME_MAX];
static u8 scratch[70000];

static void check(void)
{
	struct vnet_stats st;

	if (rx_desync)
		dev.q[VD_RX].errors = 0;
	CHECK(vd_errors(&dev) == 0 || (fprintf(stderr, "device: %s\n", vd_error(&dev)), 0));
	if (!vn)
		return;
	if (!echo_mode) {
		CHECK(up.errors == 0 || (fprintf(stderr, "upper: %s\n", up.error), 0));
		CHECK(up_check(&up) == 0);
		return;
	}
	vnet_get_stats(vn, &st);
	CHECK(st.rx_posted + st.rx_held + vnet_host_free_count(vn) == st.rx_total);
}

static void run(void)
{
	CHECK(hk_run(200000) < 200000);
}

static void make_frame(u8 *f, u32 len, u8 seed)
{
	for (u32 i = 0; i < len; i++)
		f[i] = (u8)(seed + i * 13);
	if (len >= 6)
		memcpy(f, "\x52\x54\x00\x12\x34\x56", 6);
}

static void op_good_frame(struct in *in)
{
	struct vd_hdr h = { .num_buffers = -1 };
	u8 b = get8(in);
	u32 len = 14 + get16(in) % 9100;

	if (b & 1)
		h.flags = VIRTIO_NET_HDR_F_DATA_VALID;
	if (b & 2) {
		h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.csum_start = (u16)(get16(in) % len);
		h.csum_offset = (u16)(get8(in) & 0x1e);
	}
	if (b & 4)
		h.num_buffers = get8(in);	/* maybe wrong */
	make_frame(scratch, len, b);
	if ((b & 8) && len >= 74) {
		/* A coalesced TCP segment (receive TSO), up to 64 KiB: IPv4 or
		 * IPv6 headers as gso_type says (or not, with b & 64), the IP
		 * length, gso_size and hdr_len from the input. */
		bool v6 = b & 16;
		u32 l4 = v6 ? 54 : 34;

		len = 74 + get16(in) % (VNET_FRAME_MAX - 73);
		make_frame(scratch, len, b);
		h.gso = v6 ? VIRTIO_NET_HDR_GSO_TCPV6 : VIRTIO_NET_HDR_GSO_TCPV4;
		h.gso_size = get16(in) % 1600;
		h.hdr_len = get16(in);
		scratch[12] = v6 ? 0x86 : 0x08;
		scratch[13] = v6 ? 0xdd : 0x00;
		scratch[14] = v6 ? 0x60 : 0x45;
		if (v6) {
			scratch[18] = (u8)((len - 54) >> 8);
			scratch[19] = (u8)(len - 54);
			scratch[20] = 6;
		} else {
			scratch[16] = (u8)((len - 14) >> 8);
			scratch[17] = (u8)(len - 14);
			scratch[20] = scratch[21] = 0;
			scratch[23] = 6;
		}
		scratch[l4 + 12] = 5 << 4;
		if (b & 32) {
			h.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
			h.csum_start = (u16)l4;
			h.csum_offset = 16;
		}
		if (b & 64)
			scratch[get8(in) % 74] = get8(in);	/* one header byte wrong */
	}
	vd_rx_frame(&dev, &h, scratch, len);
}

static void op_raw_frame(struct in *in)
{
	unsigned posted = vd_rx_posted(&dev), i;
	u8 hdr[VIRTIO_NET_HDR_LEN];
	u32 cap, used, n;

	if (!posted)
		return;
	i = dev.q[VD_RX].in_order ? 0 : get8(in) % posted;
	cap = vd_rx_buflen(&dev, i);
	for (unsigned k = 0; k < sizeof hdr; k++)
		hdr[k] = get8(in);
	used = pick_len(in, cap);
	n = MIN(used, cap);
	if (n > sizeof scratch)
		n = sizeof scratch;
	make_frame(scratch, n, hdr[0]);
	memcpy(scratch, hdr, MIN(n, (u32)sizeof hdr));
	vd_rx_raw(&dev, i, scratch, n, used, FAKE_LIE_NONE);
}

static void op_raw_used(struct in *in)
{
	struct fake_dev *q = &dev.q[VD_RX];
	u16 id = get16(in) % (u16)(q->num * 2 + 1);
	u32 len = pick_len(in, 4096);
	u8 b = get8(in);

	if (!dev.live[VD_RX])
		return;
	rx_desync = true;
	if (q->packed)
		fake_dev_raw_packed(q, id, len, (u16)((b & 1 ? VIRTQ_DESC_F_AVAIL : 0) |
						      (b & 2 ? VIRTQ_DESC_F_USED : 0) |
						      (b & 4 ? VIRTQ_DESC_F_WRITE : 0)));
	else
		fake_dev_raw_used(q, id, len, (u16)(b % 3 == 2 ? get16(in) : b % 3));
}

static void op_lie(struct in *in)
{
	static const enum fake_lie split_lies[] = {
		FAKE_LIE_LEN, FAKE_LIE_ID_RANGE, FAKE_LIE_IDX_JUMP, FAKE_LIE_IDX_AHEAD,
		FAKE_LIE_IDX_BACK, FAKE_LIE_ID_REPEAT,
	};
	static const enum fake_lie packed_lies[] = {
		FAKE_LIE_LEN, FAKE_LIE_ID_RANGE, FAKE_LIE_WRAP, FAKE_LIE_FLAGS, FAKE_LIE_ID_REPEAT,
	};
	struct fake_dev *q = &dev.q[VD_RX];
	u8 b = get8(in);
	enum fake_lie lie;
	u8 pkt[80];

	if (!vd_rx_posted(&dev))
		return;
	lie = q->packed ? packed_lies[b % ARRAY_SIZE(packed_lies)]
			: split_lies[b % ARRAY_SIZE(split_lies)];
	if (lie == FAKE_LIE_ID_REPEAT && !q->have_last_id)
		return;
	rx_desync = true;
	memset(pkt, 0, sizeof pkt);
	pkt[10] = 1;
	make_frame(pkt + 12, 60, b);
	vd_rx_raw(&dev, 0, pkt, sizeof pkt, sizeof pkt, lie);
}

static void op_send(struct in *in)
{
	u32 len = 14 + get16(in) % (TX_FRAME_MAX - 14);
	unsigned nseg = 1 + get8(in) % VNET_TX_MAX_SG, t;
	u8 b = get8(in);

	if (echo_mode)
		return;
	for (t = 0; t < UP_TOKENS; t++)
		if (!up.tok[t].sent || up.tok[t].done)
			break;
	if (t == UP_TOKENS)
		return;
	make_frame(txbuf[t], len, b);
	if (len >= 54 && (b & 1)) {	/* IPv4 TCP, for the checksum offload path */
		memcpy(txbuf[t] + 12, "\x08\x00\x45\x00", 4);
		txbuf[t][23] = 6;
		txbuf[t][20] = txbuf[t][21] = 0;
	}
	up_send(&up, t, txbuf[t], len, MIN(nseg, len), b & 2 ? VNET_TX_CSUM : 0);
}

static void op_reset(struct in *in)
{
	u8 b = get8(in);

	if (b & 1)
		dev.offered ^= F(VIRTIO_NET_F_MRG_RXBUF);
	if (b & 2) {
		dev.offered |= F(VIRTIO_NET_F_MTU);
		vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), get16(in));
	}
	if (b & 4)
		dev.qmax[VD_TX] = b & 8 ? 0 : 16;	/* a re-probe that fails */
	if (b & 16)
		hk_fail_kmem(get8(in) % 16, 1);
	if (b & 32)
		hk_fail_pages(get8(in) % 64, 1 + get8(in) % 4);
	if (b & 128) {
		u8 c = get8(in);

		dev.irq_storm = c & 1;		/* interrupts in every window */
		dev.reset_stuck = (c & 6) == 6;	/* the device is left dead */
	}
	vd_needs_reset(&dev);
	run();
	if (!dev.vd.dead)
		rx_desync = false;	/* fresh rings, fresh bookkeeping (a dead device keeps its own) */
	hk_fail_kmem(0, 0);
	hk_fail_pages(0, 0);
	dev.qmax[VD_TX] = dev.qmax[VD_RX];
	if (!dev.vd.driver && !(b & 64)) {	/* the core would leave it; try again */
		CHECK(dev.vd.priv == NULL);
		hk_probe(&dev.vd);
		run();
	}
	if (!vn)
		vn = vnet_host_for(&dev.vd);
}

static void setup(struct in *in)
{
	static const u16 qsizes[4] = { 8, 16, 64, 256 };
	u8 a = get8(in), b = get8(in);
	u64 f = F(VIRTIO_NET_F_MAC);

	if (a & 1)
		f |= F(VIRTIO_F_VERSION_1);
	if (a & 2)
		f |= F(VIRTIO_NET_F_MRG_RXBUF);
	if (a & 4)	/* receive TSO is negotiated only with MRG_RXBUF too */
		f |= F(VIRTIO_NET_F_CSUM) | F(VIRTIO_NET_F_GUEST_CSUM) | F(VIRTIO_NET_F_GUEST_TSO4) |
		     F(VIRTIO_NET_F_GUEST_TSO6);
	if (a & 8)
		f |= F(VIRTIO_F_EVENT_IDX);
	if ((a & 16) && (a & 1))
		f |= F(VIRTIO_F_RING_PACKED);
	if (a & 32)
		f |= F(VIRTIO_F_INDIRECT_DESC);
	if (a & 64)
		f |= F(VIRTIO_NET_F_CTRL_VQ) | F(VIRTIO_NET_F_CTRL_RX) | F(VIRTIO_NET_F_GUEST_ANNOUNCE);
	if (a & 128)
		f |= b & 1 ? F(VIRTIO_NET_F_VQ_NOTF_COAL) : F(VIRTIO_NET_F_NOTF_COAL);
	if (b & 2)
		f |= F(VIRTIO_NET_F_MTU);
	if ((b & 4) && (a & 1))
		f |= F(VIRTIO_F_IN_ORDER);
	if (b & 8)
		f |= F(VIRTIO_NET_F_STATUS);
	vd_init(&dev, f, qsizes[(b >> 4) & 3]);
	if (b & 2)
		vd_cfg_write16(&dev, offsetof(struct virtio_net_config, mtu), get16(in));
	echo_mode = b & 64;
	vnet_set_echo(echo_mode);
	dev.ctrl_mode = b & 128 ? (enum vd_ctrl_mode)(get8(in) % 5) : VD_CTRL_OK;
	dev.tx_auto = echo_mode;
	up_init(&up);
	hk_clock_autostep(dev.ctrl_mode == VD_CTRL_SILENT ? NSEC_PER_MSEC : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	unsigned ops = 0;

	setup(&in);
	vn = NULL;
	rx_desync = false;
	if (hk_probe(&dev.vd) == 0) {
		vn = vnet_host_for(&dev.vd);
		CHECK(vn);
		if (!echo_mode)
			CHECK(up_attach(&up, vn) == 0);
		run();
	}
	check();
	while (in.n && vn && ops++ < 400) {
		u8 op = get8(&in);

		switch (op % 16) {
		case 0:
		case 1:
			op_good_frame(&in);
			break;
		case 2:
			op_raw_frame(&in);
			break;
		case 3:
			op_raw_used(&in);
			break;
		case 4:
			op_lie(&in);
			break;
		case 5:
		case 6:
			vd_irq(&dev, VD_RX, op & 0x10);
			run();
			break;
		case 7:
			vd_tx_complete(&dev, get8(&in) % 8, op & 0x10);
			vd_irq(&dev, VD_TX, op & 0x20);
			run();
			break;
		case 8:
			hk_run_timers_until((u64)get16(&in) * NSEC_PER_USEC);
			break;
		case 9:
			vd_set_link(&dev, op & 0x10, op & 0x20);
			run();
			break;
		case 10:
			if (!echo_mode)
				up_release(&up, get8(&in), op & 0x10);
			run();
			break;
		case 11:
			op_send(&in);
			run();
			break;
		case 12:
			op_reset(&in);
			break;
		case 13:
			dev.ctrl_mode = (enum vd_ctrl_mode)(get8(&in) % 5);
			hk_clock_autostep(dev.ctrl_mode == VD_CTRL_SILENT ? NSEC_PER_MSEC : 0);
			if (dev.live[VD_CTRL])
				vd_ctrl_serve(&dev);	/* late answers */
			break;
		case 14:
			up.release_now = op & 0x10;
			hk_cpu_busy(op & 0x20);	/* lets adaptive coalescing engage */
			break;
		default:
			run();
			break;
		}
		check();
	}

	/* Shutdown: every token back once, every buffer and block freed. */
	if (dev.vd.driver)
		hk_remove(&dev.vd);
	run();
	if (!echo_mode) {
		up_release_all(&up);
		run();
		check();
		CHECK(up_tx_outstanding(&up) == 0);
	}
	vnet_host_forget_all();
	hk_loop_reset();
	hk_clock_autostep(0);
	hk_cpu_busy(false);
	up_fini(&up);
	vd_fini(&dev);
	hk_free_kept();	/* what a device left dead kept */
	CHECK(hk_pages_live() == 0);
	CHECK(hk_kmem_live() == 0);
	return 0;
}
