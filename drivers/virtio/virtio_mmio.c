/*
 * virtio over MMIO: the modern register layout (version 2) and the legacy
 * one (version 1, page-frame queues) behind one ops table. Registers only:
 * rings belong to virtq.c. Every value the window gives is checked: the
 * magic, version and device id before anything is driven, queue sizes
 * (vmmio_queue_max), QueueReady and reset read-backs, the interrupt status
 * (unknown bits are acknowledged and logged once). One IOAPIC line per
 * window, edge-triggered; without a route, a polling timer.
 */
#include <arch.h>

#include "drivers/acpi/acpi.h"
#include "drivers/virtio/virtio.h"
#include "drivers/virtio/virtio_mmio.h"
#include "drivers/virtio/virtio_mmio_parse.h"
#include "drivers/virtio/virtio_mmio_reg.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/arch/io.h"
#include "kernel/arch/irq.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "kernel/time/time.h"

#define POLL_NS (1 * NSEC_PER_MSEC)
#define LEGACY_PAGE 4096u
/* Interrupt status re-reads per interrupt: an edge-triggered line raises no
 * new edge for status set between our read and our acknowledge, so the
 * handler reads again until it sees 0, this many times at most. */
#define ISR_ROUNDS 8

struct vmmio_list virtio_mmio_windows;
CMDLINE_PARAM(virtio_mmio_device, .key = "virtio_mmio.device", .type = CMDLINE_CUSTOM,
	      .dst = &virtio_mmio_windows, .parse = vmmio_cmdline_add, .def = "none",
	      .values = "<size>@<addr>:<irq>[:<id>], repeatable",
	      .help = "a virtio-mmio window (QEMU microvm and Firecracker add these themselves)");

struct vmmio {
	struct virtio_dev vdev;	/* first: vmmio_of() casts */
	u64 base;		/* mapped registers (identity map) */
	u32 cfg_len;		/* device config bytes after VMMIO_CONFIG */
	u32 gsi;
	u32 version;
	int vector;
	enum { IRQ_NONE, IRQ_LINE, IRQ_POLL } irq_mode;
	bool isr_warned, qmax_warned, stuck_warned;
	struct timer poll;
	char desc[48];
};

static struct vmmio *vmmio_of(struct virtio_dev *d)
{
	return (struct vmmio *)d;
}

static u32 vmmio_rd(struct vmmio *vm, u32 off)
{
	return mmio_r32(vm->base + off);
}

static void vmmio_wr(struct vmmio *vm, u32 off, u32 v)
{
	mmio_w32(vm->base + off, v);
}

static u8 vmmio_get_status(struct virtio_dev *d)
{
	return (u8)vmmio_rd(vmmio_of(d), VMMIO_STATUS);
}

static void vmmio_set_status(struct virtio_dev *d, u8 s)
{
	struct vmmio *vm = vmmio_of(d);
	u64 deadline;
	int i;

	vmmio_wr(vm, VMMIO_STATUS, s);
	if (s != 0)
		return;
	/* §4.2.2.1: reset is done when status reads back 0; bounded, and the
	 * core checks the result. */
	deadline = time_ns() + VIRTIO_RESET_TIMEOUT_NS;
	for (i = 0; i < 100000 && (vmmio_rd(vm, VMMIO_STATUS) & 0xff); i++) {
		if (time_ns() > deadline)
			break;
		pause();
	}
}

static u64 vmmio_get_features(struct virtio_dev *d)
{
	struct vmmio *vm = vmmio_of(d);
	u64 f;

	vmmio_wr(vm, VMMIO_DEVICE_FEATURES_SEL, 0);
	f = vmmio_rd(vm, VMMIO_DEVICE_FEATURES);
	if (vm->version == 1)
		return f;	/* legacy: 32 bits */
	vmmio_wr(vm, VMMIO_DEVICE_FEATURES_SEL, 1);
	return f | (u64)vmmio_rd(vm, VMMIO_DEVICE_FEATURES) << 32;
}

static void vmmio_set_features(struct virtio_dev *d, u64 f)
{
	struct vmmio *vm = vmmio_of(d);

	vmmio_wr(vm, VMMIO_DRIVER_FEATURES_SEL, 0);
	vmmio_wr(vm, VMMIO_DRIVER_FEATURES, (u32)f);
	if (vm->version == 1)
		return;
	vmmio_wr(vm, VMMIO_DRIVER_FEATURES_SEL, 1);
	vmmio_wr(vm, VMMIO_DRIVER_FEATURES, (u32)(f >> 32));
}

