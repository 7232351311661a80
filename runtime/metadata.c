/*
 * Per-instance configuration from the cloud's metadata server
 * (metadata=gce|aws|auto, off by default), the last source after the
 * built-in defaults, vireo.cfg and the command line (kernel/config.c).
 *
 * Once the address is bound (net/netif/netup.c's gate) and before the ready
 * line, one HTTP/1.1 exchange at a time with 169.254.169.254:80 over
 * lwIP's raw TCP API:
 *   gce:  GET /computeMetadata/v1/instance/attributes/vireo-config with
 *         Metadata-Flavor: Google;
 *   aws:  IMDSv2: PUT /latest/api/token (X-aws-ec2-metadata-token-ttl-
 *         seconds), then GET /latest/user-data with the token; when the
 *         server answers the token request with anything but a token
 *         (IMDSv1 only, as EC2-compatible services such as OpenStack's
 *         are), GET /latest/user-data without one;
 *   auto: gce, then aws if gce gave nothing.
 * The body is key=value lines, read by the same parser as vireo.cfg with
 * the source named "metadata". Keys that can change after boot take
 * effect (http= moves the listener, ip=/gw= re-address the netif, ntp= and
 * syslog= restart their clients, dns=, shutdown.grace= and panic= are read
 * when used); every other key is refused by name before parsing (a
 * warning; its line is skipped).
 *
 * Bounds, against a slow, hostile or absent server: each exchange gets
 * METADATA_TRY_MS, each step METADATA_TRIES tries (METADATA_GAP_MS apart,
 * only after a failed connection or no answer; a bad answer is not asked
 * again), and the whole step METADATA_TOTAL_MS, after which the ready line
 * comes with the boot configuration: at most 2 x 2 s per provider, 3 steps
 * for auto (a fourth, IMDSv1, only after an answer), all under the 10 s
 * total. Memory: one TCP pcb, the response
 * reader's 20 KiB (MDHTTP_BUF, five pages taken for the step and given
 * back), a 1 KiB request on the stack, the token (512 B + 1).
 */
#include "kernel/cmdline.h"
#include "kernel/config.h"
#include "kernel/console.h"
#include "lib/fmt.h"
#include "kernel/mm/mm.h"
#include "lib/string.h"
#include "kernel/time/time.h"
#include "lwip/ip_addr.h"
#include "lwip/netif.h"
#include "lwip/tcp.h"
#include "lwip/timeouts.h"
#include "runtime/app.h"
#include "runtime/metadata.h"
#include "net/clients/mdhttp.h"
#include "net/net.h"

#define METADATA_ADDR 0xa9fea9feu	/* 169.254.169.254 */
#define METADATA_HOST "169.254.169.254"
#define METADATA_PORT 80
#define METADATA_TRY_MS 2000
#define METADATA_TRIES 2
#define METADATA_GAP_MS 250
#define METADATA_TOTAL_MS 10000
#define METADATA_PAGES ((MDHTTP_BUF + PAGE_SIZE - 1) / PAGE_SIZE)
#define METADATA_LABEL "metadata"

enum { MD_OFF, MD_GCE, MD_AWS, MD_AUTO };
static const char *const metadata_choices[] = { "off", "gce", "aws", "auto", NULL };
static int metadata_mode = MD_OFF;
CMDLINE_PARAM(metadata, .key = "metadata", .type = CMDLINE_ENUM, .dst = &metadata_mode,
	      .choices = metadata_choices, .def = "off",
	      .help = "read key=value lines from the cloud's metadata server (169.254.169.254) before the ready line");

/* Keys that take effect when set after boot; any other is refused. */
static const char *const metadata_live_keys[] = {
	"http", "ip", "gw", "dns", "ntp", "syslog", "shutdown.grace", "panic", NULL,
};

enum md_step { MD_GCE_GET, MD_AWS_TOKEN, MD_AWS_GET, MD_AWS_V1_GET };
static const char *const metadata_step_names[] = { "gce", "aws token", "aws user-data", "aws user-data (IMDSv1)" };

