/*
 * virtio-console driver (device id 3). A console port is a console sink
 * (everything the UART prints) and a source of shell input; a port named
 * VCONS_LOG_PORT_NAME is a sink for the log only.
 *
 * Transmit: sink writes come with interrupts off from any context and must
 * never wait, so bytes are copied into a fixed pool of buffers and posted;
 * when the pool or the ring is full the rest is dropped and counted.
 * Completions are reclaimed on the next write and from the loop (a delayed
 * callback once everything in flight is done). Every path that touches a
 * transmit ring holds the port's tx_busy flag with interrupts off, so a
 * write re-entered from inside it (a log line from the ring code) is
 * dropped instead of corrupting the ring.
 *
 * Receive: buffers stay posted; the loop hands received bytes to
 * console_input(). Lengths and tokens are checked (virtq checks them too);
 * a device that breaks the ring's rules marks the device broken, once.
 *
 * MULTIPORT: the control queues run the port handshake from the loop
 * (DEVICE_READY, then per port DEVICE_ADD -> PORT_READY, CONSOLE_PORT,
 * PORT_NAME, PORT_OPEN). Control sends never wait: a message finds a free
 * slot or joins a bounded FIFO that the control transmit queue's completion
 * interrupt drains. Ports can come and go at any time.
 *
 * EMERG_WRITE: in panic mode the first console port writes through the
 * emerg_wr config register, one byte per write, touching no ring.
 */
#include <arch.h>

#include "drivers/virtio/virtio.h"
#include "drivers/virtio/console/virtio_console.h"
#include "drivers/virtio/console/virtio_console_reg.h"
#include "kernel/console.h"
#include "kernel/arch/io.h"
#include "kernel/loop.h"
#include "kernel/mm/dma.h"
#include "kernel/mm/mm.h"
#include "kernel/shell.h"
#include "lib/string.h"
#include "kernel/time/time.h"

#define VCONS_MAX_PORTS ((VIRTIO_MAX_VQS - 2) / 2)	/* queue pairs beside control */
#define DATA_QSIZE 64		/* hint; legacy devices keep their own size */
#define CTRL_QSIZE 32
#define TX_BUFS 32
#define TX_BUF_SIZE 512		/* TX_BUFS * TX_BUF_SIZE covers a log-ring replay */
#define TX_PAGES (ALIGN_UP(TX_BUFS * TX_BUF_SIZE, (size_t)PAGE_SIZE) / PAGE_SIZE)
#define RX_BUFS 16
#define RX_BUF_SIZE 256		/* RX_BUFS * RX_BUF_SIZE is one page */
#define RX_BUDGET 64
#define CTRL_BUFS 16		/* posted control receive buffers */
#define CTRL_BUF_SIZE 128	/* header + a name up to 120 bytes */
#define CTRL_TX_SLOTS 8
/* Control messages waiting for a free slot: sends never wait. A pass takes
 * at most RX_BUDGET (64) device messages and each makes at most one reply,
 * so a device flooding the control queue finds CTRL_TX_SLOTS in flight and
 * CTRL_PENDING queued; replies beyond those are dropped and counted. */
#define CTRL_PENDING 32
#define NAME_MAX 64
/* Probe: the handshake is done once every control message sent is
 * completed and nothing has arrived for SETTLE_QUIET_NS, or at the latest
 * after SETTLE_MAX_NS (a device that never completes or never stops). */
#define SETTLE_QUIET_NS (5 * NSEC_PER_MSEC)
#define SETTLE_MAX_NS (500 * NSEC_PER_MSEC)
#define EMERG_SPINS 100000	/* panic path: bounded wait for ring completions */

/* Kernel memory; data is TX_BUF_SIZE bytes of the port's DMA-only transmit
 * pages, which hold console bytes and nothing else: a device reads them,
 * never the pool's pointers (issue 30). */
struct txbuf {
	struct txbuf *next_free;
	u32 len;
	char *data;
};

struct vcons;

struct vcons_port {
	struct vcons *vc;
	u32 id;
	struct virtio_vq *rxq, *txq;
	struct console_sink sink;
	struct work rx_work, tx_work;
	struct txbuf *tx, *tx_free;	/* pool of TX_BUFS (kmalloc) ... */
	char *txdata;			/* ... their bytes: TX_PAGES DMA-only pages */
	u8 *rx;				/* RX_BUFS * RX_BUF_SIZE, one page */
	u16 nrx;			/* receive buffers in use (<= queue size) */
	u16 tx_inflight;
	char name[NAME_MAX];
	bool present;		/* added by the device (port 0 without MULTIPORT) */
	bool console;		/* CONSOLE_PORT, or port 0 without MULTIPORT */
	bool log;		/* named VCONS_LOG_PORT_NAME */
	bool host_open, guest_open;
	bool sink_on;		/* linked into the console's sinks */
	bool emerg;		/* panic output goes through emerg_wr */
	bool tx_busy;		/* a transmit-ring operation is under way */
	u64 bytes_out, bytes_in, dropped;
};