/* 32 bits in the register; the core compares the low 8 before and after a
 * read, which misses only a change of exactly a multiple of 256. Legacy
 * windows have none. */
static u8 vmmio_generation(struct virtio_dev *d)
{
	struct vmmio *vm = vmmio_of(d);

	return vm->version == 1 ? 0 : (u8)vmmio_rd(vm, VMMIO_CONFIG_GENERATION);
}

static int vmmio_cfg_read(struct virtio_dev *d, u32 off, void *buf, u32 w)
{
	struct vmmio *vm = vmmio_of(d);

	return mmio_window_read(vm->base + VMMIO_CONFIG, vm->cfg_len, off, buf, w);
}

static int vmmio_cfg_write(struct virtio_dev *d, u32 off, const void *buf, u32 w)
{
	struct vmmio *vm = vmmio_of(d);

	return mmio_window_write(vm->base + VMMIO_CONFIG, vm->cfg_len, off, buf, w);
}

static u16 vmmio_dev_queue_max(struct virtio_dev *d, u16 idx)
{
	struct vmmio *vm = vmmio_of(d);
	u32 raw;
	u16 max;
	bool bad;

	vmmio_wr(vm, VMMIO_QUEUE_SEL, idx);
	raw = vmmio_rd(vm, VMMIO_QUEUE_NUM_MAX);
	max = vmmio_queue_max(raw, &bad);
	if (bad && !vm->qmax_warned) {
		vm->qmax_warned = true;
		kprintf("virtio%u: queue %u: QueueNumMax %u is over %u; queue unavailable\n", d->index, idx, raw,
			VMMIO_QUEUE_MAX);
	}
	if (max && vm->version == 2 && vmmio_rd(vm, VMMIO_QUEUE_READY)) {
		kprintf("virtio%u: queue %u is already live before setup; unavailable\n", d->index, idx);
		return 0;
	}
	return max;
}

/* Both layouts let the driver pick QueueNum up to the maximum. */
static bool vmmio_size_fixed(struct virtio_dev *d)
{
	return false;
}

static int vmmio_queue_setup(struct virtio_dev *d, struct virtio_vq *q)
{
	struct vmmio *vm = vmmio_of(d);
	dma_addr_t desc, drv, dev;

	virtq_ring_addrs(&q->vq, &desc, &drv, &dev);
	vmmio_wr(vm, VMMIO_QUEUE_SEL, q->index);
	vmmio_wr(vm, VMMIO_QUEUE_NUM, q->num);
	q->notify_addr = vm->base + VMMIO_QUEUE_NOTIFY;
	if (vm->version == 1) {
		/* One page frame number: the ring is desc, avail, then used on
		 * the next LEGACY_PAGE boundary, the layout virtq.c lays out. */
		if ((desc & (LEGACY_PAGE - 1)) || desc / LEGACY_PAGE > 0xffffffffULL)
			return -ERANGE;
		vmmio_wr(vm, VMMIO_QUEUE_ALIGN, LEGACY_PAGE);
		vmmio_wr(vm, VMMIO_QUEUE_PFN, (u32)(desc / LEGACY_PAGE));
		if (vmmio_rd(vm, VMMIO_QUEUE_PFN) != (u32)(desc / LEGACY_PAGE)) {
			kprintf("virtio%u: queue %u: device did not take its page frame\n", d->index, q->index);
			return -EIO;
		}
		return 0;
	}
	vmmio_wr(vm, VMMIO_QUEUE_DESC_LOW, (u32)desc);
	vmmio_wr(vm, VMMIO_QUEUE_DESC_HIGH, (u32)(desc >> 32));
	vmmio_wr(vm, VMMIO_QUEUE_DRIVER_LOW, (u32)drv);
	vmmio_wr(vm, VMMIO_QUEUE_DRIVER_HIGH, (u32)(drv >> 32));
	vmmio_wr(vm, VMMIO_QUEUE_DEVICE_LOW, (u32)dev);
	vmmio_wr(vm, VMMIO_QUEUE_DEVICE_HIGH, (u32)(dev >> 32));
	vmmio_wr(vm, VMMIO_QUEUE_READY, 1);
	if (vmmio_rd(vm, VMMIO_QUEUE_READY) != 1) {
		kprintf("virtio%u: queue %u: QueueReady did not read back 1\n", d->index, q->index);
		return -EIO;
	}
	return 0;
}

