/* virtio-console layouts (virtio 1.2 §5.3): feature bits, config space,
 * queue numbering and the control messages of MULTIPORT. Layouts only. All
 * fields little-endian (legacy devices use guest-native order, also LE on
 * x86_64). */
#ifndef VIREO_VIRTIO_CONSOLE_REG_H
#define VIREO_VIRTIO_CONSOLE_REG_H

#include "lib/types.h"

/* ---- feature bits, §5.3.3 (bit numbers) -------------------------------- */
#define VIRTIO_CONSOLE_F_SIZE		0	/* cols/rows valid */
#define VIRTIO_CONSOLE_F_MULTIPORT	1	/* max_nr_ports valid, control queues exist */
#define VIRTIO_CONSOLE_F_EMERG_WRITE	2	/* emerg_wr valid */

/* ---- queues, §5.3.2 ------------------------------------------------------
 * 0 receiveq(port0), 1 transmitq(port0), 2 control receiveq, 3 control
 * transmitq (MULTIPORT only), then 4 + 2(N-1) receiveq(portN) and
 * 5 + 2(N-1) transmitq(portN) for N >= 1. */
#define VIRTIO_CONSOLE_CTRL_RXQ	2u
#define VIRTIO_CONSOLE_CTRL_TXQ	3u
#define VIRTIO_CONSOLE_RXQ(n)	((n) == 0 ? 0u : 2u + 2u * (n))
#define VIRTIO_CONSOLE_TXQ(n)	((n) == 0 ? 1u : 3u + 2u * (n))

/* ---- device configuration, §5.3.4 ---------------------------------------
 * cols/rows exist with SIZE, max_nr_ports with MULTIPORT, emerg_wr with
 * EMERG_WRITE (write-only; the device outputs its low byte on the console
 * and may be written at any time, even before the rings are set up).
 * Read width-exact through the config accessors, never as a whole. */
struct virtio_console_config {
	le16 cols;
	le16 rows;
	le32 max_nr_ports;
	le32 emerg_wr;
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_console_config, cols) == 0, "spec");
_Static_assert(offsetof(struct virtio_console_config, rows) == 2, "spec");
_Static_assert(offsetof(struct virtio_console_config, max_nr_ports) == 4, "spec");
_Static_assert(offsetof(struct virtio_console_config, emerg_wr) == 8, "spec");
_Static_assert(sizeof(struct virtio_console_config) == 12, "spec");

/* ---- control messages, §5.3.6.2 ------------------------------------------
 * One message per buffer on the control queues. PORT_NAME carries the name
 * bytes after the header (not NUL-terminated, length = used len - 8);
 * RESIZE carries struct virtio_console_resize after it. */
struct virtio_console_control {
	le32 id;	/* port number */
	le16 event;	/* VIRTIO_CONSOLE_* below */
	le16 value;	/* event-specific */
} __attribute__((packed));
_Static_assert(offsetof(struct virtio_console_control, id) == 0, "spec");
_Static_assert(offsetof(struct virtio_console_control, event) == 4, "spec");
_Static_assert(offsetof(struct virtio_console_control, value) == 6, "spec");
_Static_assert(sizeof(struct virtio_console_control) == 8, "spec");

struct virtio_console_resize {
	le16 cols;
	le16 rows;
} __attribute__((packed));
_Static_assert(sizeof(struct virtio_console_resize) == 4, "spec");

#define VIRTIO_CONSOLE_BAD_ID		0xffffffffu	/* id of messages about no port */

#define VIRTIO_CONSOLE_DEVICE_READY	0	/* driver: value 1 ready, 0 failed */
#define VIRTIO_CONSOLE_DEVICE_ADD	1	/* device: port id added (the spec's PORT_ADD) */
#define VIRTIO_CONSOLE_DEVICE_REMOVE	2	/* device: port id removed */
#define VIRTIO_CONSOLE_PORT_READY	3	/* driver: value 1 port set up, 0 failed */
#define VIRTIO_CONSOLE_CONSOLE_PORT	4	/* device: port is a console */
#define VIRTIO_CONSOLE_RESIZE		5	/* device: console size changed */
#define VIRTIO_CONSOLE_PORT_OPEN	6	/* both: value 1 open, 0 closed */
#define VIRTIO_CONSOLE_PORT_NAME	7	/* device: name follows the header */

#endif