struct vcons {
	struct virtio_dev *vd;
	bool multiport;
	bool dead;		/* removed: queued work must do nothing */
	u32 max_ports;		/* the device's max_nr_ports */
	u32 nports;		/* ports we have queues for */
	u16 cols, rows;
	struct virtio_vq *cin, *cout;
	struct work ctrl_work;
	u8 *cbuf;		/* CTRL_BUFS * CTRL_BUF_SIZE, one page (+ cmsg's) */
	struct virtio_console_control *cmsg;	/* CTRL_TX_SLOTS, device-readable:
						 * the DMA-only page after cbuf's */
	u8 cmsg_busy[CTRL_TX_SLOTS];
	struct virtio_console_control pend[CTRL_PENDING];	/* FIFO, not yet posted */
	u32 pend_head, pend_len;
	u64 ctrl_bad;		/* control messages ignored as malformed */
	u64 ctrl_dropped;	/* replies dropped: every slot and the FIFO full */
	struct vcons_port port[VCONS_MAX_PORTS];
};

static const struct virtio_feature_name console_feature_names[] = {
	{ VIRTIO_CONSOLE_F_SIZE, "SIZE" },
	{ VIRTIO_CONSOLE_F_MULTIPORT, "MULTIPORT" },
	{ VIRTIO_CONSOLE_F_EMERG_WRITE, "EMERG_WRITE" },
	{ 0, NULL },
};

static const struct virtio_driver virtio_console_driver;

static struct vcons_port *vcons_sink_port(struct console_sink *s)
{
	return (struct vcons_port *)((char *)s - offsetof(struct vcons_port, sink));
}

static bool vcons_emerg_target_taken(struct vcons *vc)
{
	u32 i;

	for (i = 0; i < vc->nports; i++)
		if (vc->port[i].emerg)
			return true;
	return false;
}

/* ---- transmit (interrupts off, tx_busy held) ---- */

static bool vcons_tx_usable(struct vcons_port *p)
{
	return p->present && p->tx && !p->vc->vd->broken && !virtq_is_broken(&p->txq->vq);
}

static void vcons_tx_reclaim(struct vcons_port *p)
{
	struct txbuf *b;
	u32 len;

	while ((b = virtq_get(&p->txq->vq, &len))) {
		b->next_free = p->tx_free;
		p->tx_free = b;
		p->tx_inflight--;
	}
	if (virtq_is_broken(&p->txq->vq))
		virtio_set_broken(p->vc->vd, "console transmit queue broken");
}

/* Ask for one interrupt when all in flight is done, or poll if it is. */
static void vcons_tx_arm(struct vcons_port *p)
{
	vcons_tx_reclaim(p);
	if (!p->tx_inflight || virtq_is_broken(&p->txq->vq)) {
		virtq_disable_cb(&p->txq->vq);
		return;
	}
	if (!virtq_enable_cb_delayed(&p->txq->vq, p->tx_inflight))
		work_queue(&p->tx_work);
}

/* Copies from buf into b (console ports turn \n into \r\n, as the UART
 * does); returns the source bytes taken. */
static size_t vcons_tx_fill(struct vcons_port *p, struct txbuf *b, const char *buf, size_t len)
{
	size_t i = 0;
	u32 n = 0;

	while (i < len && n < TX_BUF_SIZE) {
		if (buf[i] == '\n' && p->console) {
			if (n + 2 > TX_BUF_SIZE)
				break;
			b->data[n++] = '\r';
		}
		b->data[n++] = buf[i++];
	}
	b->len = n;
	return i;
}

static void vcons_port_write(struct vcons_port *p, const char *buf, size_t len)
{
	bool posted = false;

	if (p->tx_busy || !vcons_tx_usable(p)) {
		p->dropped += len;
		return;
	}
	p->tx_busy = true;
	vcons_tx_reclaim(p);
	while (len && p->tx_free) {
		struct txbuf *b = p->tx_free;
		size_t took = vcons_tx_fill(p, b, buf, len);
		struct virtq_sg sg = { b->data, b->len };

		if (virtq_add(&p->txq->vq, &sg, 1, NULL, 0, b) < 0)
			break;
		p->tx_free = b->next_free;
		p->tx_inflight++;
		p->bytes_out += took;
		buf += took;
		len -= took;
		posted = true;
	}
	p->dropped += len;
	if (posted) {
		virtq_kick(&p->txq->vq);
		vcons_tx_arm(p);
	}
	p->tx_busy = false;
}

