/* base64url (b64url.h). */
#include "net/acme/b64url.h"
#include "lib/parse.h"

static const char b64url_abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int b64url_encode(const void *in, size_t n, char *out, size_t cap, size_t *outlen)
{
	const u8 *p = in;
	size_t o = 0;

	if (n > ((size_t)-1 - 2) / 4 || cap <= B64URL_LEN(n))
		return -1;
	for (size_t i = 0; i < n; i += 3) {
		u32 v = (u32)p[i] << 16 | (i + 1 < n ? (u32)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);

		out[o++] = b64url_abc[v >> 18];
		out[o++] = b64url_abc[v >> 12 & 63];
		if (i + 1 < n)
			out[o++] = b64url_abc[v >> 6 & 63];
		if (i + 2 < n)
			out[o++] = b64url_abc[v & 63];
	}
	out[o] = '\0';
	if (outlen)
		*outlen = o;
	return 0;
}

int b64url_decode(const char *in, size_t n, u8 *out, size_t cap, size_t *outlen)
{
	size_t o = 0;
	u32 acc = 0;
	unsigned bits = 0;

	if (n % 4 == 1 || n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) > cap)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = parse_b64digit(in[i], '-', '_');

		if (v < 0)
			return -1;
		acc = acc << 6 | (u32)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (u8)(acc >> bits);
			acc &= (1u << bits) - 1;
		}
	}
	if (acc != 0)	/* the unused low bits of the last character */
		return -1;
	if (outlen)
		*outlen = o;
	return 0;
}