static struct {
	void (*ready)(void);
	struct tcp_pcb *pcb;
	enum md_step step;
	unsigned tries;
	char *buf;		/* MDHTTP_BUF, the response */
	struct mdhttp rx;
	char token[MDHTTP_TOKEN_MAX + 1];
	u64 t0;
	bool running;
} md;

static void metadata_connect(void);
static void metadata_finish(const char *why);

static u32 metadata_ms(void)
{
	return (u32)((time_ns() - md.t0) / NSEC_PER_MSEC);
}

static void metadata_drop_pcb(void)
{
	if (!md.pcb)
		return;
	tcp_arg(md.pcb, NULL);
	tcp_err(md.pcb, NULL);
	tcp_recv(md.pcb, NULL);
	tcp_abort(md.pcb);
	md.pcb = NULL;
}

static void metadata_retry(void *arg)
{
	(void)arg;
	metadata_connect();
}

static void metadata_try_timeout(void *arg);

/* This step gave nothing: auto goes on from gce to aws, else done. */
static void metadata_step_failed(const char *why)
{
	if (metadata_mode == MD_AUTO && md.step == MD_GCE_GET) {
		md.step = MD_AWS_TOKEN;
		md.tries = 0;
		metadata_connect();
		return;
	}
	metadata_finish(why);
}

/* No connection or no answer: once more, then the step fails. */
static void metadata_try_failed(const char *why)
{
	sys_untimeout(metadata_try_timeout, NULL);
	metadata_drop_pcb();
	kprintf("metadata: %s: try %u: %s\n", metadata_step_names[md.step], md.tries, why);
	if (md.tries < METADATA_TRIES) {
		sys_timeout(METADATA_GAP_MS, metadata_retry, NULL);
		return;
	}
	metadata_step_failed(why);
}

static void metadata_try_timeout(void *arg)
{
	(void)arg;
	metadata_try_failed("no answer within 2 s");
}

static void metadata_total_timeout(void *arg)
{
	(void)arg;
	kprintf("warning: metadata: no configuration within %u s\n", METADATA_TOTAL_MS / 1000);
	metadata_finish("timed out");
}

static bool metadata_is_live(const char *key, size_t n)
{
	for (const char *const *k = metadata_live_keys; *k; k++)
		if (strlen(*k) == n && !strncmp(*k, key, n))
			return true;
	return false;
}

static bool metadata_is_key(const char *key, size_t n)
{
	const struct cmdline_opt *const *set;
	size_t cnt = config_params(&set);

	for (size_t i = 0; i < cnt; i++)
		if (set[i]->key && strlen(set[i]->key) == n && !strncmp(set[i]->key, key, n))
			return true;
	return false;
}

/* Turns each line naming a known key that cannot change after boot into
 * a comment, with a warning naming it; the parser sees the rest (and
 * warns about unknown keys and bad values itself). */
static void metadata_filter(char *b, size_t len)
{
	unsigned lineno = 0;

	for (size_t pos = 0; pos < len;) {
		size_t end = pos, a = pos, k;

		while (end < len && b[end] != '\n')
			end++;
		lineno++;
		while (a < end && (b[a] == ' ' || b[a] == '\t'))
			a++;
		for (k = a; k < end && b[k] != '=' && b[k] != ' ' && b[k] != '\t'; k++)
			;
		if (a < end && b[a] != '#' && k > a && k - a <= 48 && metadata_is_key(b + a, k - a) &&
		    !metadata_is_live(b + a, k - a)) {
			kprintf("warning: metadata line %u: %.*s takes effect only at boot (vireo.cfg or the "
				"command line); ignored\n", lineno, (int)(k - a), b + a);
			b[a] = '#';
		}
		pos = end + 1;
	}
}

static bool metadata_set_here(const char *key)
{
	const struct cmdline_opt *const *set;
	size_t cnt = config_params(&set);

	for (size_t i = 0; i < cnt; i++) {
		if (set[i]->key && !strcmp(set[i]->key, key)) {
			const char *src = config_origin(set[i]);

			return src && !strcmp(src, METADATA_LABEL);
		}
	}
	return false;
}