static void vcons_sink_write(struct console_sink *s, const char *buf, size_t len)
{
	vcons_port_write(vcons_sink_port(s), buf, len);
}

/* Panic path without EMERG_WRITE (or a log port): the ring, polled. */
static void vcons_sink_emerg_ring(struct console_sink *s, const char *buf, size_t len)
{
	struct vcons_port *p = vcons_sink_port(s);
	u32 spins = EMERG_SPINS;

	vcons_port_write(p, buf, len);
	while (p->tx_inflight && !p->tx_busy && vcons_tx_usable(p) && spins--) {
		pause();
		p->tx_busy = true;
		vcons_tx_reclaim(p);
		p->tx_busy = false;
	}
}

/* Panic path with EMERG_WRITE: one config write per byte, no ring. */
static void vcons_sink_emerg_reg(struct console_sink *s, const char *buf, size_t len)
{
	struct vcons_port *p = vcons_sink_port(s);
	u32 off = offsetof(struct virtio_console_config, emerg_wr);
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] == '\n')
			virtio_cfg_write32(p->vc->vd, off, '\r');
		virtio_cfg_write32(p->vc->vd, off, (u8)buf[i]);
	}
	p->bytes_out += len;
}

static void vcons_tx_work(void *arg)
{
	struct vcons_port *p = arg;
	u64 flags;

	if (p->vc->dead)
		return;
	flags = irq_save();
	if (!p->tx_busy && p->tx) {
		p->tx_busy = true;
		vcons_tx_arm(p);
		p->tx_busy = false;
	}
	irq_restore(flags);
}

static void vcons_tx_irq(struct virtio_vq *q)
{
	struct vcons_port *p = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&p->tx_work);
}

/* ---- receive (loop) ---- */

static bool vcons_rx_token_ok(struct vcons_port *p, const u8 *b)
{
	size_t off = (size_t)(b - p->rx);

	return b >= p->rx && off < (size_t)p->nrx * RX_BUF_SIZE && off % RX_BUF_SIZE == 0;
}

static int vcons_rx_post(struct vcons_port *p, u8 *b)
{
	struct virtq_sg sg = { b, RX_BUF_SIZE };

	return virtq_add(&p->rxq->vq, NULL, 0, &sg, 1, b);
}

static void vcons_rx_poll(void *arg)
{
	struct vcons_port *p = arg;
	unsigned n = 0;
	bool added = false;
	u8 *b;
	u32 len;

	if (p->vc->dead || p->vc->vd->broken)
		return;
	while (n < RX_BUDGET && (b = virtq_get(&p->rxq->vq, &len))) {
		n++;
		if (!vcons_rx_token_ok(p, b) || len > RX_BUF_SIZE) {
			virtio_set_broken(p->vc->vd, "console receive buffer not ours or overrun");
			return;
		}
		p->bytes_in += len;
		if (p->console)
			console_input((const char *)b, len);
		if (vcons_rx_post(p, b) == 0)
			added = true;
	}
	if (virtq_is_broken(&p->rxq->vq)) {
		virtio_set_broken(p->vc->vd, "console receive queue broken");
		return;
	}
	if (added)
		virtq_kick(&p->rxq->vq);
	if (n == RX_BUDGET) {
		work_queue(&p->rx_work);
		return;
	}
	if (!virtq_enable_cb(&p->rxq->vq)) {	/* raced with new input: poll again */
		virtq_disable_cb(&p->rxq->vq);
		work_queue(&p->rx_work);
	}
}

static void vcons_rx_irq(struct virtio_vq *q)
{
	struct vcons_port *p = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&p->rx_work);
}

/* ---- ports ---- */

/* Gives a port's pages back (either may be absent). */
static void vcons_port_free(struct vcons_port *p)
{
	if (p->rx)
		dma_pages_free(p->rx, 1);
	if (p->txdata)
		dma_pages_free(p->txdata, TX_PAGES);
	kfree(p->tx);
	p->rx = NULL;
	p->tx = NULL;
	p->txdata = NULL;
	p->tx_free = NULL;
}

/* Buffers are allocated the first time a port is used, then kept. */
static int vcons_port_alloc(struct vcons_port *p)
{
	u32 i;

	if (p->tx)
		return 0;
	p->rx = dma_pages_alloc(1);
	p->tx = kzalloc(TX_BUFS * sizeof(*p->tx));
	p->txdata = dma_pages_alloc(TX_PAGES);
	if (!p->rx || !p->tx || !p->txdata) {
		vcons_port_free(p);
		return -ENOMEM;
	}
	for (i = 0; i < TX_BUFS; i++) {
		p->tx[i].data = p->txdata + (size_t)i * TX_BUF_SIZE;
		p->tx[i].next_free = p->tx_free;
		p->tx_free = &p->tx[i];
	}
	return 0;
}

