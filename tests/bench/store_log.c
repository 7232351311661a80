/* store_log: makes a data disk whose store holds a log of a given size, for
 * `make bench-recovery` (tests/bench/recovery.py). It runs the store's own
 * code (storage/store*.c, logfmt.c, blk.c, index.c, as the host tests build
 * them, on the host kernel shim's loop) over a file-backed disk, so the
 * disk holds exactly what the kernel writes: a format, then puts from
 * several writers at once (group commit, as under load), until the batches
 * written reach the size asked for.
 *
 * The keys are a bounded set ("r00000".. in turn), so the index and what
 * apps/kv loads at boot stay small while the log grows: write i goes to
 * key i % keys as its version i / keys. Value v of key k is
 * recovery_value(k, v) below, which tests/bench/recovery.py computes too
 * to check every key after the guest's recovery.
 *
 *   store_log FILE LOG_MIB [KEYS] [WRITERS]
 *
 * FILE is made (or cut) to LOG_MIB + LOG_MIB/8 + 16 MiB, so that the log
 * never fills the ring and compaction never runs: the log is the whole of
 * what was written. Prints one JSON line: the writes, keys, batches,
 * bytes of batches and of records, segments, and compactions (0). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "tests/host/shim/hostk.h"
#include "storage/store.h"

/* ---- a disk in a file: requests complete from the loop ---- */

struct fd_req {
	struct fd_req *next;
	struct blk_io *io;
	int err;
};

static struct {
	struct blk_dev dev;
	int fd;
	struct fd_req *q, **q_tail;
	struct work work;
} fdisk;

static void fd_deliver(void *arg)
{
	struct fd_req *r = fdisk.q;

	fdisk.q = NULL;
	fdisk.q_tail = &fdisk.q;
	while (r) {
		struct fd_req *next = r->next;

		blk_lower_done(r->io, r->err);
		free(r);
		r = next;
	}
}

static int fd_submit(struct blk_dev *d, struct blk_io *io, u8 op, u64 sector, void *buf, u32 len)
{
	struct fd_req *r = calloc(1, sizeof *r);
	ssize_t n = len;

	if (!r)
		return -ENOMEM;
	if (op == BLK_READ)
		n = pread(fdisk.fd, buf, len, (off_t)(sector * 512));
	else if (op == BLK_WRITE)
		n = pwrite(fdisk.fd, buf, len, (off_t)(sector * 512));
	else if (op != BLK_FLUSH)
		n = -1;	/* the disk offers nothing else */
	r->io = io;
	r->err = n == (ssize_t)len ? 0 : -EIO;
	*fdisk.q_tail = r;
	fdisk.q_tail = &r->next;
	work_queue(&fdisk.work);
	return 0;
}

static void *fd_buf_alloc(struct blk_dev *d, size_t bytes)
{
	return calloc(1, bytes);
}

static void fd_buf_free(struct blk_dev *d, void *p, size_t bytes)
{
	free(p);
}

static const struct blk_dev_ops fd_ops = {
	.submit = fd_submit,
	.buf_alloc = fd_buf_alloc,
	.buf_free = fd_buf_free,
};

/* ---- the workload ---- */

/* Value v of key k: "k=<k>;v=<v>;" and then bytes 37 * k + 11 * v + j (j
 * the byte's index in the value), 1024..4096 bytes in all. */
static u32 recovery_value(u32 k, u32 v, u8 *out)
{
	u32 len = 1024 + (k * 7919u + v * 104729u) % 3073u;
	int n = snprintf((char *)out, 32, "k=%u;v=%u;", k, v);

	for (u32 j = (u32)n; j < len; j++)
		out[j] = (u8)(37 * k + 11 * v + j);
	return len;
}

static struct {
	struct store st;
	u64 target;		/* bytes of batches to write */
	u32 keys;
	u64 next, acked, failed;
	bool opened;
	int open_err;
	u8 val[4096];
} w;

static void fill_random(void *buf, size_t len)
{
	if (getrandom(buf, len, 0) != (ssize_t)len)
		abort();
}

static void opened(struct store *s, int err, void *arg)
{
	w.opened = true;
	w.open_err = err;
}

