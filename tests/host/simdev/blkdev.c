/* blkdev: simdev with virtio-blk's request queue; see blkdev.h. */
#include <stdlib.h>
#include <string.h>

#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/blkdev.h"
#include "tests/host/simdev/hostbus.h"

_Static_assert(offsetof(struct blkdev, kick) == offsetof(struct blkdev, sd.kick), "simdev fields line up");

#define BD_Q 0

/* The response bytes for buffer b (its writable part: data, then the
 * status byte) and the used length to report. Executes the request on the
 * disk. Returns false for a malformed request (recorded). */
static bool bd_execute(struct blkdev *bd, const struct fake_buf *b, u8 *resp, u32 *used)
{
	struct virtio_blk_req_hdr h;
	const struct fake_seg *hs = &b->seg[0];
	u8 st = VIRTIO_BLK_S_OK;
	u32 data_in = b->in_len ? b->in_len - 1 : 0, data_out;
	u64 off;
	unsigned nseg = 0;

	*used = b->in_len;
	if (b->nseg < 2 || hs->write || hs->len != sizeof h || !b->seg[b->nseg - 1].write ||
	    b->seg[b->nseg - 1].len != 1) {
		sd_err(&bd->sd, BD_Q, "request layout: header must be its own 16-byte element, status its own last byte");
		bd->bad++;
		return false;
	}
	memcpy(&h, hs->va, sizeof h);
	data_out = b->out_len - (u32)sizeof h;
	for (unsigned i = 1; i + 1 < b->nseg; i++)
		nseg++;
	bd->max_segs = MAX(bd->max_segs, nseg);
	off = h.sector * VIRTIO_BLK_SECTOR;
	memset(resp, 0, b->in_len);
	switch (h.type) {
	case VIRTIO_BLK_T_IN:
	case VIRTIO_BLK_T_OUT: {
		u32 len = h.type == VIRTIO_BLK_T_IN ? data_in : data_out;

		if ((h.type == VIRTIO_BLK_T_IN && data_out) || (h.type == VIRTIO_BLK_T_OUT && data_in) || !len ||
		    len % bd->block_size || off % bd->block_size || h.sector > bd->sectors ||
		    len / VIRTIO_BLK_SECTOR > bd->sectors - h.sector) {
			sd_err(&bd->sd, BD_Q, "%s of %u bytes at sector %llu: out of range or not whole blocks",
			       h.type ? "write" : "read", len, (unsigned long long)h.sector);
			bd->bad++;
			st = VIRTIO_BLK_S_IOERR;
			break;
		}
		if (h.type == VIRTIO_BLK_T_IN) {
			bd->reads++;
			memcpy(resp, bd->disk + off, len);
		} else {
			u8 *p = bd->disk + off;

			bd->writes++;
			for (unsigned i = 1; i + 1 < b->nseg; i++) {
				memcpy(p, b->seg[i].va, b->seg[i].len);
				p += b->seg[i].len;
			}
		}
		break;
	}
	case VIRTIO_BLK_T_FLUSH:
		bd->flushes++;
		if (data_in || data_out) {
			sd_err(&bd->sd, BD_Q, "FLUSH with data");
			bd->bad++;
		}
		bd->flushed_writes = bd->writes;
		break;
	case VIRTIO_BLK_T_GET_ID:
		bd->get_ids++;
		if (data_in != VIRTIO_BLK_ID_BYTES) {
			sd_err(&bd->sd, BD_Q, "GET_ID with %u writable bytes", data_in);
			bd->bad++;
			st = VIRTIO_BLK_S_IOERR;
			break;
		}
		memcpy(resp, bd->serial, VIRTIO_BLK_ID_BYTES);
		break;
	case VIRTIO_BLK_T_DISCARD:
	case VIRTIO_BLK_T_WRITE_ZEROES: {
		struct virtio_blk_discard_wz seg;
		bool wz = h.type == VIRTIO_BLK_T_WRITE_ZEROES;

		if (data_out != sizeof seg || data_in || b->seg[1].len != sizeof seg) {
			sd_err(&bd->sd, BD_Q, "%s with %u readable bytes", wz ? "WRITE_ZEROES" : "DISCARD", data_out);
			bd->bad++;
			st = VIRTIO_BLK_S_IOERR;
			break;
		}
		memcpy(&seg, b->seg[1].va, sizeof seg);
		if (seg.sector > bd->sectors || seg.num_sectors > bd->sectors - seg.sector) {
			sd_err(&bd->sd, BD_Q, "range past the disk");
			bd->bad++;
			st = VIRTIO_BLK_S_IOERR;
			break;
		}
		if (wz) {
			bd->write_zeroes++;
			memset(bd->disk + seg.sector * VIRTIO_BLK_SECTOR, 0, (size_t)seg.num_sectors * VIRTIO_BLK_SECTOR);
		} else {
			bd->discards++;	/* forgotten: reads as what it was (allowed) */
		}
		break;
	}
	default:
		st = VIRTIO_BLK_S_UNSUPP;
		break;
	}
	switch (bd->fault) {
	case BD_IOERR:
		st = VIRTIO_BLK_S_IOERR;
		break;
	case BD_UNSUPP:
		st = VIRTIO_BLK_S_UNSUPP;
		break;
	case BD_STATUS_BAD:
		st = 0x07;
		break;
	case BD_STATUS_UNSET:
		st = 0xff;	/* what the driver posted: "left alone" */
		break;
	case BD_LEN_SHORT:
		*used = b->in_len - 1;
		break;
	case BD_LEN_ZERO:
		*used = 0;
		break;
	default:
		break;
	}
	resp[b->in_len - 1] = st;
	return true;
}

