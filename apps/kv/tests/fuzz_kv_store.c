/* libFuzzer target for apps/kv/kv_store.c. The input is a list of operations,
 * each one byte of opcode followed by what it reads from the stream (short
 * reads take what is left):
 *   put:    klen byte, key, vlen byte (x 8), an If-Match / If-None-Match
 *           selector byte, then the header texts (length byte + bytes each)
 *   delete: klen byte, key, selector byte, header texts
 *   get:    the same as delete
 *   list:   plen byte, prefix, alen byte, cursor bytes, limit byte, cap byte
 *   pin:    klen byte, key: pins that entry (up to 8 pins held at once)
 *   unpin:  drops the oldest pin
 *   restore: klen byte, key, a byte choosing a held pin or NULL:
 *           kv_restore (kv.c's undo of a write the disk refused)
 * Keys and header texts come straight from the input, so they are often
 * invalid: the store must refuse them cleanly. Checks after each operation:
 * no crash (ASan/UBSan), the tree's invariants (kv_store_check), used never
 * above max_bytes, every put's result consistent with the bound, the
 * allocator's live blocks equal to count plus held, and a listing always within its cap
 * and framed as a JSON object. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apps/kv/kv_store.h"

static long live;

static void *f_alloc(size_t n)
{
	live++;
	return malloc(n);
}

static void f_free(void *p)
{
	if (p)
		live--;
	free(p);
}

struct in {
	const u8 *p;
	size_t n;
};

static size_t take(struct in *in, size_t want, const u8 **out)
{
	size_t k = want < in->n ? want : in->n;

	*out = in->p;
	in->p += k;
	in->n -= k;
	return k;
}

static u8 byte(struct in *in)
{
	const u8 *b;

	return take(in, 1, &b) ? *b : 0;
}

/* A header text of up to 63 bytes, NUL-terminated, or NULL. */
static const char *header(struct in *in, char buf[64], bool present)
{
	const u8 *b;
	size_t n;

	if (!present)
		return NULL;
	n = take(in, byte(in) & 63, &b);
	memcpy(buf, b, n);
	buf[n] = 0;
	return buf;
}

static void die(void)
{
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char list[KV_LIST_MIN_CAP + 4096 + 1];
	static u8 value[255 * 8];
	struct in in = {data, size};
	struct kv_store s;
	struct kv_config c = {.max_bytes = 4096, .value_max = 512, .alloc = f_alloc, .free = f_free};
	unsigned ops = 0, npins = 0;
	const struct kv_entry *pins[8];

	memset(c.secret, 0x42, sizeof c.secret);
	if (kv_store_init(&s, &c))
		die();
	memset(value, 'v', sizeof value);
	while (in.n && ops++ < 256) {
		u8 op = byte(&in) % 7, sel;
		const u8 *key, *ck;
		size_t klen, vlen, used0 = s.used;
		char im[64], inm[64];
		const char *him, *hinm;
		const struct kv_entry *e, *old;
		enum kv_status r;

		switch (op) {
		case 0:
			klen = take(&in, byte(&in), &key);
			vlen = (size_t)byte(&in) * 8;
			sel = byte(&in);
			him = header(&in, im, sel & 1);
			hinm = header(&in, inm, sel & 2);
			old = kv_key_valid(key, klen) ? kv_find(&s, key, klen) : NULL;
			r = kv_put(&s, key, klen, value, vlen, him, hinm, NULL);
			if (r == KV_OK || r == KV_CREATED) {
				if (!kv_key_valid(key, klen) || vlen > s.value_max)
					die();
				if ((r == KV_CREATED) != (old == NULL))
					die();
				e = kv_find(&s, key, klen);
				if (!e || e->vlen != vlen)
					die();
			} else if (r == KV_FULL) {
				if (used0 - (old && !old->pins ? kv_charge(old->klen, old->vlen) : 0) +
					    kv_charge(klen, vlen) <= s.max_bytes || s.used != used0)
					die();
			} else if (s.used != used0) {
				die();
			}
			break;
		case 1:
		case 2:
			klen = take(&in, byte(&in), &key);
			sel = byte(&in);
			him = header(&in, im, sel & 1);
			hinm = header(&in, inm, sel & 2);
			if (op == 1) {
				r = kv_delete(&s, key, klen, him, hinm);
				if (r == KV_OK && kv_find(&s, key, klen))
					die();
			} else {
				r = kv_get(&s, key, klen, him, hinm, &e);
				/* A 304 carries the entry too (kv_store.h). */
				if ((r == KV_OK || r == KV_NOT_MODIFIED) != (e != NULL))
					die();
			}
			break;
		case 4:
			klen = take(&in, byte(&in), &key);
			e = kv_key_valid(key, klen) ? kv_find(&s, key, klen) : NULL;
			if (e && npins < 8 && kv_pin(&s, e))
				pins[npins++] = e;
			break;
		case 5:
			if (npins) {
				kv_unpin(&s, pins[0]);
				memmove(pins, pins + 1, --npins * sizeof pins[0]);
			}
			break;
		case 6:
			klen = take(&in, byte(&in), &key);
			sel = byte(&in);
			e = npins && sel % 2 ? pins[sel / 2 % npins] : NULL;
			if (!kv_key_valid(key, klen)) {
				if (e && kv_restore(&s, key, klen, e))
					die();	/* never under a key it cannot have */
				break;
			}
			if (kv_restore(&s, key, klen, e) && kv_find(&s, key, klen) != e)
				die();
			break;
		default: {
			const u8 *prefix;
			u8 after[KV_KEY_MAX];
			size_t plen = take(&in, byte(&in), &prefix), clen, cap, n;
			int alen;
			unsigned limit;

			clen = take(&in, byte(&in), &ck);
			alen = kv_cursor_decode((const char *)ck, clen, after);
			limit = byte(&in);
			cap = KV_LIST_MIN_CAP + (size_t)byte(&in) * 16;
			n = kv_list_json(&s, prefix, plen, after, alen > 0 ? (size_t)alen : 0, limit, list,
					 cap);
			if (n > cap)
				die();
			if (limit >= 1 && plen <= KV_KEY_MAX &&
			    (n < 2 || list[0] != '{' || list[n - 1] != '}'))
				die();
			break;
		}
		}
		if (kv_store_check(&s) || s.used > s.max_bytes || live != (long)(s.count + s.held))
			die();
	}
	while (npins)
		kv_unpin(&s, pins[--npins]);
	if (kv_store_check(&s) || s.held)
		die();
	kv_store_clear(&s);
	if (live)
		die();
	return 0;
}
