/* upper: a checking upper layer; see upper.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/host/drivers/virtio/net/upper.h"
#include "tests/host/drivers/virtio/net/vnet_host.h"

static void up_err(struct upper *u, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void up_err(struct upper *u, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(u->error, sizeof u->error, fmt, ap);
	va_end(ap);
	u->errors++;
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "upper: %s\n", u->error);
}

static void up_rx(void *ctx, struct vnet_rxbuf *f, u32 len, unsigned flags)
{
	struct upper *u = ctx;
	u32 sum = 0;
	unsigned segs = 0;

	if (flags & ~(VNET_RX_CSUM_OK | VNET_RX_CONFINED))
		up_err(u, "rx flags %#x", flags);
	if (len < VNET_ETH_HLEN || len > VNET_FRAME_MAX)
		up_err(u, "rx frame of %u bytes", len);
	while (f) {
		struct vnet_rxbuf *next = f->next;

		/* The segment must lie inside its own buffer. */
		if (f->data < f->buf || f->len > f->cap ||
		    (size_t)(f->data - f->buf) > f->cap - f->len)
			up_err(u, "segment %u outside its buffer", segs);
		else if (f->len == 0)
			up_err(u, "empty segment %u", segs);
		else if (sum + f->len <= VNET_FRAME_MAX)
			memcpy(u->last + sum, f->data, f->len);	/* ASan: every byte readable */
		sum += f->len;
		segs++;
		if (u->release_now) {
			vnet_rx_release(f);
		} else if (u->nheld < UP_HOLD_MAX) {
			u->held[u->nheld++] = f;
		} else {
			up_err(u, "more than %u segments held", UP_HOLD_MAX);
			vnet_rx_release(f);
		}
		f = next;
	}
	if (sum != len)
		up_err(u, "segments hold %u bytes, frame is %u", sum, len);
	u->frames++;
	u->bytes += len;
	u->last_len = sum <= VNET_FRAME_MAX ? sum : 0;
	u->last_flags = flags;
	u->last_segs = segs;
}

static void up_tx_done(void *ctx, void *token)
{
	struct upper *u = ctx;
	struct up_token *t = token;

	if (t < u->tok || t >= u->tok + UP_TOKENS) {
		up_err(u, "tx_done with a token never sent");
		return;
	}
	if (!t->sent || t->done)
		up_err(u, "tx_done twice for token %u", (unsigned)(t - u->tok));
	t->done = true;
	u->tx_done++;
}

static void up_link(void *ctx, bool up)
{
	struct upper *u = ctx;

	if (u->link_known && up == u->link)
		up_err(u, "link %s twice", up ? "up" : "down");
	u->link = up;
	u->link_known = true;
	if (up)
		u->link_ups++;
	else
		u->link_downs++;
}

static void up_announce(void *ctx)
{
	struct upper *u = ctx;

	u->announces++;
	if (u->on_announce)
		u->on_announce(u);
}

void up_init(struct upper *u)
{
	memset(u, 0, sizeof(*u));
	u->last = malloc(VNET_FRAME_MAX);
}

void up_fini(struct upper *u)
{
	free(u->last);
	u->last = NULL;
}

int up_attach(struct upper *u, struct vnet *vn)
{
	struct vnet_upper up = { u, up_rx, up_tx_done, up_link, up_announce };

	u->vn = vn;
	return vnet_attach(vn, &up);
}

void up_release(struct upper *u, unsigned n, bool newest_first)
{
	while (n-- && u->nheld) {
		if (newest_first) {
			vnet_rx_release(u->held[--u->nheld]);
		} else {
			vnet_rx_release(u->held[0]);
			memmove(&u->held[0], &u->held[1], --u->nheld * sizeof(u->held[0]));
		}
	}
}

void up_release_all(struct upper *u)
{
	up_release(u, u->nheld, true);
}

int up_send(struct upper *u, unsigned t, const u8 *frame, u32 len, unsigned nseg, unsigned flags)
{
	struct virtq_sg sg[VNET_TX_MAX_SG];
	u32 off = 0;
	int err;

	if (t >= UP_TOKENS || nseg == 0 || nseg > VNET_TX_MAX_SG || nseg > len)
		return -EINVAL;
	if (u->tok[t].sent && !u->tok[t].done)
		return -EBUSY;
	for (unsigned i = 0; i < nseg; i++) {
		u32 piece = i + 1 < nseg ? len / nseg : len - off;

		sg[i] = (struct virtq_sg){ frame + off, piece };
		off += piece;
	}
	err = vnet_tx(u->vn, sg, nseg, flags, &u->tok[t]);
	if (err == 0) {
		u->tok[t].sent = true;
		u->tok[t].done = false;
		u->tok[t].len = len;
		u->tx_sent++;
	}
	return err;
}

unsigned up_tx_outstanding(const struct upper *u)
{
	return u->tx_sent - u->tx_done;
}

int up_check(struct upper *u)
{
	struct vnet_stats st;
	const struct virtio_vq *rxq;
	u32 free_n;

	if (!u->vn)
		return 0;
	vnet_get_stats(u->vn, &st);
	free_n = vnet_host_free_count(u->vn);
	rxq = vnet_host_rxq(u->vn);
	if (st.rx_posted + st.rx_held + free_n != st.rx_total) {
		up_err(u, "buffers: posted %u + held %u + free %u != total %u", st.rx_posted,
		       st.rx_held, free_n, st.rx_total);
		return -1;
	}
	if (st.rx_held != u->nheld) {
		up_err(u, "driver counts %u held, upper holds %u", st.rx_held, u->nheld);
		return -1;
	}
	if (rxq ? rxq->vq.inflight != st.rx_posted : st.rx_posted != 0) {
		up_err(u, "driver counts %u posted, ring has %u in flight", st.rx_posted,
		       rxq ? rxq->vq.inflight : 0);
		return -1;
	}
	return 0;
}
