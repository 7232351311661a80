/* simdev: a simulated virtio device of any type; see simdev.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/host/shim/hostk.h"
#include "tests/host/simdev/hostbus.h"
#include "tests/host/simdev/simdev.h"

static struct simdev *to_sd(struct virtio_dev *d)
{
	return (struct simdev *)((char *)d - offsetof(struct simdev, vd));
}

void sd_err(struct simdev *sd, unsigned qi, const char *fmt, ...)
{
	struct fake_dev *q = &sd->q[qi < SD_NQ ? qi : 0];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(q->error, sizeof q->error, fmt, ap);
	va_end(ap);
	q->errors++;
	if (getenv("VIREO_TEST_LOG"))
		fprintf(stderr, "simdev: driver error: %s\n", q->error);
}

unsigned sd_errors(const struct simdev *sd)
{
	unsigned n = 0;

	for (unsigned i = 0; i < SD_NQ; i++)
		n += sd->q[i].errors;
	return n;
}

const char *sd_error(const struct simdev *sd)
{
	for (unsigned i = 0; i < SD_NQ; i++)
		if (sd->q[i].errors)
			return sd->q[i].error;
	return "";
}

u32 sd_gather(const struct fake_buf *b, u8 *out, u32 max)
{
	u32 n = 0;

	for (unsigned i = 0; i < b->nseg; i++) {
		if (b->seg[i].write)
			continue;
		for (u32 j = 0; j < b->seg[i].len; j++, n++)
			if (n < max)
				out[n] = b->seg[i].va[j];
	}
	return n;
}

/* Takes newly available buffers; with the split event index, asks to be
 * notified of the very next one, as a device that keeps up does. */
unsigned sd_posted(struct simdev *sd, unsigned qi)
{
	struct fake_dev *q;

	if (qi >= SD_NQ || !sd->live[qi])
		return 0;
	q = &sd->q[qi];
	fake_dev_fetch(q);
	if (!q->packed && q->event_idx)
		fake_dev_set_avail_event(q, q->last_avail);
	return q->npending;
}

int sd_complete(struct simdev *sd, unsigned qi, unsigned i, const u8 *bytes, u32 n, u32 used_len,
		enum fake_lie lie)
{
	struct fake_dev *q = &sd->q[qi];

	if (i >= sd_posted(sd, qi))
		return -1;
	q->data = bytes;
	q->data_len = n;
	q->lie = lie;
	return fake_dev_complete(q, i, used_len);
}

/* ---- transport ops ---- */

static u8 op_get_status(struct virtio_dev *d)
{
	return to_sd(d)->status;
}

static void storm(struct simdev *sd)
{
	if (!sd->irq_storm || !sd->irq_on)
		return;
	for (unsigned i = 0; i < SD_NQ; i++) {
		if (!sd->live[i] || !sd->vq[i])
			continue;
		sd->storm_irqs++;
		hk_vq_interrupt(sd->vq[i]);
	}
}

static void op_set_status(struct virtio_dev *d, u8 status)
{
	struct simdev *sd = to_sd(d);

	if (status == 0)
		storm(sd);	/* the driver polls the reset, interrupts on */
	if (status == 0 && sd->reset_stuck) {
		sd->resets++;
		return;
	}
	if (status == 0) {
		sd->resets++;
		for (unsigned i = 0; i < SD_NQ; i++) {
			if (sd->live[i])
				fake_dev_reset(&sd->q[i]);
			sd->live[i] = false;
			sd->vq[i] = NULL;
		}
	}
	if ((status & VIRTIO_S_FEATURES_OK) && !sd->vd.modern)
		sd_err(sd, 0, "FEATURES_OK on a legacy device");
	sd->status = status;
}

static u64 op_get_features(struct virtio_dev *d)
{
	return to_sd(d)->offered;
}

static void op_set_features(struct virtio_dev *d, u64 features)
{
	struct simdev *sd = to_sd(d);

	if (features & ~sd->offered)
		sd_err(sd, 0, "driver took features %#llx not offered",
		       (unsigned long long)(features & ~sd->offered));
}

