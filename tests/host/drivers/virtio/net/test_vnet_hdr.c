/* drivers/virtio/net/vnet_hdr.c (receive checks, transmit header, checksums) and
 * drivers/virtio/net/vnet_ctrl.c (control commands). The commands are proven against a
 * simulated control device written here from the spec: it reads the chain
 * the way a device does, applies the command to its state and writes the
 * ack (QEMU 7.2 has no NOTF_COAL, so this is where those commands are tried). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "drivers/virtio/net/vnet_hdr.h"
#include "drivers/virtio/net/vnet_ctrl.h"
#include "lib/byteorder.h"

/* ======================================================================
 * Receive checks
 * ==================================================================== */

#define POSTED 1526u

static u8 buf[4096];

static const struct vnet_rx_cfg CFG_V1 = {	/* VERSION_1, no MRG_RXBUF */
	.hdr_len = 12, .mrg_rxbuf = false, .guest_csum = true,
	.max_buffers = 1, .max_frame = 1514,
};
static const struct vnet_rx_cfg CFG_LEGACY = {	/* legacy, no MRG_RXBUF */
	.hdr_len = 10, .mrg_rxbuf = false, .guest_csum = false,
	.max_buffers = 1, .max_frame = 1514,
};
static const struct vnet_rx_cfg CFG_MRG = {
	.hdr_len = 12, .mrg_rxbuf = true, .guest_csum = true,
	.max_buffers = 8, .max_frame = 9000,
};

/* A received packet as a device writes it. */
static void rx_hdr(u8 *b, u8 flags, u8 gso, u16 start, u16 off, u16 nbuf)
{
	memset(b, 0, 12);
	b[0] = flags;
	b[1] = gso;
	b[6] = (u8)start;
	b[7] = (u8)(start >> 8);
	b[8] = (u8)off;
	b[9] = (u8)(off >> 8);
	b[10] = (u8)nbuf;
	b[11] = (u8)(nbuf >> 8);
}

static void expect_drop(const struct vnet_rx_cfg *cfg, u32 used, u32 posted, int err,
			enum vnet_drop why)
{
	struct vnet_rx_info info;

	assert_int_equal(vnet_hdr_rx_check(cfg, buf, used, posted, &info), err);
	assert_int_equal(info.drop, why);
	assert_int_equal(info.bufs_left, 0);
}

static void test_hdr_len_rules(void **state)
{
	assert_int_equal(vnet_hdr_len(true, false), 12);
	assert_int_equal(vnet_hdr_len(true, true), 12);
	assert_int_equal(vnet_hdr_len(false, true), 12);
	assert_int_equal(vnet_hdr_len(false, false), 10);
}

static void test_rx_single_ok(void **state)
{
	struct vnet_rx_info info;

	/* Without MRG_RXBUF num_buffers is not read (QEMU leaves it as is). */
	rx_hdr(buf, 0, 0, 0, 0, 0xbeef);
	assert_int_equal(vnet_hdr_rx_check(&CFG_V1, buf, 12 + 60, POSTED, &info), 0);
	assert_int_equal(info.drop, VNET_DROP_NONE);
	assert_int_equal(info.frame_off, 12);
	assert_int_equal(info.first_len, 60);
	assert_int_equal(info.frame_len, 60);
	assert_int_equal(info.num_buffers, 1);
	assert_int_equal(info.bufs_left, 0);
	assert_false(info.csum_valid);
	assert_false(info.needs_csum);

	/* Legacy: 10-byte header, frame starts at 10. */
	rx_hdr(buf, 0, 0, 0, 0, 0);
	assert_int_equal(vnet_hdr_rx_check(&CFG_LEGACY, buf, 10 + 14, POSTED, &info), 0);
	assert_int_equal(info.frame_off, 10);
	assert_int_equal(info.frame_len, 14);

	/* Exactly the posted length, and exactly max_frame. */
	assert_int_equal(vnet_hdr_rx_check(&CFG_V1, buf, 12 + 1514, 12 + 1514, &info), 0);
	assert_int_equal(info.frame_len, 1514);
	expect_drop(&CFG_V1, 12 + 1515, 12 + 1515, -EBADMSG, VNET_DROP_FRAME_TOO_BIG);
}

static void test_rx_lengths(void **state)
{
	rx_hdr(buf, 0, 0, 0, 0, 1);
	expect_drop(&CFG_V1, POSTED + 1, POSTED, -EOVERFLOW, VNET_DROP_TOO_LONG);
	expect_drop(&CFG_V1, 0xffffffffu, POSTED, -EOVERFLOW, VNET_DROP_TOO_LONG);
	expect_drop(&CFG_V1, 12 + 13, POSTED, -EBADMSG, VNET_DROP_TOO_SHORT);
	expect_drop(&CFG_V1, 11, POSTED, -EBADMSG, VNET_DROP_TOO_SHORT);
	expect_drop(&CFG_V1, 0, POSTED, -EBADMSG, VNET_DROP_TOO_SHORT);
	expect_drop(&CFG_LEGACY, 10 + 13, POSTED, -EBADMSG, VNET_DROP_TOO_SHORT);
	expect_drop(&CFG_MRG, 12 + 13, POSTED, -EBADMSG, VNET_DROP_TOO_SHORT);
}

static void test_rx_num_buffers(void **state)
{
	struct vnet_rx_info info;

	rx_hdr(buf, 0, 0, 0, 0, 0);
	expect_drop(&CFG_MRG, 100, POSTED, -EBADMSG, VNET_DROP_BAD_NUM_BUFFERS);
	rx_hdr(buf, 0, 0, 0, 0, 9);		/* max_buffers is 8 */
	expect_drop(&CFG_MRG, POSTED, POSTED, -EBADMSG, VNET_DROP_BAD_NUM_BUFFERS);
	rx_hdr(buf, 0, 0, 0, 0, 0xffff);
	expect_drop(&CFG_MRG, POSTED, POSTED, -EBADMSG, VNET_DROP_BAD_NUM_BUFFERS);
	rx_hdr(buf, 0, 0, 0, 0, 8);
	assert_int_equal(vnet_hdr_rx_check(&CFG_MRG, buf, POSTED, POSTED, &info), 0);
	assert_int_equal(info.num_buffers, 8);
	assert_int_equal(info.bufs_left, 7);
	rx_hdr(buf, 0, 0, 0, 0, 1);
	assert_int_equal(vnet_hdr_rx_check(&CFG_MRG, buf, 100, POSTED, &info), 0);
	assert_int_equal(info.num_buffers, 1);
	assert_int_equal(info.bufs_left, 0);
	assert_int_equal(info.frame_len, 88);
}

static void test_rx_flags(void **state)
{
	struct vnet_rx_info info;

	/* Checksum flags need GUEST_CSUM. */
	rx_hdr(buf, VIRTIO_NET_HDR_F_DATA_VALID, 0, 0, 0, 1);
	expect_drop(&CFG_LEGACY, 10 + 60, POSTED, -EBADMSG, VNET_DROP_BAD_FLAGS);
	assert_int_equal(vnet_hdr_rx_check(&CFG_V1, buf, 12 + 60, POSTED, &info), 0);
	assert_true(info.csum_valid);
	assert_false(info.needs_csum);
	rx_hdr(buf, VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 34, 16, 1);
	expect_drop(&CFG_LEGACY, 10 + 60, POSTED, -EBADMSG, VNET_DROP_BAD_FLAGS);
	/* RSC_INFO needs RSC_EXT, never negotiated. */
	rx_hdr(buf, VIRTIO_NET_HDR_F_RSC_INFO, 0, 0, 0, 1);
	expect_drop(&CFG_V1, 12 + 60, POSTED, -EBADMSG, VNET_DROP_BAD_FLAGS);
	/* Unknown bits are ignored (the spec says the driver MUST). */
	rx_hdr(buf, 0xf8, 0, 0, 0, 1);
	assert_int_equal(vnet_hdr_rx_check(&CFG_V1, buf, 12 + 60, POSTED, &info), 0);
	assert_int_equal(vnet_hdr_rx_check(&CFG_LEGACY, buf, 10 + 60, POSTED, &info), 0);
	assert_false(info.csum_valid);
}