/* Only consoles take input; other ports leave host bytes with the host.
 * Once posted, receive buffers stay with the queue (also across a port's
 * removal: the next port with this id uses them). */
static void vcons_rx_start(struct vcons_port *p)
{
	u32 i;

	if (p->nrx)
		return;
	p->nrx = (u16)MIN((u32)RX_BUFS, (u32)p->rxq->num);
	for (i = 0; i < p->nrx; i++)
		vcons_rx_post(p, p->rx + i * RX_BUF_SIZE);
	virtq_kick(&p->rxq->vq);
}

static int vcons_ctrl_send(struct vcons *vc, u32 id, u16 event, u16 value);

/* A console or log port goes live: buffers, guest side open, sink. */
static void vcons_port_activate(struct vcons_port *p)
{
	struct vcons *vc = p->vc;
	u32 idx = vc->vd->index;

	if (p->sink_on)
		return;
	if (vcons_port_alloc(p) < 0) {
		kprintf("virtio%u: console: port %u: no memory for buffers\n", idx, p->id);
		return;
	}
	if (p->console)
		vcons_rx_start(p);
	if (vc->multiport && !p->guest_open) {
		if (vcons_ctrl_send(vc, p->id, VIRTIO_CONSOLE_PORT_OPEN, 1) == 0)
			p->guest_open = true;
	}
	p->sink.name = p->console ? "virtconsole" : VCONS_LOG_PORT_NAME;
	p->sink.write = vcons_sink_write;
	if (p->console && virtio_has(vc->vd, VIRTIO_CONSOLE_F_EMERG_WRITE) && !vcons_emerg_target_taken(vc))
		p->emerg = true;
	p->sink.emerg_write = p->emerg ? vcons_sink_emerg_reg : vcons_sink_emerg_ring;
	kprintf("virtio%u: console: port %u%s%s%s %s, panic output via %s\n", idx, p->id, p->name[0] ? " \"" : "",
		p->name, p->name[0] ? "\"" : "", p->console ? "console (output and shell input)" : "log",
		p->emerg ? "emerg_wr" : "the ring");
	p->sink_on = true;
	console_add_sink(&p->sink);	/* replays the log ring */
}

/* The device took the port away (or the driver goes): unlink, forget. */
static void vcons_port_reset(struct vcons_port *p)
{
	if (p->sink_on)
		console_remove_sink(&p->sink);
	p->sink_on = false;
	p->present = p->console = p->log = p->emerg = false;
	p->host_open = p->guest_open = false;
	p->name[0] = '\0';
}

static void vcons_ctrl_bad(struct vcons *vc, const char *why, u32 id)
{
	if (vc->ctrl_bad++ == 0)
		kprintf("virtio%u: console: ignoring control message: %s (port %u); not logged again\n",
			vc->vd->index, why, id);
}

static void vcons_port_add(struct vcons *vc, u32 id)
{
	struct vcons_port *p;

	if (id >= vc->max_ports) {
		vcons_ctrl_bad(vc, "port id beyond max_nr_ports", id);
		return;
	}
	if (id >= vc->nports) {
		kprintf("virtio%u: console: port %u refused: queues for %u ports only\n", vc->vd->index, id,
			vc->nports);
		vcons_ctrl_send(vc, id, VIRTIO_CONSOLE_PORT_READY, 0);
		return;
	}
	p = &vc->port[id];
	if (!p->present) {
		p->present = true;
		vcons_ctrl_send(vc, id, VIRTIO_CONSOLE_PORT_READY, 1);
	}
}

/* Name bytes follow the header; their length is the device's, so the copy
 * is bounded by our buffer, stops at a NUL, and is made printable. */
static void vcons_port_name(struct vcons_port *p, const u8 *name, u32 len)
{
	u32 n = 0;

	while (n < len && n < NAME_MAX - 1 && name[n]) {
		p->name[n] = (name[n] >= 0x20 && name[n] < 0x7f) ? (char)name[n] : '?';
		n++;
	}
	p->name[n] = '\0';
	if (n < len && name[n] && n == NAME_MAX - 1) {
		kprintf("virtio%u: console: port %u name truncated to \"%s\"\n", p->vc->vd->index, p->id, p->name);
		return;	/* a truncated name is not ours */
	}
	if (!strcmp(p->name, VCONS_LOG_PORT_NAME)) {
		p->log = true;
		if (p->host_open)
			vcons_port_activate(p);
	}
}

