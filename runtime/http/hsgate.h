/* What TLS handshakes may take of the CPU (docs/appliance.md, "Handshake
 * rates and CPU"): token buckets on handshakes started, per prefix and in
 * all (runtime/http/hsrate.h), checked on accept; and a bound on the
 * handshake work one pass of the event loop runs before the NIC and plain
 * HTTP get their turn (net/port/patches/0007), and on its share of time.
 *
 * Handshake cost, measured natively (make bench-hs-cost: vireo's mbedTLS
 * configuration at -O2 on the build host, the lowest of three runs): the
 * server's ECDHE, a key pair and the shared secret, is 85 us on X25519 and
 * 869 us on P-256, and CertificateVerify's P-256 ECDSA signature 493 us.
 * The client picks the group, so a flood offers P-256 alone: a handshake
 * costs up to HSGATE_COST_NATIVE_US, 1.36 ms (0.58 ms with X25519; an RSA
 * key from the ESP adds more). Under TCG about 8.5 ms each (the QEMU test;
 * vireo_https_handshake_step_seconds_total on /metrics is the running sum).
 * The defaults:
 * - https.handshake_rate= 300 a second in all: 300 x 1.36 ms = 41% of the
 *   one CPU natively at the dearest group, so at least 59% is left to
 *   everything else however many prefixes a flood comes from; burst
 *   https.handshake_burst= 300 (one second's worth);
 * - https.handshake_rate_per_prefix= 30 a second from one IPv4 /24 or
 *   IPv6 /56: 4% of the CPU, a tenth of the global rate, so ten flooding
 *   networks are needed to reach the global ceiling and one leaves 90% of
 *   it to the others; burst https.handshake_burst_per_prefix= 100 (16
 *   browsers behind one NAT opening 6 connections each at once; 136 ms of
 *   CPU once);
 * - the pass bound, https.handshake_pass_us= 1000: handshake steps start
 *   in one pass while less than 1 ms of handshake work ran in it, so a
 *   pass does at most 1 ms plus one step (a ClientHello's is the dearest:
 *   ECDHE and the signature, up to 1.36 ms natively) before the queued
 *   work behind it (the NIC's receive poll, plain HTTP) runs. A step put
 *   off waits (at most https.handshakes= connections: only handshaking
 *   ones) and runs first in a later pass, the waiting steps served round
 *   robin by source prefix (hsfair in hsrate.h), so a flood from one
 *   prefix does not queue another prefix's client behind all its steps.
 * - the window bound, https.handshake_share= 25 percent of each
 *   https.handshake_window_us= 10000: steps start only while a token
 *   bucket on their time (hscpu in hsrate.h: credit earned at 25% of real
 *   time, capped at 2.5 ms, each step's measured length taken off) is
 *   positive; so handshakes take at most 25% of the CPU over any stretch
 *   plus 2.5 ms and one step's overrun, however short the loop's passes
 *   are (the pass bound alone ran one step in every pass: a flood of
 *   queued steps took all but the other work's share). Natively 25% is
 *   184 P-256 handshakes a second (430 on X25519): below the global rate
 *   at the dearest group, so the global bucket bounds connections and the
 *   share bounds CPU. When the share is out, the queues wait on a timer for
 *   the credit to be back, and the loop serves, or halts, meanwhile.
 * Under TCG a step costs 10-40 milliseconds: the pass bound then runs one
 * step per pass, the window bound one step and then 3 steps' time of
 * everything else, and the rates are set lower on the command line (the
 * QEMU test does).
 */
#ifndef VIREO_RUNTIME_HTTP_HSGATE_H
#define VIREO_RUNTIME_HTTP_HSGATE_H

#include "lib/types.h"
#include "lwip/ip_addr.h"

#define HSGATE_COST_NATIVE_US	1360	/* measured, P-256 ECDHE: see above */
#define HSGATE_RATE		300	/* https.handshake_rate= default */
#define HSGATE_BURST		300
#define HSGATE_RATE_PREFIX	30	/* https.handshake_rate_per_prefix= default */
#define HSGATE_BURST_PREFIX	100
#define HSGATE_PASS_US		1000	/* https.handshake_pass_us= default */
#define HSGATE_SHARE		25	/* https.handshake_share= default, percent */
#define HSGATE_WINDOW_US	10000	/* https.handshake_window_us= default */

struct altcp_pcb;
struct conn;

/* https_start(), before it listens: keys the prefix table (from the
 * kernel heap: -ENOMEM without it) and turns the metrics on. */
int hsgate_start(void);
/* On accept, after the concurrency limits passed: false (and counted) if
 * pcb's prefix or everyone is over the handshake rate. */
bool hsgate_admit(struct altcp_pcb *pcb);
/* The same for a client a PROXY header named (admission.c). */
bool hsgate_admit_ip(const ip_addr_t *ip);
/* c ends (server.c's free): off the queues of steps put off. */
void hsgate_forget(struct conn *c);

#endif