static void test_rx_csum_offsets(void **state)
{
	struct vnet_rx_info info;

	rx_hdr(buf, VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 34, 16, 1);
	assert_int_equal(vnet_hdr_rx_check(&CFG_V1, buf, 12 + 52, POSTED, &info), 0);
	assert_true(info.needs_csum);
	assert_int_equal(info.csum_start, 34);
	assert_int_equal(info.csum_offset, 16);
	/* 34 + 16 + 2 = 52: one byte less is too short. */
	expect_drop(&CFG_V1, 12 + 51, POSTED, -EBADMSG, VNET_DROP_BAD_CSUM_OFFSETS);
	rx_hdr(buf, VIRTIO_NET_HDR_F_NEEDS_CSUM, 0, 0xffff, 0xffff, 1);
	expect_drop(&CFG_V1, 12 + 1514, POSTED, -EBADMSG, VNET_DROP_BAD_CSUM_OFFSETS);
	/* Offsets are only read with NEEDS_CSUM. */
	rx_hdr(buf, VIRTIO_NET_HDR_F_DATA_VALID, 0, 0xffff, 0xffff, 1);
	assert_int_equal(vnet_hdr_rx_check(&CFG_V1, buf, 12 + 60, POSTED, &info), 0);
	assert_int_equal(info.csum_start, 0);
	assert_int_equal(info.csum_offset, 0);
}

static void test_rx_gso(void **state)
{
	static const u8 types[] = {
		VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_UDP, VIRTIO_NET_HDR_GSO_TCPV6,
		VIRTIO_NET_HDR_GSO_UDP_L4, VIRTIO_NET_HDR_GSO_ECN,
		VIRTIO_NET_HDR_GSO_ECN | VIRTIO_NET_HDR_GSO_TCPV4, 2, 0xff,
	};

	for (size_t i = 0; i < sizeof types; i++) {
		rx_hdr(buf, 0, types[i], 0, 0, 1);
		expect_drop(&CFG_V1, 12 + 60, POSTED, -EBADMSG, VNET_DROP_BAD_GSO);
	}
}

/* ---- receive segmentation offload (GUEST_TSO4/6) ---- */

static const struct vnet_rx_cfg CFG_GSO = {
	.hdr_len = 12, .mrg_rxbuf = true, .guest_csum = true,
	.max_buffers = 32, .max_frame = 1518,
	.guest_tso4 = true, .guest_tso6 = true, .max_gso_frame = VNET_FRAME_MAX,
};

#define GSO_POSTED 4000u	/* buffer 1 of a merged GSO frame: full */

/* A GSO frame in buf as a device writes it: header (type, gso_size, hdr_len,
 * NEEDS_CSUM at the TCP checksum, nbuf), then Ethernet, IPv4 (IHL 5) or
 * IPv6, and TCP with 12 bytes of options; the IP length says frame_len. */
static u32 gso_frame(u8 type, u16 gso_size, u16 nbuf, u32 frame_len)
{
	u8 *f = buf + 12;
	u32 l4 = type == VIRTIO_NET_HDR_GSO_TCPV6 ? 54 : 34;

	memset(buf, 0, sizeof(buf));
	rx_hdr(buf, VIRTIO_NET_HDR_F_NEEDS_CSUM, type, (u16)l4, 16, nbuf);
	buf[2] = (u8)(l4 + 32);			/* hdr_len */
	buf[4] = (u8)gso_size;
	buf[5] = (u8)(gso_size >> 8);
	if (type == VIRTIO_NET_HDR_GSO_TCPV6) {
		f[12] = 0x86; f[13] = 0xdd;
		f[14] = 0x60;
		f[18] = (u8)((frame_len - 54) >> 8);
		f[19] = (u8)(frame_len - 54);
		f[20] = 6;			/* next header: TCP */
		f[21] = 64;
	} else {
		f[12] = 0x08; f[13] = 0x00;
		f[14] = 0x45;
		f[16] = (u8)((frame_len - 14) >> 8);
		f[17] = (u8)(frame_len - 14);
		f[20] = 0x40;			/* DF */
		f[22] = 64;
		f[23] = 6;
	}
	f[l4 + 12] = 8 << 4;			/* data offset: 32 bytes */
	return l4 + 32;
}

/* Runs a 64,000-byte GSO frame through check and merge: buffer 1 holds
 * GSO_POSTED - 12 frame bytes, the rest come in full GSO_POSTED buffers. */
static int gso_run(const struct vnet_rx_cfg *cfg, u32 frame_len, struct vnet_rx_info *info)
{
	u32 left = frame_len - (GSO_POSTED - 12);
	int err = vnet_hdr_rx_check(cfg, buf, GSO_POSTED, GSO_POSTED, info);

	while (!err && info->bufs_left) {
		u32 n = left < GSO_POSTED ? left : GSO_POSTED;

		err = vnet_hdr_rx_merge(cfg, info, n, GSO_POSTED);
		left -= n;
	}
	return err;
}

static u16 gso_nbuf(u32 frame_len)
{
	return (u16)(1 + (frame_len - (GSO_POSTED - 12) + GSO_POSTED - 1) / GSO_POSTED);
}

static void test_rx_gso_ok(void **state)
{
	struct vnet_rx_info info;
	u32 len = 64000, hdrs;

	hdrs = gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, gso_nbuf(len), len);
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);
	assert_int_equal(info.frame_len, len);
	assert_int_equal(info.gso_type, VIRTIO_NET_HDR_GSO_TCPV4);
	assert_int_equal(info.gso_size, 1448);
	assert_int_equal(info.gso_hdrs, hdrs);
	assert_int_equal(info.num_buffers, 17);
	assert_true(info.needs_csum);
	/* (64000 - 66) / 1448 = 44.2: 45 wire segments */
	assert_int_equal(vnet_hdr_rx_gso_segments(&info), 45);

	hdrs = gso_frame(VIRTIO_NET_HDR_GSO_TCPV6, 1428, gso_nbuf(len), len);
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);
	assert_int_equal(info.gso_type, VIRTIO_NET_HDR_GSO_TCPV6);
	assert_int_equal(info.gso_hdrs, 86);
	assert_int_equal(vnet_hdr_rx_gso_segments(&info), (len - 86 + 1427) / 1428);

	/* The largest frame there is, and a GSO frame that fits one buffer. */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, gso_nbuf(VNET_FRAME_MAX), VNET_FRAME_MAX);
	assert_int_equal(gso_run(&CFG_GSO, VNET_FRAME_MAX, &info), 0);
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, 1, 1000);
	assert_int_equal(vnet_hdr_rx_check(&CFG_GSO, buf, 12 + 1000, GSO_POSTED, &info), 0);
	assert_int_equal(vnet_hdr_rx_gso_segments(&info), 1);

	/* DATA_VALID or no flag at all (lwIP then checks the sum itself). */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, gso_nbuf(len), len);
	buf[0] = VIRTIO_NET_HDR_F_DATA_VALID;
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);
	assert_true(info.csum_valid && !info.needs_csum);
	buf[0] = 0;
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);

	/* A frame that is not GSO stays within max_frame. */
	rx_hdr(buf, 0, 0, 0, 0, 1);
	assert_int_equal(vnet_hdr_rx_check(&CFG_GSO, buf, 12 + 1518, GSO_POSTED, &info), 0);
	assert_int_equal(vnet_hdr_rx_gso_segments(&info), 1);
	expect_drop(&CFG_GSO, 12 + 1519, GSO_POSTED, -EBADMSG, VNET_DROP_FRAME_TOO_BIG);
}

