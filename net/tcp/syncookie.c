/* SYN cookies (RFC 4987 section 3.6) for lwIP's listeners.
 *
 * While a listener's backlog is full (accepts_pending >= backlog, i.e.
 * TCP_DEFAULT_LISTEN_BACKLOG half-open or unaccepted connections), a SYN is
 * answered with a SYN-ACK whose sequence number is a cookie and nothing is
 * kept: no PCB, no segment, no timer. The cost of a spoofed SYN is one
 * outgoing frame, built and freed on the spot. A client that really sent the
 * SYN acknowledges cookie + 1; vireo_syncookie_ack() recomputes the cookie
 * from that ACK and, if it matches and is recent, makes the SYN_RCVD PCB
 * the listener would have made, which tcp_input then moves to ESTABLISHED
 * and hands to the accept callback (net/port/patches/0001).
 *
 * The cookie, 32 bits:
 *	31..26	t mod 64, t = time_ns() >> 34 (a step is 17.2 s)
 *	25..24	index of the MSS in syncookie_mss[] (the largest entry not
 *		above the client's MSS option; 536 without one)
 *	23..0	SipHash-2-4(key; t, mss index, client ISN, 4-tuple) mod 2^24
 * An ACK is accepted when its t is the current step or the one before: a
 * cookie stays valid for between 17.2 and 34.4 s, plenty for a handshake's
 * retransmissions and short enough that a captured cookie soon expires.
 * Guessing: a forged ACK matches with probability 2^-24 (the MAC; t and
 * the MSS index give nothing as they are not secret), so an attacker at
 * 1,000 forged ACKs/s gets one connection per 4.7 hours on average, and
 * that connection is an ordinary one under the application's connection
 * limit, to a spoofed address that never answers.
 *
 * What a cookie cannot carry: window scaling (lwIP scales the windows it
 * is sent, LWIP_WND_SCALE; the SYN-ACK built here does not offer the
 * option, so a cookie connection runs unscaled both ways, its send window
 * at most 65,535 bytes), SACK (LWIP_TCP_SACK_OUT is 0) and timestamps (off),
 * and an MSS other than the four below: a cookie connection uses the
 * largest table entry not above the client's MSS. */
#include "kernel/random.h"
#include "lib/crypto/siphash.h"
#include "kernel/time/time.h"
#include "lwip/inet_chksum.h"
#include "lwip/ip.h"
#include "lwip/pbuf.h"
#include "lwip/prot/tcp.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/priv/tcp_priv.h"
#include "net/port/lwip_hooks.h"
#include "net/port/lwip_port.h"
#include "net/tcp/tcp_isn.h"

#define SYNCOOKIE_STEP_SHIFT	34	/* 2^34 ns = 17.2 s per step */
#define SYNCOOKIE_MAX_AGE	1	/* steps */
#define SYNCOOKIE_MAC_MASK	0x00ffffffu

static const u16_t syncookie_mss[4] = { 536, 1220, 1440, 1460 };

static struct siphash_key ck_key;
static bool ck_keyed;

static u32_t syncookie_mac(u32_t step, u32_t mss_idx, u32_t client_isn,
			   const ip_addr_t *lip, u16_t lport, const ip_addr_t *rip, u16_t rport)
{
	u8 buf[12 + TCP_ISN_TUPLE_MAX];
	size_t n = 0;
	u32_t w[3] = { step, mss_idx, client_isn };
	int i, k;

	for (i = 0; i < 3; i++)
		for (k = 0; k < 4; k++)
			buf[n++] = (u8)(w[i] >> (8 * k));
	n += tcp_isn_tuple(buf + n, lip, lport, rip, rport);
	return (u32_t)siphash24(&ck_key, buf, n) & SYNCOOKIE_MAC_MASK;
}

/* The client's MSS option, if any, from options that may be split in two
 * (see LWIP_HOOK_TCP_INPACKET_PCB). Malformed options end the walk. */
