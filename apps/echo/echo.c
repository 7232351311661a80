/*
 * Echo (RFC 862) on TCP and UDP, port 7, IPv4 and IPv6: a test and
 * diagnostics service, off unless echo= asks. An app on the API
 * (include/vireo/) like any other; vireo links it into every image (the
 * Makefile's IMAGE_APPS, docs/apps.md), and being vireo's own its keys are
 * the appliance's and its metrics keep their vireo_echo_ names.
 *
 * TCP: a bulk service (vireo/net.h): each connection holds at most one
 * receive window of data (the bulk window while one of the runtime's
 * grants is free, for uploads, else TCP_WND) and at most as much again
 * unacknowledged. Echo consumes only what vireo_tcp_send() took, so a peer
 * that does not read sees its echo stall, then our window close. A
 * connection with no traffic or no ACK progress for ECHO_IDLE_MS is reset.
 *
 * UDP: the runtime never hands echo a datagram from a service's port (below
 * 1024: chargen, daytime, echo itself would loop; a few high ones) or from
 * echo's own port, nor from port 0 or from or to broadcast and multicast
 * addresses (vireo/net.h), and echo is rate-limited by two token buckets: one global, one
 * per source (IPv4 address or IPv6 /64; sources hashing to the same of
 * ECHO_UDP_BUCKETS share one, which only limits them more). Whatever a
 * spoofed source makes us reflect is at most the global rate, one datagram
 * out per datagram in.
 */
#define VIREO_BUILTIN 1		/* vireo's own: vireo_echo_* metrics (vireo/app.h) */
#include "vireo/vireo.h"
#include "echo.h"

/* Token bucket in milli-datagrams: refills rate per second up to burst. */
struct bucket {
	u64 t_ms;
	u32 milli;
};

struct echo_stats echo_stats;

static struct {
	bool started;
	struct echo_cfg cfg;
	vireo_udp udp;
	struct siphash_key key;
	struct bucket global;
	struct bucket src[ECHO_UDP_BUCKETS];
} echo;

/* ---- keys ---- */

static unsigned int echo_services;	/* ECHO_*: none by default */

/* echo=tcp, echo=udp or echo=tcp,udp (either order). */
static int echo_parse(const char *val, void *dst, char *why, size_t why_len)
{
	unsigned int want = 0;
	const char *s = val;

	(void)dst;
	for (;;) {
		size_t n = 0;

		while (s[n] && s[n] != ',')
			n++;
		if (n == 3 && !strncmp(s, "tcp", 3))
			want |= ECHO_TCP;
		else if (n == 3 && !strncmp(s, "udp", 3))
			want |= ECHO_UDP;
		else
			goto bad;
		s += n;
		if (*s == '\0')
			break;
		s++;	/* the comma; an empty item after it is rejected above */
	}
	echo_services = want;
	return 0;
bad:
	vireo_snprintf(why, why_len, "want tcp, udp or tcp,udp; echo stays off");
	return -EINVAL;
}
CMDLINE_PARAM(echo, .key = "echo", .type = CMDLINE_CUSTOM, .parse = echo_parse, .def = "off",
	      .values = "tcp, udp, tcp,udp", .help = "start the echo service (RFC 862) on port 7");

static u64 echo_udp_rate;	/* 0: echo.h's defaults */
CMDLINE_PARAM(echo_udp_rate, .key = "echo.udp_rate", .type = CMDLINE_UINT, .dst = &echo_udp_rate, .min = 1,
	      .max = 1000000, .def = "256 all, 16 per source", .def_prose = true,
	      .help = "UDP echo datagrams/s, global and per source (benchmarks)");

/* ---- TCP ---- */

static size_t echo_tcp_recv(vireo_tcp c, const void *data, size_t len, void *arg)
{
	int n = vireo_tcp_send(c, data, len);

	if (n <= 0)
		return 0;	/* offered again once the echo drains */
	echo_stats.tcp_bytes += (u64)n;
	return (size_t)n;
}

/* ---- UDP ---- */

/* Refill b for the time since it was last used, then take one datagram's
 * token if there is one. */
static bool echo_bucket_take(struct bucket *b, u32 rate, u32 burst, u64 now)
{
	u64 milli = b->milli + (now - b->t_ms) * rate;	/* rate/s = rate milli/ms */

	b->t_ms = now;
	b->milli = (u32)MIN(milli, (u64)burst * 1000);
	if (b->milli < 1000)
		return false;
	b->milli -= 1000;
	return true;
}

