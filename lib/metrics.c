/*
 * Prometheus text format 0.0.4 writer and the /metrics registry (lib/metrics.h).
 *
 * Each family's samples follow its own # HELP and # TYPE lines, as the format
 * requires, so tables such as lwIP's per-protocol counters are written field
 * by field, one family per field with a proto label. Values are u64
 * integers, or fixed-point decimals (metrics_sample_fixed).
 */
#include "lib/linkset.h"
#include "lib/metrics.h"
#include "lib/outbuf.h"
#include "lib/types.h"

/* ---- the writer ---- */

void metrics_buf_init(struct metrics_buf *b, char *buf, size_t size)
{
	b->buf = buf;
	b->size = buf ? size : 0;
	b->len = 0;
	b->overflow = false;
	b->count_only = buf == NULL;
}

/* A line under construction: appended after b->len, committed by metrics_line_end(). */
struct line {
	struct metrics_buf *b;
	struct outbuf o;	/* over b's buffer, from b->len */
};

/* Label values: backslash, double quote and newline are escaped. */
static void metrics_put_escaped(struct line *l, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			outbuf_str(&l->o, "\\\\");
		else if (*s == '"')
			outbuf_str(&l->o, "\\\"");
		else if (*s == '\n')
			outbuf_str(&l->o, "\\n");
		else
			outbuf_mem(&l->o, s, 1);
	}
}

static bool metrics_line_begin(struct metrics_buf *b, struct line *l)
{
	l->b = b;
	l->o.buf = b->buf;
	l->o.size = b->size;
	l->o.len = b->len;
	return !b->overflow;
}

/* Keep the line if all of it fit; otherwise drop it and everything after. */
static void metrics_line_end(struct line *l)
{
	outbuf_mem(&l->o, "\n", 1);
	if (l->b->count_only || l->o.len <= l->b->size)
		l->b->len = l->o.len;
	else
		l->b->overflow = true;
}

void metrics_family(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help)
{
	struct line l;

	if (!metrics_line_begin(b, &l))
		return;
	outbuf_str(&l.o, "# HELP ");
	outbuf_str(&l.o, name);
	outbuf_str(&l.o, " ");
	outbuf_str(&l.o, help);
	outbuf_str(&l.o, "\n# TYPE ");
	outbuf_str(&l.o, name);
	outbuf_str(&l.o, type == METRICS_COUNTER ? " counter" : type == METRICS_GAUGE ? " gauge" : " histogram");
	metrics_line_end(&l);
}

/* One sample: name{labels} [-]magnitude. */
static void metrics_sample_sign(struct metrics_buf *b, const char *name, const char *labels, bool neg, u64 mag)
{
	struct line l;

	if (!metrics_line_begin(b, &l))
		return;
	outbuf_str(&l.o, name);
	if (labels) {
		outbuf_str(&l.o, "{");
		outbuf_str(&l.o, labels);
		outbuf_str(&l.o, "}");
	}
	outbuf_str(&l.o, neg ? " -" : " ");
	outbuf_u64(&l.o, mag);
	metrics_line_end(&l);
}

void metrics_sample(struct metrics_buf *b, const char *name, const char *labels, u64 value)
{
	metrics_sample_sign(b, name, labels, false, value);
}

void metrics_sample_s64(struct metrics_buf *b, const char *name, const char *labels, s64 value)
{
	metrics_sample_sign(b, name, labels, value < 0, value < 0 ? (u64)0 - (u64)value : (u64)value);
}

void metrics_sample_fixed(struct metrics_buf *b, const char *name, const char *labels, u64 v,
			  unsigned decimals)
{
	char frac[10];
	struct line l;
	u64 unit = 1;
	unsigned i;

	if (decimals > 9)
		decimals = 9;
	for (i = 0; i < decimals; i++)
		unit *= 10;
	if (!metrics_line_begin(b, &l))
		return;
	outbuf_str(&l.o, name);
	if (labels) {
		outbuf_str(&l.o, "{");
		outbuf_str(&l.o, labels);
		outbuf_str(&l.o, "}");
	}
	outbuf_str(&l.o, " ");
	outbuf_u64(&l.o, v / unit);
	if (decimals) {
		u64 f = v % unit;

		for (i = decimals; i-- > 0; f /= 10)
			frac[i] = (char)('0' + f % 10);
		outbuf_str(&l.o, ".");
		outbuf_mem(&l.o, frac, decimals);
	}
	metrics_line_end(&l);
}

void metrics_sample1(struct metrics_buf *b, const char *name, const char *key, const char *value,
		     u64 v)
{
	struct line l;

	if (!metrics_line_begin(b, &l))
		return;
	outbuf_str(&l.o, name);
	outbuf_str(&l.o, "{");
	outbuf_str(&l.o, key);
	outbuf_str(&l.o, "=\"");
	metrics_put_escaped(&l, value ? value : "");
	outbuf_str(&l.o, "\"} ");
	outbuf_u64(&l.o, v);
	metrics_line_end(&l);
}

void metrics_simple(struct metrics_buf *b, const char *name, enum metrics_type type,
		    const char *help, u64 value)
{
	metrics_family(b, name, type, help);
	metrics_sample(b, name, NULL, value);
}

/* ---- the registry ---- */

LINKSET_DECLARE(metrics_sources, const struct metrics_source);

void metrics_write_all(struct metrics_buf *b)
{
	const struct metrics_source *const *s;

	LINKSET_FOREACH(metrics_sources, s)
		(*s)->write(b);
}
