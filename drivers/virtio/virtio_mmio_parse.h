/*
 * virtio-mmio, the pure parts: the kernel command line's device windows
 * (virtio_mmio.device=<size>@<addr>:<irq>[:<id>], the form Linux takes and
 * QEMU microvm and Firecracker pass) and the checks on what a window's
 * registers say. Host-tested (tests/host/drivers/virtio/test_virtio_mmio_parse.c) and fuzzed
 * (tests/fuzz/drivers/virtio/fuzz_virtio_mmio_parse.c).
 */
#ifndef VIREO_VIRTIO_MMIO_PARSE_H
#define VIREO_VIRTIO_MMIO_PARSE_H

#include "drivers/acpi/aml_s5.h"
#include "lib/types.h"

/* Bounds. A window holds the registers (0x100 bytes) and the device config
 * after them, so at least 0x100 and at most VMMIO_WIN_MAX; at most
 * VMMIO_MAX_DEVICES windows (QEMU microvm has 8 transports, Firecracker one
 * per device); the GSI must be an IOAPIC input (below 256). */
#define VMMIO_MAX_DEVICES 32
#define VMMIO_WIN_MIN 0x100
#define VMMIO_WIN_MAX 0x10000
#define VMMIO_GSI_MAX 255
#define VMMIO_QUEUE_MAX 32768	/* the largest ring virtio allows */

struct vmmio_window {
	u64 base, size;
	u32 gsi;
	u32 id;		/* the platform id after the irq, if any (only logged) */
	bool has_id;
};

struct vmmio_list {
	u32 n;
	u32 refused;	/* windows given but refused (each warned about) */
	struct vmmio_window w[VMMIO_MAX_DEVICES];
};

/* Parses one value. Returns 0, or -EINVAL and a short reason in why. */
int vmmio_parse(const char *val, struct vmmio_window *out, char *why, size_t why_len);

/* vmmio_parse, then refuses a window overlapping one already in l, one on
 * an irq already taken (edge-triggered: not shared), or one past
 * VMMIO_MAX_DEVICES; an accepted window is appended. The command
 * line's CMDLINE_CUSTOM parser for virtio_mmio.device (dst: the list). */
int vmmio_cmdline_add(const char *val, void *list, char *why, size_t why_len);

/* The devices ACPI published (acpi_devices(): n of them, as the DSDT's
 * AML describes them) whose _HID is virtio-mmio's, VMMIO_ACPI_HID (QEMU
 * microvm with ACPI): each goes through the same bounds and list checks as
 * the command line (a window both name is kept once), and the window's
 * magic is checked before use. Returns the number added; refusals count in
 * l->refused, the last reason in why. */
#define VMMIO_ACPI_HID "LNRO0005"
int vmmio_add_platform(const struct aml_dev *d, u32 n, struct vmmio_list *l, char *why, size_t why_len);

/* The first registers of a window: returns the layout version (1 legacy,
 * 2 modern), 0 for an empty slot (device id 0), or -ENODEV with *why set
 * (not a virtio-mmio window, an unknown version). */
int vmmio_check_ids(u32 magic, u32 version, u32 device_id, const char **why);

/* QueueNumMax as read: 0 (no such queue) and values above VMMIO_QUEUE_MAX
 * are both "unavailable" (0); the latter sets *bad. */
u16 vmmio_queue_max(u32 raw, bool *bad);

#endif
