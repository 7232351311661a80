/* Command line parser. Each token is copied (quotes removed) into a bounded
 * local buffer, split at its first '=', and handed to the parser for the
 * option's type. Destinations are written only after a value fully checks. */
#include "kernel/cmdline.h"
#include "kernel/fmt.h"
#include "kernel/parse.h"
#include "kernel/string.h"

#define CMDLINE_SHOW "%.48s"	/* how much of a key or value a warning quotes */

struct cmdline_state {
	const struct cmdline_opt *opts;
	size_t nopts;
	cmdline_warn_fn warn;
	void *ctx;
	int nwarn;
};

__attribute__((format(printf, 2, 3)))
static void cl_warn(struct cmdline_state *st, const char *fmt, ...)
{
	char msg[192];
	va_list ap;

	st->nwarn++;
	if (!st->warn)
		return;
	va_start(ap, fmt);
	kvsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* The line is untrusted: keep control bytes out of the log. */
	for (char *p = msg; *p; p++)
		if ((u8)*p < 0x20 || (u8)*p >= 0x7f)
			*p = '?';
	st->warn(st->ctx, msg);
}

static bool cl_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static size_t cl_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

/* Decimal digits only: -EINVAL for anything else or nothing, -ERANGE past 64 bits. */
/* The whole of s, decimal: -EINVAL for junk anywhere (before any range
 * check), -ERANGE above UINT64_MAX. */
static int cl_parse_dec(const char *s, u64 *out)
{
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	return parse_dec(&s, UINT64_MAX, out);
}

static int cl_hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex digits with an optional 0x/0X: -EINVAL or -ERANGE as above. */
static int cl_parse_hex(const char *s, u64 *out)
{
	u64 v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (cl_hexval(*p) < 0)
			return -EINVAL;
	for (; *s; s++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | (u64)cl_hexval(*s);
	}
	*out = v;
	return 0;
}

static void cl_set_number(struct cmdline_state *st, const struct cmdline_opt *o, const char *val)
{
	bool hex = o->type == CMDLINE_HEX;
	const char *what = hex ? "a hex number" : "a decimal number";
	u64 v;
	int err;

	err = hex ? cl_parse_hex(val, &v) : cl_parse_dec(val, &v);
	if (err == -EINVAL) {
		cl_warn(st, "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %s, keeping default",
			o->key, val, what);
		return;
	}
	if (err == -ERANGE) {
		cl_warn(st, "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %s that fits in 64 bits, keeping default",
			o->key, val, what);
		return;
	}
	if (v < o->min || (o->max && v > o->max)) {
		if (o->max)
			cl_warn(st, hex ? "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected 0x%llx..0x%llx, keeping default"
					: "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %llu..%llu, keeping default",
				o->key, val, (unsigned long long)o->min, (unsigned long long)o->max);
		else
			cl_warn(st, hex ? "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected at least 0x%llx, keeping default"
					: "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected at least %llu, keeping default",
				o->key, val, (unsigned long long)o->min);
		return;
	}
	if (o->dst)
		*(u64 *)o->dst = v;
}

static void cl_set_bool(struct cmdline_state *st, const struct cmdline_opt *o, const char *val)
{
	static const char *const yes[] = { "1", "on", "yes", "true" };
	static const char *const no[] = { "0", "off", "no", "false" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcmp(val, yes[i]) == 0 || strcmp(val, no[i]) == 0) {
			if (o->dst)
				*(bool *)o->dst = strcmp(val, yes[i]) == 0;
			return;
		}
	}
	cl_warn(st, "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected 1|0|on|off|yes|no|true|false, keeping default",
		o->key, val);
}

static void cl_set_enum(struct cmdline_state *st, const struct cmdline_opt *o, const char *val)
{
	char list[96];
	size_t len = 0;
	int i;

	for (i = 0; o->choices && o->choices[i]; i++) {
		if (strcmp(val, o->choices[i]) == 0) {
			if (o->dst)
				*(int *)o->dst = i;
			return;
		}
	}
	/* "a|b|c" for the message, cut with "..." if the list is long. */
	list[0] = '\0';
	for (i = 0; o->choices && o->choices[i] && len < sizeof list - 1; i++) {
		int n = ksnprintf(list + len, sizeof list - len, "%s%s", i ? "|" : "", o->choices[i]);

		len = n < 0 || (size_t)n >= sizeof list - len ? sizeof list - 1 : len + (size_t)n;
	}
	if (len == sizeof list - 1)
		ksnprintf(list + sizeof list - 4, 4, "...");
	cl_warn(st, "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %s, keeping default",
		o->key, val, list[0] ? list : "(no choices)");
}

static void cl_set_str(struct cmdline_state *st, const struct cmdline_opt *o, const char *val)
{
	size_t n = cl_strlen(val);
	char *dst = o->dst;

	if (!dst || n >= o->dst_size) {
		cl_warn(st, "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": expected at most %zu characters, keeping default",
			o->key, val, o->dst_size ? o->dst_size - 1 : 0);
		return;
	}
	for (size_t i = 0; i <= n; i++)
		dst[i] = val[i];
}

