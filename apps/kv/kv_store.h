/* apps/kv's store: an in-memory map from short printable keys to byte
 * values, kept sorted (an AVL tree threaded through the entries) under a hard
 * memory bound, with strong entity tags, conditional requests and paged
 * prefix listings as JSON. Pure: no I/O and no kernel calls except the
 * allocator the caller hands in, so the host tests run it as it is.
 *
 * Memory bound, exactly: every entry is one block from vireo_alloc() holding
 * its header (struct kv_entry, KV_ENTRY_HDR = 32 bytes), its key and its
 * value. vireo_alloc(n) adds its own 16-byte header (VIREO_ALLOC_OVERHEAD)
 * and takes kmalloc(n + 16) from the kernel's heap, which carves a block of
 * a 32-byte header plus the payload in 16-byte steps (kernel/mm/heap.c). So the
 * store charges each entry
 *
 *     kv_charge(klen, vlen) = KV_BLOCK_HDR + ALIGN_UP(KV_ENTRY_HDR + klen + vlen, 16)
 *
 * with KV_BLOCK_HDR = 32 + 16 = 48: the heap block the entry really takes.
 * `used` is the sum of the charges of the entries present and never exceeds
 * max_bytes: a put that would pass it is refused with KV_FULL (HTTP 507)
 * and changes nothing. Example: key "a", value "hello": 48 + ALIGN_UP(32 + 1
 * + 5, 16) = 48 + 48 = 96 bytes. The smallest entry (1-byte key, empty
 * value) costs 96 bytes, so a store holds at most max_bytes / 96 entries.
 *
 * `used` also covers entries a streaming response still reads after their
 * key was replaced or deleted (kv_pin): they leave the tree at once but keep
 * their charge until the response ends.
 *
 * Beyond `used`: (1) the heap may leave a split remainder smaller than its
 * minimum free block (48 bytes, so at most 32) attached to a block; (2) a
 * put replacing a key allocates the new entry before freeing the old one,
 * so for that instant the store holds used + kv_charge(new) <= max_bytes +
 * kv_charge(KV_KEY_MAX, value_max). The tree needs no other memory: its
 * links live in the entries, and its height is at most 1.44 log2(n + 2), 45
 * for any n below 2^32, so the recursion in the walks is bounded.
 */
#ifndef VIREO_APPS_KV_STORE_H
#define VIREO_APPS_KV_STORE_H

#include "vireo/list.h"
#include "vireo/outbuf.h"
#include "vireo/siphash.h"
#include "vireo/types.h"

/* Keys: 1..KV_KEY_MAX bytes, each printable ASCII 0x21..0x7e (no space, no
 * control byte, nothing above 0x7e). Values: 0..value_max bytes, any bytes. */
#define KV_KEY_MAX 250
/* The largest value_max a store may be configured with. */
#define KV_VALUE_CEIL (1u << 20)

/* Per block: the kernel heap's header (kernel/mm/heap.c's HB_HDR, 32) and
 * vireo_alloc()'s (VIREO_ALLOC_OVERHEAD, 16); then the entry's own header. */
#define KV_BLOCK_HDR 48u
#define KV_ENTRY_HDR 32u

/* An ETag as sent: a double quote, 16 lowercase hex digits, a double quote. */
#define KV_ETAG_LEN 18

/* Listing pages: at most KV_PAGE_MAX keys (default KV_PAGE_DEFAULT). */
#define KV_PAGE_MAX 1000
#define KV_PAGE_DEFAULT 100

/*
 * One entry. The tag is SipHash-2-4 of (key length, key, value) under the
 * store's secret, so equal tags mean the same bytes (strong validator, RFC
 * 9110 8.8.1) and a client cannot aim for a collision. data holds the key
 * then the value.
 */
struct kv_entry {
	union {
		struct {
			struct kv_entry *left, *right;	/* in the tree */
		};
		struct list_node held;	/* out of it (height 0): on the held list */
	};
	u64 tag;
	u32 vlen;
	u16 pins;	/* responses still reading the value (kv_pin) */
	u8 height;	/* 0: out of the tree, held until unpinned */
	u8 klen;	/* just before data: the tag hashes klen, key, value as one run */
	u8 data[];
};
_Static_assert(sizeof(struct kv_entry) == KV_ENTRY_HDR, "KV_ENTRY_HDR is the header's size");

