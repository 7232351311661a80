/* The raw-frame reflector (vnet.echo): an upper layer of virtio-net that
 * sends each received frame back where it came from, through the driver's
 * upper-layer interface alone (virtio_net.h). One-buffer frames are sent
 * back in place (the receive buffer is the transmit buffer, released on
 * completion); a merged frame, a runt or a refused send is dropped. */
#include <arch.h>

#include "drivers/virtio/net/virtio_net.h"
#include "debug/vnet_echo.h"
#include "kernel/cmdline.h"
#include "kernel/console.h"
#include "kernel/loop.h"
#include "lib/string.h"

static struct {
	bool on;
	struct work attach;
	u8 mac[6];
} echo;

CMDLINE_PARAM(vnet_echo, .key = "vnet.echo", .type = CMDLINE_BOOL, .dst = &echo.on, .def = "off",
	      .help = "virtio-net reflects every received frame to its sender (data-path self-test; the network "
		      "and the appliance are not started)");

static void vnet_echo_release(struct vnet_rxbuf *f)
{
	while (f) {
		struct vnet_rxbuf *next = f->next;

		vnet_rx_release(f);
		f = next;
	}
}

static void vnet_echo_rx(void *ctx, struct vnet_rxbuf *f, u32 len, unsigned flags)
{
	struct vnet *vn = ctx;
	struct virtq_sg sg = { f->data, f->len };

	(void)len;
	(void)flags;
	if (!f->next && f->len >= VNET_ETH_HLEN) {
		memcpy(f->data, f->data + 6, 6);	/* back where it came from, */
		memcpy(f->data + 6, echo.mac, 6);	/* from us */
		if (vnet_tx(vn, &sg, 1, 0, f) == 0)
			return;	/* released on completion */
	}
	vnet_echo_release(f);
}

static void vnet_echo_tx_done(void *ctx, void *token)
{
	(void)ctx;
	vnet_rx_release(token);
}

static void vnet_echo_link(void *ctx, bool up)
{
	(void)ctx;
	(void)up;
}

static void vnet_echo_attach(void *arg)
{
	struct vnet *vn = vnet_get();
	struct vnet_upper up = { vn, vnet_echo_rx, vnet_echo_tx_done, vnet_echo_link, NULL };
	struct vnet_info info;

	(void)arg;
	if (!echo.on || !vn)
		return;
	vnet_get_info(vn, &info);
	memcpy(echo.mac, info.mac, 6);
	vnet_set_rx_csum_whole(vn, true);	/* a reflected frame goes out as it came in */
	if (vnet_attach(vn, &up) == 0)
		kprintf("virtio%u: net: echo attached\n", info.index);
}

void vnet_set_echo(bool on)
{
	echo.on = on;
	if (!echo.attach.fn)
		work_init(&echo.attach, vnet_echo_attach, NULL);
	if (on)
		work_queue(&echo.attach);
	else
		work_cancel(&echo.attach);
}

bool vnet_echo_start(void)
{
	if (echo.on)
		vnet_set_echo(true);
	return echo.on;
}
