/* libFuzzer target for drivers/virtio/virtio_mmio_parse.c: the input, split at
 * NULs, is a series of virtio_mmio.device= values added to one list; then
 * the whole input is scanned as DSDT AML (aml_find_devices, then vmmio_add_platform) into that list.
 * Checks: no crash or over-read (ASan/UBSan); every accepted window obeys
 * the bounds (size, alignment, no wrap, gsi range); accepted windows never
 * overlap nor share an irq; the list never passes VMMIO_MAX_DEVICES; a refusal always comes
 * with a terminated reason and is counted; a repeat is never added twice. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/virtio/virtio_mmio_parse.h"

/* The DSDT's devices as ACPI publishes them (aml_find_devices), then the
 * transport's checks of the virtio-mmio ones (vmmio_add_platform). */
static int aml_scan(const u8 *aml, u32 len, struct vmmio_list *l, char *why, size_t why_len)
{
	static struct aml_dev devs[64];
	u32 n = aml_find_devices(aml, len, devs, 64);

	return vmmio_add_platform(devs, n < 64 ? n : 64, l, why, why_len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct vmmio_list l;
	char val[256], why[48];
	size_t i = 0;
	u32 given = 0, failed = 0, k, j;

	memset(&l, 0, sizeof l);
	while (i < size && given < 64) {
		size_t n = 0;

		while (i < size && data[i] && n < sizeof val - 1)
			val[n++] = (char)data[i++];
		val[n] = '\0';
		i++;
		given++;
		memset(why, 'w', sizeof why);
		if (vmmio_cmdline_add(val, &l, why, sizeof why) < 0) {
			failed++;
			if (!memchr(why, '\0', sizeof why))
				abort();
		}
	}
	/* An exact repeat of an accepted window is accepted, not added. */
	if (l.n > VMMIO_MAX_DEVICES || l.refused != failed || l.n + failed > given)
		abort();
	{
		u32 before = l.n;
		int added;

		memset(why, 'w', sizeof why - 1);
		why[sizeof why - 1] = '\0';	/* a refusal must terminate what it writes */
		added = aml_scan(data, (u32)size, &l, why, sizeof why);

		if (added < 0 || l.n != before + (u32)added || l.n > VMMIO_MAX_DEVICES)
			abort();
	}
	for (k = 0; k < l.n; k++) {
		const struct vmmio_window *w = &l.w[k];

		if (w->size < VMMIO_WIN_MIN || w->size > VMMIO_WIN_MAX || (w->base & 3) ||
		    w->base + w->size < w->base || w->gsi == 0 || w->gsi > VMMIO_GSI_MAX)
			abort();
		for (j = 0; j < k; j++)
			if ((w->base < l.w[j].base + l.w[j].size && l.w[j].base < w->base + w->size) ||
			    w->gsi == l.w[j].gsi)
				abort();
	}
	return 0;
}