static void bd_serve(struct blkdev *bd, unsigned max)
{
	struct fake_dev *q = &bd->q[BD_Q];
	unsigned n = 0;

	sd_posted(&bd->sd, BD_Q);
	while (n < max && q->npending) {
		const struct fake_buf *b = &q->pending[0];
		enum fake_lie lie = FAKE_LIE_NONE;
		u8 *resp = malloc(b->in_len ? b->in_len : 1);
		u32 used;

		if (!bd_execute(bd, b, resp, &used))
			used = b->in_len;
		if (used < b->in_len) {
			/* A length that lies short: everything is written all
			 * the same (the legacy devices' habit). */
			u32 at = 0;

			for (unsigned k = 0; k < b->nseg; k++) {
				if (!b->seg[k].write)
					continue;
				memcpy(b->seg[k].va, resp + at, b->seg[k].len);
				at += b->seg[k].len;
			}
		}
		if (bd->fault == BD_ID_RANGE)
			lie = FAKE_LIE_ID_RANGE;
		else if (bd->fault == BD_ID_NONHEAD)
			lie = FAKE_LIE_ID_NONHEAD;
		if (!bd->fault_sticky)
			bd->fault = BD_NONE;
		q->data = resp;
		q->data_len = b->in_len;
		q->lie = lie;
		fake_dev_complete(q, 0, used);
		free(resp);
		bd->requests++;
		n++;
	}
	bd_irq(bd);
}

static void bd_kick(struct simdev *sd, unsigned qi)
{
	struct blkdev *bd = (struct blkdev *)sd;

	if (bd->hold)
		sd_posted(sd, qi);
	else
		bd_serve(bd, ~0u);
}

unsigned bd_complete(struct blkdev *bd, unsigned max)
{
	unsigned before = bd->requests;

	bd_serve(bd, max);
	return bd->requests - before;
}

unsigned bd_pending(struct blkdev *bd)
{
	return sd_posted(&bd->sd, BD_Q);
}

void bd_irq(struct blkdev *bd)
{
	if (!bd->no_irq)
		sd_irq(&bd->sd, BD_Q, false);
}

void bd_init(struct blkdev *bd, u64 features, u64 sectors, u32 block_size, u16 qsize)
{
	memset(bd, 0, sizeof *bd);
	sd_init(&bd->sd, VIRTIO_ID_BLOCK, features, sizeof(struct virtio_blk_config));
	bd->kick = bd_kick;
	bd->early_notify = 0;
	bd->qmax[BD_Q] = qsize;
	bd->sectors = sectors;
	bd->block_size = block_size;
	bd->disk = calloc(1, sectors * VIRTIO_BLK_SECTOR + 1);
	memcpy(bd->serial, "simdev-blk", 10);
	sd_cfg_write32(&bd->sd, 0, (u32)sectors);
	sd_cfg_write32(&bd->sd, 4, (u32)(sectors >> 32));
	sd_cfg_write32(&bd->sd, offsetof(struct virtio_blk_config, blk_size), block_size);
}

void bd_fini(struct blkdev *bd)
{
	sd_fini(&bd->sd);
	free(bd->disk);
	bd->disk = NULL;
}