static void vcons_ctrl_handle(struct vcons *vc, const u8 *msg, u32 len)
{
	struct virtio_console_control c;
	struct vcons_port *p;

	if (len < sizeof c) {
		vcons_ctrl_bad(vc, "shorter than its header", 0);
		return;
	}
	memcpy(&c, msg, sizeof c);
	if (c.event == VIRTIO_CONSOLE_DEVICE_ADD) {
		vcons_port_add(vc, c.id);
		return;
	}
	if (c.id >= vc->nports || !vc->port[c.id].present) {
		vcons_ctrl_bad(vc, "port not added", c.id);
		return;
	}
	p = &vc->port[c.id];
	switch (c.event) {
	case VIRTIO_CONSOLE_DEVICE_REMOVE:
		kprintf("virtio%u: console: port %u removed\n", vc->vd->index, p->id);
		vcons_port_reset(p);
		break;
	case VIRTIO_CONSOLE_CONSOLE_PORT:
		/* A console is always ours: opened at once, as a UART would be. */
		if (c.value && !p->console) {
			p->console = true;
			vcons_port_activate(p);
		}
		break;
	case VIRTIO_CONSOLE_RESIZE:
		if (len >= sizeof c + sizeof(struct virtio_console_resize)) {
			struct virtio_console_resize r;

			memcpy(&r, msg + sizeof c, sizeof r);
			kprintf("virtio%u: console: port %u resized to %ux%u\n", vc->vd->index, p->id, r.cols, r.rows);
		}
		break;
	case VIRTIO_CONSOLE_PORT_OPEN:
		p->host_open = c.value != 0;
		if (p->host_open && (p->console || p->log))
			vcons_port_activate(p);
		break;
	case VIRTIO_CONSOLE_PORT_NAME:
		vcons_port_name(p, msg + sizeof c, len - (u32)sizeof c);
		break;
	default:
		vcons_ctrl_bad(vc, "unknown event", c.id);
		break;
	}
}

/* ---- control queues (MULTIPORT) ---- */

static bool vcons_ctrl_token_ok(struct vcons *vc, const u8 *b)
{
	size_t off = (size_t)(b - vc->cbuf);

	return b >= vc->cbuf && off < CTRL_BUFS * CTRL_BUF_SIZE && off % CTRL_BUF_SIZE == 0;
}

static int vcons_ctrl_post(struct vcons *vc, u8 *b)
{
	struct virtq_sg sg = { b, CTRL_BUF_SIZE };

	return virtq_add(&vc->cin->vq, NULL, 0, &sg, 1, b);
}

static void vcons_ctrl_reclaim(struct vcons *vc)
{
	struct virtio_console_control *m;
	u32 len;

	while ((m = virtq_get(&vc->cout->vq, &len))) {
		size_t i = (size_t)(m - vc->cmsg);

		if (m < vc->cmsg || i >= CTRL_TX_SLOTS) {
			virtio_set_broken(vc->vd, "console control token not ours");
			return;
		}
		vc->cmsg_busy[i] = 0;
	}
}

/* Posts queued messages while slots are free, in order. If some must
 * still wait, the transmit queue's callback is armed: its completion
 * interrupt queues ctrl_poll, which comes back here. Never waits. */
static void vcons_ctrl_flush(struct vcons *vc)
{
	bool added = false;
	unsigned i;

	vcons_ctrl_reclaim(vc);
	if (virtq_is_broken(&vc->cout->vq)) {
		virtio_set_broken(vc->vd, "console control queue broken");
		return;
	}
	while (vc->pend_len && !vc->vd->broken) {
		struct virtq_sg sg;

		for (i = 0; i < CTRL_TX_SLOTS && vc->cmsg_busy[i]; i++)
			;
		if (i == CTRL_TX_SLOTS)
			break;
		vc->cmsg[i] = vc->pend[vc->pend_head];
		sg = (struct virtq_sg){ &vc->cmsg[i], sizeof vc->cmsg[i] };
		if (virtq_add(&vc->cout->vq, &sg, 1, NULL, 0, &vc->cmsg[i]) < 0)
			break;	/* ring full: the slots say it cannot be; wait for completions */
		vc->cmsg_busy[i] = 1;
		vc->pend_head = (vc->pend_head + 1) % CTRL_PENDING;
		vc->pend_len--;
		added = true;
	}
	if (added)
		virtq_kick(&vc->cout->vq);
	if (vc->pend_len && !virtq_enable_cb(&vc->cout->vq)) {	/* completions raced in */
		virtq_disable_cb(&vc->cout->vq);
		work_queue(&vc->ctrl_work);
	}
}