/* The bucket of a's source: its IPv4 address or IPv6 /64, keyed. */
static struct bucket *echo_bucket_of(const struct vireo_addr *a)
{
	u8 key[9];

	key[0] = a->family;
	memcpy(key + 1, a->ip, 8);
	if (a->family == VIREO_AF_INET)
		memset(key + 5, 0, 4);
	return &echo.src[siphash24(&echo.key, key, sizeof key) % ECHO_UDP_BUCKETS];
}

/* Why a datagram from src gets no answer, or NULL. */
static u64 *echo_udp_refusal(const struct vireo_addr *src)
{
	u64 now;

	now = vireo_now_ms();
	if (!echo_bucket_take(echo_bucket_of(src), echo.cfg.udp_src_rate, echo.cfg.udp_src_burst, now))
		return &echo_stats.udp_refused[ECHO_UDP_RATE_SOURCE];
	if (!echo_bucket_take(&echo.global, echo.cfg.udp_rate, echo.cfg.udp_burst, now))
		return &echo_stats.udp_refused[ECHO_UDP_RATE_GLOBAL];
	return NULL;
}

static void echo_udp_recv(vireo_udp u, const struct vireo_addr *src, const void *data, size_t len, void *arg)
{
	u64 *why = echo_udp_refusal(src);

	if (why) {
		(*why)++;
		return;
	}
	echo_stats.udp_datagrams++;
	echo_stats.udp_bytes += len;
	if (vireo_udp_send(u, src, data, len))
		echo_stats.udp_send_errors++;
}

/* ---- metrics: vireo_echo_*, while echo runs ---- */

/* The families, in order, and the index of each one's value below. */
static const struct {
	const char *name, *help;
	bool gauge;
} echo_families[] = {
	{ "vireo_echo_tcp_connections_accepted_total", "Echo TCP connections accepted.", false },
	{ "vireo_echo_tcp_connections_refused_total", "Echo TCP connections reset on accept.", false },
	{ "vireo_echo_tcp_connections_refused_source_total", "Of those refused, refused for the per-source limit.",
	  false },
	{ "vireo_echo_tcp_connections_evicted_total",
	  "Echo TCP connections reset to give a source below its fair share a slot.", false },
	{ "vireo_echo_tcp_connections_active", "Echo TCP connections open now.", true },
	{ "vireo_echo_tcp_timeouts_total", "Echo TCP connections closed for inactivity.", false },
	{ "vireo_echo_tcp_bytes_total", "Bytes echoed over TCP.", false },
	{ "vireo_echo_udp_datagrams_total", "UDP datagrams echoed.", false },
	{ "vireo_echo_udp_bytes_total", "Bytes echoed over UDP.", false },
	{ "vireo_echo_udp_dropped_total", "UDP datagrams not echoed (refused source or send failure).", false },
};
static const char *const echo_reasons[] = { "low_port", "own_port", "broadcast", "multicast", "rate_source",
					    "rate_global" };

static void echo_write_metrics(struct vireo_metrics_out *o, void *arg)
{
	const struct echo_stats *s = &echo_stats;
	struct vireo_tcp_stats t = { 0 };
	struct vireo_udp_stats u = { 0 };
	u64 v[ARRAY_SIZE(echo_families)], refused[ARRAY_SIZE(echo_reasons)], dropped = s->udp_send_errors;
	u32 i;

	if (!echo.started)
		return;
	vireo_tcp_stats(echo.cfg.port, &t);
	vireo_udp_stats(echo.udp, &u);
	refused[0] = u.dropped_service_port + u.dropped_port0;
	refused[1] = u.dropped_own_port;
	refused[2] = u.dropped_broadcast;
	refused[3] = u.dropped_multicast;
	refused[4] = s->udp_refused[ECHO_UDP_RATE_SOURCE];
	refused[5] = s->udp_refused[ECHO_UDP_RATE_GLOBAL];
	for (i = 0; i < ARRAY_SIZE(refused); i++)
		dropped += refused[i];
	v[0] = t.accepted;
	v[1] = t.refused;
	v[2] = t.refused_source;
	v[3] = t.evicted;
	v[4] = t.active;
	v[5] = t.timeouts_idle + t.timeouts_send + t.timeouts_slow;
	v[6] = s->tcp_bytes;
	v[7] = s->udp_datagrams;
	v[8] = s->udp_bytes;
	v[9] = dropped;
	for (i = 0; i < ARRAY_SIZE(echo_families); i++) {
		vireo_metrics_family(o, echo_families[i].name,
				     echo_families[i].gauge ? VIREO_METRIC_GAUGE : VIREO_METRIC_COUNTER,
				     echo_families[i].help);
		vireo_metrics_sample(o, echo_families[i].name, NULL, NULL, v[i]);
	}
	vireo_metrics_family(o, "vireo_echo_udp_refused_total", VIREO_METRIC_COUNTER,
			     "UDP datagrams not echoed, by rule.");
	for (i = 0; i < ARRAY_SIZE(echo_reasons); i++)
		vireo_metrics_sample(o, "vireo_echo_udp_refused_total", "reason", echo_reasons[i], refused[i]);
}