static u16_t syncookie_peer_mss(const struct tcp_hdr *hdr, u16_t optlen, u16_t opt1len,
				const u8_t *opt2)
{
	const u8_t *opt1 = (const u8_t *)(hdr + 1);
	u16_t i = 0;

#define OPT(j) ((j) < opt1len ? opt1[j] : opt2[(j) - opt1len])
	if (opt2 == NULL)
		opt1len = optlen;
	while (i < optlen) {
		u8_t kind = OPT(i), len;

		if (kind == LWIP_TCP_OPT_EOL)
			break;
		if (kind == LWIP_TCP_OPT_NOP) {
			i++;
			continue;
		}
		if (i + 1 >= optlen)
			break;
		len = OPT(i + 1);
		if (len < 2 || i + len > optlen)
			break;
		if (kind == LWIP_TCP_OPT_MSS && len == LWIP_TCP_OPT_LEN_MSS)
			return (u16_t)(OPT(i + 2) << 8 | OPT(i + 3));
		i = (u16_t)(i + len);
	}
#undef OPT
	return 536;	/* RFC 9293 3.7.1: the default without the option */
}

/* A SYN-ACK with the cookie and our MSS, sent back the way the SYN came;
 * the same header lwIP's tcp_listen_input() would send, minus the PCB. */
static void syncookie_send(struct tcp_pcb_listen *lpcb, const struct tcp_hdr *syn, u32_t cookie)
{
	struct netif *netif = ip_current_input_netif();
	const ip_addr_t *lip = ip_current_dest_addr(), *rip = ip_current_src_addr();
	struct tcp_hdr *h;
	struct pbuf *p;
	u8_t *opt;
	u16_t mss = TCP_MSS;

	p = pbuf_alloc(PBUF_IP, TCP_HLEN + LWIP_TCP_OPT_LEN_MSS, PBUF_RAM);
	if (p == NULL) {
		TCP_STATS_INC(tcp.memerr);
		return;
	}
#if TCP_CALCULATE_EFF_SEND_MSS
	mss = tcp_eff_send_mss_netif(mss, netif, rip);
#endif
	h = (struct tcp_hdr *)p->payload;
	h->src = lwip_htons(syn->dest);
	h->dest = lwip_htons(syn->src);
	h->seqno = lwip_htonl(cookie);
	h->ackno = lwip_htonl(syn->seqno + 1);
	TCPH_HDRLEN_FLAGS_SET(h, (TCP_HLEN + LWIP_TCP_OPT_LEN_MSS) / 4, TCP_SYN | TCP_ACK);
	h->wnd = PP_HTONS(TCPWND_MIN16(TCP_WND));
	h->chksum = 0;
	h->urgp = 0;
	opt = (u8_t *)(h + 1);
	opt[0] = LWIP_TCP_OPT_MSS;
	opt[1] = LWIP_TCP_OPT_LEN_MSS;
	opt[2] = (u8_t)(mss >> 8);
	opt[3] = (u8_t)mss;
#if CHECKSUM_GEN_TCP
	IF__NETIF_CHECKSUM_ENABLED(netif, NETIF_CHECKSUM_GEN_TCP) {
		h->chksum = ip_chksum_pseudo(p, IP_PROTO_TCP, p->tot_len, lip, rip);
	}
#endif
	TCP_STATS_INC(tcp.xmit);
	ip_output_if(p, lip, rip, lpcb->ttl, lpcb->tos, IP_PROTO_TCP, netif);
	pbuf_free(p);
	vireo_lwip_stats.syncookies_sent++;
}

