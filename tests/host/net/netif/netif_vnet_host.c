/* net/netif/netif_vnet.c, unchanged, built for the host so its transmit backlog
 * can be driven directly (test_netif_vnet.c): the same translation unit, so
 * the helpers below reach its statics. They are test-only. */
#include "net/netif/netif_vnet.c"

#include "tests/host/net/netif/netif_vnet_host.h"

/* Sets up what netif_vnet_add would for the transmit path alone: the device
 * pointer, the backlog, a netif with our linkoutput. */
void nvh_setup(struct vnet *fake)
{
	vn = fake;
	backlog = kmalloc(TX_BACKLOG_MAX * sizeof(*backlog));
	bl_head = bl_len = 0;
	nif.linkoutput = netif_vnet_linkoutput;
}

/* The same with segmentation offload in force (net/netif/tso_out.c). */
void nvh_setup_tso(struct vnet *fake)
{
	nvh_setup(fake);
	info.tx_csum = true;
	tso = true;
	tso_out_init(netif_vnet_send, true, true, VNET_TX_MAX_SG - 1);
}

/* What the loop does when the burst's flush work runs. */
void nvh_flush(void)
{
	tso_out_flush();
}

void nvh_teardown(void)
{
	kfree(backlog);
	backlog = NULL;
	tso = false;
	info.tx_csum = false;
	vn = NULL;
}

err_t nvh_linkoutput(struct pbuf *p)
{
	return netif_vnet_linkoutput(&nif, p);
}

void nvh_tx_done(void *token)
{
	netif_vnet_tx_done(NULL, token);
}

void nvh_link(bool up)
{
	netif_vnet_link(NULL, up);
}

unsigned nvh_backlog_len(void)
{
	return bl_len;
}

/* The netif as netif_vnet_add makes it (netif_vnet_netif_init, our MAC),
 * down and without addresses: the test sets them. nvh_netif_remove()
 * takes it out of lwIP's list again. */
struct netif *nvh_netif_add(const u8 mac[6])
{
	ip4_addr_t zero;

	memcpy(info.mac, mac, ETH_HWADDR_LEN);
	info.mtu = 1500;
	ip4_addr_set_zero(&zero);
	if (!netif_add(&nif, &zero, &zero, &zero, NULL, netif_vnet_netif_init, netif_input))
		return NULL;
	return &nif;
}

void nvh_netif_remove(void)
{
	netif_remove(&nif);
}

/* What the driver calls on VIRTIO_NET_S_ANNOUNCE. */
void nvh_announce(void)
{
	netif_vnet_announce(NULL);
}