/* ---- start ---- */

static u32 echo_or_default(u32 v, u32 def)
{
	return v ? v : def;
}

int echo_start(const struct echo_cfg *c)
{
	int err, i;

	if (echo.started)
		return -EBUSY;
	if (!c->services || (c->services & ~(ECHO_TCP | ECHO_UDP)))
		return -EINVAL;
	echo.cfg = *c;
	echo.cfg.max_conns = echo_or_default(c->max_conns, ECHO_MAX_CONNS);
	echo.cfg.max_per_src = MIN(echo_or_default(c->max_per_src, echo.cfg.max_conns), echo.cfg.max_conns);
	echo.cfg.udp_rate = echo_or_default(c->udp_rate, ECHO_UDP_RATE);
	echo.cfg.udp_burst = echo_or_default(c->udp_burst, ECHO_UDP_BURST);
	echo.cfg.udp_src_rate = echo_or_default(c->udp_src_rate, ECHO_UDP_SRC_RATE);
	echo.cfg.udp_src_burst = echo_or_default(c->udp_src_burst, ECHO_UDP_SRC_BURST);
	vireo_random(&echo.key, sizeof echo.key);
	/* Buckets start full. */
	echo.global.t_ms = vireo_now_ms();
	echo.global.milli = echo.cfg.udp_burst * 1000;
	for (i = 0; i < ECHO_UDP_BUCKETS; i++) {
		echo.src[i].t_ms = echo.global.t_ms;
		echo.src[i].milli = echo.cfg.udp_src_burst * 1000;
	}
	if (c->services & ECHO_TCP) {
		err = vireo_tcp_listen(&(struct vireo_tcp_service){
			.name = "echo", .port = c->port, .max_conns = echo.cfg.max_conns,
			.max_per_src = echo.cfg.max_per_src, .idle_timeout_ms = ECHO_IDLE_MS,
			.send_timeout_ms = ECHO_IDLE_MS, .bulk = true, .on_recv = echo_tcp_recv });
		if (err)
			return err;
	}
	if (c->services & ECHO_UDP) {
		err = vireo_udp_bind(&(struct vireo_udp_service){ .name = "echo", .port = c->port,
								  .max_datagram = VIREO_UDP_MAX,
								  .on_recv = echo_udp_recv },
				     &echo.udp);
		if (err) {
			/* TCP, if it started, serves on (a service cannot be
			 * stopped), and is shown. */
			echo.started = (c->services & ECHO_TCP) != 0;
			return err;
		}
	}
	memset(&echo_stats, 0, sizeof echo_stats);
	echo.started = true;
	return 0;
}

void echo_stop(void)
{
	echo.started = false;
	echo.udp.id = 0;
}

static int echo_init(void)
{
	struct echo_cfg c = { .port = ECHO_PORT, .services = echo_services };
	int err;

	vireo_metrics_writer(echo_write_metrics, NULL);
	if (!echo_services)
		return 0;
	if (echo_udp_rate) {
		/* One limit for all and for each source; a quarter second's
		 * worth of burst. */
		c.udp_rate = c.udp_src_rate = (u32)echo_udp_rate;
		c.udp_burst = c.udp_src_burst = MAX(c.udp_rate / 4, (u32)ECHO_UDP_BURST);
	}
	err = echo_start(&c);
	if (err)
		vireo_log("echo: cannot listen on port %u (%d)", ECHO_PORT, err);
	return 0;
}

VIREO_APP(echo, .name = "echo", .init = echo_init, .help = "TCP and UDP echo (RFC 862) on port 7 when echo= asks");