/* Queues one message and posts what slots allow. Returns 0 (posted or
 * queued), -ENOSPC (dropped: the FIFO is full) or -EIO. */
static int vcons_ctrl_send(struct vcons *vc, u32 id, u16 event, u16 value)
{
	if (!vc->cout || vc->vd->broken)
		return -EIO;
	if (vc->pend_len == CTRL_PENDING) {
		if (vc->ctrl_dropped++ == 0)
			kprintf("virtio%u: console: control queue backed up, message %u for port %u dropped; "
				"not logged again\n", vc->vd->index, event, id);
		return -ENOSPC;
	}
	vc->pend[(vc->pend_head + vc->pend_len) % CTRL_PENDING] =
		(struct virtio_console_control){ .id = id, .event = event, .value = value };
	vc->pend_len++;
	vcons_ctrl_flush(vc);
	return vc->vd->broken ? -EIO : 0;
}

static void vcons_ctrl_poll(void *arg)
{
	struct vcons *vc = arg;
	u8 msg[CTRL_BUF_SIZE];
	unsigned n = 0;
	u8 *b;
	u32 len;

	if (vc->dead || vc->vd->broken)
		return;
	vcons_ctrl_flush(vc);		/* transmit completions first: slots for replies */
	while (n < RX_BUDGET && (b = virtq_get(&vc->cin->vq, &len))) {
		n++;
		if (!vcons_ctrl_token_ok(vc, b)) {
			virtio_set_broken(vc->vd, "console control buffer not ours");
			return;
		}
		/* Copy, give the buffer back, then act: replies may make the
		 * device send more, and it needs buffers for that. */
		memcpy(msg, b, MIN(len, (u32)CTRL_BUF_SIZE));
		if (vcons_ctrl_post(vc, b) == 0)
			virtq_kick(&vc->cin->vq);
		vcons_ctrl_handle(vc, msg, MIN(len, (u32)CTRL_BUF_SIZE));
		if (vc->vd->broken)
			return;
	}
	if (virtq_is_broken(&vc->cin->vq)) {
		virtio_set_broken(vc->vd, "console control queue broken");
		return;
	}
	if (n == RX_BUDGET) {
		work_queue(&vc->ctrl_work);
		return;
	}
	if (!virtq_enable_cb(&vc->cin->vq)) {
		virtq_disable_cb(&vc->cin->vq);
		work_queue(&vc->ctrl_work);
	}
}

/* Whether a control message is still queued or not yet completed by the
 * device (takes the completions and posts what waits first). */
static bool vcons_ctrl_outstanding(struct vcons *vc)
{
	unsigned i;

	vcons_ctrl_flush(vc);
	if (vc->pend_len)
		return true;
	for (i = 0; i < CTRL_TX_SLOTS; i++)
		if (vc->cmsg_busy[i])
			return true;
	return false;
}

/* Probe: run the port handshake until it is done (bounded), so consoles are
 * live before the kernel is ready and a boot-time panic shows on them.
 * Silence alone does not say done: a device answers from its own thread,
 * which a loaded host can hold back for longer than the quiet window. But a
 * device acts on a control message before it completes it (QEMU sends a
 * port's CONSOLE_PORT, PORT_NAME and PORT_OPEN, or DEVICE_READY's PORT_ADDs,
 * and then marks ours used), so the wait lasts until every message we sent
 * is completed, and then SETTLE_QUIET_NS without news. Messages arriving
 * later (hot-add) are handled from the loop. */
static void vcons_ctrl_settle(struct vcons *vc)
{
	u64 now = time_ns();
	u64 quiet = now + SETTLE_QUIET_NS, limit = now + SETTLE_MAX_NS;

	while (now < limit && !vc->vd->broken) {
		if (virtq_more_used(&vc->cin->vq)) {
			vcons_ctrl_poll(vc);
			quiet = time_ns() + SETTLE_QUIET_NS;
		} else if (now >= quiet && !vcons_ctrl_outstanding(vc)) {
			break;
		} else {
			pause();
		}
		now = time_ns();
	}
}

/* Both control queues: a message arrived, or sends completed. */
static void vcons_ctrl_irq(struct virtio_vq *q)
{
	struct vcons *vc = q->priv;

	virtq_disable_cb(&q->vq);
	work_queue(&vc->ctrl_work);
}

/* ---- device ---- */