static int vmmio_queue_reset(struct virtio_dev *d, struct virtio_vq *q)
{
	struct vmmio *vm = vmmio_of(d);
	u64 deadline;
	int i;

	if (vm->version == 1)
		return -ENOTSUP;
	vmmio_wr(vm, VMMIO_QUEUE_SEL, q->index);
	vmmio_wr(vm, VMMIO_QUEUE_RESET, 1);
	/* As on PCI: 1 while the reset runs, 0 in QueueReset and QueueReady
	 * once done. From the loop: 1 ms at most. */
	deadline = time_ns() + VIRTIO_RESET_TIMEOUT_NS;
	for (i = 0; i < 100000 && vmmio_rd(vm, VMMIO_QUEUE_RESET); i++) {
		if (time_ns() > deadline)
			break;
		pause();
	}
	if (vmmio_rd(vm, VMMIO_QUEUE_RESET) != 0) {
		kprintf("virtio%u: queue %u: QueueReset never read back 0\n", d->index, q->index);
		return -ETIMEDOUT;
	}
	if (vmmio_rd(vm, VMMIO_QUEUE_READY) != 0) {
		kprintf("virtio%u: queue %u: still ready after its reset\n", d->index, q->index);
		return -EIO;
	}
	return 0;
}

static void vmmio_notify(struct virtio_vq *q, u32 data)
{
	mmio_w32(q->notify_addr, virtio_has(q->vdev, VIRTIO_F_NOTIFICATION_DATA) ? data : q->index);
}

/* ---- interrupts ---- */

static void vmmio_all_queues(struct vmmio *vm)
{
	u16 i;

	for (i = 0; i < VIRTIO_MAX_VQS; i++)
		if (vm->vdev.vqs[i])
			virtio_vq_interrupt(vm->vdev.vqs[i]);
}

/* Reads, acknowledges and dispatches the interrupt status until it is 0
 * (at most ISR_ROUNDS). Returns whether any bit was seen. */
static bool vmmio_service(struct vmmio *vm)
{
	bool any = false;
	int round;

	for (round = 0; round < ISR_ROUNDS; round++) {
		u32 isr = vmmio_rd(vm, VMMIO_INTERRUPT_STATUS);

		if (!isr)
			break;
		any = true;
		if ((isr & ~(u32)(VMMIO_INT_VRING | VMMIO_INT_CONFIG)) && !vm->isr_warned) {
			vm->isr_warned = true;
			kprintf("virtio%u: interrupt status %#x has unknown bits; acknowledged\n", vm->vdev.index,
				isr);
		}
		vmmio_wr(vm, VMMIO_INTERRUPT_ACK, isr);
		if (isr & VMMIO_INT_CONFIG)
			virtio_config_interrupt(&vm->vdev);
		if (isr & VMMIO_INT_VRING)
			vmmio_all_queues(vm);
	}
	if (round == ISR_ROUNDS && !vm->stuck_warned) {
		/* A status that never clears raises no further edge: the
		 * device goes quiet (its queues stall), the CPU does not. */
		vm->stuck_warned = true;
		kprintf("virtio%u: interrupt status still set after %u acknowledgements\n", vm->vdev.index,
			ISR_ROUNDS);
	}
	return any;
}

static void vmmio_line_irq(void *arg)
{
	vmmio_service(arg);
}

static void vmmio_poll_tick(struct timer *t, void *arg)
{
	struct vmmio *vm = arg;
	u16 i;

	for (i = 0; i < VIRTIO_MAX_VQS; i++) {
		struct virtio_vq *q = vm->vdev.vqs[i];

		if (q && virtq_more_used(&q->vq))
			virtio_vq_interrupt(q);
	}
	vmmio_service(vm);
	timer_start(&vm->poll, time_ns() + POLL_NS);
}

static int vmmio_irq_setup(struct virtio_dev *d)
{
	struct vmmio *vm = vmmio_of(d);

	vm->vector = irq_route_gsi(vm->gsi, false, false, vmmio_line_irq, vm);
	if (vm->vector >= 0) {
		vm->irq_mode = IRQ_LINE;
		/* A status raised before the route existed left the edge
		 * behind: pick it up now. */
		vmmio_service(vm);
		return 0;
	}
	kprintf("virtio%u: gsi %u has no IOAPIC route (%d): polling every %lu us\n", d->index, vm->gsi,
		vm->vector, POLL_NS / 1000);
	vm->irq_mode = IRQ_POLL;
	timer_init(&vm->poll, vmmio_poll_tick, vm);
	timer_start(&vm->poll, time_ns() + POLL_NS);
	return 0;
}

