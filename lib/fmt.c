/* printf-style formatting. Every conversion ends in one of three emitters
 * (integer, string, char) writing through a bounded sink that keeps counting
 * past the end of the buffer, which gives the C99 return value for free. */
#include "lib/fmt.h"
#include "lib/parse.h"

#define F_LEFT	0x01	/* '-' */
#define F_ZERO	0x02	/* '0' */
#define F_PLUS	0x04	/* '+' */
#define F_SPACE	0x08	/* ' ' */
#define F_ALT	0x10	/* '#' */

#define FMT_INT_MAX 0x7fffffff

enum fmt_len { LEN_NONE, LEN_HH, LEN_H, LEN_L, LEN_LL, LEN_Z, LEN_T, LEN_J };

struct fmt_sink {
	char *buf;
	size_t size;
	u64 pos;		/* characters produced so far, stored or not */
};

struct fmt_spec {
	unsigned flags;
	int width;		/* 0 when absent */
	int prec;		/* -1 when absent */
	enum fmt_len len;
};

static void fmt_sink_put(struct fmt_sink *s, char c)
{
	if (s->pos + 1 < s->size)
		s->buf[s->pos] = c;
	s->pos++;
}

/* n copies of c, but only the ones that fit are stored. */
static void fmt_sink_pad(struct fmt_sink *s, char c, u64 n)
{
	while (n && s->pos + 1 < s->size) {
		s->buf[s->pos++] = c;
		n--;
	}
	s->pos += n;
}

static void fmt_sink_mem(struct fmt_sink *s, const char *p, size_t n)
{
	while (n--)
		fmt_sink_put(s, *p++);
}

static u64 fmt_width_gap(const struct fmt_spec *sp, u64 len)
{
	return (u64)sp->width > len ? (u64)sp->width - len : 0;
}

/* sign: '-', '+', ' ' or 0. prefix: "", "0x" or "0X". */
static void fmt_emit_int(struct fmt_sink *s, const struct fmt_spec *sp, u64 v,
		     unsigned base, bool upper, char sign, bool force_prefix)
{
	const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	const char *prefix = "";
	char digits[24];	/* 22 octal digits cover 64 bits */
	int nd = 0, prec = sp->prec < 0 ? 1 : sp->prec;
	u64 zeros, len, gap;

	for (; v; v /= base)
		digits[nd++] = set[v % base];
	zeros = prec > nd ? (u64)(prec - nd) : 0;
	if (base == 8 && (sp->flags & F_ALT) && zeros == 0)
		zeros = 1;	/* '#' with o: the first digit must be 0 */
	if (base == 16 && (force_prefix || ((sp->flags & F_ALT) && nd)))
		prefix = upper ? "0X" : "0x";

	len = (sign ? 1 : 0) + (prefix[0] ? 2 : 0) + zeros + (u64)nd;
	gap = fmt_width_gap(sp, len);
	if (!(sp->flags & F_LEFT) && !((sp->flags & F_ZERO) && sp->prec < 0))
		fmt_sink_pad(s, ' ', gap);
	if (sign)
		fmt_sink_put(s, sign);
	fmt_sink_mem(s, prefix, prefix[0] ? 2 : 0);
	if (!(sp->flags & F_LEFT) && (sp->flags & F_ZERO) && sp->prec < 0)
		fmt_sink_pad(s, '0', gap);
	fmt_sink_pad(s, '0', zeros);
	while (nd)
		fmt_sink_put(s, digits[--nd]);
	if (sp->flags & F_LEFT)
		fmt_sink_pad(s, ' ', gap);
}

/* n bytes of str, padded to the width. */
static void fmt_emit_str(struct fmt_sink *s, const struct fmt_spec *sp, const char *str, size_t n)
{
	u64 gap = fmt_width_gap(sp, n);

	if (!(sp->flags & F_LEFT))
		fmt_sink_pad(s, ' ', gap);
	fmt_sink_mem(s, str, n);
	if (sp->flags & F_LEFT)
		fmt_sink_pad(s, ' ', gap);
}

static s64 fmt_arg_signed(va_list *ap, enum fmt_len len)
{
	switch (len) {
	case LEN_HH:	return (signed char)va_arg(*ap, int);
	case LEN_H:	return (short)va_arg(*ap, int);
	case LEN_L:	return va_arg(*ap, long);
	case LEN_LL:	return va_arg(*ap, long long);
	case LEN_Z:	return (s64)va_arg(*ap, size_t);
	case LEN_T:	return va_arg(*ap, ptrdiff_t);
	case LEN_J:	return va_arg(*ap, intmax_t);
	default:	return va_arg(*ap, int);
	}
}

static u64 fmt_arg_unsigned(va_list *ap, enum fmt_len len)
{
	switch (len) {
	case LEN_HH:	return (unsigned char)va_arg(*ap, unsigned int);
	case LEN_H:	return (unsigned short)va_arg(*ap, unsigned int);
	case LEN_L:	return va_arg(*ap, unsigned long);
	case LEN_LL:	return va_arg(*ap, unsigned long long);
	case LEN_Z:	return va_arg(*ap, size_t);
	case LEN_T:	return (u64)va_arg(*ap, ptrdiff_t);
	case LEN_J:	return va_arg(*ap, uintmax_t);
	default:	return va_arg(*ap, unsigned int);
	}
}

