/* virtio-mmio command-line windows and register checks (see the header). */
#include "drivers/virtio/virtio_mmio_parse.h"
#include "drivers/virtio/virtio_mmio_reg.h"
#include "lib/byteorder.h"
#include "lib/string.h"

static void vmmio_say(char *why, size_t why_len, const char *s)
{
	size_t i;

	if (!why_len)
		return;
	for (i = 0; s[i] && i < why_len - 1; i++)
		why[i] = s[i];
	why[i] = '\0';
}

/* A number: 0x-prefixed hex or decimal, at least one digit, no overflow. */
static bool vmmio_number(const char **p, u64 *out)
{
	const char *s = *p;
	u64 v = 0;
	unsigned base = 10, d, n = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	for (;; s++, n++) {
		char c = *s;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (base == 16 && (c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (unsigned)((c | 0x20) - 'a' + 10);
		else
			break;
		if (v > (~0ULL - d) / base)
			return false;
		v = v * base + d;
	}
	if (n == 0)
		return false;
	*p = s;
	*out = v;
	return true;
}

int vmmio_parse(const char *val, struct vmmio_window *out, char *why, size_t why_len)
{
	const char *p = val;
	u64 size, base, gsi, id = 0;
	unsigned shift = 0;

	if (!vmmio_number(&p, &size)) {
		vmmio_say(why, why_len, "expected <size>@<addr>:<irq>[:<id>]");
		return -EINVAL;
	}
	switch (*p) {
	case 'K': case 'k': shift = 10; p++; break;
	case 'M': case 'm': shift = 20; p++; break;
	case 'G': case 'g': shift = 30; p++; break;
	}
	if (shift && size > (~0ULL >> shift)) {
		vmmio_say(why, why_len, "size overflows");
		return -EINVAL;
	}
	size <<= shift;
	if (*p++ != '@' || !vmmio_number(&p, &base) || *p++ != ':' || !vmmio_number(&p, &gsi)) {
		vmmio_say(why, why_len, "expected <size>@<addr>:<irq>[:<id>]");
		return -EINVAL;
	}
	if (*p == ':') {
		p++;
		if (!vmmio_number(&p, &id) || id > 0xffffffffULL) {
			vmmio_say(why, why_len, "bad device id");
			return -EINVAL;
		}
		out->has_id = true;
	} else {
		out->has_id = false;
	}
	if (*p) {
		vmmio_say(why, why_len, "junk after the window");
		return -EINVAL;
	}
	if (size < VMMIO_WIN_MIN || size > VMMIO_WIN_MAX) {
		vmmio_say(why, why_len, "size outside 0x100..0x10000");
		return -EINVAL;
	}
	if (base & 3) {
		vmmio_say(why, why_len, "address not 4-byte aligned");
		return -EINVAL;
	}
	if (base + size < base || base + size > (1ULL << 47)) {
		vmmio_say(why, why_len, "window wraps or lies above the physical address space");
		return -EINVAL;
	}
	if (gsi == 0 || gsi > VMMIO_GSI_MAX) {
		vmmio_say(why, why_len, "irq outside 1..255");
		return -EINVAL;
	}
	out->base = base;
	out->size = size;
	out->gsi = (u32)gsi;
	out->id = (u32)id;
	return 0;
}

/* 0: added; 1: already there (not added); -EINVAL: refused, counted. */
static int vmmio_list_add(struct vmmio_list *l, const struct vmmio_window *wp, char *why, size_t why_len)
{
	struct vmmio_window w = *wp;
	u32 i;

	for (i = 0; i < l->n; i++) {
		const struct vmmio_window *o = &l->w[i];

		if (o->base == w.base && o->size == w.size && o->gsi == w.gsi)
			return 1;	/* the same device named twice (command line and ACPI) */
	}
	for (i = 0; i < l->n; i++) {
		const struct vmmio_window *o = &l->w[i];

		if (w.base < o->base + o->size && o->base < w.base + w.size) {
			vmmio_say(why, why_len, "window overlaps an earlier one");
			l->refused++;
			return -EINVAL;
		}
		if (w.gsi == o->gsi) {	/* edge-triggered lines cannot be shared */
			vmmio_say(why, why_len, "irq already taken by an earlier window");
			l->refused++;
			return -EINVAL;
		}
	}
	if (l->n == VMMIO_MAX_DEVICES) {
		vmmio_say(why, why_len, "more than 32 windows");
		l->refused++;
		return -EINVAL;
	}
	l->w[l->n++] = w;
	return 0;
}

int vmmio_cmdline_add(const char *val, void *list, char *why, size_t why_len)
{
	struct vmmio_list *l = list;
	struct vmmio_window w;

	if (vmmio_parse(val, &w, why, why_len) < 0) {
		l->refused++;
		return -EINVAL;
	}
	return vmmio_list_add(l, &w, why, why_len) < 0 ? -EINVAL : 0;
}

int vmmio_add_platform(const struct aml_dev *d, u32 n, struct vmmio_list *l, char *why, size_t why_len)
{
	u32 i, found = 0;
	const char *bad;

	for (i = 0; i < n; i++, d++) {
		struct vmmio_window w = { .base = d->base, .size = d->size, .gsi = d->gsi };

		if (memcmp(d->hid, VMMIO_ACPI_HID, 8))
			continue;
		if (!d->mem || !d->irq)
			bad = "LNRO0005 device without a memory window and an interrupt";
		else if (w.size < VMMIO_WIN_MIN || w.size > VMMIO_WIN_MAX || (w.base & 3) || w.gsi == 0 ||
			 w.gsi > VMMIO_GSI_MAX)
			bad = "LNRO0005 window or interrupt out of bounds";
		else {
			found += vmmio_list_add(l, &w, why, why_len) == 0;
			continue;
		}
		vmmio_say(why, why_len, bad);
		l->refused++;
	}
	return (int)found;
}

int vmmio_check_ids(u32 magic, u32 version, u32 device_id, const char **why)
{
	if (magic != VMMIO_MAGIC_VALUE) {
		*why = "no virtio-mmio magic";
		return -ENODEV;
	}
	if (version != 1 && version != 2) {
		*why = "unknown virtio-mmio version";
		return -ENODEV;
	}
	*why = NULL;
	return device_id == 0 ? 0 : (int)version;
}

u16 vmmio_queue_max(u32 raw, bool *bad)
{
	*bad = raw > VMMIO_QUEUE_MAX;
	return *bad ? 0 : (u16)raw;
}