static void vmmio_irq_teardown(struct virtio_dev *d)
{
	struct vmmio *vm = vmmio_of(d);

	if (vm->irq_mode == IRQ_LINE) {
		irq_mask_gsi(vm->gsi, true);
		irq_free_vector(vm->vector);
	} else if (vm->irq_mode == IRQ_POLL) {
		timer_stop(&vm->poll);
	}
	vm->irq_mode = IRQ_NONE;
}

static const char *vmmio_describe(struct virtio_dev *d)
{
	return vmmio_of(d)->desc;
}

static const struct virtio_transport_ops vmmio_ops = {
	.name = "virtio-mmio",
	.get_status = vmmio_get_status,
	.set_status = vmmio_set_status,
	.get_features = vmmio_get_features,
	.set_features = vmmio_set_features,
	.config_generation = vmmio_generation,
	.cfg_read = vmmio_cfg_read,
	.cfg_write = vmmio_cfg_write,
	.queue_max = vmmio_dev_queue_max,
	.queue_size_fixed = vmmio_size_fixed,
	.queue_setup = vmmio_queue_setup,
	.queue_reset = vmmio_queue_reset,
	.notify = vmmio_notify,
	.irq_setup = vmmio_irq_setup,
	.irq_teardown = vmmio_irq_teardown,
	.describe = vmmio_describe,
};

static void vmmio_probe_one(const struct vmmio_window *w)
{
	struct vmmio *vm;
	const char *why;
	u64 base = (u64)mmio_map(w->base, w->size);	/* refused windows are logged by mm */
	int ver;

	if (!base) {
		kprintf("virtio-mmio: window %#lx+%#lx refused\n", w->base, w->size);
		return;
	}
	ver = vmmio_check_ids(mmio_r32(base + VMMIO_MAGIC), mmio_r32(base + VMMIO_VERSION),
			      mmio_r32(base + VMMIO_DEVICE_ID), &why);
	if (ver < 0) {
		kprintf("virtio-mmio: window %#lx+%#lx: %s (magic %#x version %u); ignored\n", w->base, w->size,
			why, mmio_r32(base + VMMIO_MAGIC), mmio_r32(base + VMMIO_VERSION));
		return;
	}
	if (ver == 0)
		return;	/* an empty transport slot */
	vm = kzalloc(sizeof(*vm));
	if (!vm) {
		kprintf("virtio-mmio: out of memory\n");
		return;
	}
	vm->base = base;
	vm->cfg_len = (u32)(w->size - VMMIO_CONFIG);
	vm->gsi = w->gsi;
	vm->version = (u32)ver;
	vm->vector = -1;
	vm->vdev.modern = ver == 2;
	vm->vdev.ops = &vmmio_ops;
	vm->vdev.transport = vm;
	vm->vdev.device_id = (u16)mmio_r32(base + VMMIO_DEVICE_ID);
	vm->vdev.vendor_id = (u16)mmio_r32(base + VMMIO_VENDOR_ID);
	if (ver == 1)
		vmmio_wr(vm, VMMIO_GUEST_PAGE_SIZE, LEGACY_PAGE);
	ksnprintf(vm->desc, sizeof vm->desc, "mmio %#lx gsi %u %s", w->base, w->gsi, ver == 2 ? "modern" : "legacy");
	virtio_add_device(&vm->vdev);
}


void virtio_mmio_probe(void)
{
	u32 i, ndevs, from_acpi, refused = virtio_mmio_windows.refused;
	const struct aml_dev *devs = acpi_devices(&ndevs);
	char why[64];

	from_acpi = (u32)vmmio_add_platform(devs, ndevs, &virtio_mmio_windows, why, sizeof why);
	if (virtio_mmio_windows.refused != refused)
		kprintf("acpi: %u virtio-mmio device%s in the DSDT refused (last: %s)\n",
			virtio_mmio_windows.refused - refused, virtio_mmio_windows.refused - refused == 1 ? "" : "s",
			why);
	if (virtio_mmio_windows.n == 0 && virtio_mmio_windows.refused == 0)
		return;
	kprintf("virtio-mmio: %u window%s (%u from the command line, %u from ACPI)%s\n", virtio_mmio_windows.n,
		virtio_mmio_windows.n == 1 ? "" : "s", virtio_mmio_windows.n - from_acpi, from_acpi,
		virtio_mmio_windows.refused ? "; some refused" : "");
	for (i = 0; i < virtio_mmio_windows.n; i++)
		vmmio_probe_one(&virtio_mmio_windows.w[i]);
}
