/* JSON for ACME (acme_json.h). */
#include "net/acme/acme_json.h"
#include "lib/parse.h"

struct ajp {
	struct acme_json *j;
	size_t i;
	int err;
};

static void aj_ws(struct ajp *p)
{
	while (p->i < p->j->len) {
		char c = p->j->s[p->i];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		p->i++;
	}
}

static int aj_hex4(const char *s, size_t at, size_t len, u32 *out)
{
	u32 v = 0;

	if (len - at < 4)
		return -1;
	for (int k = 0; k < 4; k++) {
		int h = parse_hexdigit(s[at + (size_t)k]);

		if (h < 0)
			return -1;
		v = v << 4 | (u32)h;
	}
	*out = v;
	return 0;
}

/* One character of a string's raw text s[*at..end): its code point into
 * *cp, *at moved past it. 0, AJ_E_SYNTAX or AJ_E_UTF8. The text was
 * checked by the parse when called from the accessors, so they only read. */
static int aj_char(const char *s, size_t *at, size_t end, u32 *cp)
{
	size_t i = *at;
	u8 c = (u8)s[i];

	if (c < 0x20)
		return AJ_E_SYNTAX;
	if (c == '\\') {
		if (++i >= end)
			return AJ_E_SYNTAX;
		switch (s[i]) {
		case '"': *cp = '"'; break;
		case '\\': *cp = '\\'; break;
		case '/': *cp = '/'; break;
		case 'b': *cp = 8; break;
		case 'f': *cp = 12; break;
		case 'n': *cp = 10; break;
		case 'r': *cp = 13; break;
		case 't': *cp = 9; break;
		case 'u': {
			u32 hi, lo;

			if (aj_hex4(s, i + 1, end, &hi) != 0)
				return AJ_E_SYNTAX;
			i += 4;
			if (hi >= 0xdc00 && hi <= 0xdfff)
				return AJ_E_UTF8;
			if (hi >= 0xd800 && hi <= 0xdbff) {
				if (end - i < 7 || s[i + 1] != '\\' || s[i + 2] != 'u' ||
				    aj_hex4(s, i + 3, end, &lo) != 0 || lo < 0xdc00 || lo > 0xdfff)
					return AJ_E_UTF8;
				i += 6;
				hi = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
			}
			*cp = hi;
			break;
		}
		default:
			return AJ_E_SYNTAX;
		}
		*at = i + 1;
		return 0;
	}
	if (c < 0x80) {
		*cp = c;
		*at = i + 1;
		return 0;
	}
	/* UTF-8: 2-4 bytes, shortest form, no surrogates, at most U+10FFFF. */
	unsigned n = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
	u32 v = c & (0x3f >> n);

	if (n == 0 || c > 0xf4 || end - i <= n)
		return AJ_E_UTF8;
	for (unsigned k = 1; k <= n; k++) {
		u8 d = (u8)s[i + k];

		if ((d & 0xc0) != 0x80)
			return AJ_E_UTF8;
		v = v << 6 | (d & 0x3f);
	}
	if ((n == 1 && v < 0x80) || (n == 2 && v < 0x800) || (n == 3 && v < 0x10000) || v > 0x10ffff ||
	    (v >= 0xd800 && v <= 0xdfff))
		return AJ_E_UTF8;
	*cp = v;
	*at = i + n + 1;
	return 0;
}

static unsigned aj_utf8(u32 cp, char out[4])
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

static int aj_new(struct ajp *p, u8 type, size_t off)
{
	struct acme_json *j = p->j;

	if (j->used == j->cap) {
		p->err = AJ_E_TOKENS;
		return -1;
	}
	j->t[j->used] = (struct acme_json_tok){ .type = type, .off = (u32)off };
	return (int)j->used++;
}

static bool aj_fail(struct ajp *p, int err)
{
	if (p->err == AJ_OK)
		p->err = err;
	return false;
}

static bool aj_string(struct ajp *p)
{
	const char *s = p->j->s;
	int t;

	if ((t = aj_new(p, AJ_STRING, ++p->i)) < 0)
		return false;
	while (p->i < p->j->len && s[p->i] != '"') {
		u32 cp;
		int r = aj_char(s, &p->i, p->j->len, &cp);

		if (r != 0)
			return aj_fail(p, r);
	}
	if (p->i >= p->j->len)
		return aj_fail(p, AJ_E_SYNTAX);
	p->j->t[t].len = (u32)(p->i - p->j->t[t].off);
	p->j->t[t].next = p->j->used;
	p->i++;
	return true;
}

static bool aj_digits(struct ajp *p)
{
	size_t from = p->i;

	while (p->i < p->j->len && p->j->s[p->i] >= '0' && p->j->s[p->i] <= '9')
		p->i++;
	return p->i > from;
}

