/* RFC 5424 syslog messages for the console's lines (net/clients/syslog.c). Pure. */
#ifndef VIREO_NET_SYSLOG_MSG_H
#define VIREO_NET_SYSLOG_MSG_H

#include "lib/types.h"

#define SYSLOG_FACILITY_USER 1
#define SYSLOG_SEV_CRIT 2
#define SYSLOG_SEV_WARNING 4
#define SYSLOG_SEV_INFO 6

/* The severity of a console line: "vireo: panic" is critical, "warning:"
 * a warning, anything else informational. */
int syslog_msg_severity(const char *line, size_t len);

/* line[0..len) without the console's own "[<ISO time>] " stamp, if it has
 * one (the message carries the time in its header). Returns the new start. */
size_t syslog_msg_unstamp(const char *line, size_t len);

/*
 * "<PRI>1 TIMESTAMP HOST vireo - - - MSG" (RFC 5424 section 6, facility
 * user, MSGID and structured data nil) into out[size]: timestamp NULL or
 * "" is the nil "-", host NULL or "" too; msg[0..len) is copied with
 * control bytes as '?' and cut to fit. Returns the length (no NUL is
 * written), or 0 if even the header does not fit.
 */
size_t syslog_msg_format(char *out, size_t size, int severity, const char *timestamp, const char *host,
			 const char *msg, size_t len);

/* The addresses of a datagram built without lwIP (net/clients/syslog.c's panic
 * writer): IPv4 addresses in host order. */
struct syslog_msg_link {
	u8 src_mac[6], dst_mac[6];
	u32 src_ip, dst_ip;
	u16 src_port, dst_port;
};

#define SYSLOG_MSG_FRAME_HDR (14 + 20 + 8)	/* Ethernet + IPv4 + UDP */

/*
 * One Ethernet frame carrying payload[0..len) as a UDP datagram over IPv4
 * (no options, TTL 64, don't fragment, both checksums filled in) into
 * out[size]. Returns the frame's length, or 0 if it does not fit in size
 * or in 1500 bytes of IP. Pure: no allocation, no lwIP.
 */
size_t syslog_msg_frame(u8 *out, size_t size, const struct syslog_msg_link *l, u16 ip_id, const void *payload,
			size_t len);

#endif