static void vcons_read_size(struct vcons *vc, bool always)
{
	u16 cols, rows;

	if (!virtio_has(vc->vd, VIRTIO_CONSOLE_F_SIZE))
		return;
	if (virtio_cfg_read16(vc->vd, offsetof(struct virtio_console_config, cols), &cols) < 0 ||
	    virtio_cfg_read16(vc->vd, offsetof(struct virtio_console_config, rows), &rows) < 0)
		return;	/* torn: keep the size we had */
	if (always || cols != vc->cols || rows != vc->rows)
		kprintf("virtio%u: console: size %ux%u\n", vc->vd->index, cols, rows);
	vc->cols = cols;
	vc->rows = rows;
}

static void vcons_config_changed(struct virtio_dev *d)
{
	if (d->priv)
		vcons_read_size(d->priv, false);
}

static void vcons_free_buffers(struct vcons *vc)
{
	u32 i;

	for (i = 0; i < VCONS_MAX_PORTS; i++) {
		struct vcons_port *p = &vc->port[i];

		vcons_port_free(p);
		p->nrx = 0;
	}
	if (vc->cbuf)
		dma_pages_free(vc->cbuf, 2);
	vc->cbuf = NULL;
	vc->cmsg = NULL;
}

/* A device that never completed its reset: its receive pages stay its own
 * (kept, never freed); transmit pages it may only read go back. */
static void vcons_keep_buffers(struct vcons *vc)
{
	u32 i;

	for (i = 0; i < VCONS_MAX_PORTS; i++) {
		virtio_keep_forever(vc->port[i].rx, vc->port[i].rx ? 1 : 0);
		vc->port[i].rx = NULL;
	}
	virtio_keep_forever(vc->cbuf, vc->cbuf ? 2 : 0);
	vc->cbuf = NULL;
	vc->cmsg = NULL;
	vcons_free_buffers(vc);
}

static void vcons_cancel_work(struct vcons *vc)
{
	u32 i;

	work_cancel(&vc->ctrl_work);
	for (i = 0; i < VCONS_MAX_PORTS; i++) {
		work_cancel(&vc->port[i].rx_work);
		work_cancel(&vc->port[i].tx_work);
	}
}

static int vcons_probe(struct virtio_dev *d)
{
	struct vcons *vc = kzalloc(sizeof(*vc));
	u32 i;
	int err = -EIO;

	_Static_assert(RX_BUFS * RX_BUF_SIZE <= PAGE_SIZE, "one receive page per port");
	_Static_assert(CTRL_BUFS * CTRL_BUF_SIZE <= PAGE_SIZE, "one control page");
	if (!vc)
		return -ENOMEM;
	vc->vd = d;
	d->priv = vc;
	vc->multiport = virtio_has(d, VIRTIO_CONSOLE_F_MULTIPORT);
	vc->max_ports = 1;
	if (vc->multiport) {
		if (virtio_cfg_read32(d, offsetof(struct virtio_console_config, max_nr_ports), &vc->max_ports) < 0)
			vc->max_ports = 0;
		if (vc->max_ports == 0) {
			kprintf("virtio%u: console: device reports 0 ports; using port 0 only\n", d->index);
			vc->max_ports = 1;
		}
	}
	vc->nports = MIN(vc->max_ports, (u32)VCONS_MAX_PORTS);
	work_init(&vc->ctrl_work, vcons_ctrl_poll, vc);

	/* §3.1.1 step 7: every queue we may use, hot-added ports included. */
	for (i = 0; i < vc->nports; i++) {
		struct vcons_port *p = &vc->port[i];

		p->vc = vc;
		p->id = i;
		work_init(&p->rx_work, vcons_rx_poll, p);
		work_init(&p->tx_work, vcons_tx_work, p);
		p->rxq = virtio_setup_vq(d, (u16)VIRTIO_CONSOLE_RXQ(i), DATA_QSIZE, vcons_rx_irq, p);
		p->txq = p->rxq ? virtio_setup_vq_transient(d, (u16)VIRTIO_CONSOLE_TXQ(i), DATA_QSIZE, vcons_tx_irq, p) : NULL;
		if (!p->txq) {
			if (i == 0)
				goto fail;
			kprintf("virtio%u: console: queues for %u ports only\n", d->index, i);
			vc->nports = i;
			break;
		}
		virtq_disable_cb(&p->txq->vq);	/* armed once something is in flight */
	}
	if (vc->multiport) {
		vc->cin = virtio_setup_vq(d, VIRTIO_CONSOLE_CTRL_RXQ, CTRL_QSIZE, vcons_ctrl_irq, vc);
		vc->cout = vc->cin ? virtio_setup_vq_transient(d, VIRTIO_CONSOLE_CTRL_TXQ, CTRL_QSIZE, vcons_ctrl_irq, vc) : NULL;
		vc->cbuf = dma_pages_alloc(2);
		vc->cmsg = vc->cbuf ? (struct virtio_console_control *)(void *)(vc->cbuf + PAGE_SIZE) : NULL;
		if (!vc->cout || !vc->cbuf) {
			err = vc->cbuf ? -EIO : -ENOMEM;
			goto fail;
		}
		virtq_disable_cb(&vc->cout->vq);	/* armed while messages wait (ctrl_flush) */
		for (i = 0; i < CTRL_BUFS; i++)
			vcons_ctrl_post(vc, vc->cbuf + i * CTRL_BUF_SIZE);
	}
	virtio_device_ready(d);					/* step 8 */
	kprintf("virtio%u: console: %s, %u of %u port%s driven, tx %u x %u B, rx %u x %u B per port%s\n",
		d->index, vc->multiport ? "multiport" : "single port", vc->nports, vc->max_ports,
		vc->max_ports == 1 ? "" : "s", TX_BUFS, TX_BUF_SIZE, RX_BUFS, RX_BUF_SIZE,
		virtio_has(d, VIRTIO_CONSOLE_F_EMERG_WRITE) ? ", emerg write" : "");
	vcons_read_size(vc, true);
	if (vc->multiport) {
		virtq_kick(&vc->cin->vq);
		if (vcons_ctrl_send(vc, VIRTIO_CONSOLE_BAD_ID, VIRTIO_CONSOLE_DEVICE_READY, 1) < 0)
			kprintf("virtio%u: console: DEVICE_READY not sent\n", d->index);
		else if (d->resets == 0)
			vcons_ctrl_settle(vc);	/* boot: before the loop runs; a re-probe runs from it */
	} else {
		vc->port[0].present = true;
		vc->port[0].console = true;
		vcons_port_activate(&vc->port[0]);
	}
	return 0;

fail:
	/* Queues may be live with interrupts routed: quiesce before vc goes. */
	virtio_quiesce(d);
	vcons_cancel_work(vc);
	vcons_free_buffers(vc);
	kfree(vc);
	d->priv = NULL;
	return err;
}