err_t vireo_syncookie_inpacket(struct tcp_pcb *pcb, struct tcp_hdr *hdr, u16_t optlen,
			       u16_t opt1len, u8_t *opt2, struct pbuf *p)
{
	struct tcp_pcb_listen *lpcb = (struct tcp_pcb_listen *)pcb;
	u8_t flags = TCPH_FLAGS(hdr);
	u16_t peer_mss;
	u32_t step, idx = 0, mac;

	if (pcb->state != LISTEN || (flags & (TCP_SYN | TCP_ACK | TCP_RST)) != TCP_SYN ||
	    lpcb->accepts_pending < lpcb->backlog)
		return ERR_OK;

	if (!ck_keyed) {
		tcp_isn_key(&ck_key);
		ck_keyed = true;
	}
	peer_mss = syncookie_peer_mss(hdr, optlen, opt1len, opt2);
	while (idx + 1 < LWIP_ARRAYSIZE(syncookie_mss) && syncookie_mss[idx + 1] <= peer_mss)
		idx++;
	step = (u32_t)(time_ns() >> SYNCOOKIE_STEP_SHIFT);
	mac = syncookie_mac(step, idx, hdr->seqno, ip_current_dest_addr(), hdr->dest,
			    ip_current_src_addr(), hdr->src);
	syncookie_send(lpcb, hdr, (step & 63) << 26 | idx << 24 | mac);
	return ERR_ABRT;	/* nothing kept: tcp_input frees the SYN */
}

struct tcp_pcb *vireo_syncookie_ack(struct tcp_pcb_listen *lpcb, struct tcp_hdr *hdr,
				    struct pbuf *p)
{
	const ip_addr_t *lip = ip_current_dest_addr(), *rip = ip_current_src_addr();
	u32_t cookie = hdr->ackno - 1, client_isn = hdr->seqno - 1;
	u32_t now, age, idx;
	struct tcp_pcb *npcb;

	if (!ck_keyed)
		return NULL;	/* no cookie was ever sent: lwIP's RST as before */
	now = (u32_t)(time_ns() >> SYNCOOKIE_STEP_SHIFT);
	age = (now - (cookie >> 26)) & 63;
	idx = (cookie >> 24) & 3;
	if (age > SYNCOOKIE_MAX_AGE ||
	    syncookie_mac(now - age, idx, client_isn, lip, hdr->dest, rip, hdr->src) !=
	    (cookie & SYNCOOKIE_MAC_MASK)) {
		vireo_lwip_stats.syncookies_rejected++;
		return NULL;
	}

	npcb = tcp_alloc(lpcb->prio);
	if (npcb == NULL) {
		TCP_STATS_INC(tcp.memerr);
		vireo_lwip_stats.syncookies_rejected++;
		return NULL;
	}
	/* As tcp_listen_input() sets a PCB up, after its SYN-ACK went out:
	 * the SYN-ACK took one sequence number (snd_nxt = iss + 1) and sits in
	 * no queue, so the ACK acknowledges nothing that needs freeing. Not
	 * TF_BACKLOGPEND: the PCB is established within this tcp_input(). */
	ip_addr_copy(npcb->local_ip, *lip);
	ip_addr_copy(npcb->remote_ip, *rip);
	npcb->local_port = lpcb->local_port;
	npcb->remote_port = hdr->src;
	npcb->state = SYN_RCVD;
	npcb->rcv_nxt = hdr->seqno;
	npcb->rcv_ann_right_edge = npcb->rcv_nxt;
	npcb->lastack = cookie;
	npcb->snd_wl2 = cookie;
	npcb->snd_nxt = cookie + 1;
	npcb->snd_lbb = cookie + 1;
	npcb->snd_wl1 = hdr->seqno - 1;	/* forces the window update */
	npcb->snd_wnd = hdr->wnd;
	npcb->snd_wnd_max = npcb->snd_wnd;
	npcb->callback_arg = lpcb->callback_arg;
	npcb->listener = lpcb;
	npcb->so_options = lpcb->so_options & SOF_INHERITED;
	npcb->netif_idx = lpcb->netif_idx;
	npcb->mss = syncookie_mss[idx];
#if TCP_CALCULATE_EFF_SEND_MSS
	npcb->mss = tcp_eff_send_mss(npcb->mss, &npcb->local_ip, &npcb->remote_ip);
#endif
	TCP_REG_ACTIVE(npcb);
	MIB2_STATS_INC(mib2.tcppassiveopens);
	vireo_lwip_stats.syncookies_validated++;
	return npcb;
}
