/* The model disk (memdisk.h). */
#include <stdlib.h>
#include <string.h>

#include "tests/host/storage/memdisk.h"

struct md_write {
	struct md_write *next;
	u64 sector;
	u32 len;
	bool done;		/* completed (a later FLUSH covers it) */
	bool flushing;		/* a FLUSH submitted after its completion is out */
	u8 *data;
};

struct md_req {
	struct md_req *next;
	struct blk_io *io;
	u8 op;
	int err;
	struct md_write *w;	/* WRITE: its cache entry */
};

static void md_persist(struct memdisk *m, struct md_write *w)
{
	memcpy(m->durable + w->sector * 512, w->data, w->len);
}

static void md_deliver(void *arg)
{
	struct memdisk *m = arg;
	struct md_req *r = m->q;

	m->q = NULL;
	m->q_tail = &m->q;
	while (r && !m->crashed) {
		struct md_req *next = r->next;

		if (r->op == BLK_WRITE && r->w)
			r->w->done = true;
		if (r->op == BLK_FLUSH && !r->err) {
			/* Durable now: every write that completed before the FLUSH went out. */
			struct md_write **pp = &m->writes;

			while (*pp) {
				struct md_write *w = *pp;

				if (w->flushing) {
					md_persist(m, w);
					*pp = w->next;
					free(w->data);
					free(w);
				} else {
					pp = &w->next;
				}
			}
		}
		blk_lower_done(r->io, r->err);
		free(r);
		r = next;
	}
	while (r) {
		struct md_req *next = r->next;

		free(r);
		r = next;
	}
}

static bool md_fail(struct memdisk *m, u8 op)
{
	if (m->fail_in[op] == 0)
		return false;
	if (--m->fail_in[op] > 0)
		return false;
	if (m->fail_count[op] > 1) {
		m->fail_count[op]--;
		m->fail_in[op] = 1;
	}
	return true;
}

static int md_submit(struct blk_dev *d, struct blk_io *io, u8 op, u64 sector, void *buf, u32 len)
{
	struct memdisk *m = d->ctx;
	struct md_req *r;

	if (m->crashed)
		return 0;	/* it vanishes */
	if (++m->reqs == m->crash_at) {
		m->crashed = true;
		return 0;
	}
	m->dev_reqs[op]++;
	r = calloc(1, sizeof *r);
	r->io = io;
	r->op = op;
	r->err = md_fail(m, op) ? -EIO : 0;
	if (sector * 512 + len > m->bytes)
		abort();	/* the block layer's checks let it through */
	if (!r->err) {
		switch (op) {
		case BLK_READ:
			memcpy(buf, m->cur + sector * 512, len);
			break;
		case BLK_WRITE:
		case BLK_WRITE_ZEROES:
		case BLK_DISCARD: {
			struct md_write *w = calloc(1, sizeof *w), **pp = &m->writes;

			w->sector = sector;
			w->len = len;
			w->data = malloc(len);
			if (op == BLK_WRITE)
				memcpy(w->data, buf, len);
			else
				memset(w->data, 0, len);
			memcpy(m->cur + sector * 512, w->data, len);
			if (!m->dev.writeback) {
				/* Write-through: durable once it completes; modelled as at once. */
				md_persist(m, w);
				free(w->data);
				free(w);
				break;
			}
			while (*pp)
				pp = &(*pp)->next;
			*pp = w;
			if (op == BLK_WRITE)
				r->w = w;
			else
				w->done = true;
			break;
		}
		case BLK_FLUSH:
			for (struct md_write *w = m->writes; w; w = w->next)
				if (w->done)
					w->flushing = true;
			break;
		}
	} else if (op == BLK_WRITE) {
		/* A failed write may have reached the cache in part: half of it does. */
		struct md_write *w = calloc(1, sizeof *w), **pp = &m->writes;

		w->sector = sector;
		w->len = ALIGN_UP(len / 2, 512u);
		w->data = malloc(w->len ? w->len : 1);
		memcpy(w->data, buf, w->len);
		memcpy(m->cur + sector * 512, w->data, w->len);
		while (*pp)
			pp = &(*pp)->next;
		*pp = w;
	}
	*m->q_tail = r;
	m->q_tail = &r->next;
	work_queue(&m->work);
	return 0;
}