static u8 op_config_generation(struct virtio_dev *d)
{
	struct simdev *sd = to_sd(d);

	return sd->gen_unstable ? sd->gen++ : sd->gen;
}

static int op_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 width)
{
	struct simdev *sd = to_sd(d);

	if (width != 1 && width != 2 && width != 4)
		sd_err(sd, 0, "config read of width %u", width);
	if (off % width)
		sd_err(sd, 0, "unaligned config read at %u", off);
	if (off >= sd->cfg_len || width > sd->cfg_len - off)
		return -ERANGE;
	memcpy(buf, sd->cfg + off, width);
	return 0;
}

static int op_cfg_write(struct virtio_dev *d, u32 off, const void *buf, u32 width)
{
	return -ERANGE;
}

static u16 op_queue_max(struct virtio_dev *d, u16 idx)
{
	struct simdev *sd = to_sd(d);

	storm(sd);
	return idx < SD_NQ ? sd->qmax[idx] : 0;
}

static bool op_queue_size_fixed(struct virtio_dev *d)
{
	return !to_sd(d)->vd.modern;
}

static int op_queue_setup(struct virtio_dev *d, struct virtio_vq *q)
{
	struct simdev *sd = to_sd(d);
	struct virtq_config cfg = { 0 };

	if (q->index >= SD_NQ)
		return -EINVAL;
	cfg.num = q->vq.num;
	cfg.index = q->index;
	cfg.packed = q->vq.is_packed;
	cfg.event_idx = q->vq.event_idx;
	cfg.in_order = q->vq.in_order;
	cfg.indirect = q->vq.indirect;
	fake_dev_init(&sd->q[q->index], &cfg, &q->vq);
	sd->vq[q->index] = q;
	sd->live[q->index] = true;
	sd->irqs_seen[q->index] = 0;
	return 0;
}

static void auto_fill(struct simdev *sd)
{
	static const u8 fill[SD_AUTO_FILL] = { 0x5a };

	while (sd_posted(sd, 0)) {
		if (sd->auto_done == SD_AUTO_MAX) {
			sd_err(sd, 0, "driver kept re-posting: %u completions", SD_AUTO_MAX);
			return;
		}
		sd->auto_done++;
		sd_complete(sd, 0, 0, fill, MIN(sd->auto_len, (u32)SD_AUTO_FILL), sd->auto_len, FAKE_LIE_NONE);
	}
}

static void op_notify(struct virtio_vq *q, u32 data)
{
	struct simdev *sd = to_sd(q->vdev);

	if (q->index >= SD_NQ || !sd->live[q->index]) {
		sd_err(sd, 0, "notify for queue %u, not live", q->index);
		return;
	}
	if (!(sd->status & VIRTIO_S_DRIVER_OK) && !(sd->early_notify & (1u << q->index)))
		sd_err(sd, q->index, "notify before DRIVER_OK");
	sd->kicks[q->index]++;
	fake_dev_notify(&sd->q[q->index], data);
	if (sd->raw)
		sd_posted(sd, q->index);
	else if (sd->auto_fill && q->index == 0)
		auto_fill(sd);
	else if (sd->kick)
		sd->kick(sd, q->index);
	else
		sd_posted(sd, q->index);
}

static int op_irq_setup(struct virtio_dev *d)
{
	struct simdev *sd = to_sd(d);

	if (sd->irq_on)
		sd_err(sd, 0, "irq_setup twice");
	sd->irq_on = true;
	return 0;
}

static void op_irq_teardown(struct virtio_dev *d)
{
	struct simdev *sd = to_sd(d);

	if (!sd->irq_on)
		sd_err(sd, 0, "irq_teardown without irq_setup");
	sd->irq_on = false;
}

static const char *op_describe(struct virtio_dev *d)
{
	return "simdev";
}

