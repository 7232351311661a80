/* The records runtime/acme_state.c keeps on the store (pure: host-tested
 * by tests/host/runtime/test_keep_rec.c): "VK", the version (1), the
 * record's kind, the number of fields, then each field as its length (4
 * bytes, little-endian) and its bytes. A record read back is checked
 * whole: magic, version, kind, field count, every length inside the
 * record and the last one ending exactly at its end; a number field is 8
 * bytes. Anything else is refused with a reason (the caller says it once
 * and replaces the record), never trusted. */
#ifndef VIREO_RUNTIME_KEEP_REC_H
#define VIREO_RUNTIME_KEEP_REC_H

#include "lib/types.h"

#define KEEP_FIELDS_MAX 8u
#define KEEP_HDR 5u

struct keep_field {
	const void *p;
	size_t len;
};

/* The bytes a record of n fields takes. */
size_t keep_rec_size(const struct keep_field *f, unsigned n);

/* Writes the record into out[0..cap): its length, or 0 when it does not
 * fit or n is over KEEP_FIELDS_MAX. */
size_t keep_rec_put(u8 *out, size_t cap, u8 kind, const struct keep_field *f, unsigned n);

/* Reads a record of kind with n fields into f[0..n) (pointers into buf):
 * NULL, or why it is refused. */
const char *keep_rec_get(const void *buf, size_t len, u8 kind, struct keep_field *f, unsigned n);

/* A number field. */
void keep_u64_put(u8 out[8], u64 v);
bool keep_u64_get(const struct keep_field *f, u64 *v);

/* Whether field f holds exactly the string s. */
bool keep_str_is(const struct keep_field *f, const char *s);

#endif
