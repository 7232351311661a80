/* hostbus: the virtio bus around the driver under test (tests/host/simdev):
 * the real drivers/virtio/virtio.c and drivers/virtio/virtio_core.c; the bus's
 * driver table is the one driver the test links. See hostbus.h. */
#include <stdio.h>
#include <stdlib.h>

#include <arch.h>
#include "drivers/virtio/virtio.h"
#include "drivers/virtio/virtio_core.h"
#include "kernel/mm/mm.h"
#include "lib/linkset.h"
#include "drivers/iommu/vtd.h"	/* vtd_stray_next, below */
#include "tests/host/simdev/fake_dev.h"
#include "tests/host/simdev/hostbus.h"

/* selftest=iommu-fault arms it only on a device with a domain: never here. */
int vtd_stray_next(void)
{
	abort();
}

/* ---- virtio bus (the real drivers/virtio/virtio.c) ---- */

/* The bus's own table, the virtio_drivers linker set: a test links one
 * driver, so it holds that one. */
LINKSET_DECLARE(virtio_drivers, const struct virtio_driver);

const struct virtio_driver *hostbus_driver(void)
{
	if (LINKSET_COUNT(virtio_drivers) != 1) {
		fprintf(stderr, "hostbus: %zu drivers linked; a test links the one under test\n",
			LINKSET_COUNT(virtio_drivers));
		abort();
	}
	return LINKSET_BEGIN(virtio_drivers)[0];
}

/* Linked with -Wl,--wrap=virtio_set_broken (vnetdev.mk): counts the calls
 * that mark a device, then runs the real one. */
void __real_virtio_set_broken(struct virtio_dev *d, const char *why);
void __wrap_virtio_set_broken(struct virtio_dev *d, const char *why);

static unsigned broken_count;
static char broken_why[128];

void __wrap_virtio_set_broken(struct virtio_dev *d, const char *why)
{
	if (!d->broken) {
		broken_count++;
		snprintf(broken_why, sizeof broken_why, "%s", why);
	}
	__real_virtio_set_broken(d, why);
}

unsigned hk_broken_count(void)
{
	return broken_count;
}

const char *hk_broken_why(void)
{
	return broken_why;
}

void hk_vq_interrupt(struct virtio_vq *q)
{
	virtio_vq_interrupt(q);
}

static bool on_bus(const struct virtio_dev *d)
{
	for (const struct virtio_dev *x = virtio_devices(); x; x = x->next)
		if (x == d)
			return true;
	return false;
}

/* The first probe is the transport's report (virtio_add_device: registry,
 * match, core probe); later ones, after hk_remove, probe the same driver
 * again through the core as a NEEDS_RESET recovery does. */
int hk_probe(struct virtio_dev *d)
{
	if (!on_bus(d))
		return virtio_add_device(d);
	return virtio_core_probe(d, hostbus_driver());
}

void hk_remove(struct virtio_dev *d)
{
	virtio_core_remove(d);
}

void hk_unplug(struct virtio_dev *d)
{
	virtio_del_device(d);
}

/* Linked with -Wl,--wrap=virtio_keep_forever: the real one only counts;
 * here what is kept is also recorded so a test can free it once the
 * simulated device is gone (and LeakSanitizer sees it reachable). */
void __real_virtio_keep_forever(void *p, size_t npages);
void __wrap_virtio_keep_forever(void *p, size_t npages);

#define KEPT_MAX 1024
static struct {
	void *p;
	size_t pages;
} kept[KEPT_MAX];
static unsigned nkept;

void __wrap_virtio_keep_forever(void *p, size_t npages)
{
	__real_virtio_keep_forever(p, npages);
	if (!p)
		return;
	if (nkept == KEPT_MAX) {
		fprintf(stderr, "hostbus: more than %u kept blocks\n", KEPT_MAX);
		abort();
	}
	kept[nkept].p = p;
	kept[nkept].pages = npages;
	nkept++;
}

/* The bus's own count, since the last hk_free_kept(). */
static u64 kept_base_pages, kept_base_blocks;

long hk_kept_pages(void)
{
	u64 pages, blocks;

	virtio_kept(&pages, &blocks);
	return (long)(pages - kept_base_pages);
}

unsigned hk_kept_blocks(void)
{
	u64 pages, blocks;

	virtio_kept(&pages, &blocks);
	return (unsigned)(blocks - kept_base_blocks);
}

void hk_free_kept(void)
{
	while (nkept) {
		nkept--;
		if (kept[nkept].pages)
			page_free(kept[nkept].p, kept[nkept].pages);
		else
			kfree(kept[nkept].p);
	}
	virtio_kept(&kept_base_pages, &kept_base_blocks);
}

void hk_config_interrupt(struct virtio_dev *d)
{
	virtio_config_interrupt(d);
}

/* A driver re-enabling a callback (wrapped, SIMDEV_LDFLAGS): the
 * simulated device may act first (shim_mb_hook), after the driver's last
 * look at the used ring and before its store, the window the re-check
 * after re-enabling exists for; the full barriers give the window between
 * the store and the re-check; and it may act again once the call returns,
 * after the re-check. Calls from inside virtq.c are not wrapped. */
bool __real_virtq_enable_cb(struct virtq *vq);
bool __wrap_virtq_enable_cb(struct virtq *vq);
bool __real_virtq_enable_cb_delayed(struct virtq *vq, u16 n);
bool __wrap_virtq_enable_cb_delayed(struct virtq *vq, u16 n);

bool __wrap_virtq_enable_cb(struct virtq *vq)
{
	bool ok;

	if (shim_mb_hook)
		shim_mb_hook();
	ok = __real_virtq_enable_cb(vq);
	if (shim_mb_hook)
		shim_mb_hook();
	return ok;
}

bool __wrap_virtq_enable_cb_delayed(struct virtq *vq, u16 n)
{
	bool ok;

	if (shim_mb_hook)
		shim_mb_hook();
	ok = __real_virtq_enable_cb_delayed(vq, n);
	if (shim_mb_hook)
		shim_mb_hook();
	return ok;
}
