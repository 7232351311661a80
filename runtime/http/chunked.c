/*
 * The chunked transfer coding's decoder (runtime/http/chunked.h): a byte
 * state machine over the framing, spans over the payload.
 */
#include "lib/parse.h"
#include "runtime/http/chunked.h"
#include "runtime/http/token.h"

enum {
	CH_SIZE0 = 0,	/* a size line's first byte: a hex digit */
	CH_SIZE,	/* more digits, BWS, ';' or CR */
	CH_BWS,		/* whitespace after the digits: more, or ';' */
	CH_EXT,		/* extensions: any field byte up to CR */
	CH_SIZE_LF,	/* the LF of the size line */
	CH_DATA,	/* payload: d->left bytes */
	CH_DATA_CR,	/* the CRLF after the payload */
	CH_DATA_LF,
	CH_TR0,		/* a trailer line's first byte, or the CR of the end */
	CH_TR_NAME,	/* a field name up to ':' */
	CH_TR_VALUE,	/* its value up to CR */
	CH_TR_LF,
	CH_END_LF,	/* the LF of the empty line that ends the body */
	CH_END,
	CH_ERROR,
};

void chunked_init(struct chunked *d)
{
	d->left = 0;
	d->line = 0;
	d->trailer = 0;
	d->state = CH_SIZE0;
}

void chunked_take(struct chunked *d, size_t n)
{
	if (d->state != CH_DATA || n > d->left) {
		d->state = CH_ERROR;	/* the caller took what it was not given */
		return;
	}
	d->left -= n;
	if (!d->left)
		d->state = CH_DATA_CR;
}

/* One framing byte c in state d->state: the next state. */
static u8 chunked_byte(struct chunked *d, u8 c)
{
	int h;

	switch (d->state) {
	case CH_SIZE0:
	case CH_SIZE:
		if (c == '\r' && d->state == CH_SIZE)
			return CH_SIZE_LF;	/* the line's bytes are counted without CRLF */
		if (++d->line > CHUNKED_LINE_MAX)
			return CH_ERROR;
		h = parse_hexdigit((char)c);
		if (h >= 0) {
			if (d->left >> 56)
				return CH_ERROR;	/* a 16th significant digit: 2^60 and up */
			d->left = d->left << 4 | (u64)h;
			return CH_SIZE;
		}
		if (d->state == CH_SIZE0)
			return CH_ERROR;
		if (c == ';')
			return CH_EXT;
		return http_is_ows(c) ? CH_BWS : CH_ERROR;
	case CH_BWS:
		if (++d->line > CHUNKED_LINE_MAX)
			return CH_ERROR;
		if (c == ';')
			return CH_EXT;
		return http_is_ows(c) ? CH_BWS : CH_ERROR;
	case CH_EXT:
		if (c == '\r')
			return CH_SIZE_LF;
		if (++d->line > CHUNKED_LINE_MAX)
			return CH_ERROR;
		return http_is_field_byte(c) ? CH_EXT : CH_ERROR;
	case CH_SIZE_LF:
		if (c != '\n')
			return CH_ERROR;
		d->line = 0;
		return d->left ? CH_DATA : CH_TR0;
	case CH_DATA_CR:
		return c == '\r' ? CH_DATA_LF : CH_ERROR;
	case CH_DATA_LF:
		return c == '\n' ? CH_SIZE0 : CH_ERROR;
	case CH_TR0:
	case CH_TR_NAME:
	case CH_TR_VALUE:
		if (++d->trailer > CHUNKED_TRAILER_MAX)
			return CH_ERROR;
		if (d->state == CH_TR0 && c == '\r')
			return CH_END_LF;
		if (d->state == CH_TR_VALUE)
			return c == '\r' ? CH_TR_LF : http_is_field_byte(c) ? CH_TR_VALUE : CH_ERROR;
		if (c == ':' && d->state == CH_TR_NAME)
			return CH_TR_VALUE;
		return http_is_tchar(c) ? CH_TR_NAME : CH_ERROR;	/* obs-fold too */
	case CH_TR_LF:
		if (++d->trailer > CHUNKED_TRAILER_MAX)
			return CH_ERROR;
		return c == '\n' ? CH_TR0 : CH_ERROR;
	case CH_END_LF:
		return c == '\n' ? CH_END : CH_ERROR;
	}
	return CH_ERROR;
}

int chunked_step(struct chunked *d, const u8 *data, size_t len, size_t *used, size_t *avail)
{
	size_t i;

	*avail = 0;
	for (i = 0; i < len; i++) {
		if (d->state == CH_DATA || d->state == CH_END || d->state == CH_ERROR)
			break;
		d->state = chunked_byte(d, data[i]);
	}
	*used = i;
	switch (d->state) {
	case CH_DATA:
		if (i == len)
			return CHUNKED_MORE;
		*avail = len - i < d->left ? len - i : (size_t)d->left;
		return CHUNKED_DATA;
	case CH_END:
		return CHUNKED_END;
	case CH_ERROR:
		return CHUNKED_ERROR;
	}
	return CHUNKED_MORE;
}