/* A hostile field in an otherwise good 64,000-byte IPv4 GSO frame. */
static void gso_expect(const struct vnet_rx_cfg *cfg, u32 len, enum vnet_drop why)
{
	struct vnet_rx_info info;

	assert_int_equal(gso_run(cfg, len, &info) < 0, true);
	assert_int_equal(info.drop, why);
	assert_int_equal(info.bufs_left, 0);
}

static void test_rx_gso_hostile(void **state)
{
	struct vnet_rx_cfg c;
	struct vnet_rx_info info;
	const u32 len = 64000;
	const u16 nb = gso_nbuf(len);
	static const u8 bad_types[] = {
		VIRTIO_NET_HDR_GSO_UDP, VIRTIO_NET_HDR_GSO_UDP_L4, 2, 6, 0x7f, 0xff,
		VIRTIO_NET_HDR_GSO_ECN | VIRTIO_NET_HDR_GSO_TCPV4,
		VIRTIO_NET_HDR_GSO_ECN | VIRTIO_NET_HDR_GSO_TCPV6, VIRTIO_NET_HDR_GSO_ECN,
	};

	/* Types not negotiated: dropped before anything else is read, and the
	 * packet's other buffers are skipped. */
	for (size_t i = 0; i < sizeof bad_types; i++) {
		gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len);
		buf[1] = bad_types[i];
		assert_int_equal(vnet_hdr_rx_check(&CFG_GSO, buf, GSO_POSTED, GSO_POSTED, &info), -EBADMSG);
		assert_int_equal(info.drop, VNET_DROP_BAD_GSO);
		assert_int_equal(info.skip, nb - 1);
	}
	c = CFG_GSO;
	c.guest_tso6 = false;
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV6, 1428, nb, len);
	gso_expect(&c, len, VNET_DROP_BAD_GSO);
	c = CFG_GSO;
	c.guest_tso4 = false;
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len);
	gso_expect(&c, len, VNET_DROP_BAD_GSO);

	/* gso_size: 0, or more than a 1518-byte frame carries behind 54 bytes */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 0, nb, len);
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_SIZE);
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1465, nb, len);
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_SIZE);
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 0xffff, nb, len);
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_SIZE);
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1464, nb, len);
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);

	/* num_buffers and the total still hold */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, 33, len);
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_NUM_BUFFERS);
	c = CFG_GSO;
	c.max_gso_frame = 60000;
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len);
	gso_expect(&c, len, VNET_DROP_FRAME_TOO_BIG);

	/* Headers: each one broken in turn (offsets into buf: 12 header bytes,
	 * then the frame). */
	static const struct { unsigned at; u8 val; } bad[] = {
		{ 12 + 12, 0x86 },	/* IPv6 EtherType under TCPV4 */
		{ 12 + 13, 0x01 },
		{ 12 + 14, 0x65 },	/* version 6 */
		{ 12 + 14, 0x44 },	/* IHL 4 */
		{ 12 + 14, 0x4f },	/* IHL 15: TCP is not where csum_start says */
		{ 12 + 23, 17 },	/* UDP */
		{ 12 + 20, 0x60 },	/* DF and more fragments */
		{ 12 + 21, 0x01 },	/* a fragment offset */
		{ 12 + 16, 0xff },	/* IP length past the frame */
		{ 12 + 34 + 12, 4 << 4 },	/* TCP data offset 4 */
		{ 6, 35 },		/* csum_start not the TCP header */
		{ 8, 6 },		/* csum_offset not the TCP checksum */
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len);
		buf[bad[i].at] = bad[i].val;
		gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_HEADERS);
	}
	/* IP length 40: ends inside the 32-byte TCP header */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len);
	buf[12 + 16] = 0;
	buf[12 + 17] = 40;
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_HEADERS);
	/* IP length shorter than the frame: Ethernet padding, lwIP trims it */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len - 10);
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);
	/* hdr_len may be a hint, but not past the frame */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len);
	buf[2] = 0xff;
	buf[3] = 0xff;
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_HEADERS);
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, nb, len);
	buf[2] = 0;			/* too small is only a wrong hint */
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);
	buf[2] = (u8)(len & 0xff);	/* the linear length, as Linux's tun writes it */
	buf[3] = (u8)(len >> 8);
	assert_int_equal(gso_run(&CFG_GSO, len, &info), 0);
	/* IPv6: jumbo (payload length 0), an extension header first */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV6, 1428, nb, len);
	buf[12 + 18] = buf[12 + 19] = 0;
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_HEADERS);
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV6, 1428, nb, len);
	buf[12 + 20] = 0;		/* hop-by-hop */
	gso_expect(&CFG_GSO, len, VNET_DROP_BAD_GSO_HEADERS);
	/* headers longer than a one-buffer frame */
	gso_frame(VIRTIO_NET_HDR_GSO_TCPV4, 1448, 1, 1000);
	expect_drop(&CFG_GSO, 12 + 60, GSO_POSTED, -EBADMSG, VNET_DROP_BAD_GSO_HEADERS);
}

static void test_rx_gso_config(void **state)
{
	struct vnet_rx_cfg c = CFG_GSO;

	rx_hdr(buf, 0, 0, 0, 0, 1);
	c.mrg_rxbuf = false;	/* no big buffers: receive TSO needs MRG_RXBUF */
	c.max_buffers = 1;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c = CFG_GSO;
	c.guest_csum = false;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c = CFG_GSO;
	c.max_gso_frame = 1517;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c.max_gso_frame = VNET_FRAME_MAX + 1;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
}

static void test_rx_bad_config(void **state)
{
	struct vnet_rx_cfg c;
	struct vnet_rx_info info = { .bufs_left = 3 };

	rx_hdr(buf, 0, 0, 0, 0, 1);
	c = CFG_V1;
	c.hdr_len = 11;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c.hdr_len = 20;		/* HASH_REPORT headers are not handled */
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c = CFG_MRG;
	c.hdr_len = 10;		/* MRG_RXBUF always has num_buffers */
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c = CFG_MRG;
	c.max_buffers = 0;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c = CFG_V1;
	c.max_frame = 13;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	c.max_frame = VNET_FRAME_MAX + 1;
	expect_drop(&c, 100, POSTED, -EINVAL, VNET_DROP_BAD_CONFIG);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 10, 10), -EINVAL);
	assert_int_equal(info.drop, VNET_DROP_BAD_CONFIG);
}

/* Start a 3-buffer packet of which buffer 1 is full. */
static void merge_start(struct vnet_rx_info *info, u8 flags, u16 start, u16 off)
{
	rx_hdr(buf, flags, 0, start, off, 3);
	assert_int_equal(vnet_hdr_rx_check(&CFG_MRG, buf, 100, 100, info), 0);
	assert_int_equal(info->first_len, 88);
	assert_int_equal(info->bufs_left, 2);
}

static void test_rx_merge(void **state)
{
	struct vnet_rx_info info;

	merge_start(&info, 0, 0, 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 100, 100), 0);
	assert_int_equal(info.bufs_left, 1);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 40, 100), 0);
	assert_int_equal(info.bufs_left, 0);
	assert_int_equal(info.frame_len, 88 + 100 + 40);
	assert_int_equal(info.first_len, 88);
	assert_int_equal(info.drop, VNET_DROP_NONE);
	/* nothing more is outstanding */
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 1, 100), -EINVAL);
	assert_int_equal(info.drop, VNET_DROP_MERGE_OVERRUN);

	/* the first buffer of a merged packet must be full */
	rx_hdr(buf, 0, 0, 0, 0, 2);
	expect_drop(&CFG_MRG, 99, 100, -EBADMSG, VNET_DROP_BAD_MERGE_LEN);
	/* a middle buffer must be full */
	merge_start(&info, 0, 0, 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 99, 100), -EBADMSG);
	assert_int_equal(info.drop, VNET_DROP_BAD_MERGE_LEN);
	assert_int_equal(info.bufs_left, 0);
	/* and after an error nothing more is taken */
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 100, 100), -EINVAL);
	/* the last one must not be empty */
	merge_start(&info, 0, 0, 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 100, 100), 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 0, 100), -EBADMSG);
	assert_int_equal(info.drop, VNET_DROP_BAD_MERGE_LEN);
	/* nor longer than posted */
	merge_start(&info, 0, 0, 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 101, 100), -EOVERFLOW);
	assert_int_equal(info.drop, VNET_DROP_TOO_LONG);
}

