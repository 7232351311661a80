/* JSON for ACME (RFC 8555 over RFC 8259): a bounded reader for the CA's
 * responses (directory, account, order, authorization, challenge, problem
 * documents) and a tiny writer for the requests' payloads.
 *
 * The reader allocates nothing: it checks the whole text once and records
 * one token per value (and per member name) in an array the caller gives.
 * Bounds, each refused with its own error: the text at most
 * ACME_JSON_SIZE_MAX bytes (an order for 100 names with its authorization
 * URLs is ~12 KB; a certificate comes as PEM, not JSON), nesting at most
 * ACME_JSON_DEPTH_MAX (ACME's deepest, a problem's subproblems'
 * identifier, is 4), at most the caller's token count (24 B each: 256 are
 * 6 KiB, more than any ACME response needs). The parse recurses once per
 * level: its stack is bounded by the depth cap. Strict RFC 8259: UTF-8
 * checked, no control characters in strings, every escape including
 * surrogate pairs, numbers by the grammar, nothing after the value, and
 * an object with two members of the same name (compared decoded) refused
 * at every level. */
#ifndef VIREO_ACME_JSON_H
#define VIREO_ACME_JSON_H

#include "lib/types.h"

#define ACME_JSON_SIZE_MAX	65536
#define ACME_JSON_DEPTH_MAX	16

enum acme_json_type { AJ_NULL, AJ_FALSE, AJ_TRUE, AJ_NUMBER, AJ_STRING, AJ_ARRAY, AJ_OBJECT };

enum {
	AJ_OK = 0,
	AJ_E_SYNTAX = -1,	/* not JSON */
	AJ_E_SIZE = -2,		/* over ACME_JSON_SIZE_MAX */
	AJ_E_DEPTH = -3,	/* nested deeper than ACME_JSON_DEPTH_MAX */
	AJ_E_TOKENS = -4,	/* more values than tokens */
	AJ_E_DUPKEY = -5,	/* an object names a member twice */
	AJ_E_UTF8 = -6,		/* bad UTF-8 or a lone surrogate escape */
};

/* A string's off/len are its text between the quotes (escapes undecoded);
 * a number's and a literal's their text; a container's its whole text.
 * n: an object's members, an array's elements. next: the token after this
 * one's subtree. An object's tokens are name, value, name, value... */
struct acme_json_tok {
	u8 type;
	u32 off, len, n, next;
};

struct acme_json {
	const char *s;
	size_t len;
	struct acme_json_tok *t;
	unsigned cap, used;
};

/* Checks s[len] and fills t[cap]; the root is token 0. AJ_OK or an error. */
int acme_json_parse(struct acme_json *j, const char *s, size_t len, struct acme_json_tok *t, unsigned cap);
const char *acme_json_strerror(int err);

/* The value of obj's member named name, or -1 (obj not an object, or no
 * such member). */
int acme_json_get(const struct acme_json *j, int obj, const char *name);
/* Element k of array arr, or -1. Iterating: first with k = 0, then
 * acme_json_sibling() (the token after one element's subtree). */
int acme_json_at(const struct acme_json *j, int arr, unsigned k);
static inline int acme_json_sibling(const struct acme_json *j, int tok) { return (int)j->t[tok].next; }
/* tok's type, or -1 when tok is -1 (so lookups chain). */
int acme_json_type(const struct acme_json *j, int tok);

/* A string decoded to UTF-8 in out[cap] with a NUL; *outlen its length.
 * 0, or -1: not a string, no room, or it holds U+0000 (never a C string). */
int acme_json_str(const struct acme_json *j, int tok, char *out, size_t cap, size_t *outlen);
/* true when tok is a string that decodes to exactly lit. */
bool acme_json_str_is(const struct acme_json *j, int tok, const char *lit);
/* A non-negative integer without fraction or exponent, at most 2^53 - 1
 * (JSON's safe integers). 0 or -1. */
int acme_json_uint(const struct acme_json *j, int tok, u64 *out);

/* The writer: appends to buf[cap], always NUL-terminated; once something
 * does not fit, err stays set and nothing more is written. */
struct acme_jw {
	char *buf;
	size_t cap, len;
	bool err;
};
void acme_jw_init(struct acme_jw *w, char *buf, size_t cap);
void acme_jw_raw(struct acme_jw *w, const char *s, size_t n);
/* A JSON string of s[n] (UTF-8 in): quotes, \" \\ and control characters
 * escaped. */
void acme_jw_str(struct acme_jw *w, const char *s, size_t n);
/* A member's name: a comma first unless the last byte is '{', then
 * "name":. */
void acme_jw_key(struct acme_jw *w, const char *name);

#endif