static void cl_set_custom(struct cmdline_state *st, const struct cmdline_opt *o, const char *val)
{
	char why[64];

	why[0] = '\0';
	if (o->parse && o->parse(val, o->dst, why, sizeof why) == 0)
		return;
	why[sizeof why - 1] = '\0';	/* whatever the callback did */
	cl_warn(st, "cmdline: " CMDLINE_SHOW "=" CMDLINE_SHOW ": %s, keeping default",
		o->key, val, why[0] ? why : "invalid value");
}

static void cl_token(struct cmdline_state *st, char *tok)
{
	const struct cmdline_opt *o = NULL;
	char *val = NULL;

	for (char *p = tok; *p; p++) {
		if (*p == '=') {
			*p = '\0';
			val = p + 1;
			break;
		}
	}
	if (!tok[0]) {
		cl_warn(st, "cmdline: '=" CMDLINE_SHOW "' has no key, ignored", val);
		return;
	}
	for (size_t i = 0; i < st->nopts; i++) {
		if (st->opts[i].key && strcmp(tok, st->opts[i].key) == 0) {
			o = &st->opts[i];
			break;
		}
	}

	if (!val) {
		if (o && o->type == CMDLINE_BOOL) {
			if (o->dst)
				*(bool *)o->dst = true;
			return;
		}
		cl_warn(st, "cmdline: '" CMDLINE_SHOW "' is not key=value", tok);
		return;
	}
	if (!o) {
		cl_warn(st, "cmdline: unknown key '" CMDLINE_SHOW "' ignored", tok);
		return;
	}

	switch (o->type) {
	case CMDLINE_BOOL:
		cl_set_bool(st, o, val);
		break;
	case CMDLINE_UINT:
	case CMDLINE_HEX:
		cl_set_number(st, o, val);
		break;
	case CMDLINE_ENUM:
		cl_set_enum(st, o, val);
		break;
	case CMDLINE_STR:
		cl_set_str(st, o, val);
		break;
	case CMDLINE_CUSTOM:
		cl_set_custom(st, o, val);
		break;
	default:
		cl_warn(st, "cmdline: " CMDLINE_SHOW ": option has a bad type, ignored", tok);
		break;
	}
}

int cmdline_parse(const char *line, const struct cmdline_opt *opts, size_t nopts, cmdline_warn_fn warn, void *ctx)
{
	struct cmdline_state st = { .opts = opts, .nopts = nopts, .warn = warn, .ctx = ctx, .nwarn = 0 };
	char tok[CMDLINE_MAX];
	size_t n = 0, i = 0;
	bool cut;

	if (!line)
		return 0;
	while (n < CMDLINE_MAX && line[n])
		n++;
	/* No NUL in line[0..CMDLINE_MAX-1]: parse CMDLINE_MAX - 1 characters,
	 * and peek at line[n] only to see whether the last token was cut. */
	cut = n == CMDLINE_MAX;
	if (cut) {
		n = CMDLINE_MAX - 1;
		cl_warn(&st, "cmdline: longer than %d characters, ignoring the rest", CMDLINE_MAX - 1);
	}

	for (;;) {
		bool quoted = false;
		size_t len = 0;

		while (i < n && cl_space(line[i]))
			i++;
		if (i == n)
			break;
		while (i < n && (quoted || !cl_space(line[i]))) {
			if (line[i] == '"')
				quoted = !quoted;
			else
				tok[len++] = line[i];	/* len <= i < n < CMDLINE_MAX */
			i++;
		}
		tok[len] = '\0';
		if (i == n && cut && (quoted || !cl_space(line[n])))
			break;	/* the limit fell inside this token: drop it */
		if (quoted)
			cl_warn(&st, "cmdline: unterminated quote in '" CMDLINE_SHOW "', taking the rest", tok);
		cl_token(&st, tok);
	}
	return st.nwarn;
}

/* An address part: 1 to 3 digits, at most max, no leading zero (often
 * meant as octal). */
static int cl_dec_part(const char **sp, u32 max, u32 *out)
{
	const char *s = *sp;
	u64 v;

	if (parse_dec(&s, max, &v) || s - *sp > 3 || (s - *sp > 1 && **sp == '0'))
		return -EINVAL;
	*sp = s;
	*out = (u32)v;
	return 0;
}

int cmdline_parse_ipv4(const char *s, u32 *addr, int *prefix)
{
	u32 a = 0, part, len;
	int i, pfx = -1;

	if (!s)
		return -EINVAL;
	for (i = 0; i < 4; i++) {
		if (i && *s++ != '.')
			return -EINVAL;
		if (cl_dec_part(&s, 255, &part))
			return -EINVAL;
		a = a << 8 | part;
	}
	if (prefix && *s == '/') {
		s++;
		if (cl_dec_part(&s, 32, &len))
			return -EINVAL;
		pfx = (int)len;
	}
	if (*s)
		return -EINVAL;
	*addr = a;
	if (prefix)
		*prefix = pfx;
	return 0;
}
