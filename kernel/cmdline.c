/* Command line parser. Each token is copied (quotes removed) into a bounded
 * local buffer, split at its first '=', and handed to the parser for the
 * option's type. Destinations are written only after a value fully checks. */
#include "kernel/cmdline.h"
#include "lib/fmt.h"
#include "lib/parse.h"
#include "lib/string.h"

#define CMDLINE_SHOW "%.48s"	/* how much of a key or value a warning quotes */

struct cmdline_state {
	const struct cmdline_opt *opts;		/* an array, or ... */
	const struct cmdline_opt *const *set;	/* ... pointers (NULL entries skipped) */
	size_t nopts;
	cmdline_warn_fn warn;
	void *ctx;
	const struct cmdline_source *src;	/* NULL: "cmdline", no hooks */
	const char *where;	/* every warning's prefix: the source's name, or "<name> line N" */
	int nwarn;
	int shown;		/* warnings handed to warn (src->max_warn bounds them) */
};

static void cmdline_emit(struct cmdline_state *st, char *msg)
{
	/* The line is untrusted: keep control bytes out of the log. */
	for (char *p = msg; *p; p++)
		if ((u8)*p < 0x20 || (u8)*p >= 0x7f)
			*p = '?';
	st->warn(st->ctx, msg);
}

static void cmdline_vwarn(struct cmdline_state *st, const struct cmdline_opt *o, const char *fmt, va_list ap)
{
	char msg[224];
	size_t len;
	int max = st->src ? st->src->max_warn : 0;

	st->nwarn++;
	if (!st->warn || (max && st->shown >= max))
		return;
	st->shown++;
	ksnprintf(msg, sizeof msg, "%s: ", st->where);
	len = strlen(msg);
	kvsnprintf(msg + len, sizeof msg - len, fmt, ap);
	if (o) {
		/* What the key holds now: its default, or what an earlier
		 * source gave it (the source's kept hook says which). */
		char kept[96];

		kept[0] = '\0';
		if (!st->src || !st->src->kept || st->src->kept(st->src->ctx, o, kept, sizeof kept) <= 0)
			ksnprintf(kept, sizeof kept, "default%s%.48s", o->def ? " " : "", o->def ? o->def : "");
		kept[sizeof kept - 1] = '\0';
		len = strlen(msg);
		ksnprintf(msg + len, sizeof msg - len, ", keeping %s", kept);
	}
	cmdline_emit(st, msg);
}

__attribute__((format(printf, 2, 3)))
static void cmdline_warn(struct cmdline_state *st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cmdline_vwarn(st, NULL, fmt, ap);
	va_end(ap);
}

/* A warning about key o's value: ends ", keeping <what o holds now>". */
__attribute__((format(printf, 3, 4)))
static void cmdline_warn_key(struct cmdline_state *st, const struct cmdline_opt *o, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	cmdline_vwarn(st, o, fmt, ap);
	va_end(ap);
}

/* After the last token of a source: one line for the warnings not shown. */
static void cmdline_warn_summary(struct cmdline_state *st)
{
	char msg[96];

	if (!st->warn || st->nwarn <= st->shown)
		return;
	ksnprintf(msg, sizeof msg, "%s: %d more warning%s not shown", st->src ? st->src->name : "cmdline",
		  st->nwarn - st->shown, st->nwarn - st->shown == 1 ? "" : "s");
	cmdline_emit(st, msg);
}

static bool cmdline_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}


/* Decimal digits only: -EINVAL for anything else or nothing, -ERANGE past 64 bits. */
/* The whole of s, decimal: -EINVAL for junk anywhere (before any range
 * check), -ERANGE above UINT64_MAX. */
static int cmdline_parse_dec(const char *s, u64 *out)
{
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	return parse_dec(&s, UINT64_MAX, out);
}

/* Hex digits with an optional 0x/0X: -EINVAL or -ERANGE as above. */
static int cmdline_parse_hex(const char *s, u64 *out)
{
	u64 v = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (parse_hexdigit(*p) < 0)
			return -EINVAL;
	for (; *s; s++) {
		if (v >> 60)
			return -ERANGE;
		v = v << 4 | (u64)parse_hexdigit(*s);
	}
	*out = v;
	return 0;
}

/* A parsed value before it is stored: what dst would receive. */
union cl_val {
	bool b;		/* BOOL */
	u64 u;		/* UINT, HEX */
	int e;		/* ENUM: index into choices */
	const char *s;	/* STR */
};