static void vcons_remove(struct virtio_dev *d)
{
	struct vcons *vc = d->priv;
	u32 i;

	if (!vc)
		return;
	/* The device is reset: it holds none of our buffers any more. */
	for (i = 0; i < vc->nports; i++)
		vcons_port_reset(&vc->port[i]);
	if (d->dead)
		vcons_keep_buffers(vc);	/* the device may still write them */
	else
		vcons_free_buffers(vc);
	vc->dead = true;
	/* Nothing queued may run on freed memory. */
	vcons_cancel_work(vc);
	d->priv = NULL;
	kfree(vc);
}

void vcons_print_stats(void)
{
	struct virtio_dev *d;
	u32 i;

	for (d = virtio_devices(); d; d = d->next) {
		struct vcons *vc = d->priv;

		if (d->driver != &virtio_console_driver || !vc)
			continue;
		for (i = 0; i < vc->nports; i++) {
			struct vcons_port *p = &vc->port[i];

			if (!p->present)
				continue;
			kprintf("virtio%u: console: port %u%s%s%s%s%s: out %lu B, in %lu B, dropped %lu B\n", d->index,
				p->id, p->console ? " console" : "", p->log ? " log" : "",
				p->host_open ? " host-open" : "", p->guest_open ? " guest-open" : "",
				p->sink_on ? "" : " (unused)", p->bytes_out, p->bytes_in, p->dropped);
		}
		if (vc->ctrl_bad)
			kprintf("virtio%u: console: %lu control messages ignored\n", d->index, vc->ctrl_bad);
		if (vc->ctrl_dropped)
			kprintf("virtio%u: console: %lu control replies dropped (queue backed up)\n", d->index,
				vc->ctrl_dropped);
	}
}

static void vcons_cmd_stats(const char *args)
{
	(void)args;
	vcons_print_stats();
}
SHELL_CMD(vcons, .name = "vcons", .fn = vcons_cmd_stats, .help = "virtio-console ports and byte counters");

static const struct virtio_device_id console_ids[] = {
	{ VIRTIO_ID_CONSOLE, VIRTIO_VENDOR_ANY },
	{ 0, 0 },
};

static const struct virtio_driver virtio_console_driver = {
	.name = "virtio-console",
	.ids = console_ids,
	.features = VIRTIO_BIT(VIRTIO_CONSOLE_F_SIZE) | VIRTIO_BIT(VIRTIO_CONSOLE_F_MULTIPORT) |
		    VIRTIO_BIT(VIRTIO_CONSOLE_F_EMERG_WRITE),
	.feature_names = console_feature_names,
	.probe = vcons_probe,
	.remove = vcons_remove,
	.config_changed = vcons_config_changed,
};
VIRTIO_DRIVER(virtio_console_driver);