static void test_rx_merge_totals(void **state)
{
	struct vnet_rx_cfg c = CFG_MRG;
	struct vnet_rx_info info;

	/* 88 + 4096 + 4096 + 720 = 9000 = max_frame: fits exactly. */
	rx_hdr(buf, 0, 0, 0, 0, 4);
	assert_int_equal(vnet_hdr_rx_check(&c, buf, 100, 100, &info), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 4096, 4096), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 4096, 4096), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 720, 4096), 0);
	assert_int_equal(info.frame_len, 9000);
	/* one byte more does not */
	assert_int_equal(vnet_hdr_rx_check(&c, buf, 100, 100, &info), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 4096, 4096), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 4096, 4096), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 721, 4096), -EBADMSG);
	assert_int_equal(info.drop, VNET_DROP_FRAME_TOO_BIG);
	/* no u32 wrap: huge buffers are caught by the running total */
	c.max_frame = VNET_FRAME_MAX;
	rx_hdr(buf, 0, 0, 0, 0, 3);
	assert_int_equal(vnet_hdr_rx_check(&c, buf, 100, 100, &info), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 0xfffffff0u, 0xfffffff0u), -EBADMSG);
	assert_int_equal(info.drop, VNET_DROP_FRAME_TOO_BIG);
	/* a merged frame must still hold an Ethernet header */
	rx_hdr(buf, 0, 0, 0, 0, 2);
	assert_int_equal(vnet_hdr_rx_check(&c, buf, 12, 12, &info), 0);	/* header only */
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 13, 100), -EBADMSG);
	assert_int_equal(info.drop, VNET_DROP_TOO_SHORT);
	assert_int_equal(vnet_hdr_rx_check(&c, buf, 12, 12, &info), 0);
	assert_int_equal(vnet_hdr_rx_merge(&c, &info, 14, 100), 0);
	assert_int_equal(info.frame_len, 14);
	assert_int_equal(info.first_len, 0);
}

static void test_rx_merge_csum(void **state)
{
	struct vnet_rx_info info;

	/* The checksum field may sit in a later buffer: judged on the total. */
	merge_start(&info, VIRTIO_NET_HDR_F_NEEDS_CSUM, 150, 16);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 100, 100), 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 1, 100), 0);	/* 189 >= 168 */
	assert_true(info.needs_csum);
	merge_start(&info, VIRTIO_NET_HDR_F_NEEDS_CSUM, 180, 16);	/* needs 198 */
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 100, 100), 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 9, 100), -EBADMSG);	/* 197 */
	assert_int_equal(info.drop, VNET_DROP_BAD_CSUM_OFFSETS);
	merge_start(&info, VIRTIO_NET_HDR_F_NEEDS_CSUM, 180, 16);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 100, 100), 0);
	assert_int_equal(vnet_hdr_rx_merge(&CFG_MRG, &info, 10, 100), 0);	/* 198 */
}

static void test_drop_names(void **state)
{
	for (int i = 0; i < VNET_DROP_COUNT; i++) {
		const char *n = vnet_hdr_drop_name((enum vnet_drop)i);

		assert_non_null(n);
		assert_true(strlen(n) > 1);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(n, vnet_hdr_drop_name((enum vnet_drop)j));
	}
	assert_string_equal(vnet_hdr_drop_name(VNET_DROP_TOO_SHORT), "too_short");
	assert_string_equal(vnet_hdr_drop_name(VNET_DROP_COUNT), "?");
	assert_string_equal(vnet_hdr_drop_name((enum vnet_drop)-1), "?");
}

/* ======================================================================
 * Transmit header and checksums
 * ==================================================================== */

static void test_tx_hdr(void **state)
{
	u8 h[16];
	static const u8 zero[12];

	memset(h, 0xaa, sizeof h);
	vnet_hdr_tx_hdr(h, 12, false, 34, 16);
	assert_memory_equal(h, zero, 12);
	assert_int_equal(h[12], 0xaa);

	memset(h, 0xaa, sizeof h);
	vnet_hdr_tx_hdr(h, 12, true, 0x1234, 0x0016);
	assert_int_equal(h[0], VIRTIO_NET_HDR_F_NEEDS_CSUM);
	assert_int_equal(h[1], VIRTIO_NET_HDR_GSO_NONE);
	assert_int_equal(h[2] | h[3] | h[4] | h[5], 0);	/* hdr_len, gso_size */
	assert_int_equal(h[6], 0x34);
	assert_int_equal(h[7], 0x12);
	assert_int_equal(h[8], 0x16);
	assert_int_equal(h[9], 0x00);
	assert_int_equal(h[10] | h[11], 0);		/* num_buffers 0 on TX */
	assert_int_equal(h[12], 0xaa);

	memset(h, 0xaa, sizeof h);
	vnet_hdr_tx_hdr(h, 10, true, 34, 6);		/* legacy: 10 bytes only */
	assert_int_equal(h[0], 1);
	assert_int_equal(h[6], 34);
	assert_int_equal(h[8], 6);
	assert_int_equal(h[10], 0xaa);
	assert_int_equal(h[11], 0xaa);
}

/* Straightforward reference: 16-bit big-endian words, end-around carry. */
static u16 ref_csum(const u8 *p, size_t n)
{
	u32 s = 0;

	for (size_t i = 0; i < n; i += 2) {
		s += (u32)p[i] << 8 | (i + 1 < n ? p[i + 1] : 0);
		s = (s & 0xffff) + (s >> 16);
	}
	return (u16)~s;
}

