/* The block layer (blk.h): cutting, retries, checks, counters, deferred
 * completions. Pure but for the loop's work queue and the clock, so the
 * host tests run it over a model disk. */
#include "kernel/time/time.h"
#include "storage/blk.h"

static void blk_deliver(void *arg)
{
	struct blk_dev *d = arg;
	struct blk_io *io = d->done_head;

	d->done_head = d->done_tail = NULL;
	while (io) {
		struct blk_io *next = io->next;

		io->next = NULL;
		io->done(io, io->err);
		io = next;
	}
}

void blk_dev_init(struct blk_dev *d)
{
	work_init(&d->done_work, blk_deliver, d);
	d->done_head = d->done_tail = NULL;
	d->ready = true;
}

static void blk_finish(struct blk_dev *d, struct blk_io *io, int err)
{
	io->err = err;
	io->next = NULL;
	if (err)
		d->stats.errors++;
	if (d->done_tail)
		d->done_tail->next = io;
	else
		d->done_head = io;
	d->done_tail = io;
	work_queue(&d->done_work);
}

/* Sends the next piece of io; false when there is nothing left. */
static int blk_next(struct blk_dev *d, struct blk_io *io)
{
	u32 left = io->len - io->at;
	u32 n = io->op == BLK_FLUSH ? 0
		: io->op == BLK_DISCARD ? MIN(left, d->max_discard)
		: io->op == BLK_WRITE_ZEROES ? MIN(left, d->max_write_zeroes)
		: MIN(left, d->max_io);

	io->chunk = n;
	return d->ops->submit(d, io, io->op, io->sector + io->at / 512, io->buf ? (u8 *)io->buf + io->at : NULL,
			      n);
}

void blk_lower_done(struct blk_io *io, int err)
{
	struct blk_dev *d = io->dev;

	if (err == -EIO && io->op == BLK_READ && ++io->tries < BLK_READ_TRIES) {
		d->stats.read_retries++;
		err = blk_next(d, io);
		if (err == 0)
			return;
	}
	if (err) {
		blk_finish(d, io, err);
		return;
	}
	io->at += io->chunk;
	io->tries = 0;
	if (io->at < io->len) {
		err = blk_next(d, io);
		if (err)
			blk_finish(d, io, err);
		return;
	}
	if (io->op == BLK_FLUSH)
		d->stats.flush_ns += time_ns() - io->t0;
	blk_finish(d, io, 0);
}

int blk_submit(struct blk_dev *d, struct blk_io *io)
{
	u32 bs = d->block_size;
	int err = 0;

	io->dev = d;
	io->t0 = time_ns();
	io->at = 0;
	io->tries = 0;
	io->next = NULL;
	switch (io->op) {
	case BLK_READ:
		d->stats.reads++;
		d->stats.read_bytes += io->len;
		break;
	case BLK_WRITE:
		d->stats.writes++;
		d->stats.write_bytes += io->len;
		break;
	case BLK_FLUSH:
		d->stats.flushes++;
		break;
	case BLK_DISCARD:
		d->stats.discards++;
		break;
	case BLK_WRITE_ZEROES:
		d->stats.write_zeroes++;
		break;
	default:
		err = -EINVAL;
		break;
	}
	if (err == 0 && io->op != BLK_FLUSH &&
	    (!io->len || io->len % bs || (io->sector * 512) % bs || io->sector > d->sectors ||
	     io->len / 512 > d->sectors - io->sector || ((io->op == BLK_READ || io->op == BLK_WRITE) && !io->buf)))
		err = -EINVAL;
	if (err == 0 && d->ro && io->op != BLK_READ && io->op != BLK_FLUSH)
		err = -EROFS;
	if (err == 0 && ((io->op == BLK_DISCARD && !d->discard) || (io->op == BLK_WRITE_ZEROES && !d->write_zeroes)))
		err = -ENOTSUP;
	if (err) {
		blk_finish(d, io, err);
		return 0;
	}
	if (io->op == BLK_FLUSH) {
		if (!d->writeback) {
			blk_finish(d, io, 0);	/* write-through: already durable */
			return 0;
		}
		io->len = 0;
	}
	err = blk_next(d, io);
	if (err)
		blk_finish(d, io, err);
	return 0;
}