static int cmdline_get_number(struct cmdline_state *st, const struct cmdline_opt *o, const char *val, u64 *out)
{
	bool hex = o->type == CMDLINE_HEX;
	const char *what = hex ? "a hex number" : "a decimal number";
	u64 v;
	int err;

	err = hex ? cmdline_parse_hex(val, &v) : cmdline_parse_dec(val, &v);
	if (err == -EINVAL) {
		cmdline_warn_key(st, o, CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %s",
			o->key, val, what);
		return -EINVAL;
	}
	if (err == -ERANGE) {
		cmdline_warn_key(st, o, CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %s that fits in 64 bits",
			o->key, val, what);
		return -EINVAL;
	}
	if (v < o->min || (o->max && v > o->max)) {
		if (o->max)
			cmdline_warn_key(st, o, hex ? CMDLINE_SHOW "=" CMDLINE_SHOW ": expected 0x%llx..0x%llx"
					: CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %llu..%llu",
				o->key, val, (unsigned long long)o->min, (unsigned long long)o->max);
		else
			cmdline_warn_key(st, o, hex ? CMDLINE_SHOW "=" CMDLINE_SHOW ": expected at least 0x%llx"
					: CMDLINE_SHOW "=" CMDLINE_SHOW ": expected at least %llu",
				o->key, val, (unsigned long long)o->min);
		return -EINVAL;
	}
	*out = v;
	return 0;
}

static int cmdline_get_bool(struct cmdline_state *st, const struct cmdline_opt *o, const char *val, bool *out)
{
	static const char *const yes[] = { "1", "on", "yes", "true" };
	static const char *const no[] = { "0", "off", "no", "false" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcmp(val, yes[i]) == 0 || strcmp(val, no[i]) == 0) {
			*out = strcmp(val, yes[i]) == 0;
			return 0;
		}
	}
	cmdline_warn_key(st, o, CMDLINE_SHOW "=" CMDLINE_SHOW ": expected 1|0|on|off|yes|no|true|false",
		o->key, val);
	return -EINVAL;
}

/* "a<sep>b<sep>c" into buf[size], cut with "..." when it does not fit. */
static void cmdline_join_choices(const struct cmdline_opt *o, const char *sep, char *buf, size_t size)
{
	size_t len = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; o->choices && o->choices[i] && len < size - 1; i++) {
		int n = ksnprintf(buf + len, size - len, "%s%s", i ? sep : "", o->choices[i]);

		len = n < 0 || (size_t)n >= size - len ? size - 1 : len + (size_t)n;
	}
	if (len == size - 1 && size >= 4)
		ksnprintf(buf + size - 4, 4, "...");
}