/* Freed buffers are kept for reuse (the crash trials open thousands of
 * stores: fresh megabytes each time cost more than the trials). */
#define MD_CACHE 8
static struct { void *p; size_t bytes; } md_cache[MD_CACHE];

static void *md_buf_alloc(struct blk_dev *d, size_t bytes)
{
	for (unsigned i = 0; i < MD_CACHE; i++)
		if (md_cache[i].p && md_cache[i].bytes == bytes) {
			void *p = md_cache[i].p;

			md_cache[i].p = NULL;
			return memset(p, 0, bytes);
		}
	return calloc(1, bytes);
}

static void md_buf_free(struct blk_dev *d, void *p, size_t bytes)
{
	for (unsigned i = 0; i < MD_CACHE; i++)
		if (!md_cache[i].p) {
			md_cache[i].p = p;
			md_cache[i].bytes = bytes;
			return;
		}
	free(p);
}

static const struct blk_dev_ops md_ops = {
	.submit = md_submit,
	.buf_alloc = md_buf_alloc,
	.buf_free = md_buf_free,
};

void memdisk_init(struct memdisk *m, u64 sectors, u32 block_size, u32 max_io, bool writeback)
{
	memset(m, 0, sizeof *m);
	m->bytes = sectors * 512;
	m->cur = calloc(1, m->bytes);
	m->durable = calloc(1, m->bytes);
	m->q_tail = &m->q;
	work_init(&m->work, md_deliver, m);
	m->dev.ops = &md_ops;
	m->dev.ctx = m;
	strcpy(m->dev.name, "memdisk");
	strcpy(m->dev.serial, "vireo-data");
	m->dev.sectors = sectors;
	m->dev.block_size = block_size;
	m->dev.max_io = max_io;
	m->dev.writeback = writeback;
	m->dev.write_zeroes = true;
	m->dev.max_write_zeroes = 1u << 20;
	blk_dev_init(&m->dev);
}

static void md_drop(struct memdisk *m)
{
	while (m->writes) {
		struct md_write *w = m->writes;

		m->writes = w->next;
		free(w->data);
		free(w);
	}
	while (m->q) {
		struct md_req *r = m->q;

		m->q = r->next;
		free(r);
	}
	m->q_tail = &m->q;
	work_cancel(&m->work);
}

void memdisk_free(struct memdisk *m)
{
	md_drop(m);
	work_cancel(&m->dev.done_work);
	free(m->cur);
	free(m->durable);
}

void memdisk_fail(struct memdisk *m, enum blk_op op, int n, unsigned count)
{
	m->fail_in[op] = n;
	m->fail_count[op] = count;
}

void memdisk_crash(struct memdisk *m)
{
	m->crashed = true;
}

unsigned memdisk_reboot(struct memdisk *m, unsigned seed)
{
	unsigned landed = 0;
	u64 x = seed * 0x9e3779b97f4a7c15ull + 1;

	for (struct md_write *w = m->writes; w; w = w->next)
		for (u32 s = 0; s < w->len / 512; s++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			if (x & 1) {
				memcpy(m->durable + (w->sector + s) * 512, w->data + s * 512, 512);
				landed++;
			}
		}
	md_drop(m);
	memcpy(m->cur, m->durable, m->bytes);
	m->crashed = false;
	m->reqs = 0;
	m->crash_at = 0;
	memset(m->fail_in, 0, sizeof m->fail_in);
	/* The block layer's queue of completions belongs to the old boot. */
	work_cancel(&m->dev.done_work);
	blk_dev_init(&m->dev);
	return landed;
}
