/* What TLS handshakes may take of the CPU (docs/appliance.md, "Handshake
 * rates and CPU"): token buckets on handshakes started, per prefix and in
 * all (runtime/http/hsrate.h), checked on accept; and a bound on the
 * handshake work one pass of the event loop runs before the NIC and plain
 * HTTP get their turn (net/port/patches/0007).
 *
 * Handshake cost, measured (docs/appliance.md has the runs): a full
 * handshake with vireo's P-256 key and X25519 costs the server one X25519
 * key pair, one X25519 shared secret and one P-256 ECDSA signature, about
 * HSGATE_COST_NATIVE_US of CPU natively (the 0.4 ms), many times
 * that under TCG (vireo_https_handshake_step_seconds_total /
 * vireo_https_handshakes_total on /metrics says how much). The defaults:
 * - https.handshake_rate= 1000 a second in all: 1000 x 0.4 ms = 40% of the
 *   one CPU natively, so at least 60% is left to everything else however
 *   many prefixes a flood comes from; burst https.handshake_burst= 1000
 *   (one second's worth);
 * - https.handshake_rate_per_prefix= 100 a second from one IPv4 /24 or
 *   IPv6 /56: 4% of the CPU natively, a tenth of the global rate, so ten
 *   flooding prefixes are needed to reach the global ceiling and a single
 *   one leaves 90% of it to others; burst https.handshake_burst_per_prefix=
 *   200 (a NAT of 33 browsers opening 6 connections each at once).
 * - the pass bound, https.handshake_pass_us= 1000: handshake steps start
 *   in one pass while less than 1 ms of handshake work ran in it, so a
 *   pass does at most 1 ms plus one step (a ClientHello's step is the
 *   dearest: ECDHE and the signature, about 0.4 ms natively) before the
 *   queued work behind it (the NIC's receive poll, plain HTTP) runs. A step
 *   put off waits in a FIFO (at most https.handshakes= connections: only
 *   handshaking ones) and runs first in a later pass.
 * Under TCG a step costs tens of milliseconds: the pass bound then runs one
 * step per pass, and the rates are set lower on the command line (the QEMU
 * test does) to keep a flood's share of the CPU down.
 */
#ifndef VIREO_RUNTIME_HTTP_HSGATE_H
#define VIREO_RUNTIME_HTTP_HSGATE_H

#include "lib/types.h"

#define HSGATE_COST_NATIVE_US	400	/* measured: see above */
#define HSGATE_RATE		1000	/* https.handshake_rate= default */
#define HSGATE_BURST		1000
#define HSGATE_RATE_PREFIX	100	/* https.handshake_rate_per_prefix= default */
#define HSGATE_BURST_PREFIX	200
#define HSGATE_PASS_US		1000	/* https.handshake_pass_us= default */

struct altcp_pcb;
struct conn;

/* https_start(): keys the prefix table and turns the metrics on. */
void hsgate_start(void);
/* On accept, after the concurrency limits passed: false (and counted) if
 * pcb's prefix or everyone is over the handshake rate. */
bool hsgate_admit(struct altcp_pcb *pcb);
/* c ends (server.c's free): off the FIFO of steps put off. */
void hsgate_forget(struct conn *c);

#endif
