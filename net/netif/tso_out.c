/* Transmit segmentation offload, the lwIP side (net/netif/tso_out.h).
 *
 * A merged frame is a pbuf chain the netif sends like any other: a custom
 * pbuf over the record's header copy (tso_merge patched its lengths and
 * flags; lwIP's own headers are never written), then one PBUF_REF pbuf per
 * payload piece, pointing into the segments' own pbufs. The record holds a
 * reference to every segment, so none of them is rewritten or freed by
 * lwIP (tcp_output_segment_busy) until the device is done and the chain is
 * freed; then the record's free function drops those references.
 *
 * Bounds: TSO_RECORDS_MAX records in flight at most (each at most 800 bytes
 * with the kernel heap's block header, allocated per merged frame and freed
 * when the device is done with it, so the heap is back to its idle level
 * after a burst: at most 256 x 800 = 200 KiB of kernel heap); with all
 * of them in flight a burst goes out segment by segment, as without the
 * offload. Each merged frame holds at most max_pieces PBUF_REF pbufs of
 * lwIP's pool (15 with VNET_TX_MAX_SG 16), and replaces at least two
 * frames' worth of ring slots. The burst itself is one tso_batch: at most
 * TSO_MAX_SEGS frames are ever waiting for the flush. */
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/string.h"
#include "lwip/pbuf.h"
#include "net/netif/tso_merge.h"
#include "net/netif/tso_out.h"

#define TSO_RECORDS_MAX 256u

struct tso_rec {
	struct pbuf_custom pc;	/* first: the pbuf is the record */
	u16 gso_size;
	unsigned nseg;
	struct pbuf *seg[TSO_MAX_SEGS];
	u8 hdr[TSO_HDR_MAX];
};

_Static_assert(sizeof(struct tso_rec) + 32 <= 800, "the bound written above");

struct tso_out_stats tso_out_stats;
static struct tso_batch batch;
static struct work flush_work;
static err_t (*xmit_fn)(struct pbuf *p);
static unsigned nrecs;		/* records in flight */
static bool ready, flushing;

static void tso_out_rec_free(struct pbuf *p)
{
	struct tso_rec *r = (struct tso_rec *)(void *)p;

	for (unsigned i = 0; i < r->nseg; i++)
		pbuf_free(r->seg[i]);
	kfree(r);
	nrecs--;
}

static struct tso_rec *tso_out_rec_get(void)
{
	struct tso_rec *r;

	if (nrecs == TSO_RECORDS_MAX)
		return NULL;
	r = kmalloc(sizeof(*r));
	if (r)
		nrecs++;
	return r;
}

u16 tso_out_gso_size(const struct pbuf *p)
{
	const struct pbuf_custom *pc = (const struct pbuf_custom *)(const void *)p;

	if (!(p->flags & PBUF_FLAG_IS_CUSTOM) || pc->custom_free_function != tso_out_rec_free)
		return 0;
	return ((const struct tso_rec *)(const void *)p)->gso_size;
}

/* Sends a frame queued with its own reference, and drops that reference. */
static void tso_out_send_held(struct pbuf *p)
{
	xmit_fn(p);
	pbuf_free(p);
}

/* The batch's frames one by one, as they came. */
static void tso_out_send_each(void)
{
	for (unsigned i = 0; i < batch.nseg; i++)
		tso_out_send_held(batch.tok[i]);
}

/* Builds the merged chain; NULL (nothing changed) if out of memory. */
static struct pbuf *tso_out_build(void)
{
	struct tso_rec *r;
	struct pbuf *head, *body = NULL;

	r = tso_out_rec_get();
	if (!r) {
		tso_out_stats.no_record++;
		return NULL;
	}
	for (unsigned i = 0; i < batch.npiece; i++) {
		struct pbuf *q = pbuf_alloc(PBUF_RAW, (u16)batch.piece[i].len, PBUF_REF);

		if (!q) {
			if (body)
				pbuf_free(body);
			kfree(r);
			nrecs--;
			tso_out_stats.no_pbuf++;
			return NULL;
		}
		q->payload = (void *)(uintptr_t)batch.piece[i].addr;
		if (body)
			pbuf_cat(body, q);
		else
			body = q;
	}
	tso_merge_finish(&batch);
	memcpy(r->hdr, batch.hdr, batch.first.hlen);
	r->gso_size = batch.gso_size;
	r->nseg = batch.nseg;
	for (unsigned i = 0; i < batch.nseg; i++)
		r->seg[i] = batch.tok[i];	/* the batch's references move to the record */
	r->pc.custom_free_function = tso_out_rec_free;
	head = pbuf_alloced_custom(PBUF_RAW, (u16)batch.first.hlen, PBUF_REF, &r->pc, r->hdr, TSO_HDR_MAX);
	pbuf_cat(head, body);
	return head;
}

void tso_out_flush(void)
{
	struct pbuf *m;

	/* A transmit error takes the link down from inside xmit, and the
	 * link-down path flushes: the outer flush finishes the batch (the
	 * driver refuses and frees the rest). */
	if (batch.nseg == 0 || flushing)
		return;
	flushing = true;
	if (batch.nseg == 1) {
		tso_out_send_held(batch.tok[0]);
	} else if ((m = tso_out_build())) {
		tso_out_stats.merged_frames++;
		tso_out_stats.merged_segments += batch.nseg;
		tso_out_send_held(m);
	} else {
		tso_out_send_each();
	}
	tso_merge_reset(&batch);
	flushing = false;
}

static void tso_out_flush_work_fn(void *arg)
{
	(void)arg;
	tso_out_flush();
}

err_t tso_out(struct pbuf *p)
{
	struct tso_piece pcs[TSO_MAX_PIECES + 1];
	unsigned n = 0;
	struct pbuf *q;
	enum tso_verdict v;

	for (q = p; q && n <= TSO_MAX_PIECES; q = q->next)
		if (q->len)
			pcs[n++] = (struct tso_piece){ q->payload, q->len };
	v = q ? TSO_ALONE : tso_merge_add(&batch, pcs, n, p->tot_len, p);
	if (v == TSO_FULL) {
		tso_out_flush();
		v = tso_merge_add(&batch, pcs, n, p->tot_len, p);
	}
	if (v == TSO_ALONE) {
		tso_out_flush();
		return xmit_fn(p);
	}
	pbuf_ref(p);
	if (batch.nseg == 1)
		work_queue(&flush_work);
	return ERR_OK;
}

void tso_out_init(err_t (*xmit)(struct pbuf *p), bool v4, bool v6, unsigned max_pieces)
{
	if (!ready)
		work_init(&flush_work, tso_out_flush_work_fn, NULL);
	ready = true;
	xmit_fn = xmit;
	tso_merge_init(&batch, max_pieces, v4, v6);
}
