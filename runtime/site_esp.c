/*
 * The site from the ESP: boot/esp.c reads EFI/vireo/site/ into memory
 * (BOOT_FILE_SITE: at most dir_max files and cap bytes, both scaled with
 * memory by boot_dir_caps, kernel/boot_info.h); this file checks the table it left, indexes it the
 * way tools/mksite.py indexes the baked site (sorted URL paths, a Content-
 * Type, an ETag) and hands it to site.c, which then serves it instead of
 * the baked-in site. Anything wrong keeps the baked site, with one warning.
 */
#include "kernel/boot_info.h"
#include "kernel/console.h"
#include "kernel/mm/mm.h"
#include "lib/string.h"
#include "runtime/http/http.h"
#include "runtime/site.h"

_Static_assert(BOOT_DIR_PATH_MAX == 256 && BOOT_DIR_DEPTH == 8, "site_refusals[] quotes the bounds");

#define SITE_ETAG_LEN 20	/* "\"" + 16 hex + "\"" + NUL, rounded up */

/* A URL path the runtime serves: "/seg/seg", no segment empty or starting
 * with '.', no control byte (the request parser decodes none). Any other
 * byte is fine: RFC 3986's sub-delims, '@', ':', spaces, '%', UTF-8 (boot/
 * esp.c writes the FAT names so); a request reaches them percent-encoded. */
static bool site_path_ok(const char *p)
{
	bool seg_start = true;

	if (p[0] != '/')
		return false;
	for (p++; *p; p++) {
		u8 c = (u8)*p;

		if (c == '/') {
			if (seg_start)
				return false;
			seg_start = true;
			continue;
		}
		if ((seg_start && c == '.') || c < 0x20 || c == 0x7f)
			return false;
		seg_start = false;
	}
	return !seg_start;
}

static int site_cmp(const char *a, const char *b)
{
	for (; *a && *a == *b; a++, b++)
		;
	return (u8)*a - (u8)*b;
}

/* FNV-1a over the bytes and then the length: an ETag changes when the
 * content does (it is no defence against crafted collisions, and needs
 * none: whoever writes the ESP writes the site). */
static u64 site_hash(const u8 *d, u64 len)
{
	u64 h = 0xcbf29ce484222325ULL;

	for (u64 i = 0; i < len; i++)
		h = (h ^ d[i]) * 0x100000001b3ULL;
	for (int i = 0; i < 8; i++)
		h = (h ^ (u8)(len >> (8 * i))) * 0x100000001b3ULL;
	return h;
}

static void site_etag(char *out, u64 h)
{
	static const char hex[] = "0123456789abcdef";

	out[0] = '"';
	for (int i = 0; i < 16; i++)
		out[1 + i] = hex[(h >> (60 - 4 * i)) & 0xf];
	out[17] = '"';
	out[18] = '\0';
}

static void site_why(char *why, size_t why_len, const char *a, const char *b)
{
	size_t o = 0;

	for (; a && *a && o + 1 < why_len; a++)
		why[o++] = *a;
	for (; b && *b && o + 1 < why_len; b++)
		why[o++] = *b;
	if (why_len)
		why[o] = '\0';
}

/* Sifts files[i] down the max-heap of files[0..n). */
static void site_sift(struct site_file *files, u32 i, u32 n)
{
	for (;;) {
		u32 c = 2 * i + 1;
		struct site_file t;

		if (c >= n)
			return;
		if (c + 1 < n && site_cmp(files[c].path, files[c + 1].path) < 0)
			c++;
		if (site_cmp(files[i].path, files[c].path) >= 0)
			return;
		t = files[i];
		files[i] = files[c];
		files[c] = t;
		i = c;
	}
}

static void site_sort(struct site_file *files, u32 n)
{
	for (u32 i = n / 2; i-- > 0;)
		site_sift(files, i, n);
	for (u32 end = n; end > 1; end--) {
		struct site_file t = files[0];

		files[0] = files[end - 1];
		files[end - 1] = t;
		site_sift(files, 0, end - 1);
	}
}

int site_esp_index(const struct boot_dir_entry *tab, u32 n, const u8 *data, u64 data_len,
		   struct site_file **out, char *why, size_t why_len)
{
	struct site_file *files;
	char *etags;
	u32 kept = 0, j;

