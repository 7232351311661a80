/*
 * The app API's TCP and UDP services (runtime/services.c) and TCP clients
 * (runtime/tcp_out.c), as the two share them: the connection state, the
 * delivery and timeouts of runtime/services.c, its metrics writer. Inside
 * runtime/ only (the apps' side is include/vireo/net.h).
 */
#ifndef VIREO_RUNTIME_SERVICES_H
#define VIREO_RUNTIME_SERVICES_H

#include "kernel/loop.h"
#include "lib/metrics.h"
#include "lib/types.h"
#include "runtime/conntab.h"
#include "net/tcp/tcpconn.h"
#include "vireo/net.h"

struct altcp_tls_config;

#define SVC_POLL_TICKS 1	/* 500 ms */

struct svc;

struct svc_conn {
	struct conntab_conn link;	/* first: the table hands back this */
	struct tcpconn tc;	/* the pcb, rx[], inflight, ACK progress */
	struct svc *svc;
	u32 id;			/* the vireo_tcp handle */
	void *ctx;
	bool eof_told;		/* on_eof was called */
	bool close_req, abort_req, recv_req;	/* the app asked: done from work */
	bool shut_req, shut_done;	/* vireo_tcp_shutdown(): asked, FIN sent */
	bool want_writable;
	bool connected;		/* outbound: established (on_connected told) */
	u8 fail;		/* outbound: enum vireo_tcp_fail decided before the end */
	u32 inflight_max;	/* copied bytes unacknowledged at most */
	u64 t_active;		/* last byte either way (ms); outbound: connect start */
	struct svc_name *nm;	/* outbound by name (tcp_out.c): its addresses */
	char *sni;		/* outbound TLS: the server's name (SNI, verified); heap */
	const char *alpn;	/* outbound TLS: the protocol the server chose, or NULL */
	struct work work;
	u8 rx[];		/* VIREO_TCP_RXBUF; a bulk service's: its window */
};

_Static_assert(offsetof(struct svc_conn, link) == 0, "conntab entries are struct svc_conn");

struct svc {
	struct vireo_tcp_service cfg;
	struct altcp_pcb *listen;
	struct conntab tab;
	struct vireo_tcp_stats st;	/* active: tab.count */
	/* A client's (no listen pcb): */
	bool out;
	u32 connect_ms;
	u32 rxbuf;		/* a connection's rx[]: VIREO_TCP_RXBUF, a bulk client's larger */
	void (*on_connected)(vireo_tcp c, void *arg);
	void (*on_fail)(vireo_tcp c, enum vireo_tcp_fail why, void *arg);
	bool tls;		/* make TLS=1: every connection is TLS (tcp_out.c) */
	const char *const *alpn;	/* offered, NULL-terminated (the app's array) */
	struct altcp_tls_config *tls_conf;	/* made at the first connect */
};

struct usvc {
	struct vireo_udp_service cfg;
	struct udp_pcb *pcb;
	struct vireo_udp_stats st;
};

/* From the heap at the first service (the EFI image's .bss is bounded),
 * never given back: services are not removed. */
struct svcs {
	struct svc tcp[VIREO_TCP_SERVICES_MAX];
	u32 ntcp;
	struct svc out[VIREO_TCP_CLIENTS_MAX];	/* clients */
	u32 nout;
	struct usvc udp[VIREO_UDP_SERVICES_MAX];
	u32 nudp;
	u8 *udp_buf;		/* a fragmented datagram, as the app sees it */
	u32 udp_buf_size;	/* the largest max_datagram bound */
};
extern struct svcs *svcs;
extern u32 svcs_live;		/* TCP connections of every service and client */
extern u32 svcs_out_live;	/* of those, outbound */

bool svcs_alloc(void);
u64 svc_now_ms(void);
/* lwIP's address from a vireo_addr; false if the family is neither. */
bool svc_ip_of(const struct vireo_addr *a, ip_addr_t *ip);

static inline struct svc_conn *svc_conn_of(struct tcpconn *tc)
{
	return tcpconn_owner(tc, struct svc_conn, tc);
}

/* The accepted side's tcpconn ops and work, which outbound connections
 * share once established. */
void svc_conn_free(struct tcpconn *tc, err_t err);
err_t svc_deliver(struct svc_conn *c);
err_t svc_recv(struct tcpconn *tc);
err_t svc_sent(struct tcpconn *tc, u16 len);
err_t svc_poll(struct tcpconn *tc);

/* /metrics: families of counters, one sample per service or client. */
enum { SVC_TCP, SVC_UDP, SVC_OUT };
struct svc_family {
	const char *name, *help;
	u16 off;
	u8 kind;
	bool gauge;
	bool reasons;		/* a row, one per reason */
};
#define SVC_T(name, help, f) { name, help, offsetof(struct svc, st.f), SVC_TCP, false, false }
#define SVC_U(name, help, f) { name, help, offsetof(struct usvc, st.f), SVC_UDP, false, false }
#define SVC_O(name, help, f) { name, help, offsetof(struct svc, st.f), SVC_OUT, false, false }
void svc_write_families(struct metrics_buf *b, const struct svc_family *t, size_t nt, const char *const *reasons,
			u32 nr);
void svc_metrics_register(void);
/* The clients' families (runtime/tcp_out.c sets it at the first client). */
extern void (*svc_out_metrics)(struct metrics_buf *b);
/* Ends the clients' connections (api_services_stop(); set with the above). */
extern void (*svc_out_stop)(void);

#endif
