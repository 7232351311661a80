/* The cloud metadata client's HTTP/1.1 messages (runtime/metadata.c): the
 * request it sends and an incremental reader of the response, into a
 * buffer the caller gives. Pure: no allocation, no lwIP, every length
 * checked; a response is untrusted input (the fuzz target fuzz_mdhttp
 * feeds it arbitrary bytes in arbitrary pieces). */
#ifndef VIREO_NET_MDHTTP_H
#define VIREO_NET_MDHTTP_H

#include "lib/types.h"

#define MDHTTP_HEAD_MAX 4096	/* status line and headers, with the blank line */
#define MDHTTP_BODY_MAX 16384	/* as EFI/vireo/vireo.cfg's bound */
#define MDHTTP_BUF (MDHTTP_HEAD_MAX + MDHTTP_BODY_MAX)	/* what the reader needs */
#define MDHTTP_TOKEN_MAX 512	/* an IMDSv2 token's length */

/* mdhttp_feed / mdhttp_eof results: MORE, DONE, or a negative error. */
enum {
	MDHTTP_MORE = 0,
	MDHTTP_DONE = 1,
	MDHTTP_E_HEAD_BIG = -1,		/* no end of headers within MDHTTP_HEAD_MAX */
	MDHTTP_E_BODY_BIG = -2,		/* more than MDHTTP_BODY_MAX bytes of body (or announced) */
	MDHTTP_E_STATUS = -3,		/* not "HTTP/1.x NNN ..." */
	MDHTTP_E_HEADER = -4,		/* a header line that is not "name: value" */
	MDHTTP_E_LENGTH = -5,		/* a bad or conflicting Content-Length */
	MDHTTP_E_ENCODING = -6,		/* a Transfer-Encoding (chunked is not read) */
	MDHTTP_E_TRUNCATED = -7,	/* closed before the headers or the announced body ended */
};

struct mdhttp {
	char *buf;		/* the caller's, cap bytes */
	size_t cap, len;
	size_t scan;		/* where the search for the blank line resumes */
	size_t head_end;	/* past the blank line; 0 while the head is incomplete */
	int status;		/* 100..999, once the head is in */
	bool have_len;
	size_t content_len;
	int result;		/* sticky: once DONE or an error, feed changes nothing */
};

/* A reader over buf[cap] (cap at most MDHTTP_BUF is used). */
void mdhttp_init(struct mdhttp *h, char *buf, size_t cap);

/* The next bytes of the response: MDHTTP_MORE, MDHTTP_DONE (the head is in
 * and the Content-Length's body too; bytes past it are ignored) or an
 * error, which stays. */
int mdhttp_feed(struct mdhttp *h, const void *data, size_t len);

/* The peer closed: MDHTTP_DONE if the head is in and the body complete (all
 * of it up to the close when no length was given), else an error. */
int mdhttp_eof(struct mdhttp *h);

/* After MDHTTP_DONE: the body, inside the reader's buffer. */
void mdhttp_body(const struct mdhttp *h, const char **body, size_t *len);

/* A short reason for a result ("response head over 4096 bytes", ...). */
const char *mdhttp_strerror(int result);

/* "METHOD path HTTP/1.1", Host, Connection: close, then hdr1 and hdr2 if
 * not NULL (each one "Name: value" line without its CRLF), into out[size].
 * Returns the length, or 0 if it does not fit or a piece holds CR or LF. */
size_t mdhttp_request(char *out, size_t size, const char *method, const char *path, const char *host,
		      const char *hdr1, const char *hdr2);

/* An IMDSv2 token we can send back in a header: 1..MDHTTP_TOKEN_MAX
 * bytes of printable ASCII (no space at either end). */
bool mdhttp_token_ok(const char *tok, size_t len);

#endif