	*out = NULL;
	if (n == 0 || n > BOOT_DIR_MAX_FILES) {
		site_why(why, why_len, n ? "too many files" : "no files", NULL);
		return -EINVAL;
	}
	files = kzalloc(n * (sizeof *files + SITE_ETAG_LEN));
	if (!files) {
		site_why(why, why_len, "out of memory", NULL);
		return -ENOMEM;
	}
	etags = (char *)(files + n);
	for (u32 i = 0; i < n; i++) {
		const struct boot_dir_entry *e = &tab[i];
		struct site_file f;

		if (strnlen(e->path, sizeof e->path) == sizeof e->path) {
			site_why(why, why_len, "a path with no end", NULL);
			goto bad;
		}
		if (!site_path_ok(e->path)) {	/* that file alone is left out */
			kprintf("warning: site: " BOOT_SITE_PATH "%.*s: not a path the site can serve; left out\n",
				(int)sizeof e->path, e->path);
			continue;
		}
		if (e->off > data_len || e->len > data_len - e->off) {
			site_why(why, why_len, e->path, ": outside the data read");
			goto bad;
		}
		f = (struct site_file){
			.path = e->path, .data = data + e->off, .len = e->len,
			.content_type = http_content_type(e->path), .etag = etags + kept * SITE_ETAG_LEN,
			.mtime = e->mtime,
		};
		site_etag(etags + kept * SITE_ETAG_LEN, site_hash(f.data, f.len));
		files[kept++] = f;
	}
	if (!kept) {
		site_why(why, why_len, "no file it can serve", NULL);
		goto bad;
	}
	/* Sorted by path (heapsort: up to BOOT_DIR_MAX_FILES files, n log n
	 * compares, no memory); an equal path is refused. */
	site_sort(files, kept);
	for (j = 1; j < kept; j++)
		if (site_cmp(files[j - 1].path, files[j].path) == 0) {
			site_why(why, why_len, files[j].path, ": given twice");
			goto bad;
		}
	*out = files;
	return (int)kept;
bad:
	kfree(files);
	return -EINVAL;
}

static const char *const site_refusals[] = {
	[BOOT_FILE_TOO_MANY] = "has more files than the cap for this memory",
	[BOOT_FILE_TOO_BIG] = "holds more bytes than the cap for this memory",
	[BOOT_FILE_BAD_NAME] = "has a name longer than 255 bytes",
	[BOOT_FILE_NO_MEMORY] = "does not fit in the firmware's free memory",
	[BOOT_FILE_ERROR] = "could not be read",
};

void site_esp_boot(const struct boot_info *bi)
{
	const struct boot_file *f = &bi->files[BOOT_FILE_SITE];
	struct site_file *files;
	char why[96];
	u64 table = (u64)f->dir_max * sizeof(struct boot_dir_entry);
	u64 bytes = 0;
	int n;

	switch (f->state) {
	case BOOT_FILE_NONE:
	case BOOT_FILE_ABSENT:
		return;	/* the baked-in site, nothing to say */
	case BOOT_FILE_OK:
		break;
	default:
		kprintf("warning: site: " BOOT_SITE_PATH " %s (%u files, %lu MiB; at %.64s, status %#lx); serving "
			"the built-in site\n",
			f->state < ARRAY_SIZE(site_refusals) && site_refusals[f->state] ?
				site_refusals[f->state] : "was refused", f->dir_max, (unsigned long)(f->cap >> 20),
			f->what[0] ? f->what : "/", (unsigned long)f->status);
		return;
	}
	if (f->dir_max > BOOT_DIR_MAX_FILES || f->n > f->dir_max || f->len < table) {
		kprintf("warning: site: " BOOT_SITE_PATH ": a %lu-byte table of %u files (%u entries) is not one "
			"boot/ leaves; serving the built-in site\n", (unsigned long)f->len, f->n, f->dir_max);
		return;
	}
	if (f->skipped)	/* boot/ left these out: the rest is served */
		kprintf("warning: site: " BOOT_SITE_PATH ": %u name(s) left out (a control character, bad "
			"UTF-16, over 255 bytes or 8 levels), the first: " BOOT_SITE_PATH "%s\n", f->skipped, f->what);
	n = site_esp_index((const struct boot_dir_entry *)(uintptr_t)f->base, f->n,
			   (const u8 *)(uintptr_t)f->base + table, f->len - table, &files, why, sizeof why);
	if (n < 0) {
		kprintf("warning: site: " BOOT_SITE_PATH ": %s; serving the built-in site\n", why);
		return;
	}
	for (int i = 0; i < n; i++)
		bytes += files[i].len;
	site_use(files, (size_t)n);
	site_use_heads(site_heads_make(files, (size_t)n));	/* NULL: served the slower way */
	kprintf("site: %d files, %lu bytes from " BOOT_SITE_PATH " (instead of the built-in site; caps at this "
		"memory: %u files, %lu MiB)\n", n, (unsigned long)bytes, f->dir_max, (unsigned long)(f->cap >> 20));
}