static void test_csum_basics(void **state)
{
	/* RFC 1071 §3 example: words 0001 f203 f4f5 f6f7 sum to ddf2. */
	static const u8 rfc[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	u8 big[3001];

	assert_int_equal(vnet_hdr_csum_fold(vnet_hdr_csum_add(0, rfc, sizeof rfc)), (u16)~0xddf2);
	/* chaining at an even split equals one pass */
	assert_int_equal(vnet_hdr_csum_add(vnet_hdr_csum_add(0, rfc, 4), rfc + 4, 4),
			 vnet_hdr_csum_add(0, rfc, 8));
	/* odd length pads with zero */
	assert_int_equal(vnet_hdr_csum_fold(vnet_hdr_csum_add(0, rfc, 7)), ref_csum(rfc, 7));
	for (size_t i = 0; i < sizeof big; i++)
		big[i] = (u8)(i * 131 + 7);
	for (size_t n = 0; n <= sizeof big; n += 97)
		assert_int_equal(vnet_hdr_csum_fold(vnet_hdr_csum_add(0, big, (u32)n)), ref_csum(big, n));
	memset(big, 0xff, sizeof big);		/* worst case for carries */
	assert_int_equal(vnet_hdr_csum_fold(vnet_hdr_csum_add(0, big, sizeof big)),
			 ref_csum(big, sizeof big));
	assert_int_equal(vnet_hdr_csum_fold(0), 0xffff);
	assert_int_equal(vnet_hdr_csum_fold(0x1fffe), (u16)~0xffff);
}

/* A TX checksum offload round trip: the driver seeds the UDP checksum with
 * the pseudo-header sum and sets NEEDS_CSUM; the "device" completes it with
 * vnet_hdr_csum_complete; the result must verify over pseudo-header + segment. */
static void test_csum_offload_roundtrip(void **state)
{
	u8 f[14 + 20 + 8 + 21];
	u8 pseudo[12] = { 10, 0, 2, 15, 10, 0, 2, 2, 0, 17, 0, 8 + 21 };
	u8 h[12];
	u32 sum;
	u16 seed, start, off;

	memset(f, 0, sizeof f);
	f[12] = 0x08;				/* IPv4 */
	f[14] = 0x45;
	memcpy(f + 14 + 12, pseudo, 8);		/* addresses */
	f[14 + 9] = 17;				/* UDP */
	f[34] = 0x30; f[35] = 0x39;		/* ports */
	f[36] = 0x00; f[37] = 0x50;
	f[38] = 0; f[39] = 8 + 21;		/* length */
	for (int i = 0; i < 21; i++)
		f[42 + i] = (u8)(0x41 + i);

	seed = (u16)~vnet_hdr_csum_fold(vnet_hdr_csum_add(0, pseudo, sizeof pseudo));
	f[40] = (u8)(seed >> 8);
	f[41] = (u8)seed;
	start = 34;
	off = 6;
	vnet_hdr_tx_hdr(h, sizeof h, true, start, off);
	assert_int_equal(h[6] | h[7] << 8, start);
	assert_int_equal(vnet_hdr_csum_complete(f, sizeof f, h[6] | h[7] << 8, h[8] | h[9] << 8), 0);

	sum = vnet_hdr_csum_add(0, pseudo, sizeof pseudo);
	sum = vnet_hdr_csum_add(sum, f + 34, sizeof f - 34);
	assert_int_equal(vnet_hdr_csum_fold(sum), 0);	/* verifies */
	assert_int_not_equal(f[40] << 8 | f[41], 0);

	assert_int_equal(vnet_hdr_csum_complete(f, sizeof f, 34, (u16)(sizeof f - 35)), -EINVAL);
	assert_int_equal(vnet_hdr_csum_complete(f, sizeof f, 34, (u16)(sizeof f - 36)), 0);
	assert_int_equal(vnet_hdr_csum_complete(f, 10, 0xffff, 0xffff), -EINVAL);
}

static void test_csum_complete_zero_is_ffff(void **state)
{
	/* A range summing to ffff (a ones'-complement zero) gets ffff, not 0. */
	u8 f[6] = { 0xff, 0xff, 0x00, 0x00, 0x00, 0x00 };

	assert_int_equal(vnet_hdr_csum_complete(f, sizeof f, 0, 2), 0);
	assert_int_equal(f[2], 0xff);
	assert_int_equal(f[3], 0xff);
}

/* ======================================================================
 * Control commands against a simulated device
 * ==================================================================== */

#define NQ 2	/* one queue pair: 0 receiveq1, 1 transmitq1, 2 controlq */

struct sim_dev {
	u64 features;
	bool promisc, allmulti, rx_extra[6];
	u8 mac[6];
	u8 uc[64][6], mc[64][6];
	u32 n_uc, n_mc;
	u16 status;
	struct { u32 packets, usecs; } coal[NQ];
	u32 handled;
	bool ack_len_zero;	/* misbehave: report used_len 0 */
};
static struct sim_dev D;

static u32 le32_at(const u8 *p)
{
	return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24;
}

static bool has(u32 bit)
{
	return D.features >> bit & 1;
}

/* Parse one MAC table at p (n bytes left); returns bytes used or -1. */
static int sim_table(const u8 *p, u32 n, u8 (*dst)[6], u32 *count)
{
	u32 e;

	if (n < 4)
		return -1;
	e = le32_at(p);
	if (e > 64 || n - 4 < e * 6)
		return -1;
	memcpy(dst, p + 4, e * 6);
	*count = e;
	return (int)(4 + e * 6);
}

/* What the device does with one command. Returns the ack. */
static u8 sim_apply(const u8 *out, u32 n, u8 *result, u32 result_room, u32 *written)
{
	u8 class, cmd;
	const u8 *d = out + 2;
	u32 dn;

	*written = 0;
	if (n < 2)
		return VIRTIO_NET_ERR;
	class = out[0];
	cmd = out[1];
	dn = n - 2;
	if (!has(VIRTIO_NET_F_CTRL_VQ))
		return VIRTIO_NET_ERR;
	switch (class) {
	case VIRTIO_NET_CTRL_RX:
		if (dn != 1 || d[0] > 1)
			return VIRTIO_NET_ERR;
		if (cmd <= VIRTIO_NET_CTRL_RX_ALLMULTI && !has(VIRTIO_NET_F_CTRL_RX))
			return VIRTIO_NET_ERR;
		if (cmd == VIRTIO_NET_CTRL_RX_PROMISC)
			D.promisc = d[0];
		else if (cmd == VIRTIO_NET_CTRL_RX_ALLMULTI)
			D.allmulti = d[0];
		else if (cmd <= VIRTIO_NET_CTRL_RX_NOBCAST && has(VIRTIO_NET_F_CTRL_RX_EXTRA))
			D.rx_extra[cmd] = d[0];
		else
			return VIRTIO_NET_ERR;
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_MAC:
		if (!has(VIRTIO_NET_F_CTRL_RX))
			return VIRTIO_NET_ERR;
		if (cmd == VIRTIO_NET_CTRL_MAC_TABLE_SET) {
			int a = sim_table(d, dn, D.uc, &D.n_uc), b;

			if (a < 0)
				return VIRTIO_NET_ERR;
			b = sim_table(d + a, dn - (u32)a, D.mc, &D.n_mc);
			if (b < 0 || (u32)(a + b) != dn)
				return VIRTIO_NET_ERR;
			return VIRTIO_NET_OK;
		}
		if (cmd == VIRTIO_NET_CTRL_MAC_ADDR_SET && has(VIRTIO_NET_F_CTRL_MAC_ADDR) &&
		    dn == 6) {
			memcpy(D.mac, d, 6);
			return VIRTIO_NET_OK;
		}
		return VIRTIO_NET_ERR;
	case VIRTIO_NET_CTRL_ANNOUNCE:
		if (cmd != VIRTIO_NET_CTRL_ANNOUNCE_ACK || dn != 0 ||
		    !has(VIRTIO_NET_F_GUEST_ANNOUNCE))
			return VIRTIO_NET_ERR;
		D.status &= (u16)~VIRTIO_NET_S_ANNOUNCE;
		return VIRTIO_NET_OK;
	case VIRTIO_NET_CTRL_NOTF_COAL:
		if (cmd <= VIRTIO_NET_CTRL_NOTF_COAL_RX_SET) {
			if (!has(VIRTIO_NET_F_NOTF_COAL) || dn != 8)
				return VIRTIO_NET_ERR;
			/* TX_SET: transmit queues (odd); RX_SET: receive (even) */
			for (int q = cmd == VIRTIO_NET_CTRL_NOTF_COAL_TX_SET; q < NQ; q += 2) {
				D.coal[q].packets = le32_at(d);
				D.coal[q].usecs = le32_at(d + 4);
			}
			return VIRTIO_NET_OK;
		}
		if (cmd <= VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET) {
			u16 q;

			if (!has(VIRTIO_NET_F_VQ_NOTF_COAL))
				return VIRTIO_NET_ERR;
			if (dn != (cmd == VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET ? 12u : 4u))
				return VIRTIO_NET_ERR;
			q = (u16)(d[0] | d[1] << 8);
			if (q >= NQ)	/* not an enabled RX/TX queue (2 is controlq) */
				return VIRTIO_NET_ERR;
			if (cmd == VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET) {
				D.coal[q].packets = le32_at(d + 4);
				D.coal[q].usecs = le32_at(d + 8);
				return VIRTIO_NET_OK;
			}
			if (result_room < 8)
				return VIRTIO_NET_ERR;
			put_le32(result, D.coal[q].packets);
			put_le32(result + 4, D.coal[q].usecs);
			*written = 8;
			return VIRTIO_NET_OK;
		}
		return VIRTIO_NET_ERR;
	}
	return VIRTIO_NET_ERR;
}

/* The chain as the driver would post it (see vnet_ctrl.h). */
struct chain {
	const u8 *addr[4];
	u32 len[4];
	bool write[4];
	int n;
};

static void build_chain(const struct vnet_ctrl_cmd *c, struct chain *ch)
{
	ch->n = 0;
	ch->addr[ch->n] = c->hdr, ch->len[ch->n] = 2, ch->write[ch->n++] = false;
	if (c->data_split) {
		ch->addr[ch->n] = c->data, ch->len[ch->n] = c->data_split, ch->write[ch->n++] = false;
		ch->addr[ch->n] = c->data + c->data_split;
		ch->len[ch->n] = c->data_len - c->data_split, ch->write[ch->n++] = false;
	} else if (c->data_len) {
		ch->addr[ch->n] = c->data, ch->len[ch->n] = c->data_len, ch->write[ch->n++] = false;
	}
	ch->addr[ch->n] = &c->ack, ch->len[ch->n] = 1, ch->write[ch->n++] = true;
	if (c->result_len)
		ch->addr[ch->n] = c->result, ch->len[ch->n] = c->result_len,
		ch->write[ch->n++] = true;
}

/* Device side: gather the readable elements, apply, scatter ack + result
 * into the writable ones. Returns the used length it reports. */
static u32 sim_run(struct vnet_ctrl_cmd *c)
{
	struct chain ch;
	u8 out[512], in[16], res[16];
	u32 on = 0, room = 0, wrote, done = 0, pos = 0;

	build_chain(c, &ch);
	for (int i = 0; i < ch.n; i++) {
		if (!ch.write[i]) {
			assert_true(room == 0);	/* readable before writable */
			assert_true(on + ch.len[i] <= sizeof out);
			memcpy(out + on, ch.addr[i], ch.len[i]);
			on += ch.len[i];
		} else {
			room += ch.len[i];
		}
	}
	assert_true(room >= 1);
	in[0] = sim_apply(out, on, res, room - 1, &wrote);
	memcpy(in + 1, res, wrote);
	for (int i = 0; i < ch.n && pos < 1 + wrote; i++) {
		u32 k;

		if (!ch.write[i])
			continue;
		k = MIN(ch.len[i], 1 + wrote - pos);
		memcpy((u8 *)ch.addr[i], in + pos, k);
		pos += k;
		done += k;
	}
	D.handled++;
	return D.ack_len_zero ? 0 : done;
}

static void sim_reset(u64 features)
{
	memset(&D, 0, sizeof D);
	D.features = features | 1ull << VIRTIO_NET_F_CTRL_VQ;
	D.status = VIRTIO_NET_S_LINK_UP | VIRTIO_NET_S_ANNOUNCE;
}

#define ALL_FEATURES (1ull << VIRTIO_NET_F_CTRL_RX | 1ull << VIRTIO_NET_F_CTRL_RX_EXTRA | \
		      1ull << VIRTIO_NET_F_CTRL_MAC_ADDR | 1ull << VIRTIO_NET_F_GUEST_ANNOUNCE | \
		      1ull << VIRTIO_NET_F_NOTF_COAL | 1ull << VIRTIO_NET_F_VQ_NOTF_COAL)

