/* The data disk (disk.h): chosen by serial, opened at the first ask, its
 * recovery report logged. store.selftest= and store.check= (test only)
 * write and check a known workload, for the kill -9 trials
 * (tests/qemu/test_store.py). */
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/power.h"
#include "kernel/random.h"
#include "kernel/time/time.h"
#include "kernel/time/wallclock.h"
#include "lib/fmt.h"
#include "lib/metrics.h"
#include "lib/string.h"
#include "storage/disk.h"

static char store_serial[24] = "vireo-data";
CMDLINE_PARAM(store, .key = "store", .type = CMDLINE_STR, .dst = store_serial, .dst_size = sizeof store_serial,
	      .def = "vireo-data", .values = "a disk serial (up to 20 characters), off",
	      .help = "the data disk: the serial of the virtio-blk disk that holds the store (a blank one is "
		      "formatted; one with data but no store is refused), or off");
static u64 selftest_writes;
CMDLINE_PARAM(selftest, .key = "store.selftest", .type = CMDLINE_UINT, .dst = &selftest_writes, .max = 100000000,
	      .def = "0",
	      .help = "test only: once the store is open, write this many values to 64 keys from 4 writers, "
		      "logging each acknowledgement");
static bool selftest_check;
CMDLINE_PARAM(check, .key = "store.check", .type = CMDLINE_BOOL, .dst = &selftest_check, .def = "0",
	      .help = "test only: once the store is open, read the store.selftest keys back and log what each holds");

static struct {
	struct store st;
	bool opening, done;
	int err;
	struct timer wait;
	u64 wait_until;
	void (*cb)(struct store *s, int err, void *arg);
	void *arg;
} disk;

static void disk_random(void *buf, size_t len)
{
	random_bytes(buf, len);
}

static void disk_selftest_start(struct store *s);
static void disk_check_start(struct store *s);

/* /metrics: the store's families once it is open (store.c). */
static void disk_write_metrics(struct metrics_buf *b)
{
	if (disk.done && !disk.err)
		st_write_metrics(b, &disk.st);
}
METRICS_SOURCE(store, disk_write_metrics);

/* ---- power off: the writes in flight reach the disk first ---- */

static void disk_drain_begin(void *ctx, struct power_drain_counts *c)
{
	(void)ctx;
	(void)c;	/* connections only; the store reports when settled */
}

/* Nothing being written and nothing queued: the batches so far are on the
 * disk (each completes only after its FLUSH). */
static bool disk_drain_done(void *ctx)
{
	(void)ctx;
	return disk.st.state != ST_READY || st_idle(&disk.st);
}

static u32 disk_drain_cut(void *ctx)
{
	(void)ctx;
	return 0;	/* a batch in flight is waited for (settle), never cut */
}

static void disk_drain_settled(void *ctx, bool done)
{
	const struct st_stats *t = &disk.st.stats;

	(void)ctx;
	if (done)
		kprintf("store: every write reached the disk before power off (%lu puts and deletes in %lu "
			"batches since boot)\n", (unsigned long)(t->puts + t->dels), (unsigned long)t->commits);
	else
		kprintf("store: a batch was still being written %u ms after the cut: power off without it (never "
			"acknowledged; the next open drops it if torn)\n", (unsigned)POWER_SETTLE_MS);
}

static const struct power_drain_ops disk_drain = {
	.begin = disk_drain_begin,
	.done = disk_drain_done,
	.cut = disk_drain_cut,
	.settled = disk_drain_settled,
	.settle = true,
};

