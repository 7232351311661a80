/*
 * apps/proxy's access log line (proxy.access_log=; host-tested:
 * tests/test_pxlog.c): the combined log format (Apache's, nginx's
 * default) and the upstream:
 *
 *   ADDR - - [07/Dec/2026:05:09:50 +0000] "GET /a?b HTTP/1.1" 200 612 "REFERER" "AGENT" upstream=HOST:PORT upstream_ms=3
 *
 * Every field a client chose (the request line, Referer, User-Agent) is
 * escaped as nginx does: '"' and '\' with a backslash, every byte below
 * 0x20, 0x7f and above as \xHH, so no client can end a field or a line
 * early or forge one; each is cut at its cap (never inside an escape) so
 * the whole line always fits PX_LOG_LINE.
 */
#ifndef APPS_PROXY_PXLOG_H
#define APPS_PROXY_PXLOG_H

#include "vireo/types.h"

#define PX_LOG_LINE 512		/* the longest line, its NUL included */
#define PX_LOG_REQ_MAX 160	/* escaped bytes of the request line at most */
#define PX_LOG_REF_MAX 64	/* ... of Referer */
#define PX_LOG_UA_MAX 64	/* ... of User-Agent */
#define PX_LOG_UP_MAX 64	/* ... of the upstream's label */
#define PX_LOG_ADDR_MAX 45	/* an address's text (INET6_ADDRSTRLEN - 1) */
/* The fixed parts at their longest: the address, " - - [", the 26-byte
 * time, "] \"", "\" ", the status (3), " ", the bytes (20), " \"",
 * "\" \"", "\" upstream=", " upstream_ms=" and its 20 digits. */
#define PX_LOG_FIXED (PX_LOG_ADDR_MAX + 6 + 26 + 3 + 2 + 3 + 1 + 20 + 2 + 3 + 11 + 13 + 20)
_Static_assert(PX_LOG_FIXED + PX_LOG_REQ_MAX + PX_LOG_REF_MAX + PX_LOG_UA_MAX + PX_LOG_UP_MAX < PX_LOG_LINE,
	       "an access log line at its longest fits PX_LOG_LINE");

struct px_log_entry {
	const char *addr;	/* the client's address text; NULL or "": "-" */
	bool have_time;		/* the wall clock is known ... */
	u64 unix_s;		/* ... and this is the request's start */
	const char *method, *target, *version;	/* the request line's parts */
	int status;		/* 100..999 */
	u64 bytes;		/* body bytes sent to the client */
	const char *referer, *agent;	/* NULL: absent ("-") */
	const char *upstream;	/* NULL: none answered ("-") */
	s64 upstream_ms;	/* < 0: none ("-") */
};

/* e's line into out[PX_LOG_LINE] (no newline): its length. */
size_t px_log_format(const struct px_log_entry *e, char out[PX_LOG_LINE]);

/* s (NUL-terminated) escaped into out[room] as above, cut at room - 1
 * bytes before an escape would split: the bytes written (out
 * NUL-terminated when room > 0). */
size_t px_log_escape(const char *s, char *out, size_t room);

/* unix_s as the log's time, "07/Dec/2026:05:09:50 +0000" (26 bytes) into
 * out[27]. */
void px_log_time(u64 unix_s, char out[27]);

#endif