/* Decimal digits at *pp (none: 0), saturating at FMT_INT_MAX. */
static int fmt_parse_num(const char **pp)
{
	u64 v = 0;

	if (parse_dec(pp, FMT_INT_MAX, &v) == -ERANGE) {
		while (**pp >= '0' && **pp <= '9')
			(*pp)++;
		v = FMT_INT_MAX;
	}
	return (int)v;
}

/* Flags, width, precision and length of the directive after '%'. */
static const char *fmt_parse_spec(const char *p, struct fmt_spec *sp, va_list *ap)
{
	sp->flags = 0;
	sp->width = 0;
	sp->prec = -1;
	sp->len = LEN_NONE;

	for (;; p++) {
		if (*p == '-')
			sp->flags |= F_LEFT;
		else if (*p == '0')
			sp->flags |= F_ZERO;
		else if (*p == '+')
			sp->flags |= F_PLUS;
		else if (*p == ' ')
			sp->flags |= F_SPACE;
		else if (*p == '#')
			sp->flags |= F_ALT;
		else
			break;
	}

	if (*p == '*') {
		int w = va_arg(*ap, int);

		p++;
		if (w < 0) {
			sp->flags |= F_LEFT;
			w = w < -FMT_INT_MAX ? FMT_INT_MAX : -w;
		}
		sp->width = w;
	} else {
		sp->width = fmt_parse_num(&p);
	}

	if (*p == '.') {
		p++;
		if (*p == '*') {
			int pr = va_arg(*ap, int);

			p++;
			sp->prec = pr < 0 ? -1 : pr;	/* negative: as if omitted */
		} else {
			sp->prec = fmt_parse_num(&p);
		}
	}

	switch (*p) {
	case 'h':
		p++;
		sp->len = LEN_H;
		if (*p == 'h') {
			p++;
			sp->len = LEN_HH;
		}
		break;
	case 'l':
		p++;
		sp->len = LEN_L;
		if (*p == 'l') {
			p++;
			sp->len = LEN_LL;
		}
		break;
	case 'z':
		p++;
		sp->len = LEN_Z;
		break;
	case 't':
		p++;
		sp->len = LEN_T;
		break;
	case 'j':
		p++;
		sp->len = LEN_J;
		break;
	}
	return p;
}

static int fmt_run(struct fmt_sink *s, const char *fmt, va_list *ap)
{
	const char *p = fmt;

	while (*p) {
		const char *start = p;
		struct fmt_spec sp;
		char sign;
		s64 sv;

		if (*p != '%') {
			fmt_sink_put(s, *p++);
			continue;
		}
		p = fmt_parse_spec(p + 1, &sp, ap);
		switch (*p) {
		case 'd':
		case 'i':
			sv = fmt_arg_signed(ap, sp.len);
			sign = sv < 0 ? '-' : (sp.flags & F_PLUS) ? '+' : (sp.flags & F_SPACE) ? ' ' : 0;
			/* 0 - (u64)sv is exact for INT64_MIN too */
			fmt_emit_int(s, &sp, sv < 0 ? 0 - (u64)sv : (u64)sv, 10, false, sign, false);
			break;
		case 'u':
			fmt_emit_int(s, &sp, fmt_arg_unsigned(ap, sp.len), 10, false, 0, false);
			break;
		case 'o':
			fmt_emit_int(s, &sp, fmt_arg_unsigned(ap, sp.len), 8, false, 0, false);
			break;
		case 'x':
		case 'X':
			fmt_emit_int(s, &sp, fmt_arg_unsigned(ap, sp.len), 16, *p == 'X', 0, false);
			break;
		case 'p':
			fmt_emit_int(s, &sp, (u64)(uintptr_t)va_arg(*ap, void *), 16, false, 0, true);
			break;
		case 'c': {
			char c = (char)va_arg(*ap, int);

			fmt_emit_str(s, &sp, &c, 1);
			break;
		}
		case 's': {
			const char *str = va_arg(*ap, const char *);
			size_t n = 0;

			if (!str)
				str = "(null)";
			/* Never look past the precision: the array need not be terminated. */
			while ((sp.prec < 0 || n < (size_t)sp.prec) && str[n])
				n++;
			fmt_emit_str(s, &sp, str, n);
			break;
		}
		case '%':
			fmt_sink_put(s, '%');
			break;
		case '\0':
			/* A directive cut off by the end of the format. */
			fmt_sink_mem(s, start, (size_t)(p - start));
			continue;
		default:
			/* Unknown conversion: show the whole directive as written. */
			fmt_sink_mem(s, start, (size_t)(p - start) + 1);
			break;
		}
		p++;
	}

	if (s->size)
		s->buf[s->pos < s->size ? s->pos : s->size - 1] = '\0';
	return s->pos > FMT_INT_MAX ? -1 : (int)s->pos;
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct fmt_sink s = { .buf = buf, .size = size, .pos = 0 };
	va_list aq;
	int n;

	va_copy(aq, ap);	/* a local copy can be passed on by address */
	n = fmt_run(&s, fmt, &aq);
	va_end(aq);
	return n;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kvsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}
