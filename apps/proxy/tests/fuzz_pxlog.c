/* libFuzzer target for the proxy's lines a client's bytes flow into:
 * pxlog.c's access log line and pxhead.c's Forwarded element. The input is
 * split at NUL bytes into the request's method, target, Referer,
 * User-Agent, Host and the client's address (a missing part is NULL); its
 * first bytes also give the status, the byte count and the time. Checks,
 * on every line: it fits PX_LOG_LINE and its length is the one returned;
 * no byte below 0x20 or above 0x7e (no client can start a line); read
 * with the format's escapes (\" \\ \xHH), exactly six quotes end or start
 * a field, and the line ends "upstream_ms=..." (no field ran past its
 * own). Forwarded: no control byte, its quotes balanced once escapes are
 * taken, "for=" first. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apps/proxy/pxhead.h"
#include "apps/proxy/pxlog.h"

#define PARTS 6

static void check_line(const char *line, size_t n)
{
	unsigned quotes = 0;

	if (n >= PX_LOG_LINE || strlen(line) != n)
		abort();
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)line[i];

		if (c < 0x20 || c > 0x7e)
			abort();
		if (c == '\\') {
			if (i + 1 >= n)
				abort();
			if (line[i + 1] == 'x')
				i += 3;	/* \xHH */
			else if (line[i + 1] == '"' || line[i + 1] == '\\')
				i += 1;
			else
				abort();	/* a lone backslash: escapes must be whole */
			continue;
		}
		quotes += c == '"';
	}
	if (quotes != 6 || !strstr(line, " upstream_ms="))
		abort();
}

static void check_forwarded(const char *s, size_t n)
{
	bool in = false;

	if (strlen(s) != n || strncmp(s, "for=", 4))
		abort();
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f)
			abort();
		if (in && c == '\\') {
			i++;
			continue;
		}
		if (c == '"')
			in = !in;
	}
	if (in)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size + PARTS + 1), *part[PARTS] = { 0 }, line[PX_LOG_LINE], fwd[1024];
	struct px_log_entry e = { .version = "HTTP/1.1", .upstream = "10.0.0.1:80" };
	unsigned np = 0;
	size_t n;
	u64 x = 0;

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	for (size_t i = 0; i < 8 && i < size; i++)
		x = x << 8 | data[i];
	part[np++] = buf;
	for (size_t i = 0; i < size && np < PARTS; i++)
		if (!buf[i])
			part[np++] = buf + i + 1;
	e.method = part[0];
	e.target = part[1];
	e.referer = part[2];
	e.agent = part[3];
	e.addr = part[5];
	e.status = (int)(x % 1200);
	e.bytes = x;
	e.have_time = x & 1;
	e.unix_s = x >> 1;
	e.upstream_ms = (s64)(x >> 2) - (s64)(x & 3);
	n = px_log_format(&e, line);
	check_line(line, n);
	n = px_forwarded(part[5], x & 2, part[4], fwd, sizeof fwd);
	if (n)
		check_forwarded(fwd, n);
	free(buf);
	return 0;
}