static struct vnet_ctrl_cmd C;

/* Send C; return what the driver concludes. */
static int send(void)
{
	u32 used;

	assert_int_equal(C.ack, VNET_CTRL_ACK_UNSET);
	used = sim_run(&C);
	if (C.result_len)
		return -1000;	/* caller uses vnet_ctrl_coal_vq_result */
	return vnet_ctrl_ack_check(&C.ack, used);
}

static void test_ctrl_rx_mode(void **state)
{
	sim_reset(ALL_FEATURES);
	assert_int_equal(vnet_ctrl_rx_mode(&C, VIRTIO_NET_CTRL_RX_PROMISC, true), 1);
	assert_int_equal(C.hdr[0], VIRTIO_NET_CTRL_RX);
	assert_int_equal(C.hdr[1], VIRTIO_NET_CTRL_RX_PROMISC);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_CTRL_RX);
	assert_int_equal(send(), 0);
	assert_true(D.promisc);
	assert_int_equal(vnet_ctrl_rx_mode(&C, VIRTIO_NET_CTRL_RX_ALLMULTI, true), 1);
	assert_int_equal(send(), 0);
	assert_true(D.allmulti);
	assert_int_equal(vnet_ctrl_rx_mode(&C, VIRTIO_NET_CTRL_RX_PROMISC, false), 1);
	assert_int_equal(send(), 0);
	assert_false(D.promisc);
	assert_true(D.allmulti);
	assert_int_equal(vnet_ctrl_rx_mode(&C, VIRTIO_NET_CTRL_RX_NOBCAST, true), 1);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_CTRL_RX_EXTRA);
	assert_int_equal(send(), 0);
	assert_true(D.rx_extra[VIRTIO_NET_CTRL_RX_NOBCAST]);

	/* unknown mode: refused, command left empty */
	assert_int_equal(vnet_ctrl_rx_mode(&C, 6, true), -EINVAL);
	assert_int_equal(C.data_len, 0);
	assert_int_equal(C.hdr[0] | C.hdr[1], 0);
	assert_int_equal(C.ack, VNET_CTRL_ACK_UNSET);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_CTRL_RX);	/* 0/0 = PROMISC */

	/* a device without CTRL_RX answers ERR, seen as -EIO */
	sim_reset(0);
	assert_int_equal(vnet_ctrl_rx_mode(&C, VIRTIO_NET_CTRL_RX_PROMISC, true), 1);
	assert_int_equal(send(), -EIO);
	assert_false(D.promisc);
}

static void test_ctrl_mac_table(void **state)
{
	static const u8 uc[2][6] = { { 0x52, 0x54, 0, 0x12, 0x34, 0x56 },
				     { 0x02, 0, 0, 0, 0, 1 } };
	static const u8 mc[3][6] = { { 0x01, 0x00, 0x5e, 0, 0, 1 },
				     { 0x33, 0x33, 0, 0, 0, 1 },
				     { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	u8 many[33][6];

	sim_reset(ALL_FEATURES);
	assert_int_equal(vnet_ctrl_mac_table(&C, uc, 2, mc, 3), 8 + 6 * 5);
	assert_int_equal(C.data_split, 4 + 12);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_CTRL_RX);
	assert_int_equal(send(), 0);
	assert_int_equal(D.n_uc, 2);
	assert_int_equal(D.n_mc, 3);
	assert_memory_equal(D.uc, uc, sizeof uc);
	assert_memory_equal(D.mc, mc, sizeof mc);

	/* both empty: two zero counts */
	assert_int_equal(vnet_ctrl_mac_table(&C, NULL, 0, NULL, 0), 8);
	assert_int_equal(send(), 0);
	assert_int_equal(D.n_uc + D.n_mc, 0);

	/* multicast only */
	assert_int_equal(vnet_ctrl_mac_table(&C, NULL, 0, mc, 1), 8 + 6);
	assert_int_equal(C.data_split, 4);
	assert_int_equal(send(), 0);
	assert_int_equal(D.n_mc, 1);

	/* wrong lists, too many */
	assert_int_equal(vnet_ctrl_mac_table(&C, mc, 1, NULL, 0), -EINVAL);
	assert_int_equal(C.data_len, 0);
	assert_int_equal(vnet_ctrl_mac_table(&C, NULL, 0, uc, 1), -EINVAL);
	memset(many, 0x02, sizeof many);
	assert_int_equal(vnet_ctrl_mac_table(&C, many, 33, NULL, 0), -E2BIG);
	assert_int_equal(vnet_ctrl_mac_table(&C, many, 32, NULL, 0), 8 + 32 * 6);
	assert_int_equal(send(), 0);
	assert_int_equal(D.n_uc, 32);
	assert_int_equal(vnet_ctrl_mac_table(&C, many, 20, mc, 13), -E2BIG);
	assert_int_equal(vnet_ctrl_mac_table(&C, many, 0xffffffffu, mc, 2), -E2BIG);
	assert_int_equal(vnet_ctrl_mac_table(&C, many, 2, mc, 0xffffffffu), -E2BIG);
}

static void test_ctrl_mac_addr(void **state)
{
	static const u8 mac[6] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
	static const u8 zero[6], mcast[6] = { 0x01, 0, 0x5e, 0, 0, 1 };

	sim_reset(ALL_FEATURES);
	assert_int_equal(vnet_ctrl_mac_addr(&C, mac), 6);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_CTRL_MAC_ADDR);
	assert_int_equal(send(), 0);
	assert_memory_equal(D.mac, mac, 6);
	assert_int_equal(vnet_ctrl_mac_addr(&C, zero), -EINVAL);
	assert_int_equal(vnet_ctrl_mac_addr(&C, mcast), -EINVAL);
	assert_int_equal(C.data_len, 0);
}