static void disk_opened(struct store *s, int err, void *arg)
{
	const struct st_report *r = &s->report;

	disk.done = true;
	disk.err = err;
	if (err) {
		kprintf("store: cannot open the store on %s (serial %s): %s (%d)\n", s->dev->name, s->dev->serial,
			s->why, err);
	} else {
		kprintf("store: %s %s (serial %s): %lu keys, %lu records in %lu batches over %lu segments (%lu KiB); "
			"%lu KiB read in %lu ms (%lu ms checking and replaying)%s%s\n",
			r->formatted ? "formatted" : "opened", s->dev->name, s->dev->serial, (unsigned long)r->keys,
			(unsigned long)r->records, (unsigned long)r->batches, (unsigned long)r->segments,
			(unsigned long)(r->log_bytes / 1024), (unsigned long)(r->read_bytes / 1024),
			(unsigned long)(r->open_ns / NSEC_PER_MSEC),
			(unsigned long)(r->cpu_ns / NSEC_PER_MSEC), s->state == ST_READONLY ? ", read-only: " : "",
			s->state == ST_READONLY ? s->why : "");
		if (r->torn)
			kprintf("store: recovery dropped the torn batch %lu (%u records, %u bytes): never acknowledged\n",
				(unsigned long)r->torn_seq, r->torn_records, r->torn_bytes);
		if (r->sb_note[0])
			kprintf("store: superblock: %s\n", r->sb_note);
		if (s->state == ST_READY)
			power_register_drain(&disk_drain);
	}
	disk.cb(err ? (err == -ENODEV ? NULL : s) : s, err, disk.arg);
	if (!err && selftest_check)
		disk_check_start(s);
	if (!err && selftest_writes && s->state == ST_READY)
		disk_selftest_start(s);
}

static void disk_find(struct timer *t, void *arg)
{
	struct st_cfg cfg = { 0 };
	struct blk_dev *d = NULL;
	struct mm_stats mm;
	unsigned pending = 0;
	u64 now_ns;
	int err;

	if (strcmp(store_serial, "off") == 0) {
		kprintf("store: store=off: nothing is kept across restarts\n");
		disk.done = true;
		disk.err = -ENODEV;
		disk.cb(NULL, -ENODEV, disk.arg);
		return;
	}
	for (unsigned i = 0; i < 8; i++) {
		struct blk_dev *c = blk_virtio_get(i, i == 0 ? &pending : NULL);

		if (!c)
			break;
		if (c->serial[0] && strcmp(c->serial, store_serial) == 0) {
			d = c;
			break;
		}
	}
	if (!d && pending && time_ns() < disk.wait_until) {
		timer_start(&disk.wait, time_ns() + 50 * NSEC_PER_MSEC);
		return;
	}
	if (!d) {
		kprintf("store: no virtio-blk disk with serial %s: nothing is kept across restarts\n", store_serial);
		disk.done = true;
		disk.err = -ENODEV;
		disk.cb(NULL, -ENODEV, disk.arg);
		return;
	}
	/* The index may take an eighth of the memory (index.h: 80..336 bytes a key). */
	mm_get_stats(&mm);
	cfg.index_max = MAX(mm.usable_bytes / 8, (u64)1 << 20);
	cfg.pending_max = 4u << 20;
	cfg.format = true;
	cfg.readonly = d->ro;
	cfg.label = d->serial;
	cfg.random = disk_random;
	cfg.now_unix = wallclock_now(&now_ns) ? now_ns / 1000000000u : 0;
	err = st_open(&disk.st, d, &cfg, disk_opened, NULL);
	if (err) {
		kprintf("store: cannot open %s (%d)\n", d->name, err);
		disk.done = true;
		disk.err = err;
		disk.cb(&disk.st, err, disk.arg);
	}
}

int disk_store_open(void (*done)(struct store *s, int err, void *arg), void *arg)
{
	if (disk.opening)
		return -EALREADY;
	disk.opening = true;
	disk.cb = done;
	disk.arg = arg;
	timer_init(&disk.wait, disk_find, NULL);
	disk.wait_until = time_ns() + DISK_WAIT_MS * NSEC_PER_MSEC;
	timer_start(&disk.wait, time_ns());
	return 0;
}

/* ---- test only: the kill -9 workload ---- */