static bool aj_number(struct ajp *p)
{
	const char *s = p->j->s;
	size_t len = p->j->len, from = p->i;
	int t;

	if (s[p->i] == '-')
		p->i++;
	if (p->i < len && s[p->i] == '0')
		p->i++;
	else if (!aj_digits(p))
		return aj_fail(p, AJ_E_SYNTAX);
	if (p->i < len && s[p->i] == '.') {
		p->i++;
		if (!aj_digits(p))
			return aj_fail(p, AJ_E_SYNTAX);
	}
	if (p->i < len && (s[p->i] == 'e' || s[p->i] == 'E')) {
		p->i++;
		if (p->i < len && (s[p->i] == '+' || s[p->i] == '-'))
			p->i++;
		if (!aj_digits(p))
			return aj_fail(p, AJ_E_SYNTAX);
	}
	if ((t = aj_new(p, AJ_NUMBER, from)) < 0)
		return false;
	p->j->t[t].len = (u32)(p->i - from);
	p->j->t[t].next = p->j->used;
	return true;
}

static bool aj_lit(struct ajp *p, const char *word, size_t n, u8 type)
{
	int t;

	if (p->j->len - p->i < n || __builtin_memcmp(p->j->s + p->i, word, n) != 0)
		return aj_fail(p, AJ_E_SYNTAX);
	if ((t = aj_new(p, type, p->i)) < 0)
		return false;
	p->j->t[t].len = (u32)n;
	p->j->t[t].next = p->j->used;
	p->i += n;
	return true;
}

/* Two string tokens' decoded texts are equal. */
static bool aj_same(const struct acme_json *j, const struct acme_json_tok *a, const struct acme_json_tok *b)
{
	size_t i = a->off, k = b->off, ea = a->off + a->len, eb = b->off + b->len;

	while (i < ea && k < eb) {
		u32 x, y;

		if (aj_char(j->s, &i, ea, &x) != 0 || aj_char(j->s, &k, eb, &y) != 0 || x != y)
			return false;
	}
	return i == ea && k == eb;
}

static bool aj_value(struct ajp *p, unsigned depth);

static bool aj_container(struct ajp *p, unsigned depth, bool obj)
{
	struct acme_json *j = p->j;
	size_t from = p->i++;
	char close = obj ? '}' : ']';
	int t;

	if (depth >= ACME_JSON_DEPTH_MAX)
		return aj_fail(p, AJ_E_DEPTH);
	if ((t = aj_new(p, obj ? AJ_OBJECT : AJ_ARRAY, from)) < 0)
		return false;
	aj_ws(p);
	if (p->i < j->len && j->s[p->i] == close) {
		p->i++;
	} else {
		for (;;) {
			if (obj) {
				unsigned key = j->used;

				aj_ws(p);
				if (p->i >= j->len || j->s[p->i] != '"')
					return aj_fail(p, AJ_E_SYNTAX);
				if (!aj_string(p))
					return false;
				/* Every earlier name of this object. */
				for (unsigned k = (unsigned)t + 1; k < key; k = j->t[k + 1].next)
					if (aj_same(j, &j->t[k], &j->t[key]))
						return aj_fail(p, AJ_E_DUPKEY);
				aj_ws(p);
				if (p->i >= j->len || j->s[p->i] != ':')
					return aj_fail(p, AJ_E_SYNTAX);
				p->i++;
			}
			if (!aj_value(p, depth + 1))
				return false;
			j->t[t].n++;
			aj_ws(p);
			if (p->i < j->len && j->s[p->i] == ',') {
				p->i++;
				continue;
			}
			if (p->i < j->len && j->s[p->i] == close) {
				p->i++;
				break;
			}
			return aj_fail(p, AJ_E_SYNTAX);
		}
	}
	j->t[t].len = (u32)(p->i - from);
	j->t[t].next = j->used;
	return true;
}

static bool aj_value(struct ajp *p, unsigned depth)
{
	aj_ws(p);
	if (p->i >= p->j->len)
		return aj_fail(p, AJ_E_SYNTAX);
	switch (p->j->s[p->i]) {
	case '{': return aj_container(p, depth, true);
	case '[': return aj_container(p, depth, false);
	case '"': return aj_string(p);
	case 't': return aj_lit(p, "true", 4, AJ_TRUE);
	case 'f': return aj_lit(p, "false", 5, AJ_FALSE);
	case 'n': return aj_lit(p, "null", 4, AJ_NULL);
	default:
		if (p->j->s[p->i] == '-' || (p->j->s[p->i] >= '0' && p->j->s[p->i] <= '9'))
			return aj_number(p);
		return aj_fail(p, AJ_E_SYNTAX);
	}
}