static void metadata_apply(char *body, size_t len)
{
	int warnings;

	kprintf("metadata: %s: %u bytes of configuration after %u ms\n", metadata_step_names[md.step],
		(unsigned)len, metadata_ms());
	metadata_filter(body, len);
	warnings = config_apply_file(METADATA_LABEL, body, len);
	config_print_origins_from(METADATA_LABEL);
	if (metadata_set_here("http"))
		app_reapply_http();
	if (metadata_set_here("ip") || metadata_set_here("gw"))
		netup_readdress(netif_default);
	if (metadata_set_here("ntp"))
		sntp_start();
	if (metadata_set_here("syslog"))
		syslog_start();
	if (warnings)
		kprintf("config: metadata: %d warning%s, those keys keep their earlier values\n", warnings,
			warnings == 1 ? "" : "s");
}

/* The server answered, but not with what this step wanted: a refused
 * token request falls back to IMDSv1 (no token), anything else ends the
 * step. A token request that gets no answer at all does not fall back. */
static void metadata_answer_failed(const char *why)
{
	if (md.step == MD_AWS_TOKEN) {
		kprintf("metadata: aws token: %s; asking IMDSv1 (no token)\n", why);
		md.step = MD_AWS_V1_GET;
		md.tries = 0;
		metadata_connect();
		return;
	}
	metadata_step_failed(why);
}

/* A whole response (or the reader's error) for the current step. */
static void metadata_response(int r)
{
	const char *step = metadata_step_names[md.step];
	const char *body;
	size_t len;

	sys_untimeout(metadata_try_timeout, NULL);
	if (r != MDHTTP_DONE) {
		kprintf("warning: metadata: %s: %s\n", step, mdhttp_strerror(r));
		metadata_answer_failed("bad response");
		return;
	}
	mdhttp_body(&md.rx, &body, &len);
	if (md.rx.status == 404) {
		kprintf("metadata: %s: not found (404)\n", step);
		metadata_answer_failed("not found");
		return;
	}
	if (md.rx.status != 200) {
		kprintf("warning: metadata: %s: HTTP %d%s\n", step, md.rx.status,
			md.rx.status >= 300 && md.rx.status < 400 ? " (redirects are not followed)" : "");
		metadata_answer_failed("refused");
		return;
	}
	switch (md.step) {
	case MD_AWS_TOKEN:
		if (!mdhttp_token_ok(body, len)) {
			kprintf("warning: metadata: aws token: not a token (%u bytes)\n", (unsigned)len);
			metadata_answer_failed("bad token");
			return;
		}
		memcpy(md.token, body, len);
		md.token[len] = '\0';
		md.step = MD_AWS_GET;
		md.tries = 0;
		metadata_connect();
		return;
	case MD_GCE_GET:
	case MD_AWS_GET:
	case MD_AWS_V1_GET:
		metadata_apply((char *)(uintptr_t)body, len);
		metadata_finish(NULL);
		return;
	}
}

static err_t metadata_recv(void *arg, struct tcp_pcb *pcb, struct pbuf *p, err_t err)
{
	int r = MDHTTP_MORE;

	(void)arg;
	if (pcb != md.pcb) {	/* not ours any more */
		if (p)
			pbuf_free(p);
		tcp_abort(pcb);
		return ERR_ABRT;
	}
	if (!p || err != ERR_OK) {
		if (p)
			pbuf_free(p);
		metadata_drop_pcb();
		metadata_response(mdhttp_eof(&md.rx));
		return ERR_ABRT;
	}
	for (struct pbuf *q = p; q && r == MDHTTP_MORE; q = q->next)
		r = mdhttp_feed(&md.rx, q->payload, q->len);
	tcp_recved(pcb, p->tot_len);
	pbuf_free(p);
	if (r == MDHTTP_MORE)
		return ERR_OK;
	metadata_drop_pcb();
	metadata_response(r);
	return ERR_ABRT;
}

static void metadata_err(void *arg, err_t err)
{
	(void)arg;
	md.pcb = NULL;	/* freed by lwIP */
	metadata_try_failed(err == ERR_RST ? "connection refused or reset" : "connection failed");
}

