/*
 * The static site: every GET (and HEAD) is answered from the baked files
 * (APP_ROOT, tools/mksite.py) or the ESP's EFI/vireo/site/, zero-copy, with
 * the file's ETag and a 304 when If-None-Match matches it; anything else
 * is 404. The default appliance (make, or make APP=apps/site).
 */
#include "vireo/vireo.h"

static void site_get(vireo_req r, void *arg)
{
	struct vireo_file f;

	(void)arg;
	if (!vireo_file_find(vireo_req_path(r), &f)) {
		vireo_resp_error(r, 404);
		return;
	}
	vireo_resp_header(r, "ETag", f.etag);
	if (vireo_req_etag_match(r, f.etag)) {
		/* Content-Length stays the 200's (RFC 9110 8.6); no body. */
		vireo_resp_send_static(r, 304, NULL, f.data, f.len);
		return;
	}
	vireo_resp_send_static(r, 200, f.content_type, f.data, f.len);
}

static int site_init(void)
{
	return vireo_http_route(&(struct vireo_route){ .path = "/", .prefix = true, .methods = VIREO_GET,
						       .handler = site_get });
}

VIREO_APP(site, .name = "site", .init = site_init, .help = "the static site baked into the image (APP_ROOT)");