int acme_json_parse(struct acme_json *j, const char *s, size_t len, struct acme_json_tok *t, unsigned cap)
{
	struct ajp p = { .j = j };

	*j = (struct acme_json){ .s = s, .len = len, .t = t, .cap = cap };
	if (len > ACME_JSON_SIZE_MAX)
		return AJ_E_SIZE;
	if (aj_value(&p, 0)) {
		aj_ws(&p);
		if (p.i == len)
			return AJ_OK;
		p.err = AJ_E_SYNTAX;
	}
	j->used = 0;
	return p.err;
}

const char *acme_json_strerror(int err)
{
	switch (err) {
	case AJ_OK: return "ok";
	case AJ_E_SIZE: return "JSON over 64 KiB";
	case AJ_E_DEPTH: return "JSON nested too deep";
	case AJ_E_TOKENS: return "JSON with too many values";
	case AJ_E_DUPKEY: return "JSON object with a duplicate member";
	case AJ_E_UTF8: return "JSON with bad UTF-8";
	default: return "not JSON";
	}
}

int acme_json_type(const struct acme_json *j, int tok)
{
	return tok < 0 || (unsigned)tok >= j->used ? -1 : j->t[tok].type;
}

int acme_json_get(const struct acme_json *j, int obj, const char *name)
{
	if (acme_json_type(j, obj) != AJ_OBJECT)
		return -1;
	for (unsigned k = (unsigned)obj + 1, m = 0; m < j->t[obj].n; m++, k = j->t[k + 1].next)
		if (acme_json_str_is(j, (int)k, name))
			return (int)k + 1;
	return -1;
}

int acme_json_at(const struct acme_json *j, int arr, unsigned k)
{
	unsigned t;

	if (acme_json_type(j, arr) != AJ_ARRAY || k >= j->t[arr].n)
		return -1;
	t = (unsigned)arr + 1;
	while (k--)
		t = j->t[t].next;
	return (int)t;
}

int acme_json_str(const struct acme_json *j, int tok, char *out, size_t cap, size_t *outlen)
{
	size_t i, end, n = 0;

	if (acme_json_type(j, tok) != AJ_STRING || cap == 0)
		return -1;
	i = j->t[tok].off;
	end = i + j->t[tok].len;
	while (i < end) {
		char u[4];
		u32 cp;
		unsigned m;

		if (aj_char(j->s, &i, end, &cp) != 0 || cp == 0)
			return -1;
		m = aj_utf8(cp, u);
		if (cap - n <= m)
			return -1;
		__builtin_memcpy(out + n, u, m);
		n += m;
	}
	out[n] = '\0';
	if (outlen)
		*outlen = n;
	return 0;
}

bool acme_json_str_is(const struct acme_json *j, int tok, const char *lit)
{
	size_t i, end, k = 0;

	if (acme_json_type(j, tok) != AJ_STRING)
		return false;
	i = j->t[tok].off;
	end = i + j->t[tok].len;
	while (i < end) {
		char u[4];
		u32 cp;
		unsigned m;

		if (aj_char(j->s, &i, end, &cp) != 0)
			return false;
		m = aj_utf8(cp, u);
		for (unsigned q = 0; q < m; q++, k++)
			if (lit[k] == '\0' || lit[k] != u[q])
				return false;
	}
	return lit[k] == '\0';
}

int acme_json_uint(const struct acme_json *j, int tok, u64 *out)
{
	u64 v = 0;

	if (acme_json_type(j, tok) != AJ_NUMBER)
		return -1;
	for (u32 i = 0; i < j->t[tok].len; i++) {
		char c = j->s[j->t[tok].off + i];

		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (u64)(c - '0');
		if (v > (1ULL << 53) - 1)
			return -1;
	}
	*out = v;
	return 0;
}

void acme_jw_init(struct acme_jw *w, char *buf, size_t cap)
{
	*w = (struct acme_jw){ .buf = buf, .cap = cap, .err = cap == 0 };
	if (cap)
		buf[0] = '\0';
}

void acme_jw_raw(struct acme_jw *w, const char *s, size_t n)
{
	if (w->err || w->cap - w->len <= n) {
		w->err = true;
		return;
	}
	__builtin_memcpy(w->buf + w->len, s, n);
	w->len += n;
	w->buf[w->len] = '\0';
}

void acme_jw_str(struct acme_jw *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";

	acme_jw_raw(w, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		u8 c = (u8)s[i];

		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };

			acme_jw_raw(w, e, 2);
		} else if (c < 0x20) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			acme_jw_raw(w, e, 6);
		} else {
			acme_jw_raw(w, (const char *)&c, 1);
		}
	}
	acme_jw_raw(w, "\"", 1);
}

void acme_jw_key(struct acme_jw *w, const char *name)
{
	if (w->len && w->buf[w->len - 1] != '{')
		acme_jw_raw(w, ",", 1);
	acme_jw_str(w, name, __builtin_strlen(name));
	acme_jw_raw(w, ":", 1);
}
