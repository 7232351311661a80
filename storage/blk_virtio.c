/* The block layer over virtio-blk: one struct blk_dev per virtio-blk
 * device, made the first time it is asked for and kept (the driver keeps
 * its struct vblk across resets too). Each blk_io carries the driver's
 * request in its scratch bytes. */
#include "drivers/virtio/blk/virtio_blk.h"
#include "kernel/mm/mm.h"
#include "lib/fmt.h"
#include "lib/string.h"
#include "storage/blk.h"

_Static_assert(sizeof(struct vblk_req) <= BLK_LOWER_BYTES, "the driver's request fits the scratch bytes");

#define BLKV_MAX 8

static struct blk_dev *blkv[BLKV_MAX];

static void blkv_done(struct vblk_req *r, int err)
{
	blk_lower_done(r->priv, err);
}

static int blkv_submit(struct blk_dev *d, struct blk_io *io, u8 op, u64 sector, void *buf, u32 len)
{
	struct vblk_req *r = (struct vblk_req *)(void *)io->lower;
	static const u8 ops[] = {
		[BLK_READ] = VBLK_READ, [BLK_WRITE] = VBLK_WRITE, [BLK_FLUSH] = VBLK_FLUSH,
		[BLK_DISCARD] = VBLK_DISCARD, [BLK_WRITE_ZEROES] = VBLK_WRITE_ZEROES,
	};

	*r = (struct vblk_req){ .op = ops[op], .sector = sector, .buf = buf, .len = len, .done = blkv_done,
				.priv = io };
	return vblk_submit(d->ctx, r);
}

static void *blkv_buf_alloc(struct blk_dev *d, size_t bytes)
{
	return vblk_buf_alloc(bytes);
}

static void blkv_buf_free(struct blk_dev *d, void *p, size_t bytes)
{
	vblk_buf_free(p, bytes);
}

static const struct blk_dev_ops blkv_ops = {
	.submit = blkv_submit,
	.buf_alloc = blkv_buf_alloc,
	.buf_free = blkv_buf_free,
};

/* The geometry again: a device reset and probed again reads its config
 * afresh (the same disk, normally). */
static void blkv_refresh(struct blk_dev *d)
{
	struct vblk_info in;

	vblk_get_info(d->ctx, &in);
	strlcpy(d->serial, in.serial, sizeof d->serial);
	d->sectors = in.sectors;
	d->block_size = in.block_size;
	d->max_io = in.max_io;
	d->ro = in.ro;
	d->writeback = in.writeback;
	d->discard = in.discard;
	d->write_zeroes = in.write_zeroes;
	d->max_discard = in.max_discard;
	d->max_write_zeroes = in.max_write_zeroes;
}

struct blk_dev *blk_virtio_get(unsigned i, unsigned *n_pending)
{
	struct vblk *v;
	struct vblk_info in;

	if (n_pending) {
		*n_pending = 0;
		for (unsigned k = 0; (v = vblk_get(k)); k++) {
			vblk_get_info(v, &in);
			*n_pending += in.present && in.id_pending;
		}
	}
	v = vblk_get(i);
	if (!v || i >= BLKV_MAX)
		return NULL;
	if (!blkv[i]) {
		struct blk_dev *d = kzalloc(sizeof *d);

		if (!d)
			return NULL;
		vblk_get_info(v, &in);
		d->ops = &blkv_ops;
		d->ctx = v;
		ksnprintf(d->name, sizeof d->name, "virtio%u", in.index);
		blk_dev_init(d);
		blkv[i] = d;
	}
	blkv_refresh(blkv[i]);
	return blkv[i];
}