static void put_next(void);

static void put_done(int err, void *arg)
{
	if (err) {
		w.failed++;
		fprintf(stderr, "store_log: write %lu failed (%d)\n", (unsigned long)(uintptr_t)arg, err);
		return;
	}
	w.acked++;
	put_next();
}

static void put_next(void)
{
	char key[16];
	u32 k, len;
	int err;

	if (w.st.stats.log_bytes >= w.target || w.failed)
		return;
	k = (u32)(w.next % w.keys);
	len = recovery_value(k, (u32)(w.next / w.keys), w.val);
	snprintf(key, sizeof key, "r%05u", k);
	err = st_put(&w.st, (const u8 *)key, (u32)strlen(key), w.val, len, put_done, (void *)(uintptr_t)w.next);
	if (err) {
		fprintf(stderr, "store_log: write %lu refused (%d)\n", (unsigned long)w.next, err);
		w.failed++;
		return;
	}
	w.next++;
}

int main(int argc, char **argv)
{
	u64 mib = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
	u32 writers = argc > 4 ? (u32)atoi(argv[4]) : 32;
	struct st_cfg cfg = { 0 };
	u64 bytes;

	w.keys = argc > 3 ? (u32)atoi(argv[3]) : 1024;
	if (argc < 3 || mib < 1 || mib > 65536 || w.keys < 1 || w.keys > 100000 || writers < 1 || writers > 1024) {
		fprintf(stderr, "usage: store_log FILE LOG_MIB (1..65536) [KEYS (1024)] [WRITERS (32)]\n");
		return 2;
	}
	bytes = (mib + mib / 8 + 16) << 20;
	fdisk.fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fdisk.fd < 0 || ftruncate(fdisk.fd, (off_t)bytes)) {
		perror(argv[1]);
		return 1;
	}
	fdisk.q_tail = &fdisk.q;
	work_init(&fdisk.work, fd_deliver, NULL);
	fdisk.dev.ops = &fd_ops;
	strcpy(fdisk.dev.name, "file");
	strcpy(fdisk.dev.serial, "vireo-data");
	fdisk.dev.sectors = bytes / 512;
	fdisk.dev.block_size = 512;
	fdisk.dev.max_io = 1u << 20;
	fdisk.dev.writeback = true;
	blk_dev_init(&fdisk.dev);

	cfg.index_max = 64u << 20;
	cfg.pending_max = 4u << 20;
	cfg.format = true;
	cfg.label = "vireo-data";
	cfg.random = fill_random;
	if (st_open(&w.st, &fdisk.dev, &cfg, opened, NULL) != 0)
		return 1;
	while (!w.opened && hk_run(1000000))
		;
	if (!w.opened || w.open_err || w.st.state != ST_READY) {
		fprintf(stderr, "store_log: the open failed (%d): %s\n", w.open_err, w.st.why);
		return 1;
	}
	w.target = mib << 20;
	for (u32 i = 0; i < writers; i++)
		put_next();
	while (hk_run(1000000))
		;
	if (w.failed || w.acked != w.next || !st_idle(&w.st)) {
		fprintf(stderr, "store_log: %lu of %lu writes acknowledged, %lu failed\n", (unsigned long)w.acked,
			(unsigned long)w.next, (unsigned long)w.failed);
		return 1;
	}
	if (fdatasync(fdisk.fd)) {
		perror("fdatasync");
		return 1;
	}
	printf("{\"file\": \"%s\", \"disk_bytes\": %lu, \"writes\": %lu, \"keys\": %u, \"batches\": %lu, "
	       "\"log_bytes\": %lu, \"record_bytes\": %lu, \"segments\": %u, \"compactions\": %lu}\n",
	       argv[1], (unsigned long)bytes, (unsigned long)w.acked, w.keys, (unsigned long)w.st.stats.commits,
	       (unsigned long)w.st.stats.log_bytes, (unsigned long)w.st.stats.user_bytes,
	       w.st.nseg - w.st.nfree, (unsigned long)w.st.stats.compactions);
	st_close(&w.st);
	close(fdisk.fd);
	return w.st.stats.compactions ? 1 : 0;
}