static const struct virtio_transport_ops sd_ops = {
	.name = "simdev",
	.get_status = op_get_status,
	.set_status = op_set_status,
	.get_features = op_get_features,
	.set_features = op_set_features,
	.config_generation = op_config_generation,
	.cfg_read = op_cfg_read,
	.cfg_write = op_cfg_write,
	.queue_max = op_queue_max,
	.queue_size_fixed = op_queue_size_fixed,
	.queue_setup = op_queue_setup,
	.notify = op_notify,
	.irq_setup = op_irq_setup,
	.irq_teardown = op_irq_teardown,
	.describe = op_describe,
};

/* ---- set-up ---- */

void sd_init(struct simdev *sd, u16 device_id, u64 features, u32 cfg_len)
{
	memset(sd, 0, sizeof(*sd));
	sd->vd.device_id = device_id;
	sd->vd.vendor_id = 0x1af4;
	sd->vd.ops = &sd_ops;
	sd->vd.modern = (features >> VIRTIO_F_VERSION_1) & 1;
	sd->offered = features;
	sd->cfg_len = cfg_len <= SD_CFG_MAX ? cfg_len : SD_CFG_MAX;
	sd->early_notify = 1;	/* queue 0 (a receive queue is often filled first) */
}

void sd_fini(struct simdev *sd)
{
	hk_unplug(&sd->vd);
	for (unsigned i = 0; i < SD_NQ; i++)
		fake_dev_fini(&sd->q[i]);
}

/* ---- config space ---- */

void sd_cfg_write16(struct simdev *sd, u32 off, u16 val)
{
	sd->cfg[off] = (u8)val;
	sd->cfg[off + 1] = (u8)(val >> 8);
	sd->gen++;
}

void sd_cfg_write32(struct simdev *sd, u32 off, u32 val)
{
	for (unsigned i = 0; i < 4; i++)
		sd->cfg[off + i] = (u8)(val >> (8 * i));
	sd->gen++;
}

void sd_config_interrupt(struct simdev *sd)
{
	hk_config_interrupt(&sd->vd);
}

void sd_needs_reset(struct simdev *sd)
{
	sd->status |= VIRTIO_S_NEEDS_RESET;
	hk_config_interrupt(&sd->vd);
}

/* ---- raw queues ---- */

int sd_raw_write(struct simdev *sd, unsigned qi, const u8 *bytes, u32 n)
{
	if (qi >= SD_NQ || !sd_posted(sd, qi))
		return -1;
	return sd_complete(sd, qi, 0, bytes, n, n, FAKE_LIE_NONE);
}

unsigned sd_raw_complete(struct simdev *sd, unsigned qi, unsigned max)
{
	struct fake_dev *q = &sd->q[qi < SD_NQ ? qi : 0];
	unsigned n = 0;

	if (qi >= SD_NQ || !sd->live[qi])
		return 0;
	sd_posted(sd, qi);
	while (n < max && q->npending) {
		sd_gather(&q->pending[0], sd->raw_last[qi], sizeof sd->raw_last[qi]);
		if (fake_dev_complete(q, 0, 0) < 0)
			break;
		n++;
		sd->raw_done[qi]++;
	}
	return n;
}

unsigned sd_raw_pending(struct simdev *sd, unsigned qi)
{
	return sd_posted(sd, qi);
}

/* ---- interrupts ---- */

bool sd_irq(struct simdev *sd, unsigned qi, bool force)
{
	if (qi >= SD_NQ || !sd->live[qi] || !sd->vq[qi] || !sd->irq_on)
		return false;	/* no route: interrupts torn down */
	if (!force && sd->q[qi].interrupts == sd->irqs_seen[qi])
		return false;
	sd->irqs_seen[qi] = sd->q[qi].interrupts;
	sd->irqs[qi]++;
	hk_vq_interrupt(sd->vq[qi]);
	return true;
}

bool sd_wakeup_due(struct simdev *sd, unsigned qi)
{
	if (qi >= SD_NQ || !sd->live[qi])
		return false;
	if (sd->q[qi].interrupts != sd->irqs_seen[qi])
		return true;
	sd_posted(sd, qi);
	return fake_dev_will_notify(&sd->q[qi]);
}
