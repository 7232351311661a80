/*
 * The static site: every GET (and HEAD) is answered from the baked files
 * (APP_ROOT, tools/mksite.py) or the ESP's EFI/vireo/site/, zero-copy, with
 * the file's ETag, Last-Modified once the clock is set, and a 304 when
 * If-None-Match matches (or, without it, If-Modified-Since is not older
 * than the file), all by vireo_resp_send_file(); anything else is 404. The default appliance (make, or
 * make APP=apps/site).
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
	/* ETag, Last-Modified, 304 or 200, zero-copy: the same bytes as
	 * vireo_resp_header(r, "ETag", f.etag), vireo_resp_last_modified(r,
	 * f.mtime) and vireo_resp_send_static(), with the file's head lines
	 * made when the site was instead of formatted and checked per request. */
	vireo_resp_send_file(r, &f);
}

static int site_init(void)
{
	return vireo_http_route(&(struct vireo_route){ .path = "/", .prefix = true, .methods = VIREO_GET,
						       .handler = site_get });
}

VIREO_APP(site, .name = "site", .init = site_init, .help = "the static site baked into the image (APP_ROOT)");