static err_t metadata_connected(void *arg, struct tcp_pcb *pcb, err_t err)
{
	char req[1024], hdr[MDHTTP_TOKEN_MAX + 40];
	size_t n = 0;

	(void)arg;
	(void)err;
	switch (md.step) {
	case MD_GCE_GET:
		n = mdhttp_request(req, sizeof req, "GET", "/computeMetadata/v1/instance/attributes/vireo-config",
				   METADATA_HOST, "Metadata-Flavor: Google", NULL);
		break;
	case MD_AWS_TOKEN:
		n = mdhttp_request(req, sizeof req, "PUT", "/latest/api/token", METADATA_HOST,
				   "X-aws-ec2-metadata-token-ttl-seconds: 60", "Content-Length: 0");
		break;
	case MD_AWS_GET:
		ksnprintf(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", md.token);
		n = mdhttp_request(req, sizeof req, "GET", "/latest/user-data", METADATA_HOST, hdr, NULL);
		break;
	case MD_AWS_V1_GET:
		n = mdhttp_request(req, sizeof req, "GET", "/latest/user-data", METADATA_HOST, NULL, NULL);
		break;
	}
	if (!n || tcp_write(pcb, req, (u16)n, TCP_WRITE_FLAG_COPY) != ERR_OK) {
		metadata_try_failed("cannot send the request");
		return ERR_ABRT;	/* metadata_try_failed aborted pcb */
	}
	tcp_output(pcb);
	return ERR_OK;
}

static void metadata_connect(void)
{
	ip_addr_t a;
	err_t err;

	md.tries++;
	mdhttp_init(&md.rx, md.buf, MDHTTP_BUF);
	md.pcb = tcp_new_ip_type(IPADDR_TYPE_V4);
	if (!md.pcb) {
		metadata_try_failed("no memory for a connection");
		return;
	}
	tcp_err(md.pcb, metadata_err);
	tcp_recv(md.pcb, metadata_recv);
	ip_addr_set_ip4_u32_val(a, lwip_htonl(METADATA_ADDR));
	sys_timeout(METADATA_TRY_MS, metadata_try_timeout, NULL);
	err = tcp_connect(md.pcb, &a, METADATA_PORT, metadata_connected);
	if (err != ERR_OK)
		metadata_try_failed(err == ERR_RTE ? "no route to 169.254.169.254" : "cannot connect");
}

static void metadata_finish(const char *why)
{
	void (*ready)(void) = md.ready;

	if (!md.running)
		return;
	md.running = false;
	sys_untimeout(metadata_try_timeout, NULL);
	sys_untimeout(metadata_retry, NULL);
	sys_untimeout(metadata_total_timeout, NULL);
	metadata_drop_pcb();
	memset(md.token, 0, sizeof md.token);
	if (md.buf)
		page_free(md.buf, METADATA_PAGES);
	md.buf = NULL;
	if (why)
		kprintf("metadata: none applied (%s) after %u ms; serving with the boot configuration\n", why,
			metadata_ms());
	md.ready = NULL;
	if (ready)
		ready();
}

/* netup's gate: runs once the address is bound, calls ready when done. */
static void metadata_gate(void (*ready)(void))
{
	md.ready = ready;
	md.t0 = time_ns();
	md.running = true;
	md.buf = page_alloc(METADATA_PAGES);
	if (!md.buf) {
		kprintf("warning: metadata: no memory for the response\n");
		metadata_finish("no memory");
		return;
	}
	kprintf("metadata: asking %s at " METADATA_HOST " (at most %u s)\n", metadata_choices[metadata_mode],
		METADATA_TOTAL_MS / 1000);
	sys_timeout(METADATA_TOTAL_MS, metadata_total_timeout, NULL);
	md.step = metadata_mode == MD_AWS ? MD_AWS_TOKEN : MD_GCE_GET;
	md.tries = 0;
	metadata_connect();
}

void metadata_start(void)
{
	if (metadata_mode != MD_OFF)
		netup_set_gate(metadata_gate);
}