static void test_ctrl_announce(void **state)
{
	sim_reset(ALL_FEATURES);
	assert_int_equal(vnet_ctrl_announce_ack(&C), 0);
	assert_int_equal(C.data_len, 0);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_GUEST_ANNOUNCE);
	assert_true(D.status & VIRTIO_NET_S_ANNOUNCE);
	assert_int_equal(send(), 0);
	assert_false(D.status & VIRTIO_NET_S_ANNOUNCE);
	assert_true(D.status & VIRTIO_NET_S_LINK_UP);
}

static void test_ctrl_coal_layout(void **state)
{
	static const u8 set[8] = { 0x04, 0x03, 0x02, 0x01, 0x08, 0x07, 0x06, 0x05 };
	static const u8 vq[12] = { 0x34, 0x12, 0, 0, 0x04, 0x03, 0x02, 0x01,
				   0x08, 0x07, 0x06, 0x05 };

	assert_int_equal(vnet_ctrl_coal_set(&C, true, 0x01020304, 0x05060708), 8);
	assert_int_equal(C.hdr[0], VIRTIO_NET_CTRL_NOTF_COAL);
	assert_int_equal(C.hdr[1], VIRTIO_NET_CTRL_NOTF_COAL_TX_SET);
	assert_memory_equal(C.data, set, 8);
	assert_int_equal(vnet_ctrl_coal_set(&C, false, 0x01020304, 0x05060708), 8);
	assert_int_equal(C.hdr[1], VIRTIO_NET_CTRL_NOTF_COAL_RX_SET);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_NOTF_COAL);
	assert_int_equal(vnet_ctrl_coal_vq_set(&C, 0x1234, 0x01020304, 0x05060708), 12);
	assert_int_equal(C.hdr[1], VIRTIO_NET_CTRL_NOTF_COAL_VQ_SET);
	assert_memory_equal(C.data, vq, 12);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_VQ_NOTF_COAL);
	assert_int_equal(vnet_ctrl_coal_vq_get(&C, 0x1234), 4);
	assert_int_equal(C.hdr[1], VIRTIO_NET_CTRL_NOTF_COAL_VQ_GET);
	assert_memory_equal(C.data, vq, 4);
	assert_int_equal(C.result_len, 8);
	assert_int_equal(vnet_ctrl_feature(&C), VIRTIO_NET_F_VQ_NOTF_COAL);
}

static int vq_get(u16 q, u32 *packets, u32 *usecs)
{
	u32 used;

	assert_int_equal(vnet_ctrl_coal_vq_get(&C, q), 4);
	used = sim_run(&C);
	return vnet_ctrl_coal_vq_result(&C, used, packets, usecs);
}

/* The command sequence of the spec's example (§5.1.6.5.9), one pair. */
static void test_ctrl_coal_sequence(void **state)
{
	u32 p = 0, u = 0;

	sim_reset(ALL_FEATURES);
	assert_int_equal(vnet_ctrl_coal_set(&C, false, 15, 10), 8);	/* RX_SET */
	assert_int_equal(send(), 0);
	assert_int_equal(D.coal[0].packets, 15);
	assert_int_equal(D.coal[0].usecs, 10);
	assert_int_equal(D.coal[1].packets, 0);		/* TX untouched */
	assert_int_equal(vnet_ctrl_coal_vq_set(&C, 0, 32, 80), 12);
	assert_int_equal(send(), 0);
	assert_int_equal(vq_get(0, &p, &u), 0);
	assert_int_equal(p, 32);
	assert_int_equal(u, 80);
	assert_int_equal(vnet_ctrl_coal_vq_set(&C, 1, 4, 20), 12);
	assert_int_equal(send(), 0);
	assert_int_equal(vnet_ctrl_coal_set(&C, true, 8, 50), 8);	/* TX_SET overrides */
	assert_int_equal(send(), 0);
	assert_int_equal(vq_get(1, &p, &u), 0);
	assert_int_equal(p, 8);
	assert_int_equal(u, 50);
	assert_int_equal(vq_get(0, &p, &u), 0);		/* RX kept its VQ_SET */
	assert_int_equal(p, 32);

	/* the control queue is not a data queue: ERR, values left alone */
	assert_int_equal(vnet_ctrl_coal_vq_set(&C, 2, 1, 1), 12);
	assert_int_equal(send(), -EIO);
	p = u = 777;
	assert_int_equal(vq_get(2, &p, &u), -EIO);
	assert_int_equal(p, 777);
	assert_int_equal(u, 777);

	/* without the features the device refuses */
	sim_reset(ALL_FEATURES & ~(1ull << VIRTIO_NET_F_NOTF_COAL | 1ull << VIRTIO_NET_F_VQ_NOTF_COAL));
	assert_int_equal(vnet_ctrl_coal_set(&C, false, 15, 10), 8);
	assert_int_equal(send(), -EIO);
	assert_int_equal(D.coal[0].packets, 0);
	assert_int_equal(vq_get(0, &p, &u), -EIO);
	assert_int_equal(p, 777);
}

static void test_ctrl_ack_check(void **state)
{
	u8 ok = VIRTIO_NET_OK, err = VIRTIO_NET_ERR, other = 2, unset = VNET_CTRL_ACK_UNSET;

	assert_int_equal(vnet_ctrl_ack_check(&ok, 1), 0);
	assert_int_equal(vnet_ctrl_ack_check(&ok, 0), -EPROTO);	/* nothing written */
	assert_int_equal(vnet_ctrl_ack_check(&ok, 2), -EPROTO);	/* more than the ack */
	assert_int_equal(vnet_ctrl_ack_check(&ok, 0xffffffffu), -EPROTO);
	assert_int_equal(vnet_ctrl_ack_check(&err, 1), -EIO);
	assert_int_equal(vnet_ctrl_ack_check(&other, 1), -EPROTO);
	assert_int_equal(vnet_ctrl_ack_check(&unset, 1), -EPROTO);

	/* a device that reports used_len 0 is not believed, even if OK */
	sim_reset(ALL_FEATURES);
	D.ack_len_zero = true;
	assert_int_equal(vnet_ctrl_rx_mode(&C, VIRTIO_NET_CTRL_RX_PROMISC, true), 1);
	assert_int_equal(send(), -EPROTO);
	assert_int_equal(C.ack, VIRTIO_NET_OK);
}

