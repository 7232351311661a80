/*
 * Content types by file extension: the table tools/mkmime.py generates at
 * build time from Debian's media-types (/etc/mime.types), filtered to what a
 * web server serves, with the web's overrides (.mjs, .webmanifest, .map):
 * never typed by hand. Binary search over the sorted extensions.
 */
#include "lib/types.h"
#include "runtime/http/http.h"
#include "mime_table.h"

/* ext[0..n) against the NUL-terminated lower-case table entry e, ignoring
 * ext's ASCII case: <0, 0, >0. */
static int mime_cmp(const char *ext, size_t n, const char *e)
{
	for (size_t i = 0; i < n; i++, e++) {
		u8 a = (u8)ext[i];

		if (a >= 'A' && a <= 'Z')
			a = (u8)(a + 32);
		if (a != (u8)*e)
			return a - (u8)*e;	/* also past e's end: a > NUL */
	}
	return -(int)(u8)*e;
}

const char *http_content_type(const char *path)
{
	const char *ext = NULL;
	size_t lo = 0, hi = MIME_NEXTS, n;

	for (; *path; path++) {
		if (*path == '/')
			ext = NULL;	/* a dot in a directory name does not count */
		else if (*path == '.')
			ext = path + 1;
	}
	if (!ext)
		return "application/octet-stream";
	n = (size_t)(path - ext);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int d = mime_cmp(ext, n, mime_exts + mime_ext_off[mid]);

		if (d == 0)
			return mime_types + mime_type_off[mime_ext_type[mid]];
		if (d < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return "application/octet-stream";
}