struct kv_config {
	size_t max_bytes;	/* the bound on used; 0 refuses every put */
	size_t value_max;	/* 0..KV_VALUE_CEIL */
	u8 secret[16];		/* the ETag key: random per boot */
	void *(*alloc)(size_t size);	/* vireo_alloc in the appliance */
	void (*free)(void *p);
};

struct kv_store {
	struct kv_entry *root;
	size_t max_bytes, value_max;
	size_t used;		/* sum of kv_charge() over the entries */
	size_t count;		/* entries */
	struct siphash_key tagkey;
	void *(*alloc)(size_t size);
	void (*free)(void *p);
	/* Entries replaced or deleted while pinned: out of the tree, still
	 * charged in used until their last unpin frees them. */
	struct list_node held_list;
	size_t held, held_bytes;
	/* Refusals: puts over the bound, allocations that failed. */
	u64 refused_full, refused_nomem;
};

/* Outcomes. The comments give the HTTP status apps/kv/kv.c answers with. */
enum kv_status {
	KV_OK = 0,		/* 200 (GET, PUT replacing), 204 (DELETE) */
	KV_CREATED,		/* 201: a put made a new key */
	KV_NOT_FOUND,		/* 404 */
	KV_NOT_MODIFIED,	/* 304: If-None-Match matched on a read */
	KV_PRECONDITION_FAILED,	/* 412 */
	KV_BAD_KEY,		/* 400: empty, too long, or a byte outside 0x21..0x7e */
	KV_TOO_LARGE,		/* 413: value over value_max */
	KV_FULL,		/* 507: the put would take used past max_bytes */
	KV_NO_MEMORY,		/* 507 too: the heap refused the block */
};

/* Sets up an empty store; -EINVAL if value_max > KV_VALUE_CEIL or an
 * allocator is missing. */
int kv_store_init(struct kv_store *s, const struct kv_config *c);
/* Frees every entry; the store is empty and usable afterwards. */
void kv_store_clear(struct kv_store *s);
/* Changes the bound. Entries already present stay even if over it; puts are
 * refused until deletes bring used under the new bound. */
void kv_store_set_max(struct kv_store *s, size_t max_bytes);

bool kv_key_valid(const u8 *key, size_t klen);
size_t kv_charge(size_t klen, size_t vlen);

/*
 * Conditional requests (RFC 9110 13.1, 13.2.2). if_match / if_none_match are
 * the header values or NULL when absent. If-Match uses the strong comparison
 * ("*" or a listed tag equal to the entry's, W/ tags never match) and fails
 * (412) when there is no entry. If-None-Match uses the weak comparison ("*"
 * matches any entry); when it matches, a read gets 304 and a write 412.
 * If-Match is evaluated first. A malformed list matches nothing, so it fails
 * If-Match and passes If-None-Match. Returns KV_OK, KV_NOT_MODIFIED or
 * KV_PRECONDITION_FAILED. e is the entry or NULL.
 */
enum kv_status kv_cond_check(const struct kv_entry *e, const char *if_match,
			     const char *if_none_match, bool read);

/* The entry for key or NULL (an invalid key is never present). */
const struct kv_entry *kv_find(const struct kv_store *s, const u8 *key, size_t klen);

/* A read: KV_OK, KV_NOT_FOUND, KV_NOT_MODIFIED, KV_PRECONDITION_FAILED or
 * KV_BAD_KEY. *out is the entry after KV_OK and KV_NOT_MODIFIED (whose
 * answer carries its ETag), else NULL; it stays valid until the next put,
 * delete or clear. */
enum kv_status kv_get(const struct kv_store *s, const u8 *key, size_t klen, const char *if_match,
		      const char *if_none_match, const struct kv_entry **out);

/* A write: KV_CREATED or KV_OK (replaced), else the refusal, with nothing
 * changed. On success etag (if not NULL) receives the new tag, NUL-ended. */
enum kv_status kv_put(struct kv_store *s, const u8 *key, size_t klen, const void *value,
		      size_t vlen, const char *if_match, const char *if_none_match,
		      char etag[KV_ETAG_LEN + 1]);