static void test_ctrl_vq_result_check(void **state)
{
	u32 p = 5, u = 6;

	vnet_ctrl_coal_vq_get(&C, 0);
	C.ack = VIRTIO_NET_OK;
	put_le32(C.result, 64);
	put_le32(C.result + 4, 128);
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 1, &p, &u), -EPROTO);	/* no result */
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 8, &p, &u), -EPROTO);
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 10, &p, &u), -EPROTO);
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 0, &p, &u), -EPROTO);
	assert_int_equal(p, 5);
	assert_int_equal(u, 6);
	C.ack = VIRTIO_NET_ERR;
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 1, &p, &u), -EIO);
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 9, &p, &u), -EIO);
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 0, &p, &u), -EPROTO);
	C.ack = 7;
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 9, &p, &u), -EPROTO);
	assert_int_equal(p, 5);
	C.ack = VIRTIO_NET_OK;
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 9, &p, &u), 0);
	assert_int_equal(p, 64);
	assert_int_equal(u, 128);
	/* not a VQ_GET */
	vnet_ctrl_coal_vq_set(&C, 0, 1, 2);
	C.ack = VIRTIO_NET_OK;
	assert_int_equal(vnet_ctrl_coal_vq_result(&C, 9, &p, &u), -EINVAL);
}

static void test_ctrl_feature_unknown(void **state)
{
	static const u8 bad[][2] = { { 0, 6 }, { 1, 2 }, { 3, 1 }, { 6, 4 }, { 2, 0 },
				     { 4, 0 }, { 7, 0 }, { 0xff, 0 } };

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		memset(&C, 0, sizeof C);
		C.hdr[0] = bad[i][0];
		C.hdr[1] = bad[i][1];
		assert_int_equal(vnet_ctrl_feature(&C), -EINVAL);
	}
}

/* Reference: ones' complement sum of a TCP segment with its pseudo-header,
 * written independently of vnet_csum_*: a valid segment sums to 0xffff. */
static u16 ref_tcp_sum(const u8 *src, const u8 *dst, unsigned alen, const u8 *seg, u32 len)
{
	u64 s = 6 + len;
	u32 i;

	for (i = 0; i < alen; i += 2)
		s += (u32)(src[i] << 8 | src[i + 1]) + (u32)(dst[i] << 8 | dst[i + 1]);
	for (i = 0; i < len; i++)
		s += (i & 1) ? seg[i] : (u32)seg[i] << 8;
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (u16)s;
}

static u32 make_tcp_frame(u8 *f, bool v6, u32 payload)
{
	u32 l3 = 14, ip = v6 ? 40 : 20, l4 = l3 + ip, i;

	memset(f, 0, l4 + 20 + payload);
	f[12] = v6 ? 0x86 : 0x08;
	f[13] = v6 ? 0xdd : 0x00;
	if (v6) {
		f[l3] = 0x60;
		f[l3 + 4] = (u8)((20 + payload) >> 8);
		f[l3 + 5] = (u8)(20 + payload);
		f[l3 + 6] = 6;
		for (i = 0; i < 32; i++)
			f[l3 + 8 + i] = (u8)(0xf0 + i * 7);
	} else {
		f[l3] = 0x45;
		f[l3 + 2] = (u8)((20 + 20 + payload) >> 8);
		f[l3 + 3] = (u8)(20 + 20 + payload);
		f[l3 + 6] = 0x40;	/* DF only: not a fragment */
		f[l3 + 8] = 64;
		f[l3 + 9] = 6;
		memcpy(f + l3 + 12, "\x0a\x00\x02\x0f\xc0\xa8\x01\xfe", 8);
	}
	f[l4] = 0x1f; f[l4 + 1] = 0x90; f[l4 + 12] = 0x50; f[l4 + 13] = 0x18;
	f[l4 + 16] = 0xde; f[l4 + 17] = 0xad;	/* garbage: prep must overwrite it */
	for (i = 0; i < payload; i++)
		f[l4 + 20 + i] = (u8)(i * 31 + 7);
	return l4 + 20 + payload;
}

static void test_tx_csum_prep(void **state)
{
	static u8 f[2048];
	u16 start = 0, off = 0;
	int v6;

	(void)state;
	for (v6 = 0; v6 < 2; v6++) {
		u32 payloads[] = { 0, 1, 2, 513, 1400 };
		for (unsigned k = 0; k < ARRAY_SIZE(payloads); k++) {
			u32 len = make_tcp_frame(f, v6, payloads[k]);
			u32 l4 = v6 ? 54 : 34;

			assert_int_equal(vnet_hdr_tx_csum_prep(f, l4 + 20, &start, &off), 0);
			assert_int_equal(start, l4);
			assert_int_equal(off, 16);
			/* what the device does */
			assert_int_equal(vnet_hdr_csum_complete(f, len, start, off), 0);
			if (v6)
				assert_int_equal(ref_tcp_sum(f + 22, f + 38, 16, f + l4, len - l4), 0xffff);
			else
				assert_int_equal(ref_tcp_sum(f + 26, f + 30, 4, f + l4, len - l4), 0xffff);
		}
	}
	/* headers not all within hlen, a fragment, not TCP, not IP: untouched */
	make_tcp_frame(f, false, 10);
	assert_int_equal(vnet_hdr_tx_csum_prep(f, 14 + 20 + 17, &start, &off), -ENOTSUP);
	assert_int_equal(f[34 + 16], 0xde);
	f[14 + 7] = 1;	/* fragment offset 8 */
	assert_int_equal(vnet_hdr_tx_csum_prep(f, 54, &start, &off), -ENOTSUP);
	assert_true(vnet_hdr_is_ipv4_fragment(f, 64));
	f[14 + 7] = 0;
	f[14 + 6] = 0x20;	/* MF */
	assert_true(vnet_hdr_is_ipv4_fragment(f, 64));
	f[14 + 6] = 0x40;
	assert_false(vnet_hdr_is_ipv4_fragment(f, 64));
	f[14 + 9] = 17;	/* UDP */
	assert_int_equal(vnet_hdr_tx_csum_prep(f, 54, &start, &off), -ENOTSUP);
	f[14 + 9] = 6;
	f[14] = 0x4f;	/* IHL 60: options past hlen */
	assert_int_equal(vnet_hdr_tx_csum_prep(f, 54, &start, &off), -ENOTSUP);
	f[12] = 0x08; f[13] = 0x06;	/* ARP */
	assert_int_equal(vnet_hdr_tx_csum_prep(f, 54, &start, &off), -ENOTSUP);
	assert_false(vnet_hdr_is_ipv4_fragment(f, 64));
	make_tcp_frame(f, true, 0);
	f[14 + 6] = 0;	/* hop-by-hop extension header first */
	assert_int_equal(vnet_hdr_tx_csum_prep(f, 74, &start, &off), -ENOTSUP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hdr_len_rules),
		cmocka_unit_test(test_rx_single_ok),
		cmocka_unit_test(test_rx_lengths),
		cmocka_unit_test(test_rx_num_buffers),
		cmocka_unit_test(test_rx_flags),
		cmocka_unit_test(test_rx_csum_offsets),
		cmocka_unit_test(test_rx_gso),
		cmocka_unit_test(test_rx_gso_ok),
		cmocka_unit_test(test_rx_gso_hostile),
		cmocka_unit_test(test_rx_gso_config),
		cmocka_unit_test(test_rx_bad_config),
		cmocka_unit_test(test_rx_merge),
		cmocka_unit_test(test_rx_merge_totals),
		cmocka_unit_test(test_rx_merge_csum),
		cmocka_unit_test(test_drop_names),
		cmocka_unit_test(test_tx_hdr),
		cmocka_unit_test(test_csum_basics),
		cmocka_unit_test(test_csum_offload_roundtrip),
		cmocka_unit_test(test_csum_complete_zero_is_ffff),
		cmocka_unit_test(test_ctrl_rx_mode),
		cmocka_unit_test(test_ctrl_mac_table),
		cmocka_unit_test(test_ctrl_mac_addr),
		cmocka_unit_test(test_ctrl_announce),
		cmocka_unit_test(test_ctrl_coal_layout),
		cmocka_unit_test(test_ctrl_coal_sequence),
		cmocka_unit_test(test_ctrl_ack_check),
		cmocka_unit_test(test_ctrl_vq_result_check),
		cmocka_unit_test(test_ctrl_feature_unknown),
		cmocka_unit_test(test_tx_csum_prep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