#define ST_KEYS 64u
#define ST_WRITERS 4u

static struct {
	struct store *s;
	u64 next, acked, failed, base;
	u8 val[3200];
} self;

/* The value of write i: "i=<i>;" then bytes that depend on i and the key. */
static u32 self_value(u64 i, u8 *out)
{
	u32 n = (u32)ksnprintf((char *)out, 32, "i=%lu;", (unsigned long)i);
	u32 len = n + (u32)((i * 37) % 3000);

	for (u32 k = n; k < len; k++)
		out[k] = (u8)(i * 131 + k * 7 + (i % ST_KEYS));
	return len;
}

static void self_key(u64 i, char *key)
{
	ksnprintf(key, 8, "st/%02u", (unsigned)(i % ST_KEYS));
}

static void self_next(void);

static void self_done(int err, void *arg)
{
	u64 i = (u64)(uintptr_t)arg;

	if (err) {
		self.failed++;
		kprintf("store: selftest write %lu failed (%d)\n", (unsigned long)i, err);
		return;
	}
	self.acked++;
	kprintf("store: ack %lu\n", (unsigned long)i);
	self_next();
}

static void self_next(void)
{
	while (self.next < selftest_writes) {
		char key[8];
		u64 i = self.next;
		u32 len = self_value(i, self.val);
		int err;

		self_key(i, key);
		err = st_put(self.s, (const u8 *)key, 5, self.val, len, self_done, (void *)(uintptr_t)i);
		if (err == -EBUSY)
			return;	/* the next acknowledgement brings it back */
		self.next++;
		if (err) {
			kprintf("store: selftest write %lu refused (%d)\n", (unsigned long)i, err);
			continue;
		}
		return;
	}
	if (self.next == selftest_writes && self.acked + self.failed + self.base == selftest_writes)
		kprintf("store: selftest done: %lu acknowledged, %lu failed\n", (unsigned long)self.acked,
			(unsigned long)self.failed);
}

static void disk_selftest_start(struct store *s)
{
	self.s = s;
	/* Write numbers go on from boot to boot: the store's next lsn is past
	 * every record on the disk. */
	self.next = self.base = s->next_lsn;
	selftest_writes += self.base;
	/* Writes i of one key come in order; ST_WRITERS chains run at once. */
	for (unsigned w = 0; w < ST_WRITERS; w++)
		self_next();
}

static struct {
	struct store *s;
	unsigned k, bad;
} chk;

static void check_next(void);

static void check_got(int err, const void *val, u32 vlen, void *arg)
{
	const u8 *v = val;
	u64 i = 0;
	u32 n = 2;
	static u8 want[3200];

	if (err) {
		kprintf("store: check st/%02u: read failed (%d)\n", chk.k, err);
		chk.bad++;
	} else {
		while (n < vlen && v[n] >= '0' && v[n] <= '9')
			i = i * 10 + (u64)(v[n++] - '0');
		if (vlen < 4 || v[0] != 'i' || v[1] != '=' || i % ST_KEYS != chk.k || self_value(i, want) != vlen ||
		    memcmp(want, v, vlen)) {
			kprintf("store: check st/%02u: BAD value (%u bytes)\n", chk.k, vlen);
			chk.bad++;
		} else {
			kprintf("store: check st/%02u i=%lu\n", chk.k, (unsigned long)i);
		}
	}
	chk.k++;
	check_next();
}

static void check_next(void)
{
	while (chk.k < ST_KEYS) {
		char key[8];
		int err;

		self_key(chk.k, key);
		err = st_get(chk.s, (const u8 *)key, 5, check_got, NULL);
		if (err == 0)
			return;
		kprintf("store: check st/%02u absent\n", chk.k);
		chk.k++;
	}
	kprintf("store: check done: %u bad\n", chk.bad);
}

static void disk_check_start(struct store *s)
{
	chk.s = s;
	chk.k = 0;
	check_next();
}
