/* The lwIP test wire shared by the host tests of the runtime's services
 * (tests/host/lwip/lwip_wire.c). */
#ifndef VIREO_TESTS_HOST_LWIP_WIRE_H
#define VIREO_TESTS_HOST_LWIP_WIRE_H

#include "lwip/ip_addr.h"
#include "lwip/netif.h"
#include "lwip/pbuf.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "lib/types.h"
#include "tests/host/shim/hostk.h"

/* A packet on the wire. */
struct frame {
	struct frame *next;
	u16 len;
	u8 data[];
};

/* A raw-API TCP client. */
struct client {
	struct tcp_pcb *pcb;
	bool connected, eof, dead;
	err_t err;
	bool hold;		/* stop reading: nothing is tcp_recved() */
	u32 held;
	u8 *buf;		/* everything received */
	size_t len, cap, off;	/* off: where the next response starts */
	const u8 *tx;		/* data still to send */
	size_t tx_len, tx_off;
};

/* A response as the client sees it. */
struct resp {
	int status;
	char head[16384];	/* NUL-terminated copy of the head */
	size_t head_len;
	const u8 *body;		/* into the client's buffer, until it grows */
	size_t body_len;
};

extern struct netif nif;
extern struct frame *wire_head, **wire_tail;
extern ip_addr_t addr4, addr6;
extern u16 bh_lo, bh_hi;

/* The netif (nif_init for netif_add) and its addresses. */
err_t nif_init(struct netif *n);
/* Adds nif (192.168.7.2/24, gateway .1; fd00::2 preferred) as the default
 * netif, up, and lets its MLD/ND start-up chatter settle; sets addr4/addr6. */
void wire_netif_up(void);
/* Records lwIP's heap and pool levels; wire_check_idle() fails the test
 * unless no TCP PCB is active or in TIME_WAIT and every level is back. */
void wire_snapshot(void);
void wire_check_idle(void);
/* Deliver queued packets until the wire is quiet; let ms of fake time pass
 * in steps (deliver, advance, run lwIP's timers). */
void wire_drain(void);
void run_step(u64 ms, u64 step);
void run_ms(u64 ms);
void cl_push(struct client *c);
void cl_open_from(struct client *c, bool v6, u16 port, u16 local_port);
void cl_open(struct client *c, bool v6, u16 port);
void cl_send(struct client *c, const void *data, size_t n);
void cl_send_str(struct client *c, const char *s);
void cl_resume(struct client *c);
void cl_detach(struct client *c);
void cl_close(struct client *c);
void cl_abort(struct client *c);
/* Open a holding client's window by n bytes (at most what it holds) and
 * announce it at once, however small: lwIP as a receiver avoids silly
 * windows (it announces nothing below an MSS), an attacker does not, so the
 * announced window is set by hand. */
void cl_window(struct client *c, u32 n);
const char *hdr(const struct resp *r, const char *name);
bool cl_response(struct client *c, bool no_body, struct resp *r);

#endif
