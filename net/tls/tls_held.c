/* Certificates held while handshakes use them (tls_held.h). */
#include "net/tls/tls_held.h"

#include <string.h>

static void tls_held_free(struct tls_held *h)
{
	tls_keys_free(&h->keys);
	memset(h, 0, sizeof(*h));
}

struct tls_held *tls_held_take(struct tls_held_pool *p, struct tls_keys *k)
{
	for (unsigned i = 0; i < p->n; i++) {
		struct tls_held *h = &p->slot[i];

		if (h->used)
			continue;
		/* mbedTLS's chain and key hold no pointer into themselves
		 * (their first elements' links point at heap nodes), so the
		 * structures move as bytes. */
		h->keys = *k;
		memset(k, 0, sizeof(*k));
		mbedtls_x509_crt_init(&k->chain);
		mbedtls_pk_init(&k->key);
		h->refs = 0;
		h->live = true;
		h->used = true;
		return h;
	}
	return NULL;
}

void tls_held_get(struct tls_held *h)
{
	h->refs++;
}

void tls_held_put(struct tls_held *h)
{
	if (h->refs)
		h->refs--;
	if (!h->refs && !h->live)
		tls_held_free(h);
}

void tls_held_retire(struct tls_held *h)
{
	h->live = false;
	if (!h->refs)
		tls_held_free(h);
}

unsigned tls_held_in_use(const struct tls_held_pool *p)
{
	unsigned n = 0;

	for (unsigned i = 0; i < p->n; i++)
		n += p->slot[i].used;
	return n;
}

struct tls_held *tls_holders_hold(struct tls_holders *t, const void *conn, struct tls_held *h)
{
	struct tls_holder *free_e = NULL;

	for (unsigned i = 0; i < t->n; i++) {
		if (t->e[i].conn == conn)
			return t->e[i].h;
		if (!t->e[i].conn && !free_e)
			free_e = &t->e[i];
	}
	if (!free_e || !conn || !h)
		return NULL;
	free_e->conn = conn;
	free_e->h = h;
	tls_held_get(h);
	return h;
}

void tls_holders_drop(struct tls_holders *t, const void *conn)
{
	if (!conn)
		return;
	for (unsigned i = 0; i < t->n; i++) {
		if (t->e[i].conn == conn) {
			struct tls_held *h = t->e[i].h;

			t->e[i].conn = NULL;
			t->e[i].h = NULL;
			tls_held_put(h);
			return;
		}
	}
}

unsigned tls_holders_count(const struct tls_holders *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < t->n; i++)
		n += t->e[i].conn != NULL;
	return n;
}

size_t tls_keys_heap_bytes(const struct tls_keys *k)
{
	size_t n = 0, bits;

	for (const mbedtls_x509_crt *c = &k->chain; c && c->raw.p; c = c->next)
		n += c->raw.len + TLS_HELD_CRT_OVERHEAD;
	bits = mbedtls_pk_get_bitlen(&k->key);
	if (mbedtls_pk_get_type(&k->key) == MBEDTLS_PK_RSA)
		n += 10 * ((bits + 7) / 8) + 512;
	else
		n += 512;
	return n;
}

bool tls_sni_is(const unsigned char *sni, size_t len, const char *name)
{
	size_t n = strlen(name);

	if (!sni)
		return false;
	if (len && sni[len - 1] == '.')
		len--;
	if (n && name[n - 1] == '.')
		n--;
	if (len != n || !n)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char a = sni[i], b = (unsigned char)name[i];

		if (a >= 'A' && a <= 'Z')
			a += 'a' - 'A';
		if (b >= 'A' && b <= 'Z')
			b += 'a' - 'A';
		if (a != b)
			return false;
	}
	return true;
}
