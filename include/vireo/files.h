/*
 * vireo's application API: the files baked into the image (APP_ROOT, by
 * default apps/NAME/site/ when the app has one; tools/mksite.py) or, when
 * the ESP carries EFI/vireo/site/, those (docs/appliance.md). Read-only,
 * living as long as the image: serve one whole with vireo_resp_send_file()
 * (vireo/http.h), or its bytes with vireo_resp_send_static().
 */
#ifndef VIREO_API_FILES_H
#define VIREO_API_FILES_H

#include "vireo/app.h"

struct vireo_file {
	const char *path;		/* "/index.html" */
	const u8 *data;
	u64 len;
	const char *content_type;	/* from the extension */
	const char *etag;		/* strong, quoted: "\"5f0c2a9e71d4b388\"" */
	u64 mtime;			/* Unix seconds: the build's (SOURCE_DATE_EPOCH) or
					 * the ESP file's; 0: unknown */
	const void *priv;		/* the runtime's entry: leave it alone */
};

/* Looks path (decoded, starting with '/') up; "/" and any path ending in
 * '/' mean its index.html. Fills *f and returns true, or false. */
bool vireo_file_find(const char *path, struct vireo_file *f);

/* The Content-Type the runtime gives a file name's extension. */
const char *vireo_content_type(const char *path);

#endif
