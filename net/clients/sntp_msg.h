/* SNTP (RFC 4330, NTPv4's on-wire format of RFC 5905) messages: the
 * request a client sends and the checks on a server's reply. Pure. */
#ifndef VIREO_NET_SNTP_MSG_H
#define VIREO_NET_SNTP_MSG_H

#include "lib/types.h"

#define SNTP_MSG_LEN 48			/* the fixed header; extensions are ignored */
#define SNTP_PORT 123
#define SNTP_UNIX_OFFSET 2208988800ULL	/* 1900-01-01 to 1970-01-01, seconds */

/* A client request (LI 0, VN 4, mode 3) whose transmit timestamp is nonce:
 * a random value the server echoes as the reply's originate timestamp, so
 * only an answer to this request is taken (RFC 4330 section 5). */
void sntp_msg_request(u8 msg[SNTP_MSG_LEN], u64 nonce);

/* An NTP timestamp (32.32 fixed point since 1900) as Unix ns; seconds below
 * 2^31 are taken as era 1 (from 2036-02-07), as RFC 4330 section 3 says. */
u64 sntp_msg_to_unix_ns(u64 ntp);

struct sntp_reply {
	u64 rx_ns, tx_ns;	/* the server's receive and transmit times, Unix ns */
	u32 stratum;
};

/*
 * Checks a reply, p[0..len), to the request with transmit timestamp nonce:
 * at least SNTP_MSG_LEN bytes (only those are read); mode 4 (server);
 * version 3 or 4; leap indicator not 3 (unsynchronised); stratum 1-15
 * (0 is a kiss-o'-death: its code is in why); the originate timestamp is
 * nonce; receive and transmit timestamps present, in order, and within
 * kernel/time/wallclock.h's plausible range. Returns 0 with *r set, or -EINVAL
 * with a short reason in why[why_len].
 */
int sntp_msg_check(const u8 *p, size_t len, u64 nonce, struct sntp_reply *r, char *why, size_t why_len);

/* The Unix time at local monotonic t4_ns, from a reply whose request left
 * at t1_ns: the server's transmit time plus half the round trip less the
 * server's own holding time (RFC 4330 section 5's delay). */
u64 sntp_msg_time_at(const struct sntp_reply *r, u64 t1_ns, u64 t4_ns);

#endif
