/* virtio 1.2 virtqueue memory layouts (split §2.7, packed §2.8): spec layouts
 * and flag values only; no functions, no driver state. All fields little-endian. */
#ifndef VIREO_VIRTIO_RING_REG_H
#define VIREO_VIRTIO_RING_REG_H

#include "lib/types.h"

/* ---- descriptor flags (both layouts) ---------------------------------- */
#define VIRTQ_DESC_F_NEXT	1u	/* chain continues (split: via next) */
#define VIRTQ_DESC_F_WRITE	2u	/* device-writable (else device-readable) */
#define VIRTQ_DESC_F_INDIRECT	4u	/* addr/len is a table of descriptors */
/* packed only: available/used markers, compared against wrap counters */
#define VIRTQ_DESC_F_AVAIL	(1u << 7)
#define VIRTQ_DESC_F_USED	(1u << 15)

/* ---- split virtqueue, §2.7 ------------------------------------------- */
#define VIRTQ_AVAIL_F_NO_INTERRUPT	1u	/* driver: no used notifications */
#define VIRTQ_USED_F_NO_NOTIFY		1u	/* device: no avail notifications */

/* Descriptor table entry. Table alignment 16, size 16 * num. */
struct virtq_desc {
	le64 addr;	/* device address of the buffer */
	le32 len;
	le16 flags;	/* VIRTQ_DESC_F_* */
	le16 next;	/* next descriptor if flags & NEXT */
};
_Static_assert(offsetof(struct virtq_desc, addr) == 0, "spec");
_Static_assert(offsetof(struct virtq_desc, len) == 8, "spec");
_Static_assert(offsetof(struct virtq_desc, flags) == 12, "spec");
_Static_assert(offsetof(struct virtq_desc, next) == 14, "spec");
_Static_assert(sizeof(struct virtq_desc) == 16, "spec");

/* Available (driver) ring. Alignment 2, size 6 + 2 * num: ring[num] is
 * followed by le16 used_event (only meaningful with VIRTIO_F_EVENT_IDX). */
struct virtq_avail {
	le16 flags;	/* VIRTQ_AVAIL_F_* */
	le16 idx;	/* free-running: where the driver puts the next entry */
	le16 ring[];	/* heads of chains; then used_event */
};
_Static_assert(offsetof(struct virtq_avail, flags) == 0, "spec");
_Static_assert(offsetof(struct virtq_avail, idx) == 2, "spec");
_Static_assert(offsetof(struct virtq_avail, ring) == 4, "spec");
_Static_assert(sizeof(struct virtq_avail) == 4, "spec");

/* One used ring entry: a chain head and the bytes written into it. */
struct virtq_used_elem {
	le32 id;	/* head of the used chain */
	le32 len;	/* bytes written into the device-writable part */
};
_Static_assert(offsetof(struct virtq_used_elem, id) == 0, "spec");
_Static_assert(offsetof(struct virtq_used_elem, len) == 4, "spec");
_Static_assert(sizeof(struct virtq_used_elem) == 8, "spec");

/* Used (device) ring. Alignment 4, size 6 + 8 * num: ring[num] is followed
 * by le16 avail_event (only meaningful with VIRTIO_F_EVENT_IDX). */
struct virtq_used {
	le16 flags;	/* VIRTQ_USED_F_* */
	le16 idx;	/* free-running: where the device puts the next entry */
	struct virtq_used_elem ring[];	/* then avail_event */
};
_Static_assert(offsetof(struct virtq_used, flags) == 0, "spec");
_Static_assert(offsetof(struct virtq_used, idx) == 2, "spec");
_Static_assert(offsetof(struct virtq_used, ring) == 4, "spec");
_Static_assert(sizeof(struct virtq_used) == 4, "spec");

#define VIRTQ_DESC_ALIGN	16u
#define VIRTQ_AVAIL_ALIGN	2u
#define VIRTQ_USED_ALIGN	4u
/* Legacy interface: the used ring starts on the next Queue Align boundary. */
#define VIRTQ_LEGACY_ALIGN	4096u

#define VIRTQ_DESC_SIZE(num)	(16u * (size_t)(num))
#define VIRTQ_AVAIL_SIZE(num)	(6u + 2u * (size_t)(num))
#define VIRTQ_USED_SIZE(num)	(6u + 8u * (size_t)(num))

/* ---- packed virtqueue, §2.8 ------------------------------------------ */

/* Descriptor ring entry. Ring alignment 16, size 16 * num. */
struct pvirtq_desc {
	le64 addr;	/* device address of the buffer element */
	le32 len;	/* element length; in a used descriptor: bytes written */
	le16 id;	/* buffer id (in the last descriptor of a list) */
	le16 flags;	/* VIRTQ_DESC_F_* including AVAIL/USED */
};
_Static_assert(offsetof(struct pvirtq_desc, addr) == 0, "spec");
_Static_assert(offsetof(struct pvirtq_desc, len) == 8, "spec");
_Static_assert(offsetof(struct pvirtq_desc, id) == 12, "spec");
_Static_assert(offsetof(struct pvirtq_desc, flags) == 14, "spec");
_Static_assert(sizeof(struct pvirtq_desc) == 16, "spec");

/* Event suppression: driver area (written by the driver, read by the device)
 * and device area (written by the device, read by the driver). Alignment 4. */
struct pvirtq_event_suppress {
	le16 desc;	/* bits 0-14 event offset, bit 15 event wrap counter */
	le16 flags;	/* bits 0-1 VIRTQ_EVENT_FLAGS_*, rest reserved (0) */
};
_Static_assert(offsetof(struct pvirtq_event_suppress, desc) == 0, "spec");
_Static_assert(offsetof(struct pvirtq_event_suppress, flags) == 2, "spec");
_Static_assert(sizeof(struct pvirtq_event_suppress) == 4, "spec");

#define VIRTQ_EVENT_FLAGS_ENABLE	0x0u	/* notify on every event */
#define VIRTQ_EVENT_FLAGS_DISABLE	0x1u	/* no notifications */
#define VIRTQ_EVENT_FLAGS_DESC		0x2u	/* only at desc off/wrap (EVENT_IDX) */
#define VIRTQ_EVENT_FLAGS_MASK		0x3u	/* 0x3 is reserved */
#define VIRTQ_EVENT_OFF_MASK		0x7fffu
#define VIRTQ_EVENT_WRAP_SHIFT		15

#define PVIRTQ_DESC_ALIGN	16u
#define PVIRTQ_EVENT_ALIGN	4u

#define PVIRTQ_MAX_SIZE		32768u	/* packed queues: up to 2^15 entries */
#define VIRTQ_SPLIT_MAX_SIZE	32768u	/* split: largest power of two in 16 bits */

/* ---- available buffer notification data, §2.9 ------------------------ */
/* le32: bits 0-15 queue index, 16-30 next_off, 31 next_wrap. For split
 * rings next_off/next_wrap together are the 16-bit avail idx. */
#define VIRTQ_NOTIFY_OFF_SHIFT	16
#define VIRTQ_NOTIFY_WRAP_SHIFT	31

#endif