/* KV_OK (deleted), KV_NOT_FOUND, KV_PRECONDITION_FAILED or KV_BAD_KEY. */
enum kv_status kv_delete(struct kv_store *s, const u8 *key, size_t klen, const char *if_match,
			 const char *if_none_match);

static inline const u8 *kv_entry_key(const struct kv_entry *e)
{
	return e->data;
}

static inline const u8 *kv_entry_value(const struct kv_entry *e)
{
	return e->data + e->klen;
}

/*
 * Pins: a response streaming an entry's value pins it, so a put or delete of
 * its key meanwhile takes it out of the tree but does not free it: it stays
 * charged in used (the bound still holds with it) and is freed by the last
 * kv_unpin(). kv_pin returns false (nothing pinned) at 65,535 pins. Clear
 * frees held entries too: pins end with the store.
 */
bool kv_pin(struct kv_store *s, const struct kv_entry *e);
void kv_unpin(struct kv_store *s, const struct kv_entry *e);

/*
 * Undo (apps/kv/kv.c, a write the data disk refused or failed): makes e
 * key's entry again, or makes key absent when e is NULL. e must be an
 * entry of this store that a pin kept after it left the tree (kv_pin
 * before the put or delete that replaced it); it goes back into the tree
 * with its bytes and tag, its charge unchanged (it never stopped being
 * charged), and keeps its pins (the caller unpins). The entry it replaces
 * leaves the tree as a put's would (freed, or held while pinned). Returns
 * false, changing nothing, if e is in the tree already or has another key.
 */
bool kv_restore(struct kv_store *s, const u8 *key, size_t klen, const struct kv_entry *e);

/* Writes the entry's ETag ("\"0123456789abcdef\"") and a NUL into etag. */
void kv_entry_etag(const struct kv_entry *e, char etag[KV_ETAG_LEN + 1]);

/*
 * A JSON string: the bytes of s[0..n) between double quotes, with '"' and
 * '\\' escaped, \b \f \n \r \t for those controls, \u00XX for the other
 * bytes below 0x20, 0x7f and every byte >= 0x80 (read as U+0080..U+00FF).
 * The output is therefore plain ASCII and at most 2 + 6n bytes long.
 */
void kv_json_string(struct outbuf *o, const u8 *s, size_t n);

/* Cursors are the last key of a page in lowercase hex (URL-safe, opaque).
 * Decodes one into key[KV_KEY_MAX]: its length, or -EINVAL (odd length,
 * a non-hex digit, longer than KV_KEY_MAX bytes, or empty). */
int kv_cursor_decode(const char *hex, size_t n, u8 key[KV_KEY_MAX]);

/*
 * One page of the keys starting with prefix (plen may be 0), in byte order,
 * after the key `after` (alen 0: from the start), at most limit keys
 * (1..KV_PAGE_MAX), as JSON into buf[cap]:
 *
 *   {"keys":[{"key":"a","bytes":5,"etag":"\"0123456789abcdef\""},...],
 *    "more":true,"cursor":"61"}
 *
 * "more" is true when at least one more key matches; "cursor" is then the
 * hex of the page's last key (pass it back as `after`), else null. The page
 * also ends early when the next entry would not fit in cap, so the output
 * always fits: cap must be at least KV_LIST_MIN_CAP (one entry of the
 * longest key plus the frame); below that the result is 0. Returns the
 * bytes written.
 */
#define KV_LIST_FRAME_MAX (sizeof("{\"keys\":[],\"more\":false,\"cursor\":\"\"}") - 1 + 2 * KV_KEY_MAX)
#define KV_LIST_ENTRY_MAX                                                                \
	(sizeof(",{\"key\":,\"bytes\":,\"etag\":}") - 1 + (2 + 2 * KV_KEY_MAX) + 10 + \
	 (2 + 2 * KV_ETAG_LEN))
#define KV_LIST_MIN_CAP (KV_LIST_FRAME_MAX + KV_LIST_ENTRY_MAX)
size_t kv_list_json(const struct kv_store *s, const u8 *prefix, size_t plen, const u8 *after,
		    size_t alen, unsigned limit, char *buf, size_t cap);

/* Walks the whole tree: 0 if the keys are valid and in order, every height
 * and balance factor is right and count/used match; -EBADMSG otherwise.
 * O(n), for tests. */
int kv_store_check(const struct kv_store *s);

#endif
