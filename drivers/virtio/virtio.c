/*
 * The virtio bus. A transport reports a device; the bus finds a driver by
 * (device id, vendor) and has virtio_core.c walk the status byte as spec
 * §3.1.1 says. DEVICE_NEEDS_RESET is met by removing the driver, resetting
 * and probing again, unless the reset never completed (the device is then
 * left FAILED and its memory kept, see virtio_core.c).
 *
 * The drivers are the VIRTIO_DRIVER() linker set: every driver linked in
 * (a host test links the driver under test alone, tests/host/simdev).
 */
#include <arch.h>

#include "drivers/virtio/virtio.h"
#include "drivers/virtio/virtio_core.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "kernel/mm/mm.h"
#include "lib/linkset.h"
#include "lib/string.h"

LINKSET_DECLARE(virtio_drivers, const struct virtio_driver);

static struct virtio_dev *devices, **devices_tail = &devices;
static struct work config_work;
static void virtio_bus_config_changed(void *arg);
static u32 ndevices;
static u64 kept_pages, kept_blocks;

static const char *virtio_bus_device_name(u16 id)
{
	switch (id) {
	case VIRTIO_ID_NET: return "net";
	case VIRTIO_ID_BLOCK: return "block";
	case VIRTIO_ID_CONSOLE: return "console";
	case VIRTIO_ID_RNG: return "rng";
	}
	return "device";
}

struct virtio_dev *virtio_devices(void)
{
	return devices;
}

static const struct virtio_driver *virtio_bus_driver_for(const struct virtio_dev *d)
{
	const struct virtio_driver *const *p;

	LINKSET_FOREACH(virtio_drivers, p) {
		const struct virtio_device_id *id;

		for (id = (*p)->ids; id->device; id++)
			if (id->device == d->device_id && (id->vendor == VIRTIO_VENDOR_ANY || id->vendor == d->vendor_id))
				return *p;
	}
	return NULL;
}

int virtio_add_device(struct virtio_dev *d)
{
	const struct virtio_driver *drv;

	if (ndevices == 0)
		work_init(&config_work, virtio_bus_config_changed, NULL);
	d->index = ndevices++;
	*devices_tail = d;
	devices_tail = &d->next;
	kprintf("virtio%u: %s, %s (id %u) vendor %04x\n", d->index, d->ops->describe(d),
		virtio_bus_device_name(d->device_id), d->device_id, d->vendor_id);
	drv = virtio_bus_driver_for(d);
	if (!drv) {
		d->ops->set_status(d, 0);
		kprintf("virtio%u: no driver\n", d->index);
		return -ENODEV;
	}
	return virtio_core_probe(d, drv);
}

void virtio_del_device(struct virtio_dev *d)
{
	struct virtio_dev **pp;

	if (d->driver)
		virtio_core_remove(d);
	for (pp = &devices; *pp; pp = &(*pp)->next) {
		if (*pp != d)
			continue;
		*pp = d->next;
		if (devices_tail == &d->next)
			devices_tail = pp;
		d->next = NULL;
		return;
	}
}

void virtio_set_broken(struct virtio_dev *d, const char *why)
{
	if (d->broken)
		return;
	d->broken = true;
	kprintf("virtio%u: device broken: %s\n", d->index, why);
}

/* Never freed: a device whose reset never completed may write it. */
void virtio_keep_forever(void *p, size_t npages)
{
	if (!p)
		return;
	if (npages)
		kept_pages += npages;
	else
		kept_blocks++;
}

void virtio_kept(u64 *pages, u64 *blocks)
{
	*pages = kept_pages;
	*blocks = kept_blocks;
}

/* Config changes are handled from the loop: status reads and a possible
 * reset/re-probe must not run in interrupt context. */
static void virtio_bus_config_changed(void *arg)
{
	struct virtio_dev *d;

	for (d = devices; d; d = d->next) {
		u8 status;

		if (!d->driver)
			continue;
		status = d->ops->get_status(d);
		if (d->dma_fault && d->dma_fault_resets >= VIRTIO_DMA_FAULT_RESETS) {
			kprintf("virtio%u: DMA fault after %u recoveries; device left removed\n", d->index,
				d->dma_fault_resets);
			virtio_core_remove(d);
			d->dma_fault = false;
			continue;
		}
		if ((status & VIRTIO_S_NEEDS_RESET) || d->dma_fault || d->reset_requested) {
			const struct virtio_driver *drv = d->driver;

			kprintf("virtio%u: %s; resetting and probing again\n", d->index,
				d->dma_fault ? "DMA fault" :
				(status & VIRTIO_S_NEEDS_RESET) ? "device needs reset" : "driver asked for a reset");
			if (d->dma_fault)
				d->dma_fault_resets++;
			d->dma_fault = false;
			d->reset_requested = false;
			d->resets++;
			virtio_core_remove(d);
			if (d->dead)
				continue;	/* the reset never completed: left FAILED */
			virtio_core_probe(d, drv);
			continue;
		}
		if (d->driver->config_changed)
			d->driver->config_changed(d);
	}
}

void virtio_request_reset(struct virtio_dev *d, const char *why)
{
	if (d->reset_requested || d->dead)
		return;
	kprintf("virtio%u: %s\n", d->index, why);
	d->reset_requested = true;
	work_queue(&config_work);
}

void virtio_config_interrupt(struct virtio_dev *d)
{
	work_queue(&config_work);
}
