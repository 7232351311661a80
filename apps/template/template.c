/*
 * The smallest vireo app, for copying (apps/template/README.md): one route
 * answering a greeting, one taking a body, a configuration key and a
 * metric. Build and boot it with `make run APP=apps/template`, then
 * `curl localhost:8080/hello?name=you`.
 */
#include "vireo/vireo.h"

/* template.greeting=... in vireo.cfg or on the command line. */
VIREO_CONFIG_STR(greeting, "template.greeting", 32, "hello", "the word GET /hello greets with");

VIREO_COUNTER(hellos, "template_hello_total", "Greetings sent by GET /hello.");

/* GET /hello[?name=someone] -> "hello, someone!" */
static void template_hello(vireo_req r, void *arg)
{
	char name[64], text[128];
	int n;

	(void)arg;
	if (vireo_req_query_param(r, "name", name, sizeof name) < 0)
		strlcpy(name, "world", sizeof name);
	n = vireo_snprintf(text, sizeof text, "%s, %s!\n", greeting, name);
	vireo_counter_inc(&hellos);
	vireo_resp_send(r, 200, "text/plain; charset=utf-8", text, (size_t)n);
}

/* POST /echo with a body of up to 4 KiB -> the same bytes back. */
static void template_echo(vireo_req r, void *arg)
{
	size_t len;
	const void *body = vireo_req_body(r, &len);

	(void)arg;
	vireo_resp_send(r, 200, "application/octet-stream", body, len);
}

static int template_init(void)
{
	int err;

	err = vireo_http_route(&(struct vireo_route){ .path = "/hello", .methods = VIREO_GET,
						      .handler = template_hello });
	if (!err)
		err = vireo_http_route(&(struct vireo_route){ .path = "/echo", .methods = VIREO_POST,
							      .max_body = 4096, .handler = template_echo });
	return err;
}

VIREO_APP(template, .name = "template", .init = template_init, .help = "GET /hello, POST /echo: copy me");
