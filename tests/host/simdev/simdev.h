/* simdev: a simulated virtio device for host tests of the real drivers,
 * whatever the device type. It is the transport (status, features, a config
 * space of the device's own size, queue setup, notifications, interrupts)
 * and the device side of every queue (through fake_dev, which checks every
 * ring rule the driver must keep). A device type adds its semantics in a
 * kick hook (vnetdev.h: virtio-net's receive, transmit and control queues);
 * without one the queues are raw and the test plays the device itself:
 * sd_raw_write() answers the oldest posted buffer, sd_raw_complete() takes
 * and completes buffers, and auto_fill makes queue 0 complete every buffer
 * as soon as it is posted (an entropy source).
 *
 * A new driver's test: sd_init() with the device id, features and config
 * size, set qmax[] for the queues the device has, fill cfg[], then
 * hk_probe(&dev.vd) (hostbus.h) runs the driver's probe through the real
 * bus; sd_errors() must stay 0. tests/host/drivers/virtio/rng/ and
 * console/ are small examples. */
#ifndef VIREO_SIMDEV_H
#define VIREO_SIMDEV_H

#include "drivers/virtio/virtio.h"
#include "tests/host/simdev/fake_dev.h"

#define SD_NQ		8		/* queues a simulated device can have */
#define SD_CFG_MAX	256		/* device config bytes, at most */
#define SD_AUTO_MAX	100000u
#define SD_AUTO_FILL	4096u

/* The fields of struct simdev, also laid out inside struct vnetdev (see
 * there) so its tests reach them by their plain names. */
#define SIMDEV_FIELDS							\
	struct virtio_dev vd;		/* what the driver and the core see */ \
	u8 status;							\
	u64 offered;							\
	u8 cfg[SD_CFG_MAX];						\
	u32 cfg_len;			/* the device's config size */	\
	u8 gen;								\
	bool gen_unstable;		/* config_generation changes on every read */ \
	u16 qmax[SD_NQ];		/* 0: the queue does not exist */ \
	struct fake_dev q[SD_NQ];					\
	struct virtio_vq *vq[SD_NQ];	/* the driver's, while set up */ \
	bool live[SD_NQ];						\
	unsigned kicks[SD_NQ];						\
	unsigned irqs_seen[SD_NQ];	/* fake_dev interrupts already delivered */ \
	unsigned irqs[SD_NQ];		/* interrupts delivered */	\
	unsigned resets;		/* status writes of 0 */	\
	bool reset_stuck;		/* a write of 0 never completes: status stays */ \
	bool irq_on;			/* between irq_setup and irq_teardown */ \
	/* While interrupts are set up, an interrupt on every live queue at \
	 * each queue_max read and each reset: one arriving in any window. */ \
	bool irq_storm;							\
	unsigned storm_irqs;		/* interrupts the storm delivered */ \
	u32 early_notify;		/* queues (bits) the driver may notify before DRIVER_OK */ \
	/* Raw: no device semantics; a kick only takes buffers. */	\
	bool raw;							\
	unsigned raw_done[SD_NQ];	/* buffers sd_raw_complete completed */ \
	u8 raw_last[SD_NQ][64];		/* readable bytes of the last of them */ \
	/* Queue 0 as a device that fills buffers at once (virtio-rng): on \
	 * each kick every posted buffer completes with auto_len bytes, at \
	 * most SD_AUTO_MAX in all (then an error: the driver never stops). */ \
	bool auto_fill;							\
	u32 auto_len;							\
	unsigned auto_done;						\
	/* A device type's semantics: called for every notify of a live \
	 * queue once fake_dev has taken it (unless raw or auto_fill). */ \
	void (*kick)(struct simdev *sd, unsigned qi)

struct simdev {
	SIMDEV_FIELDS;
};

/* A device of type device_id offering `features` (VIRTIO_BIT()s; VERSION_1
 * makes it modern) with cfg_len bytes of config space, all zero, and no
 * queues (set qmax[]). */
void sd_init(struct simdev *sd, u16 device_id, u64 features, u32 cfg_len);
/* Takes the device off the bus and frees what fake_dev allocated; the
 * driver must be gone. */
void sd_fini(struct simdev *sd);
/* Ring and protocol rules the driver broke, over all queues (0 expected),
 * and the first one's text. */
unsigned sd_errors(const struct simdev *sd);
const char *sd_error(const struct simdev *sd);
/* Records a rule the driver broke on queue qi (for device types). */
void sd_err(struct simdev *sd, unsigned qi, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- config space ---- */
void sd_cfg_write16(struct simdev *sd, u32 off, u16 val);	/* no interrupt */
void sd_cfg_write32(struct simdev *sd, u32 off, u32 val);	/* no interrupt */
void sd_config_interrupt(struct simdev *sd);
void sd_needs_reset(struct simdev *sd);		/* DEVICE_NEEDS_RESET + config interrupt */

/* ---- queues ---- */
/* Takes the buffers the driver made available on queue qi since the last
 * call; returns how many are taken and not yet used. */
unsigned sd_posted(struct simdev *sd, unsigned qi);
/* Completes the i-th oldest taken buffer of queue qi: writes n bytes into
 * it and publishes a used entry of used_len (clamped to the buffer unless
 * lie says otherwise). Returns the buffer id or -1. */
int sd_complete(struct simdev *sd, unsigned qi, unsigned i, const u8 *bytes, u32 n, u32 used_len,
		enum fake_lie lie);
/* Gathers the device-readable bytes of a taken buffer into out (at most
 * max); returns their total length. */
u32 sd_gather(const struct fake_buf *b, u8 *out, u32 max);
/* Raw: writes n bytes into the oldest posted buffer of queue qi and
 * completes it with used length n. Returns the buffer id or -1 (none
 * posted). */
int sd_raw_write(struct simdev *sd, unsigned qi, const u8 *bytes, u32 n);
/* Raw: takes new buffers of queue qi and completes up to max of them,
 * oldest first, with used length 0, keeping the last one's readable bytes.
 * Returns how many completed. */
unsigned sd_raw_complete(struct simdev *sd, unsigned qi, unsigned max);
unsigned sd_raw_pending(struct simdev *sd, unsigned qi);	/* taken, not completed */

/* ---- interrupts ---- */
/* Delivers queue qi's interrupt if the device decided to send one since the
 * last call (event index / flags), or always with force. Returns true if
 * delivered. */
bool sd_irq(struct simdev *sd, unsigned qi, bool force);
/* Whether queue qi's driver will hear from the device about the buffers it
 * has outstanding: an interrupt the device decided on is not delivered yet,
 * or completing all of them would raise one (fake_dev_will_notify). The
 * wakeup rules' check (docs/architecture.md, "The wakeup rules"). */
bool sd_wakeup_due(struct simdev *sd, unsigned qi);

#endif
