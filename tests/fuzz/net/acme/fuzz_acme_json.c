/* libFuzzer target for net/acme/acme_json.c: arbitrary bytes as a CA's
 * response. Checks: no crash or over-read (an exactly-sized copy), the
 * bounds hold (tokens within the array, depth), every token's text inside
 * the input and its subtree's end after it, every string decodes or is
 * refused without writing past its buffer, lookups of ACME's names and
 * walks of every array stay in range, and a parse that succeeds gives
 * the same tokens with a larger array (the budget only refuses). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/acme/acme_json.h"

#define NTOK 128
static struct acme_json_tok ta[NTOK], tb[NTOK * 2];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *names[] = { "status", "type", "detail", "url", "token", "challenges",
				       "identifier", "authorizations", "finalize", "certificate", "newNonce" };
	struct acme_json j, k;
	char *text = malloc(size ? size : 1), out[64];
	int r;

	memcpy(text, data, size);
	r = acme_json_parse(&j, text, size, ta, NTOK);
	if (r > 0 || r < AJ_E_UTF8 || !acme_json_strerror(r)[0])
		abort();
	if (r == AJ_OK) {
		if (j.used == 0 || j.used > NTOK || acme_json_parse(&k, text, size, tb, NTOK * 2) != AJ_OK ||
		    k.used != j.used || memcmp(ta, tb, j.used * sizeof(ta[0])))
			abort();
		for (unsigned i = 0; i < j.used; i++) {
			struct acme_json_tok *t = &j.t[i];
			size_t n;

			if ((size_t)t->off + t->len > size || t->next <= i || t->next > j.used)
				abort();
			if (t->type == AJ_STRING && acme_json_str(&j, (int)i, out, sizeof(out), &n) == 0 &&
			    (n >= sizeof(out) || strlen(out) != n))
				abort();
			if (t->type == AJ_OBJECT)
				for (size_t m = 0; m < sizeof(names) / sizeof(names[0]); m++) {
					int v = acme_json_get(&j, (int)i, names[m]);

					if (v != -1 && (v <= (int)i || (unsigned)v >= t->next))
						abort();
				}
			if (t->type == AJ_ARRAY && t->n) {
				int e = acme_json_at(&j, (int)i, 0);

				for (unsigned m = 1; m < t->n; m++) {
					e = acme_json_sibling(&j, e);
					if (e != acme_json_at(&j, (int)i, m) || (unsigned)e >= t->next)
						abort();
				}
			}
		}
	}
	free(text);
	return 0;
}