static int cmdline_get_enum(struct cmdline_state *st, const struct cmdline_opt *o, const char *val, int *out)
{
	char list[96];
	int i;

	for (i = 0; o->choices && o->choices[i]; i++) {
		if (strcmp(val, o->choices[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	cmdline_join_choices(o, "|", list, sizeof list);
	cmdline_warn_key(st, o, CMDLINE_SHOW "=" CMDLINE_SHOW ": expected %s",
		o->key, val, list[0] ? list : "(no choices)");
	return -EINVAL;
}

static int cmdline_get_str(struct cmdline_state *st, const struct cmdline_opt *o, const char *val, const char **out)
{
	if (!o->dst || strlen(val) >= o->dst_size) {
		cmdline_warn_key(st, o, CMDLINE_SHOW "=" CMDLINE_SHOW ": expected at most %zu characters",
			o->key, val, o->dst_size ? o->dst_size - 1 : 0);
		return -EINVAL;
	}
	*out = val;
	return 0;
}

/* Parses val as o's type (not CUSTOM) and runs o's validator: 0 with *v
 * set, or -EINVAL after one warning. */
static int cmdline_get(struct cmdline_state *st, const struct cmdline_opt *o, const char *val, union cl_val *v)
{
	char why[64];
	const void *arg;
	int err;

	switch (o->type) {
	case CMDLINE_BOOL:
		err = cmdline_get_bool(st, o, val, &v->b);
		arg = &v->b;
		break;
	case CMDLINE_UINT:
	case CMDLINE_HEX:
		err = cmdline_get_number(st, o, val, &v->u);
		arg = &v->u;
		break;
	case CMDLINE_ENUM:
		err = cmdline_get_enum(st, o, val, &v->e);
		arg = &v->e;
		break;
	case CMDLINE_STR:
		err = cmdline_get_str(st, o, val, &v->s);
		arg = v->s;
		break;
	default:
		cmdline_warn(st, CMDLINE_SHOW ": option has a bad type, ignored", o->key);
		return -EINVAL;
	}
	if (err || !o->validate)
		return err;
	why[0] = '\0';
	if (o->validate(arg, why, sizeof why) == 0)
		return 0;
	why[sizeof why - 1] = '\0';	/* whatever the callback did */
	cmdline_warn_key(st, o, CMDLINE_SHOW "=" CMDLINE_SHOW ": %s",
		o->key, val, why[0] ? why : "invalid value");
	return -EINVAL;
}

static void cmdline_store(const struct cmdline_opt *o, const union cl_val *v)
{
	if (!o->dst)
		return;
	switch (o->type) {
	case CMDLINE_BOOL:
		*(bool *)o->dst = v->b;
		break;
	case CMDLINE_UINT:
	case CMDLINE_HEX:
		*(u64 *)o->dst = v->u;
		break;
	case CMDLINE_ENUM:
		*(int *)o->dst = v->e;
		break;
	case CMDLINE_STR:
		for (size_t i = 0; i <= strlen(v->s); i++)	/* fits: cmdline_get_str */
			((char *)o->dst)[i] = v->s[i];
		break;
	default:
		break;
	}
}

/* o took val: the source's set hook hears of it. */
static void cmdline_stored(struct cmdline_state *st, const struct cmdline_opt *o, const char *val)
{
	if (st->src && st->src->set)
		st->src->set(st->src->ctx, st->where, o, val);
}

static void cmdline_set_custom(struct cmdline_state *st, const struct cmdline_opt *o, const char *val)
{
	char why[64];

	why[0] = '\0';
	if (o->parse && o->parse(val, o->dst, why, sizeof why) == 0) {
		cmdline_stored(st, o, val);
		return;
	}
	why[sizeof why - 1] = '\0';	/* whatever the callback did */
	cmdline_warn_key(st, o, CMDLINE_SHOW "=" CMDLINE_SHOW ": %s",
		o->key, val, why[0] ? why : "invalid value");
}

static const struct cmdline_opt *cmdline_find(const struct cmdline_state *st, const char *key)
{
	for (size_t i = 0; i < st->nopts; i++) {
		const struct cmdline_opt *o = st->set ? st->set[i] : &st->opts[i];

		if (o && o->key && strcmp(key, o->key) == 0)
			return o;
	}
	return NULL;
}

static void cmdline_token(struct cmdline_state *st, char *tok)
{
	const struct cmdline_opt *o;
	union cl_val v;
	char *val = NULL;

	for (char *p = tok; *p; p++) {
		if (*p == '=') {
			*p = '\0';
			val = p + 1;
			break;
		}
	}
	if (!tok[0]) {
		cmdline_warn(st, "'=" CMDLINE_SHOW "' has no key, ignored", val);
		return;
	}
	o = cmdline_find(st, tok);

	if (!val) {
		if (o && o->type == CMDLINE_BOOL) {
			if (cmdline_get(st, o, "1", &v) == 0) {
				cmdline_store(o, &v);
				cmdline_stored(st, o, "1");
			}
			return;
		}
		cmdline_warn(st, "'" CMDLINE_SHOW "' is not key=value", tok);
		return;
	}
	if (!o) {
		cmdline_warn(st, "unknown key '" CMDLINE_SHOW "' ignored", tok);
		return;
	}

	if (o->type == CMDLINE_CUSTOM) {
		cmdline_set_custom(st, o, val);
		return;
	}
	if (cmdline_get(st, o, val, &v) == 0) {
		cmdline_store(o, &v);
		cmdline_stored(st, o, val);
	}
}

static int cmdline_parse_line(struct cmdline_state *st, const char *line);

/* The token at t (up to a blank outside quotes) is "<secret key>=...". */
static bool cmdline_secret_token(const char *t, const struct cmdline_opt *const *set, size_t n)
{
	char key[64];
	size_t k = 0;
	bool quoted = false;

	for (; *t && (quoted || !cmdline_space(*t)) && *t != '='; t++) {
		if (*t == '"')
			quoted = !quoted;
		else if (k < sizeof key - 1)
			key[k++] = *t;
		else
			return false;
	}
	key[k] = '\0';
	if (*t != '=')
		return false;
	for (size_t i = 0; i < n; i++)
		if (set[i] && set[i]->secret && set[i]->key && strcmp(set[i]->key, key) == 0)
			return true;
	return false;
}

size_t cmdline_redact(const char *line, const struct cmdline_opt *const *set, size_t n, char *out, size_t size)
{
	size_t o = 0;

#define CMDLINE_PUT(c) do { if (o + 1 < size) out[o] = (c); o++; } while (0)
	while (*line) {
		bool quoted = false;

		while (cmdline_space(*line))
			CMDLINE_PUT(*line++);
		if (!*line)
			break;
		if (cmdline_secret_token(line, set, n)) {
			for (; *line != '='; line++) {	/* the key, without its quotes */
				if (*line == '"')
					quoted = !quoted;
				else
					CMDLINE_PUT(*line);
			}
			for (const char *r = "=..."; *r; r++)
				CMDLINE_PUT(*r);
			for (; *line && (quoted || !cmdline_space(*line)); line++)
				if (*line == '"')
					quoted = !quoted;
			continue;
		}
		for (; *line && (quoted || !cmdline_space(*line)); line++) {
			if (*line == '"')
				quoted = !quoted;
			CMDLINE_PUT(*line);
		}
	}
#undef CMDLINE_PUT
	if (size)
		out[MIN(o, size - 1)] = '\0';
	return o;
}

int cmdline_parse(const char *line, const struct cmdline_opt *opts, size_t nopts, cmdline_warn_fn warn, void *ctx)
{
	struct cmdline_state st = { .opts = opts, .nopts = nopts, .warn = warn, .ctx = ctx, .where = "cmdline" };

	return cmdline_parse_line(&st, line);
}

int cmdline_parse_set(const char *line, const struct cmdline_opt *const *set, size_t n, cmdline_warn_fn warn,
		      void *ctx)
{
	struct cmdline_state st = { .set = set, .nopts = n, .warn = warn, .ctx = ctx, .where = "cmdline" };

	return cmdline_parse_line(&st, line);
}

int cmdline_parse_src(const char *line, const struct cmdline_opt *const *set, size_t n,
		      const struct cmdline_source *src)
{
	struct cmdline_state st = { .set = set, .nopts = n, .warn = src->warn, .ctx = src->ctx, .src = src,
				    .where = src->name };
	cmdline_parse_line(&st, line);
	cmdline_warn_summary(&st);
	return st.nwarn;
}

bool cmdline_default_ok(const struct cmdline_opt *o)
{
	struct cmdline_state st = { .nopts = 0, .where = "" };	/* no warn: failures are only counted */
	union cl_val v;

	if (o->type == CMDLINE_CUSTOM || !o->def || o->def_prose)
		return true;
	if (!o->dst || cmdline_get(&st, o, o->def, &v))
		return false;
	switch (o->type) {
	case CMDLINE_BOOL:
		return *(const bool *)o->dst == v.b;
	case CMDLINE_UINT:
	case CMDLINE_HEX:
		return *(const u64 *)o->dst == v.u;
	case CMDLINE_ENUM:
		return *(const int *)o->dst == v.e;
	case CMDLINE_STR:
		return strcmp(o->dst, v.s) == 0;
	default:
		return false;
	}
}

void cmdline_describe_values(const struct cmdline_opt *o, const char *sep, char *buf, size_t size)
{
	if (!size)
		return;
	if (o->values) {
		ksnprintf(buf, size, "%s", o->values);
		return;
	}
	switch (o->type) {
	case CMDLINE_BOOL:
		ksnprintf(buf, size, "bool");
		break;
	case CMDLINE_UINT:
		if (o->max)
			ksnprintf(buf, size, "%llu-%llu", (unsigned long long)o->min, (unsigned long long)o->max);
		else
			ksnprintf(buf, size, "at least %llu", (unsigned long long)o->min);
		break;
	case CMDLINE_HEX:
		ksnprintf(buf, size, "hex number");
		break;
	case CMDLINE_ENUM:
		cmdline_join_choices(o, sep, buf, size);
		break;
	case CMDLINE_STR:
		ksnprintf(buf, size, "text, at most %zu characters", o->dst_size ? o->dst_size - 1 : 0);
		break;
	default:
		ksnprintf(buf, size, "see the help");
		break;
	}
}

static int cmdline_parse_line(struct cmdline_state *st_, const char *line)
{
	struct cmdline_state st = *st_;
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
		cmdline_warn(&st, "longer than %d characters, ignoring the rest", CMDLINE_MAX - 1);
	}

	for (;;) {
		bool quoted = false;
		size_t len = 0;

		while (i < n && cmdline_space(line[i]))
			i++;
		if (i == n)
			break;
		while (i < n && (quoted || !cmdline_space(line[i]))) {
			if (line[i] == '"')
				quoted = !quoted;
			else
				tok[len++] = line[i];	/* len <= i < n < CMDLINE_MAX */
			i++;
		}
		tok[len] = '\0';
		if (i == n && cut && (quoted || !cmdline_space(line[n])))
			break;	/* the limit fell inside this token: drop it */
		if (quoted)
			cmdline_warn(&st, "unterminated quote in '" CMDLINE_SHOW "', taking the rest", tok);
		cmdline_token(&st, tok);
	}
	*st_ = st;
	return st.nwarn;
}

static bool cmdline_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* One line of a file, line[0..len) (no '\n'), already checked for length:
 * blank, a comment, or "key = value" handed to cmdline_token as key=value. */
static void cmdline_file_line(struct cmdline_state *st, const char *line, size_t len, char *tok)
{
	size_t a = 0, b = len, eq, kend, vbeg, o = 0;

	for (size_t i = 0; i < len; i++) {
		u8 c = (u8)line[i];

		if (c == 0) {
			cmdline_warn(st, "a NUL byte in the line, ignored");
			return;
		}
		if ((c < 0x20 && c != '\t' && c != '\r') || c >= 0x7f) {
			cmdline_warn(st, "byte 0x%02x is not printable ASCII, line ignored", c);
			return;
		}
	}
	while (a < b && cmdline_blank(line[a]))
		a++;
	while (b > a && cmdline_blank(line[b - 1]))
		b--;
	if (a == b || line[a] == '#')
		return;
	for (eq = a; eq < b && line[eq] != '='; eq++)
		;
	kend = eq;
	while (kend > a && cmdline_blank(line[kend - 1]))
		kend--;
	for (size_t i = a; i < kend; i++)
		tok[o++] = line[i];
	if (eq < b) {
		vbeg = eq + 1;
		while (vbeg < b && cmdline_blank(line[vbeg]))
			vbeg++;
		/* A value wholly in double quotes loses them (as on the command line). */
		if (b - vbeg >= 2 && line[vbeg] == '"' && line[b - 1] == '"') {
			vbeg++;
			b--;
		}
		tok[o++] = '=';
		for (size_t i = vbeg; i < b; i++)
			tok[o++] = line[i];
	}
	tok[o] = '\0';	/* o <= len < CMDLINE_MAX */
	/* Tabs and CRs were blanks only at the ends and around the '='. */
	for (size_t i = 0; i < o; i++) {
		if ((u8)tok[i] < 0x20) {
			cmdline_warn(st, "byte 0x%02x is not printable ASCII, line ignored", (u8)tok[i]);
			return;
		}
	}
	cmdline_token(st, tok);
}

int cmdline_parse_file(const char *buf, size_t len, const struct cmdline_opt *const *set, size_t n,
		       const struct cmdline_source *src)
{
	struct cmdline_state st = { .set = set, .nopts = n, .warn = src->warn, .ctx = src->ctx, .src = src };
	char tok[CMDLINE_MAX];
	char where[64];
	size_t pos = 0;
	unsigned lineno = 0;

	while (buf && pos < len) {
		size_t end = pos;

		while (end < len && buf[end] != '\n')
			end++;
		lineno++;
		ksnprintf(where, sizeof where, "%.40s line %u", src->name, lineno);
		st.where = where;
		if (end - pos >= CMDLINE_MAX)
			cmdline_warn(&st, "longer than %d characters, ignored", CMDLINE_MAX - 1);
		else
			cmdline_file_line(&st, buf + pos, end - pos, tok);
		pos = end + 1;	/* past the '\n'; past len when the last line has none */
	}
	cmdline_warn_summary(&st);
	return st.nwarn;
}

/* An address part: 1 to 3 digits, at most max, no leading zero (often
 * meant as octal). */
static int cmdline_dec_part(const char **sp, u32 max, u32 *out)
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
		if (cmdline_dec_part(&s, 255, &part))
			return -EINVAL;
		a = a << 8 | part;
	}
	if (prefix && *s == '/') {
		s++;
		if (cmdline_dec_part(&s, 32, &len))
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
